// Idle reset (issue 10, part 1) on the real Pi agent loop: at the last settle point of a run, with a
// large context and work still pending (a queued user follow-up, or background work a host reports
// through `globalThis[Symbol.for("relay.pending-work")]`), Relay asks once for a handoff; the
// handoff commits an idle reset at its turn end, which never counts toward maxHandoffsPerSession,
// also after a reload. Observe mode only logs what it would do.
import { test } from "node:test";
import assert from "node:assert/strict";
import { joined, ofType, outsideInProgress, startSession, tool } from "./harness.mjs";
import { budgetEnv, enforce, GOAL, HANDOFF, newRoot, THRESHOLDS, WINDOW } from "./budget-helpers.mjs";

const PENDING_WORK = Symbol.for("relay.pending-work");
// Below the soft threshold (20000) but above idleMinTokens: only the idle path can act.
const IDLE_MIN = 10_000;
const LARGE = 15_000;

/** Report `n` pending background jobs to Relay, as a host integration would; `undefined` clears. */
function reportPendingWork(n) {
	if (n === undefined) delete globalThis[PENDING_WORK];
	else globalThis[PENDING_WORK] = () => n;
}

/** A test extension that queues one user follow-up at the settle point of the run it is armed for. */
function followUpAtSettle(text) {
	const ctl = { armed: false, sent: 0 };
	ctl.factory = (pi) => {
		pi.on("agent_before_settle", () => {
			if (!ctl.armed) return undefined;
			ctl.armed = false;
			ctl.sent += 1;
			pi.sendUserMessage(text, { deliverAs: "followUp" });
			return undefined;
		});
	};
	return ctl;
}

test("idle reset with pending work and a follow-up queued at the settle point: one handoff request, an idle commit at its turn end, the follow-up delivered once after the reset", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	// A background job is pending (the host's report); a user follow-up arrives at the settle point,
	// while Relay's idle request is under way.
	reportPendingWork(1);
	const FOLLOW = "FOLLOW-UP-6620: the job finished, look at its log";
	const follow = followUpAtSettle(FOLLOW);
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce({ idleMinTokens: IDLE_MIN }),
		// Pi runs this extension's settle handler after Relay's: the follow-up is queued behind the
		// idle request.
		extraFactories: [follow.factory],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ text: "Waiting for the job.", tokens: LARGE },
			{ ...tool("context_handoff", HANDOFF), tokens: LARGE + 200 },
			{ text: "Resumed from the handoff.", tokens: 2_000 },
			{ text: "Looked at the log.", tokens: 2_400 },
		],
	});
	try {
		await t.session.prompt("Start.");
		assert.equal(ofType(t, "custom_message", "relay/handoff-request").length, 0, "a small context is left alone");
		follow.armed = true;
		await t.session.prompt("Run the job and wait for it.");
		assert.equal(follow.sent, 1);

		const asks = ofType(t, "custom_message", "relay/handoff-request");
		assert.equal(asks.length, 1, "asked once");
		assert.match(asks[0].content, /work is still pending/);
		const [c] = ofType(t, "compaction");
		assert.equal(c.details.source, "idle");
		assert.equal(c.details.commit, "idle");
		assert.equal(c.details.kind, "handoff");
		assert.ok(c.summary.includes("<handoff>") && c.summary.includes(GOAL), "the new window carries the handoff");

		const events = env.events();
		const requested = events.filter((e) => e.event === "idle_handoff_requested");
		assert.equal(requested.length, 1);
		assert.equal(requested[0].tokens, LARGE);
		const committed = events.filter((e) => e.event === "handoff_committed");
		assert.deepEqual(
			committed.map((e) => e.source),
			["idle"],
		);

		// The follow-up reached the model exactly once, in the new window, after the reset.
		const withFollow = t.requests.filter((r) => joined(r).includes(FOLLOW));
		assert.equal(withFollow.length, 1, `requests carrying the follow-up: ${withFollow.length}`);
		const at = t.requests.indexOf(withFollow[0]);
		assert.ok(joined(withFollow[0]).includes(GOAL), "the follow-up request is in the window the handoff opened");
		assert.ok(!outsideInProgress(joined(withFollow[0])).includes("Waiting for the job."), "the old conversation is gone (but for <in_progress>)");
		assert.ok(at > 2, `the follow-up came after the handoff request (request ${at})`);
	} finally {
		reportPendingWork(undefined);
		await t.dispose();
		env.restore();
	}
});

test("idle commits are not counted, also after a reload: with a cap of 1 a budget handoff still commits after an idle one", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const settings = enforce({ idleMinTokens: IDLE_MIN, maxHandoffsPerSession: 1 });
	reportPendingWork(2);
	let a;
	try {
		a = await startSession({
			root,
			contextWindow: WINDOW,
			settings,
			steps: [
				{ text: "Started.", tokens: 5_000 },
				{ text: "Two jobs are running.", tokens: LARGE },
				{ ...tool("context_handoff", HANDOFF), tokens: LARGE + 200 },
				{ text: "Resumed; still waiting.", tokens: 2_000 },
			],
		});
		await a.session.prompt("Start.");
		await a.session.prompt("Start the jobs.");
		const [idle] = ofType(a, "compaction");
		assert.equal(idle.details.commit, "idle");
		// The resumed window is small: the settle point there asks for nothing.
		assert.equal(ofType(a, "custom_message", "relay/handoff-request").length, 1);
	} finally {
		reportPendingWork(undefined);
		await a?.dispose();
	}
	const file = a.sessionManager.getSessionFile();

	const b = await startSession({
		root,
		sessionFile: file,
		contextWindow: WINDOW,
		settings,
		steps: [
			// Past the handoff threshold (30000) with enough progress over the window's floor.
			{ text: "Big answer.", tokens: THRESHOLDS.handoff + 5_000 },
			{ ...tool("context_handoff", { ...HANDOFF, goal: `${GOAL} (second window)` }), tokens: THRESHOLDS.handoff + 5_200 },
			"Continued after the budget handoff.",
		],
	});
	try {
		await b.session.prompt("Keep going.");
		const resets = ofType(b, "compaction");
		assert.deepEqual(
			resets.map((c) => c.details.commit),
			["idle", "budget"],
			"the budget handoff committed: the idle one did not use the cap of 1",
		);
		const events = env.events();
		assert.ok(!events.some((e) => e.event === "fallback_armed"), "no cap fallback");
	} finally {
		await b.dispose();
		env.restore();
	}
});

test("observe: the idle decision is logged as would_* events with requiresHandoff, and nothing is sent", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	reportPendingWork(1);
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: { compaction: { enabled: false }, relay: { budget: { mode: "observe", main: THRESHOLDS, idleMinTokens: IDLE_MIN } } },
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ text: "A job is running.", tokens: LARGE },
			"(never requested)",
		],
	});
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("Start the job.");
		assert.equal(t.requests.length, 2, "no continuation in observe");
		assert.equal(ofType(t, "custom_message", "relay/handoff-request").length, 0);
		assert.equal(ofType(t, "compaction").length, 0);
		const events = env.events();
		const would = events.filter((e) => e.event === "would_idle_handoff_requested");
		assert.equal(would.length, 1);
		assert.equal(would[0].requiresHandoff, true);
		assert.equal(would[0].tokens, LARGE);
		assert.equal(events.filter((e) => e.event === "would_continue").length, 1);
		assert.ok(!events.some((e) => e.event === "idle_handoff_requested"), "no real request");
	} finally {
		reportPendingWork(undefined);
		await t.dispose();
		env.restore();
	}
});

test("idle request from the pi-jobs registry: this session's running job is pending work at the settle point, another session's is not (issue 24)", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const JOBS = Symbol.for("pi-jobs.liveManagers");
	const jobs = [{ id: "other-1", label: "theirs", kind: "job", command: "make", status: "running", sessionId: "someone-else" }];
	globalThis[JOBS] = new Set([{ list: () => jobs }]);
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce({ idleMinTokens: IDLE_MIN }),
		steps: [
			{ text: "Waiting on nothing of mine.", tokens: LARGE },
			{ text: "Waiting for my build.", tokens: LARGE + 100 },
			{ ...tool("context_handoff", HANDOFF), tokens: LARGE + 200 },
			{ text: "Resumed from the handoff.", tokens: 2_000 },
		],
	});
	try {
		await t.session.prompt("Check on things.");
		assert.equal(ofType(t, "custom_message", "relay/handoff-request").length, 0, "another session's job is not this session's pending work");
		jobs.push({ id: "j1", label: "build", kind: "job", command: "cargo build --release", status: "running", sessionId: t.sessionManager.getSessionId() });
		await t.session.prompt("Start the build and wait.");
		const asks = ofType(t, "custom_message", "relay/handoff-request");
		assert.equal(asks.length, 1, "the registry's pending job asks once for a handoff");
		assert.match(asks[0].content, /work is still pending/);
		const [c] = ofType(t, "compaction");
		assert.equal(c.details.source, "idle");
		assert.equal(c.details.commit, "idle");
		assert.ok(c.summary.includes(GOAL));
		assert.equal(t.requests.length, 4);
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		delete globalThis[JOBS];
		await t.dispose();
		env.restore();
	}
});
