// Tool calls Pi runs in parallel (one assistant message, several calls) on the real agent loop: a
// tool whose work runs off the event loop (context_handoff's git and store collection) must not
// hold the engine while it runs, or the hooks of the other calls fail. The addon's async work is
// `runJob`, a module function: the engine is not borrowed while a job runs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { budgetEnv, HANDOFF, newRoot } from "./budget-helpers.mjs";
import { captureStderr, ofType, resultsOf, startSession, tool } from "./harness.mjs";

test("a note written beside context_handoff in one message: every hook of both calls reaches the engine", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const t = await startSession({
		root,
		steps: [{ tools: [tool("context_handoff", HANDOFF), tool("notes_write_file", { path: "plan.md", content: "PARALLEL-NOTE-4410" })] }, "Done."],
	});
	try {
		const stderr = await captureStderr(() => t.session.prompt("Write the plan and hand off."));
		assert.deepEqual(stderr.filter((l) => l.startsWith("relay:")), [], "no hook of either call failed");
		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff.isError, false, handoff.text);
		const [note] = resultsOf(t, "notes_write_file");
		assert.equal(note.isError, false, note.text);
		assert.equal(ofType(t, "custom", "relay/note").length, 1, "the note was persisted once");
	} finally {
		await t.dispose();
		env.restore();
	}
});
