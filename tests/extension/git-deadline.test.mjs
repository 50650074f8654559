// context_handoff's git metadata never blocks Pi's event loop (real Pi agent loop, the addon users
// load): a `git` that hangs is put first on PATH; while the handoff waits for it, a timer set when
// the tool starts fires on time; the handoff completes at the collection's one deadline (3 s) with
// the metadata marked unknown, and every process the fake git started is gone.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { resultsOf, ofType, startSession, textOf, tool } from "./harness.mjs";

const GIT_SLEEP_S = 10;
const DEADLINE_MS = 3_000;

/** Whether a process is gone, or a zombie waiting for its new parent to reap it (Linux /proc). */
function dead(pid) {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
		return stat.slice(stat.lastIndexOf(")") + 1).trim().startsWith("Z");
	} catch {
		return true;
	}
}

/** Resolves when every pid is dead; SIGKILL lands asynchronously, so allow a bounded moment. */
async function waitAllDead(pids, boundMs = 5_000) {
	const until = performance.now() + boundMs;
	while (pids.some((p) => !dead(p)) && performance.now() < until) await new Promise((r) => setTimeout(r, 10));
	return pids.filter((p) => !dead(p));
}

test("a hanging git neither blocks the event loop nor the handoff: metadata unknown at the 3 s deadline, children killed", async () => {
	const root = mkdtempSync(join(tmpdir(), "relay-git-deadline-"));
	const bin = join(root, "bin");
	mkdirSync(bin);
	const pidFile = join(root, "git-pids");
	// The fake git records its pid and its child's, then waits for a child that sleeps 10 s.
	writeFileSync(join(bin, "git"), `#!/bin/sh\necho $$ >> '${pidFile}'\nsleep ${GIT_SLEEP_S} &\necho $! >> '${pidFile}'\nwait\n`);
	chmodSync(join(bin, "git"), 0o755);

	const saved = {
		PATH: process.env.PATH,
		PI_CONTEXT_BUDGET_STATE_DIR: process.env.PI_CONTEXT_BUDGET_STATE_DIR,
		PI_CONTEXT_BUDGET_CONFIG: process.env.PI_CONTEXT_BUDGET_CONFIG,
	};
	process.env.PATH = `${bin}:${process.env.PATH}`;
	process.env.PI_CONTEXT_BUDGET_STATE_DIR = join(root, "state");
	// No budget file: the settings' relay.budget applies (a missing default file under the
	// harness's agent dir is silent; a named missing file would select the defaults).
	delete process.env.PI_CONTEXT_BUDGET_CONFIG;

	// Times from the tool_call hook (just before the tool runs) to the timer and the tool result.
	const clock = {};
	const probe = (pi) => {
		pi.on("tool_call", (event) => {
			if (event.toolName !== "context_handoff") return undefined;
			clock.started = performance.now();
			setTimeout(() => {
				clock.timer = performance.now();
			}, 50);
			return undefined;
		});
		pi.on("tool_result", (event) => {
			if (event.toolName === "context_handoff") clock.done = performance.now();
			return undefined;
		});
	};

	const t = await startSession({
		root,
		contextWindow: 200_000,
		settings: {
			compaction: { enabled: false },
			relay: { budget: { mode: "enforce", main: { soft: 20_000, handoff: 30_000, hard: 60_000, minProgress: 1_000 } } },
		},
		extraFactories: [probe],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("context_handoff", { goal: "GOAL-1: port the importer", next_step: "NEXT-2: run tests", facts: "FACTS-3: parser done" }), tokens: 6_000 },
			"Resumed.",
		],
	});
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("Hand off.");

		// (a) The event loop stayed free: the 50 ms timer fired on time, before the handoff ended.
		assert.ok(clock.started !== undefined && clock.timer !== undefined && clock.done !== undefined, JSON.stringify(clock));
		const lateness = clock.timer - clock.started - 50;
		assert.ok(lateness < 500, `the timer fired ${lateness.toFixed(0)} ms late`);
		assert.ok(clock.timer < clock.done, "the timer fired while the handoff was still waiting for git");

		// (b) The handoff completed, with the git metadata marked unknown.
		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff.isError, false, handoff.text);
		const { written, path } = JSON.parse(handoff.text);
		assert.equal(written, true);
		assert.ok(path.startsWith(join(t.cwd, ".ai-work", "handoffs")), "no repository root: written under the cwd");
		assert.match(readFileSync(path, "utf8"), /^- Git branch: \(unknown: git could not be queried\)$/m);
		const sidecar = JSON.parse(readFileSync(path.replace(/\.md$/, ".json"), "utf8"));
		assert.equal(sidecar.git.state, "unknown");
		assert.equal(sidecar.git.head, null);
		assert.equal(ofType(t, "compaction").length, 1, "the handoff committed");
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Resumed.");

		// (c) At the one deadline for all commands, not after the fake git's 10 s sleep (nor 3 × 3 s).
		const took = clock.done - clock.started;
		assert.ok(took >= DEADLINE_MS - 100, `took ${took.toFixed(0)} ms: the fake git did hang`);
		assert.ok(took < DEADLINE_MS + 2_000, `took ${took.toFixed(0)} ms: one deadline for everything`);

		// The fake git ran once (the deadline stopped the rest) and nothing it started survives.
		assert.ok(existsSync(pidFile), "the fake git ran");
		const pids = readFileSync(pidFile, "utf8").split("\n").filter(Boolean);
		assert.equal(pids.length, 2, `one git and its child: ${pids}`);
		assert.deepEqual(await waitAllDead(pids), [], "no orphan left running");
	} finally {
		await t.dispose();
		for (const [key, value] of Object.entries(saved)) {
			if (value === undefined) delete process.env[key];
			else process.env[key] = value;
		}
	}
});
