// Tool-result clearing (issue 26, item 3) on the real Pi agent loop: old tool results give way to
// a one-line stub in later requests (a record appended at turn_end, applied in the context hook), the newest,
// the excluded and Relay's own notes/history results stay whole, the session keeps every result,
// a stub reads back through history_read_item, and /reload and /tree build the same request.
import { test } from "node:test";
import assert from "node:assert/strict";
import { captureStderr, ofType, readJsonl, startSession, textOf, tool } from "./harness.mjs";

const CHARS = 16_000; // about 4,000 tokens per result
const page = (n) => `PAGE-${n} ` + `line ${n} of a long listing; `.repeat(CHARS).slice(0, CHARS);

/** Two tools with large results: fetch_page (cleared) and keep_me (named in excludeTools). */
const bigTools = (pi) => {
	pi.registerTool({
		name: "fetch_page",
		label: "fetch",
		description: "fetches page n",
		parameters: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
		async execute(_id, params) {
			return { content: [{ type: "text", text: page(params.n) }], details: {} };
		},
	});
	pi.registerTool({
		name: "keep_me",
		label: "keep",
		description: "a result that must stay",
		parameters: { type: "object", properties: {} },
		async execute() {
			return { content: [{ type: "text", text: `KEEP-ME ${page(99)}` }], details: {} };
		},
	});
};

const SETTINGS = { relay: { clearToolResults: { triggerTokens: 20_000, keep: 1, clearAtLeast: 5_000, excludeTools: ["keep_me"] } } };
const NOTE = "NOTE-BODY ".repeat(CHARS / 10);
const STUB = /^\[Relay cleared this (\S+) result from the context to save room: .* history_read_item (\{.*\})\]$/;

/** The tool results of one request: name → text, in order. */
const resultsIn = (request) => request.filter((m) => m.role === "toolResult").map((m) => ({ tool: m.toolName, text: textOf(m.content) }));

/** The model reads the first stub of the request and asks for the result back, as the stub says. */
const followStub = (context) => {
	const stub = context.messages.filter((m) => m.role === "toolResult").map((m) => textOf(m.content)).find((t) => STUB.test(t));
	assert.ok(stub, "a stub to follow");
	return tool("history_read_item", JSON.parse(stub.match(STUB)[2]));
};

const RUN = [
	tool("notes_write_file", { path: "big.md", content: NOTE }),
	tool("notes_read_file", { path: "big.md" }),
	tool("fetch_page", { n: 1 }),
	tool("keep_me"),
	tool("fetch_page", { n: 2 }),
	tool("fetch_page", { n: 3 }),
	tool("fetch_page", { n: 4 }),
	"fetched",
];

async function filled() {
	const t = await startSession({ settings: SETTINGS, extraFactories: [bigTools], steps: RUN });
	await t.session.prompt("Fetch the pages.");
	return t;
}

test("old tool results become stubs; the newest, the excluded and Relay's own stay whole; the session keeps them all", async () => {
	const t = await filled();
	try {
		assert.deepEqual(t.errors, []);
		const last = resultsIn(t.requests.at(-1));
		assert.deepEqual(last.map((r) => r.tool), ["notes_write_file", "notes_read_file", "fetch_page", "keep_me", "fetch_page", "fetch_page", "fetch_page"]);
		const [, notes, first, kept, second, third, fourth] = last;
		assert.ok(notes.text.includes(NOTE.trim()), "a notes result is never cleared");
		assert.ok(kept.text.startsWith("KEEP-ME"), "an excluded tool's result stays");
		assert.ok(fourth.text.startsWith("PAGE-4"), "the newest result stays");
		for (const [r, n] of [[first, 1], [second, 2]]) {
			const m = r.text.match(STUB);
			assert.ok(m, `page ${n} is a stub: ${r.text.slice(0, 200)}`);
			assert.equal(m[1], "fetch_page");
			assert.ok(r.text.includes(`${page(n).length.toLocaleString("en-US")} characters`), r.text);
		}
		// Page 3 alone would free less than clearAtLeast: it stays until a clearing pays.
		assert.ok(third.text.startsWith("PAGE-3"));
		// One clearing, on the branch: one record holding the two stubs the requests carry (no
		// context_edit entry: Pi would walk the whole branch for each).
		assert.equal(ofType(t, "context_edit").length, 0);
		const [record] = ofType(t, "custom", "relay/clear-tool-results");
		assert.equal(record.data.items, 2);
		assert.deepEqual(record.data.stubs.map((s) => s.text), [first.text, second.text]);
		assert.ok(record.data.tokensFreed >= 5_000, JSON.stringify(record.data));
		// /relay says what the clearing freed (the footer reads the same record).
		const said = (await captureStderr(() => t.session.prompt("/relay"))).join("\n");
		assert.match(said, /tool-result clearing: from 20,000 tokens, the newest 1 kept, at least 5,000 tokens at a time/);
		assert.ok(said.includes(`; 1 clearing in this window freed ${record.data.tokensFreed.toLocaleString("en-US")} tokens (1 on this branch`), said);
		// The session file still holds every result whole.
		const file = readJsonl(t.sessionManager.getSessionFile());
		const pages = file.filter((l) => l.type === "message" && l.message.toolName === "fetch_page").map((l) => textOf(l.message.content));
		assert.deepEqual(pages, [1, 2, 3, 4].map(page));
		// A stub reads back through history_read_item: the whole result.
		t.script(followStub, "read back");
		await t.session.prompt("Show page 1 again.");
		const back = t.toolResults().at(-1);
		assert.equal(back.toolName, "history_read_item");
		assert.equal(back.isError, false, back.text);
		assert.ok(back.text.includes(page(1)), back.text.slice(0, 300));
	} finally {
		await t.dispose();
	}
});

test("/reload and /tree build the same request; a navigation to before the clearing sees the results again", async () => {
	const t = await filled();
	try {
		const before = t.requests.at(-1);
		const lastResult = t.sessionManager.getBranch().findLast((e) => e.type === "message" && e.message.role === "toolResult").id;
		const secondPage = t.sessionManager.getBranch().filter((e) => e.type === "message" && e.message.toolName === "fetch_page")[1].id;
		const prefix = (request) => JSON.stringify(request.slice(0, before.length).map(({ timestamp, ...m }) => m));
		const want = prefix(before);

		await t.session.reload();
		t.script("after reload");
		await t.session.prompt("Again after the reload.");
		assert.equal(prefix(t.requests.at(-1)), want, "the reloaded session sends the same prefix");

		await t.session.navigateTree(lastResult);
		t.script("after tree");
		await t.session.prompt("Again from the last result.");
		assert.equal(prefix(t.requests.at(-1)), want, "the navigated branch sends the same prefix");

		// Before the clearing's edits the branch holds the results whole again (edits are branch-relative).
		await t.session.navigateTree(secondPage);
		t.script("from before");
		await t.session.prompt("From before the clearing.");
		const pages = resultsIn(t.requests.at(-1)).filter((r) => r.tool === "fetch_page").map((r) => r.text.slice(0, 6));
		assert.deepEqual(pages, ["PAGE-1", "PAGE-2"]);
	} finally {
		await t.dispose();
	}
});

test("a provider that reuses tool call ids: each stub replaces the one result it was made for", async () => {
	// Some providers number tool calls per answer (`call_0` every time): the stubs find their
	// results by call id and by how many results of that id came before.
	const steps = [1, 2, 3, 4].map((n) => tool("fetch_page", { n }, "call_0")).concat(["fetched"]);
	const t = await startSession({ settings: { relay: { clearToolResults: { triggerTokens: 10_000, keep: 2, clearAtLeast: 5_000 } } }, extraFactories: [bigTools], steps });
	try {
		await t.session.prompt("Fetch the pages.");
		assert.deepEqual(t.errors, []);
		const last = resultsIn(t.requests.at(-1));
		assert.equal(last.length, 4);
		assert.match(last[0].text, STUB);
		assert.ok(last[0].text.includes("fetch_page"), last[0].text);
		assert.match(last[1].text, STUB);
		assert.ok(last[2].text.startsWith("PAGE-3"), last[2].text.slice(0, 80));
		assert.ok(last[3].text.startsWith("PAGE-4"), last[3].text.slice(0, 80));
		const [record] = ofType(t, "custom", "relay/clear-tool-results");
		assert.deepEqual(record.data.stubs.map((s) => [s.call, s.nth ?? 0]), [["call_0", 0], ["call_0", 1]]);
	} finally {
		await t.dispose();
	}
});

test("an invalid clearToolResults key is reported by its path and the others apply", async () => {
	let t;
	const stderr = await captureStderr(async () => {
		t = await startSession({
			settings: { relay: { clearToolResults: { keep: -1, excludeTools: "keep_me", clearAtLeast: 5_000, triggerTokens: 20_000 } } },
			extraFactories: [bigTools],
			steps: RUN,
		});
		await t.session.prompt("Fetch the pages.");
	});
	try {
		const warned = stderr.join("\n");
		assert.match(warned, /relay\.clearToolResults\.keep: expected a whole number of tool results, 0 or more, got -1; using the default \(3\)/);
		assert.match(warned, /relay\.clearToolResults\.excludeTools: expected an array of tool names \(non-empty strings\), got "keep_me"/);
		// keep 3 (the default) and no exclusion: page 1 and keep_me are cleared, the newest three stay.
		const last = resultsIn(t.requests.at(-1));
		const cleared = last.filter((r) => STUB.test(r.text)).map((r) => r.tool);
		assert.deepEqual(cleared, ["fetch_page", "keep_me"]);
		assert.ok(last.slice(-3).every((r) => r.text.startsWith("PAGE-")));
	} finally {
		await t.dispose();
	}
});
