// Overflow backstop and overflow recovery on the real Pi agent loop (issue 10, part 2): a real
// provider overflow ("prompt is too long") gets exactly one reset-and-retry; in enforce the new
// window carries a still-valid stored handoff, else a bounded mechanical summary; a second overflow
// after the retry is reported once and never loops; `overflowRecovery: false` cancels and warns.
import { test } from "node:test";
import assert from "node:assert/strict";
import { captureStderr, joined, ofType, startSession, textOf, tool } from "./harness.mjs";
import { budgetEnv, HANDOFF, newRoot, THRESHOLDS } from "./budget-helpers.mjs";

const WINDOW = 100_000;
// Built when the request is made, so the error reply carries the time of that request (Pi skips
// an overflow whose reply predates the latest compaction, as a reply scripted up front would).
const OVERFLOW = () => ({ error: "prompt is too long: 250000 tokens > 100000 maximum" });
// Pi's compaction on (a tiny keep makes any window compactable), so Pi runs its overflow recovery.
const settingsFor = (budget) => ({
	compaction: { enabled: true, keepRecentTokens: 1 },
	relay: { budget: { main: THRESHOLDS, ...budget } },
});

async function overflowSession(budget, steps) {
	const root = newRoot();
	const env = budgetEnv(root);
	const t = await startSession({ root, contextWindow: WINDOW, settings: settingsFor(budget), steps });
	return { t, env };
}

const eventsNamed = (env, name) => env.events().filter((e) => e.event === name);

test("enforce: an overflow resets with a still-valid stored handoff and the retry succeeds", async () => {
	const stored = { ...HANDOFF, goal: "STORED-GOAL-5150: the handoff written after the cap", next_step: "STORED-NEXT-6160" };
	const { t, env } = await overflowSession({ mode: "enforce", maxHandoffsPerSession: 1 }, [
		{ text: "Started.", tokens: 5_000 },
		// Past the handoff threshold: the one allowed budget commit.
		{ ...tool("context_handoff", HANDOFF), tokens: 35_000 },
		{ text: "Continued in window two.", tokens: 2_000 },
		// Past it again: the cap arms the fallback, so this handoff is stored, not committed.
		{ ...tool("context_handoff", stored), tokens: 40_000 },
		OVERFLOW,
		{ text: "Recovered from the stored handoff.", tokens: 3_000 },
	]);
	try {
		await t.session.prompt("Start the importer work.");
		await t.session.prompt("Go on with the importer.");
		await t.session.prompt("Keep going with the importer.");
		const ignored = eventsNamed(env, "handoff_ignored");
		assert.equal(ignored.length, 1, "the second handoff is stored, not committed");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 2, compactions.map((c) => c.details.source).join(","));
		const overflow = compactions[1];
		assert.equal(overflow.details.source, "overflow");
		assert.equal(overflow.details.kind, "handoff");
		assert.match(overflow.summary, /<handoff>[\s\S]*STORED-GOAL-5150[\s\S]*<\/handoff>/);
		assert.ok(!overflow.summary.includes("<reset_notice>"), "a handoff, not the mechanical summary");
		// The retry's request is the new window, and it was answered.
		assert.match(joined(t.requests.at(-1)), /STORED-NEXT-6160/);
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Recovered from the stored handoff.");
		const backstop = eventsNamed(env, "overflow_backstop");
		assert.deepEqual(
			backstop.map((e) => [e.handoff, e.willRetry]),
			[[true, true]],
		);
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("enforce without a handoff: the mechanical summary of recent requests, one retry, no summarizer", async () => {
	const { t, env } = await overflowSession({ mode: "enforce" }, [
		"First answer.",
		OVERFLOW,
		"Recovered in a fresh window.",
	]);
	try {
		await t.session.prompt("EARLIER-REQ-1212: set up the parser.");
		await t.session.prompt("PENDING-REQ-3434: refactor the MODULE-X loader.");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1);
		const [reset] = compactions;
		assert.equal(reset.details.source, "overflow");
		assert.equal(reset.details.kind, "reset");
		assert.match(reset.summary, /<earlier_user_input[^>]*>[\s\S]*EARLIER-REQ-1212[\s\S]*<\/earlier_user_input>/);
		assert.match(reset.summary, /<pending_user_request>[\s\S]*PENDING-REQ-3434[\s\S]*<\/pending_user_request>/);
		assert.match(reset.summary, /<reset_notice>[\s\S]*notes[\s\S]*workspace files[\s\S]*git[\s\S]*<\/reset_notice>/);
		assert.equal(t.requests.length, 3, "first answer, the overflow, the retry: no summarizer call");
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Recovered in a fresh window.");
		assert.deepEqual(
			eventsNamed(env, "overflow_backstop").map((e) => [e.handoff, e.willRetry]),
			[[false, true]],
		);
		assert.equal(eventsNamed(env, "overflow_recovery_exhausted").length, 0);
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("a second overflow after the retry is reported once and never loops; new user input re-arms", async () => {
	const { t, env } = await overflowSession({ mode: "observe" }, ["First answer.", OVERFLOW, OVERFLOW, "never requested"]);
	try {
		await t.session.prompt("First question.");
		const said = await captureStderr(() => t.session.prompt("A request that cannot fit."));
		assert.equal(ofType(t, "compaction").length, 1, "one reset, no second one");
		assert.equal(t.requests.length, 3, "the overflow, one retry, nothing more");
		assert.equal(eventsNamed(env, "overflow_recovery_exhausted").length, 1);
		const warnings = said.filter((l) => /overflow/i.test(l) && /larger/.test(l));
		assert.equal(warnings.length, 1, said.join("\n"));
		assert.match(warnings[0], /shrink|smaller|reduce/i);
		// New user input re-arms the recovery: the next overflow gets its reset-and-retry again.
		t.rescript(OVERFLOW, "Recovered after new input.");
		await t.session.prompt("A new, smaller request.");
		assert.equal(ofType(t, "compaction").length, 2);
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Recovered after new input.");
		assert.equal(eventsNamed(env, "overflow_recovery_exhausted").length, 1);
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("an overflow Pi does not retry (the reply came) resets once with no continuation", async () => {
	const { t, env } = await overflowSession({ mode: "enforce" }, [
		"First answer.",
		{ text: "A complete answer to ANSWERED-REQ.", tokens: { input: 150_000, totalTokens: 150_100 } },
		"Next answer in the new window.",
	]);
	try {
		await t.session.prompt("First question.");
		await t.session.prompt("Please handle ANSWERED-REQ.");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1);
		assert.equal(compactions[0].details.source, "overflow");
		assert.equal(t.requests.length, 2, "the answer is complete: no continuation call");
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 0);
		assert.deepEqual(
			eventsNamed(env, "overflow_backstop").map((e) => [e.handoff, e.willRetry]),
			[[false, false]],
		);
		// The task goes on with the user's next input, in the new window.
		await t.session.prompt("Next question.");
		assert.match(joined(t.requests.at(-1)), /<context_window>/);
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Next answer in the new window.");
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("overflowRecovery: false: Relay cancels the overflow compaction and warns; Pi's summarizer never runs", async () => {
	const { t, env } = await overflowSession({ mode: "enforce", overflowRecovery: false }, [
		"First answer.",
		OVERFLOW,
		"summarizer would answer here",
	]);
	try {
		await t.session.prompt("First question.");
		const said = await captureStderr(() => t.session.prompt("A request that cannot fit."));
		assert.equal(ofType(t, "compaction").length, 0, "no reset, and no summary of Pi's");
		assert.equal(t.requests.length, 2, "no summarizer call, no retry");
		const warnings = said.filter((l) => /overflowRecovery/.test(l));
		assert.equal(warnings.length, 1, said.join("\n"));
		assert.equal(eventsNamed(env, "overflow_recovery_off").length, 1);
		assert.equal(eventsNamed(env, "overflow_backstop").length, 0);
	} finally {
		await t.dispose();
		env.restore();
	}
});

// Issue 24, item 15: switching budgets off is not switching overflow recovery off. The reset is
// seed 000's; mode "off" still writes no telemetry.
test('mode: "off": an overflow still gets its one reset-and-retry, with no telemetry and no warning', async () => {
	const { t, env } = await overflowSession({ mode: "off" }, [
		"First answer.",
		OVERFLOW,
		"Recovered with budgets off.",
	]);
	try {
		await t.session.prompt("OFF-EARLIER-1717: first question.");
		const said = await captureStderr(() => t.session.prompt("OFF-PENDING-2828: a request that overflows."));
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1);
		assert.equal(compactions[0].details.source, "overflow");
		assert.equal(compactions[0].details.kind, "reset");
		assert.match(compactions[0].summary, /<pending_user_request>[\s\S]*OFF-PENDING-2828[\s\S]*<\/pending_user_request>/);
		assert.equal(t.requests.length, 3, "first answer, the overflow, the retry: no summarizer call");
		assert.match(joined(t.requests.at(-1)), /<context_window>/);
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Recovered with budgets off.");
		assert.deepEqual(said.filter((l) => /overflow/i.test(l)), []);
		assert.deepEqual(env.events(), [], "mode off writes no events");
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
		env.restore();
	}
});

// Issue 24, item 14: an overflow in the middle of a run, after the model already worked on the
// request, restates it as being worked on, not as unanswered.
test("an overflow mid-run restates the request as in progress, not as unanswered", async () => {
	const { t, env } = await overflowSession({ mode: "enforce" }, [
		"First answer.",
		tool("notes_write_file", { path: "progress.md", content: "step 1 of MIDRUN-REQ done" }),
		OVERFLOW,
		"Continued from progress.md.",
	]);
	try {
		await t.session.prompt("First question.");
		await t.session.prompt("MIDRUN-REQ-4545: migrate the three tables.");
		const [reset] = ofType(t, "compaction");
		assert.equal(reset.details.source, "overflow");
		assert.match(reset.summary, /<pending_user_request>[\s\S]*MIDRUN-REQ-4545[\s\S]*<\/pending_user_request>/);
		assert.ok(!reset.summary.includes("has not been answered yet"), reset.summary);
		assert.match(reset.summary, /you were already working on it when the previous window ran out/);
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Continued from progress.md.");
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("an overflow on a request's first call still restates it as not answered yet", async () => {
	const { t, env } = await overflowSession({ mode: "enforce" }, ["First answer.", OVERFLOW, "Recovered."]);
	try {
		await t.session.prompt("First question.");
		await t.session.prompt("FRESH-REQ-5656: do the thing.");
		const [reset] = ofType(t, "compaction");
		assert.match(reset.summary, /has not been answered yet\. Handle it\./);
		assert.ok(!reset.summary.includes("already working on it"));
	} finally {
		await t.dispose();
		env.restore();
	}
});
