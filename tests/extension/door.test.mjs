// The one door on the real Pi agent loop: context_handoff's slow work (git, the integration stores,
// the resume check, the file) runs as jobs the engine asks for, each under a deadline and Pi's
// abort signal. Esc during the handoff writes nothing and resets nothing (also while the file is
// being written: no file stays); Esc while a new window's resume check runs before its first
// request leaves Pi idle within a second, kills the check's group, and the next request runs the
// check again (issue 34, item 4); a FIFO where a store should be is "unavailable", not a hang; a
// sibling tool that finishes while the handoff collects its facts is in what the handoff records.
// Runs the test-panic addon (`make test-addon`) for its test-only gates `RELAY_TEST_HOLD_STORES`
// (holds the store reading until a file exists) and `RELAY_TEST_HOLD_WRITE` (holds the handoff
// write after it wrote both files, until the gate file exists or the job is cancelled).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const TEST_ADDON = process.env.RELAY_TEST_ADDON ?? fileURLToPath(new URL("../../target/test-addon/relay.node", import.meta.url));
assert.ok(existsSync(TEST_ADDON), `the test addon is built (make test-addon): ${TEST_ADDON}`);
process.env.RELAY_ADDON = TEST_ADDON;
const { ofType, resultsOf, startSession, textOf, tool, until, within } = await import("./harness.mjs");
const { budgetEnv, enforce, gitRepo, HANDOFF, newRoot, WINDOW } = await import("./budget-helpers.mjs");

const handoffFiles = (root) => {
	const dir = join(root, "work", ".ai-work", "handoffs");
	return existsSync(dir) ? readdirSync(dir) : [];
};

test("Esc while context_handoff waits for its resume check: Pi is idle at once, no handoff file, no reset", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const started = join(root, "check-started");
	// The operator's check says which process it is, signals that it runs, then takes far longer
	// than the user waits.
	process.env.PI_RESUME_CHECK = `echo $$ > ${started}.pid; touch ${started}; sleep 30`;
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		steps: [{ text: "Started.", tokens: 5_000 }, { ...tool("context_handoff", HANDOFF), tokens: 6_000 }, "never asked"],
	});
	try {
		await t.session.prompt("Start.");
		const run = t.session.prompt("Hand off.");
		await until(started, "the resume check to start");
		const abortedAt = Date.now();
		await t.session.abort();
		await run;
		const idleAfterMs = Date.now() - abortedAt;
		// The check sleeps 30 s: Pi did not wait for it, and its process is killed.
		assert.ok(idleAfterMs < 2_000, `Pi was idle ${idleAfterMs} ms after Esc`);
		const pid = readFileSync(`${started}.pid`, "utf8").trim();
		// Alive: /proc has it and it is not a zombie waiting to be reaped.
		const alive = () => {
			try {
				return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
			} catch {
				return false;
			}
		};
		await within(
			(async () => {
				while (alive()) await new Promise((resolve) => setTimeout(resolve, 10));
			})(),
			5_000,
			"the aborted resume check's process to be killed",
		);
		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff?.isError, true, JSON.stringify(handoff));
		assert.match(handoff.text, /aborted before its handoff was written: nothing was written/);
		assert.deepEqual(handoffFiles(root), [], "no handoff file");
		assert.equal(ofType(t, "compaction").length, 0, "no reset");
		assert.equal(ofType(t, "custom", "relay/handoff").length, 0, "no handoff record");
	} finally {
		delete process.env.PI_RESUME_CHECK;
		await t.dispose();
		env.restore();
	}
});

/**
 * Whether process group `pgid` still has a live member. A killed member that is a zombie counts as
 * gone: its parent was killed too, and only the machine's init has yet to reap it.
 */
const groupAlive = (pgid) =>
	readdirSync("/proc")
		.filter((name) => /^\d+$/.test(name))
		.some((pid) => {
			let stat;
			try {
				stat = readFileSync(`/proc/${pid}/stat`, "utf8");
			} catch {
				return false;
			}
			// After the command name's closing parenthesis: state, ppid, pgrp, ...
			const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
			return Number(pgrp) === pgid && state !== "Z";
		});

test("Esc during the new window's resume check: Pi is idle at once (not after the check), the check's group is killed, the next request runs it again", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const started = join(root, "check-started");
	const runs = join(root, "runs");
	// Run 1 (before the handoff is written) and run 3 are quick; run 2, after the reset, before the
	// new window's first request, says which group it is, signals that it runs and takes far
	// longer than the user waits (its child keeps the group busy too).
	process.env.PI_RESUME_CHECK = `n=$(( $(cat '${runs}' 2>/dev/null || echo 0) + 1 )); echo $n > '${runs}'; if [ $n -eq 2 ]; then echo $$ > '${started}.pid'; touch '${started}'; sleep 25; fi; echo RESUME-CHECK-RUN-$n`;
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		steps: [{ text: "Started.", tokens: 5_000 }, { ...tool("context_handoff", HANDOFF), tokens: 6_000 }, { text: "Resumed.", tokens: 7_000 }],
	});
	try {
		await t.session.prompt("Start.");
		const run = t.session.prompt("Hand off now.");
		await until(started, "the new window's resume check to start");
		assert.equal(ofType(t, "compaction").length, 1, "the handoff committed before the check");
		const requestsBefore = t.requests.length;
		// Esc: Pi's abort resolves once the run has ended. Measured well under a second; the bound
		// leaves room for a loaded machine and is still a fifth of the check's 25 s.
		await within(Promise.all([t.session.abort(), run]), 5_000, "Pi to be idle after Esc during the resume check");
		assert.equal(t.session.isIdle, true);
		const pgid = Number(readFileSync(`${started}.pid`, "utf8").trim());
		await within(
			(async () => {
				while (groupAlive(pgid)) await new Promise((resolve) => setTimeout(resolve, 10));
			})(),
			5_000,
			"the aborted resume check's process group to be killed",
		);
		assert.equal(t.requests.length, requestsBefore, "the aborted request never reached the model");
		// The aborted check counts as not run: nothing of it is on the branch, and the window's next
		// request runs it again and carries its result.
		assert.equal(ofType(t, "custom", "relay/resume-check").length, 0);
		await within(t.session.prompt("Go on."), 10_000, "the next prompt");
		const [record] = ofType(t, "custom", "relay/resume-check");
		assert.equal(record?.data.windowId, ofType(t, "compaction")[0].details.windowId);
		const request = t.requests.at(-1);
		const check = request.find((m) => m.role === "user" && textOf(m.content).includes("<resume_check>"));
		assert.ok(check && textOf(check.content).includes("RESUME-CHECK-RUN-3"), JSON.stringify(request.map((m) => textOf(m.content))));
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		delete process.env.PI_RESUME_CHECK;
		await t.dispose();
		env.restore();
	}
});

test("Esc while the handoff file is written: no file stays, nothing is recorded, the model is told nothing was written", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	// The test addon holds the write job right after it wrote both files, until it is cancelled.
	const gate = join(root, "write-gate");
	process.env.RELAY_TEST_HOLD_WRITE = gate;
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		steps: [{ text: "Started.", tokens: 5_000 }, { ...tool("context_handoff", HANDOFF), tokens: 6_000 }, "never asked"],
	});
	try {
		await t.session.prompt("Start.");
		const run = t.session.prompt("Hand off.");
		await until(`${gate}.held`, "the handoff file to be written");
		assert.equal(handoffFiles(root).length, 2, "both files are on disk while the write job runs");
		await within(Promise.all([t.session.abort(), run]), 2_000, "Pi to be idle after Esc during the write");
		await within(
			(async () => {
				while (handoffFiles(root).length > 0) await new Promise((resolve) => setTimeout(resolve, 10));
			})(),
			2_000,
			"the aborted write's files to be removed",
		);
		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff?.isError, true, JSON.stringify(handoff));
		assert.match(handoff.text, /aborted before its handoff was written: nothing was written/);
		assert.equal(ofType(t, "custom", "relay/handoff").length, 0, "no handoff record");
		assert.equal(ofType(t, "compaction").length, 0, "no reset");
		assert.equal(existsSync(gate), false, "the hold ended by the cancel, not by the gate");
	} finally {
		delete process.env.RELAY_TEST_HOLD_WRITE;
		await t.dispose();
		env.restore();
	}
});

test("a FIFO where the claims registry should be: the handoff completes and says the store is unavailable", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		steps: [{ text: "Started.", tokens: 5_000 }, { ...tool("context_handoff", HANDOFF), tokens: 6_000 }, "Resumed."],
	});
	try {
		mkdirSync(join(t.agentDir, "issue-work"), { recursive: true });
		const fifo = join(t.agentDir, "issue-work", "registry.jsonl");
		assert.equal(spawnSync("mkfifo", [fifo]).status, 0, "mkfifo");
		await t.session.prompt("Start.");
		// No writer ever opens the FIFO: a reader that blocked on it would never return.
		await within(t.session.prompt("Hand off."), 15_000, "the handoff beside a FIFO registry");
		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff.isError, false, handoff.text);
		const md = readFileSync(JSON.parse(handoff.text).path, "utf8");
		assert.match(md, /unavailable \(no readable issue-work\/registry\.jsonl\)/);
		assert.equal(ofType(t, "compaction").length, 1, "the handoff committed");
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("a sibling tool that commits while context_handoff collects its facts: the handoff records the new HEAD", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const before = gitRepo(root);
	const gate = join(root, "stores-gate");
	process.env.RELAY_TEST_HOLD_STORES = gate;
	const cwd = join(root, "work");
	// A tool of the same message: it commits once the handoff's git facts are in (the store reading
	// holds), and the gate opens only after its tool_result reached Relay (this extension's hook
	// runs after Relay's).
	const sibling = (pi) => {
		pi.on("tool_result", (event) => {
			if (event.toolName === "commit_now") writeFileSync(gate, "");
		});
		pi.registerTool({
			name: "commit_now",
			label: "commit",
			description: "commits the work",
			parameters: { type: "object", properties: {} },
			async execute() {
				await until(`${gate}.held`, "the handoff's store reading to begin");
				const r = spawnSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "sibling"], { cwd, encoding: "utf8" });
				assert.equal(r.status, 0, r.stderr);
				return { content: [{ type: "text", text: "committed" }], details: {} };
			},
		});
	};
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [sibling],
		steps: [{ text: "Started.", tokens: 5_000 }, { tools: [tool("context_handoff", HANDOFF), tool("commit_now")], tokens: 6_000 }, "Resumed."],
	});
	try {
		await t.session.prompt("Start.");
		await within(t.session.prompt("Hand off and commit."), 20_000, "the handoff and its sibling");
		const after = spawnSync("git", ["rev-parse", "HEAD"], { cwd, encoding: "utf8" }).stdout.trim();
		assert.notEqual(after, before, "the sibling committed");
		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff.isError, false, handoff.text);
		const sidecar = JSON.parse(readFileSync(JSON.parse(handoff.text).path.replace(/\.md$/, ".json"), "utf8"));
		assert.equal(sidecar.git.head, after, "the handoff records the HEAD the sibling made, not the one before it");
	} finally {
		delete process.env.RELAY_TEST_HOLD_STORES;
		writeFileSync(gate, "");
		await t.dispose();
		env.restore();
	}
});
