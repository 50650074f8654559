// Installing Relay the way a Pi user does, offline: npm installs the tarballs `make package` wrote
// (pi-relay and this machine's platform package) into a fresh prefix, `pi install` adds the
// installed folder, and a real `pi -p` with no Rust toolchain on PATH uses Relay from there.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DIST = join(ROOT, "dist");
const PI = process.env.RELAY_PI_CLI ?? join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");
const VERSION = JSON.parse(readFileSync(join(ROOT, "extension/package.json"), "utf8")).version;
const MAIN = join(DIST, `pi-relay-${VERSION}.tgz`);
const PLATFORM = join(DIST, `pi-relay-linux-x64-gnu-${VERSION}.tgz`);

/** A machine with Node and npm but no Rust toolchain: only Node's folder and the system's. */
const bare = (extra) => ({ HOME: extra.HOME, PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, PI_OFFLINE: "1", ...extra });

function install(tarballs, npmArgs = []) {
	const dir = mkdtempSync(join(tmpdir(), "relay-install-"));
	const prefix = join(dir, "prefix");
	mkdirSync(prefix);
	writeFileSync(join(prefix, "package.json"), JSON.stringify({ name: "relay-install-test", private: true }));
	const npm = spawnSync("npm", ["install", "--offline", "--no-audit", "--no-fund", "--no-package-lock", "--legacy-peer-deps", ...npmArgs, ...tarballs], {
		cwd: prefix,
		encoding: "utf8",
		timeout: 120_000,
	});
	assert.equal(npm.status, 0, npm.stderr);
	return { dir, prefix, pkg: join(prefix, "node_modules/pi-relay") };
}

function piRun(dir, pkg, script) {
	const agent = join(dir, "agent");
	const work = join(dir, "work");
	const sessions = join(dir, "sessions");
	for (const d of [agent, work, sessions]) mkdirSync(d, { recursive: true });
	writeFileSync(join(agent, "settings.json"), "{}");
	const env = bare({ HOME: dir, PI_CODING_AGENT_DIR: agent });
	const added = spawnSync(process.execPath, [PI, "install", pkg], { cwd: work, encoding: "utf8", env, timeout: 60_000 });
	assert.equal(added.status, 0, added.stderr);
	const scriptFile = join(dir, "script.json");
	writeFileSync(scriptFile, JSON.stringify(script));
	const run = spawnSync(
		process.execPath,
		[PI, "-p", "--session-dir", sessions, "-e", join(ROOT, "demo/faux-provider.ts"), "--model", "faux/faux-1", "Go."],
		{ cwd: work, encoding: "utf8", input: "", timeout: 60_000, env: { ...env, RELAY_FAUX_SCRIPT: scriptFile } },
	);
	const files = readdirSync(sessions, { recursive: true }).filter((f) => String(f).endsWith(".jsonl"));
	assert.equal(files.length, 1, run.stderr);
	const lines = readFileSync(join(sessions, String(files[0])), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
	return { ...run, settings: JSON.parse(readFileSync(join(agent, "settings.json"), "utf8")), lines };
}

test("the packaged Relay installs offline with npm, loads from the platform package and resets a window in pi -p", () => {
	for (const f of [MAIN, PLATFORM]) assert.ok(existsSync(f), `${f} is missing: run \`make package\``);
	const bareCheck = spawnSync("bash", ["-c", "command -v cargo rustc"], { encoding: "utf8", env: bare({ HOME: tmpdir() }) });
	assert.equal(bareCheck.stdout, "", "no Rust toolchain on the test's PATH");
	const { dir, pkg, prefix } = install([MAIN, PLATFORM]);
	assert.ok(!existsSync(join(pkg, "native", "relay.linux-x64-gnu.node")), "pi-relay itself carries no addon");
	assert.ok(existsSync(join(prefix, "node_modules/pi-relay-linux-x64-gnu/relay.linux-x64-gnu.node")));
	// Both packages declare MIT and ship the licence text itself (the repository's LICENSE).
	const license = readFileSync(join(ROOT, "LICENSE"), "utf8");
	assert.match(license, /^MIT License\n\nCopyright \(c\) 2026 The Relay authors\n/);
	assert.equal(readFileSync(join(pkg, "LICENSE"), "utf8"), license, "pi-relay's tarball carries the LICENSE");
	assert.equal(readFileSync(join(prefix, "node_modules/pi-relay-linux-x64-gnu/LICENSE"), "utf8"), license, "the platform package's tarball carries the LICENSE");
	const run = piRun(dir, pkg, [{ tool: "new_context", args: {} }, { text: "continued in window two" }]);
	assert.equal(run.status, 0, run.stderr);
	assert.equal(run.settings.packages.length, 1, "pi install recorded the installed folder");
	assert.equal(run.stdout.trim(), "continued in window two");
	assert.equal(run.lines.filter((l) => l.type === "custom_message" && l.customType === "relay/boot").length, 1);
	assert.equal(run.lines.filter((l) => l.type === "compaction" && l.details?.source === "new_context").length, 1);
});

test("without a core for the platform, Relay says which platform and how to build it, and Pi answers without it", () => {
	assert.ok(existsSync(MAIN), `${MAIN} is missing: run \`make package\``);
	const { dir, pkg } = install([MAIN], ["--omit=optional"]);
	const run = piRun(dir, pkg, [{ text: "answered without Relay" }]);
	assert.equal(run.status, 0, run.stderr);
	assert.equal(run.stdout.trim(), "answered without Relay");
	assert.match(run.stderr, /relay: no Relay core for linux-x64-gnu: the package pi-relay-linux-x64-gnu is not installed/);
	assert.match(run.stderr, /Build it from source with `make build` in a Relay checkout/);
	assert.equal(run.lines.filter((l) => l.type === "custom_message").length, 0, "Relay registered nothing");
});
