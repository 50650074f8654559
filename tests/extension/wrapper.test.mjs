// Hosting identity under the pi-session wrapper (issue 11, part 2) on the real Pi agent loop:
// only the primary runtime whose parent process is the wrapper owns it; an SDK child session in
// the same process, or a process whose parent is not the wrapper, never does; an armed fallback
// with an owned wrapper writes the signed marker at the settle point and asks Pi to shut down at
// agent_settled; when the marker cannot be written (a missing launch prompt), the window is reset
// in-process instead.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { captureStderr, fifoWithWatchdog, inTime, ofType, resultsOf, startSession, tool } from "./harness.mjs";
import { budgetEnv, enforce, HANDOFF, newRoot, probeTool, THRESHOLDS, WINDOW } from "./budget-helpers.mjs";

const NONCE = "0123456789abcdef0123456789abcdef";
const VARS = ["PI_RELAUNCH_MARKER", "PI_RELAUNCH_KEY_FILE", "PI_SESSION_WRAPPER", "PI_SESSION_WRAPPER_PID", "PI_SESSION_LAUNCH_ID"];
// Where Relay keeps what it took from the wrapper (extension/src/settings.ts).
const SLOT = Symbol.for("relay.pi-session-wrapper");

/**
 * Set the wrapper's variables and key file as pi-session would for a child whose parent is
 * `wrapperPid`; `restore()` undoes it and forgets what Relay took.
 */
function wrapperEnv(root, wrapperPid) {
	const saved = Object.fromEntries(VARS.map((k) => [k, process.env[k]]));
	const dir = join(root, "relaunch");
	mkdirSync(dir, { recursive: true, mode: 0o700 });
	const marker = join(dir, `${wrapperPid}-${NONCE}.json`);
	const keyFile = join(dir, `${wrapperPid}-${NONCE}.key`);
	const key = randomBytes(32).toString("hex");
	writeFileSync(keyFile, key, { mode: 0o600 });
	process.env.PI_RELAUNCH_MARKER = marker;
	process.env.PI_RELAUNCH_KEY_FILE = keyFile;
	process.env.PI_SESSION_WRAPPER = "pi-session test";
	process.env.PI_SESSION_WRAPPER_PID = String(wrapperPid);
	process.env.PI_SESSION_LAUNCH_ID = NONCE;
	return {
		marker,
		keyFile,
		key,
		restore() {
			for (const [k, v] of Object.entries(saved)) {
				if (v === undefined) delete process.env[k];
				else process.env[k] = v;
			}
			delete globalThis[SLOT];
		},
	};
}

/** The marker the wrapper would read: its fields, after checking its MAC with the launch's key. */
function openMarker(path, key) {
	const text = readFileSync(path, "utf8");
	const prefix = '{"marker":';
	assert.ok(text.startsWith(prefix), text);
	const body = text.slice(prefix.length, text.lastIndexOf(',"mac":"'));
	const { marker, mac } = JSON.parse(text);
	const expected = createHmac("sha256", Buffer.from(key, "hex")).update(`relay pi-session relaunch marker v1\n${body}`).digest("hex");
	assert.equal(mac, expected, "signed with the launch's key");
	return marker;
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
		// Relay took the key and the variables when it loaded: nothing Pi starts inherits them.
		for (const name of VARS) assert.equal(process.env[name], undefined, name);
		assert.equal(existsSync(wrapper.keyFile), false, "the key file is removed");
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

test("after /reload (Relay evaluated again, the variables and key file long gone) the session still owns the wrapper", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const wrapper = wrapperEnv(root, process.ppid);
	const t = await startSession({ root, contextWindow: WINDOW, settings: enforce(), steps: ["Hi.", "Again."] });
	try {
		await t.session.prompt("Hello.");
		assert.equal(process.env.PI_RELAUNCH_KEY_FILE, undefined);
		await t.session.reload();
		await t.session.prompt("Hello again.");
		assert.deepEqual(statusOf(env, t).wrapper, { owned: true, reason: `started by pi-session (pid ${process.ppid})` });
	} finally {
		await t.dispose();
		wrapper.restore();
		env.restore();
	}
});

test("without the launch's key (the key file was gone when Relay loaded) the session does not own the wrapper", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const wrapper = wrapperEnv(root, process.ppid);
	rmSync(wrapper.keyFile);
	const t = await startSession({ root, contextWindow: WINDOW, settings: enforce(), steps: ["Hi."] });
	try {
		await t.session.prompt("Hello.");
		const s = statusOf(env, t);
		assert.equal(s.wrapper.owned, false);
		assert.equal(
			s.wrapper.reason,
			`the relaunch key file ${wrapper.keyFile} could not be read: no such file`,
		);
		for (const name of VARS) assert.equal(process.env[name], undefined, name);
	} finally {
		await t.dispose();
		wrapper.restore();
		env.restore();
	}
});

test("a relaunch key file replaced by a FIFO does not hold Pi's start-up: the session does not own the wrapper and says why", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const wrapper = wrapperEnv(root, process.ppid);
	rmSync(wrapper.keyFile);
	// Relay reads the key when Pi loads it; a blocking read would hold Pi until the watchdog.
	const stop = fifoWithWatchdog(wrapper.keyFile, 10);
	let t, starting;
	try {
		t = await inTime(() => (starting = startSession({ root, contextWindow: WINDOW, settings: enforce(), steps: ["Hi."] })), 5000, "the session start");
		await t.session.prompt("Hello.");
		const s = statusOf(env, t);
		assert.equal(s.wrapper.owned, false);
		assert.equal(s.wrapper.reason, `the relaunch key file ${wrapper.keyFile} could not be read: a FIFO, not a regular file`);
	} finally {
		stop();
		await (t ?? (await starting?.catch(() => undefined)))?.dispose();
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

test("the hard fallback with an owned wrapper writes a signed marker and requests Pi's shutdown at agent_settled, once, instead of a mechanical reset", async () => {
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

		const marker = openMarker(wrapper.marker, wrapper.key);
		const handoffPath = statusOf(env, t).lastHandoff.path;
		assert.deepEqual(marker, { cwd: t.cwd, launchPrompt: null, handoff: handoffPath, sessionFile: t.sessionManager.getSessionFile() });
		assert.ok(existsSync(marker.handoff));
		assert.equal(statSync(wrapper.marker).mode & 0o777, 0o600);
		assert.equal(env.events().filter((e) => e.event === "relaunch_requested").length, 1);
		// The key is in no file Relay writes.
		const status = readFileSync(join(env.stateDir, "status", `${t.sessionManager.getSessionId()}.json`), "utf8");
		const events = readFileSync(join(env.stateDir, "events.jsonl"), "utf8");
		assert.ok(!status.includes(wrapper.key) && !events.includes(wrapper.key));
	} finally {
		await t.dispose();
		wrapper.restore();
		env.restore();
	}
});

test("a relaunch whose launch prompt file is missing falls back to the in-process reset at the same settle point", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const wrapper = wrapperEnv(root, process.ppid);
	const bash = probeTool({ name: "bash" });
	const calls = [];
	const missing = join(root, "gone", "launch.md");
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [bash.factory],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			// The handoff names a launch prompt that does not exist (a typo, a git clean).
			{ ...tool("context_handoff", { ...HANDOFF, launch_prompt: missing }), tokens: 6_000 },
			{ text: "Resumed from the handoff.", tokens: 1_500 },
			...HARD_STEPS,
			{ text: "After the reset.", tokens: 2_000 },
		],
		bindings: { shutdownHandler: () => calls.push("shutdown") },
	});
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("Hand off now.");
		assert.equal(ofType(t, "compaction").length, 1);
		const stderr = await captureStderr(() => t.session.prompt("Run bash."));
		assert.equal(bash.runs, 0);
		// No marker, no shutdown: the mechanical reset Relay does without the wrapper.
		assert.deepEqual(calls, []);
		assert.equal(existsSync(wrapper.marker), false);
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 2);
		assert.equal(compactions[1].details.source, "forced");
		assert.deepEqual(
			stderr.filter((l) => l.startsWith("relay:")),
			[`relay: Pi is not relaunched in a fresh process: launchPrompt ${missing} is not an existing file. The window is reset in-process instead, as without pi-session.`],
		);
		const failed = env.events().filter((e) => e.event === "relaunch_failed");
		assert.equal(failed.length, 1);
		assert.equal(failed[0].why, `launchPrompt ${missing} is not an existing file`);
		// The next prompt runs in the new window.
		await t.session.prompt("Go on.");
		assert.equal(ofType(t, "compaction").length, 2);
		assert.deepEqual(calls, []);
	} finally {
		await t.dispose();
		wrapper.restore();
		env.restore();
	}
});
