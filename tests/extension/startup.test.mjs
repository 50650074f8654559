// Start-up off Pi's critical path (issue 12): a large session file is loaded on the libuv pool
// while Pi goes on. The current window is read first and the hooks go on from it; the history
// tools wait for the whole history, so nothing is answered from part of it. A session without
// a compaction is read whole before the first hook. Runs the test-panic addon (`make
// test-addon`), whose test-only gate `RELAY_TEST_HOLD_LOAD` holds the whole load until a file
// exists.
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { COMMON, RARE, generate } from "../../bench/session-gen.mjs";

const TEST_ADDON = process.env.RELAY_TEST_ADDON ?? fileURLToPath(new URL("../../target/test-addon/relay.node", import.meta.url));
assert.ok(existsSync(TEST_ADDON), `the test addon is built (make test-addon): ${TEST_ADDON}`);
process.env.RELAY_ADDON = TEST_ADDON;
const { captureStderr, startSession, tool, until } = await import("./harness.mjs");

const dir = mkdtempSync(join(tmpdir(), "relay-startup-"));
// Larger than the addon's background threshold (8 MiB), so the load runs on the libuv pool.
const big = { file: join(dir, "big.jsonl") };
Object.assign(big, generate(big.file, { targetBytes: 12 * 1048576, seed: 7 }));

/** The items the model can search, newest first: every message entry's text parts. */
function itemsOf(file) {
	const items = [];
	for (const line of readFileSync(file, "utf8").split("\n")) {
		if (!line) continue;
		const e = JSON.parse(line);
		if (e.type !== "message") continue;
		const text = e.message.content.filter((p) => p.type === "text").map((p) => p.text).join("\n");
		items.push({ id: e.id, role: e.message.role, text });
	}
	return items.reverse();
}

// The same size with a compaction every 2,000 entries: the current window is a small tail.
const windowed = { file: join(dir, "windowed.jsonl") };
Object.assign(windowed, generate(windowed.file, { targetBytes: 12 * 1048576, seed: 7, compactionEvery: 2000 }));

const items = itemsOf(big.file);
const inFile = new Set(items.map((i) => i.id));
/** The hits among the file's entries (the run's own tool calls carry the query too). */
const fromFile = (result) => result.items.map((i) => i.item_id).filter((id) => inFile.has(id));
const newestCommon = items.filter((i) => i.text.includes(COMMON)).slice(0, 20).map((i) => i.id);

test("a history tool called at once after session_start on a large session answers from the whole branch", async () => {
	const file = join(dir, "immediate.jsonl");
	copyFileSync(big.file, file);
	const t = await startSession({
		sessionFile: file,
		steps: [
			{ tools: [{ tool: "history_search_contents", args: { query: RARE } }, { tool: "history_search_contents", args: { query: COMMON, limit: 21 } }] },
			"Found.",
		],
	});
	try {
		// No await between session_start and the first request.
		await t.session.prompt("Where did the lease expire?");
		const [rare, common] = t.toolResults().slice(-2).map((r) => JSON.parse(r.text));
		assert.deepEqual(fromFile(rare), [big.rareId], "the planted needle, in the oldest part of the file");
		assert.equal(rare.has_more, false);
		assert.deepEqual(fromFile(common), newestCommon);
		assert.equal(common.has_more, true);
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
});

test("session_start returns while the large session still loads; the first request and its tools wait for the whole branch", async () => {
	const file = join(dir, "held.jsonl");
	copyFileSync(big.file, file);
	const gate = join(dir, "open-the-load");
	process.env.RELAY_TEST_HOLD_LOAD = gate;
	let t;
	try {
		t = await startSession({
			sessionFile: file,
			steps: [tool("history_search_contents", { query: RARE }), "Found it."],
		});
		const statusFile = join(process.env.PI_CONTEXT_BUDGET_STATE_DIR, "status", `${big.sessionId}.json`);
		// Pi's session_start is over while the load is held: Relay's own session_start (which
		// writes the status file) waits for the load.
		assert.equal(existsSync(statusFile), false, "Relay's session_start work waits for the load");
		const run = t.session.prompt("Where did the lease expire?");
		for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
		assert.equal(t.requests.length, 0, "no request is sent from a partial mirror");
		writeFileSync(gate, "");
		await run;
		assert.equal(existsSync(statusFile), true, "session_start ran once the branch was loaded");
		const [rare] = t.toolResults().slice(-1).map((r) => JSON.parse(r.text));
		assert.deepEqual(fromFile(rare), [big.rareId]);
		// The first request carries the resumed session: Pi's own messages after its latest
		// compaction (the generator writes none below 10,000 entries), and nothing of Relay's.
		assert.equal(t.requests[0].filter((m) => m.role === "custom").length, 0, "no Relay message in a resumed request");
		assert.deepEqual(t.errors, []);
	} finally {
		delete process.env.RELAY_TEST_HOLD_LOAD;
		writeFileSync(gate, "");
		await t?.dispose();
	}
});

test("on a session with windows, the first request goes out from the current window while a history tool waits for the whole history", { timeout: 30_000 }, async () => {
	assert.ok(windowed.compactions >= 2, "the session has earlier windows");
	const witems = itemsOf(windowed.file);
	const winFile = new Set(witems.map((i) => i.id));
	const expectedCommon = witems.filter((i) => i.text.includes(COMMON)).slice(0, 20).map((i) => i.id);
	const file = join(dir, "windowed-held.jsonl");
	copyFileSync(windowed.file, file);
	const gate = join(dir, "open-the-whole-load");
	process.env.RELAY_TEST_HOLD_LOAD = gate;
	let t;
	let firstRequest;
	const requested = new Promise((resolve) => (firstRequest = resolve));
	try {
		t = await startSession({
			sessionFile: file,
			steps: [
				() => {
					firstRequest();
					return { tools: [{ tool: "history_search_contents", args: { query: RARE } }, { tool: "history_search_contents", args: { query: COMMON, limit: 21 } }] };
				},
				"Found it.",
			],
		});
		const statusFile = join(process.env.PI_CONTEXT_BUDGET_STATE_DIR, "status", `${windowed.sessionId}.json`);
		const resultsBefore = t.toolResults().length;
		const run = t.session.prompt("Where did the lease expire?");
		// The whole load is held: the first request still goes out (Relay's hooks ran on the
		// current window, its session_start included), and the history tools it calls wait.
		await requested;
		assert.equal(existsSync(statusFile), true, "Relay's session_start ran before the whole history was read");
		assert.equal(t.requests.length, 1);
		for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
		assert.equal(t.requests.length, 1, "the history tools wait for the whole history");
		assert.equal(t.toolResults().length, resultsBefore, "no history answer from the part that is loaded");
		writeFileSync(gate, "");
		await run;
		const [rare, common] = t.toolResults().slice(-2).map((r) => JSON.parse(r.text));
		const fromWindowed = (result) => result.items.map((i) => i.item_id).filter((id) => winFile.has(id));
		assert.deepEqual(fromWindowed(rare), [windowed.rareId], "the needle in the first window, found");
		assert.equal(rare.has_more, false);
		assert.deepEqual(fromWindowed(common), expectedCommon, "the newest hits over every window");
		assert.equal(common.has_more, true);
		assert.deepEqual(t.errors, []);
	} finally {
		delete process.env.RELAY_TEST_HOLD_LOAD;
		writeFileSync(gate, "");
		await t?.dispose();
	}
});

test("on a session with windows, the whole history starts loading only once the first run settles", { timeout: 30_000 }, async () => {
	const witems = itemsOf(windowed.file);
	const winFile = new Set(witems.map((i) => i.id));
	const file = join(dir, "windowed-settle.jsonl");
	copyFileSync(windowed.file, file);
	const gate = join(dir, "open-the-settled-load");
	process.env.RELAY_TEST_HOLD_LOAD = gate;
	let t;
	let loadingAtRequest;
	try {
		t = await startSession({
			sessionFile: file,
			// One request per prompt: no compaction of the resumed window (Pi 1.3 counts it full).
			settings: { compaction: { enabled: false } },
			steps: [
				() => {
					loadingAtRequest = existsSync(`${gate}.held`);
					return "Answered from the current window.";
				},
				tool("history_search_contents", { query: RARE }),
				"Found it.",
			],
		});
		await t.session.prompt("What is in this window?");
		assert.equal(loadingAtRequest, false, "nothing loads the earlier windows while the first request is built");
		// The run settled: the whole load is on its way (held at the gate), with no history tool called.
		await until(`${gate}.held`, "the whole history's load to begin after the run settled");
		writeFileSync(gate, "");
		await t.session.prompt("Where did the lease expire?");
		const [rare] = t.toolResults().slice(-1).map((r) => JSON.parse(r.text));
		assert.deepEqual(rare.items.map((i) => i.item_id).filter((id) => winFile.has(id)), [windowed.rareId], "the needle in the first window");
		assert.deepEqual(t.errors, []);
	} finally {
		delete process.env.RELAY_TEST_HOLD_LOAD;
		writeFileSync(gate, "");
		await t?.dispose();
	}
});

test("a navigation while the large session loads is applied once the branch is installed", async () => {
	const file = join(dir, "navigated.jsonl");
	copyFileSync(big.file, file);
	// An assistant answer halfway through the file, and the newest common-needle items up to it.
	const half = items.length >> 1;
	const target = items.slice(half).find((i) => i.role === "assistant");
	const older = items.slice(items.indexOf(target));
	const expected = older.filter((i) => i.text.includes(COMMON)).slice(0, 20).map((i) => i.id);
	assert.equal(expected.length, 20);
	assert.ok(items.slice(0, items.indexOf(target)).some((i) => i.text.includes(COMMON)), "newer hits exist past the target");
	const gate = join(dir, "open-the-navigated-load");
	process.env.RELAY_TEST_HOLD_LOAD = gate;
	let t;
	try {
		t = await startSession({ sessionFile: file, steps: [tool("history_search_contents", { query: COMMON, limit: 21 }), "Found."] });
		const navigation = t.session.navigateTree(target.id);
		writeFileSync(gate, "");
		await navigation;
		assert.equal(t.sessionManager.getLeafId(), target.id);
		await t.session.prompt("Search the retries.");
		const [common] = t.toolResults().slice(-1).map((r) => JSON.parse(r.text));
		assert.deepEqual(fromFile(common), expected, "only the branch up to the navigation target");
		assert.deepEqual(t.errors, []);
	} finally {
		delete process.env.RELAY_TEST_HOLD_LOAD;
		writeFileSync(gate, "");
		await t?.dispose();
	}
});

test("a panic in the background load falls back to a full resync from Pi and is reported once", async () => {
	const file = join(dir, "panicked.jsonl");
	copyFileSync(big.file, file);
	process.env.RELAY_TEST_PANIC = "job:load";
	let t;
	try {
		const lines = await captureStderr(async () => {
			t = await startSession({ sessionFile: file, steps: [tool("history_search_contents", { query: RARE }), "Found."] });
			await t.session.prompt("Where did the lease expire?");
		});
		const reports = lines.filter((l) => l.includes("internal error in the load job"));
		assert.equal(reports.length, 1, lines.join("\n"));
		assert.match(reports[0], /^relay: loading the session failed: /);
		const [rare] = t.toolResults().slice(-1).map((r) => JSON.parse(r.text));
		assert.deepEqual(fromFile(rare), [big.rareId], "the branch came from Pi instead");
		assert.deepEqual(t.errors, []);
	} finally {
		delete process.env.RELAY_TEST_PANIC;
		await t?.dispose();
	}
});

test("the session file read ahead is the one Pi's command line names: --session <file>, from the cwd, as Pi's parser reads it; not an id, a folder, a fork or nothing", async () => {
	const { sessionFileOf } = await import("../../extension/src/adapter.ts");
	const dir = mkdtempSync(join(tmpdir(), "relay-read-ahead-args-"));
	const file = join(dir, "s.jsonl");
	writeFileSync(file, "");
	assert.equal(sessionFileOf(["-p", "-ne", "--session", file, "-e", "x.ts", "go"], "/"), file);
	assert.equal(sessionFileOf(["--session=s.jsonl"], dir), undefined, "not a form Pi reads");
	assert.equal(sessionFileOf(["--fork", file], dir), undefined, "a fork opens a copy");
	assert.equal(sessionFileOf(["--model", "faux/faux-1", "--session", "s.jsonl", "go"], dir), file);
	assert.equal(sessionFileOf(["--session", "0f3a9c"], dir), undefined, "a session id is Pi's to resolve");
	assert.equal(sessionFileOf(["--session", dir], "/"), undefined, "a folder");
	assert.equal(sessionFileOf(["-p", "go"], dir), undefined);
	assert.equal(sessionFileOf(["--session"], dir), undefined);
});
