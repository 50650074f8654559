// End to end (issue 25): resuming a large session with the real `pi` CLI in print mode, offline,
// with the faux provider. The whole-history load waits until the run settles (nothing competes
// with the first request), and `pi -p` ends as soon as its answer is printed: the load is
// stopped, Pi does not wait for it, and its late result reaches no stale session. Runs the test-panic addon (`make test-addon`), whose test-only gate
// `RELAY_TEST_HOLD_LOAD` holds the whole load until a file exists (or the load is cancelled).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { generate } from "../../bench/session-gen.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PI = process.env.RELAY_PI_CLI ?? join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");
const TEST_ADDON = process.env.RELAY_TEST_ADDON ?? join(ROOT, "target/test-addon/relay.node");
assert.ok(existsSync(TEST_ADDON), `the test addon is built (make test-addon): ${TEST_ADDON}`);

/**
 * A large generated session in a fresh folder (larger than the background threshold, 8 MiB, with a
 * compaction every 2,000 entries: the first request goes out from the current window, the earlier
 * ones load after it), resumed by `pi -p --session <file> go` with one scripted reply, Relay loaded
 * with the test addon; `extensions(dir)` go before the faux provider and Relay, `env(dir)` is added. Returns
 * spawnSync's result, the folder and the session's lines after its header.
 */
function resumeLarge({ prefix, seed, reply, timeout, extensions = () => [], env = () => ({}) }) {
	const dir = mkdtempSync(join(tmpdir(), prefix));
	const [agent, work] = ["agent", "work"].map((d) => join(dir, d));
	for (const d of [agent, work]) mkdirSync(d, { recursive: true });
	const source = join(dir, "generated.jsonl");
	generate(source, { targetBytes: 12 * 1048576, seed, compactionEvery: 2000 });
	const [head, ...rest] = readFileSync(source, "utf8").split("\n");
	const session = join(dir, "session.jsonl");
	writeFileSync(session, [JSON.stringify({ ...JSON.parse(head), cwd: work }), ...rest].join("\n"));
	writeFileSync(join(agent, "settings.json"), JSON.stringify({ compaction: { enabled: false } }));
	writeFileSync(join(dir, "script.json"), JSON.stringify([{ text: reply }]));
	const result = spawnSync(
		process.execPath,
		[PI, "-p", "-ne", "-nbt", "--offline", "--session", session, ...extensions(dir).flatMap((e) => ["-e", e]), "-e", join(ROOT, "demo/faux-provider.ts"), "-e", join(ROOT, "extension"), "--model", "faux/faux-1", "go"],
		{
			cwd: work,
			encoding: "utf8",
			input: "",
			timeout,
			env: {
				...process.env,
				PI_CODING_AGENT_DIR: agent,
				PI_CONTEXT_BUDGET_STATE_DIR: join(dir, "state"),
				PI_OFFLINE: "1",
				RELAY_ADDON: TEST_ADDON,
				RELAY_FAUX_SCRIPT: join(dir, "script.json"),
				RELAY_FAUX_DUMP: join(dir, "requests.jsonl"),
				RELAY_FAUX_WINDOW: "1000000000",
				...env(dir),
			},
		},
	);
	return { result, dir, rest };
}

// A probe loaded before Relay: at `session_shutdown` (Pi awaits its handlers before it exits) it
// waits, up to 20 s, for the whole-history load to reach its test gate (`<gate>.held`), so that the
// load is in flight when Relay's own shutdown handler runs, however late the libuv pool starts it.
// Without it, `pi -p` could exit before a pool thread picked the job up (seen once in six runs).
const SHUTDOWN_PROBE = `
import { existsSync } from "node:fs";
export default function (pi) {
	pi.on("session_shutdown", async () => {
		const gate = process.env.RELAY_TEST_HOLD_LOAD;
		const until = Date.now() + 20000;
		while (!existsSync(gate + ".held") && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
	});
}
`;

test("pi -p on a large session with windows answers before its whole history starts loading and exits without waiting for it, with nothing reported", () => {
	const { result, dir } = resumeLarge({
		prefix: "relay-e2e-resume-",
		seed: 11,
		reply: "Answered from the current window.",
		// The gate holds the load for 60 s unless it is cancelled: a run that waited for it would
		// take that long.
		timeout: 30_000,
		extensions: (dir) => {
			const probe = join(dir, "shutdown-probe.mjs");
			writeFileSync(probe, SHUTDOWN_PROBE);
			return [probe];
		},
		env: (dir) => ({ RELAY_TEST_HOLD_LOAD: join(dir, "never-opened") }),
	});
	const gate = join(dir, "never-opened");
	assert.equal(result.error, undefined, "pi ended before the test's timeout");
	assert.equal(result.status, 0, result.stderr);
	assert.equal(result.stdout.trim(), "Answered from the current window.");
	assert.ok(existsSync(`${gate}.held`), "the whole-history load was in flight when pi ended");
	// The request was written before the load began (the load starts when the run settles).
	const requested = statSync(join(dir, "requests.jsonl")).mtimeMs;
	assert.ok(statSync(`${gate}.held`).mtimeMs >= requested, "the whole load started after the request");
	assert.ok(!existsSync(gate));
	assert.doesNotMatch(result.stderr, /relay/i, "nothing reported: the late load reached no stale session");
});

// A probe loaded before Relay: at `session_start` it waits (up to 20 s) for Relay's first pass to
// reach its test gate (`RELAY_TEST_HOLD_TAIL` writes `<gate>.held` there), records whether it
// did, and opens the gate so the run goes on.
const PROBE = `
import { existsSync, writeFileSync } from "node:fs";
export default function (pi) {
	pi.on("session_start", async () => {
		const gate = process.env.RELAY_TEST_HOLD_TAIL;
		const until = Date.now() + 20000;
		while (!existsSync(gate + ".held") && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
		writeFileSync(process.env.PROBE_OUT, JSON.stringify({ heldAtSessionStart: existsSync(gate + ".held") }));
		writeFileSync(gate, "");
	});
}
`;

test("pi -p --session <large file> reads the session while Pi starts, before session_start, and answers from it", () => {
	const { result, dir, rest } = resumeLarge({
		prefix: "relay-e2e-read-ahead-",
		seed: 12,
		reply: "Answered after reading ahead.",
		timeout: 60_000,
		extensions: (dir) => {
			const probe = join(dir, "probe.mjs");
			writeFileSync(probe, PROBE);
			return [probe];
		},
		env: (dir) => ({ RELAY_TEST_HOLD_TAIL: join(dir, "tail-gate"), PROBE_OUT: join(dir, "probe.json") }),
	});
	assert.equal(result.error, undefined, "pi ended before the test's timeout");
	assert.equal(result.status, 0, result.stderr);
	assert.equal(result.stdout.trim(), "Answered after reading ahead.");
	// Relay's first pass was under way at session_start: it started while Pi was starting.
	assert.deepEqual(JSON.parse(readFileSync(join(dir, "probe.json"), "utf8")), { heldAtSessionStart: true });
	// The request carries the resumed session's current window (its last user question).
	const lastQuestion = rest.map((l) => (l ? JSON.parse(l) : null)).filter((e) => e?.message?.role === "user").at(-1);
	const request = readFileSync(join(dir, "requests.jsonl"), "utf8");
	assert.ok(request.includes(JSON.stringify(lastQuestion.message.content[0].text).slice(1, 60)), "the current window was sent");
	assert.doesNotMatch(result.stderr, /relay/i, "nothing reported");
});
