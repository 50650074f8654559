// Window lifecycle across process and session boundaries on the real Pi agent loop (issue 24,
// items 10, 11, 13): a /reload in the middle of a run keeps the run tracked (Pi 1.3 lets one
// through), a forked or cloned root window keeps its id, and a resumed handoff window is checked
// against the workspace again when the workspace moved.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { VERSION } from "@earendil-works/pi-coding-agent";
import { fauxRuntime, joined, ofType, roles, scriptedModel, startRuntime, startSession, textOf, tool } from "./harness.mjs";
import { budgetEnv, enforce, HANDOFF, newRoot, WINDOW } from "./budget-helpers.mjs";

// Pi starts its own summarizer only on threshold crossings it can compact; a tiny keep makes any
// window compactable (pi-host-facts.md §5).
const COMPACTABLE = { compaction: { enabled: true, keepRecentTokens: 1 } };
const [MAJOR, MINOR] = VERSION.split(".").map(Number);
const REFUSES_RELOAD_MID_RUN = MAJOR > 1 || MINOR >= 6;

// ---------------------------------------------------------------------------------------------
// Item 13: a /reload in the middle of a run

/** Reload once, at the `turn_end` numbered `at` (1-based) of the session's runs. */
function reloadAtTurnEnd(at, attempts, session) {
	let turns = 0;
	return (pi) => {
		pi.on("turn_end", async () => {
			turns += 1;
			if (turns !== at) return;
			try {
				await session().session.reload();
				attempts.push("reloaded");
			} catch (e) {
				attempts.push(e.message);
			}
		});
	};
}

for (const at of [1, 2]) {
	test(`a /reload at turn end ${at} of a run that crosses the threshold keeps the run: one borrowed turn, the reset at its end, one continuation`, async () => {
		const attempts = [];
		let t;
		t = await startSession({
			contextWindow: 100_000,
			settings: COMPACTABLE,
			extraFactories: [reloadAtTurnEnd(at, attempts, () => t)],
			steps: [
				{ ...tool("notes_append_to_file", { path: "log.md", content: "did step A\n" }), tokens: 90_000 },
				// The borrowed turn: the reset follows as soon as it ends.
				{ ...tool("notes_write_file", { path: "state.md", content: "A done; next B" }), tokens: 91_000 },
				"Continuing with B from state.md.",
				"never requested",
			],
		});
		try {
			await t.session.prompt("Do A then B.");
			assert.equal(attempts.length, 1, "a reload was attempted mid-run");
			if (REFUSES_RELOAD_MID_RUN) assert.match(attempts[0], /Wait for the current response to finish before reloading/);
			else assert.equal(attempts[0], "reloaded", "Pi 1.3 reloads in the middle of the run");
			assert.equal(ofType(t, "custom_message", "relay/notes-steer").length, 1, "exactly one borrowed turn");
			assert.match(joined(t.requests[1]), /will be reset as soon as you finish this turn/);
			const compactions = ofType(t, "compaction");
			assert.equal(compactions.length, 1, "exactly one reset");
			assert.equal(compactions[0].details.source, "fallback");
			assert.match(compactions[0].summary, /state\.md/);
			assert.equal(ofType(t, "custom_message", "relay/continue").length, 1, "the reset's one continuation");
			assert.equal(t.requests.length, 3, "no summarizer call, no turn after the borrowed one in the old window");
			assert.deepEqual(roles(t.requests[2]), ["user", "user"]);
			assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Continuing with B from state.md.");
			assert.deepEqual(t.errors, []);
		} finally {
			await t.dispose();
		}
	});
}

// ---------------------------------------------------------------------------------------------
// Item 11: /fork and /clone of the root window

/**
 * An AgentSessionRuntime (what Pi's /fork, /clone and /resume replace the session in) with Relay
 * and the faux provider; `steps` as in harness.mjs, a function step gets the request's context.
 */
async function runtimeSession({ contextWindow = 100_000, settings = {}, steps = [] } = {}) {
	const root = mkdtempSync(join(tmpdir(), "relay-lifecycle-"));
	const agentDir = join(root, "agent");
	const cwd = join(root, "work");
	mkdirSync(agentDir, { recursive: true });
	mkdirSync(cwd, { recursive: true });
	writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ retry: { enabled: false }, ...settings }));
	const saved = { PI_CODING_AGENT_DIR: process.env.PI_CODING_AGENT_DIR, PI_CONTEXT_BUDGET_STATE_DIR: process.env.PI_CONTEXT_BUDGET_STATE_DIR, PI_CONTEXT_BUDGET_CONFIG: process.env.PI_CONTEXT_BUDGET_CONFIG };
	process.env.PI_CODING_AGENT_DIR = agentDir;
	process.env.PI_CONTEXT_BUDGET_STATE_DIR = join(root, "state");
	delete process.env.PI_CONTEXT_BUDGET_CONFIG;
	const { requests, faux, loaderOptions } = scriptedModel({ contextWindow, steps });
	const modelRuntime = await fauxRuntime(agentDir, faux);
	const errors = [];
	const runtime = await startRuntime({ cwd, agentDir, sessionDir: join(root, "sessions"), modelRuntime, loaderOptions, errors });
	return {
		runtime,
		requests,
		errors,
		root,
		cwd,
		branch: () => runtime.session.sessionManager.getBranch(),
		sessionId: () => runtime.session.sessionManager.getSessionId(),
		async dispose() {
			await runtime.dispose();
			for (const [k, v] of Object.entries(saved)) {
				if (v === undefined) delete process.env[k];
				else process.env[k] = v;
			}
		},
	};
}

const customOf = (branch, customType) => branch.filter((e) => e.type === "custom_message" && e.customType === customType);
const toolResultsOf = (branch, name) =>
	branch
		.filter((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === name)
		.map((e) => ({ text: textOf(e.message.content), isError: e.message.isError }));

for (const how of ["clone", "fork"]) {
	test(`/${how} in the root window keeps its id: the copied reminder stands, and history_* calls with the id the copied entries name work`, async () => {
		let oldRoot;
		const t = await runtimeSession({
			contextWindow: 100_000,
			settings: { compaction: { enabled: false } },
			steps: [
				{ text: "Big answer about ROOT-TOPIC-5150.", tokens: 70_000 },
				{ text: "Reminded.", tokens: 71_000 },
				{ text: "Third answer.", tokens: 71_500 },
				// In the copy: the model looks the root window up by the id it was given, then answers.
				() => tool("history_search_contents", { query: "ROOT-TOPIC-5150", window_id: oldRoot }),
				{ text: "Found it.", tokens: 72_000 },
				{ text: "Still here.", tokens: 73_000 },
			],
		});
		try {
			await t.runtime.session.prompt("One.");
			await t.runtime.session.prompt("Two.");
			await t.runtime.session.prompt("Three.");
			const [reminder] = customOf(t.branch(), "relay/reminder");
			assert.ok(reminder, "the root window was reminded");
			oldRoot = reminder.details.windowId;
			assert.equal(oldRoot, `pcw:${t.sessionId()}:root`);
			const before = t.sessionId();
			if (how === "clone") await t.runtime.fork(t.branch().at(-1).id, { position: "at" });
			else {
				const third = t.branch().find((e) => e.type === "message" && e.message.role === "user" && textOf(e.message.content) === "Three.");
				await t.runtime.fork(third.id);
			}
			assert.notEqual(t.sessionId(), before, "a new session");
			assert.equal(customOf(t.branch(), "relay/reminder").length, 1, "the reminder was copied");

			await t.runtime.session.prompt("Four: find the root topic.");
			await t.runtime.session.prompt("Five.");
			const [search] = toolResultsOf(t.branch(), "history_search_contents");
			assert.equal(search.isError, false, search.text);
			assert.match(search.text, /ROOT-TOPIC-5150/);
			assert.ok(search.text.includes(oldRoot), search.text);
			assert.equal(customOf(t.branch(), "relay/reminder").length, 1, "no second reminder for the same window");
			assert.equal(customOf(t.runtime.session.sessionManager.getEntries(), "relay/reminder").length, 1);
			assert.deepEqual(t.errors, []);
		} finally {
			await t.dispose();
		}
	});
}

// ---------------------------------------------------------------------------------------------
// Item 10: a resumed handoff window is checked against the workspace again

function git(cwd, ...args) {
	return execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", ...args], {
		cwd,
		encoding: "utf8",
		env: { ...process.env, GIT_CEILING_DIRECTORIES: join(cwd, "..") },
	}).trim();
}

const staleMessages = (request) => request.filter((m) => m.role === "user" && textOf(m.content).includes("<stale_handoff>"));

/**
 * A handoff window checked in a first process (nothing had changed), the process ends, `between`
 * changes the workspace, and a second process resumes the session file and prompts once.
 */
async function resumedHandoffWindow(between) {
	const root = newRoot();
	const env = budgetEnv(root);
	const first = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("context_handoff", { ...HANDOFF, files_to_read: ["parser.rs"] }), tokens: 6_000 },
			{ text: "Resumed in window two.", tokens: 7_000 },
		],
	});
	git(first.cwd, "init", "-q", "-b", "trunk");
	writeFileSync(join(first.cwd, "parser.rs"), "fn parse() {}\n");
	git(first.cwd, "add", "parser.rs");
	git(first.cwd, "commit", "-q", "-m", "first");
	await first.session.prompt("Start.");
	await first.session.prompt("Hand off now.");
	const file = first.sessionManager.getSessionFile();
	const checks = ofType(first, "custom", "relay/stale-check");
	assert.equal(checks.length, 1, "the first process checked the window");
	assert.equal(staleMessages(first.requests[2]).length, 0, "nothing had changed then");
	await first.dispose();

	between(first.cwd);
	const t = await startSession({
		root,
		sessionFile: file,
		contextWindow: WINDOW,
		settings: enforce(),
		steps: [{ text: "Working after the resume.", tokens: 7_500 }, { text: "And on.", tokens: 7_600 }],
	});
	await t.session.prompt("Go on.");
	await t.session.prompt("Go on again.");
	return { t, env, windowId: checks[0].data.windowId };
}

test("a handoff window resumed after commits landed is checked again: the resumed process's requests say what moved", async () => {
	const { t, env, windowId } = await resumedHandoffWindow((cwd) => {
		writeFileSync(join(cwd, "parser.rs"), "fn parse() { todo!() }\n");
		git(cwd, "commit", "-q", "-am", "landed: RESUME-COMMIT-8841");
	});
	try {
		const [first, second] = t.requests;
		const [stale] = staleMessages(first);
		assert.ok(stale, joined(first));
		const text = textOf(stale.content);
		assert.match(text, /checked again when this session was resumed/i);
		assert.match(text, /1 commit\(s\) landed since the handoff, newest first:\n {2}- [0-9a-f]+ landed: RESUME-COMMIT-8841\n/);
		assert.ok(text.includes("- Files to read that changed since the handoff (1):\n  - parser.rs"), text);
		assert.equal(first.filter((m) => m.role !== "system").indexOf(stale), 1, "right after the boot block");
		assert.deepEqual(second.slice(0, first.length), first, "the next request carries the same message at the same place");
		const records = ofType(t, "custom", "relay/stale-check");
		assert.equal(records.length, 2, "the re-check is recorded next to the first check");
		assert.equal(records[1].data.windowId, windowId);
		assert.equal(records[1].data.recheck, true);
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("a handoff window resumed with the workspace as it was at its last check records nothing and shows nothing", async () => {
	const { t, env } = await resumedHandoffWindow(() => {});
	try {
		for (const request of t.requests) assert.equal(staleMessages(request).length, 0, joined(request));
		assert.equal(ofType(t, "custom", "relay/stale-check").length, 1, "only the first process's check");
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
		env.restore();
	}
});
