// Hostile input on the real Pi agent loop (issue 14, part 3): a model that calls new_context in a loop.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { ofType, resultsOf, startSession, tool } from "./harness.mjs";

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
