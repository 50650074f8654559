// Helpers shared by the budget-policy tests (handoff.test.mjs, policy.test.mjs): a private budget
// environment per test and a probe tool that records whether it really ran.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ofType, readJsonl, startSession, within } from "./harness.mjs";

// Small explicit thresholds so scripted usage can cross them; Pi's own compaction stays off so only
// the budget policy acts. The window is large enough that Relay's low-budget reminder stays quiet.
export const WINDOW = 200_000;
export const THRESHOLDS = { soft: 20_000, handoff: 30_000, hard: 60_000, minProgress: 1_000 };
export const enforce = (extra = {}) => ({
	compaction: { enabled: false },
	relay: { budget: { mode: "enforce", main: THRESHOLDS, ...extra } },
});

export const GOAL = "GOAL-7731: port the importer to the v2 API as the user asked";
export const NEXT = "NEXT-4410: run the importer tests and fix tests/csv.rs";
export const FACTS = "FACTS-9902: parser done, two csv cases failing";
export const CONSTRAINT = "Never push to main.\n  Keep the CLI flags `--in` & `--out` <unchanged>!";
export const HANDOFF = { goal: GOAL, next_step: NEXT, facts: FACTS, user_constraints: CONSTRAINT };

/** Point Relay's budget config and state folder at this test's temp root; `restore()` undoes it. */
export function budgetEnv(root, config) {
	const saved = {
		PI_CONTEXT_BUDGET_STATE_DIR: process.env.PI_CONTEXT_BUDGET_STATE_DIR,
		PI_CONTEXT_BUDGET_CONFIG: process.env.PI_CONTEXT_BUDGET_CONFIG,
	};
	// Not created beforehand: Relay creates it (privately).
	const stateDir = join(root, "state", "context-budget");
	process.env.PI_CONTEXT_BUDGET_STATE_DIR = stateDir;
	// Without a config file the settings' relay.budget applies: the default file under the
	// harness's agent dir does not exist (silently), while a named missing file would select the
	// defaults with a warning.
	if (config === undefined) delete process.env.PI_CONTEXT_BUDGET_CONFIG;
	else process.env.PI_CONTEXT_BUDGET_CONFIG = config;
	return {
		stateDir,
		events: () => (existsSync(join(stateDir, "events.jsonl")) ? readJsonl(join(stateDir, "events.jsonl")) : []),
		restore() {
			for (const [k, v] of Object.entries(saved)) {
				if (v === undefined) delete process.env[k];
				else process.env[k] = v;
			}
		},
	};
}

/**
 * A plain extension tool that records its executions. With `after`, it finishes only once the
 * named tool's `tool_result` event has been delivered (bounded: it fails the test if that never
 * happens), so its own result certainly comes after that tool's.
 */
export function probeTool({ after, name = "probe_work" } = {}) {
	const probe = { runs: 0 };
	const done = Promise.withResolvers();
	probe.factory = (pi) => {
		if (after) {
			pi.on("tool_result", (event) => {
				if (event.toolName === after) done.resolve();
			});
		}
		pi.registerTool({
			name,
			label: "probe",
			description: "does a unit of work",
			parameters: { type: "object", properties: {} },
			async execute() {
				if (after) await within(done.promise, 10_000, `${after}'s tool_result before probe_work finishes`);
				probe.runs += 1;
				return { content: [{ type: "text", text: "probe done" }], details: {} };
			},
		});
	};
	return probe;
}

export function newRoot() {
	return mkdtempSync(join(tmpdir(), "relay-handoff-"));
}

/** `git init` the session cwd (`<root>/work`) with one commit on branch `trunk`; returns HEAD. */
export function gitRepo(root) {
	const cwd = join(root, "work");
	mkdirSync(cwd, { recursive: true });
	const git = (...args) => {
		const r = spawnSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=trunk", ...args], {
			cwd,
			encoding: "utf8",
		});
		assert.equal(r.status, 0, `git ${args.join(" ")}: ${r.stderr}`);
		return r.stdout.trim();
	};
	git("init", "-q");
	git("checkout", "-q", "-b", "trunk");
	writeFileSync(join(cwd, "README"), "x\n");
	git("add", "README");
	git("commit", "-q", "-m", "init");
	return git("rev-parse", "HEAD");
}

/**
 * The budget tests' session: a fresh root (or `root`), a private budget environment (`config`
 * names a budget file), the test window, `enforce()` unless `settings` says otherwise, and with
 * `probe` (true, or probeTool's options) a probe tool loaded before `extraFactories`. Runs
 * `body({ t, env, probe, root })`, then disposes the session and restores the environment,
 * whatever happened.
 */
export async function budgetSession(
	{ root = newRoot(), config, probe, contextWindow = WINDOW, settings = enforce(), extraFactories = [], ...options },
	body,
) {
	const env = budgetEnv(root, config);
	const probed = probe ? probeTool(probe === true ? {} : probe) : undefined;
	let t;
	try {
		const factories = probed ? [probed.factory, ...extraFactories] : extraFactories;
		t = await startSession({ root, contextWindow, settings, extraFactories: factories, ...options });
		return await body({ t, env, probe: probed, root });
	} finally {
		await t?.dispose();
		env.restore();
	}
}

/**
 * A settle point that gave one answer: no handoff request was queued beside it, no continuation
 * was logged that was never sent, and the session reported no error. Returns the logged events.
 */
export function assertOneSettleAnswer(t, env) {
	assert.equal(ofType(t, "custom_message", "relay/handoff-request").length, 0, "no handoff request beside the settle answer");
	const events = env.events().map((e) => e.event);
	assert.ok(!events.includes("settle_continuation"), `no continuation is logged that was never sent: ${events.join(",")}`);
	assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	return events;
}
