// Child process of faults.test.mjs (not a test file itself): runs one fault scenario on the real Pi
// agent loop and prints one JSON line of what it saw on stdout; the parent asserts on it. The
// parent starts it in a mount namespace of its own (`unshare`; with a user namespace when not
// root), where it may mount: a 64 KiB tmpfs filled to the last byte, or a tmpfs mounted read-only
// (root ignores file modes, not a read-only mount), over Relay's state folder and the handoff
// folder. The mounts vanish with the namespace when this process exits.
import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { joined, ofType, resultsOf, startSession, textOf, tool } from "./harness.mjs";
import { budgetEnv, enforce, HANDOFF, newRoot, WINDOW } from "./budget-helpers.mjs";

class SetupError extends Error {}

function mountTmpfs(dir, options) {
	mkdirSync(dir, { recursive: true });
	try {
		execFileSync("mount", ["-t", "tmpfs", "-o", options, "tmpfs", dir], { stdio: "pipe" });
	} catch (e) {
		throw new SetupError(`could not mount a tmpfs at ${dir} (${options}): the fault cannot be produced: ${e.stderr ?? e.message}`);
	}
}

/** The error code writing a new file in `dir` gets (null: it was written); the file is removed. */
function probe(dir) {
	try {
		writeFileSync(join(dir, "probe"), "x");
		return null;
	} catch (e) {
		return e.code;
	} finally {
		// A full disk still creates the empty file; a read-only folder has none.
		rmSync(join(dir, "probe"), { force: true });
	}
}

/** Fill `dir` (a small tmpfs) until a write fails with ENOSPC. */
function fill(dir) {
	const chunk = Buffer.alloc(4096, 120);
	for (let i = 0; i < 10_000; i++) {
		try {
			appendFileSync(join(dir, "filler"), chunk);
		} catch (e) {
			if (e.code !== "ENOSPC") throw new SetupError(`filling ${dir}: ${e.message}`);
			return;
		}
	}
	throw new SetupError(`the tmpfs at ${dir} never filled up`);
}

const faults = {
	/** A full disk: each folder a 64 KiB tmpfs, filled. */
	full(dir) {
		mountTmpfs(dir, "size=64k");
		fill(dir);
	},
	/** A read-only folder: each folder a tmpfs mounted read-only. */
	readonly(dir) {
		mountTmpfs(dir, "size=64k,ro");
	},
};

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
 * files fails (the state folder and `<cwd>/.ai-work` under the fault).
 */
async function handoffUnderFault(fault) {
	const root = newRoot();
	const env = budgetEnv(root);
	const stateMount = join(root, "state");
	const handoffMount = join(root, "work", ".ai-work");
	const notices = [];
	const stderr = [];
	const original = console.error;
	try {
		const probes = {};
		for (const dir of [stateMount, handoffMount]) {
			fault(dir);
			probes[dir] = probe(dir);
		}
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
			const handoffDir = join(handoffMount, "handoffs");
			const log = join(stateMount, "context-budget", "events.jsonl");
			return {
				root,
				probes: Object.values(probes),
				compactionSources: ofType(t, "compaction").map((c) => c.details.source),
				freshRequest: joined(t.requests.at(-1)),
				lastText: textOf(t.sessionManager.getBranch().at(-1).message.content),
				handoffResults: resultsOf(t, "context_handoff"),
				handoffFiles: existsSync(handoffDir) ? readdirSync(handoffDir) : [],
				handoffMountFiles: readdirSync(handoffMount),
				notices,
				stderr,
				piErrors: t.errors.map(String),
				log: existsSync(log) ? readFileSync(log, "utf8") : "",
			};
		} finally {
			await t.dispose();
		}
	} finally {
		console.error = original;
		env.restore();
	}
}

const name = process.argv[2];
if (!faults[name]) throw new Error(`faults-child: unknown scenario ${name}; the scenarios are ${Object.keys(faults).join(", ")}`);
try {
	const result = await handoffUnderFault(faults[name]);
	process.stdout.write(`${JSON.stringify(result)}\n`);
} catch (e) {
	if (!(e instanceof SetupError)) throw e;
	process.stdout.write(`${JSON.stringify({ setupError: e.message })}\n`);
}
