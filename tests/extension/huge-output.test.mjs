// A 1 GiB tool output in the branch (generated streaming to a temp file, never held in this
// process): Relay's start-up load (the one Pi's session_start runs for a file of 8 MiB or more)
// reads it off the event loop with memory bounded by the file's size, and its tools still answer,
// the item cut. (Pi's own SessionManager builds each line as one JavaScript string; on this file
// it ran for minutes and exited with status 1, so Pi itself cannot reopen such a session: that
// part is not run here.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const GiB = 1024 ** 3;
const CHILD = fileURLToPath(new URL("./huge-child.mjs", import.meta.url));

function message(id, parentId, message) {
	return JSON.stringify({ type: "message", id, parentId, timestamp: "2026-12-02T00:00:00.000Z", message }) + "\n";
}

/** Write the session to `file` in 8 MiB pieces: a prompt, a tool call, its 1 GiB result, an answer. */
function generate(file) {
	const fd = openSync(file, "w");
	const w = (s) => writeSync(fd, s);
	w(JSON.stringify({ type: "session", version: 3, id: "HUGE", timestamp: "2026-12-02T00:00:00.000Z", cwd: "/nowhere" }) + "\n");
	w(message("m0000001", null, { role: "user", content: "USER-PROMPT-HUGE: cat the log", timestamp: 1 }));
	w(message("m0000002", "m0000001", { role: "assistant", content: [{ type: "toolCall", id: "call1", name: "bash", arguments: { command: "cat big.log" } }], stopReason: "toolUse", timestamp: 2 }));
	const head = message("m0000003", "m0000002", { role: "toolResult", toolCallId: "call1", toolName: "bash", content: [{ type: "text", text: "@@TEXT@@" }], isError: false, timestamp: 3 });
	const [before, after] = head.split("@@TEXT@@");
	w(before);
	const line = "log line of the huge tool output, 64 bytes long...............\\n";
	const piece = line.repeat((8 * 1024 * 1024) / line.length);
	const needle = "NEEDLE-AT-THE-END-7070";
	let chars = 0;
	while (chars < GiB) {
		w(piece);
		chars += piece.length - piece.split("\\n").length + 1; // each "\\n" escape is one character
	}
	w(needle);
	w(after);
	w(message("m0000004", "m0000003", { role: "assistant", content: [{ type: "text", text: "Read it." }], stopReason: "stop", timestamp: 4 }));
	closeSync(fd);
}

test("a 1 GiB tool output: Relay loads it off the event loop with bounded memory and its tools answer with the item cut", () => {
	const dir = mkdtempSync(join(tmpdir(), "relay-huge-"));
	const file = join(dir, "huge.jsonl");
	try {
		generate(file);
		const size = statSync(file).size;
		assert.ok(size > GiB, `${size} bytes`);
		const r = spawnSync(process.execPath, [CHILD], { env: { ...process.env, RELAY_HUGE_FILE: file }, encoding: "utf8", timeout: 300_000, maxBuffer: 1 << 24 });
		assert.equal(r.status, 0, `${r.status} ${r.signal} ${r.stderr}`);
		const relay = JSON.parse(r.stdout.trim().split("\n").at(-1));
		assert.equal(relay.found, true);
		assert.equal(relay.installed, true);
		assert.ok(relay.ticks > 0, "the event loop ran while the file loaded");
		const items = JSON.parse(relay.items).items;
		assert.equal(items.length, 4, relay.items);
		assert.deepEqual(items.map((i) => i.item_id), ["m0000001", "m0000002", "m0000003", "m0000004"]);
		assert.match(items[0].content, /USER-PROMPT-HUGE/);
		const cut = items[2];
		assert.ok(cut.total_chars > GiB, JSON.stringify(cut));
		assert.equal(cut.truncated, true);
		assert.ok(cut.content.length <= 200, "the item is cut in the listing");
		assert.match(relay.page, /NEEDLE-AT-THE-END-7070/, "a page at the end of the item reads");
		assert.match(relay.search, /NEEDLE-AT-THE-END-7070/, "search reaches the end of the item");
		// Bounded by the file's size: the mirror keeps the item's place in the file, not its text; at
		// the peak the reader's line buffer and the decoded text hold the line once each, while it
		// loads or while a tool reads it back (measured: 3.1 times the file with Node's own share).
		assert.ok(relay.peakKiB * 1024 < 3.5 * size, `peak ${Math.round(relay.peakKiB / 1024)} MiB for a ${Math.round(size / 2 ** 20)} MiB file`);
		console.log(`# relay: ${Math.round(size / 2 ** 20)} MiB loaded in ${relay.ms} ms, peak ${Math.round(relay.peakKiB / 1024)} MiB`);

	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
});
