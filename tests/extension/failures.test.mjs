// Failed resets on the real Pi agent loop (issue 10, part 1): a reset Relay owns that Pi rejects
// again and again arms the budget fallback ("compaction failure") at the third failure, and the
// fallback's mechanical reset then names it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ofType, resultsOf, startSession, textOf, tool } from "./harness.mjs";
import { budgetEnv, budgetSession, enforce, newRoot, probeTool, WINDOW } from "./budget-helpers.mjs";

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

/**
 * A session in which Pi rejects Relay's first three resets (`draftBreaker(3)`): the model calls
 * new_context once in each of the first three prompts (it ends its run: each prompt asks for one
 * reset at its settle point), then follows `extraSteps`.
 */
async function failingSession(root, probe, extraSteps) {
	const breaker = draftBreaker(3);
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [probe.factory, breaker.factory],
		steps: [
			{ ...tool("new_context"), tokens: 5_000 },
			{ ...tool("new_context"), tokens: 5_200 },
			{ ...tool("new_context"), tokens: 5_400 },
			...extraSteps,
		],
	});
	return { t, breaker };
}

test("a reset Relay owns that Pi rejects three times arms the compaction-failure fallback; its mechanical reset names it", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const probe = probeTool();
	const { t, breaker } = await failingSession(root, probe, [
		{ ...tool("probe_work"), tokens: 5_600 },
		{ text: "never requested: the blocked call ends the run", tokens: 5_700 },
	]);
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
	// Pi's default keepRecentTokens: this small session has nothing to compact, so Pi refuses the
	// user's compaction before any hook, reporting the failure to session_compact_failed.
	await budgetSession({
		settings: { compaction: { enabled: false }, relay: { budget: { mode: "enforce" } } },
		steps: [{ text: "First answer.", tokens: 5_000 }, { text: "Second answer.", tokens: 5_200 }],
	}, async ({ t, env }) => {
		await t.session.prompt("First.");
		for (let i = 0; i < 3; i++) {
			await assert.rejects(() => t.session.compact(), /Nothing to compact/);
		}
		assert.equal(ofType(t, "custom_message", "relay/reset-failed").length, 0);
		assert.equal(env.events().filter((e) => e.event === "fallback_armed").length, 0);
		await t.session.prompt("Second.");
		assert.equal(t.requests.length, 2, "the next prompt runs normally");
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Second answer.");
	});
});

/** Three rejected resets of Relay's own in one window; returns the live session, still armed. */
async function armedByFailures(root, probe, extraSteps = []) {
	const { t, breaker } = await failingSession(root, probe, extraSteps);
	await t.session.prompt("First.");
	await t.session.prompt("Second.");
	await t.session.prompt("Third.");
	assert.equal(breaker.state.left, 0, "the breaker rejected three resets");
	assert.deepEqual(
		ofType(t, "custom_message", "relay/reset-failed").map((e) => e.details.failures),
		[1, 2, 3],
	);
	return t;
}

test("the compaction-failure fallback survives /reload: it is rebuilt from the failures on the branch (issue 24, item 3)", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const probe = probeTool();
	const t = await armedByFailures(root, probe, [
		{ ...tool("probe_work"), tokens: 5_600 },
		{ text: "never requested: the blocked call ends the run", tokens: 5_700 },
	]);
	try {
		// /reload: a new engine that knows only the branch.
		await t.session.reload();
		await t.session.prompt("Keep working.");
		const [blocked] = resultsOf(t, "probe_work");
		assert.equal(probe.runs, 0, "the rebuilt fallback blocks real work");
		assert.equal(blocked.isError, true);
		assert.match(blocked.text, /its reset failed three times/);
		const [forced] = ofType(t, "compaction");
		assert.equal(forced.details.source, "forced", "the rebuilt fallback resets mechanically");
		assert.ok(env.events().some((e) => e.event === "forced_reset" && e.reason === "compaction_failure"));
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("the compaction-failure fallback survives pi -c: a new process reopening the session is armed at once (issue 24, item 3)", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const a = await armedByFailures(root, probeTool());
	const file = a.sessionManager.getSessionFile();
	const sid = a.sessionManager.getSessionId();
	await a.dispose();

	const probe = probeTool();
	const b = await startSession({
		root,
		sessionFile: file,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [probe.factory],
		steps: [
			{ ...tool("probe_work"), tokens: 5_600 },
			{ text: "never requested: the blocked call ends the run", tokens: 5_700 },
		],
	});
	try {
		const status = JSON.parse(readFileSync(join(env.stateDir, "status", `${sid}.json`), "utf8"));
		assert.equal(status.phase, "fallback-armed", "the status file shows the armed fallback at once");
		await b.session.prompt("Continue.");
		const [blocked] = resultsOf(b, "probe_work");
		assert.equal(probe.runs, 0);
		assert.match(blocked.text, /its reset failed three times/);
		assert.equal(ofType(b, "compaction")[0].details.source, "forced");
	} finally {
		await b.dispose();
		env.restore();
	}
});

test("a mode change that disarms the compaction-failure fallback is on the branch: /reload, /tree and a reopened session keep it disarmed (issue 34, item 6)", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const probe = probeTool();
	const work = (n) => [
		{ ...tool("probe_work"), tokens: 5_600 + 10 * n },
		{ text: `Worked ${n}.`, tokens: 5_700 + 10 * n },
	];
	const t = await armedByFailures(root, probe, [{ text: "Looked.", tokens: 5_550 }, ...work(1), ...work(2)]);
	const file = t.sessionManager.getSessionFile();
	const sid = t.sessionManager.getSessionId();
	try {
		// /relay off makes enforce effectively observe: a mode change, which disarms the fallback
		// at the next step; /relay on then enforces again, disarmed.
		await t.session.prompt("/relay off");
		await t.session.prompt("Look around.");
		await t.session.prompt("/relay on");
		const records = ofType(t, "custom", "relay/fallback-disarmed");
		assert.equal(records.length, 1, "recorded once");
		const [record] = records;
		assert.deepEqual(Object.keys(record.data).sort(), ["v", "windowId"]);
		assert.equal(record.data.v, 1);
		// /reload: a new engine that knows only the branch.
		await t.session.reload();
		await t.session.prompt("Keep working.");
		assert.equal(probe.runs, 1, "after /reload the fallback stays disarmed: real work runs");
		// /tree: back to the disarm record, then on from there.
		await t.session.navigateTree(record.id);
		await t.session.prompt("Work on from here.");
		assert.equal(probe.runs, 2, "after /tree the fallback stays disarmed");
		assert.equal(ofType(t, "compaction").length, 0, "no mechanical reset anywhere");
	} finally {
		await t.dispose();
	}
	// pi -c: a new process reopening the session.
	const again = probeTool();
	const b = await startSession({ root, sessionFile: file, contextWindow: WINDOW, settings: enforce(), extraFactories: [again.factory], steps: work(3) });
	try {
		const status = JSON.parse(readFileSync(join(env.stateDir, "status", `${sid}.json`), "utf8"));
		assert.notEqual(status.phase, "fallback-armed", "the reopened session is not armed");
		await b.session.prompt("Continue.");
		assert.equal(again.runs, 1, "the reopened session runs real work");
		assert.equal(ofType(b, "compaction").length, 0);
	} finally {
		await b.dispose();
		env.restore();
	}
});
