// Structured handoffs under a token budget (issue 5) on the real Pi agent loop: enforce-mode
// blocking, the handoff commit and its continuation, sibling invalidation, the settle continuation,
// cap and loop-guard fallback, observe mode, a corrupt config file, telemetry files, the duplicate
// back-off across a reload, and git metadata.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { captureStderr, joined, ofType, outsideInProgress, readJsonl, resultsOf, roles, startSession, textOf, tool, within } from "./harness.mjs";
import { budgetEnv, budgetSession, CONSTRAINT, enforce, FACTS, gitRepo, GOAL, HANDOFF, newRoot, NEXT, probeTool, THRESHOLDS, WINDOW } from "./budget-helpers.mjs";

const modeOf = (path) => statSync(path).mode & 0o777;





/**
 * The common enforce scenario: a first reply sets the floor (5000), the second prompt's reply crosses
 * the handoff threshold with a tool call (blocked), then the model writes the handoff, the turn ends,
 * the context resets and one automatic continuation runs.
 */
async function handoffAtThreshold() {
	const root = newRoot();
	const env = budgetEnv(root);
	const probe = probeTool();
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [probe.factory],
		steps: [
			{ text: "Looked at OLD-CONVO-5521.", tokens: 5_000 },
			{ ...tool("probe_work"), tokens: 35_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 36_000 },
			"Resumed from the handoff.",
		],
	});
	await t.session.prompt("Start on OLD-CONVO-5521.");
	await t.session.prompt("PROMPT-TWO-3318: keep going.");
	return { t, env, probe, sid: t.sessionManager.getSessionId() };
}

test("enforce: at the handoff threshold other tools are blocked and context_handoff writes private files", async () => {
	const { t, env, probe, sid } = await handoffAtThreshold();
	try {
		const [blocked] = resultsOf(t, "probe_work");
		assert.ok(blocked, "the model's tool call got a result");
		assert.equal(blocked.isError, true, "the call is answered with an error result");
		assert.match(blocked.text, /context_handoff/, "the reason names the handoff tool");
		assert.match(blocked.text, /30000/, "the reason states the threshold");
		assert.equal(probe.runs, 0, "the blocked tool never ran");

		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff.isError, false, handoff.text);
		const result = JSON.parse(handoff.text);
		assert.equal(result.written, true);
		const expected = join(t.cwd, ".ai-work", "handoffs", `${sid}-1.md`);
		assert.equal(result.path, expected);
		assert.ok(existsSync(expected));
		assert.equal(modeOf(expected), 0o600);
		assert.equal(modeOf(join(t.cwd, ".ai-work")), 0o700);
		assert.equal(modeOf(join(t.cwd, ".ai-work", "handoffs")), 0o700);
		const md = readFileSync(expected, "utf8");
		assert.ok(md.includes(GOAL), "goal");
		assert.ok(md.includes(NEXT), "next step");
		assert.ok(md.includes(FACTS), "facts");
		assert.ok(md.includes(CONSTRAINT), "user constraints verbatim");

		const sidecarPath = join(t.cwd, ".ai-work", "handoffs", `${sid}-1.json`);
		assert.equal(modeOf(sidecarPath), 0o600);
		const sidecar = JSON.parse(readFileSync(sidecarPath, "utf8"));
		assert.equal(sidecar.goal, GOAL);
		assert.equal(sidecar.nextStep, NEXT);
		assert.equal(sidecar.facts, FACTS);
		assert.equal(sidecar.userConstraints, CONSTRAINT);
		assert.equal(sidecar.sessionId, sid);
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("enforce: the handoff's turn end resets the window and the automatic continuation starts from the handoff", async () => {
	const { t, env } = await handoffAtThreshold();
	try {
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1, "exactly one reset");
		const details = compactions[0].details;
		assert.equal(details.relay, "window");
		assert.equal(details.source, "handoff");
		const path = JSON.parse(resultsOf(t, "context_handoff")[0].text).path;
		assert.equal(details.handoffPath, path);

		// Two prompts, one blocked turn, the handoff turn and one continuation: no user prompt for it.
		assert.equal(t.requests.length, 4, "the continuation is automatic and single");
		const fresh = t.requests[3];
		assert.deepEqual(roles(fresh), ["user", "user"], "boot block + hidden continuation, nothing older");
		const text = joined(fresh);
		assert.match(text, /<handoff>[\s\S]*GOAL-7731[\s\S]*NEXT-4410[\s\S]*<\/handoff>/);
		assert.ok(text.includes(CONSTRAINT.split("\n")[0]), "the user constraint travels with the handoff");
		assert.ok(!outsideInProgress(text).includes("OLD-CONVO-5521"), "the old conversation is out of the request (but for <in_progress>)");
		assert.ok(!text.includes("PROMPT-TWO-3318"), "the last prompt is out of the request");
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 1);
		assert.equal(ofType(t, "custom_message", "relay/continue")[0].display, false);
		assert.equal(ofType(t, "custom_message", "relay/handoff-request").length, 0, "no settle continuation was needed");
		// The new window works normally: the last entry is the continuation's reply.
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Resumed from the handoff.");
		// Every record Relay wrote carries its version (crates/relay-core/src/records.rs): the
		// window marker, the reset marker and the handoff record, the boot block, the steer and
		// the continuation (a boundary draft) included.
		const records = t.sessionManager.getBranch().flatMap((e) => {
			if (e.type === "compaction") return [["compaction", e.details]];
			if (e.type === "custom" && e.customType.startsWith("relay/")) return [[e.customType, e.data]];
			if (e.type === "custom_message" && e.customType.startsWith("relay/")) return [[e.customType, e.details]];
			return [];
		});
		for (const kind of ["compaction", "relay/reset", "relay/handoff", "relay/boot", "relay/continue"]) {
			assert.ok(records.some(([k]) => k === kind), `a ${kind} record: ${JSON.stringify(records.map(([k]) => k))}`);
		}
		for (const [kind, record] of records) assert.equal(record?.v, 1, `${kind}: ${JSON.stringify(record)}`);
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("enforce: a sibling tool that finishes after the handoff invalidates it (no reset)", async () => {
	// The sibling finishes only after the handoff's result was delivered.
	await budgetSession({
		probe: { after: "context_handoff" },
		steps: [
			{ text: "Started.", tokens: 5_000 },
			// Below the handoff threshold: a voluntary handoff, so the sibling is not blocked.
			{ tools: [tool("context_handoff", HANDOFF), tool("probe_work")], tokens: 8_000 },
			{ text: "Both done.", tokens: 8_500 },
		],
	}, async ({ t, env, probe }) => {
		await t.session.prompt("Start.");
		await t.session.prompt("Hand off and probe.");
		assert.equal(JSON.parse(resultsOf(t, "context_handoff")[0].text).written, true);
		assert.equal(probe.runs, 1, "the sibling ran");
		assert.equal(resultsOf(t, "probe_work")[0].isError, false);
		assert.equal(ofType(t, "compaction").length, 0, "the invalidated handoff is not committed");
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 0);
		assert.equal(t.requests.length, 3, "the run ends normally, without a continuation");
		const names = env.events().map((e) => e.event);
		assert.ok(names.includes("handoff_invalidated"), names.join(","));
		assert.ok(!names.includes("handoff_committed"), names.join(","));
	});
});

test("enforce: a voluntary handoff alone commits (control for the sibling case)", async () => {
	await budgetSession({
		steps: [{ text: "Started.", tokens: 5_000 }, { ...tool("context_handoff", HANDOFF), tokens: 8_000 }, "Resumed."],
	}, async ({ t }) => {
		await t.session.prompt("Start.");
		await t.session.prompt("Hand off now.");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1);
		assert.equal(compactions[0].details.source, "handoff");
		assert.equal(t.requests.length, 3);
		assert.match(joined(t.requests[2]), /<handoff>[\s\S]*GOAL-7731/);
	});
});

test("enforce: stopping while a handoff is required gets exactly one hidden continuation per run", async () => {
	await budgetSession({
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ text: "All done, stopping here.", tokens: 35_000 },
			{ text: "Still stopping without a handoff.", tokens: 35_500 },
		],
	}, async ({ t }) => {
		await t.session.prompt("Start.");
		await t.session.prompt("Finish up.");
		assert.equal(t.requests.length, 3, "one continuation, not two");
		const requests = ofType(t, "custom_message", "relay/handoff-request");
		assert.equal(requests.length, 1);
		assert.equal(requests[0].display, false, "hidden from the user");
		const last = t.requests[2].at(-1);
		assert.equal(last.role, "user");
		assert.match(textOf(last.content), /context_handoff/);
		assert.equal(textOf(last.content), textOf(requests[0].content));
		assert.equal(ofType(t, "compaction").length, 0, "no reset without a handoff below the hard limit");
	});
});

test("cap: after maxHandoffsPerSession commits the next crossing arms the fallback, not a handoff", async () => {
	await budgetSession({
		probe: true,
		settings: enforce({ maxHandoffsPerSession: 1 }),
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("probe_work"), tokens: 35_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 36_000 },
			{ text: "Resumed in window two.", tokens: 6_000 },
			{ ...tool("probe_work"), tokens: 40_000 },
			{ text: "never requested: the cap's blocked call ends the run", tokens: 40_500 },
		],
	}, async ({ t, env, probe }) => {
		await t.session.prompt("Start.");
		await t.session.prompt("Work until the budget runs out.");
		assert.equal(ofType(t, "compaction").length, 1, "the first crossing commits the handoff");
		await t.session.prompt("Keep working.");

		const probes = resultsOf(t, "probe_work");
		assert.equal(probes.length, 2);
		assert.equal(probe.runs, 0);
		const capBlock = probes[1];
		assert.equal(capBlock.isError, true);
		assert.match(capBlock.text, /maxHandoffsPerSession/, "the reason names the cap");
		assert.match(capBlock.text, /do not hand off again/i, "it does not ask for another handoff");
		assert.ok(!/Only context_handoff is allowed/.test(capBlock.text));

		assert.equal(ofType(t, "custom_message", "relay/handoff-request").length, 0, "no settle continuation asks for a handoff");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 2, "the fallback resets mechanically");
		const forced = compactions[1];
		assert.equal(forced.details.source, "forced");
		assert.match(forced.summary, /reset mechanically because this session reached its limit of 1 automatic handoffs/);
		assert.ok(!forced.summary.includes("GOAL-7731"), "the stale handoff of window one is not replayed as the reason");
		assert.equal(t.requests.length, 5, "the blocked call ended the run, and after the cap the user decides: no continuation");
		const events = env.events();
		assert.ok(events.some((e) => e.event === "fallback_armed" && e.reason === "cap"), JSON.stringify(events.map((e) => e.event)));
		assert.ok(events.some((e) => e.event === "forced_reset" && e.reason === "cap"));
	});
});

test("cap: budget commits still count after the session is reloaded", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const settings = enforce({ maxHandoffsPerSession: 1 });
	const first = await startSession({
		root,
		contextWindow: WINDOW,
		settings,
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 35_000 },
			{ text: "Resumed in window two.", tokens: 6_000 },
		],
	});
	let file;
	try {
		await first.session.prompt("Start.");
		await first.session.prompt("Work until the budget runs out.");
		assert.equal(ofType(first, "compaction").length, 1);
		file = first.sessionManager.getSessionFile();
	} finally {
		await first.dispose();
	}
	const probe = probeTool();
	const t = await startSession({
		root,
		sessionFile: file,
		contextWindow: WINDOW,
		settings,
		extraFactories: [probe.factory],
		steps: [
			{ text: "Back.", tokens: 7_000 },
			{ ...tool("probe_work"), tokens: 40_000 },
			{ text: "Ending my turn.", tokens: 40_500 },
		],
	});
	try {
		await t.session.prompt("Hello again.");
		await t.session.prompt("Keep working.");
		const last = resultsOf(t, "probe_work").at(-1);
		assert.equal(probe.runs, 0);
		assert.match(last.text, /maxHandoffsPerSession/, "the restored session has already used its one handoff");
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("cap: a handoff written while the cap fallback is armed does not bypass it", async () => {
	await budgetSession({
		probe: true,
		settings: enforce({ maxHandoffsPerSession: 1 }),
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 35_000 },
			{ text: "Resumed in window two.", tokens: 6_000 },
			// Over the handoff threshold again: the cap is reached, yet the model hands off.
			{ ...tool("context_handoff", { ...HANDOFF, goal: "SECOND-GOAL-6120: write the docs", facts: "docs half done" }), tokens: 40_000 },
			{ text: "Ending my turn.", tokens: 40_500 },
		],
	}, async ({ t, env }) => {
		await t.session.prompt("Start.");
		await t.session.prompt("Work until the budget runs out.");
		await t.session.prompt("Keep working.");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 2);
		assert.equal(compactions[0].details.source, "handoff");
		assert.equal(compactions[1].details.source, "forced", "the second reset is the mechanical fallback");
		assert.match(compactions[1].summary, /limit of 1 automatic handoffs/, "the boot block says why");
		assert.equal(t.requests.length, 5, "no automatic continuation after the cap");
		assert.ok(env.events().some((e) => e.event === "handoff_ignored"));
	});
});

test("hard limit: without a handoff the window is reset mechanically and work continues; a handoff at hard commits", async () => {
	const run = async (handoff) => {
		const root = newRoot();
		const env = budgetEnv(root);
		const probe = probeTool();
		const t = await startSession({
			root,
			contextWindow: WINDOW,
			settings: enforce(),
			extraFactories: [probe.factory],
			steps: [
				{ text: "Started.", tokens: 5_000 },
				{ ...tool("probe_work"), tokens: 65_000 },
				// Without a handoff the model keeps working (another blocked call): the reset comes at
				// that turn's end and the task continues (stopping instead: policy.test.mjs).
				handoff ? { ...tool("context_handoff", HANDOFF), tokens: 65_500 } : { ...tool("probe_work"), tokens: 65_500 },
				"Resumed after the reset.",
			],
		});
		try {
			await t.session.prompt("Start.");
			await t.session.prompt("Big step.");
			return { t, probe, events: env.events() };
		} finally {
			await t.dispose();
			env.restore();
		}
	};

	const forced = await run(false);
	const blocked = resultsOf(forced.t, "probe_work")[0];
	assert.equal(blocked.isError, true);
	assert.match(blocked.text, /hard limit of 60000/);
	assert.equal(forced.probe.runs, 0);
	let compactions = ofType(forced.t, "compaction");
	assert.equal(compactions.length, 1);
	assert.equal(compactions[0].details.source, "forced");
	assert.match(compactions[0].summary, /hard limit of 60000 tokens without a usable handoff/);
	assert.equal(ofType(forced.t, "custom_message", "relay/continue").length, 1, "the task continues by itself");
	assert.equal(forced.t.requests.length, 4);
	const fresh = joined(forced.t.requests[3]);
	assert.ok(!outsideInProgress(fresh).includes("Started.") && !outsideInProgress(fresh).includes("probe_work"), "the old conversation is gone (but for <in_progress>)");
	assert.match(fresh, /<tool_call n="1" tool="probe_work" result="[a-z]+"/, "the last actions are named");
	// Only the user's own words come along, labelled as earlier input (a forced reset keeps them).
	assert.match(fresh, /<earlier_user_input shown="2" total="2">\n<user_message>\nStart\.\n<\/user_message>\n<user_message latest="true">\nBig step\.\n<\/user_message>/);
	assert.ok(forced.events.some((e) => e.event === "fallback_armed" && e.reason === "hard"));

	const committed = await run(true);
	compactions = ofType(committed.t, "compaction");
	assert.equal(compactions.length, 1);
	assert.equal(compactions[0].details.source, "handoff", "a valid handoff at hard commits in-process");
	assert.match(joined(committed.t.requests[3]), /<handoff>[\s\S]*GOAL-7731/);
});

/** Loop-guard scenario: one budget commit, then (optionally) a successful tool, then a second crossing. */
async function loopScenario({ progressBetween }) {
	const root = newRoot();
	const env = budgetEnv(root);
	const probe = probeTool();
	const steps = [
		{ text: "Started.", tokens: 5_000 },
		{ ...tool("probe_work"), tokens: 35_000 },
		{ ...tool("context_handoff", HANDOFF), tokens: 36_000 },
		{ text: "Resumed in window two.", tokens: 6_000 },
	];
	if (progressBetween) steps.push({ ...tool("probe_work"), tokens: 7_000 }, { text: "Probe ran.", tokens: 7_500 });
	steps.push({ ...tool("probe_work"), tokens: 40_000 }, { text: "Ending the turn.", tokens: 40_500 });
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce({ maxHandoffsPerSession: 10, loop: { maxHandoffsWithoutProgress: 1, withinTurns: 8 } }),
		extraFactories: [probe.factory],
		steps,
	});
	await t.session.prompt("Start.");
	await t.session.prompt("Work until the budget runs out.");
	if (progressBetween) await t.session.prompt("Do one small step.");
	await t.session.prompt("Keep working.");
	return { t, env, probe };
}

test("loop guard: a second crossing without progress since the last commit arms the fallback", async () => {
	const { t, env, probe } = await loopScenario({ progressBetween: false });
	try {
		const probes = resultsOf(t, "probe_work");
		assert.equal(probe.runs, 0);
		assert.equal(probes.at(-1).isError, true);
		assert.match(probes.at(-1).text, /made no progress/, probes.at(-1).text);
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 2);
		assert.equal(compactions[1].details.source, "forced");
		assert.match(compactions[1].summary, /1 handoffs within 8 turns made no progress/);
		assert.ok(env.events().some((e) => e.event === "fallback_armed" && e.reason === "loop"));
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("loop guard: a successful tool between commits keeps the normal handoff path", async () => {
	const { t, env, probe } = await loopScenario({ progressBetween: true });
	try {
		assert.equal(probe.runs, 1, "the in-between probe ran");
		const last = resultsOf(t, "probe_work").at(-1);
		assert.equal(last.isError, true);
		assert.match(last.text, /Only context_handoff is allowed/, "a handoff is required, not the fallback");
		assert.ok(!env.events().some((e) => e.event === "fallback_armed"));
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("observe (the default mode) changes nothing in the session but logs would_* events", async () => {
	await budgetSession({
		probe: true,
		// Thresholds only, no mode: observe is the default.
		settings: { compaction: { enabled: false }, relay: { budget: { main: THRESHOLDS } } },
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("probe_work"), tokens: 35_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 36_000 },
			{ text: "Done.", tokens: 36_500 },
		],
	}, async ({ t, env, probe }) => {
		await t.session.prompt("Start.");
		await t.session.prompt("Keep going.");
		assert.equal(probe.runs, 1, "not blocked");
		assert.equal(resultsOf(t, "probe_work")[0].isError, false);
		const handoff = JSON.parse(resultsOf(t, "context_handoff")[0].text);
		assert.equal(handoff.written, false);
		assert.equal(handoff.mode, "observe");
		assert.ok(!existsSync(join(t.cwd, ".ai-work")), "no handoff file");
		assert.equal(ofType(t, "compaction").length, 0);
		assert.equal(ofType(t, "custom_message", "relay/handoff-request").length, 0);
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 0);
		assert.equal(t.requests.length, 4, "no extra provider call");

		const names = env.events().map((e) => e.event);
		for (const name of ["would_threshold_crossed", "would_block", "would_handoff", "would_continue"]) {
			assert.ok(names.includes(name), `${name} in ${names.join(",")}`);
		}
		const acting = names.filter((n) => !n.startsWith("would_"));
		assert.deepEqual(acting, [], "observe logs only would_* events");
		const wouldBlock = env.events().find((e) => e.event === "would_block");
		assert.match(wouldBlock.reason, /context_handoff/);
	});
});

test("a corrupt budget config file selects observe mode and warns with its path", async () => {
	const root = newRoot();
	const configPath = join(root, "context-budget.json");
	writeFileSync(configPath, "{ not json");
	const env = budgetEnv(root, configPath);
	const probe = probeTool();
	let t;
	const stderr = await captureStderr(async () => {
		t = await startSession({
			root,
			contextWindow: WINDOW,
			// Enforce in the settings: the unusable file must still win and select observe.
			settings: enforce(),
			extraFactories: [probe.factory],
			steps: [
				{ text: "Started.", tokens: 5_000 },
				{ ...tool("probe_work"), tokens: 35_000 },
				{ ...tool("context_handoff", HANDOFF), tokens: 36_000 },
				{ text: "Done.", tokens: 36_500 },
			],
		});
		await t.session.prompt("Start.");
		await t.session.prompt("Keep going.");
	});
	try {
		const warnings = stderr.filter((l) => l.includes(configPath));
		assert.ok(warnings.length >= 1, `a warning names ${configPath}: ${JSON.stringify(stderr)}`);
		assert.match(warnings[0], /observe/);
		assert.equal(probe.runs, 1, "no blocking above the thresholds");
		assert.equal(resultsOf(t, "probe_work")[0].isError, false);
		const handoff = JSON.parse(resultsOf(t, "context_handoff")[0].text);
		assert.equal(handoff.written, false);
		assert.equal(handoff.mode, "observe");
		assert.equal(ofType(t, "compaction").length, 0);
	} finally {
		await t?.dispose();
		env.restore();
	}
});

test("telemetry: status/<sessionId>.json and events.jsonl are written, parse and are private", async () => {
	const { t, env, sid } = await handoffAtThreshold();
	try {
		const statusPath = join(env.stateDir, "status", `${sid}.json`);
		const eventsPath = join(env.stateDir, "events.jsonl");
		assert.ok(existsSync(statusPath), statusPath);
		assert.ok(existsSync(eventsPath), eventsPath);
		assert.equal(modeOf(statusPath), 0o600);
		assert.equal(modeOf(eventsPath), 0o600);
		assert.equal(modeOf(env.stateDir), 0o700);
		assert.equal(modeOf(join(env.stateDir, "status")), 0o700);

		const status = JSON.parse(readFileSync(statusPath, "utf8"));
		const compaction = ofType(t, "compaction")[0];
		assert.equal(status.sessionId, sid);
		assert.equal(status.windowId, compaction.details.windowId, "the status follows the new window");
		assert.equal(status.configuredMode, "enforce");
		assert.equal(status.effectiveMode, "enforce");
		assert.deepEqual(status.thresholds, THRESHOLDS);
		assert.equal(status.cwd, t.cwd);
		assert.equal(status.model, "faux/faux-1");
		assert.equal(status.lastHandoff?.path, compaction.details.handoffPath);
		assert.equal(status.handoffsCommitted, 1);

		const lines = readFileSync(eventsPath, "utf8").split("\n").filter(Boolean);
		assert.ok(lines.length >= 4);
		const events = lines.map((l) => JSON.parse(l));
		for (const e of events) {
			assert.equal(typeof e.event, "string");
			assert.equal(typeof e.ts, "number");
			assert.equal(e.sessionId, sid);
		}
		const names = events.map((e) => e.event);
		for (const name of ["threshold_crossed", "tool_blocked", "handoff_written", "handoff_committed"]) {
			assert.ok(names.includes(name), `${name} in ${names.join(",")}`);
		}
		assert.ok(names.indexOf("tool_blocked") < names.indexOf("handoff_written"));
		assert.ok(names.indexOf("handoff_written") < names.indexOf("handoff_committed"));
		assert.ok(events.some((e) => e.event === "tool_blocked" && e.tool === "probe_work"));
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("duplicate back-off: a repeated voluntary handoff is refused, also after a reload; a changed one is accepted", async () => {
	const root = newRoot();
	gitRepo(root);
	const env = budgetEnv(root);
	const first = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 6_000 },
			"Resumed.",
			// Same narrative, word order and punctuation changed a little: still a duplicate.
			tool("context_handoff", { ...HANDOFF, facts: "two csv cases failing, parser done: FACTS-9902" }),
			"Understood, continuing.",
		],
	});
	let file;
	try {
		await first.session.prompt("Start.");
		await first.session.prompt("Hand off.");
		assert.equal(ofType(first, "compaction").length, 1, "the first handoff commits");
		await first.session.prompt("Hand off again.");
		const refused = resultsOf(first, "context_handoff")[1];
		assert.equal(refused.isError, true);
		assert.match(refused.text, /Retry after/);
		assert.equal(ofType(first, "compaction").length, 1, "no second reset");
		file = first.sessionManager.getSessionFile();
	} finally {
		await first.dispose();
	}

	const t = await startSession({
		root,
		sessionFile: file,
		contextWindow: WINDOW,
		settings: enforce(),
		steps: [
			tool("context_handoff", HANDOFF),
			tool("context_handoff", {
				goal: "Write the release notes for v2.1",
				next_step: "Draft docs/release.md from the changelog",
				facts: "Importer merged as abc123; CI green",
			}),
			"Resumed again.",
		],
	});
	try {
		await t.session.prompt("After the reload: hand off.");
		// The branch holds both sessions' results: written, refused, then these two.
		const results = resultsOf(t, "context_handoff");
		assert.equal(results.length, 4);
		assert.equal(results[2].isError, true, "the fingerprint survived the reload");
		assert.match(results[2].text, /Retry after/);
		assert.equal(results[3].isError, false, results[3].text);
		assert.equal(JSON.parse(results[3].text).written, true, "a sufficiently different handoff is accepted");
		assert.equal(ofType(t, "compaction").length, 2);
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("git metadata: a repository's branch and HEAD are recorded; outside a repository 'no git', never an error", async () => {
	const run = async (withGit) => {
		const root = newRoot();
		const head = withGit ? gitRepo(root) : null;
		const env = budgetEnv(root);
		const t = await startSession({
			root,
			contextWindow: WINDOW,
			settings: enforce(),
			steps: [{ text: "Started.", tokens: 5_000 }, { ...tool("context_handoff", HANDOFF), tokens: 6_000 }, "Resumed."],
		});
		try {
			await t.session.prompt("Start.");
			await t.session.prompt("Hand off.");
			const [result] = resultsOf(t, "context_handoff");
			assert.equal(result.isError, false, result.text);
			const path = JSON.parse(result.text).path;
			const md = readFileSync(path, "utf8");
			const sidecar = JSON.parse(readFileSync(path.replace(/\.md$/, ".json"), "utf8"));
			return { t, head, md, sidecar, path };
		} finally {
			await t.dispose();
			env.restore();
		}
	};

	const repo = await run(true);
	assert.match(repo.head, /^[0-9a-f]{40}$/);
	assert.ok(repo.path.startsWith(join(repo.t.cwd, ".ai-work", "handoffs")), "written under the repository root");
	assert.match(repo.md, /^- Git branch: trunk$/m);
	assert.ok(repo.md.includes(`- HEAD: ${repo.head}`));
	assert.match(repo.md, new RegExp(`^- Repository root: ${repo.t.cwd.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"));
	assert.equal(repo.sidecar.git.head, repo.head);
	assert.equal(repo.sidecar.git.branch, "trunk");

	const plain = await run(false);
	assert.match(plain.md, /^- Git branch: \(no git repository\)$/m);
	assert.match(plain.md, /^- HEAD: -$/m);
	assert.equal(plain.sidecar.git.head, null);
	assert.equal(plain.sidecar.git.state, "noGit");
});

test("telemetry: an unwritable state folder never prevents the handoff commit", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	// The state "folder" is a plain file: every status and event write fails.
	const blocker = join(root, "not-a-folder");
	writeFileSync(blocker, "x");
	process.env.PI_CONTEXT_BUDGET_STATE_DIR = join(blocker, "context-budget");
	const lines = [];
	const original = console.error;
	console.error = (...args) => lines.push(args.join(" "));
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		steps: [
			{ text: "warm-up", tokens: 5_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 36_000 },
			"Resumed despite telemetry failures.",
		],
	});
	try {
		await t.session.prompt("Warm up.");
		await t.session.prompt("Hand off now.");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1, "the handoff committed");
		assert.equal(compactions[0].details.source, "handoff");
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Resumed despite telemetry failures.");
		assert.ok(lines.some((l) => l.includes("relay: cannot")), `the failure is reported: ${lines.join(" | ")}`);
	} finally {
		console.error = original;
		await t.dispose();
		env.restore();
	}
});

test("subagent: a session bound while another Relay session is alive in the process uses the subagent thresholds", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const settings = {
		compaction: { enabled: false },
		relay: {
			budget: {
				mode: "enforce",
				main: THRESHOLDS,
				subagent: { soft: 5_000, handoff: 8_000, hard: 15_000, minProgress: 500 },
			},
		},
	};
	const parent = await startSession({ root, contextWindow: WINDOW, settings, steps: [{ text: "parent warm-up", tokens: 1_000 }, { ...tool("notes_write_file", { path: "p.md", content: "x" }), tokens: 9_000 }, "parent done"] });
	const child = await startSession({ root: newRoot(), contextWindow: WINDOW, settings, steps: [{ text: "child warm-up", tokens: 1_000 }, { ...tool("notes_write_file", { path: "c.md", content: "x" }), tokens: 9_000 }, "child done"] });
	try {
		await parent.session.prompt("Parent: warm up.");
		await parent.session.prompt("Parent: write a note.");
		await child.session.prompt("Child: warm up.");
		await child.session.prompt("Child: write a note.");
		const parentWrite = resultsOf(parent, "notes_write_file")[0];
		const childWrite = resultsOf(child, "notes_write_file")[0];
		assert.equal(parentWrite.isError, false, "9,000 tokens is below the main handoff threshold");
		assert.equal(childWrite.isError, true, "9,000 tokens is past the subagent handoff threshold");
		assert.match(childWrite.text, /context_handoff/);
		const status = JSON.parse(readFileSync(join(env.stateDir, "status", `${child.sessionManager.getSessionId()}.json`), "utf8"));
		assert.equal(status.role, "subagent");
		const parentStatus = JSON.parse(readFileSync(join(env.stateDir, "status", `${parent.sessionManager.getSessionId()}.json`), "utf8"));
		assert.equal(parentStatus.role, "main");
	} finally {
		await child.dispose();
		await parent.dispose();
		env.restore();
	}
});

test("enforce: a run aborted while the hard limit waits for a handoff keeps enforcing in the next run", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const probe = probeTool();
	let t;
	t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [probe.factory],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			// Past the hard limit: the fallback is armed and the call blocked.
			{ ...tool("probe_work"), tokens: 65_000 },
			// The model stops: the settle point asks once for a handoff ...
			{ text: "Stopping here.", tokens: 65_500 },
			// ... and the user presses Esc while it answers.
			() => {
				void t.session.abort();
				return { text: "interrupted", tokens: 65_600 };
			},
			// The next run: still past the hard limit, the model keeps working; its first turn is
			// the fallback's second, so the reset comes at its end.
			{ ...tool("probe_work"), tokens: 66_000 },
			{ text: "Resumed after the reset.", tokens: 1_200 },
		],
	});
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("Big step.").catch(() => {});
		assert.equal(ofType(t, "custom_message", "relay/handoff-request").length, 1);
		assert.equal(ofType(t, "compaction").length, 0, "the aborted run did not reset");
		await t.session.prompt("Next run.");
		const probes = resultsOf(t, "probe_work");
		assert.equal(probes.length, 2);
		assert.equal(probe.runs, 0, "every probe stayed blocked, also after the abort");
		assert.match(probes[1].text, /hard limit/);
		assert.equal(ofType(t, "compaction").length, 1, "the forced reset happens in the next run");
		assert.equal(ofType(t, "compaction")[0].details.source, "forced");
	} finally {
		await t.dispose();
		env.restore();
	}
});
