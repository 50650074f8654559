// The optional integrations (issue 11, part 3) on the real Pi agent loop: a pi-jobs registry, a
// pending-questions store, an issue-claim registry and the shared guard library in a temp agent
// dir. The handoff file holds their sections, the new window's first request carries the Watch
// check for a watch that is gone, and the context guard off makes enforce effectively off.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { captureStderr, joined, ofType, resultsOf, startSession, tool } from "./harness.mjs";
import { budgetEnv, enforce, HANDOFF, newRoot, probeTool, WINDOW } from "./budget-helpers.mjs";

const JOBS = Symbol.for("pi-jobs.liveManagers");
const GUARD_FLAG = "__relayTestContextGuardOff";

/** A pi-jobs registry with one manager listing `jobs` (mutable: tests remove records from it). */
function jobsRegistry(jobs) {
	globalThis[JOBS] = new Set([{ list: () => jobs }]);
	return () => delete globalThis[JOBS];
}

/** The shared guard library in the agent dir: `isGuardOff("context")` reads a flag the test sets. */
function writeGuards(root) {
	const dir = join(root, "agent", "lib");
	mkdirSync(dir, { recursive: true });
	writeFileSync(
		join(dir, "guards.ts"),
		`export function isGuardOff(name: string): boolean {\n\treturn name === "context" && (globalThis as Record<string, unknown>)["${GUARD_FLAG}"] === true;\n}\n`,
	);
}

test("a handoff records jobs, questions and claims, and the new window's first request gets a Watch check for the gone watch", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	writeGuards(root);
	globalThis[GUARD_FLAG] = false;
	const questionsHome = join(root, "questions");
	process.env.PI_QUESTIONS_HOME = questionsHome;
	const jobs = [
		{ id: "j1", label: "build", kind: "job", command: "cargo build --release", cwd: "/w", logPath: "/tmp/j1.log", status: "running" },
		{ id: "w1", label: "ci", kind: "watch", intervalSeconds: 60, command: "gh run watch 77", status: "waiting" },
	];
	const dropRegistry = jobsRegistry(jobs);
	// The watch ends while the handoff commits: once the handoff's result is in, w1 is gone.
	const endWatch = (pi) => {
		pi.on("tool_result", (event) => {
			if (event.toolName === "context_handoff") jobs.splice(1, 1);
		});
	};
	const probe = probeTool();
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [probe.factory, endWatch],
		steps: [
			{ text: "Looked around.", tokens: 5_000 },
			{ ...tool("probe_work"), tokens: 35_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 36_000 },
			"Resumed from the handoff.",
		],
	});
	try {
		const sid = t.sessionManager.getSessionId();
		mkdirSync(join(questionsHome, "item-q1"), { recursive: true });
		writeFileSync(join(questionsHome, "item-q1", "0001.json"), JSON.stringify({ id: "q1", sessionId: sid, status: "open", title: "Which CSV dialect?" }));
		mkdirSync(join(questionsHome, "item-bad"), { recursive: true });
		writeFileSync(join(questionsHome, "item-bad", "0001.json"), "{corrupt");
		mkdirSync(join(t.agentDir, "issue-work"), { recursive: true });
		writeFileSync(
			join(t.agentDir, "issue-work", "registry.jsonl"),
			[{ sessionId: sid, repo: "acme/relay", issue: 12, title: "importer v2" }, { sessionId: "someone-else", issue: 99 }].map((l) => JSON.stringify(l)).join("\n") + "\n",
		);

		await t.session.prompt("Start.");
		await t.session.prompt("Keep going.");

		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff.isError, false, handoff.text);
		const path = JSON.parse(handoff.text).path;
		const md = readFileSync(path, "utf8");
		assert.ok(md.includes("### Jobs and watches (pi-jobs)"), md);
		assert.ok(md.includes("j1 | build | job | - | - | cargo build --release | /w | /tmp/j1.log"), md);
		assert.ok(md.includes("w1 | ci | watch | - | 60 | gh run watch 77 | - | -"), md);
		assert.match(md, /### Subagents \(pi-subagents\)\n\nunavailable/);
		assert.ok(md.includes("q1 | open | Which CSV dialect?"), md);
		assert.ok(md.includes("acme/relay#12 | claimed | importer v2"), md);
		assert.ok(!md.includes("someone-else") && !md.includes("#99"), "another session's claim is not listed");
		const sidecar = JSON.parse(readFileSync(path.replace(/\.md$/, ".json"), "utf8"));
		assert.equal(sidecar.integrations.jobs.records.length, 2);
		assert.equal(sidecar.integrations.jobs.records[1].command, "gh run watch 77");

		// The continuation is the new window's first request: the Watch check names w1, not j1.
		assert.equal(t.requests.length, 4);
		const fresh = joined(t.requests[3]);
		assert.match(fresh, /<watch_check>[\s\S]*w1 \| ci \| gh run watch 77[\s\S]*<\/watch_check>/);
		const check = fresh.slice(fresh.indexOf("<watch_check>"), fresh.indexOf("</watch_check>"));
		assert.ok(!check.includes("j1"), "live work is not listed");
		const records = ofType(t, "custom", "relay/watch-check");
		assert.equal(records.length, 1, "the check is recorded once on the branch");
		assert.deepEqual(
			records[0].data.missing.map((m) => m.id),
			["w1"],
		);
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
		dropRegistry();
		delete process.env.PI_QUESTIONS_HOME;
		delete globalThis[GUARD_FLAG];
		env.restore();
	}
});

test("the context guard off makes enforce effectively off: nothing is blocked, the status says why, guard_off_threshold is logged once", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	writeGuards(root);
	globalThis[GUARD_FLAG] = true;
	const probe = probeTool();
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [probe.factory],
		steps: [
			{ text: "Looked around.", tokens: 5_000 },
			{ ...tool("probe_work"), tokens: 35_000 },
			{ ...tool("probe_work"), tokens: 36_000 },
			"Done without a handoff.",
		],
	});
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("Keep going.");
		assert.equal(probe.runs, 2, "past the handoff threshold the tools still run");
		assert.equal(ofType(t, "compaction").length, 0, "no handoff reset");
		const sid = t.sessionManager.getSessionId();
		const statusPath = join(env.stateDir, "status", `${sid}.json`);
		assert.ok(existsSync(statusPath));
		const status = JSON.parse(readFileSync(statusPath, "utf8"));
		assert.equal(status.configuredMode, "enforce");
		assert.equal(status.effectiveMode, "off");
		assert.equal(status.modeReason, "context guard off");
		const logged = env.events().filter((e) => e.event === "guard_off_threshold");
		assert.deepEqual(
			logged.map((e) => e.threshold),
			["handoff"],
			"once for the handoff crossing, not once per call",
		);

		// Consulted live: with the guard back on, the next call past the threshold is blocked.
		globalThis[GUARD_FLAG] = false;
		t.script({ ...tool("probe_work"), tokens: 37_000 }, "stopped");
		await t.session.prompt("One more.");
		assert.equal(probe.runs, 2, "the guard is on again: the call is blocked");
		const last = resultsOf(t, "probe_work").at(-1);
		assert.equal(last.isError, true);
		assert.match(last.text, /context_handoff/);
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
		delete globalThis[GUARD_FLAG];
		env.restore();
	}
});

test("subagents named in tool results are looked up in the live registry: the handoff lists the running one without a task directory (issue 24, item 7)", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const SUBAGENTS = Symbol.for("pi-subagents:manager");
	const asked = [];
	const records = {
		"sa-42": { id: "sa-42", status: "running", description: "index the corpus" },
		"sa-07": { id: "sa-07", status: "completed", description: "old finished work" },
	};
	// The registry answers getRecord only (no listAgents), like a pi-subagents without listing.
	globalThis[SUBAGENTS] = {
		getRecord(id) {
			asked.push(id);
			return records[id];
		},
	};
	// A stand-in for pi-subagents' Agent tool: its result names the subagent it started.
	const agentTool = (pi) => {
		let n = 0;
		pi.registerTool({
			name: "Agent",
			label: "Agent",
			description: "starts a subagent",
			parameters: { type: "object", properties: {} },
			async execute() {
				const id = ["sa-07", "sa-42"][n++];
				return { content: [{ type: "text", text: `Agent started in background.\nAgent ID: ${id}\nUse get_subagent_result to check on it.` }], details: { agentId: id } };
			},
		});
	};
	const probe = probeTool();
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [probe.factory, agentTool],
		steps: [
			{ ...tool("Agent"), tokens: 5_000 },
			{ ...tool("Agent"), tokens: 5_100 },
			{ text: "Two subagents started.", tokens: 5_200 },
			{ ...tool("probe_work"), tokens: 35_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 36_000 },
			"Resumed from the handoff.",
		],
	});
	try {
		await t.session.prompt("Start two subagents.");
		await t.session.prompt("Keep going.");
		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff.isError, false, handoff.text);
		const md = readFileSync(JSON.parse(handoff.text).path, "utf8");
		assert.match(md, /### Subagents \(pi-subagents\)\n\nid \| status \| description\nsa-42 \| running \| index the corpus/, md);
		assert.ok(!md.includes("sa-07"), "finished work is not resurrected");
		assert.deepEqual([...new Set(asked)].sort(), ["sa-07", "sa-42"], "each id from the tool results was asked for");
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
		delete globalThis[SUBAGENTS];
		env.restore();
	}
});

test("an empty but readable subagent task directory and a registry that cannot list: the handoff says unavailable, not none (issue 34)", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const SUBAGENTS = Symbol.for("pi-subagents:manager");
	const asked = [];
	// getRecord only (no listAgents): it would call anything it is asked about running.
	globalThis[SUBAGENTS] = {
		getRecord(id) {
			asked.push(id);
			return { id, status: "running", description: "asked" };
		},
	};
	const savedTmp = process.env.TMPDIR;
	const probe = probeTool();
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [probe.factory],
		steps: [
			{ text: "Looked around.", tokens: 5_000 },
			{ ...tool("probe_work"), tokens: 35_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 36_000 },
			"Resumed from the handoff.",
		],
	});
	try {
		// This session's task directory exists and can be listed, but holds no `<id>.output` file.
		const tmp = join(root, "tmp");
		const slug = t.cwd.replace(/[^A-Za-z0-9._-]/g, "-");
		const tasks = join(tmp, `pi-subagents-${process.getuid()}`, slug, t.sessionManager.getSessionId(), "tasks");
		mkdirSync(tasks, { recursive: true });
		process.env.TMPDIR = tmp;
		await t.session.prompt("Start.");
		await t.session.prompt("Keep going.");
		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff.isError, false, handoff.text);
		const path = JSON.parse(handoff.text).path;
		const md = readFileSync(path, "utf8");
		assert.match(md, /### Subagents \(pi-subagents\)\n\nunavailable \(/, md);
		assert.deepEqual(asked, [], "the registry was asked about no id");
		const sidecar = JSON.parse(readFileSync(path.replace(/\.md$/, ".json"), "utf8"));
		assert.deepEqual(sidecar.integrations.subagents, { available: false });
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		if (savedTmp === undefined) delete process.env.TMPDIR;
		else process.env.TMPDIR = savedTmp;
		await t.dispose();
		delete globalThis[SUBAGENTS];
		env.restore();
	}
});

/**
 * A session with the context guard off (Pi's own summarizer runs `/compact`), two scripted
 * answers, and a keep of one token so that the small session is compactable by that summarizer.
 */
async function guardOffSession() {
	const root = newRoot();
	const env = budgetEnv(root);
	writeGuards(root);
	globalThis[GUARD_FLAG] = true;
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: { ...enforce(), compaction: { enabled: false, keepRecentTokens: 1 } },
		steps: [
			{ text: "First answer.", tokens: 5_000 },
			{ text: "Second answer.", tokens: 5_100 },
		],
	});
	return { env, t };
}

test("guard off: /compact runs Pi's own summarizer; when it fails, the window's next compaction is Relay's mechanical reset, once (issue 24, item 6)", async () => {
	const { env, t } = await guardOffSession();
	try {
		await t.session.prompt("First.");
		await t.session.prompt("Second.");
		// Pass-through: Pi's summarizer writes the summary, not Relay.
		const before = t.requests.length;
		t.script("PI-SUMMARY-5150: the user asked twice.");
		await t.session.compact();
		assert.ok(t.requests.length > before, "Pi's summarizer called the model");
		const [native] = ofType(t, "compaction");
		assert.match(native.summary, /PI-SUMMARY-5150/);
		assert.ok(!native.summary.includes("<context_window>"), "not Relay's reset");

		// In the new window Pi's summarizer fails.
		t.script({ text: "Third answer.", tokens: 5_200 }, { error: "SUMMARIZER-DOWN-77" });
		await t.session.prompt("THIRD-REQUEST-6021.");
		const stderr = await captureStderr(() => assert.rejects(() => t.session.compact(), /SUMMARIZER-DOWN-77|summar/i));
		assert.ok(stderr.some((l) => /Pi's summarizer failed[\s\S]*mechanically/.test(l)), stderr.join("\n"));
		assert.equal(ofType(t, "compaction").length, 1, "nothing was compacted yet");
		assert.ok(env.events().some((e) => e.event === "native_compaction_failed"));

		// The next /compact in that window: Relay's mechanical reset, no model call.
		const calls = t.requests.length;
		await t.session.compact();
		assert.equal(t.requests.length, calls, "no summarizer call");
		const resets = ofType(t, "compaction");
		assert.equal(resets.length, 2);
		const fallback = resets[1];
		assert.equal(fallback.details.source, "manual");
		assert.match(fallback.summary, /<earlier_user_input[\s\S]*THIRD-REQUEST-6021/, "the recent requests, bounded, not a summary");
		assert.ok(env.events().some((e) => e.event === "native_compaction_fallback"));

		// Once: the window it opened is Pi's to compact again.
		t.script({ text: "Fourth answer.", tokens: 1_500 }, "PI-SUMMARY-2: later.");
		await t.session.prompt("Fourth.");
		const again = t.requests.length;
		await t.session.compact();
		assert.ok(t.requests.length > again, "Pi's summarizer runs again in the new window");
		assert.match(ofType(t, "compaction")[2].summary, /PI-SUMMARY-2/);
	} finally {
		await t.dispose();
		delete globalThis[GUARD_FLAG];
		env.restore();
	}
});

test("guard off: the mechanical fallback a failed summarizer earned survives /reload, and is spent once after it", async () => {
	const { env, t } = await guardOffSession();
	try {
		await t.session.prompt("FIRST-REQUEST-4410.");
		await t.session.prompt("Second.");
		t.script({ error: "SUMMARIZER-DOWN-91" });
		await captureStderr(() => assert.rejects(() => t.session.compact(), /SUMMARIZER-DOWN-91|summar/i));
		assert.equal(ofType(t, "compaction").length, 0, "nothing was compacted yet");

		// /reload: a new engine that knows only the branch.
		await t.session.reload();
		const calls = t.requests.length;
		await t.session.compact();
		assert.equal(t.requests.length, calls, "no summarizer call: Relay's mechanical reset");
		const [fallback] = ofType(t, "compaction");
		assert.ok(fallback, "the fallback compacted");
		assert.match(fallback.summary, /<earlier_user_input[\s\S]*FIRST-REQUEST-4410/);
		assert.deepEqual(
			ofType(t, "custom", "relay/native-fallback").map((e) => Boolean(e.data.spent)),
			[false, true],
			"the failure, then the fallback's use, are on the branch (in the window it ended)",
		);

		// Reloaded again in the window the fallback opened: Pi's summarizer runs there.
		await t.session.reload();
		t.script({ text: "Third answer.", tokens: 1_500 }, "PI-SUMMARY-3: later.");
		await t.session.prompt("Third.");
		const again = t.requests.length;
		await t.session.compact();
		assert.ok(t.requests.length > again, "Pi's summarizer runs again in the new window");
		assert.match(ofType(t, "compaction")[1].summary, /PI-SUMMARY-3/);
	} finally {
		await t.dispose();
		delete globalThis[GUARD_FLAG];
		env.restore();
	}
});
