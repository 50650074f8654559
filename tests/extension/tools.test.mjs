// Relay's tool surface on the real Pi agent loop: the window markers a reset writes (seed 004's
// `details.kind: "handoff"`), the handoff reply when the narrative is over its budget, bounded
// results of the history and notes tools, Codex-style argument names, and the usage estimate
// compared with Pi's own at the same moment.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { captureStderr, ofType, resultsOf, startSession, tool } from "./harness.mjs";
import { budgetEnv as sharedBudgetEnv, enforce, newRoot, WINDOW } from "./budget-helpers.mjs";

const HANDOFF = { goal: "GOAL-1: port the importer", next_step: "NEXT-1: run the tests", facts: "FACTS-1: parser done" };

/** A fresh temp root with Relay's budget config and state folder pointed into it. */
function budgetEnv() {
	const root = newRoot();
	return { root, ...sharedBudgetEnv(root) };
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

const MAX_RESULT_BYTES = 65_536;

test("notes_read_file on a 1,000,000-byte note and history_read_item with a huge limit are capped and say how to go on", async () => {
	const big = "0123456789abcdef漢字\n".repeat(40_000).slice(0, 1_000_000);
	const note = big + "x".repeat(1_000_000 - Buffer.byteLength(big));
	assert.equal(Buffer.byteLength(note), 1_000_000);
	const t = await startSession({
		steps: [tool("notes_write_file", { path: "big.md", content: note }), "Written.", tool("notes_read_file", { path: "big.md" }), "Read."],
	});
	try {
		await t.session.prompt("Write the big note.");
		await t.session.prompt("Read it.");
		const [write] = resultsOf(t, "notes_write_file");
		assert.equal(write.isError, false, write.text);
		const [read] = resultsOf(t, "notes_read_file");
		assert.equal(read.isError, false, read.text);
		assert.ok(Buffer.byteLength(read.text) <= MAX_RESULT_BYTES, `${Buffer.byteLength(read.text)} bytes`);
		const r = JSON.parse(read.text);
		assert.match(r.capped, /^result capped at 65536 bytes; continue with start_line \d+$/);
		assert.equal(r.start_line, 1);
		assert.equal(r.next_start_line, r.end_line + 1);
		const lines = note.split("\n");
		assert.equal(r.content, lines.slice(0, r.end_line).join("\n"), "whole lines up to the cap");

		// The model continues from next_start_line.
		t.script(tool("notes_read_file", { path: "big.md", start_line: r.next_start_line, end_line: r.next_start_line }), "More.");
		await t.session.prompt("Go on.");
		const next = JSON.parse(resultsOf(t, "notes_read_file")[1].text);
		assert.equal(next.content, lines[r.next_start_line - 1]);

		// The assistant message that wrote the note holds the whole note in its tool call.
		const item = t.sessionManager
			.getBranch()
			.find((e) => e.type === "message" && e.message.role === "assistant" && e.message.content.some((b) => b.type === "toolCall" && b.name === "notes_write_file"));
		const windowId = `pcw:${t.sessionManager.getSessionId()}:root`;
		t.script(tool("history_read_item", { window_id: windowId, item_id: item.id, limit_chars: 100_000_000 }), "Read the item.");
		await t.session.prompt("Read the history item.");
		const [hist] = resultsOf(t, "history_read_item");
		assert.equal(hist.isError, false, hist.text);
		assert.ok(Buffer.byteLength(hist.text) <= MAX_RESULT_BYTES, `${Buffer.byteLength(hist.text)} bytes`);
		const h = JSON.parse(hist.text);
		assert.ok(h.total_chars > [...note].length, `total_chars ${h.total_chars}`);
		assert.equal(h.next_offset_chars, [...h.content].length, "it continues right after what it showed");
		assert.match(h.capped, new RegExp(`continue with offset_chars ${h.next_offset_chars}$`));
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
});

test("a handoff narrative over its 12 KiB budget: the tool result names each shortened section and its sizes", async () => {
	const facts = "FACT-" + "checked the parser and the csv reader; ".repeat(400);
	const goal = "GOAL-2: port the importer";
	const { t, env } = await budgetSession([
		{ text: "Started.", tokens: 5_000 },
		{ ...tool("context_handoff", { goal, next_step: "NEXT-2: run the tests", facts }), tokens: 35_000 },
		"Resumed from the handoff.",
	]);
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("Keep going.");
		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff.isError, false, handoff.text);
		const r = JSON.parse(handoff.text);
		assert.equal(r.written, true);
		assert.equal(r.shortened.budget_bytes, 12_288);
		assert.deepEqual(
			r.shortened.sections.map((s) => [s.section, s.bytes_before, s.chars_before]),
			[["facts", Buffer.byteLength(facts), facts.length]],
		);
		const [cut] = r.shortened.sections;
		assert.ok(cut.bytes_after < 12_288 && cut.bytes_after > 10_000, JSON.stringify(cut));
		assert.ok(
			r.shortened.message.includes(`facts ${cut.bytes_before} → ${cut.bytes_after} bytes (${cut.chars_before} → ${cut.chars_after} chars)`),
			r.shortened.message,
		);
		assert.ok(r.shortened.message.includes(r.path.replace(/\.md$/, ".json")), "it names the sidecar that keeps the text whole");
		const sidecar = JSON.parse(readFileSync(r.path.replace(/\.md$/, ".json"), "utf8"));
		assert.equal(sidecar.facts, facts);

		// The next window's boot block labels the agent's facts as claims and the git state as Relay's record.
		const boot = ofType(t, "compaction")[0].summary;
		assert.match(boot, /## Facts \(claimed by the agent, not checked by Relay\)/);
		assert.match(boot, /its own account \(claims, not verified by Relay\)/);
		assert.match(boot, /## Automatic metadata \(recorded by Relay\)/);
		assert.ok(!boot.includes("(verified)"));
		assert.match(boot, new RegExp(`…\\(cut, ${cut.chars_before - cut.chars_after} chars\\)`));
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("Codex-style argument names are accepted, and a wrong name gets an error naming the right one", async () => {
	const t = await startSession({
		steps: [
			tool("notes_write_file", { file_path: "plan.md", content: "one\ntwo\nthree\n" }),
			tool("notes_read_file", { file_path: "plan.md", offset: 2 }),
			tool("history_search_contents", { pattern: "PINEAPPLE-3" }),
			tool("notes_read_file", { path: "plan.md", limit: 2 }),
			"Done.",
		],
	});
	try {
		await t.session.prompt("Remember PINEAPPLE-3 and work with the plan.");
		const [write] = resultsOf(t, "notes_write_file");
		assert.equal(write.isError, false, write.text);
		assert.equal(JSON.parse(write.text).path, "plan.md");
		const [read, wrong] = resultsOf(t, "notes_read_file");
		assert.equal(read.isError, false, read.text);
		const r = JSON.parse(read.text);
		assert.equal(r.start_line, 2, "offset is Codex's 1-based start line");
		assert.equal(r.content, "two\nthree");
		const [search] = resultsOf(t, "history_search_contents");
		assert.equal(search.isError, false, search.text);
		assert.ok(JSON.parse(search.text).items.some((i) => i.role === "user"), search.text);
		assert.equal(wrong.isError, true);
		assert.equal(
			wrong.text,
			'notes_read_file: unknown argument "limit": did you mean "end_line" (the last line to read, inclusive: start_line + limit - 1)? (accepted: path, start_line, end_line, offset_chars)',
		);
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
});

test("the engine's usage estimate equals Pi's getContextUsage() with images, thinking, tool calls, bash and custom messages on the branch", async () => {
	const { fauxAssistantMessage, fauxText, fauxThinking, fauxToolCall } = await import("@earendil-works/pi-ai");
	const image = { type: "image", data: Buffer.from("not really a png").toString("base64"), mimeType: "image/png" };
	const WINDOW_TOKENS = 1_000_000;
	const RESERVE = 16_384;
	const probe = {};
	const t = await startSession({
		contextWindow: WINDOW_TOKENS,
		extraFactories: [(pi) => (probe.pi = pi)],
		steps: [
			"First answer, with usage.",
			// An answer that failed: its usage is not trusted, its content still counts as Pi counts it.
			() =>
				fauxAssistantMessage([fauxThinking("thinking it over…"), fauxText("partial"), fauxToolCall("notes_read_file", { path: "plan.md", start_line: 2 })], {
					stopReason: "error",
					errorMessage: "provider hiccup",
				}),
		],
	});
	try {
		await t.session.prompt("Hello there.");
		await t.session.prompt("What is in this picture?", { images: [image] });
		// While idle, a custom message with an image and a bash execution join the branch.
		probe.pi.sendMessage({ customType: "probe/picture", content: [{ type: "text", text: "another picture" }, image], display: true });
		await t.session.executeBash("echo relay-usage-check");
		const kinds = t.sessionManager.getBranch().map((e) => (e.type === "message" ? e.message.role : e.type));
		for (const kind of ["user", "assistant", "custom_message", "bashExecution"]) assert.ok(kinds.includes(kind), `${kind} on the branch: ${kinds}`);

		const lines = await captureStderr(() => t.session.prompt("/relay status"));
		const line = lines.join("\n").match(/remaining: ([\d,.\s\u202f]+) tokens before the/);
		assert.ok(line, lines.join("\n"));
		const remaining = Number(line[1].replace(/\D/g, ""));
		const engineTokens = WINDOW_TOKENS - RESERVE - remaining;
		const pi = t.session.getContextUsage();
		assert.equal(engineTokens, pi.tokens, `engine ${engineTokens}, Pi ${pi.tokens}`);
		assert.ok(pi.tokens > 2 * 1_200, "both images are counted (4,800 chars each)");
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
});
