// End to end (issue 10): overflow recovery through the real `pi` CLI in print mode, offline, with
// the faux provider of demo/ as the model. (The resume check's output in the handoff file and in
// the new window's first request is covered end to end in cli.test.mjs.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { runPi } from "./pi-print.mjs";

const OVERFLOW = { error: "prompt is too long: 250000 tokens > 128000 maximum" };
// Pi's compaction on, so Pi runs its overflow recovery (and calls Relay's hook); a tiny keep makes
// the window compactable. Relay's budget policy enforces.
const SETTINGS = {
	compaction: { enabled: true, keepRecentTokens: 1 },
	relay: { budget: { mode: "enforce" } },
};

/** `pi -p` in this file's settings and window. */
const RUN = { settings: SETTINGS, window: 128_000, prefix: "relay-e2e-recovery-" };

const named = (run, name) => run.events.filter((e) => e.event === name);

test("pi -p, enforce: a provider overflow is recovered by one reset-and-retry with the mechanical summary", () => {
	const run = runPi({
		...RUN,
		script: [{ text: "First answer." }, OVERFLOW, { text: "Recovered in a fresh window." }],
		prompts: ["EARLIER-REQ-1212: set up the parser.", "PENDING-REQ-3434: refactor the MODULE-X loader."],
	});
	assert.equal(run.status, 0, run.stderr);
	assert.equal(run.stdout.trim(), "Recovered in a fresh window.");
	const compactions = run.lines.filter((l) => l.type === "compaction");
	assert.equal(compactions.length, 1);
	const [reset] = compactions;
	assert.equal(reset.details.source, "overflow");
	assert.equal(reset.details.kind, "reset", "no handoff was written: the mechanical summary");
	assert.match(reset.summary, /<earlier_user_input[^>]*>[\s\S]*EARLIER-REQ-1212[\s\S]*<\/earlier_user_input>/);
	assert.match(reset.summary, /<pending_user_request>[\s\S]*PENDING-REQ-3434[\s\S]*<\/pending_user_request>/);
	assert.match(reset.summary, /<reset_notice>[\s\S]*git[\s\S]*<\/reset_notice>/);
	assert.equal(run.requests.length, 3, "first answer, the overflow, the retry: no summarizer call");
	assert.match(run.requests[2], /The conversation history before this point was compacted/, "the retry is the new window");
	assert.deepEqual(
		named(run, "overflow_backstop").map((e) => [e.handoff, e.willRetry]),
		[[false, true]],
	);
	assert.equal(named(run, "overflow_recovery_exhausted").length, 0);
});

test("pi -p, enforce: a second overflow after the retry is exhausted, reported and ends the run (no loop)", () => {
	const run = runPi({
		...RUN,
		script: [{ text: "First answer." }, OVERFLOW, OVERFLOW, { text: "NEVER-REQUESTED" }],
		prompts: ["First question.", "A request that cannot fit."],
	});
	assert.equal(run.requests.length, 3, "the overflow, one retry, nothing more");
	assert.equal(run.lines.filter((l) => l.type === "compaction").length, 1, "one reset, no second one");
	assert.ok(!run.stdout.includes("NEVER-REQUESTED"));
	assert.notEqual(run.status, 0, "the run ends with the provider's error");
	const exhausted = named(run, "overflow_recovery_exhausted");
	assert.equal(exhausted.length, 1, JSON.stringify(run.events.map((e) => e.event)));
	// The user is told what to do (print mode has no UI: Relay's warning goes to stderr).
	const warnings = run.stderr.split("\n").filter((l) => l.startsWith("relay: the context overflowed again"));
	assert.equal(warnings.length, 1, run.stderr);
	assert.match(warnings[0], /shrink the context[\s\S]*larger context window/);
});
