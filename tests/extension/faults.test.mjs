// Faults under the real Pi agent loop: a full disk and a read-only folder under Relay's state
// folder and the handoff folder. The handoff still resets the window (the next window starts from
// it), the user is told once, and nothing throws into Pi. The faults are real: a 64 KiB tmpfs
// filled to the last byte, a tmpfs mounted read-only (root ignores file modes, not a read-only
// mount). Mounting needs root; without it the test fails, it does not skip.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { joined, ofType, resultsOf, startSession, textOf, tool } from "./harness.mjs";
import { budgetEnv, enforce, GOAL, HANDOFF, NEXT, newRoot, WINDOW } from "./budget-helpers.mjs";

function mountTmpfs(dir, options) {
	mkdirSync(dir, { recursive: true });
	try {
		execFileSync("mount", ["-t", "tmpfs", "-o", options, "tmpfs", dir], { stdio: "pipe" });
	} catch (e) {
		throw new Error(`could not mount a tmpfs at ${dir} (${options}): the fault cannot be produced: ${e.stderr ?? e.message}`);
	}
	return () => execFileSync("umount", [dir]);
}

/** Fill `dir` (a small tmpfs) until a write fails with ENOSPC, and prove a new file cannot be written. */
function fill(dir) {
	const chunk = Buffer.alloc(4096, 120);
	for (let i = 0; ; i++) {
		try {
			appendFileSync(join(dir, "filler"), chunk);
		} catch (e) {
			assert.equal(e.code, "ENOSPC", `filling ${dir}: ${e.message}`);
			break;
		}
		assert.ok(i < 10_000, "the tmpfs never filled up");
	}
	assert.throws(() => writeFileSync(join(dir, "probe"), "x"), { code: "ENOSPC" }, "the disk is really full");
	rmSync(join(dir, "probe"));
}

/** A UI context whose notify records (Pi's SDK has none by default: hasUI would be false). */
function recordingUI(notices) {
	const noop = () => {};
	return {
		select: async () => undefined,
		confirm: async () => false,
		input: async () => undefined,
		notify: (text, level) => notices.push({ text, level }),
		onTerminalInput: () => noop,
		setStatus: noop,
		setWorkingMessage: noop,
		setWorkingVisible: noop,
		setWorkingIndicator: noop,
		setHiddenThinkingLabel: noop,
		setWidget: noop,
		setFooter: noop,
		setHeader: noop,
		setTitle: noop,
		custom: async () => undefined,
		pasteToEditor: noop,
		setEditorText: noop,
		getEditorText: () => "",
		editor: async () => undefined,
		addAutocompleteProvider: noop,
		setEditorComponent: noop,
		getEditorComponent: () => undefined,
		theme: undefined,
		getAllThemes: () => [],
		getTheme: () => undefined,
		setTheme: () => ({ success: false, error: "UI not available" }),
		getToolsExpanded: () => false,
		setToolsExpanded: noop,
	};
}

/**
 * Warm up, then the model writes a handoff above the handoff threshold while every one of Relay's
 * files fails (`fault` makes the state folder and `<cwd>/.ai-work` fail and returns the expected
 * error text); the window must still reset from the handoff.
 */
async function handoffUnderFault(fault) {
	const root = newRoot();
	const env = budgetEnv(root);
	const stateMount = join(root, "state");
	const handoffMount = join(root, "work", ".ai-work");
	const undo = [];
	const notices = [];
	const stderr = [];
	const original = console.error;
	try {
		const expected = fault(stateMount, handoffMount, undo);
		console.error = (...args) => stderr.push(args.map(String).join(" "));
		const t = await startSession({
			root,
			contextWindow: WINDOW,
			settings: enforce(),
			bindings: { uiContext: recordingUI(notices) },
			steps: [
				{ text: "warm-up", tokens: 5_000 },
				{ ...tool("context_handoff", HANDOFF), tokens: 36_000 },
				"Resumed from the handoff kept in the session.",
			],
		});
		try {
			await t.session.prompt("Warm up.");
			await t.session.prompt("Hand off now.");
			console.error = original;

			// The reset happened, from the handoff.
			const compactions = ofType(t, "compaction");
			assert.equal(compactions.length, 1, "the handoff reset the window");
			assert.equal(compactions[0].details.source, "handoff");
			const fresh = t.requests.at(-1);
			assert.match(joined(fresh), /<handoff>[\s\S]*GOAL-7731[\s\S]*NEXT-4410[\s\S]*<\/handoff>/, "the next window starts from the handoff");
			assert.ok(joined(fresh).includes(GOAL) && joined(fresh).includes(NEXT));
			assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Resumed from the handoff kept in the session.");

			// The model is told the file is missing; the tool did not fail.
			const [result] = resultsOf(t, "context_handoff");
			assert.equal(result.isError, false, result.text);
			const reply = JSON.parse(result.text);
			assert.equal(reply.written, false);
			assert.match(reply.saved, expected);
			const handoffDir = join(handoffMount, "handoffs");
			const left = existsSync(handoffDir) ? readdirSync(handoffDir) : [];
			assert.deepEqual(left, [], "no handoff file, no half file, no temp file");
			assert.deepEqual(readdirSync(handoffMount).filter((n) => n !== "filler" && n !== "handoffs"), []);

			// The user is told once, as a warning, and nothing else reached stderr or Pi's errors.
			assert.equal(notices.length, 1, JSON.stringify(notices));
			assert.equal(notices[0].level, "warning");
			assert.match(notices[0].text, expected);
			assert.match(notices[0].text, /not reported again/);
			assert.deepEqual(stderr.filter((l) => l.includes("relay")), [], "no further reports");
			assert.deepEqual(t.errors, []);
			// No event reached the log, and no half line either (a full disk may leave it empty).
			const log = join(stateMount, "context-budget", "events.jsonl");
			assert.equal(existsSync(log) ? readFileSync(log, "utf8") : "", "");
		} finally {
			await t.dispose();
		}
	} finally {
		console.error = original;
		env.restore();
		for (const u of undo.reverse()) u();
	}
}

test("disk full: the handoff still resets the window, the user is told once, nothing throws", async () => {
	await handoffUnderFault((state, handoffs, undo) => {
		for (const dir of [state, handoffs]) {
			undo.push(mountTmpfs(dir, "size=64k"));
			fill(dir);
		}
		return /No space left on device/;
	});
});

test("read-only folders: the handoff still resets the window, the user is told once, nothing throws", async () => {
	await handoffUnderFault((state, handoffs, undo) => {
		for (const dir of [state, handoffs]) {
			undo.push(mountTmpfs(dir, "size=64k,ro"));
			assert.throws(() => writeFileSync(join(dir, "probe"), "x"), { code: "EROFS" }, "the folder is really read-only");
		}
		return /Read-only file system/;
	});
});
