// Coming from pi-context / pi-context-budget (issue 13, part 6): a session those packages wrote,
// written here with Pi's own SessionManager in their entry formats, opened with Relay on the real
// Pi agent loop. Relay reads their notes, boot block, reset and handoff windows as its own, sends
// no second root boot block, and names once what it did not import.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fauxAssistantMessage } from "@earendil-works/pi-ai";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { captureStderr, ofType, resultsOf, startSession, tool } from "./harness.mjs";

const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
const assistant = (text) => fauxAssistantMessage(text);
const noteOp = (op, path, text, at) => ({ op, path, text, createdAt: 1_700_000_000_000, updatedAt: at });

/** A session file as the two packages leave it; `build(sm)` adds the entries. */
function fixture(build) {
	const root = mkdtempSync(join(tmpdir(), "relay-seeds-"));
	const cwd = join(root, "work");
	mkdirSync(cwd, { recursive: true });
	const sm = SessionManager.create(cwd, join(root, "sessions"));
	const ids = build(sm);
	return { root, file: sm.getSessionFile(), sessionId: sm.getSessionId(), ids };
}

function rootWindowFixture() {
	return fixture((sm) => {
		sm.appendCustomMessageEntry("pi-context/boot", "<context_window>\nwindow pcw:x:root\n</context_window>", true);
		sm.appendMessage(user("Plan the migration."));
		sm.appendMessage(assistant("Writing the plan down."));
		sm.appendCustomEntry("pi-context/note", noteOp("write", "plan.md", "step 1: schema\n", 1_700_000_001_000));
		sm.appendCustomEntry("pi-context/note", noteOp("append", "plan.md", "step 2: data\n", 1_700_000_002_000));
		// Theirs without a Relay meaning: a mark-only note operation and their final warning.
		sm.appendCustomEntry("pi-context/note", { op: "write", path: "plan.md", stale: true, createdAt: 1, updatedAt: 2 });
		sm.appendCustomMessageEntry("pi-context/warning", "Your memory is about to be erased.", true);
		sm.appendCustomMessageEntry("pi-context/warning", "Your memory is about to be erased.", true);
		sm.appendMessage(assistant("Plan written."));
	});
}

test("a pi-context root window: its notes are Relay's, no second boot block, one warning", async () => {
	const { root, file } = rootWindowFixture();
	let t;
	const stderr = await captureStderr(async () => {
		t = await startSession({
			root,
			sessionFile: file,
			steps: [tool("notes_read_file", { path: "plan.md" }), tool("notes_list_files_by_prefix"), "Read the plan."],
		});
		await t.session.prompt("What is the plan?");
	});
	try {
		assert.deepEqual(t.errors, []);
		// Their root boot block is the root boot block: Relay adds none.
		assert.equal(ofType(t, "custom_message", "relay/boot").length, 0, "no second root boot block");
		assert.equal(ofType(t, "custom_message", "pi-context/boot").length, 1);
		// The provider saw exactly one <context_window> block.
		const request = JSON.stringify(t.requests[0]);
		assert.equal(request.split("<context_window>").length - 1, 1, request);

		const [read] = resultsOf(t, "notes_read_file");
		assert.equal(read.isError, false, read.text);
		assert.equal(JSON.parse(read.text).content, "step 1: schema\nstep 2: data");
		const [list] = resultsOf(t, "notes_list_files_by_prefix");
		assert.match(list.text, /plan\.md/);

		const warnings = stderr.filter((l) => l.includes("pi-context or pi-context-budget"));
		assert.equal(warnings.length, 1, stderr.join("\n"));
		assert.match(warnings[0], /3 entries/);
		assert.match(warnings[0], /pi-context\/note ×1, pi-context\/warning ×2/);
	} finally {
		await t.dispose();
	}
});

function windowsFixture() {
	return fixture((sm) => {
		const sid = sm.getSessionId();
		sm.appendCustomMessageEntry("pi-context/boot", "<context_window>root</context_window>", true);
		sm.appendMessage(user("Start."));
		sm.appendMessage(assistant("Started."));
		const marker = sm.appendCustomEntry("pi-context/reset-marker", {});
		sm.appendCompaction("<context_window>second</context_window>", marker, 90_000, { piContext: "reset-v2", windowId: `pcw:${sid}:0badcafe` }, true);
		sm.appendMessage(user("Go on."));
		sm.appendMessage(assistant("Going on."));
		const handoff = sm.appendCompaction("Handoff: continue the migration.", null, 120_000, { kind: "handoff", path: "/tmp/handoff-1.md" }, true);
		sm.appendMessage(user("Continue."));
		sm.appendMessage(assistant("Continuing."));
		return { sid, handoff };
	});
}

test("their reset and handoff windows are the windows history_list_windows shows", async () => {
	const { root, file, ids } = windowsFixture();
	let t;
	const stderr = await captureStderr(async () => {
		t = await startSession({
			root,
			sessionFile: file,
			steps: [tool("history_list_windows", { recent_first: false }), "Three windows."],
		});
		await t.session.prompt("List the windows.");
	});
	try {
		assert.deepEqual(t.errors, []);
		const [listed] = resultsOf(t, "history_list_windows");
		assert.equal(listed.isError, false, listed.text);
		const windows = JSON.parse(listed.text).windows.map((w) => [w.window_id, w.opened_by, w.commit]);
		assert.deepEqual(windows, [
			[`pcw:${ids.sid}:root`, "root", null],
			[`pcw:${ids.sid}:0badcafe`, "reset", null],
			[`pcw:${ids.sid}:${ids.handoff}`, "handoff", "budget"],
		]);
		assert.equal(ofType(t, "custom_message", "relay/boot").length, 0);
		// Everything here was imported: no warning.
		assert.deepEqual(stderr.filter((l) => l.includes("pi-context or pi-context-budget")), []);
	} finally {
		await t.dispose();
	}
});
