// Child process of panic.test.mjs (not a test file itself): runs one scenario on the real Pi agent
// loop with the addon named by RELAY_ADDON and the panic named by RELAY_TEST_PANIC (both set by the
// parent), then prints one JSON line of results on stdout. Everything Relay reports goes to this
// process's stderr, which the parent reads whole: so does anything the Rust side would print.
import { readFileSync } from "node:fs";
import { startSession, ofType, textOf, tool } from "./harness.mjs";

const NOTE = "NOTE-7781: keep the cache warm";
const HANDOFF = {
	goal: "GOAL-1: finish the importer",
	next_step: "NEXT-2: run the tests",
	facts: "FACTS-3: parser done",
};

const scenarios = {
	// A panic in a hook (turn_end of the first turn), on a persisted session: the next event
	// reloads the mirror from the session file.
	async hook() {
		return {
			persist: true,
			steps: [tool("notes_write_file", { path: "plan.md", content: NOTE }), tool("notes_read_file", { path: "plan.md" }), "done."],
			prompts: ["Write the plan, then read it back.", "/relay status"],
		};
	},
	// A panic in a tool, on an in-memory session: the next event resyncs from Pi's branch.
	async tool() {
		return {
			persist: false,
			steps: [
				tool("notes_write_file", { path: "plan.md", content: NOTE }),
				tool("notes_read_file", { path: "plan.md" }),
				tool("notes_read_file", { path: "plan.md" }),
				"done.",
			],
			prompts: ["Write the plan and read it twice.", "/relay status"],
		};
	},
	// A panic on the libuv worker that collects git metadata for a handoff.
	async git() {
		return {
			persist: true,
			settings: {
				compaction: { enabled: false },
				relay: { budget: { mode: "enforce", main: { soft: 20_000, handoff: 30_000, hard: 60_000, minProgress: 1_000 } } },
			},
			steps: [{ text: "Started.", tokens: 5_000 }, { ...tool("context_handoff", HANDOFF), tokens: 6_000 }, "Resumed."],
			prompts: ["Start.", "Hand off."],
		};
	},
	// A panic on the libuv worker that runs the resume check before a handoff (PI_RESUME_CHECK is
	// set by the parent); the check after the reset runs normally.
	async resume() {
		return scenarios.git();
	},
	// A panic in the engine while it answers the user's /compact (session_before_compact): Pi's own
	// summarizer must not run in Relay's place. A tiny keep makes the window compactable.
	async compact() {
		return {
			persist: true,
			settings: { compaction: { enabled: true, keepRecentTokens: 1 } },
			steps: ["One.", "PI-SUMMARY: a summary nobody asked for", "PI-SUMMARY: again"],
			prompts: ["First."],
			compact: true,
		};
	},
	// The same on a provider overflow: Pi's overflow recovery asks the hook, which panics.
	async overflow() {
		return {
			persist: true,
			settings: { compaction: { enabled: true, keepRecentTokens: 1 } },
			steps: ["One.", { error: "prompt is too long: 250000 tokens > 100000 maximum" }, "PI-SUMMARY: a summary nobody asked for", "PI-SUMMARY: again", "After."],
			prompts: ["First.", "Second."],
		};
	},
};

const plan = await scenarios[process.argv[2]]();
const t = await startSession({ steps: plan.steps, persist: plan.persist, settings: plan.settings ?? {}, contextWindow: 200_000 });
let compactError = null;
let requestsBeforeCompact = null;
try {
	for (const prompt of plan.prompts) await t.session.prompt(prompt);
	if (plan.compact) {
		requestsBeforeCompact = t.requests.length;
		try {
			await t.session.compact();
		} catch (error) {
			compactError = String(error?.message ?? error);
		}
	}
	const file = t.sessionManager.getSessionFile();
	const handoffs = t.toolResults().filter((r) => r.toolName === "context_handoff" && !r.isError);
	const handoffPath = handoffs.length ? JSON.parse(handoffs[0].text).path : null;
	const result = {
		requests: t.requests.length,
		toolResults: t.toolResults(),
		piErrors: t.errors.map((e) => String(e?.error ?? e)),
		lastAssistant: textOf(
			t.sessionManager
				.getBranch()
				.filter((e) => e.type === "message" && e.message.role === "assistant")
				.at(-1)?.message.content,
		),
		compactions: ofType(t, "compaction").length,
		branchIds: t.sessionManager.getBranch().map((e) => e.id),
		sessionFile: file ?? null,
		fileText: file ? readFileSync(file, "utf8") : null,
		handoffSidecar: handoffPath ? JSON.parse(readFileSync(handoffPath.replace(/\.md$/, ".json"), "utf8")) : null,
		handoffMarkdown: handoffPath ? readFileSync(handoffPath, "utf8") : null,
		resumeRecords: ofType(t, "custom", "relay/resume-check").map((e) => e.data.result.output.head),
		requestsBeforeCompact,
		compactError,
		summaries: ofType(t, "compaction").map((e) => e.summary),
	};
	process.stdout.write(JSON.stringify(result) + "\n");
} finally {
	await t.dispose();
}
