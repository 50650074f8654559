// History tools on the real Pi agent loop: before and after a reset, after a reload of the JSONL
// file, and after navigating to another branch.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startSession, textOf, tool } from "./harness.mjs";


async function sessionWithReset(after = []) {
	const t = await startSession({
		steps: ["Noted: the codeword is PAPAYA-7.", tool("new_context"), "Fresh window: continuing.", ...after],
	});
	await t.session.prompt("Remember the codeword PAPAYA-7.");
	await t.session.prompt("Start a new context window.");
	return t;
}

test("history tools reach items of an earlier window after a reset", async () => {
	const t = await sessionWithReset([
		tool("history_search_contents", { query: "PAPAYA-7" }),
		"Found it.",
		tool("history_list_windows"),
		"Two windows.",
	]);
	try {
		// The first request after the reset no longer carries the old conversation.
		const afterReset = t.requests[2];
		assert.ok(afterReset, "a continuation request followed the reset");
		const text = afterReset.map((m) => textOf(m.content)).join("\n");
		assert.ok(!text.includes("Remember the codeword"), "old user prompt left the provider context");
		assert.match(text, /<context_window>/);

		await t.session.prompt("What was the codeword?");
		await t.session.prompt("How many windows?");
		const results = t.toolResults();
		const search = results.find((r) => r.toolName === "history_search_contents");
		assert.equal(search.isError, false);
		const found = JSON.parse(search.text);
		assert.deepEqual(Object.keys(found).sort(), ["has_more", "items", "next_offset"], search.text);
		// The root window's prompt and answer are found (besides the search call itself).
		const rootHits = found.items.filter((h) => String(h.window_id).endsWith(":root"));
		assert.deepEqual(rootHits.map((h) => h.role).sort(), ["assistant", "user"], `root-window hits: ${search.text}`);
		const windows = JSON.parse(results.find((r) => r.toolName === "history_list_windows").text).windows;
		assert.equal(windows.length, 2);
		assert.match(windows.map((w) => w.window_id).join(" "), /pcw:[^:]+:[0-9a-f]{8}/);

		// Reading the found item returns its whole text.
		const userHit = rootHits.find((h) => h.role === "user");
		t.script(tool("history_read_item", { window_id: userHit.window_id, item_id: userHit.item_id }), "Read.");
		await t.session.prompt("Read it.");
		const read = t.toolResults().at(-1);
		assert.equal(read.toolName, "history_read_item");
		assert.equal(read.isError, false, read.text);
		assert.match(read.text, /Remember the codeword PAPAYA-7\./);
		assert.deepEqual(t.errors, []);
	} finally {
		await t.dispose();
	}
});

test("wrong arguments get a clear tool error", async () => {
	const t = await startSession({
		steps: [
			tool("history_read_item", { window_id: "pcw:nope:root", item_id: "x" }),
			tool("history_search_contents", { query: "" }),
			tool("history_read_item", { window_id: "pcw:x:root", item_id: "x", offset_chars: -1 }),
			"ok",
		],
	});
	try {
		await t.session.prompt("Try bad arguments.");
		const [unknownWindow, emptyQuery, negative] = t.toolResults();
		assert.equal(unknownWindow.isError, true);
		assert.match(unknownWindow.text, /window/);
		assert.equal(emptyQuery.isError, true);
		assert.match(emptyQuery.text, /query/);
		assert.equal(negative.isError, true);
		assert.match(negative.text, /offset_chars/);
	} finally {
		await t.dispose();
	}
});

test("a session reloaded from its JSONL file gives the same answers", async () => {
	const t = await sessionWithReset([tool("history_list_items", { role: "user", recent_first: false }), "Listed."]);
	const file = t.sessionManager.getSessionFile();
	await t.session.prompt("List user items.");
	const before = JSON.parse(t.toolResults().at(-1).text);
	await t.dispose();
	// The listing before the reload holds both windows' user items, oldest first: the boot block,
	// the two prompts, the hidden continuation, this prompt (else the comparison below would also
	// hold for an empty list).
	assert.deepEqual(
		before.items.map((i) => i.content.split("\n")[0]),
		[
			"<context_window>",
			"Remember the codeword PAPAYA-7.",
			"Start a new context window.",
			"This is the fresh context window you asked for. Check your notes, then continue the task from your next step.",
			"List user items.",
		],
		JSON.stringify(before),
	);

	const again = await startSession({
		root: t.root,
		sessionFile: file,
		steps: [tool("history_list_items", { role: "user", recent_first: false }), "Listed again."],
	});
	try {
		await again.session.prompt("List user items again.");
		const after = JSON.parse(again.toolResults().at(-1).text);
		const ids = (r) => r.items.map((i) => `${i.window_id}/${i.item_id}`);
		// The reloaded session has the same items, plus the prompt of this run and the earlier listing prompt.
		for (const id of ids(before)) assert.ok(ids(after).includes(id), `item ${id} survives the reload`);
		const windows = new Set(after.items.map((i) => i.window_id));
		assert.ok(windows.size >= 2, "items from both windows");
	} finally {
		await again.dispose();
	}
});

test("navigating to another branch changes the answers", async () => {
	const t = await startSession({
		steps: [
			"First answer about MANGO.",
			"Second answer about KIWI.",
			tool("history_search_contents", { query: "KIWI" }),
			"searched",
		],
	});
	try {
		await t.session.prompt("Tell me about MANGO.");
		const branchPoint = t.sessionManager.getLeafId();
		await t.session.prompt("Tell me about KIWI.");
		const kiwiAnswer = t.sessionManager.getLeafId();
		await t.session.prompt("Search KIWI.");
		const hitsBefore = JSON.parse(t.toolResults().at(-1).text).items;
		assert.ok(hitsBefore.some((h) => h.item_id === kiwiAnswer), "the KIWI answer is found on its branch");

		await t.session.navigateTree(branchPoint);
		t.script(tool("history_search_contents", { query: "KIWI" }), "searched again");
		await t.session.prompt("Search again on this branch.");
		const results = t.toolResults();
		const hitsAfter = JSON.parse(results.at(-1).text).items;
		// The only KIWI left on this branch is the search call itself: exactly one hit, an
		// assistant item, and not the KIWI answer of the other branch.
		assert.equal(hitsAfter.length, 1, `one hit after navigating: ${results.at(-1).text}`);
		assert.equal(hitsAfter[0].role, "assistant");
		assert.notEqual(hitsAfter[0].item_id, kiwiAnswer, `the KIWI answer is gone: ${results.at(-1).text}`);
	} finally {
		await t.dispose();
	}
});
