// Relay on a Pi older than it supports: it refuses to load with a clear message and Pi keeps
// working without it. The old Pi is installed by the Makefile (tests/pi-versions/0.87/).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const OLD_PI = join(ROOT, "tests/pi-versions/0.87/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");

test("pi -p on Pi 0.87: Relay refuses to load, names the versions, and Pi answers without it", () => {
	assert.ok(existsSync(OLD_PI), `${OLD_PI} is missing: run \`make test-e2e\`, which installs it`);
	const dir = mkdtempSync(join(tmpdir(), "relay-old-pi-"));
	const agent = join(dir, "agent");
	const work = join(dir, "work");
	const sessions = join(dir, "sessions");
	for (const d of [agent, work, sessions]) mkdirSync(d, { recursive: true });
	writeFileSync(join(agent, "settings.json"), "{}");
	const script = join(dir, "script.json");
	writeFileSync(script, JSON.stringify([{ text: "answered by the old Pi" }]));
	const run = spawnSync(
		process.execPath,
		[OLD_PI, "-p", "-ne", "-nbt", "--session-dir", sessions, "-e", join(ROOT, "demo/faux-provider.ts"), "-e", join(ROOT, "extension"),
			"--model", "faux/faux-1", "Hello."],
		{ cwd: work, encoding: "utf8", input: "", timeout: 60_000, env: { ...process.env, PI_CODING_AGENT_DIR: agent, PI_OFFLINE: "1", RELAY_FAUX_SCRIPT: script } },
	);
	assert.equal(run.status, 0, run.stderr);
	assert.equal(run.stdout.trim(), "answered by the old Pi");
	assert.match(run.stderr, /relay: Pi 0\.87\.1 is older than 1\.3\.0, the oldest Pi Relay supports; Relay is not loaded/);
	const files = readdirSync(sessions, { recursive: true }).filter((f) => String(f).endsWith(".jsonl"));
	assert.equal(files.length, 1);
});
