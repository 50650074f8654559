// The budget policy and the window lifecycle at their boundaries (issue 9) on the real Pi agent
// loop: tools stay blocked until a forced reset is installed, the honest hard path, later
// threshold crossings in one window, the floor and loop guard after a reload, modes that say the
// truth, status and events, and a back-off only for handoffs that committed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { captureStderr, joined, ofType, outsideInProgress, resultsOf, startSession, tool } from "./harness.mjs";
import { assertOneSettleAnswer, budgetEnv, budgetSession, enforce, gitRepo, GOAL, HANDOFF, newRoot, probeTool, WINDOW } from "./budget-helpers.mjs";

/** The entry types of the branch after the first user message, for ordering assertions. */
function shape(t) {
	return t.sessionManager.getBranch().map((e) => {
		if (e.type === "message") return `${e.message.role}${e.message.role === "toolResult" ? `:${e.message.toolName}` : ""}`;
		if (e.type === "custom" || e.type === "custom_message") return `${e.type}:${e.customType}`;
		return e.type;
	});
}

test("past hard, a model that keeps calling bash never runs it: the mechanical reset is installed at the next turn end, honestly", async () => {
	await budgetSession({
		probe: { name: "bash" },
		steps: [
			{ text: "Started.", tokens: 5_000 },
			// Crossing the hard limit (60000) with a bash call, then two more bash turns, then one in
			// the new window.
			{ ...tool("bash"), tokens: 65_000 },
			{ ...tool("bash"), tokens: 65_500 },
			{ ...tool("bash"), tokens: 1_500 },
			{ text: "Done in the new window.", tokens: 1_800 },
		],
	}, async ({ t, env, probe: bash }) => {
		await t.session.prompt("Start.");
		await t.session.prompt("RUN-BASH-8812: keep running bash.");
		const results = resultsOf(t, "bash");
		assert.equal(results.length, 3);
		assert.equal(bash.runs, 1, "only the call in the new window ran");
		assert.ok(results[0].isError && results[1].isError && !results[2].isError);
		for (const blocked of results.slice(0, 2)) assert.match(blocked.text, /hard limit of 60000/);
		assert.match(results[0].text, /call it now/i, "the reason says exactly what to do");

		// The reset sits between the second blocked result and the third call: installed at that
		// turn end, not at the settle point.
		const s = shape(t);
		const compaction = s.indexOf("compaction");
		assert.ok(compaction > 0, s.join(" "));
		const toolResults = s.map((x, i) => (x === "toolResult:bash" ? i : -1)).filter((i) => i >= 0);
		assert.ok(toolResults[1] < compaction && compaction < toolResults[2], s.join(" "));
		const [forced] = ofType(t, "compaction");
		assert.equal(forced.details.source, "forced");
		assert.ok(forced.summary.includes("<reset_notice>"), "the mechanical note is a notice");
		assert.ok(!forced.summary.includes("<handoff>"), "never dressed as a handoff");
		assert.match(forced.summary, /No handoff was written/);

		// The new window's first request: the boot block and the honest continuation only.
		const next = t.requests[3];
		assert.ok(!joined(next).includes("[toolCall bash]"), "the old conversation is gone");
		assert.match(forced.summary, /<earlier_user_input[^>]*>[\s\S]*RUN-BASH-8812[\s\S]*<\/earlier_user_input>/, "only the user's words, as earlier input");
		const [cont] = ofType(t, "custom_message", "relay/continue");
		assert.match(cont.content, /reset mechanically and no handoff was written/);
		assert.ok(!/handoff was committed/.test(cont.content));
		assert.ok(joined(next).includes(cont.content));
		const events = env.events().map((e) => e.event);
		assert.ok(events.includes("fallback_armed") && events.includes("forced_reset"), events.join(","));
	});
});

/** Past hard, the model stops: it is asked once for a handoff, then `second` decides. */
async function stopPastHard(second) {
	const root = newRoot();
	const env = budgetEnv(root);
	const bash = probeTool({ name: "bash" });
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [bash.factory],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("bash"), tokens: 65_000 },
			{ text: "ANSWER-5561: here is my answer.", tokens: 65_400 },
			second,
			{ text: "Continued from the handoff.", tokens: 2_000 },
			{ text: "Fresh window answer.", tokens: 2_100 },
		],
	});
	await t.session.prompt("Start.");
	await t.session.prompt("Big step.");
	return { t, env, bash };
}

test("past hard, a model that stops is asked once for a handoff; a valid one commits in-process", async () => {
	const { t, env } = await stopPastHard({ ...tool("context_handoff", HANDOFF), tokens: 65_600 });
	try {
		const asks = ofType(t, "custom_message", "relay/handoff-request");
		assert.equal(asks.length, 1, "asked once");
		assert.match(asks[0].content, /hard limit of 60000/);
		const [c] = ofType(t, "compaction");
		assert.equal(c.details.source, "handoff");
		assert.ok(c.summary.includes("<handoff>") && c.summary.includes(GOAL));
		assert.ok(!c.summary.includes("<reset_notice>"));
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 1);
		assert.equal(t.requests.length, 5, "start, bash, answer, handoff, continuation");
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("past hard, a model that stops twice without a handoff: a mechanical reset at the settle point, no made-up continuation", async () => {
	const { t, env } = await stopPastHard({ text: "I have nothing to hand off.", tokens: 65_600 });
	try {
		assert.equal(ofType(t, "custom_message", "relay/handoff-request").length, 1, "asked once, not twice");
		const [c] = ofType(t, "compaction");
		assert.equal(c.details.source, "forced");
		assert.ok(c.summary.includes("<reset_notice>") && !c.summary.includes("<handoff>"));
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 0, "a finished answer is not continued");
		assert.equal(t.requests.length, 4, "no request after the second stop");
		// The next prompt lands in the new window, which says what happened.
		await t.session.prompt("NEXT-PROMPT-2290: what now?");
		const next = joined(t.requests[4]);
		assert.ok(next.includes("<reset_notice>") && next.includes("NEXT-PROMPT-2290"));
		assert.ok(!next.includes("ANSWER-5561"), "the old window is gone");
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("the floor survives a reload: a resumed session past the handoff threshold is enforced at once", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const first = probeTool();
	const a = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [first.factory],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			// Past the handoff threshold (30000) with a text answer: asked once, the model stops again.
			{ text: "Big answer.", tokens: 35_000 },
			{ text: "Not now.", tokens: 35_200 },
		],
	});
	await a.session.prompt("Start.");
	await a.session.prompt("Big step.");
	assert.equal(ofType(a, "custom_message", "relay/handoff-request").length, 1);
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
		steps: [{ ...tool("probe_work"), tokens: 35_400 }, { ...tool("context_handoff", HANDOFF), tokens: 35_600 }, "Continued."],
	});
	try {
		const status = JSON.parse(readFileSync(join(env.stateDir, "status", `${sid}.json`), "utf8"));
		assert.equal(status.phase, "handoff-required", "the status file shows the phase at once");
		assert.equal(status.floor, 5_000, "the floor is the window's first assistant usage, from the branch");
		await b.session.prompt("Resume.");
		const [blocked] = resultsOf(b, "probe_work");
		assert.ok(blocked.isError, "the first tool call after the reload is blocked");
		assert.equal(probe.runs, 0);
		assert.equal(ofType(b, "compaction")[0].details.source, "handoff");
	} finally {
		await b.dispose();
		env.restore();
	}
});

test("the floor survives /tree: navigating back keeps the branch's floor", async () => {
	await budgetSession({
		probe: true,
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ text: "Side answer.", tokens: 6_000 },
		],
	}, async ({ t, probe }) => {
		await t.session.prompt("Start.");
		const afterFirst = t.sessionManager.getLeafId();
		await t.session.prompt("A side question.");
		await t.session.navigateTree(afterFirst);
		t.script({ ...tool("probe_work"), tokens: 35_000 }, { text: "Stopped.", tokens: 35_100 }, { text: "Still not.", tokens: 35_200 });
		await t.session.prompt("Back on the main line: big step.");
		const [blocked] = resultsOf(t, "probe_work");
		assert.ok(blocked.isError, "35000 tokens over the branch's floor of 5000: blocked");
		assert.match(blocked.text, /handoff threshold 30000/);
		assert.equal(probe.runs, 0);
	});
});

test("the loop guard survives /tree: navigating back before the progress that cleared it counts the branch's commit again (issue 24, item 3)", async () => {
	await budgetSession({
		probe: true,
		// One handoff without progress is the limit: the next crossing arms the loop guard.
		settings: enforce({ loop: { maxHandoffsWithoutProgress: 1, withinTurns: 8 } }),
		steps: [
			{ text: "Started.", tokens: 5_000 },
			// Past the handoff threshold: the call is blocked, the model hands off, the window resets.
			{ ...tool("probe_work"), tokens: 35_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 35_200 },
			{ text: "Continued from the handoff.", tokens: 2_000 },
		],
	}, async ({ t, env, probe }) => {
		await t.session.prompt("Start.");
		await t.session.prompt("Big step.");
		assert.equal(ofType(t, "compaction")[0].details.source, "handoff", "one budget commit on the branch");
		assert.equal(probe.runs, 0);
		const afterCommit = t.sessionManager.getLeafId();

		// A side line where real work succeeds: progress, so the commit no longer counts there.
		t.script({ ...tool("probe_work"), tokens: 2_500 }, { text: "Side work done.", tokens: 2_600 });
		await t.session.prompt("A side task.");
		assert.equal(probe.runs, 1, "the side task's tool ran");

		// Back before that progress: the branch holds one commit and no progress since.
		await t.session.navigateTree(afterCommit);
		t.script({ ...tool("probe_work"), tokens: 35_000 }, { text: "never requested: the blocked call ends the run", tokens: 35_100 });
		await t.session.prompt("Back on the main line: big step again.");
		const blocked = resultsOf(t, "probe_work").at(-1);
		assert.equal(probe.runs, 1, "nothing ran after the navigation");
		assert.ok(blocked.isError);
		assert.match(blocked.text, /1 handoffs within 8 turns made no progress/, "the loop guard, not a plain handoff request");
		const armed = env.events().filter((e) => e.event === "fallback_armed");
		assert.deepEqual(armed.map((e) => e.reason), ["loop"]);
	});
});

test("a model that ignores its note-taking turn is reset when that turn ends (issue 24, item 9)", async () => {
	const root = newRoot();
	const probe = probeTool();
	// Pi's own threshold (window - reserve) drives the window lifecycle here; the budget policy is off.
	const t = await startSession({
		root,
		contextWindow: 50_000,
		settings: { compaction: { enabled: true, reserveTokens: 10_000, keepRecentTokens: 1 }, relay: { budget: { mode: "off" } } },
		extraFactories: [probe.factory],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			// Past 40000: Pi's threshold check borrows one note-taking turn ...
			{ ...tool("probe_work"), tokens: 41_000 },
			// ... which the model ignores, and it keeps working: the reset follows this turn.
			{ ...tool("probe_work"), tokens: 43_000 },
			{ ...tool("probe_work"), tokens: 1_000 },
			{ text: "Done.", tokens: 1_200 },
		],
	});
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("LONG-TASK-6671: work through the list.");
		assert.equal(ofType(t, "custom_message", "relay/notes-steer").length, 1, "one borrowed turn in the window");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1);
		assert.equal(compactions[0].details.relay, "window");
		// Installed at the end of the ignored turn: the request after it is the new window (the
		// window that is "full" gets no further turn).
		const s = shape(t);
		const c = s.indexOf("compaction");
		const results = s.map((x, i) => (x === "toolResult:probe_work" ? i : -1)).filter((i) => i >= 0);
		assert.equal(results.length, 3, s.join(" "));
		assert.ok(results[1] < c && c < results[2], s.join(" "));
		assert.equal(t.requests.length, 5, "Started, the crossing, the borrowed turn, the new window, Done");
		const fresh = t.requests[3];
		assert.ok(!joined(fresh).includes("[toolCall probe_work]"), "the request after the reset holds the new window only");
		assert.match(joined(fresh), /<earlier_user_input[^>]*>[\s\S]*LONG-TASK-6671/);
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 1);
	} finally {
		await t.dispose();
	}
});

test("an observe preview is discarded when enforce starts: its would-be reset moved no real floor", async () => {
	const root = newRoot();
	const config = join(root, "context-budget.json");
	const budget = (mode) => writeFileSync(config, JSON.stringify({ mode, main: { soft: 20_000, handoff: 30_000, hard: 60_000, minProgress: 1_000 } }));
	budget("observe");
	await budgetSession({
		probe: true,
		root,
		config,
		settings: { compaction: { enabled: false } },
		steps: [
			{ text: "Started.", tokens: 5_000 },
			// Observe past hard: nothing is blocked; after two working turns the preview would reset
			// mechanically and restart its window there (its floor moves to the next usage).
			{ ...tool("probe_work"), tokens: 65_000 },
			{ ...tool("probe_work"), tokens: 65_200 },
			{ text: "Done for now.", tokens: 65_300 },
			// Enforce from the next input on: the real window is still past hard over a floor of 5000.
			{ ...tool("probe_work"), tokens: 65_400 },
			{ ...tool("probe_work"), tokens: 65_600 },
			"Resumed.",
		],
	}, async ({ t, env, probe }) => {
		await t.session.prompt("Start.");
		await t.session.prompt("Big step.");
		assert.equal(ofType(t, "compaction").length, 0, "observe changes nothing");
		assert.ok(env.events().some((e) => e.event === "would_reset"), "the preview would have reset");
		const crossed = env.events().find((e) => e.event === "would_threshold_crossed");
		assert.equal(crossed.floor, 5_000, "the preview starts from the branch's floor: the first answer's usage");
		assert.equal(probe.runs, 2, "observe blocks nothing");
		budget("enforce");
		await t.session.prompt("Now enforced.");
		const [first] = resultsOf(t, "probe_work").slice(2);
		assert.ok(first.isError, "blocked at once: the branch's floor, not the preview's");
		assert.match(first.text, /hard limit of 60000/);
		assert.equal(probe.runs, 2, "nothing ran under enforce");
		assert.equal(ofType(t, "compaction").length, 1);
	});
});

test("modes say the truth: with /relay off, enforce is reported as not acting (status file, /relay status), logged once", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const t = await startSession({ root, contextWindow: WINDOW, settings: enforce(), steps: ["one", "two", "three"] });
	try {
		const sid = t.sessionManager.getSessionId();
		const status = () => JSON.parse(readFileSync(join(env.stateDir, "status", `${sid}.json`), "utf8"));
		await t.session.prompt("First.");
		assert.equal(status().effectiveMode, "enforce");
		await t.session.prompt("/relay off");
		const off = status();
		assert.equal(off.configuredMode, "enforce");
		assert.equal(off.effectiveMode, "observe");
		assert.equal(off.modeReason, "Relay is off: /relay off");
		const said = await captureStderr(() => t.session.prompt("/relay status"));
		assert.ok(said.some((l) => /configured enforce/.test(l) && /Relay is off: \/relay off/.test(l)), said.join("\n"));
		await t.session.prompt("Second.");
		await t.session.prompt("Third.");
		const mismatches = env.events().filter((e) => e.event === "mode_mismatch");
		assert.equal(mismatches.length, 1, "logged once per transition, not per input");
		assert.equal(mismatches[0].effectiveMode, "observe");
		await t.session.prompt("/relay on");
		assert.equal(status().effectiveMode, "enforce");
		assert.equal(status().modeReason, null);
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("status and events: the status file is rewritten at a transition with pid and last action; config errors and commits are events", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	let sid;
	const seen = [];
	const probe = probeTool();
	// Read the status file at the request after the blocked call: the transition to
	// handoff-required was written then, not only when the run settles.
	let requests = 0;
	const watcher = (pi) =>
		pi.on("context", () => {
			// The request after the blocked call, before the run settles.
			if (++requests === 3) seen.push(JSON.parse(readFileSync(join(env.stateDir, "status", `${sid}.json`), "utf8")));
		});
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: { ...enforce(), relay: { ...enforce().relay, reminderMarginTokens: "lots" } },
		extraFactories: [probe.factory, watcher],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("probe_work"), tokens: 35_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 35_500 },
			"Continued.",
		],
	});
	sid = t.sessionManager.getSessionId();
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("Big step.");
		assert.equal(seen.length, 1);
		const during = seen[0];
		assert.equal(during.phase, "handoff-required");
		assert.equal(during.pid, process.pid);
		assert.equal(during.sessionId, sid);
		assert.equal(during.role, "main");
		assert.equal(during.configuredMode, "enforce");
		assert.equal(during.effectiveMode, "enforce");
		assert.equal(during.tokens, 35_000);
		assert.equal(during.thresholds.handoff, 30_000);
		assert.equal(during.lastAction.event, "tool_blocked", "the latest policy action");
		const events = env.events();
		const configErrors = events.filter((e) => e.event === "error" && e.kind === "config");
		assert.equal(configErrors.length, 1, "reported once although configuration is read at every input");
		assert.match(configErrors[0].path, /reminderMarginTokens/);
		assert.equal(typeof configErrors[0].ts, "number");
		const committed = events.find((e) => e.event === "handoff_committed");
		assert.equal(committed.source, "budget");
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("back-off only for what happened: an invalidated handoff sets none, a committed one does", async () => {
	const root = newRoot();
	// An unchanged repository HEAD is what lets the back-off apply at all.
	gitRepo(root);
	await budgetSession({
		probe: { after: "context_handoff" },
		root,
		steps: [
			{ text: "Started.", tokens: 5_000 },
			// A voluntary handoff invalidated by a sibling that finishes after it.
			{ tools: [tool("context_handoff", HANDOFF), tool("probe_work")], tokens: 8_000 },
			{ text: "Both done.", tokens: 8_500 },
			// The same handoff again: no back-off, it commits.
			{ ...tool("context_handoff", HANDOFF), tokens: 9_000 },
			{ text: "Window two.", tokens: 1_000 },
			// Once more in window two: now the committed one sets the back-off.
			{ ...tool("context_handoff", HANDOFF), tokens: 1_500 },
			"Refused, carrying on.",
			// Past the handoff threshold the handoff is forced: the back-off does not apply.
			{ ...tool("probe_work"), tokens: 35_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 35_500 },
			"Window three.",
		],
	}, async ({ t, probe }) => {
		await t.session.prompt("Start.");
		await t.session.prompt("Hand off and probe.");
		assert.equal(ofType(t, "compaction").length, 0);
		await t.session.prompt("Hand off.");
		const results = resultsOf(t, "context_handoff");
		assert.equal(results.length, 2);
		assert.equal(JSON.parse(results[1].text).written, true, "an invalidated handoff set no back-off");
		assert.equal(ofType(t, "compaction").length, 1);
		await t.session.prompt("Hand off again.");
		const third = resultsOf(t, "context_handoff")[2];
		assert.ok(third.isError, third.text);
		assert.match(third.text, /repeats the previous one/);
		await t.session.prompt("Work on.");
		const forced = resultsOf(t, "context_handoff")[3];
		assert.equal(JSON.parse(forced.text).written, true, "a forced handoff bypasses the back-off");
		assert.equal(ofType(t, "compaction").length, 2);
	});
});

test("a window-full crossing while the policy wants a handoff: the borrowed turn asks for the handoff, not for blocked notes, and the settle point gives one answer (issue 24, item 4)", async () => {
	// Pi's own threshold at 200000 - 160000 = 40000, between Relay's handoff (30000) and hard
	// (60000) limits: the crossing turn both blocks tools and borrows Relay's note-taking turn.
	await budgetSession({
		probe: true,
		settings: { ...enforce(), compaction: { enabled: true, keepRecentTokens: 1, reserveTokens: 160_000 } },
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("probe_work"), tokens: 45_000 },
			// The borrowed turn: the model does what the steer says.
			{ ...tool("context_handoff", HANDOFF), tokens: 45_300 },
			{ text: "Continued from the handoff.", tokens: 2_000 },
			{ text: "(never requested)", tokens: 2_100 },
		],
	}, async ({ t, env, probe }) => {
		await t.session.prompt("Start.");
		await t.session.prompt("Big step.");
		assert.equal(probe.runs, 0, "the crossing call was blocked");
		const [steer] = ofType(t, "custom_message", "relay/notes-steer");
		assert.ok(steer, "one borrowed turn");
		assert.match(steer.content, /context_handoff/, "the steer asks for what the policy allows");
		assert.doesNotMatch(steer.content, /notes_write_file|notes_append_to_file/, "never for the notes tools the policy blocks");
		const [c] = ofType(t, "compaction");
		assert.equal(c.details.source, "handoff", "the handoff written in the borrowed turn commits");
		assert.ok(c.summary.includes(GOAL));
		assert.equal(ofType(t, "compaction").length, 1);
		const [cont] = ofType(t, "custom_message", "relay/continue");
		assert.match(cont.content, /confirm git HEAD/, "the continuation asks to verify HEAD before relying on the handoff");
		assert.match(cont.content, /do not ask the user to repeat it/);
		assert.equal(t.requests.length, 4, "start, crossing, borrowed turn, continuation");
		// One answer at the settle point: no handoff request into a window that is being reset.
		assertOneSettleAnswer(t, env);
	});
});

test("a new_context reset due at a settle point where the policy wants a handoff: the reset is the one answer, and the events say so (issue 24, item 4)", async () => {
	await budgetSession({
		probe: true,
		steps: [
			{ text: "Started.", tokens: 5_000 },
			// new_context beside real work: the run goes on (not every result ends it).
			{ tools: [{ tool: "new_context" }, { tool: "probe_work" }], tokens: 6_000 },
			// The next answer crosses the handoff threshold and stops.
			{ text: "STOP-3317: done for now.", tokens: 35_000 },
			{ text: "Continued in the new window.", tokens: 2_000 },
			{ text: "(never requested)", tokens: 2_100 },
		],
	}, async ({ t, env, probe }) => {
		await t.session.prompt("Start.");
		await t.session.prompt("Work, then start fresh.");
		assert.equal(probe.runs, 1);
		const resets = ofType(t, "compaction");
		assert.equal(resets.length, 1);
		assert.equal(resets[0].details.source, "new_context", "the reset the model asked for");
		const events = assertOneSettleAnswer(t, env);
		assert.ok(events.includes("settle_reset_due"), events.join(","));
		assert.equal(t.requests.length, 4, "start, work, stop, the new window's continuation");
		assert.ok(!outsideInProgress(joined(t.requests[3])).includes("STOP-3317"), "the old window is out but for <in_progress>");
	});
});

test("a borrowed turn that stops while the policy wants a handoff: its reset is the one settle answer, no handoff request into the new window (issue 24, item 4)", async () => {
	await budgetSession({
		probe: true,
		settings: { ...enforce(), compaction: { enabled: true, keepRecentTokens: 1, reserveTokens: 160_000 } },
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("probe_work"), tokens: 45_000 },
			// The borrowed turn: the model stops without the handoff.
			{ text: "STOP-3317: I will stop here.", tokens: 45_300 },
			{ text: "Continued in the new window.", tokens: 2_000 },
			{ text: "(never requested)", tokens: 2_100 },
		],
	}, async ({ t, env }) => {
		await t.session.prompt("Start.");
		await t.session.prompt("Big step.");
		const resets = ofType(t, "compaction");
		assert.equal(resets.length, 1);
		assert.equal(resets[0].details.source, "fallback", "the borrowed turn's reset");
		assertOneSettleAnswer(t, env);
		assert.ok(t.requests.length <= 4, `at most one continuation request after the reset (got ${t.requests.length})`);
		for (const request of t.requests.slice(3)) assert.ok(!outsideInProgress(joined(request)).includes("STOP-3317"), "only the new window follows (but for <in_progress>)");
	});
});
