// Window lifecycle across process and session boundaries on the real Pi agent loop (issue 24,
// items 10, 11, 13): a /reload in the middle of a run keeps the run tracked (Pi 1.3 lets one
// through), a forked or cloned root window keeps its id, and a resumed handoff window is checked
// against the workspace again when the workspace moved.
import { test } from "node:test";
import assert from "node:assert/strict";
import { VERSION } from "@earendil-works/pi-coding-agent";
import { joined, ofType, roles, startSession, textOf, tool } from "./harness.mjs";

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
