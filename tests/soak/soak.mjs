// The soak run: one generated session of thousands of turns through the real Pi agent loop (SDK
// AgentSession, SessionManager, SettingsManager, faux provider; tests/extension/harness.mjs) with
// Relay loaded. A seeded PRNG scripts the user and the model: tool outputs from a few bytes to
// 48 KB in a small window (threshold crossings and borrowed turns), notes, new_context, committed
// handoffs (phases of enforce mode), overflows, aborts, queued follow-ups and steers, /compact and
// /reload. Every user message carries a numbered marker «user-N», so the session-file checker
// (crates/relay-core/examples/check_session.rs) can prove that none was dropped or replayed.
//
// While it runs it samples the process's heap and RSS (after a forced GC) and times every call into
// the native engine (per hook), so the caller can compare the quarters of the run.
import { createRequire } from "node:module";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { fauxAssistantMessage, fauxToolCall, startSession, textOf } from "../extension/harness.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** A small seeded PRNG (mulberry32): the same seed gives the same session. */
export function prng(seed) {
	let a = seed >>> 0;
	const next = () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
	return {
		next,
		int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
		chance: (p) => next() < p,
		pick: (list) => list[Math.floor(next() * list.length)],
		/** Log-uniform in [lo, hi]: as many tiny outputs as large ones. */
		logUniform: (lo, hi) => Math.round(Math.exp(Math.log(lo) + next() * (Math.log(hi) - Math.log(lo)))),
	};
}

const WORDS = "parser window importer csv tokens branch commit reset notes handoff budget crate module test fixture cache queue stream".split(" ");

/** `bytes` of deterministic text (words and newlines) from `seed`. */
export function filler(bytes, seed) {
	const r = prng(seed);
	const parts = [];
	let n = 0;
	while (n < bytes) {
		const w = r.pick(WORDS) + (r.chance(0.1) ? "\n" : " ");
		parts.push(w);
		n += w.length;
	}
	return parts.join("").slice(0, bytes);
}

/** The native addon the extension loads (native.ts: RELAY_ADDON wins), so the soak can time it. */
function timedAddon(timings, engines) {
	const path = join(ROOT, "extension/native/relay.linux-x64-gnu.node");
	const addonPath = process.env.RELAY_ADDON ?? path;
	process.env.RELAY_ADDON = addonPath;
	const addon = createRequire(import.meta.url)(addonPath);
	if (addon.Engine.__soakTimed) throw new Error("the soak's engine wrapper is already installed in this process");
	const Base = addon.Engine;
	const hookOf = (json) => {
		const at = json.indexOf('"event":{"type":"');
		if (at < 0) return /^\{"type":"([a-z_]+)"/.exec(json)?.[1] ?? "?";
		const from = at + '"event":{"type":"'.length;
		return json.slice(from, json.indexOf('"', from));
	};
	class TimedEngine extends Base {
		constructor(...args) {
			super(...args);
			// Each /reload builds a new engine: the old one must be collected, not kept alive.
			engines.created += 1;
			engines.registry.register(this, null);
		}
		handle(json, feed) {
			const t0 = performance.now();
			const out = super.handle(json, feed);
			const ms = performance.now() - t0;
			// What Pi appended arrives with the input: its share is timed with the input it came with.
			timings.record(hookOf(json), ms);
			return out;
		}
	}
	TimedEngine.__soakTimed = true;
	TimedEngine.Untimed = Base;
	addon.Engine = TimedEngine;
	return addon;
}

/** A forced full GC (the flag set at run time; the soak runs under plain `node --test`). */
function gcFunction() {
	setFlagsFromString("--expose-gc");
	return runInNewContext("gc");
}

const median = (xs) => {
	if (xs.length === 0) return NaN;
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.floor(s.length / 2)];
};

/**
 * Run the soak: `turns` model turns (provider requests) from `seed`. Returns the session file, the
 * number of user messages sent (markers 1..N), the counts of what happened, and the samples.
 */
export async function runSoak({ turns, seed, window = 24_000, log = () => {} }) {
	const r = prng(seed);
	const root = mkdtempSync(join(tmpdir(), "relay-soak-"));
	const budgetFile = join(root, "context-budget.json");
	// Phases: Relay's own window resets (observe) and budget handoffs (enforce), switched through
	// the budget file, which Relay reads again at every input.
	const budget = (mode) =>
		writeFileSync(budgetFile, JSON.stringify({ mode, maxHandoffsPerSession: 1_000_000, loop: { maxHandoffsWithoutProgress: 1_000_000, withinTurns: 1 } }));
	let mode = "observe";
	budget(mode);
	const saved = { cfg: process.env.PI_CONTEXT_BUDGET_CONFIG, state: process.env.PI_CONTEXT_BUDGET_STATE_DIR };
	process.env.PI_CONTEXT_BUDGET_CONFIG = budgetFile;
	process.env.PI_CONTEXT_BUDGET_STATE_DIR = join(root, "state");

	const timings = {
		turn: 0,
		byHook: new Map(),
		record(hook, ms) {
			let list = this.byHook.get(hook);
			if (!list) this.byHook.set(hook, (list = []));
			list.push([this.turn, ms]);
		},
	};
	const engines = { created: 0, collected: 0, alive: [] };
	engines.registry = new FinalizationRegistry(() => {
		engines.collected += 1;
	});
	timedAddon(timings, engines);
	const gc = gcFunction();

	const counts = {
		prompts: 0,
		userMessages: 0,
		followUps: 0,
		steers: 0,
		aborts: 0,
		reloads: 0,
		compacts: 0,
		compactsRefused: 0,
		overflows: 0,
		newContexts: 0,
		handoffCalls: 0,
		blocked: 0,
		steersAnswered: 0,
		toolOutputs: 0,
		toolOutputBytes: 0,
		largestToolOutput: 0,
		summarizerCalls: 0,
		modePhases: 1,
		notices: 0,
	};
	let marker = 0;
	const nextUser = () => `«user-${++marker}»`;
	let plan = [];
	let handoffN = 0;
	let noteN = 0;
	let t;
	const slow = { started: undefined };

	// The model: it answers what Relay asks for (a handoff when blocked or asked, notes when its
	// turn is borrowed), else works through the current prompt's plan.
	let lastReply;
	const model = (context) => {
		faux.appendResponses([model]);
		timings.turn += 1;
		// The host's whole turn: from the previous reply of this run to this request (Pi, Relay,
		// the tools).
		const now = performance.now();
		if (lastReply !== undefined) timings.record("(whole turn)", now - lastReply);
		queueMicrotask(() => {
			lastReply = performance.now();
		});
		if ((context.systemPrompt ?? "").startsWith("You are a context summarization assistant")) {
			// Pi's own summarizer must never run while Relay is on: counted, and checked by the caller.
			counts.summarizerCalls += 1;
			return text("## Goal\nsummary");
		}
		const messages = context.messages;
		const trailing = [];
		for (let i = messages.length - 1; i >= 0 && messages[i].role === "toolResult"; i--) trailing.push(messages[i]);
		const last = messages.at(-1);
		const lastText = last ? textOf(last.content) : "";
		const handoff = () => {
			counts.handoffCalls += 1;
			handoffN += 1;
			return call("context_handoff", {
				goal: `GOAL-${handoffN}: keep the soak going`,
				next_step: `NEXT-${handoffN}: continue with the plan`,
				facts: `FACTS-${handoffN}: ${counts.toolOutputs} tool outputs so far`,
			});
		};
		if (trailing.some((m) => m.isError && /Only context_handoff is allowed/.test(textOf(m.content)))) {
			counts.blocked += 1;
			if (r.chance(0.85)) return handoff();
		}
		if (trailing.some((m) => m.isError && /Do not call (other tools|any tool) now/.test(textOf(m.content)))) return text("Ending the turn.");
		if (last?.role === "user" && /Call context_handoff now/.test(lastText)) {
			if (r.chance(0.85)) return handoff();
			return text("Stopping without a handoff.");
		}
		if (last?.role === "user" && /will be reset as soon as you finish this turn/.test(lastText)) {
			counts.steersAnswered += 1;
			plan.unshift({ text: "Notes are up to date." });
			return call("notes_append_to_file", { path: "soak/progress.md", content: `window full at turn ${timings.turn}\n` });
		}
		const step = plan.shift();
		if (!step) return text(`Done with turn ${timings.turn}.`);
		if (step.followUp || step.steer) {
			counts.userMessages += 1;
			if (step.followUp) {
				counts.followUps += 1;
				void t.session.followUp(`${nextUser()} a follow-up queued while the model works`);
			} else {
				counts.steers += 1;
				void t.session.steer(`${nextUser()} a steer sent while the model works`);
			}
			return reply(plan.shift() ?? { text: "Working on it." });
		}
		return reply(step);
	};
	// Turn one plan step into a reply.
	const reply = (step) => {
		if (step.followUp || step.steer) return text("Working on it.");
		if (step.error) {
			counts.overflows += 1;
			return fauxAssistantMessage([], { stopReason: "error", errorMessage: `prompt is too long: ${window * 3} tokens > ${window} maximum` });
		}
		if (step.tools) return fauxAssistantMessage(step.tools.map((s) => fauxToolCall(s.tool, s.args)), { stopReason: "toolUse" });
		if (step.tool) {
			if (step.tool === "new_context") counts.newContexts += 1;
			if (step.tool === "context_handoff") counts.handoffCalls += 1;
			return call(step.tool, step.args);
		}
		return text(step.text ?? "ok");
	};
	const call = (name, args) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
	const text = (s) => fauxAssistantMessage(s);

	// The user's tools: a read of any size, and one that runs until the user aborts.
	const tools = (pi) => {
		pi.registerTool({
			name: "soak_read",
			label: "read",
			description: "reads part of the workspace",
			parameters: { type: "object", properties: { bytes: { type: "number" }, seed: { type: "number" } } },
			async execute(_id, params) {
				const body = filler(params.bytes, params.seed);
				counts.toolOutputs += 1;
				counts.toolOutputBytes += body.length;
				counts.largestToolOutput = Math.max(counts.largestToolOutput, body.length);
				return { content: [{ type: "text", text: body }], details: {} };
			},
		});
		pi.registerTool({
			name: "soak_wait",
			label: "wait",
			description: "waits until aborted",
			parameters: { type: "object", properties: {} },
			async execute(_id, _params, signal) {
				const aborted = new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
				slow.started?.resolve();
				await aborted;
				return { content: [{ type: "text", text: "stopped" }], details: {} };
			},
		});
	};

	const read = () => ({ tool: "soak_read", args: { bytes: r.logUniform(8, 48_000), seed: r.int(1, 2 ** 30) } });
	const workStep = () => {
		const x = r.next();
		if (x < 0.55) return read();
		if (x < 0.65) return { tools: [read(), read()] };
		if (x < 0.75) return { tool: "notes_write_file", args: { path: `soak/n${r.int(1, 6)}.md`, content: `note ${++noteN}\n${filler(r.logUniform(4, 2_000), noteN)}` } };
		if (x < 0.83) return { tool: "notes_append_to_file", args: { path: `soak/n${r.int(1, 6)}.md`, content: `line ${++noteN}\n` } };
		if (x < 0.87) return { tool: "notes_read_file", args: { path: `soak/n${r.int(1, 6)}.md` } };
		if (x < 0.9) return { tool: "notes_list_files_by_prefix", args: { prefix: "soak/" } };
		if (x < 0.93) return { tool: "history_list_windows", args: {} };
		if (x < 0.96) return { tool: "history_list_items", args: { limit: 6, max_chars_per_item: 120 } };
		return { tool: "history_search_contents", args: { query: r.pick(WORDS) } };
	};

	const faux = { appendResponses: () => {} };
	t = await startSession({
		root,
		contextWindow: window,
		settings: { compaction: { enabled: true, reserveTokens: 4_096, keepRecentTokens: 1 } },
		extraFactories: [tools],
	});
	faux.appendResponses = (steps) => t.faux.appendResponses(steps);
	t.faux.setResponses([model]);
	const file = t.sessionManager.getSessionFile();
	const samples = [];
	const sample = async () => {
		gc();
		// Finalizers run after the collection, on a later task.
		await new Promise((resolve) => setImmediate(resolve));
		const m = process.memoryUsage();
		samples.push({ turn: timings.turn, heap: m.heapUsed, rss: m.rss, file: statSync(file, { throwIfNoEntry: false })?.size ?? 0, engines: engines.created - engines.collected });
	};
	const errors = [];
	// Relay's notices (no UI in the SDK: the adapter prints them to stderr) are counted, not shown.
	const printError = console.error;
	console.error = (...args) => {
		counts.notices += 1;
		const line = args.map(String).join(" ");
		if (!/^(relay: |Context budget)/.test(line)) errors.push(`stderr: ${line.slice(0, 300)}`);
	};
	try {
		while (timings.turn < turns) {
			counts.prompts += 1;
			if (counts.prompts % 60 === 0) {
				mode = mode === "observe" ? "enforce" : "observe";
				budget(mode);
				counts.modePhases += 1;
			}
			// Between prompts: a /reload or a /compact now and then.
			const between = r.next();
			if (between < 0.03) {
				counts.reloads += 1;
				await t.session.reload();
			} else if (between < 0.05) {
				counts.compacts += 1;
				try {
					await t.session.compact();
				} catch (e) {
					// Pi refuses a compaction right after one ("Already compacted").
					counts.compactsRefused += 1;
					if (!/compact/i.test(String(e?.message))) errors.push(`compact: ${e?.message}`);
				}
			}
			plan = [];
			const kind = r.next();
			let abort = false;
			const n = r.int(0, 4);
			for (let i = 0; i < n; i++) plan.push(workStep());
			if (kind < 0.08) plan.splice(r.int(0, plan.length), 0, { tool: "new_context", args: {} });
			else if (kind < 0.16) plan.splice(r.int(0, plan.length), 0, { tool: "context_handoff", args: { goal: `VOLUNTARY-${++handoffN}`, next_step: `continue ${handoffN}`, facts: `at prompt ${counts.prompts}` } });
			else if (kind < 0.21) {
				abort = true;
				plan.splice(r.int(0, plan.length), 0, { tool: "soak_wait", args: {} });
			} else if (kind < 0.29) plan.splice(r.int(0, plan.length), 0, { followUp: true });
			else if (kind < 0.33) plan.splice(r.int(0, plan.length), 0, { steer: true });
			else if (kind < 0.36) plan.splice(r.int(0, plan.length), 0, { error: true });
			counts.userMessages += 1;
			const prompt = `${nextUser()} prompt ${counts.prompts}: please work on it`;
			// Only turns within a run are timed (not the gap with /reload, /compact or sampling).
			lastReply = undefined;
			if (abort) {
				slow.started = Promise.withResolvers();
				const running = t.session.prompt(prompt);
				const outcome = await Promise.race([slow.started.promise.then(() => "started"), running.then(() => "done", () => "done")]);
				if (outcome === "started") {
					counts.aborts += 1;
					await t.session.abort();
				}
				await running.catch((e) => errors.push(`prompt: ${e?.message}`));
				slow.started = undefined;
			} else {
				await t.session.prompt(prompt).catch((e) => errors.push(`prompt: ${e?.message}`));
			}
			if (counts.prompts % 5 === 0) await sample();
			if (counts.prompts % 100 === 0) log(`soak: ${timings.turn}/${turns} turns, ${counts.prompts} prompts, heap ${(samples.at(-1).heap / 2 ** 20).toFixed(0)} MiB, rss ${(samples.at(-1).rss / 2 ** 20).toFixed(0)} MiB, session file ${(samples.at(-1).file / 2 ** 20).toFixed(1)} MiB, engines alive ${samples.at(-1).engines}`);
		}
		await sample();
		const branch = t.sessionManager.getBranch();
		const compactions = branch.filter((e) => e.type === "compaction");
		const bySource = {};
		for (const c of compactions) bySource[c.details?.source ?? "pi"] = (bySource[c.details?.source ?? "pi"] ?? 0) + 1;
		return {
			seed,
			window,
			turns: timings.turn,
			file,
			root,
			counts,
			resets: compactions.length,
			resetsBySource: bySource,
			entries: branch.length,
			fileBytes: statSync(file).size,
			samples,
			timings,
			engines: { created: engines.created, aliveAtEnd: samples.at(-1).engines, aliveMax: Math.max(...samples.map((x) => x.engines)) },
			errors: [...errors, ...t.errors.map((e) => `extension: ${e?.error ?? e?.message ?? JSON.stringify(e)}`)],
		};
	} finally {
		await t.dispose();
		console.error = printError;
		if (saved.cfg === undefined) delete process.env.PI_CONTEXT_BUDGET_CONFIG;
		else process.env.PI_CONTEXT_BUDGET_CONFIG = saved.cfg;
		if (saved.state === undefined) delete process.env.PI_CONTEXT_BUDGET_STATE_DIR;
		else process.env.PI_CONTEXT_BUDGET_STATE_DIR = saved.state;
	}
}

/**
 * The engine's own time per hook on the soak's session, away from the host's noise (other
 * processes, Pi's own work, GC): a fresh engine loads the first quarter of the session file, then
 * the whole file, and each time answers every per-request hook `calls` times (the mean is kept).
 */
export function engineTiming(file, { calls = 2_000 } = {}) {
	const Engine = createRequire(import.meta.url)(process.env.RELAY_ADDON).Engine;
	const Plain = Engine.Untimed ?? Engine;
	const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
	const header = JSON.parse(lines[0]);
	const moment = { nowMs: 1_800_000_000_000, tzOffsetMinutes: 0, usage: null, model: "faux/faux-1", contextWindow: 24_000, hasPendingMessages: false, pendingWork: 0, cwd: header.cwd, subagent: false };
	const events = [{ type: "input" }, { type: "before_agent_start" }, { type: "context" }, { type: "tool_call", toolName: "soak_read", toolCallId: "t1" }, { type: "tool_result", toolName: "soak_read", toolCallId: "t1", isError: false }, { type: "turn_end", toolResults: 1 }, { type: "agent_end" }, { type: "agent_before_settle", outcome: "completed" }];
	const out = {};
	for (const [label, fraction] of [["quarter", 0.25], ["whole", 1]]) {
		const cut = lines.slice(0, Math.max(2, Math.floor(lines.length * fraction)));
		const path = `${file}.${label}.jsonl`;
		writeFileSync(path, cut.join("\n") + "\n");
		const engine = new Plain();
		const opened = JSON.parse(engine.handle(JSON.stringify({ type: "open", sessionId: header.id, file: path, size: statSync(path).size, leaf: JSON.parse(cut.at(-1)).id, background: false })));
		if (opened.needsBranch) throw new Error(`the engine did not load ${path}`);
		const row = { entries: cut.length - 1 };
		for (const event of events) {
			const json = JSON.stringify({ type: "hook", observation: { moment, event } });
			for (let i = 0; i < 200; i++) engine.handle(json);
			const t0 = performance.now();
			for (let i = 0; i < calls; i++) engine.handle(json);
			row[event.type] = ((performance.now() - t0) * 1000) / calls;
		}
		out[label] = row;
	}
	return out;
}

/** Medians of the memory samples and hook times per quarter of the run (by turn). */
export function quarters(result) {
	const q = (turn) => Math.min(3, Math.floor((4 * turn) / Math.max(1, result.turns + 1)));
	const mem = [0, 1, 2, 3].map((i) => {
		const s = result.samples.filter((x) => q(x.turn) === i);
		return { heap: median(s.map((x) => x.heap)), rss: median(s.map((x) => x.rss)), file: median(s.map((x) => x.file)), n: s.length };
	});
	const hooks = {};
	for (const [hook, list] of result.timings.byHook) {
		const per = [0, 1, 2, 3].map((i) => list.filter(([turn]) => q(turn) === i).map(([, ms]) => ms));
		hooks[hook] = { calls: list.length, medianMs: per.map(median), p99Ms: per.map((xs) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)] : NaN)) };
	}
	return { mem, hooks };
}
