// Relay's tool surface on the real Pi agent loop: the window markers a reset writes (seed 004's
// `details.kind: "handoff"`), the handoff reply when the narrative is over its budget, bounded
// results of the history and notes tools, Codex-style argument names, and the usage estimate
// compared with Pi's own at the same moment.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { captureStderr, ofType, readJsonl, resultsOf, startSession, tool } from "./harness.mjs";

const WINDOW = 200_000;
const THRESHOLDS = { soft: 20_000, handoff: 30_000, hard: 60_000, minProgress: 1_000 };
const enforce = () => ({ compaction: { enabled: false }, relay: { budget: { mode: "enforce", main: THRESHOLDS } } });
const HANDOFF = { goal: "GOAL-1: port the importer", next_step: "NEXT-1: run the tests", facts: "FACTS-1: parser done" };

/** Point Relay's budget config and state folder at a fresh temp root; `restore()` undoes it. */
function budgetEnv() {
	const root = mkdtempSync(join(tmpdir(), "relay-tools-"));
	const saved = {
		PI_CONTEXT_BUDGET_STATE_DIR: process.env.PI_CONTEXT_BUDGET_STATE_DIR,
		PI_CONTEXT_BUDGET_CONFIG: process.env.PI_CONTEXT_BUDGET_CONFIG,
	};
	const stateDir = join(root, "state", "context-budget");
	process.env.PI_CONTEXT_BUDGET_STATE_DIR = stateDir;
	process.env.PI_CONTEXT_BUDGET_CONFIG = join(root, "no-such-context-budget.json");
	return {
		root,
		events: () => (existsSync(join(stateDir, "events.jsonl")) ? readJsonl(join(stateDir, "events.jsonl")) : []),
		restore() {
			for (const [k, v] of Object.entries(saved)) {
				if (v === undefined) delete process.env[k];
				else process.env[k] = v;
			}
		},
	};
}

/** Enforce mode; the first reply sets the floor, the second crosses `tokens` with `step`. */
async function budgetSession(steps) {
	const env = budgetEnv();
	const t = await startSession({ root: env.root, contextWindow: WINDOW, settings: enforce(), steps });
	return { t, env };
}

test("a committed handoff's compaction entry says kind handoff, its commit type apart", async () => {
	const { t, env } = await budgetSession([
		{ text: "Started.", tokens: 5_000 },
		{ ...tool("context_handoff", HANDOFF), tokens: 35_000 },
		"Resumed from the handoff.",
	]);
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("Keep going.");
		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff.isError, false, handoff.text);
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1);
		const d = compactions[0].details;
		assert.equal(d.relay, "window");
		assert.equal(d.kind, "handoff", JSON.stringify(d));
		assert.equal(d.commit, "budget", "the handoff was required by the budget");
		assert.equal(d.source, "handoff");
		assert.equal(d.handoffPath, JSON.parse(handoff.text).path);
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("a mechanical reset past hard is not a handoff: kind reset, commit forcedHard", async () => {
	const { t, env } = await budgetSession([
		{ text: "Started.", tokens: 5_000 },
		{ text: "A long answer.", tokens: 65_000 },
		{ text: "Ending my turn.", tokens: 65_500 },
		"Resumed after the reset.",
	]);
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("Big step.");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1, "the hard limit reset the window");
		const d = compactions[0].details;
		assert.equal(d.source, "forced");
		assert.equal(d.kind, "reset", JSON.stringify(d));
		assert.equal(d.commit, "forcedHard");
		assert.equal(d.handoffPath, null);
	} finally {
		await t.dispose();
		env.restore();
	}
});
