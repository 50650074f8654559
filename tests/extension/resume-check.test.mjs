// Resume checks (issue 10, part 3) on the real Pi agent loop: the operator's command runs right
// before a handoff is written (its result in the handoff file under `## Resume check`) and again
// after the committed reset, before the new window's first request, which carries the fresh result
// (and every later request of the window carries it unchanged, at the same place). Not in observe,
// not for a subagent, not without a configured command; never from the model; a failing check
// does not stop the handoff.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { joined, ofType, resultsOf, roles, startSession, textOf, tool } from "./harness.mjs";
import { budgetEnv, enforce, HANDOFF, newRoot, WINDOW } from "./budget-helpers.mjs";

/** A check that counts its runs in `<root>/runs`, prints which run it is and where, and fails. */
function countingCheck(root, exit = 3) {
	const runs = join(root, "runs");
	return {
		command: `n=$(( $(cat '${runs}' 2>/dev/null || echo 0) + 1 )); echo $n > '${runs}'; echo "RESUME-CHECK-RUN-$n in $PWD"; echo "to stderr" >&2; exit ${exit}`,
		runs: () => (existsSync(runs) ? Number(readFileSync(runs, "utf8").trim()) : 0),
	};
}

function withEnv(key, value) {
	const saved = process.env[key];
	if (value === undefined) delete process.env[key];
	else process.env[key] = value;
	return () => {
		if (saved === undefined) delete process.env[key];
		else process.env[key] = saved;
	};
}

/** Start, hand off (the check runs before it is written and after the reset), then one more prompt. */
async function handoffScenario({ settings = enforce(), sessionName, handoff = HANDOFF } = {}) {
	const root = newRoot();
	const env = budgetEnv(root);
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings,
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("context_handoff", handoff), tokens: 6_000 },
			{ text: "Resumed.", tokens: 7_000 },
			{ text: "Still in window two.", tokens: 7_500 },
		],
	});
	if (sessionName) t.sessionManager.appendSessionInfo(sessionName);
	await t.session.prompt("Start.");
	await t.session.prompt("Hand off now.");
	await t.session.prompt("Next step, please.");
	return { t, env, root };
}

const checkMessages = (request) => request.filter((m) => m.role === "user" && textOf(m.content).includes("<resume_check>"));

test("PI_RESUME_CHECK runs before the handoff is written and after the reset; the new window's requests carry the fresh result", async () => {
	const root = newRoot();
	const check = countingCheck(root);
	const restore = withEnv("PI_RESUME_CHECK", check.command);
	const { t, env } = await handoffScenario().finally(restore);
	try {
		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff.isError, false, handoff.text);
		const { path } = JSON.parse(handoff.text);
		// Before the handoff: its result is in the file, the failure (exit 3) visible.
		const md = readFileSync(path, "utf8");
		const section = md.split("## Resume check\n\n")[1];
		assert.ok(section, md);
		assert.match(section, /Command: n=\$\(\( .*\(from PI_RESUME_CHECK\)/);
		assert.match(section, /^Exit: 3 \(the check failed\)$/m);
		assert.ok(section.includes(`RESUME-CHECK-RUN-1 in ${t.cwd}\nto stderr\n`), section);
		assert.ok(Buffer.byteLength(section) <= 4096);
		const sidecar = JSON.parse(readFileSync(path.replace(/\.md$/, ".json"), "utf8"));
		assert.deepEqual(sidecar.resumeCheck.status, { kind: "exited", code: 3 });
		// A failing check does not stop the handoff: it committed and the run went on.
		assert.equal(ofType(t, "compaction").length, 1);

		// After the reset, before the first request of the new window: run 2, in that request,
		// right after the boot block.
		assert.equal(check.runs(), 2, "once per boundary: before the handoff and after the reset");
		const first = t.requests[2];
		assert.deepEqual(roles(first), ["user", "user", "user"], "boot block, resume check, continuation");
		const [fresh] = checkMessages(first);
		assert.ok(fresh, joined(first));
		assert.equal(first.filter((m) => m.role !== "system").indexOf(fresh), 1, "right after the boot block");
		assert.ok(textOf(fresh.content).includes("RESUME-CHECK-RUN-2"), textOf(fresh.content));
		assert.ok(!textOf(fresh.content).includes("RESUME-CHECK-RUN-1"));
		assert.ok(Buffer.byteLength(textOf(fresh.content)) <= 4096);
		// The next request of the window carries the same message at the same place (cache-stable),
		// and the check did not run again.
		const later = t.requests[3];
		assert.deepEqual(later.slice(0, first.length), first, "the window's first request is the head of the next one");
		assert.ok(joined(later).includes("Next step, please."));
		assert.equal(check.runs(), 2);
		// Recorded once on the branch, for the new window.
		const records = ofType(t, "custom", "relay/resume-check");
		assert.equal(records.length, 1);
		assert.equal(records[0].data.windowId, ofType(t, "compaction")[0].details.windowId);
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Still in window two.");
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("resumeChecks by the exact session name; a different name runs nothing", async () => {
	const root = newRoot();
	const check = countingCheck(root, 0);
	const restore = withEnv("PI_RESUME_CHECK", undefined);
	const settings = enforce();
	settings.relay.budget.resumeChecks = { coordinator: check.command };
	try {
		const other = await handoffScenario({ settings, sessionName: "Coordinator" });
		try {
			assert.equal(ofType(other.t, "compaction").length, 1, "the handoff committed");
			assert.equal(check.runs(), 0, "names match exactly");
			assert.ok(!readFileSync(JSON.parse(resultsOf(other.t, "context_handoff")[0].text).path, "utf8").includes("## Resume check"));
		} finally {
			await other.t.dispose();
			other.env.restore();
		}
		const { t, env } = await handoffScenario({ settings, sessionName: "coordinator" });
		try {
			assert.equal(check.runs(), 2);
			const md = readFileSync(JSON.parse(resultsOf(t, "context_handoff")[0].text).path, "utf8");
			assert.match(md, /\(from resumeChecks\["coordinator"\]\)\nExit: 0 \(success\)/);
			const [fresh] = checkMessages(t.requests[2]);
			assert.ok(fresh && textOf(fresh.content).includes("RESUME-CHECK-RUN-2"));
		} finally {
			await t.dispose();
			env.restore();
		}
	} finally {
		restore();
	}
});

test("no resume check in observe, for a subagent, or without a configured command; the model cannot set one", async () => {
	const root = newRoot();
	const check = countingCheck(root, 0);
	const cases = [
		{ name: "observe", env: check.command, settings: { compaction: { enabled: false }, relay: { budget: { mode: "observe", main: enforce().relay.budget.main } } } },
		{ name: "subagent", env: check.command, settings: { ...enforce(), relay: { ...enforce().relay, role: "subagent" } } },
	];
	for (const c of cases) {
		const restore = withEnv("PI_RESUME_CHECK", c.env);
		const { t, env } = await handoffScenario({ settings: c.settings }).finally(restore);
		try {
			assert.equal(check.runs(), 0, c.name);
			assert.equal(ofType(t, "custom", "relay/resume-check").length, 0, c.name);
			assert.ok(!t.requests.some((r) => checkMessages(r).length > 0), c.name);
			if (c.name === "subagent") assert.equal(ofType(t, "compaction").length, 1, "the subagent's handoff committed without a check");
		} finally {
			await t.dispose();
			env.restore();
		}
	}

	// Nothing configured: a note named like the setting, and a handoff that names a command, run
	// nothing (the command comes only from the operator).
	const marker = join(root, "pwned");
	const restore = withEnv("PI_RESUME_CHECK", undefined);
	const env = budgetEnv(root);
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		steps: [
			{ ...tool("notes_write_file", { path: "PI_RESUME_CHECK", content: `touch '${marker}'` }), tokens: 5_000 },
			{ ...tool("context_handoff", { ...HANDOFF, resume_check: `touch '${marker}'` }), tokens: 5_500 },
			{ ...tool("context_handoff", { ...HANDOFF, next_step: `PI_RESUME_CHECK="touch '${marker}'" then continue` }), tokens: 6_000 },
			"Resumed.",
		],
	});
	try {
		await t.session.prompt("Go.");
		const [refused, written] = resultsOf(t, "context_handoff");
		assert.equal(refused.isError, true, "an unknown handoff argument is refused");
		assert.equal(written.isError, false, written.text);
		assert.equal(ofType(t, "compaction").length, 1, "the handoff committed");
		assert.ok(!readFileSync(JSON.parse(written.text).path, "utf8").includes("## Resume check"));
		assert.equal(existsSync(marker), false, "nothing the model wrote ran");
		assert.equal(ofType(t, "custom", "relay/resume-check").length, 0);
	} finally {
		await t.dispose();
		env.restore();
		restore();
	}
});

test("the check runs off Pi's event loop: timers fire while the handoff and the new window's first request wait for it", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const restore = withEnv("PI_RESUME_CHECK", "sleep 1; echo SLOW-CHECK-DONE");
	const clock = {};
	const timer = (name) => {
		const set = performance.now();
		setTimeout(() => {
			clock[name] = performance.now() - set;
		}, 50);
	};
	const probe = (pi) => {
		pi.on("tool_call", (event) => {
			if (event.toolName === "context_handoff") {
				clock.started = performance.now();
				timer("duringHandoff");
			}
		});
		pi.on("tool_result", (event) => {
			if (event.toolName !== "context_handoff") return;
			clock.handoffDone = performance.now();
			timer("duringResetCheck");
		});
	};
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [probe],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("context_handoff", HANDOFF), tokens: 6_000 },
			() => {
				clock.firstRequest = performance.now();
				return "Resumed.";
			},
		],
	});
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("Hand off.");
		const handoffTook = clock.handoffDone - clock.started;
		assert.ok(handoffTook >= 950, `the check ran before the handoff: ${handoffTook.toFixed(0)} ms`);
		assert.ok(clock.duringHandoff !== undefined && clock.duringHandoff < 500, `timer during the handoff: ${clock.duringHandoff} ms`);
		const resetWait = clock.firstRequest - clock.handoffDone;
		assert.ok(resetWait >= 950, `the first request waited for the check: ${resetWait.toFixed(0)} ms`);
		assert.ok(clock.duringResetCheck !== undefined && clock.duringResetCheck < 500, `timer during the reset check: ${clock.duringResetCheck} ms`);
		assert.ok(checkMessages(t.requests[2]).some((m) => textOf(m.content).includes("SLOW-CHECK-DONE")));
	} finally {
		await t.dispose();
		env.restore();
		restore();
	}
});
