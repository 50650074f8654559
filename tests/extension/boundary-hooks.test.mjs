// Relay subscribes to Pi's boundary hooks (`turn_end`, `agent_before_settle`) only while its engine
// needs them (issue 36, item 3): Pi builds a preview of the whole branch for every boundary that has
// a subscriber. In a quiet window's tool turns Pi builds none; the threshold crossing resets as before.
import { test } from "node:test";
import assert from "node:assert/strict";
import { joined, ofType, startSession, tool } from "./harness.mjs";

const COMPACTABLE = { compaction: { enabled: true, keepRecentTokens: 1 } };
const STEER = /This context window is full|will be reset as soon as you finish this turn/;

/** Count Pi's boundary previews (`_buildBoundaryContext`, one per subscribed boundary and handler). */
function countPreviews(session) {
	const counts = { turn_end: 0, agent_before_settle: 0 };
	const build = session._buildBoundaryContext.bind(session);
	session._buildBoundaryContext = (drafts, boundary) => {
		counts[boundary] += 1;
		return build(drafts, boundary);
	};
	return counts;
}

test("a quiet window: no boundary subscriber, no preview; the crossing still resets at its threshold", async () => {
	let t;
	let counts;
	const subscribed = [];
	// What Pi's runner says when the model is asked for its next answer (the turn before it is over).
	const probe = (step) => async () => {
		subscribed.push({
			turnEnd: t.session.extensionRunner.hasHandlers("turn_end"),
			settle: t.session.extensionRunner.hasHandlers("agent_before_settle"),
		});
		return step;
	};
	t = await startSession({
		contextWindow: 100_000,
		settings: COMPACTABLE,
		steps: [
			probe({ ...tool("notes_append_to_file", { path: "log.md", content: "one\n" }), tokens: 3_000 }),
			probe({ ...tool("notes_append_to_file", { path: "log.md", content: "two\n" }), tokens: 3_500 }),
			probe({ ...tool("notes_append_to_file", { path: "log.md", content: "three\n" }), tokens: 4_000 }),
			probe("Quiet so far."),
		],
	});
	try {
		counts = countPreviews(t.session);
		await t.session.prompt("Append three lines.");
		// The three tool turns build no preview; the run's last answer is judged at its turn end as
		// always (Pi previews before Relay's handler and after it), and the settle point has none.
		assert.deepEqual(counts, { turn_end: 2, agent_before_settle: 0 }, "no boundary preview for a quiet tool turn");
		assert.deepEqual(subscribed.slice(1), Array(3).fill({ turnEnd: false, settle: false }), "Relay is no boundary subscriber");
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));

		// The same session crosses Pi's threshold: Relay's note-taking turn and its reset, as before.
		t.script(
			{ ...tool("notes_append_to_file", { path: "log.md", content: "four\n" }), tokens: 90_000 },
			tool("notes_write_file", { path: "state.md", content: "four lines; next five" }),
			"Continuing from state.md.",
		);
		const before = t.requests.length;
		await t.session.prompt("Append a fourth line.");
		const requests = t.requests.slice(before);
		assert.equal(ofType(t, "custom_message", "relay/notes-steer").length, 1, "one note-taking steer");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1, "one reset");
		assert.equal(compactions[0].details.source, "fallback");
		assert.match(compactions[0].summary, /state\.md/, "the notes of the note-taking turn are indexed");
		assert.match(joined(requests[1]), STEER, "the request after the crossing carries the steer");
		assert.match(joined(requests[2]), new RegExp(`current_window_id: ${compactions[0].details.windowId}`), "then the new window");
		assert.equal(requests.length, 3, "crossing, note-taking turn, new window");
		assert.ok(counts.turn_end > 0, "the reset was installed at a turn end Relay subscribed to");
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
	}
});
