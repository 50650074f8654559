// Hosting identity under the pi-session wrapper (issue 11, part 2) on the real Pi agent loop:
// only the primary runtime whose parent process is the wrapper owns it; an SDK child session in
// the same process, or a process whose parent is not the wrapper, never does; an armed fallback
// with an owned wrapper writes the marker and asks Pi to shut down at agent_settled.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { ofType, resultsOf, startSession, tool } from "./harness.mjs";
import { budgetEnv, enforce, HANDOFF, newRoot, probeTool, THRESHOLDS, WINDOW } from "./budget-helpers.mjs";

const NONCE = "0123456789abcdef0123456789abcdef";
const VARS = ["PI_RELAUNCH_MARKER", "PI_SESSION_WRAPPER", "PI_SESSION_WRAPPER_PID", "PI_SESSION_LAUNCH_ID"];

/** Set the wrapper's variables as pi-session would for a child whose parent is `wrapperPid`. */
function wrapperEnv(root, wrapperPid) {
	const saved = Object.fromEntries(VARS.map((k) => [k, process.env[k]]));
	const marker = join(root, "relaunch", `${wrapperPid}-${NONCE}.json`);
	process.env.PI_RELAUNCH_MARKER = marker;
	process.env.PI_SESSION_WRAPPER = "pi-session test";
	process.env.PI_SESSION_WRAPPER_PID = String(wrapperPid);
	process.env.PI_SESSION_LAUNCH_ID = NONCE;
	return {
		marker,
		restore() {
			for (const [k, v] of Object.entries(saved)) {
				if (v === undefined) delete process.env[k];
				else process.env[k] = v;
			}
		},
	};
}

const statusOf = (env, t) => JSON.parse(readFileSync(join(env.stateDir, "status", `${t.sessionManager.getSessionId()}.json`), "utf8"));

// Past hard without a handoff: a blocked bash, then the model stops twice (the second stop is
// after the one continuation that asks for a handoff).
const HARD_STEPS = [
	{ ...tool("bash"), tokens: 65_000 },
	{ text: "I stop here.", tokens: 65_500 },
	{ text: "Still stopping.", tokens: 65_600 },
];

test("the primary session under the wrapper owns it; an SDK child session in the same process does not, never writes the marker and is never shut down", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const wrapper = wrapperEnv(root, process.ppid);
	const shutdowns = { primary: 0, child: 0 };
	const bash = probeTool({ name: "bash" });
	const primary = await startSession({ root, contextWindow: WINDOW, settings: enforce(), steps: ["Hi."], bindings: { shutdownHandler: () => shutdowns.primary++ } });
	let child;
	try {
		await primary.session.prompt("Hello.");
		assert.deepEqual(statusOf(env, primary).wrapper, { owned: true, reason: `started by pi-session (pid ${process.ppid})` });

		child = await startSession({
			root: newRoot(),
			contextWindow: WINDOW,
			settings: enforce({ subagent: THRESHOLDS }),
			extraFactories: [bash.factory],
			steps: [{ text: "Child started.", tokens: 5_000 }, ...HARD_STEPS],
			bindings: { shutdownHandler: () => shutdowns.child++ },
		});
		await child.session.prompt("Start.");
		await child.session.prompt("Run bash.");
		const s = statusOf(env, child);
		assert.equal(s.role, "subagent");
		assert.equal(s.wrapper.owned, false);
		assert.match(s.wrapper.reason, /SDK child session \(subagent\) never owns/);
		assert.equal(bash.runs, 0, "the fallback blocked bash");
		assert.ok(resultsOf(child, "bash")[0].isError);
		// The in-process path: a mechanical reset, no marker, no shutdown.
		assert.equal(ofType(child, "compaction").length, 1);
		assert.equal(ofType(child, "compaction")[0].details.source, "forced");
		assert.equal(existsSync(wrapper.marker), false);
		assert.deepEqual(shutdowns, { primary: 0, child: 0 });
	} finally {
		await child?.dispose();
		await primary.dispose();
		wrapper.restore();
		env.restore();
	}
});

test("wrapper variables naming a pid that is not this process's parent do not make it the owner", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	// A descendant of Pi inherits the variables, but its parent is not the wrapper.
	const wrapper = wrapperEnv(root, process.pid);
	const t = await startSession({ root, contextWindow: WINDOW, settings: enforce(), steps: ["Hi."] });
	try {
		await t.session.prompt("Hello.");
		const s = statusOf(env, t);
		assert.equal(s.wrapper.owned, false);
		assert.equal(s.wrapper.reason, `this process (pid ${process.pid}) is not the wrapper's child: its parent is ${process.ppid}, the wrapper is ${process.pid}`);
	} finally {
		await t.dispose();
		wrapper.restore();
		env.restore();
	}
});

test("the hard fallback with an owned wrapper writes a valid marker and requests Pi's shutdown at agent_settled, once, instead of a mechanical reset", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const wrapper = wrapperEnv(root, process.ppid);
	const bash = probeTool({ name: "bash" });
	const calls = [];
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [bash.factory],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			// A handoff the relaunch can continue from, committed in-process.
			{ ...tool("context_handoff", HANDOFF), tokens: 6_000 },
			{ text: "Resumed from the handoff.", tokens: 1_500 },
			...HARD_STEPS,
		],
		bindings: { shutdownHandler: () => calls.push({ marker: existsSync(wrapper.marker), idle: !t.session.isStreaming }) },
	});
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("Hand off now.");
		const [handoff] = ofType(t, "compaction");
		assert.equal(handoff.details.kind, "handoff");
		assert.deepEqual(calls, [], "no shutdown before the fallback");
		await t.session.prompt("Run bash.");

		assert.equal(bash.runs, 0);
		const [blocked] = resultsOf(t, "bash");
		assert.ok(blocked.isError);
		assert.match(blocked.text, /Pi then restarts in a fresh process \(pi-session\)/);
		// Shutdown once, at the settle point, after the marker was written.
		assert.deepEqual(calls, [{ marker: true, idle: true }]);
		assert.equal(ofType(t, "compaction").length, 1, "no mechanical reset with an owned wrapper");

		const marker = JSON.parse(readFileSync(wrapper.marker, "utf8"));
		const handoffPath = statusOf(env, t).lastHandoff.path;
		assert.deepEqual(marker, { cwd: t.cwd, launchPrompt: null, handoff: handoffPath, sessionFile: t.sessionManager.getSessionFile() });
		assert.ok(existsSync(marker.handoff));
		assert.equal(statSync(wrapper.marker).mode & 0o777, 0o600);
		assert.equal(env.events().filter((e) => e.event === "relaunch_requested").length, 1);
	} finally {
		await t.dispose();
		wrapper.restore();
		env.restore();
	}
});
