// Staying on task after an automatic reset, on the real Pi agent loop in a 24,000-token window:
// the first reply of a window an automatic reset opened that asks the user what to do is
// continued once with the user's latest request quoted; never twice in a window, never after the
// model's own new_context, not when the reply states results, not with the setting off; and the
// new window names the latest of two requests as the one to work on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { captureStderr, joined, ofType, startSession, textOf, tool } from "./harness.mjs";

// A 24,000-token window: Pi's threshold (window − reserveTokens) at 20,000; a tiny keep makes it
// compactable (Pi compacts only when something lies outside keepRecentTokens).
const SMALL = { contextWindow: 24_000, settings: { compaction: { enabled: true, keepRecentTokens: 1, reserveTokens: 4_000 } } };
const REQUEST = "Refactor the loader so that TASK-58 passes; keep api/ untouched.";
const QUESTION = "What would you like me to do next?";
const QUOTE = `<latest_user_request>\n${REQUEST}\n</latest_user_request>`;

/** The model works, the window fills mid-run, the borrowed turn writes a note, the window resets
 * automatically as that turn ends, and `after` are the replies in the new window. */
function filling(...after) {
	return [
		{ ...tool("get_context_remaining"), tokens: 21_000 },
		tool("notes_write_file", { path: "plan.md", content: "TASK-58: loader refactor in progress" }),
		...after,
	];
}

const lastText = (request) => textOf(request.at(-1).content);
const assistantTexts = (t) =>
	t.sessionManager
		.getBranch()
		.filter((e) => e.type === "message" && e.message.role === "assistant")
		.map((e) => textOf(e.message.content));

test("a question back to the user after an automatic reset is continued once with the request quoted, then the run ends with the answer", async () => {
	const t = await startSession({ ...SMALL, steps: filling(QUESTION, "Done: TASK-58 passes and api/ is untouched.") });
	try {
		await t.session.prompt(REQUEST);
		const [compaction] = ofType(t, "compaction");
		assert.equal(compaction.details.source, "fallback", "the window reset automatically");
		assert.equal(t.requests.length, 4, "one extra request after the question, no more");
		// Request 2 opened the new window; the model asked; request 3 carries the continuation.
		assert.match(lastText(t.requests[2]), /filled up and was reset/);
		const continuation = lastText(t.requests[3]);
		assert.ok(continuation.includes(QUOTE), continuation);
		assert.match(continuation, /Do not ask the user what to do next/);
		assert.match(continuation, /If it is already finished, say so plainly/);
		assert.equal(ofType(t, "custom_message", "relay/continue-task").length, 1);
		assert.equal(assistantTexts(t).at(-1), "Done: TASK-58 passes and api/ is untouched.");
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
	}
});

test("a second question in the same window is not continued", async () => {
	const t = await startSession({ ...SMALL, steps: filling(QUESTION, "Which file should I start with?") });
	try {
		await t.session.prompt(REQUEST);
		assert.equal(t.requests.length, 4, "the second question ends the run");
		assert.equal(ofType(t, "custom_message", "relay/continue-task").length, 1);
		assert.equal(assistantTexts(t).at(-1), "Which file should I start with?");
	} finally {
		await t.dispose();
	}
});

test("a first reply after the reset that states results is the answer", async () => {
	const t = await startSession({ ...SMALL, steps: filling("Done: TASK-58 passes and api/ is untouched.") });
	try {
		await t.session.prompt(REQUEST);
		assert.equal(ofType(t, "compaction").length, 1);
		// The new window named the request as the one to work on, and the model answered it.
		assert.ok(joined(t.requests[2]).includes(`<user_message latest="true">\n${REQUEST}\n</user_message>`));
		assert.equal(t.requests.length, 3, "no request after the answer");
		assert.equal(ofType(t, "custom_message", "relay/continue-task").length, 0);
	} finally {
		await t.dispose();
	}
});

test("a question after the model's own new_context is not continued; after a later automatic reset it is", async () => {
	const t = await startSession({ ...SMALL, steps: [tool("new_context"), QUESTION, ...filling(QUESTION, "Done.")] });
	try {
		await t.session.prompt(REQUEST);
		assert.equal(ofType(t, "compaction")[0].details.source, "new_context");
		assert.equal(t.requests.length, 2, "the question after new_context ends the run");
		assert.equal(ofType(t, "custom_message", "relay/continue-task").length, 0);
		assert.equal(assistantTexts(t).at(-1), QUESTION);
		// The user answers; that window fills and resets automatically; the same question now is
		// continued, quoting the user's newer message.
		await t.session.prompt("Carry on with TASK-58.");
		assert.equal(ofType(t, "compaction")[1].details.source, "fallback");
		assert.equal(t.requests.length, 6);
		assert.match(lastText(t.requests[5]), /<latest_user_request>\nCarry on with TASK-58\.\n<\/latest_user_request>/);
		assert.equal(ofType(t, "custom_message", "relay/continue-task").length, 1);
		assert.equal(assistantTexts(t).at(-1), "Done.");
	} finally {
		await t.dispose();
	}
});

test("relay.continueAfterReset false turns the continuation off", async () => {
	let t;
	// Configuration warnings are reported when the session starts.
	const stderr = await captureStderr(async () => {
		t = await startSession({
			...SMALL,
			settings: { ...SMALL.settings, relay: { continueAfterReset: false } },
			steps: filling(QUESTION, "Done."),
		});
		await t.session.prompt(REQUEST);
	});
	try {
		assert.deepEqual(stderr.filter((l) => l.startsWith("relay:")), [], "a known key: no configuration warning");
		assert.equal(ofType(t, "compaction")[0].details.source, "fallback");
		assert.equal(t.requests.length, 3, "the question ends the run");
		assert.equal(ofType(t, "custom_message", "relay/continue-task").length, 0);
		assert.equal(assistantTexts(t).at(-1), QUESTION);
	} finally {
		await t.dispose();
	}
});

test("two prompts, then a reset: the new window names the second as the request to work on", async () => {
	const t = await startSession({ ...SMALL, steps: ["Written.", ...filling(QUESTION, "Done.")] });
	try {
		await t.session.prompt("Write the CHANGELOG entry for 1.2.");
		await t.session.prompt(REQUEST);
		const fresh = t.requests[3];
		const text = joined(fresh);
		assert.ok(
			text.includes(
				`<earlier_user_input shown="2" total="2">\n<user_message>\nWrite the CHANGELOG entry for 1.2.\n</user_message>\n<user_message latest="true">\n${REQUEST}\n</user_message>\n</earlier_user_input>`,
			),
			text,
		);
		assert.match(text, /The <user_message latest="true"> is the user's latest request as this window opens/);
		assert.match(lastText(fresh), /The task is the user's latest request: the <pending_user_request> when one is shown, else the <user_message latest="true">/);
		// The continuation after the early stop quotes the same (second) request.
		const continuation = lastText(t.requests[4]);
		assert.ok(continuation.includes(QUOTE), continuation);
		assert.ok(!continuation.includes("CHANGELOG"));
	} finally {
		await t.dispose();
	}
});
