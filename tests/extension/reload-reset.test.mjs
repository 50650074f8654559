// A /reload in the middle of a reset, on the real Pi agent loop. Pi (1.6) refuses a reload while
// a response streams or a compaction runs, and Relay installs a reset inside one of those (the
// turn end's boundary entries, or the compaction hook): a reload attempted there is refused and
// the reset completes once. Pi 1.3 lets that reload through; the reset still happens once. A
// reload right after the reset rebuilds the same state from the branch.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { VERSION } from "@earendil-works/pi-coding-agent";
import { joined, ofType, resultsOf, startSession, textOf, tool } from "./harness.mjs";
import { budgetEnv, enforce, GOAL, HANDOFF, newRoot, WINDOW } from "./budget-helpers.mjs";

test("reload during a handoff's reset: Pi 1.6 refuses it, the reset happens once; a reload right after keeps the window, notes and prompts", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	const attempts = [];
	let t;
	// Tries a reload at the turn end that installs the handoff's reset (and at every later turn end).
	const reloader = (pi) => {
		pi.on("turn_end", async () => {
			if (!t || resultsOf(t, "context_handoff").length === 0) return;
			try {
				await t.session.reload();
				attempts.push("reloaded");
			} catch (e) {
				attempts.push(e.message);
			}
		});
	};
	t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [reloader],
		steps: [
			{ ...tool("notes_write_file", { path: "plan.md", content: "NOTE-6061: the plan" }), tokens: 5_000 },
			{ text: "Noted.", tokens: 5_100 },
			{ ...tool("context_handoff", HANDOFF), tokens: 36_000 },
			"Resumed in the new window.",
			tool("notes_read_file", { path: "plan.md" }),
			"Still here.",
		],
	});
	try {
		await t.session.prompt("USER-A-7001: write the plan.");
		await t.session.prompt("USER-B-7002: hand off.");
		assert.ok(attempts.length >= 1, "a reload was attempted during the reset");
		// Pi 1.6 refuses a reload while the response streams; Pi 1.3 did not check, and its reload
		// at that turn end goes through: either way the reset happens once and the state holds.
		const [major, minor] = VERSION.split(".").map(Number);
		const refuses = major > 1 || minor >= 6;
		for (const a of attempts) {
			if (refuses) assert.match(a, /Wait for the current response to finish before reloading/);
			else assert.equal(a, "reloaded");
		}
		assert.equal(ofType(t, "compaction").length, 1, "the reset happened once");
		assert.match(joined(t.requests.at(-1)), /<handoff>[\s\S]*GOAL-7731/);

		// Now the reload goes through; the state is rebuilt from the branch.
		attempts.length = 0;
		await t.session.reload();
		await t.session.prompt("USER-C-7003: read the plan.");
		const reads = resultsOf(t, "notes_read_file");
		assert.match(reads.at(-1).text, /NOTE-6061: the plan/);
		assert.equal(ofType(t, "compaction").length, 1, "no second reset after the reload");
		const last = t.requests.at(-1);
		assert.match(joined(last), /<handoff>[\s\S]*GOAL-7731/, "the window still starts from the handoff");
		assert.ok(joined(last).includes("USER-C-7003"));
		assert.ok(!joined(last).includes("USER-A-7001"), "the old window stays out");
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Still here.");
		assert.deepEqual(t.errors, []);
		const file = t.sessionManager.getSessionFile();
		const text = readFileSync(file, "utf8");
		for (const s of ["USER-A-7001", "USER-B-7002", "USER-C-7003", "NOTE-6061"]) assert.ok(text.includes(s), s);
		assert.ok(text.includes(GOAL));
	} finally {
		await t.dispose();
		env.restore();
	}
});
