// The closing window's last actions in the next window's boot block (`<in_progress>`, issue 38
// item 1), on the real Pi agent loop: a scripted run of 12 tool calls, then a reset.
import { test } from "node:test";
import assert from "node:assert/strict";
import { joined, ofType, startSession, tool } from "./harness.mjs";

/** Pi's `write` and `bash` stand-ins: `write` succeeds, `bash` fails on a command with "fail". */
const workTools = (pi) => {
	pi.registerTool({
		name: "write",
		label: "write",
		description: "writes a file",
		parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path"] },
		async execute(_id, params) {
			return { content: [{ type: "text", text: `wrote ${params.path}` }], details: {} };
		},
	});
	pi.registerTool({
		name: "bash",
		label: "bash",
		description: "runs a command",
		parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
		async execute(_id, params) {
			if (params.command.includes("fail")) throw new Error(`exit 1: ${params.command}`);
			return { content: [{ type: "text", text: `ran ${params.command}` }], details: {} };
		},
	});
};

// Twelve calls: CALL-01 … CALL-12, the oldest four (CALL-01 … CALL-04) left out of the section.
const CALLS = [
	tool("bash", { command: "echo CALL-01" }),
	tool("write", { path: "src/CALL-02.rs", content: "x" }),
	tool("bash", { command: "echo CALL-03" }),
	tool("bash", { command: "echo CALL-04" }),
	tool("write", { path: "src/CALL-05.rs", content: "x" }),
	tool("bash", { command: "fail CALL-06" }),
	tool("bash", { command: "echo CALL-07" }),
	tool("write", { path: "src/CALL-08.rs", content: "x" }),
	tool("bash", { command: "echo CALL-09" }),
	tool("notes_write_file", { path: "CALL-10.md", content: "progress" }),
	tool("bash", { command: "echo CALL-11" }),
	tool("write", { path: "src/CALL-12.rs", content: "x" }),
];

const section = (text) => text.match(/<in_progress [^>]*>\n[\s\S]*?<\/in_progress>\n/)?.[0];

test("after a reset the first request carries the closing window's last 8 tool calls, the counts, files and last words", async () => {
	const t = await startSession({
		extraFactories: [workTools],
		steps: [...CALLS, "LAST-WORDS: twelve steps done, next the README.", tool("new_context"), "Resumed."],
	});
	try {
		await t.session.prompt("Do the twelve steps.");
		await t.session.prompt("Now reset.");
		assert.equal(ofType(t, "compaction").length, 1);
		// The first request of the new window: the boot block (with its section) and the continuation.
		const first = t.requests.findIndex((r) => joined(r).includes("<context_window>") && joined(r).includes("previous_window_id: pcw:"));
		assert.ok(first > 0, "a request of the new window");
		const text = joined(t.requests[first]);
		const s = section(text);
		assert.ok(s, text);
		// new_context, the reset itself, is not one of the actions.
		assert.match(s, /^<in_progress tool_calls_shown="8" tool_calls_total="12">\n\(4 earlier tool calls of that window not shown/);
		for (const n of ["01", "03", "04"]) assert.ok(!s.includes(`CALL-${n}`), `CALL-${n} is left out`);
		for (const n of ["05", "06", "07", "08", "09", "10", "11", "12"]) assert.ok(s.includes(`<tool_call n="${Number(n)}" `) && s.includes(`CALL-${n}`), `CALL-${n} is named`);
		assert.ok(!s.includes("new_context"));
		for (const n of [1, 2, 3, 4]) assert.ok(!s.includes(`<tool_call n="${n}" `), `call ${n} is left out`);
		assert.match(s, /<tool_call n="6" tool="bash" result="error" ago="\d+ s">fail CALL-06<\/tool_call>/);
		assert.match(s, /<tool_call n="12" tool="write" result="ok" ago="\d+ s">src\/CALL-12\.rs<\/tool_call>/);
		// Every successful write of the window, each once, not only those among the last eight.
		assert.match(s, /<files_written shown="4" total="4">\nsrc\/CALL-02\.rs\nsrc\/CALL-05\.rs\nsrc\/CALL-08\.rs\nsrc\/CALL-12\.rs\n<\/files_written>/);
		assert.match(s, /<last_words>\nLAST-WORDS: twelve steps done, next the README\.\n<\/last_words>/);
		assert.match(text, /- The <in_progress> below lists your own last actions/);
		// Built once: the compaction's summary, the same bytes in every request of the window.
		assert.ok(ofType(t, "compaction")[0].summary.includes(s));
		const later = t.requests.slice(first).filter((r) => joined(r).includes("<in_progress "));
		assert.ok(later.every((r) => section(joined(r)) === s));
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
	}
});

test("relay.inProgress: false leaves the section out", async () => {
	const t = await startSession({
		extraFactories: [workTools],
		settings: { relay: { inProgress: false } },
		steps: [tool("bash", { command: "echo CALL-01" }), "done", tool("new_context"), "Resumed."],
	});
	try {
		await t.session.prompt("One step.");
		await t.session.prompt("Now reset.");
		const summary = ofType(t, "compaction")[0].summary;
		assert.match(summary, /<context_window>/);
		assert.ok(!summary.includes("in_progress"), summary);
	} finally {
		await t.dispose();
	}
});
