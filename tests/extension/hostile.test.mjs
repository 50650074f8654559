// Hostile input on the real Pi agent loop (issue 14, part 3): a model that calls new_context or
// context_handoff in a loop, and 100 MB arguments, of the right type and of the wrong one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { budgetEnv, enforce, HANDOFF, newRoot, WINDOW } from "./budget-helpers.mjs";
import { captureStderr, ofType, resultsOf, startSession, tool } from "./harness.mjs";

const GUARD = /refused: this context window was opened by a reset and nothing has happened in it yet/;

test("a model calling new_context in every reply gets one reset per prompt, never a reset storm", async () => {
	// Each prompt: the call that resets, then the continuation's call in the fresh window (refused),
	// then the model gives up. Without the guard every call reset (40 resets for 40 calls).
	const round = [tool("new_context"), tool("new_context"), "giving up"];
	const t = await startSession({ steps: [...round, ...round] });
	try {
		await t.session.prompt("Reset forever.");
		assert.equal(ofType(t, "compaction").length, 1, "one reset for the first prompt");
		await t.session.prompt("Again.");
		assert.equal(ofType(t, "compaction").length, 2, "one reset for the second prompt");
		const calls = resultsOf(t, "new_context");
		// Per prompt: the call that resets, then in the new window the continuation's call, refused.
		assert.deepEqual(
			calls.map((c) => c.isError),
			[false, true, false, true],
			calls.map((c) => c.text).join("\n"),
		);
		assert.match(calls[1].text, GUARD);
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 2, "one continuation per reset");
	} finally {
		await t.dispose();
	}
});

const MB = 1_000_000;

test("100 MB arguments get short errors naming the argument; nothing is written and the session goes on", async () => {
	const huge = "z".repeat(100 * MB);
	const t = await startSession({
		// The faux provider streams the arguments in chunks of this many tokens (4 characters each).
		tokenSize: { min: 4 * MB, max: 4 * MB },
		steps: [
			{
				tools: [
					// The right type, too large for a note.
					tool("notes_write_file", { path: "big.md", content: huge }),
					// The wrong type: Pi's own schema error would repeat all 100 MB.
					tool("notes_append_to_file", { path: { nested: huge }, content: "x" }),
					// A query as long: the reply stays within the 64 KiB cap.
					tool("history_search_contents", { query: huge }),
				],
			},
			"Understood.",
			"Still here.",
		],
	});
	try {
		const stderr = await captureStderr(() => t.session.prompt("Write it all down."));
		assert.deepEqual(stderr.filter((l) => l.startsWith("relay:")), [], "no hook failed");
		const [write] = resultsOf(t, "notes_write_file");
		assert.equal(write.isError, true);
		assert.equal(write.text, 'notes_write_file: argument "content" is 100000000 UTF-8 bytes; a note holds at most 1000000. Nothing was written');
		const [append] = resultsOf(t, "notes_append_to_file");
		assert.equal(append.isError, true);
		// Pi's list of what is wrong (its wording differs between Pi releases), without the copy.
		assert.match(
			append.text,
			/^notes_append_to_file: the arguments do not match the tool's parameters:\n {2}- \/?path: [^\n]*string[^\n]*\n\(The arguments are not repeated here\.\)$/i,
		);
		assert.ok(append.text.length < 300, `${append.text.length} characters`);
		const [search] = resultsOf(t, "history_search_contents");
		assert.ok(search.text.length <= 65_536, `search reply of ${search.text.length} bytes`);
		assert.equal(ofType(t, "custom", "relay/note").length, 0, "no note was persisted");
		// 300 MB of arguments are far past the 128k-token window: Relay rolled the task into a new
		// window once (the model wrote no handoff) at Pi's threshold check after the turn that
		// crossed, at once, since a note-taking request would not fit the window; before any
		// provider overflow (also on Pi 1.3, whose faux provider counts the input twice), so the
		// next prompt's request is small again.
		await t.session.prompt("Carry on.");
		assert.deepEqual(ofType(t, "compaction").map((c) => c.details.source), ["threshold"]);
		const last = JSON.stringify(t.requests.at(-1));
		assert.ok(last.length < 100_000, `the last request is ${last.length} bytes`);
		assert.match(last, /Carry on\./);
	} finally {
		await t.dispose();
	}
});

test("a model calling context_handoff in every reply gets one handoff per prompt, never a reset storm", async () => {
	// Enforce mode, far below the thresholds: each handoff is voluntary. Per prompt: the call that
	// hands off, then the continuation's call in the fresh window, refused, then the model gives
	// up. Without the reset guard every call would write a handoff and reset again.
	const root = newRoot();
	const env = budgetEnv(root);
	const second = { ...HANDOFF, goal: "SECOND-GOAL-5150: the next part" };
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		steps: [
			{ ...tool("context_handoff", HANDOFF), tokens: 5_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 5_000 },
			{ text: "giving up", tokens: 5_000 },
			{ ...tool("context_handoff", second), tokens: 5_000 },
			{ ...tool("context_handoff", second), tokens: 5_000 },
			{ text: "giving up", tokens: 5_000 },
		],
	});
	try {
		await t.session.prompt("Hand off forever.");
		assert.equal(ofType(t, "compaction").length, 1, "one reset for the first prompt");
		await t.session.prompt("Again.");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 2, "one reset for the second prompt");
		assert.deepEqual(compactions.map((c) => c.details.source), ["handoff", "handoff"]);
		const calls = resultsOf(t, "context_handoff");
		assert.deepEqual(
			calls.map((c) => c.isError),
			[false, true, false, true],
			calls.map((c) => c.text).join("\n"),
		);
		assert.match(calls[1].text, /^context_handoff: refused: this context window was opened by a reset and nothing has happened in it yet/);
		assert.equal(calls[1].text, calls[3].text);
		assert.equal(JSON.parse(calls[0].text).written, true);
		assert.equal(JSON.parse(calls[2].text).written, true);
		assert.equal(t.requests.length, 6, "no request beyond the script");
	} finally {
		await t.dispose();
		env.restore();
	}
});
