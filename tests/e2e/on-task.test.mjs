// End to end (issue 26): the real `pi` CLI in print mode, offline, with the faux provider of demo/
// as the model, in a 24,000-token window. The window fills and resets automatically; the model's
// first reply in the new window asks the user what to do. Without Relay's one continuation
// `pi -p` ends there and prints the question as the answer; with it the model goes on and the
// printed answer is the result.
import { test } from "node:test";
import assert from "node:assert/strict";
import { runPi } from "./pi-print.mjs";

// Pi's threshold at 24,000 − 4,000; a tiny keep makes the window compactable.
const SETTINGS = { compaction: { enabled: true, keepRecentTokens: 1, reserveTokens: 4_000 } };
const REQUEST = "Refactor the loader so that TASK-58 passes; keep api/ untouched.";
const QUESTION = "What would you like me to do next?";
const ANSWER = "Done: TASK-58 passes and api/ is untouched.";

/** `pi -p` in this file's settings and window. */
const RUN = { settings: SETTINGS, window: 24_000, prefix: "relay-e2e-on-task-" };

test("pi -p: a question back to the user after an automatic reset is continued once, and the answer is printed", () => {
	const run = runPi({
		...RUN,
		script: [
			{ tool: "get_context_remaining", tokens: 21_000 },
			// The borrowed turn: the window resets as it ends.
			{ tool: "notes_write_file", args: { path: "plan.md", content: "TASK-58: loader refactor in progress" } },
			{ text: QUESTION },
			{ text: ANSWER },
			{ text: "NEVER-REQUESTED" },
		],
		prompts: [REQUEST],
	});
	assert.equal(run.status, 0, run.stderr);
	assert.equal(run.stdout.trim(), ANSWER);
	const compactions = run.lines.filter((l) => l.type === "compaction");
	assert.equal(compactions.length, 1);
	assert.equal(compactions[0].details.source, "fallback");
	const continued = run.lines.filter((l) => l.type === "custom_message" && l.customType === "relay/continue-task");
	assert.equal(continued.length, 1);
	assert.ok(continued[0].content.includes(`<latest_user_request>\n${REQUEST}\n</latest_user_request>`), continued[0].content);
	assert.equal(continued[0].display, false);
	assert.equal(run.requests.length, 4, "the question, then one more request");
	assert.ok(!run.stdout.includes("NEVER-REQUESTED"));
});
