// Idle-input recovery (issue 10) on the real Pi agent loop: when new input arrives after at least
// `idleMinutes` without agent activity, while a handoff written in this window is still valid
// (here: its commit was rejected, so the window never reset) and the window holds more than
// `keepRecentTokens`, Relay resets the window with that handoff first and the input then runs
// unchanged in the new window.
//
// Time: Relay's engine reads the time only from `nowMs`, which the adapter takes from `Date.now()`
// at each hook. The tests move the process clock forward with node:test's mock timers
// (`mock.timers.enable({ apis: ["Date"], now })`), so Pi and Relay both see the later time; no
// test sleeps.
import { test } from "node:test";
import assert from "node:assert/strict";
import { joined, ofType, outsideInProgress, resultsOf, startSession, textOf, tool } from "./harness.mjs";
import { budgetEnv, GOAL, HANDOFF, NEXT, newRoot, probeTool, THRESHOLDS, WINDOW } from "./budget-helpers.mjs";

const MINUTE = 60_000;
// Pi's automatic compaction off (only Relay acts); a tiny keep so Pi's manual compaction, which
// the recovery starts, has something to compact.
const settings = (budget = {}, pi = {}) => ({
	compaction: { enabled: false, keepRecentTokens: 1 },
	...pi,
	relay: { budget: { mode: "enforce", main: THRESHOLDS, ...budget } },
});

/** An extension loaded after Relay that makes Relay's turn-end reset draft invalid once. */
function turnEndBreaker() {
	const state = { left: 1 };
	const factory = (pi) => {
		pi.on("turn_end", (event) => {
			if (state.left === 0 || !event.entries.some((e) => e.type === "compaction")) return undefined;
			state.left -= 1;
			return { entries: [...event.entries, { type: "context_edit", targetId: "no-such-entry", replacement: null }] };
		});
	};
	return { factory, state };
}

/** Move the process clock `minutes` past now (Pi and Relay both read `Date.now()`). */
function later(tc, minutes) {
	tc.mock.timers.enable({ apis: ["Date"], now: Date.now() + minutes * MINUTE });
}

const eventsNamed = (env, name) => env.events().filter((e) => e.event === name);

/**
 * A session whose handoff commit Pi rejected: the handoff stays stored. The model then calls a
 * tool, which is blocked (the reset is still expected): a blocked call leaves the handoff valid.
 */
async function storedHandoffSession(extraSteps = [], budget = {}, pi = {}) {
	const root = newRoot();
	const env = budgetEnv(root);
	const breaker = turnEndBreaker();
	const probe = probeTool();
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: settings(budget, pi),
		extraFactories: [probe.factory, breaker.factory],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 35_000 },
			{ ...tool("probe_work"), tokens: 35_200 },
			...extraSteps,
		],
	});
	await t.session.prompt("Start the importer work.");
	await t.session.prompt("Go on with the importer.");
	assert.equal(breaker.state.left, 0, "the commit was rejected");
	assert.equal(ofType(t, "compaction").length, 0, "the window did not reset");
	assert.equal(probe.runs, 0, "the probe was blocked");
	assert.equal(resultsOf(t, "probe_work")[0].isError, true);
	return { t, env, probe };
}

test("idle-input recovery: input after idleMinutes resets with the stored handoff first, then runs unchanged", async (tc) => {
	const INPUT = "BACK-AFTER-LUNCH-8080: where were we?";
	const { t, env } = await storedHandoffSession([{ text: "Resumed from the handoff.", tokens: 3_000 }]);
	try {
		const requestsBefore = t.requests.length;
		later(tc, 51);
		await t.session.prompt(INPUT);
		const [reset] = ofType(t, "compaction");
		assert.ok(reset, "the window was reset");
		assert.equal(reset.details.source, "idle");
		assert.equal(reset.details.commit, "idle", "an idle commit: never counted");
		assert.equal(reset.details.kind, "handoff");
		assert.match(reset.summary, /<handoff>[\s\S]*GOAL-7731[\s\S]*<\/handoff>/);
		// The reset came first: the input is the first message after it, unchanged, and the one
		// request of this prompt is the new window (boot block with the handoff, then the input).
		const branch = t.sessionManager.getBranch();
		const at = branch.findIndex((e) => e.type === "compaction");
		const user = branch.slice(at + 1).find((e) => e.type === "message" && e.message.role === "user");
		assert.equal(textOf(user.message.content), INPUT);
		assert.equal(t.requests.length, requestsBefore + 1, "no extra request, no continuation");
		const request = joined(t.requests.at(-1));
		assert.match(request, /<context_window>/);
		assert.ok(request.includes(GOAL) && request.includes(NEXT), "the new window carries the handoff");
		assert.ok(request.trimEnd().endsWith(INPUT), "the input is passed through unchanged, last");
		assert.ok(!outsideInProgress(request).includes("Started."), "the old window is gone from the request (but for <in_progress>)");
		const asked = eventsNamed(env, "idle_input_reset");
		assert.equal(asked.length, 1);
		assert.ok(asked[0].idleMs >= 51 * MINUTE, JSON.stringify(asked[0]));
		// The one error is the breaker's rejected draft; the recovery itself reports none.
		assert.deepEqual(
			t.errors.map((e) => e.event),
			["turn_end"],
			JSON.stringify(t.errors),
		);
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("idle-input recovery: input before idleMinutes leaves the window alone", async (tc) => {
	const { t, env } = await storedHandoffSession([{ text: "Still in the old window.", tokens: 36_000 }]);
	try {
		later(tc, 49);
		await t.session.prompt("A quick question.");
		assert.equal(ofType(t, "compaction").length, 0);
		assert.equal(eventsNamed(env, "idle_input_reset").length, 0);
		assert.match(joined(t.requests.at(-1)), /Started\./, "the request still holds the old window");
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("idle-input recovery: an externally started run in between invalidates the stored handoff", async (tc) => {
	const { t, env } = await storedHandoffSession([
		{ text: "Answered in the old window.", tokens: 36_000 },
		{ text: "Still the old window.", tokens: 36_500 },
	]);
	try {
		await t.session.prompt("One more thing first.");
		later(tc, 120);
		await t.session.prompt("Back much later.");
		assert.equal(ofType(t, "compaction").length, 0, "no stored handoff is left to reset with");
		assert.equal(eventsNamed(env, "idle_input_reset").length, 0);
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("idle-input recovery: a small window is left alone (keepRecentTokens)", async (tc) => {
	const { t, env } = await storedHandoffSession([{ text: "Fine.", tokens: 36_000 }], { keepRecentTokens: 500_000 });
	try {
		later(tc, 90);
		await t.session.prompt("Back.");
		assert.equal(ofType(t, "compaction").length, 0);
		assert.equal(eventsNamed(env, "idle_input_reset").length, 0);
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("idle-input recovery: Pi's 'Nothing to compact' is benign, reported once, and the input runs unchanged in the old window", async (tc) => {
	const INPUT = "STILL-HERE-4242: continue please";
	// Pi's own keepRecentTokens (the default 20000, by characters) finds nothing to compact in
	// this small transcript, while Relay's measure of the window (the scripted usage) is above
	// Relay's keepRecentTokens: Pi refuses before its hook, with its failure event and then the
	// compaction's error callback.
	const root = newRoot();
	const env = budgetEnv(root);
	const breaker = turnEndBreaker();
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: { compaction: { enabled: false }, relay: { budget: { mode: "enforce", main: THRESHOLDS } } },
		extraFactories: [breaker.factory],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 35_000 },
			{ text: "Stopping here.", tokens: 35_200 },
			{ text: "Answered in the old window.", tokens: 35_600 },
		],
	});
	try {
		await t.session.prompt("Start the importer work.");
		await t.session.prompt("Go on with the importer.");
		const noticesBefore = ofType(t, "custom_message", "relay/reset-failed").length;
		const first = t.requests.length;
		later(tc, 60);
		await t.session.prompt(INPUT);
		assert.equal(ofType(t, "compaction").length, 0, "Pi had nothing to compact");
		assert.deepEqual(eventsNamed(env, "idle_input_reset").length, 1, "the recovery was tried");
		const skipped = eventsNamed(env, "idle_input_skipped");
		assert.equal(skipped.length, 1, "the failure hook and the error callback are one failure");
		assert.match(skipped[0].why, /Nothing to compact/);
		assert.equal(ofType(t, "custom_message", "relay/reset-failed").length, noticesBefore, "benign: no notice");
		assert.equal(eventsNamed(env, "fallback_armed").length, 0);
		// The prompt's first request: the old window, the input last and unchanged.
		const request = joined(t.requests[first]);
		assert.ok(request.trimEnd().endsWith(INPUT), "the input passed through unchanged");
		assert.match(request, /Started\./, "in the old window");
	} finally {
		await t.dispose();
		env.restore();
	}
});

// One reset per boundary: Pi's own pre-prompt threshold check (after `input`, before the run) would
// also reset this window. After the idle-input reset it finds the window already reset and does
// nothing; without idleness it resets as before (source "threshold").
for (const [name, minutes, source] of [
	["after idleMinutes the idle-input reset is the only one", 55, "idle"],
	["before idleMinutes Pi's pre-prompt threshold reset is the only one", 5, "threshold"],
]) {
	test(`idle-input recovery and Pi's pre-prompt threshold: ${name}`, async (tc) => {
		const { t, env } = await storedHandoffSession([{ text: "Answered in the new window.", tokens: 3_000 }], {}, {
			// Pi's threshold at 200000 - 180000 = 20000 tokens: the window (35200) is above it.
			compaction: { enabled: true, reserveTokens: 180_000, keepRecentTokens: 1 },
		});
		try {
			const before = ofType(t, "compaction").length;
			later(tc, minutes);
			await t.session.prompt("Next step, please.");
			const resets = ofType(t, "compaction").slice(before);
			assert.deepEqual(resets.map((c) => c.details.source), [source]);
			assert.equal(eventsNamed(env, "idle_input_reset").length, source === "idle" ? 1 : 0);
			assert.match(joined(t.requests.at(-1)), /<context_window>/);
		} finally {
			await t.dispose();
			env.restore();
		}
	});
}
