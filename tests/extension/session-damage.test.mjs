// Damaged session files on the real Pi agent loop: a file truncated mid-line with garbage lines
// in it, 100,000 note operations, and a process killed between Relay's reset marker entry and the
// compaction entry (a real child process, SIGKILL). On the next start Relay's mirror equals a fresh
// resync from Pi's own branch, and nothing the user wrote (notes, user messages, handoffs) is lost.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, readFileSync, readdirSync, truncateSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ofType, resultsOf, startSession, textOf, tool } from "./harness.mjs";
import { GOAL, newRoot } from "./budget-helpers.mjs";
import { addon, callTool, loadFile, resync } from "./door.mjs";

const { Engine } = addon();

/** What the history and notes tools show of an engine's mirror: every window, item and note. */
function view(engine) {
	const call = (name, args) => callTool(engine, name, args).text;
	const windows = call("history_list_windows", { limit: 200 });
	const ids = [...windows.matchAll(/"window_id":"([^"]+)"/g)].map((m) => m[1]);
	assert.ok(ids.length > 0, `no window in ${windows}`);
	const items = ids.map((id) => call("history_list_items", { window_id: id, limit: 200, max_chars_per_item: 400 }));
	const notes = call("notes_list_files_by_prefix", { prefix: "", limit: 200 });
	return { windows, items, notes };
}

/** Relay's view after loading the session file, and after a resync from Pi's branch: equal. */
function assertMirrorEqualsResync(file) {
	const opened = startBranch(file);
	const fromFile = new Engine();
	assert.equal(loadFile(fromFile, opened.getSessionId(), file, opened.getLeafId()), true, "the file holds Pi's leaf");
	const fromPi = new Engine();
	resync(fromPi, opened.getSessionId(), opened.getBranch());
	const a = view(fromFile);
	assert.deepEqual(a, view(fromPi));
	return a;
}

let SessionManagerClass;
function startBranch(file) {
	return SessionManagerClass.open(file);
}

test.before(async () => {
	({ SessionManager: SessionManagerClass } = await import("@earendil-works/pi-coding-agent"));
});

/** A session with two user prompts, a note and a tool result, written by the real loop. */
async function writtenSession() {
	const root = newRoot();
	const t = await startSession({
		root,
		steps: [tool("notes_write_file", { path: "plan.md", content: "NOTE-4242: keep the cache warm" }), "Written.", "Second answer."],
	});
	await t.session.prompt("USER-ONE-1111: write the plan.");
	await t.session.prompt("USER-TWO-2222: and then?");
	const file = t.sessionManager.getSessionFile();
	await t.dispose();
	return { root, file };
}

test("a session file truncated mid-line with garbage lines: Relay starts, its mirror equals Pi's branch, nothing the user wrote is lost", async () => {
	const { root, file } = await writtenSession();
	const whole = readFileSync(file, "utf8");
	const lines = whole.split("\n").filter(Boolean);
	// Garbage between the lines (not JSON, JSON of the wrong shape, a NUL, a lone brace), and the
	// file cut in the middle of a last line (a crash mid-append of the third answer).
	const garbage = ["not json at all", '{"type":"message"}', "\u0000\u0001", "{", '["array"]', '{"type":"custom","id":7}'];
	// (Pi takes a JSON object line as an entry and its last entry as the leaf: the garbage goes
	// between the lines, the last whole line stays the leaf.)
	const damaged = [lines[0], ...lines.slice(1, -1).flatMap((l, i) => [l, garbage[i % garbage.length]]), lines.at(-1)].join("\n") + "\n";
	assert.ok(lines.length - 2 >= garbage.length, "every kind of garbage is used");
	const torn = JSON.stringify({ type: "message", id: "torn0001", parentId: JSON.parse(lines.at(-1)).id, timestamp: "2026-12-02T00:00:00.000Z", message: { role: "user", content: "cut" } });
	writeFileSync(file, damaged + torn.slice(0, torn.length / 2));

	const seen = assertMirrorEqualsResync(file);
	assert.match(seen.notes, /plan\.md/);
	const items = seen.items.join("\n");
	assert.ok(items.includes("USER-ONE-1111") && items.includes("USER-TWO-2222"), items);

	// The real loop on the damaged file: the tools answer from the whole branch.
	const t = await startSession({
		root,
		sessionFile: file,
		steps: [tool("notes_read_file", { path: "plan.md" }), tool("history_search_contents", { query: "USER-ONE-1111" }), "Both found."],
	});
	try {
		await t.session.prompt("USER-THREE-3333: check the plan.");
		const [note] = resultsOf(t, "notes_read_file");
		assert.equal(note.isError, false, note.text);
		assert.match(note.text, /NOTE-4242: keep the cache warm/);
		const [found] = resultsOf(t, "history_search_contents");
		assert.match(found.text, /USER-ONE-1111/);
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
	assertMirrorEqualsResync(file);
});

test("100,000 note operations: the last write of each note wins, the tools still answer, the mirror equals a resync", async () => {
	const { root, file } = await writtenSession();
	const last = JSON.parse(readFileSync(file, "utf8").trim().split("\n").at(-1));
	const leafMessage = last.id;
	let parent = leafMessage;
	let chunk = "";
	const N = 100_000;
	for (let i = 0; i < N; i++) {
		const id = `n${i.toString(16).padStart(7, "0")}`;
		const path = `bulk/${i % 100}.md`;
		const kind = i % 3 === 0 ? "write" : "append";
		const content = `op ${i}\n`;
		chunk += JSON.stringify({ type: "custom", id, parentId: parent, timestamp: "2026-12-02T00:00:00.000Z", customType: "relay/note", data: { kind, path, content, atMs: 1_796_000_000_000 + i } }) + "\n";
		parent = id;
		if (chunk.length > 1 << 20) {
			appendFileSync(file, chunk);
			chunk = "";
		}
	}
	appendFileSync(file, chunk);
	const seen = assertMirrorEqualsResync(file);
	assert.match(seen.notes, /bulk\/99\.md/);
	// What bulk/7.md holds, computed by replaying its operations here (writes replace, appends add).
	let expected = "";
	for (let i = 7; i < N; i += 100) expected = i % 3 === 0 ? `op ${i}\n` : expected + `op ${i}\n`;
	const t = await startSession({ root, sessionFile: file, steps: [tool("notes_read_file", { path: "bulk/7.md" }), "ok"] });
	try {
		await t.session.prompt("USER-FOUR-4444: read bulk/7.md.");
		const [note] = resultsOf(t, "notes_read_file");
		assert.equal(note.isError, false, note.text);
		assert.equal(JSON.parse(note.text).content, expected.trimEnd());
		assert.equal(expected, "op 99807\nop 99907\n", "the replay above (99,807 is the last write: 99,807 % 3 == 0)");
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
	assert.ok(statSync(file).size > 10_000_000);
});

test("killed between the reset marker and the compaction entry: the next start keeps every note, prompt and the handoff", async () => {
	const root = newRoot();
	const child = spawnSync(process.execPath, [fileURLToPath(new URL("./session-child.mjs", import.meta.url))], {
		env: { ...process.env, RELAY_CHILD_ROOT: root },
		encoding: "utf8",
		timeout: 60_000,
	});
	assert.equal(child.signal, "SIGKILL", `the child died by SIGKILL at the marker: ${child.status} ${child.stdout} ${child.stderr}`);
	const { file, marker } = JSON.parse(child.stdout.trim().split("\n").at(-1));
	const entries = readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
	assert.equal(entries.at(-1).id, marker, "the marker is the file's last entry");
	assert.equal(entries.filter((e) => e.type === "compaction").length, 0, "no compaction was written");
	const handoffs = readdirSync(join(root, "work", ".ai-work", "handoffs"));
	assert.equal(handoffs.filter((n) => n.endsWith(".md")).length, 1, "the handoff file is on disk");

	const seen = assertMirrorEqualsResync(file);
	assert.match(seen.notes, /plan\.md/);
	const items = seen.items.join("\n");
	assert.ok(items.includes("USER-PROMPT-1") && items.includes("USER-PROMPT-2"), items);

	process.env.PI_CONTEXT_BUDGET_STATE_DIR = join(root, "state", "context-budget");
	const t = await startSession({
		root,
		sessionFile: file,
		steps: [tool("notes_read_file", { path: "plan.md" }), tool("history_search_contents", { query: "USER-PROMPT-2" }), "Carried on."],
	});
	try {
		await t.session.prompt("USER-PROMPT-3: carry on.");
		const [note] = resultsOf(t, "notes_read_file");
		assert.match(note.text, /NOTE-5150: the plan/);
		const [found] = resultsOf(t, "history_search_contents");
		assert.match(found.text, /USER-PROMPT-2/);
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Carried on.");
		assert.deepEqual(t.errors, []);
		// The handoff is still on disk and named by the branch's record.
		const [record] = ofType(t, "custom", "relay/handoff");
		assert.ok(record && existsSync(record.data.path), "the handoff record points at the file");
		assert.ok(readFileSync(record.data.path, "utf8").includes(GOAL));
	} finally {
		await t.dispose();
		delete process.env.PI_CONTEXT_BUDGET_STATE_DIR;
	}
	assertMirrorEqualsResync(file);
});
