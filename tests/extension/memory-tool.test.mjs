// The `memory` tool (issue 26, item 6) on the real Pi agent loop: a model trained on Anthropic's
// memory tool calls `memory` with its commands on /memories/... paths, and works on Relay's notes:
// what it creates is the note the notes tools read, survives a reset, and the command without a
// notes equivalent (rename) is an error that names the notes tools to use.
import { test } from "node:test";
import assert from "node:assert/strict";
import { joined, ofType, resultsOf, startSession, tool } from "./harness.mjs";

const memory = (args) => tool("memory", args);

test("memory: create, view, str_replace, insert and delete under /memories are Relay's notes; rename names the notes tools", async () => {
	const t = await startSession({
		steps: [
			memory({ command: "view", path: "/memories" }),
			memory({ command: "create", path: "/memories/task/plan.md", file_text: "# Plan\nstep one: PLAN-3141\nstep two\n" }),
			memory({ command: "str_replace", path: "/memories/task/plan.md", old_str: "step two", new_str: "step two: done" }),
			memory({ command: "insert", path: "/memories/task/plan.md", insert_line: 1, insert_text: "goal: ship the loader" }),
			memory({ command: "view", path: "/memories/task/plan.md", view_range: [2, 3] }),
			memory({ command: "view", path: "/memories/task" }),
			memory({ command: "rename", old_path: "/memories/task/plan.md", new_path: "/memories/plan.md" }),
			memory({ command: "create", path: "/memories/scratch.md", file_text: "temporary" }),
			memory({ command: "delete", path: "/memories/scratch.md" }),
			tool("notes_read_file", { path: "task/plan.md" }),
			// Ends the turn (terminate): the next reply is the new window's.
			tool("new_context"),
			memory({ command: "view", path: "/memories/task/plan.md" }),
			"Read it back in the new window.",
		],
	});
	try {
		await t.session.prompt("Keep your plan in memory.");
		const results = resultsOf(t, "memory");
		assert.equal(results.length, 10);
		const [emptyList, created, replaced, inserted, range, listed, renamed, scratch, deleted, afterReset] = results;
		assert.equal(emptyList.isError, false, emptyList.text);
		assert.equal(JSON.parse(emptyList.text).total, 0);
		for (const r of [created, replaced, inserted, scratch, deleted]) assert.equal(r.isError, false, r.text);
		assert.deepEqual(JSON.parse(created.text), { path: "task/plan.md", lines: 3, bytes: 36, deleted: false });
		assert.equal(JSON.parse(inserted.text).lines, 4);
		const shown = JSON.parse(range.text);
		assert.equal(range.isError, false, range.text);
		assert.equal(shown.content, "goal: ship the loader\nstep one: PLAN-3141");
		assert.deepEqual(
			JSON.parse(listed.text).files.map((f) => f.path),
			["task/plan.md"],
		);
		assert.equal(renamed.isError, true);
		assert.match(renamed.text, /^memory: the rename command has no notes equivalent; nothing was changed\. .*notes_write_file/);
		assert.deepEqual(JSON.parse(deleted.text), { path: "scratch.md", deleted: true });

		// The notes tools see the same note, as the memory calls left it.
		const [read] = resultsOf(t, "notes_read_file");
		assert.equal(JSON.parse(read.text).content, "# Plan\ngoal: ship the loader\nstep one: PLAN-3141\nstep two: done");
		const stored = ofType(t, "custom", "relay/note").filter((e) => e.data.path === "task/plan.md").at(-1).data.content;
		assert.equal(stored, "# Plan\ngoal: ship the loader\nstep one: PLAN-3141\nstep two: done\n", "the whole note, as written");
		// Each change is one note operation on the branch (the rename changed nothing).
		const ops = ofType(t, "custom", "relay/note").map((e) => [e.data.kind, e.data.path]);
		assert.deepEqual(ops, [
			["write", "task/plan.md"],
			["write", "task/plan.md"],
			["write", "task/plan.md"],
			["write", "scratch.md"],
			["write", "scratch.md"],
		]);
		// After the reset the boot block lists the note, and memory reads it back.
		assert.equal(ofType(t, "compaction").length, 1);
		assert.match(joined(t.requests.at(-2)), /task\/plan\.md/);
		assert.equal(afterReset.isError, false, afterReset.text);
		assert.match(JSON.parse(afterReset.text).content, /PLAN-3141/);
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
});

test("memory: a path outside /memories and an argument the command does not take are refused by name, and nothing is written", async () => {
	const t = await startSession({
		steps: [
			memory({ command: "create", path: "/home/user/plan.md", file_text: "x" }),
			memory({ command: "view", path: "/memories", file_text: "x" }),
			memory({ command: "str_replace", path: "/memories/none.md", old_str: "a", new_str: "b" }),
			"Done.",
		],
	});
	try {
		await t.session.prompt("Try memory.");
		const results = resultsOf(t, "memory");
		assert.deepEqual(
			results.map((r) => [r.isError, r.text.split(":").slice(0, 2).join(":")]),
			[
				[true, 'memory: argument "path" must be under /memories (your notes'],
				[true, 'memory: argument "file_text" is not used by the view command, which takes path, view_range; nothing was changed'],
				[true, 'memory: argument "path" names no note'],
			],
		);
		assert.equal(ofType(t, "custom", "relay/note").length, 0);
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
});

/** The tools a request declares to the model: its system messages' toolsAdded and toolsRemoved, replayed in order. */
function declared(messages) {
	const names = new Set();
	for (const m of messages.filter((m) => m.role === "system")) {
		for (const t of m.toolsAdded ?? []) names.add(t.name);
		for (const t of m.toolsRemoved ?? []) names.delete(typeof t === "string" ? t : t.name);
	}
	return [...names];
}

/** A step that records the names of the tools its request declared, then answers `step`. */
const offering = (offered, step) => (context) => {
	offered.push(declared(context.messages));
	return step;
};

test("relay.memoryTool false: the model is not offered memory and a call to it fails as an unknown tool; true offers it again in the resumed session", async () => {
	const offered = [];
	const a = await startSession({
		settings: { relay: { memoryTool: false } },
		steps: [offering(offered, memory({ command: "create", path: "/memories/plan.md", file_text: "PLAN-2718" })), offering(offered, "Done.")],
	});
	let file;
	try {
		await a.session.prompt("Keep your plan in memory.");
		assert.equal(offered.length, 2);
		for (const names of offered) {
			assert.ok(!names.includes("memory"), `memory withheld: ${names.join(",")}`);
			assert.ok(names.includes("notes_write_file") && names.includes("notes_read_file"), "the notes tools stay");
		}
		const [call] = resultsOf(a, "memory");
		assert.equal(call.isError, true);
		assert.match(call.text, /Tool memory not found/);
		assert.equal(ofType(a, "custom", "relay/note").length, 0, "nothing was written");
		assert.deepEqual(a.errors, []);
		file = a.sessionManager.getSessionFile();
	} finally {
		await a.dispose();
	}

	// The same session resumed with the default (true): memory is declared again.
	const again = [];
	const b = await startSession({
		sessionFile: file,
		steps: [offering(again, memory({ command: "create", path: "/memories/plan.md", file_text: "PLAN-2718" })), "Saved."],
	});
	try {
		await b.session.prompt("Now keep it.");
		assert.ok(again[0].includes("memory"), `memory declared again: ${again[0].join(",")}`);
		const [, call] = resultsOf(b, "memory");
		assert.equal(call.isError, false, call.text);
		assert.equal(ofType(b, "custom", "relay/note").at(-1).data.content, "PLAN-2718");
		assert.deepEqual(b.errors, []);
	} finally {
		await b.dispose();
	}
});

test("relay.memoryTool by default: memory is declared with the notes tools", async () => {
	const offered = [];
	const t = await startSession({ steps: [offering(offered, "Hello.")] });
	try {
		await t.session.prompt("Hi.");
		assert.ok(offered[0].includes("memory"), offered[0].join(","));
		assert.ok(offered[0].includes("notes_write_file"));
	} finally {
		await t.dispose();
	}
});
