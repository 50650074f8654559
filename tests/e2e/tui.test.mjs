// End to end in the interactive TUI: the real `pi` in a tmux pane, offline, with the faux model.
// The prompt is typed into the editor; the test reads the screen and the session file.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, watch, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const NODE = process.execPath;
// RELAY_PI_CLI: another Pi release's cli.js (the Makefile runs these tests on each supported Pi).
const PI = process.env.RELAY_PI_CLI ?? join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");
const hasTmux = spawnSync("tmux", ["-V"]).status === 0;

const tmux = (...args) => spawnSync("tmux", args, { encoding: "utf8" });

/** The pane's output stream as text: escape sequences (colours, cursor moves, titles) removed. */
const ESCAPES = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[@-Z\\-_=>]/g;
const plain = (raw) => raw.replace(ESCAPES, "");

/**
 * Resolve once `pattern` appears in the pane's output, checked each time tmux appends output to
 * `log` (pipe-pane); fail after `timeoutMs` with the screen as it is. No polling, no sleeps.
 */
function waitForOutput(log, pattern, what, screen, timeoutMs = 20_000) {
	return new Promise((resolve, reject) => {
		const watcher = watch(log);
		let timer;
		const finish = (error) => {
			clearTimeout(timer);
			watcher.close();
			if (error) reject(error);
			else resolve();
		};
		const check = () => {
			if (pattern.test(plain(readFileSync(log, "utf8")))) finish();
		};
		timer = setTimeout(() => finish(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; screen:\n${screen()}`)), timeoutMs);
		watcher.on("change", check);
		watcher.on("error", finish);
		check();
	});
}

test("TUI: the boot block is one line, the footer shows the window; new_context rolls into window 2 and the continuation runs", { skip: hasTmux ? false : "tmux is not installed" }, async () => {
	const dir = mkdtempSync(join(tmpdir(), "relay-tui-"));
	const agent = join(dir, "agent");
	const work = join(dir, "work");
	const sessions = join(dir, "sessions");
	for (const d of [agent, work, sessions]) mkdirSync(d, { recursive: true });
	writeFileSync(join(agent, "settings.json"), "{}");
	const script = join(dir, "script.json");
	writeFileSync(
		script,
		JSON.stringify([
			{ tool: "notes_write_file", args: { path: "plan.md", content: "next: step 2" } },
			{ tool: "new_context" },
			{ text: "TUI window two continued" },
		]),
	);
	const socket = join(dir, "tmux.sock");
	const log = join(dir, "pane.log");
	writeFileSync(log, "");
	// pi starts only once the pane's output is piped to `log` (tmux wait-for), so no output is missed.
	const command = [
		`tmux -S ${JSON.stringify(socket)} wait-for relay-piped &&`,
		`cd ${JSON.stringify(work)} &&`,
		`PI_CODING_AGENT_DIR=${JSON.stringify(agent)} PI_OFFLINE=1 RELAY_FAUX_SCRIPT=${JSON.stringify(script)}`,
		JSON.stringify(NODE),
		JSON.stringify(PI),
		`-ne -nbt --session-dir ${JSON.stringify(sessions)}`,
		`-e ${JSON.stringify(join(ROOT, "demo/faux-provider.ts"))} -e ${JSON.stringify(join(ROOT, "extension"))}`,
		"--model faux/faux-1",
	].join(" ");
	const started = tmux("-S", socket, "new-session", "-d", "-s", "relay", "-x", "160", "-y", "45", command);
	assert.equal(started.status, 0, started.stderr);
	const screen = () => tmux("-S", socket, "capture-pane", "-t", "relay", "-p", "-S", "-200").stdout ?? "";
	try {
		const piped = tmux("-S", socket, "pipe-pane", "-t", "relay", "-o", `cat >> ${JSON.stringify(log)}`);
		assert.equal(piped.status, 0, piped.stderr);
		assert.equal(tmux("-S", socket, "wait-for", "-S", "relay-piped").status, 0);
		await waitForOutput(log, /relay w1/, "the footer status of window 1", screen);
		// The root boot block is one line in the chat; the protocol text is for the model only.
		await waitForOutput(log, /Relay · window pcw:\S+:root · 0 notes · the model has the protocol/, "the boot block's one line", screen);
		tmux("-S", socket, "send-keys", "-t", "relay", "Please do the two-window task", "Enter");
		await waitForOutput(log, /TUI window two continued/, "the continuation's reply", screen);
		await waitForOutput(log, /relay w2/, "the footer status of window 2", screen);
		const shown = plain(readFileSync(log, "utf8"));
		assert.ok(!shown.includes("<context_window_protocol>"), `the protocol text reached the chat:\n${screen()}`);
		const file = readdirSync(sessions).find((f) => f.endsWith(".jsonl"));
		const lines = readFileSync(join(sessions, file), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
		const compactions = lines.filter((l) => l.type === "compaction");
		assert.equal(compactions.length, 1);
		assert.equal(compactions[0].details.source, "new_context");
		assert.match(compactions[0].summary, /plan\.md/);
		assert.equal(lines.filter((l) => l.type === "custom_message" && l.customType === "relay/continue").length, 1);
	} finally {
		tmux("-S", socket, "kill-server");
	}
});
