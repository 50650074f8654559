// Failed resets on the real Pi agent loop (issue 10, part 1): a reset Relay owns that Pi rejects
// again and again arms the budget fallback ("compaction failure") at the third failure, and the
// fallback's mechanical reset then names it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ofType, resultsOf, startSession, textOf, tool } from "./harness.mjs";
import { budgetEnv, enforce, newRoot, probeTool, WINDOW } from "./budget-helpers.mjs";

/** An extension loaded after Relay that makes Relay's boundary draft invalid `times` times: Pi
 * validates the drafts on a preview session and appends none of them (an edit of an entry that
 * does not exist). */
function draftBreaker(times) {
	const state = { left: times };
	const factory = (pi) => {
		pi.on("agent_before_settle", (event) => {
			if (state.left === 0 || !event.entries.some((e) => e.type === "compaction")) return undefined;
			state.left -= 1;
			return { entries: [...event.entries, { type: "context_edit", targetId: "no-such-entry", replacement: null }] };
		});
	};
	return { factory, state };
}

test("a reset Relay owns that Pi rejects three times arms the compaction-failure fallback; its mechanical reset names it", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const probe = probeTool();
	const breaker = draftBreaker(3);
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [probe.factory, breaker.factory],
		steps: [
			// new_context ends its run: each prompt asks for one reset at its settle point.
			{ ...tool("new_context"), tokens: 5_000 },
			{ ...tool("new_context"), tokens: 5_200 },
			{ ...tool("new_context"), tokens: 5_400 },
			{ ...tool("probe_work"), tokens: 5_600 },
			{ text: "never requested: the blocked call ends the run", tokens: 5_700 },
		],
	});
	try {
		await t.session.prompt("First.");
		await t.session.prompt("Second.");
		const twoFailures = ofType(t, "custom_message", "relay/reset-failed");
		assert.equal(twoFailures.length, 2, "two rejected resets, each reported");
		assert.ok(!env.events().some((e) => e.event === "fallback_armed"), "two failures arm nothing");
		await t.session.prompt("Third.");
		assert.equal(breaker.state.left, 0, "the breaker rejected three resets");
		assert.equal(ofType(t, "compaction").length, 0, "Pi appended no reset");
		const failed = ofType(t, "custom_message", "relay/reset-failed");
		assert.deepEqual(failed.map((e) => e.details.failures), [1, 2, 3], "the failure count is on the branch");
		const armed = env.events().filter((e) => e.event === "fallback_armed");
		assert.deepEqual(armed.map((e) => e.reason), ["compaction_failure"], "the third failure arms the fallback");

		await t.session.prompt("Keep working.");
		const [blocked] = resultsOf(t, "probe_work");
		assert.equal(probe.runs, 0, "the armed fallback blocks real work");
		assert.equal(blocked.isError, true);
		assert.match(blocked.text, /its reset failed three times/, "the block reason names the compaction failure");
		const [forced] = ofType(t, "compaction");
		assert.equal(forced.details.source, "forced", "the fallback resets mechanically");
		assert.match(forced.summary, /<reset_notice>[\s\S]*failed three times, or failed in a way a retry cannot fix \(compaction failure\)[\s\S]*<\/reset_notice>/);
		assert.ok(env.events().some((e) => e.event === "forced_reset" && e.reason === "compaction_failure"));
		assert.equal(t.requests.length, 4, "the blocked call ended the run: no continuation");
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("a failure of the user's own /compact is not Relay's: no notice, no count, no fallback", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	// Pi's default keepRecentTokens: this small session has nothing to compact, so Pi refuses the
	// user's compaction before any hook, reporting the failure to session_compact_failed.
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: { compaction: { enabled: false }, relay: { budget: { mode: "enforce" } } },
		steps: [{ text: "First answer.", tokens: 5_000 }, { text: "Second answer.", tokens: 5_200 }],
	});
	try {
		await t.session.prompt("First.");
		for (let i = 0; i < 3; i++) {
			await assert.rejects(() => t.session.compact(), /Nothing to compact/);
		}
		assert.equal(ofType(t, "custom_message", "relay/reset-failed").length, 0);
		assert.equal(env.events().filter((e) => e.event === "fallback_armed").length, 0);
		await t.session.prompt("Second.");
		assert.equal(t.requests.length, 2, "the next prompt runs normally");
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Second answer.");
	} finally {
		await t.dispose();
		env.restore();
	}
});
