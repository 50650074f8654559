// The crossing turn's edges on the real Pi agent loop (issue 34, items 1 to 3): the note-taking
// steer Relay queues at a threshold crossing must be in a request of the full window before that
// window resets, whatever else is queued (a user steer typed during the crossing turn, an
// extension message delivered as a steer, a follow-up), with a router (virtual) model, and when
// the borrowed turn's request fails and Pi retries it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { VERSION } from "@earendil-works/pi-coding-agent";
import { captureStderr, joined, ofType, roles, startSession, textOf, tool } from "./harness.mjs";

// Pi starts its own summarizer only on threshold crossings it can compact; a tiny keep makes any
// window compactable (pi-host-facts.md §5).
const COMPACTABLE = { compaction: { enabled: true, keepRecentTokens: 1 } };
const STEER = /This context window is full|will be reset as soon as you finish this turn/;

/** Index of the first request whose messages carry Relay's note-taking steer (-1: none). */
const steerRequest = (t) => t.requests.findIndex((r) => STEER.test(joined(r)));
/** Index of the first request of the window the first reset opened (its boot block names it; -1: none). */
const newWindowRequest = (t) => {
	const windowId = ofType(t, "compaction")[0]?.details.windowId;
	return windowId ? t.requests.findIndex((r) => joined(r).includes(`current_window_id: ${windowId}`)) : -1;
};

/** What every scenario asserts: one borrowed turn, the steer in the old window only, one reset after it. */
function assertSteerInOldWindow(t) {
	const steers = ofType(t, "custom_message", "relay/notes-steer");
	assert.equal(steers.length, 1, "exactly one note-taking steer");
	const compactions = ofType(t, "compaction");
	assert.equal(compactions.length, 1, "exactly one reset");
	assert.equal(compactions[0].details.source, "fallback");
	const carried = steerRequest(t);
	assert.ok(carried >= 0, "a request carried the steer");
	const fresh = newWindowRequest(t);
	assert.ok(fresh > carried, `the new window (request ${fresh}) opens after the request that carried the steer (${carried})`);
	for (const r of t.requests.slice(fresh)) assert.doesNotMatch(joined(r), STEER, "the steer never reaches the new window");
	// The steer entry precedes the reset on the branch: it belongs to the old window.
	const branch = t.sessionManager.getBranch();
	const steerAt = branch.findIndex((e) => e.type === "custom_message" && e.customType === "relay/notes-steer");
	const resetAt = branch.findIndex((e) => e.type === "compaction");
	assert.ok(steerAt >= 0 && steerAt < resetAt, `steer at ${steerAt}, reset at ${resetAt}`);
	assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
}

test("a user steer typed during the crossing turn: the note-taking request still reaches the full window, the reset waits for its turn", async () => {
	let t;
	t = await startSession({
		contextWindow: 100_000,
		settings: COMPACTABLE,
		steps: [
			// The crossing turn: while it streams, the user types a steering message.
			async () => {
				await t.session.steer("Also keep the README in mind.");
				return { ...tool("notes_append_to_file", { path: "log.md", content: "did step A\n" }), tokens: 90_000 };
			},
			// The user's steer is delivered first (Pi drains it before its threshold check).
			tool("notes_append_to_file", { path: "log.md", content: "README noted\n" }),
			// Then the note-taking turn.
			tool("notes_write_file", { path: "state.md", content: "A done; next B" }),
			"Continuing with B from state.md.",
		],
	});
	try {
		await t.session.prompt("Do A then B.");
		assertSteerInOldWindow(t);
		assert.match(joined(t.requests[1]), /Also keep the README in mind/, "the user's steer went first");
		assert.doesNotMatch(joined(t.requests[1]), STEER);
		assert.match(joined(t.requests[2]), STEER, "the next request carries the note-taking steer");
		assert.match(ofType(t, "compaction")[0].summary, /state\.md/, "the notes written in the note-taking turn are indexed");
		assert.equal(t.requests.length, 4, "crossing, user steer, note-taking turn, new window");
		assert.deepEqual(roles(t.requests[3]), ["user", "user"]);
	} finally {
		await t.dispose();
	}
});

test("a crossing turn that leaves no room for a note-taking request: the window resets at once, no request larger than the window", async () => {
	// 97,000 of 100,000 tokens: a note-taking request (the steer, the notes, a margin for the
	// estimate) would be refused as too large by a provider, so none is asked for.
	const t = await startSession({
		contextWindow: 100_000,
		settings: COMPACTABLE,
		steps: [{ ...tool("notes_append_to_file", { path: "log.md", content: "did step A\n" }), tokens: 97_000 }, "Continuing with B."],
	});
	try {
		await t.session.prompt("Do A then B.");
		assert.equal(ofType(t, "custom_message", "relay/notes-steer").length, 0, "no note-taking steer");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1, "one reset");
		assert.equal(compactions[0].details.source, "threshold");
		assert.equal(t.requests.length, 2, "the crossing, then the new window");
		assert.equal(newWindowRequest(t), 1, "the request after the crossing is the new window's");
		for (const r of t.requests) assert.doesNotMatch(joined(r), STEER);
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
	}
});

test("an extension message delivered as a steer during the crossing turn: the reset waits for the note-taking request", async () => {
	let t;
	let api;
	const sender = (pi) => {
		api = pi;
	};
	t = await startSession({
		contextWindow: 100_000,
		settings: COMPACTABLE,
		extraFactories: [sender],
		steps: [
			() => {
				api.sendMessage({ customType: "other/ping", content: "A watched job finished.", display: true }, { deliverAs: "steer" });
				return { ...tool("notes_append_to_file", { path: "log.md", content: "did step A\n" }), tokens: 90_000 };
			},
			tool("notes_append_to_file", { path: "log.md", content: "job seen\n" }),
			tool("notes_write_file", { path: "state.md", content: "A done; next B" }),
			"Continuing with B from state.md.",
		],
	});
	try {
		await t.session.prompt("Do A then B.");
		assertSteerInOldWindow(t);
		assert.match(joined(t.requests[1]), /A watched job finished/);
	} finally {
		await t.dispose();
	}
});

test("a follow-up queued during the crossing turn is answered in the new window; the steer is in the old one", async () => {
	let t;
	t = await startSession({
		contextWindow: 100_000,
		settings: COMPACTABLE,
		steps: [
			async () => {
				await t.session.followUp("Then run the tests.");
				return { ...tool("notes_append_to_file", { path: "log.md", content: "did step A\n" }), tokens: 90_000 };
			},
			tool("notes_write_file", { path: "state.md", content: "A done; next B" }),
			"Picked up from state.md.",
			"Running the tests in the new window.",
		],
	});
	try {
		await t.session.prompt("Do A then B.");
		assertSteerInOldWindow(t);
		assert.match(joined(t.requests[1]), STEER);
		const fresh = newWindowRequest(t);
		const followUp = t.requests.findIndex((r) => /Then run the tests/.test(joined(r)));
		assert.ok(followUp >= fresh, `the follow-up (request ${followUp}) is delivered in the new window (from request ${fresh})`);
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 0, "no continuation: the user's follow-up is the next task");
	} finally {
		await t.dispose();
	}
});

test("a router (virtual) model: Pi checks the threshold after the request is fixed; the reset waits for the request that carries the steer", async () => {
	const t = await startSession({
		virtual: true,
		contextWindow: 100_000,
		settings: COMPACTABLE,
		steps: [
			{ ...tool("notes_append_to_file", { path: "log.md", content: "did step A\n" }), tokens: 90_000 },
			// Pi's check for this request comes after its messages are fixed: the steer misses it.
			{ ...tool("notes_append_to_file", { path: "log.md", content: "did step B\n" }), tokens: 91_000 },
			tool("notes_write_file", { path: "state.md", content: "A and B done; next C" }),
			"Continuing with C from state.md.",
		],
	});
	try {
		assert.equal(t.session.model.provider, "router", "the session runs on the virtual model");
		await t.session.prompt("Do A, B, then C.");
		assertSteerInOldWindow(t);
		assert.match(ofType(t, "compaction")[0].summary, /state\.md/, "the note written in the note-taking turn is indexed");
		assert.equal(t.requests.length, 4, "crossing, the request already fixed, note-taking turn, new window");
	} finally {
		await t.dispose();
	}
});

test("a router (virtual) model without a declared window: Relay reads the window of the model that answered, never 0", async () => {
	const t = await startSession({
		virtual: true,
		contextWindow: 100_000,
		steps: ["First answer.", tool("get_context_remaining"), "ok"],
	});
	try {
		assert.equal(t.session.model.contextWindow ?? 0, 0, "the virtual model declares no window");
		await t.session.prompt("Hello.");
		// Before any answer the window is unknown: no "0 tokens remain" reminder in the first request.
		assert.equal(ofType(t, "custom_message", "relay/reminder").length, 0, "no reminder in a window of unknown size");
		assert.doesNotMatch(joined(t.requests[0]), /about 0 tokens/);
		// After an answer, the window is faux-1's (100,000), as in Pi's own context usage.
		const status = await captureStderr(() => t.session.prompt("/relay"));
		const reminderLine = status.join("\n").match(/reminder: when ([\d,]+) tokens/);
		assert.ok(reminderLine, status.join("\n"));
		assert.ok(Number(reminderLine[1].replaceAll(",", "")) > 0, `the reminder point is not 0: ${reminderLine[0]}`);
		await t.session.prompt("How much room is left?");
		const remaining = JSON.parse(t.toolResults().find((r) => r.toolName === "get_context_remaining").text).remaining_tokens;
		const pi = t.session.getContextUsage();
		assert.equal(pi.contextWindow, 100_000, "Pi reads the routed model's window");
		assert.ok(remaining > 0 && remaining < 100_000, `remaining ${remaining} within the routed window`);
		for (const r of t.requests) assert.doesNotMatch(joined(r), /about 0 tokens remain/);
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
	}
});

test("Pi's auto-retry of the borrowed turn's failed request: the retried turn still resets the window at its end", async () => {
	const t = await startSession({
		contextWindow: 100_000,
		settings: { ...COMPACTABLE, retry: { enabled: true, maxRetries: 2, baseDelayMs: 1 } },
		steps: [
			{ ...tool("notes_append_to_file", { path: "log.md", content: "did step A\n" }), tokens: 90_000 },
			// The note-taking request fails with a transient provider error; Pi retries it.
			{ error: "429 Too Many Requests: rate limit exceeded" },
			tool("notes_write_file", { path: "state.md", content: "A done; next B" }),
			// Without the fix this request is still in the full window.
			{ ...tool("notes_append_to_file", { path: "log.md", content: "did step B\n" }), tokens: 95_000 },
			"Continuing.",
		],
	});
	try {
		await t.session.prompt("Do A then B.");
		const compactions = ofType(t, "compaction");
		assert.ok(compactions.length >= 1, "the window reset");
		assert.equal(compactions[0].details.source, "fallback");
		assert.match(compactions[0].summary, /state\.md/);
		// Requests: crossing, failed note-taking, retried note-taking, then the new window.
		assert.match(joined(t.requests[2]), STEER, "the retry carries the steer");
		assert.ok(joined(t.requests[3]).includes(`current_window_id: ${compactions[0].details.windowId}`), "the request after the retried turn is in the new window");
		assert.equal(ofType(t, "custom_message", "relay/notes-steer").length, 1);
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
	}
});
