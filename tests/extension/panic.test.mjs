// The panic boundary on the real Pi agent loop: a panic injected into the addon (the test-panic
// build, `make test-addon`, never the addon users load) is reported once, Pi's run completes, the
// session file stays whole, and Relay works again after resyncing its mirror from the branch.
// Each scenario runs in a child process, so that an abort would show as a signal and everything
// written to stderr (by Relay or by Rust itself) is seen.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const TEST_ADDON = process.env.RELAY_TEST_ADDON ?? fileURLToPath(new URL("../../target/test-addon/relay.node", import.meta.url));
const CHILD = fileURLToPath(new URL("./panic-child.mjs", import.meta.url));
const NOTE = "NOTE-7781: keep the cache warm";

function runScenario(name, panic, extraEnv = {}) {
	assert.ok(existsSync(TEST_ADDON), `the test addon is missing at ${TEST_ADDON}: run \`make test-addon\``);
	const env = { ...process.env, RELAY_ADDON: TEST_ADDON, RELAY_TEST_PANIC: panic, ...extraEnv };
	const child = spawnSync(process.execPath, [CHILD, name], { env, encoding: "utf8", timeout: 60_000 });
	assert.equal(child.signal, null, `the process was killed by ${child.signal}; stderr:\n${child.stderr}`);
	assert.equal(child.status, 0, `exit ${child.status}; stderr:\n${child.stderr}`);
	const result = JSON.parse(child.stdout.trim().split("\n").at(-1));
	return { ...result, stderr: child.stderr };
}

const count = (text, needle) => text.split(needle).length - 1;

/** The session file parses line by line into a header and one chain of entries ending at the leaf. */
function assertWholeSessionFile(result) {
	const lines = result.fileText.split("\n").filter(Boolean);
	const records = lines.map((line, i) => {
		try {
			return JSON.parse(line);
		} catch (error) {
			assert.fail(`line ${i + 1} of the session file is not JSON: ${error}`);
		}
	});
	assert.equal(records[0].type, "session");
	const entries = records.slice(1);
	assert.deepEqual(
		entries.map((e) => e.id),
		result.branchIds,
		"the file holds exactly the branch Pi has in memory, in order",
	);
	entries.forEach((e, i) => assert.equal(e.parentId, i === 0 ? null : entries[i - 1].id, `entry ${e.id} follows its parent`));
}

/** The panic's report: exactly once, naming where it happened; no other Relay failure. */
function assertReportedOnce(stderr, where) {
	assert.equal(count(stderr, "relay test panic injected"), 1, `reported exactly once:\n${stderr}`);
	assert.equal(count(stderr, `relay: internal error in ${where}: relay test panic injected`), 1, stderr);
	assert.match(stderr, /Relay restarted its engine and reloads the session branch/);
	assert.equal(count(stderr, "panicked at"), 0, "Rust's own panic message is not printed as well");
	assert.equal(count(stderr, "waits for a full resync"), 0, "the adapter resynced before the next event");
	const relayLines = stderr.split("\n").filter((line) => line.startsWith("relay: "));
	assert.equal(relayLines.length, 1, `one line from Relay, the report:\n${stderr}`);
}

test("a panic in a hook is reported once, the run completes, and the next event reloads the mirror from the session file", () => {
	const r = runScenario("hook", "handle:tool_result");
	assertReportedOnce(r.stderr, "handle (tool_result)");
	assert.deepEqual(r.piErrors, [], "nothing was thrown into Pi");
	assert.equal(r.requests, 3, "all three scripted turns ran");
	assert.equal(r.lastAssistant, "done.");
	assert.equal(r.compactions, 0, "the failed hook did nothing: no reset");
	// The note was written before the panic; the restarted engine knows it from the branch.
	assert.deepEqual(
		r.toolResults.map((x) => [x.toolName, x.isError]),
		[
			["notes_write_file", false],
			["notes_read_file", false],
		],
	);
	assert.ok(r.toolResults[1].text.includes(NOTE), r.toolResults[1].text);
	// A later hook (the /relay command) works and sees the resynced mirror.
	assert.match(r.stderr, /^Relay: on$/m);
	assert.match(r.stderr, /^notes: 1$/m);
	assertWholeSessionFile(r);
});

test("a panic in a tool is its error result, reported once; the next tool resyncs from Pi's branch (in-memory session)", () => {
	const r = runScenario("tool", "handle:notes_read_file");
	assertReportedOnce(r.stderr, "handle (notes_read_file)");
	assert.deepEqual(r.piErrors, []);
	assert.equal(r.requests, 4, "all four scripted turns ran");
	assert.equal(r.lastAssistant, "done.");
	assert.deepEqual(
		r.toolResults.map((x) => [x.toolName, x.isError]),
		[
			["notes_write_file", false],
			["notes_read_file", true],
			["notes_read_file", false],
		],
	);
	assert.match(r.toolResults[1].text, /notes_read_file failed inside Relay: relay: internal error in handle \(notes_read_file\)/);
	assert.ok(r.toolResults[2].text.includes(NOTE), r.toolResults[2].text);
	assert.match(r.stderr, /^notes: 1$/m);
	assert.equal(r.sessionFile, null);
});

test("a panic on the worker thread that collects git metadata is reported once; the handoff completes with git unknown", () => {
	const r = runScenario("git", "job:git");
	assert.equal(count(r.stderr, "relay test panic injected"), 1, r.stderr);
	assert.match(r.stderr, /^relay: internal error in the git job: relay test panic injected/m);
	assert.equal(count(r.stderr, "panicked at"), 0);
	assert.deepEqual(r.piErrors, []);
	const [handoff] = r.toolResults.filter((x) => x.toolName === "context_handoff");
	assert.equal(handoff.isError, false, handoff.text);
	assert.equal(r.handoffSidecar.git.state, "unknown");
	assert.match(r.handoffMarkdown, /^- Git branch: \(unknown: git could not be queried\)$/m);
	assert.equal(r.compactions, 1, "the handoff committed");
	assert.equal(r.lastAssistant, "Resumed.");
	assertWholeSessionFile(r);
});

test("a panic on the worker thread that runs the resume check is reported once; the handoff is written without it", () => {
	const r = runScenario("resume", "job:resumeCheck", { PI_RESUME_CHECK: "echo CHECK-OUTPUT-5150" });
	assert.equal(count(r.stderr, "relay test panic injected"), 1, r.stderr);
	assert.match(r.stderr, /^relay: internal error in the resumeCheck job: relay test panic injected/m);
	assert.equal(count(r.stderr, "panicked at"), 0);
	assert.deepEqual(r.piErrors, []);
	const [handoff] = r.toolResults.filter((x) => x.toolName === "context_handoff");
	assert.equal(handoff.isError, false, handoff.text);
	assert.ok(!r.handoffMarkdown.includes("## Resume check"), "the failed check left no section");
	assert.equal(r.compactions, 1, "the handoff committed");
	assert.deepEqual(r.resumeRecords, ["CHECK-OUTPUT-5150\n"], "the check after the reset ran normally");
	assert.equal(r.lastAssistant, "Resumed.");
	assertWholeSessionFile(r);
});

test("a panic while Relay answers /compact cancels the compaction: Pi's summarizer never runs", () => {
	const r = runScenario("compact", "handle:session_before_compact");
	assertReportedOnce(r.stderr, "handle (session_before_compact)");
	assert.deepEqual(r.piErrors, []);
	assert.equal(r.requests, r.requestsBeforeCompact, "no summarization request reached the provider");
	assert.deepEqual(r.summaries, [], "no compaction entry");
	assert.match(r.compactError ?? "", /cancel/i, "Pi reports the compaction as cancelled");
	assertWholeSessionFile(r);
});

test("a panic while Relay answers an overflow's compaction hook cancels it: Pi's summarizer never runs", () => {
	const r = runScenario("overflow", "handle:session_before_compact");
	assertReportedOnce(r.stderr, "handle (session_before_compact)");
	assert.deepEqual(r.summaries, [], "no compaction entry");
	// "First." was answered, "Second." overflowed; a summarizer would have been a third request.
	assert.equal(r.requests, 2, "no summarization request reached the provider");
	assertWholeSessionFile(r);
});
