// Window memory on the real Pi agent loop (issue 3): notes, the boot block, the low-budget
// reminder, get_context_remaining and the relay settings.
import { test } from "node:test";
import assert from "node:assert/strict";
import { captureStderr, readJsonl, startSession, textOf, tool } from "./harness.mjs";

// A half-hour offset east of UTC without daylight saving: a timestamp rendered in UTC (or with
// `Z`) cannot pass for local time here. Node re-reads TZ when it is assigned.
process.env.TZ = "Asia/Kolkata";

const ofType = (entries, type, customType) =>
	entries.filter((e) => e.type === type && (customType === undefined || e.customType === customType));
const branchOf = (t, type, customType) => ofType(t.sessionManager.getBranch(), type, customType);
const userTexts = (request) => request.filter((m) => m.role === "user").map((m) => textOf(m.content));
const parse = (result) => JSON.parse(result.text);
/** Pi's default compaction reserve (settings compaction.reserveTokens). */
const PI_RESERVE = 16_384;
const NO_PI_COMPACTION = { compaction: { enabled: false } };
const grouped = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");

/** Local ISO 8601 with an explicit offset, as the boot block must render a note's `updated`. */
function localIso(ms) {
	const offset = -new Date(ms).getTimezoneOffset();
	const local = new Date(ms + offset * 60_000).toISOString().slice(0, 19);
	const abs = Math.abs(offset);
	const pad = (n) => String(n).padStart(2, "0");
	return `${local}${offset < 0 ? "-" : "+"}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

/** An extension factory recording Pi's own usage figure at every `context` and `tool_call` event. */
function usageProbe() {
	const seen = { context: [], toolCall: [] };
	const factory = (pi) => {
		pi.on("context", (_e, ctx) => {
			seen.context.push(ctx.getContextUsage());
		});
		pi.on("tool_call", (e, ctx) => {
			seen.toolCall.push({ toolName: e.toolName, usage: ctx.getContextUsage() });
		});
	};
	return { seen, factory };
}


// ---------------------------------------------------------------------------------------------
// 1. Notes tools

test("notes: write, append, list, read line ranges, search, delete; each write is one relay/note entry", async () => {
	const big = "é".repeat(500_001); // 1,000,002 UTF-8 bytes, 500,001 characters
	const t = await startSession({
		steps: [
			tool("notes_write_file", { path: "plan/todo.md", content: "step 1\nstep 2\nstep 3\n" }),
			tool("notes_append_to_file", { path: "plan/todo.md", content: "step 4\nstep 5\n" }),
			tool("notes_write_file", { path: "facts.md", content: "the codeword is PAPAYA\nport 8080\n" }),
			tool("notes_list_files_by_prefix", { prefix: "plan/" }),
			tool("notes_read_file", { path: "plan/todo.md", start_line: -2, end_line: -1 }),
			tool("notes_read_file", { path: "plan/todo.md", start_line: 2, end_line: 3 }),
			tool("notes_search_contents", { query: "PAPAYA" }),
			tool("notes_search_contents", { query: "papaya" }),
			tool("notes_search_contents", { query: "step", path_prefix: "plan/", limit: 2 }),
			"Notes are in place.",
		],
	});
	try {
		await t.session.prompt("Keep notes.");
		const results = t.toolResults();
		assert.equal(results.length, 9);
		for (const r of results) assert.equal(r.isError, false, `${r.toolName}: ${r.text}`);
		const [w1, a1, w2, list, tail, middle, search, caseless, limited] = results.map(parse);
		assert.deepEqual(w1, { path: "plan/todo.md", lines: 3, bytes: 21, deleted: false });
		assert.deepEqual(a1, { path: "plan/todo.md", lines: 5, bytes: 35, deleted: false });
		assert.equal(w2.lines, 2);
		assert.equal(list.total, 1);
		assert.deepEqual(
			list.files.map((f) => [f.path, f.lines, f.bytes]),
			[["plan/todo.md", 5, 35]],
			"the prefix keeps facts.md out",
		);
		assert.deepEqual(
			{ s: tail.start_line, e: tail.end_line, n: tail.total_lines, c: tail.content },
			{ s: 4, e: 5, n: 5, c: "step 4\nstep 5" },
		);
		assert.equal(middle.content, "step 2\nstep 3");
		assert.equal(search.match_count, 1);
		assert.deepEqual(search.matches, [{ path: "facts.md", lines: [{ line: 1, text: "the codeword is PAPAYA" }] }]);
		assert.equal(caseless.match_count, 0, "search is case-sensitive");
		assert.equal(limited.match_count, 5);
		assert.equal(limited.truncated, true);
		assert.deepEqual(limited.matches[0].lines.map((l) => l.line), [1, 2]);

		// Every successful write is one relay/note custom entry on the branch, in order.
		const notes = branchOf(t, "custom", "relay/note");
		assert.deepEqual(
			notes.map((e) => [e.data.kind, e.data.path, e.data.content]),
			[
				["write", "plan/todo.md", "step 1\nstep 2\nstep 3\n"],
				["append", "plan/todo.md", "step 4\nstep 5\n"],
				["write", "facts.md", "the codeword is PAPAYA\nport 8080\n"],
			],
		);

		// Rejected writes are tool errors and append nothing.
		t.script(
			tool("notes_write_file", { path: "../x", content: "escape" }),
			tool("notes_write_file", { path: "/abs", content: "absolute" }),
			tool("notes_append_to_file", { path: "a//b", content: "empty segment" }),
			tool("notes_write_file", { path: "big.md", content: big }),
			tool("notes_append_to_file", { path: "plan/todo.md", content: big }),
			"Some writes failed.",
		);
		await t.session.prompt("Try bad writes.");
		const bad = t.toolResults().slice(9);
		assert.equal(bad.length, 5);
		for (const r of bad) assert.equal(r.isError, true, `${r.toolName} must fail: ${r.text.slice(0, 200)}`);
		for (const r of bad.slice(0, 3)) assert.match(r.text, /path/);
		for (const r of bad.slice(3)) assert.match(r.text, /1000000|1,000,000/);
		assert.equal(branchOf(t, "custom", "relay/note").length, 3, "no entry for a rejected write");

		// Empty content deletes a note (and that deletion is persisted as well).
		t.script(
			tool("notes_write_file", { path: "facts.md", content: "" }),
			tool("notes_list_files_by_prefix"),
			tool("notes_read_file", { path: "facts.md" }),
			"Deleted.",
		);
		await t.session.prompt("Delete facts.md.");
		const [del, all, gone] = t.toolResults().slice(14);
		assert.deepEqual(parse(del), { path: "facts.md", deleted: true });
		assert.deepEqual(parse(all).files.map((f) => f.path), ["plan/todo.md"]);
		assert.equal(gone.isError, true);
		assert.match(gone.text, /facts\.md/);
		const after = branchOf(t, "custom", "relay/note");
		assert.equal(after.length, 4);
		assert.deepEqual([after[3].data.kind, after[3].data.path, after[3].data.content], ["write", "facts.md", ""]);
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
});

// ---------------------------------------------------------------------------------------------
// 2. Notes in the boot block of the next window

test("notes written in one window are listed in the next window's boot block, with local-time stamps", async () => {
	const plan = "goal: ship café ☕\nnext: write tests\n"; // multi-byte: bytes ≠ characters
	const t = await startSession({
		steps: [
			tool("notes_write_file", { path: "plan.md", content: plan }),
			tool("notes_append_to_file", { path: "log/day1.md", content: "started" }),
			tool("new_context"),
			"Resumed from plan.md.",
		],
	});
	try {
		await t.session.prompt("Write notes, then start a new window.");
		const [compaction] = branchOf(t, "compaction");
		assert.ok(compaction, "the reset wrote a compaction entry");
		const ops = Object.fromEntries(branchOf(t, "custom", "relay/note").map((e) => [e.data.path, e.data]));
		const expected = [
			`<note path="plan.md">2 lines, ${Buffer.byteLength(plan)} UTF-8 bytes, updated ${localIso(ops["plan.md"].atMs)}`,
			`<note path="log/day1.md">1 lines, 7 UTF-8 bytes, updated ${localIso(ops["log/day1.md"].atMs)}`,
		];
		assert.equal(Buffer.byteLength(plan), plan.length + 3, "the fixture is multi-byte (é: 2 bytes, ☕: 3 bytes)");
		const fresh = t.requests.at(-1);
		const firstUser = userTexts(fresh)[0];
		for (const [where, text] of [
			["compaction summary", compaction.summary],
			["first user message of the next request", firstUser],
		]) {
			assert.match(text, /<context_window>/, where);
			for (const line of expected) assert.ok(text.includes(line), `${where} lists ${line}\n---\n${text}`);
			const stamps = [...text.matchAll(/updated (\S+)/g)].map((m) => m[1]);
			assert.equal(stamps.length, 2, where);
			for (const s of stamps) {
				assert.match(s, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/, `${where}: ${s}`);
				assert.ok(!s.endsWith("Z"), `${where}: ${s} is not UTC-Z`);
				assert.ok(s.endsWith("+05:30"), `${where}: ${s} carries the local offset`);
			}
		}
		assert.ok(!t.requests.at(-1).some((m) => textOf(m.content).includes("Write notes, then start")), "old prompt gone");
	} finally {
		await t.dispose();
	}
});

// ---------------------------------------------------------------------------------------------
// 3. Notes across resets, reloads and branches

test("notes survive a reset and a JSONL reload; a sibling branch never sees them", async () => {
	const t = await startSession({
		steps: [
			"Hello.",
			tool("notes_write_file", { path: "keep.md", content: "KEEP-ME\n" }),
			tool("new_context"),
			"Fresh window.",
			tool("notes_read_file", { path: "keep.md" }),
			"Read after the reset.",
			tool("notes_read_file", { path: "keep.md", start_line: -1 }),
			"Read after /reload.",
		],
	});
	await t.session.prompt("Start.");
	const beforeNote = t.sessionManager.getLeafId();
	await t.session.prompt("Write keep.md and reset.");
	await t.session.prompt("Read keep.md.");
	assert.equal(branchOf(t, "compaction").length, 1);
	const afterReset = t.toolResults().at(-1);
	assert.equal(afterReset.isError, false, afterReset.text);
	assert.equal(parse(afterReset).content, "KEEP-ME");
	// A /reload re-evaluates the extension (a new engine) and replays the branch.
	await t.session.reload();
	await t.session.prompt("Read keep.md after the reload.");
	const afterReload = t.toolResults().at(-1);
	assert.equal(afterReload.isError, false, afterReload.text);
	assert.equal(parse(afterReload).content, "KEEP-ME");
	assert.equal(branchOf(t, "custom", "relay/note").length, 1, "replay appends nothing");
	const file = t.sessionManager.getSessionFile();
	await t.dispose();

	const again = await startSession({
		root: t.root,
		sessionFile: file,
		steps: [tool("notes_list_files_by_prefix"), tool("notes_read_file", { path: "keep.md" }), "Still there."],
	});
	try {
		await again.session.prompt("List notes after the reload.");
		const [list, read] = again.toolResults().slice(-2);
		assert.deepEqual(parse(list).files.map((f) => f.path), ["keep.md"]);
		assert.equal(parse(read).content, "KEEP-ME");
		const mainLeaf = again.sessionManager.getLeafId();

		// A sibling branch that forks before the note was written.
		await again.session.navigateTree(beforeNote);
		again.script(
			tool("notes_list_files_by_prefix"),
			tool("notes_read_file", { path: "keep.md" }),
			tool("notes_write_file", { path: "sibling.md", content: "only here" }),
			"Sibling done.",
		);
		await again.session.prompt("List notes on the sibling branch.");
		const [siblingList, siblingRead] = again.toolResults().slice(-3);
		assert.deepEqual(parse(siblingList), { files: [], total: 0, truncated: false, next_offset: null });
		assert.equal(siblingRead.isError, true);
		assert.match(siblingRead.text, /keep\.md/);

		// Back on the main branch: keep.md is there, the sibling's note is not.
		await again.session.navigateTree(mainLeaf);
		again.script(tool("notes_list_files_by_prefix"), "Main again.");
		await again.session.prompt("List notes on the main branch.");
		assert.deepEqual(parse(again.toolResults().at(-1)).files.map((f) => f.path), ["keep.md"]);
		assert.deepEqual(again.errors, []);
	} finally {
		await again.dispose();
	}
});

// ---------------------------------------------------------------------------------------------
// 4. The boot block

test("boot block: one visible relay/boot at session start, not duplicated by a reload or tree navigation", async () => {
	const t = await startSession({ steps: ["First answer.", "Second answer."] });
	const boots = () => ofType(t.sessionManager.getEntries(), "custom_message", "relay/boot");
	assert.equal(boots().length, 1, "persisted at session_start, before any prompt");
	assert.equal(boots()[0].display, true);
	await t.session.prompt("First.");
	await t.session.prompt("Second.");
	const sessionId = t.sessionManager.getSessionId();
	const first = userTexts(t.requests[0]);
	assert.match(first[0], /^<context_window>/, "the boot block opens the first request");
	assert.ok(first[0].includes(`first_window_id: pcw:${sessionId}:root`), first[0]);
	assert.ok(first[0].includes(`current_window_id: pcw:${sessionId}:root`), first[0]);
	assert.match(first[1], /First\./);
	// Static: the second request starts with the very same block and adds none.
	assert.equal(userTexts(t.requests[1])[0], first[0]);
	assert.equal(userTexts(t.requests[1]).filter((u) => u.includes("<context_window>")).length, 1);
	assert.equal(boots().length, 1);
	await t.session.reload();
	assert.equal(boots().length, 1, "/reload adds no boot block");
	const firstAnswer = t.sessionManager.getBranch().find((e) => e.type === "message" && e.message.role === "assistant").id;
	const file = t.sessionManager.getSessionFile();
	await t.dispose();

	const again = await startSession({ root: t.root, sessionFile: file, steps: ["Third answer.", "Sibling answer."] });
	try {
		const bootsAgain = () => ofType(again.sessionManager.getEntries(), "custom_message", "relay/boot");
		assert.equal(bootsAgain().length, 1, "reload adds no boot block");
		await again.session.prompt("Third.");
		assert.equal(bootsAgain().length, 1);
		assert.equal(readJsonl(file).filter((l) => l.type === "custom_message" && l.customType === "relay/boot").length, 1);
		assert.equal(userTexts(again.requests[0])[0], first[0], "the reloaded session sends the same block");

		await again.session.navigateTree(firstAnswer);
		await again.session.prompt("Sibling.");
		assert.equal(bootsAgain().length, 1, "navigation adds no boot block");
		assert.equal(ofType(again.sessionManager.getBranch(), "custom_message", "relay/boot").length, 1);
		assert.equal(userTexts(again.requests[1]).filter((u) => u.includes("<context_window>")).length, 1);
		assert.deepEqual(again.errors, []);
	} finally {
		await again.dispose();
	}
});

// ---------------------------------------------------------------------------------------------
// 5. The low-budget reminder

test("reminder: persisted once per window when remaining capacity crosses reserve + margin, no extra call", async () => {
	const probe = usageProbe();
	const t = await startSession({
		contextWindow: 100_000,
		settings: NO_PI_COMPACTION,
		extraFactories: [probe.factory],
		steps: [{ text: "Below the threshold.", tokens: 50_000 }, { text: "Big answer.", tokens: 70_000 }, "Next answer."],
	});
	const reminders = () => branchOf(t, "custom_message", "relay/reminder");
	try {
		await t.session.prompt("One.");
		await t.session.prompt("Two.");
		assert.equal(reminders().length, 0, "59,000 physical tokens left (> 40,960): no reminder");
		await t.session.prompt("Three.");
		assert.equal(t.requests.length, 3, "the reminder costs no provider call");
		assert.equal(reminders().length, 1);
		const reminder = reminders()[0];
		assert.equal(reminder.display, true);
		const text = textOf(reminder.content);
		assert.match(text, /^<context_window_guidance>\n[\s\S]*\n<\/context_window_guidance>$/);
		// The figure is frozen when run Three starts (before its prompt joins the context): at
		// least the 70,000 tokens of the last answer, at most what Pi reports for Three's request.
		const crossing = probe.seen.context[2];
		// Three's request: the 70,000 of the last answer, its prompt and the reminder itself.
		assert.ok(crossing.tokens >= 70_000 && crossing.tokens < 70_200, JSON.stringify(crossing));
		const frozen = Number(/about ([\d,]+) tokens remain before it resets/.exec(text)?.[1].replaceAll(",", ""));
		const measured = 100_000 - PI_RESERVE - frozen;
		assert.ok(measured >= 70_000 && measured <= crossing.tokens, `${text} (measured ${measured}, Pi ${crossing.tokens})`);
		assert.equal(userTexts(t.requests[2]).filter((u) => u.includes("<context_window_guidance>")).length, 1, "run Three's request carries it");

		// More requests above the threshold in the same window: still one reminder; the next request carries it.
		t.script({ text: "Even bigger.", tokens: 80_000 }, "And more.");
		await t.session.prompt("Four.");
		await t.session.prompt("Five.");
		assert.equal(reminders().length, 1, "once per window");
		assert.equal(t.requests.length, 5);
		assert.equal(userTexts(t.requests[3]).filter((u) => u.includes("<context_window_guidance>")).length, 1);
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
});

test("reminder: not duplicated after a JSONL reload; a new window after a reset gets its own", async () => {
	const first = await startSession({
		contextWindow: 100_000,
		settings: NO_PI_COMPACTION,
		steps: [{ text: "Big answer.", tokens: 70_000 }, { text: "Another.", tokens: 72_000 }],
	});
	await first.session.prompt("One.");
	await first.session.prompt("Two.");
	assert.equal(branchOf(first, "custom_message", "relay/reminder").length, 1);
	const file = first.sessionManager.getSessionFile();
	await first.dispose();

	const t = await startSession({
		root: first.root,
		sessionFile: file,
		contextWindow: 100_000,
		settings: NO_PI_COMPACTION,
		steps: [{ text: "Still big.", tokens: 75_000 }, "Again.", tool("new_context"), "Fresh window.", { text: "Big again.", tokens: 70_000 }, "Reminded."],
	});
	const reminders = () => branchOf(t, "custom_message", "relay/reminder");
	try {
		await t.session.prompt("Three.");
		await t.session.prompt("Four.");
		assert.equal(reminders().length, 1, "the reloaded session knows the window was reminded");
		assert.equal(readJsonl(file).filter((l) => l.customType === "relay/reminder").length, 1);

		await t.session.prompt("Reset.");
		assert.equal(branchOf(t, "compaction").length, 1);
		assert.equal(reminders().length, 1, "a fresh window starts without a reminder");
		await t.session.prompt("Five.");
		await t.session.prompt("Six.");
		const all = reminders();
		assert.equal(all.length, 2, "the new window gets its own reminder");
		const branch = t.sessionManager.getBranch();
		const compactionAt = branch.findIndex((e) => e.type === "compaction");
		assert.ok(branch.indexOf(all[1]) > compactionAt, "the second reminder belongs to the new window");
		assert.equal(t.requests.length, 6, "no extra provider call for either reminder");
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
});

test("reminder: navigation within the reminded branch adds none; a sibling branch that never got one gets its own", async () => {
	const t = await startSession({
		contextWindow: 100_000,
		settings: NO_PI_COMPACTION,
		steps: [{ text: "Big answer.", tokens: 70_000 }, "Reminded.", { text: "Answer A.", tokens: 75_000 }, "Answer B.", "Answer C.", "Sibling answer."],
	});
	const onBranch = () => branchOf(t, "custom_message", "relay/reminder");
	const everywhere = () => ofType(t.sessionManager.getEntries(), "custom_message", "relay/reminder");
	const assistant = (text) =>
		t.sessionManager.getBranch().find((e) => e.type === "message" && e.message.role === "assistant" && textOf(e.message.content) === text).id;
	try {
		await t.session.prompt("One.");
		const bigAnswer = assistant("Big answer.");
		await t.session.prompt("Two.");
		assert.equal(onBranch().length, 1);
		await t.session.prompt("Three.");
		const answerA = assistant("Answer A.");
		await t.session.prompt("Four.");
		// Back to an entry after the reminder, still above the threshold: no second reminder.
		await t.session.navigateTree(answerA);
		await t.session.prompt("Five.");
		assert.equal(onBranch().length, 1, "the branch already holds this window's reminder");
		assert.equal(everywhere().length, 1);
		// A sibling that forks before the reminder was written crosses the threshold on its own.
		await t.session.navigateTree(bigAnswer);
		assert.equal(onBranch().length, 0);
		await t.session.prompt("Sibling.");
		assert.equal(onBranch().length, 1, "the sibling gets its own reminder");
		assert.equal(everywhere().length, 2);
		assert.equal(t.requests.length, 6, "still no extra provider call");
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
});

test("reminder: relay.reminderMarginTokens moves the threshold", async () => {
	const t = await startSession({
		contextWindow: 100_000,
		settings: { ...NO_PI_COMPACTION, relay: { reminderMarginTokens: 1000 } },
		steps: [{ text: "Big answer.", tokens: 70_000 }, { text: "Bigger answer.", tokens: 83_000 }, "Last."],
	});
	const reminders = () => branchOf(t, "custom_message", "relay/reminder");
	try {
		await t.session.prompt("One.");
		await t.session.prompt("Two.");
		assert.equal(reminders().length, 0, "30,000 left is above 16,384 + 1,000");
		await t.session.prompt("Three.");
		assert.equal(reminders().length, 1, "17,000 left is at most 17,384");
		assert.match(textOf(reminders()[0].content), /about [1-9]\d{0,2} tokens remain/, "about 616 − trailing tokens");
	} finally {
		await t.dispose();
	}
});

// ---------------------------------------------------------------------------------------------
// 6. get_context_remaining

test("get_context_remaining matches Pi's own usage figure and the reserve from Pi's settings", async () => {
	for (const reserve of [undefined, 20_000]) {
		const probe = usageProbe();
		const compaction = reserve === undefined ? { enabled: false } : { enabled: false, reserveTokens: reserve };
		const t = await startSession({
			contextWindow: 100_000,
			settings: { compaction },
			extraFactories: [probe.factory],
			steps: [
				{ ...tool("get_context_remaining"), tokens: 50_000 },
				{ ...tool("get_context_remaining"), tokens: 95_000 },
				"done",
			],
		});
		try {
			await t.session.prompt("How much is left?");
			const results = t.toolResults();
			assert.equal(results.length, 2);
			const calls = probe.seen.toolCall.filter((c) => c.toolName === "get_context_remaining");
			assert.equal(calls.length, 2);
			assert.equal(calls[0].usage.tokens, 50_000, "Pi counts the reply that made the call");
			const r = reserve ?? PI_RESERVE;
			for (const [i, result] of results.entries()) {
				const expected = Math.max(0, calls[i].usage.contextWindow - calls[i].usage.tokens - r);
				assert.deepEqual(parse(result), { remaining_tokens: expected }, `reserve ${r}, call ${i}`);
			}
			assert.equal(parse(results[0]).remaining_tokens, 100_000 - 50_000 - r);
			assert.equal(parse(results[1]).remaining_tokens, 0, "never negative");
		} finally {
			await t.dispose();
		}
	}
});

test("get_context_remaining after a reset: Pi's figure when the reply reports usage, null when Pi cannot estimate", async () => {
	// A provider that reports no usage for one reply leaves Pi without an estimate after a reset.
	let zeroUsage = false;
	const noUsage = (pi) => {
		pi.on("message_end", (event) => {
			if (!zeroUsage || event.message.role !== "assistant") return undefined;
			const usage = { ...event.message.usage, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 };
			return { message: { ...event.message, usage } };
		});
	};
	const probe = usageProbe();
	let t;
	t = await startSession({
		contextWindow: 100_000,
		extraFactories: [noUsage, probe.factory],
		steps: [
			{ text: "Big.", tokens: 60_000 },
			tool("new_context"),
			tool("get_context_remaining"),
			"Fresh.",
			tool("new_context"),
			() => {
				zeroUsage = true;
				return tool("get_context_remaining");
			},
			"Unknown.",
		],
	});
	try {
		await t.session.prompt("Big answer.");
		await t.session.prompt("Reset.");
		assert.equal(branchOf(t, "compaction").length, 1);
		assert.equal(probe.seen.context.at(-2).tokens, null, "Pi has no figure at the first request of the window");
		const first = t.toolResults().at(-1);
		assert.equal(first.toolName, "get_context_remaining");
		const usage = probe.seen.toolCall.at(-1).usage;
		assert.ok(usage.tokens !== null && usage.tokens < 60_000, "the pre-reset usage is not carried over");
		assert.deepEqual(parse(first), { remaining_tokens: Math.max(0, 100_000 - usage.tokens - PI_RESERVE) });

		await t.session.prompt("Reset again.");
		assert.equal(branchOf(t, "compaction").length, 2);
		const second = t.toolResults().at(-1);
		assert.equal(probe.seen.toolCall.at(-1).usage.tokens, null, "no usage reported since the reset");
		assert.deepEqual(parse(second), { remaining_tokens: null });
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
});

// ---------------------------------------------------------------------------------------------
// 7. Settings

test("an invalid relay.reminderMarginTokens is reported once and the default applies", async () => {
	for (const bad of [-5, "big"]) {
		let t;
		const lines = await captureStderr(async () => {
			t = await startSession({
				contextWindow: 100_000,
				settings: { ...NO_PI_COMPACTION, relay: { reminderMarginTokens: bad } },
				steps: [{ text: "Big answer.", tokens: 70_000 }, "Next.", "Last."],
			});
			await t.session.prompt("One.");
			await t.session.prompt("Two.");
			await t.session.prompt("Three.");
		});
		try {
			const warnings = lines.filter((l) => l.includes("relay.reminderMarginTokens"));
			assert.equal(warnings.length, 1, `reported once for ${JSON.stringify(bad)}: ${JSON.stringify(lines)}`);
			assert.match(warnings[0], new RegExp(String(bad)));
			// The default margin (24,576) applies: 30,000 physical tokens left is at most 40,960.
			assert.equal(branchOf(t, "custom_message", "relay/reminder").length, 1);
			assert.deepEqual(t.errors, []);
		} finally {
			await t.dispose();
		}
	}
});

test("relay.enabled false: no boot block, no reminder, Pi's own compaction runs", async () => {
	const t = await startSession({
		contextWindow: 100_000,
		settings: { compaction: { enabled: true, keepRecentTokens: 1 }, relay: { enabled: false } },
		steps: [{ text: "Big answer.", tokens: 70_000 }, "Next.", "PI-SUMMARY of the conversation", "PI-SUMMARY of the turn prefix"],
	});
	try {
		await t.session.prompt("One.");
		await t.session.prompt("Two.");
		const entries = t.sessionManager.getEntries();
		assert.equal(ofType(entries, "custom_message", "relay/boot").length, 0, "no boot block");
		assert.equal(t.requests.length, 2, "both prompts reached the model");
		assert.ok(!t.requests.some((r) => r.some((m) => textOf(m.content).includes("<context_window"))), "nothing injected");
		assert.equal(ofType(entries, "custom_message", "relay/reminder").length, 0, "no reminder");
		await t.session.compact();
		const compactions = ofType(t.sessionManager.getEntries(), "compaction");
		assert.equal(compactions.length, 1);
		assert.match(compactions[0].summary, /PI-SUMMARY/, "Pi's summarizer wrote the compaction");
		assert.equal(compactions[0].details?.relay, undefined);
		assert.equal(ofType(t.sessionManager.getEntries(), "custom", "relay/reset").length, 0);
	} finally {
		await t.dispose();
	}
});
