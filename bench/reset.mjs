// Issue 4 benchmark: what one window reset costs with Relay (`new_context`) beside Pi's native
// compaction of the same session, on the real Pi SDK loop with pi-ai's faux provider.
//
//   node bench/reset.mjs
//
// Env: RELAY_RESET_TURNS (turns in the built session, default 200), RELAY_RESET_CHARS (characters
// of each user and assistant text, default 2000), RELAY_RESET_TRIALS (default 3).
//
// Each session is built through the real agent loop (session.prompt per turn, faux replies),
// persisted to a temp session folder, then reopened from a copy of its JSONL for every trial.
// No timed assertions: the script prints figures.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { fauxAssistantMessage, fauxProvider, fauxToolCall } from "@earendil-works/pi-ai";
import { createAgentSession, DefaultResourceLoader, ModelRuntime, SessionManager, SettingsManager } from "@earendil-works/pi-coding-agent";

const RELAY = fileURLToPath(new URL("../extension/src/index.ts", import.meta.url));
const { native } = await import(new URL("../extension/src/native.ts", import.meta.url).href);

// Instrumentation: time every call through the addon's one door, `Engine.handle(input, feed)`
// (the extension and this script share the one loaded library, so wrapping the prototype sees the
// extension's calls; the time includes the feed of what Pi appended). Each call is labelled by its
// input: `hook:<event>`, `tool:<name>`, else the input's type (`done`, `configure`, `open`, …).
// Used to split the reset path into Relay's own time and Pi's. The jobs the engine asks for run
// on the libuv pool (`runJob`), off this thread, and are not counted.
const addonCalls = [];
{
	const proto = native().Engine.prototype;
	const orig = proto.handle;
	const labelOf = (json) => {
		let input;
		try {
			input = JSON.parse(json);
		} catch {
			return "invalid input";
		}
		if (input?.type === "hook") return `hook:${input.observation?.event?.type}`;
		if (input?.type === "tool") return `tool:${input.name}`;
		return String(input?.type);
	};
	proto.handle = function (...args) {
		const a = performance.now();
		try {
			return orig.apply(this, args);
		} finally {
			const ms = performance.now() - a;
			addonCalls.push({ t: a, label: labelOf(args[0]), ms });
		}
	};
}
const addonBetween = (from, to) => {
	const inside = addonCalls.filter((c) => c.t >= from && c.t < to);
	const by = {};
	for (const c of inside) by[c.label] = (by[c.label] ?? 0) + c.ms;
	return { total: inside.reduce((n, c) => n + c.ms, 0), by };
};
const TURNS = Number(process.env.RELAY_RESET_TURNS ?? 200);
const CHARS = Number(process.env.RELAY_RESET_CHARS ?? 2000);
const TRIALS = Number(process.env.RELAY_RESET_TRIALS ?? 3);
// Large enough that 200 turns of 2 KB stay far below every threshold: the only reset is the one measured.
const CONTEXT_WINDOW = 1_000_000;
const SUMMARY_CHARS = 3000; // the scripted summary Pi's compaction receives from the faux model

const root = mkdtempSync(join(tmpdir(), "relay-bench-reset-"));
// Pi's agent folder and Relay's state folder stay inside the temp root, never in ~/.pi.
process.env.PI_CODING_AGENT_DIR = join(root, "agent");
process.env.PI_CONTEXT_BUDGET_STATE_DIR ??= join(root, "context-budget");
process.on("exit", () => rmSync(root, { recursive: true, force: true }));

/** Deterministic filler text of `n` characters (turn `i`, role `r`). */
function filler(i, r, n) {
	const words = ["parser", "window", "branch", "retry", "socket", "module", "render", "budget", "handoff", "cache", "buffer", "schema", "commit", "fixture"];
	let s = `${r} turn ${i}:`;
	let k = i * 7 + r.length;
	while (s.length < n) {
		k = (k * 1103515245 + 12345) & 0x7fffffff;
		s += " " + words[k % words.length] + (k % 11 === 0 ? ".\n" : "");
	}
	return s.slice(0, n);
}

const textOf = (content) =>
	typeof content === "string" ? content : (content ?? []).map((b) => (b.type === "text" ? b.text : b.type === "toolCall" ? `[toolCall ${b.name}]` : "")).join("\n");
const promptChars = (messages) => messages.reduce((n, m) => n + m.role.length + 1 + textOf(m.content).length, 0);

/**
 * A Pi agent session on the faux provider, persisted under `root`. `relay` loads the extension;
 * every provider request is recorded with its time and size; `next` holds scripted replies.
 */
async function start({ relay, settings = {}, sessionFile, name }) {
	const dir = join(root, name);
	const agentDir = join(dir, "agent");
	const cwd = join(dir, "work");
	mkdirSync(agentDir, { recursive: true });
	mkdirSync(cwd, { recursive: true });
	const faux = fauxProvider({ provider: "faux", models: [{ id: "faux-1", contextWindow: CONTEXT_WINDOW, maxTokens: 8192 }] });
	const calls = [];
	const next = [];
	let turn = 0;
	const script = async (context) => {
		const call = { t: performance.now(), messages: context.messages.length, chars: promptChars(context.messages), boot: context.messages.some((m) => textOf(m.content).includes("<context_window>")) };
		calls.push(call);
		const step = next.shift();
		const message = step ? step(context) : fauxAssistantMessage(filler(turn++, "assistant", CHARS));
		call.reply = message;
		return message;
	};
	faux.setResponses(Array.from({ length: TURNS + 50 }, () => script));
	const modelRuntime = await ModelRuntime.create({ authPath: join(agentDir, "auth.json"), modelsPath: null, refreshOnCreate: false });
	modelRuntime.registerNativeProvider(faux.provider);
	const model = modelRuntime.getModel("faux", "faux-1");
	const settingsManager = SettingsManager.inMemory({ retry: { enabled: false }, ...settings });
	const marks = {};
	const markers = (pi) => {
		pi.on("tool_result", (event) => {
			if (event.toolName === "new_context") marks.toolResultHook = performance.now();
			return undefined;
		});
		// Rough breakdown of the reset path: when each later hook fires (first firing after the tool result).
		for (const type of ["turn_end", "agent_before_settle", "context"]) {
			pi.on(type, () => {
				if (marks.toolResultHook && !marks[type]) marks[type] = performance.now();
				return undefined;
			});
		}
	};
	const resourceLoader = new DefaultResourceLoader({
		cwd,
		agentDir,
		settingsManager,
		additionalExtensionPaths: relay ? [RELAY] : [],
		extensionFactories: [markers],
		noSkills: true,
		noPromptTemplates: true,
		noThemes: true,
		noContextFiles: true,
	});
	await resourceLoader.reload();
	const sessionManager = sessionFile ? SessionManager.open(sessionFile, join(dir, "sessions")) : SessionManager.create(cwd, join(dir, "sessions"));
	const { session, extensionsResult } = await createAgentSession({
		cwd,
		agentDir,
		model,
		thinkingLevel: "off",
		modelRuntime,
		resourceLoader,
		sessionManager,
		settingsManager,
		noTools: "builtin",
	});
	if (extensionsResult.errors.length) throw new Error("extension load errors: " + JSON.stringify(extensionsResult.errors));
	const errors = [];
	await session.bindExtensions({ onError: (e) => errors.push(e) });
	session.subscribe((event) => {
		if (event.type === "tool_execution_end" && event.toolName === "new_context") marks.toolEnd = performance.now();
	});
	return { session, sessionManager, calls, next, marks, errors };
}

/** Build a session of TURNS user/assistant exchanges through the real loop; returns its file. */
async function build(relay) {
	const t = await start({ relay, name: relay ? "build-relay" : "build-native", settings: relay ? {} : { compaction: { enabled: false } } });
	for (let i = 0; i < TURNS; i++) await t.session.prompt(filler(i, "user", CHARS));
	const file = t.sessionManager.getSessionFile();
	t.session.dispose();
	return { file, calls: t.calls.length };
}

function copy(file, name) {
	const dst = join(root, `${name}.jsonl`);
	copyFileSync(file, dst);
	return dst;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const usageOf = (m) => m?.usage ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 };

// ---------------------------------------------------------------------------------------------
const t0 = performance.now();
const mark = addonCalls.length;
const relayBase = await build(true);
const buildTurnEnd = addonCalls.slice(mark).filter((c) => c.label === "hook:turn_end").map((c) => c.ms);
const nativeBase = await build(false);
console.error(`built: ${TURNS} turns of ${CHARS}-char texts, with Relay ${relayBase.file}, without ${nativeBase.file} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);

// ---- Relay: new_context ------------------------------------------------------------------------
const relayTrials = [];
for (let k = 0; k < TRIALS; k++) {
	const t = await start({ relay: true, name: `relay-${k}`, sessionFile: copy(relayBase.file, `relay-${k}`) });
	t.next.push(() => fauxAssistantMessage([fauxToolCall("new_context", {})], { stopReason: "toolUse" }));
	t.next.push(() => fauxAssistantMessage("Resumed in the new window from the notes."));
	await t.session.prompt("Reset the context window now.");
	const end = t.marks.toolEnd;
	const after = t.calls.filter((c) => c.t > end);
	const first = after[0];
	const before = t.calls.filter((c) => c.t <= end).at(-1);
	const branch = t.sessionManager.getBranch();
	const compactions = branch.filter((e) => e.type === "compaction");
	const compaction = compactions.at(-1);
	if (!end || !first || !first.boot || compactions.length !== 1) throw new Error(`relay reset did not happen as expected: ${JSON.stringify({ end, first, compactions: compactions.length, errors: t.errors })}`);
	relayTrials.push({
		ms: first.t - end,
		fromHookMs: first.t - t.marks.toolResultHook,
		// Provider calls strictly between the tool result and the new window's first request: the reset's own calls.
		resetCalls: t.calls.filter((c) => c.t > end && c.t < first.t).length,
		resetTokens: compaction.usage ? compaction.usage.totalTokens ?? 0 : 0,
		oldPromptTokens: Math.ceil(before.chars / 4),
		oldMessages: before.messages,
		newPromptTokens: Math.ceil(first.chars / 4),
		newMessages: first.messages,
		continuationUsage: usageOf(branch.filter((e) => e.type === "message" && e.message.role === "assistant").at(-1)?.message),
		addon: addonBetween(end, first.t),
		hooks: Object.fromEntries(["turn_end", "agent_before_settle", "context"].map((k) => [k, t.marks[k] ? t.marks[k] - end : null])),
	});
	t.session.dispose();
}

// ---- Relay handling Pi's /compact (session.compact()) -------------------------------------------
const relayCompactTrials = [];
for (let k = 0; k < TRIALS; k++) {
	const t = await start({ relay: true, name: `relay-compact-${k}`, sessionFile: copy(relayBase.file, `relay-compact-${k}`) });
	const callsBefore = t.calls.length;
	const a = performance.now();
	await t.session.compact();
	const ms = performance.now() - a;
	const compaction = t.sessionManager.getBranch().filter((e) => e.type === "compaction").at(-1);
	if (!compaction || compaction.details?.relay !== "window") throw new Error("Relay did not handle /compact");
	relayCompactTrials.push({ ms, calls: t.calls.length - callsBefore, tokens: compaction.usage ? compaction.usage.totalTokens ?? 0 : 0 });
	t.session.dispose();
}

// ---- Pi's native compaction of the same kind of session, without Relay --------------------------
const nativeTrials = [];
for (let k = 0; k < TRIALS; k++) {
	const t = await start({ relay: false, name: `native-${k}`, sessionFile: copy(nativeBase.file, `native-${k}`), settings: { compaction: { keepRecentTokens: 1 } } });
	const summary = filler(1000 + k, "summary", SUMMARY_CHARS);
	for (let i = 0; i < 4; i++) t.next.push(() => fauxAssistantMessage(`## Goal\n${summary}`));
	const callsBefore = t.calls.length;
	const a = performance.now();
	const result = await t.session.compact();
	const ms = performance.now() - a;
	const made = t.calls.slice(callsBefore);
	const sum = (f) => made.reduce((n, c) => n + (usageOf(c.reply)[f] ?? 0), 0);
	const compaction = t.sessionManager.getBranch().filter((e) => e.type === "compaction").at(-1);
	nativeTrials.push({
		ms,
		calls: made.length,
		promptChars: made.reduce((n, c) => n + c.chars, 0),
		// faux usage of the summary reply(ies): the step function sees the message before faux adds usage,
		// so read Pi's recorded usage (the compaction entry) and recompute from the prompt as a check.
		usage: result.usage ?? compaction?.usage ?? null,
		estPrompt: made.reduce((n, c) => n + Math.ceil(c.chars / 4), 0),
		estOutput: Math.ceil((SUMMARY_CHARS + 8) / 4) * made.length,
		tokensBefore: result.tokensBefore,
		tokensAfter: result.estimatedTokensAfter,
	});
	t.session.dispose();
}

// ---- report ------------------------------------------------------------------------------------
const r = relayTrials;
const n = nativeTrials;
const c = relayCompactTrials;
const u = n[0].usage ?? {};
const rows = [
	"| Reset of a " + `${TURNS}-turn session (${CHARS}-char texts), median of ${TRIALS}` + " | Relay `new_context` | Relay handling `/compact` | Pi native compaction (`keepRecentTokens: 1`) |",
	"| --- | --- | --- | --- |",
	`| Wall time | ${median(r.map((x) => x.ms)).toFixed(1)} ms (new_context result → first request of the new window; ${median(r.map((x) => x.fromHookMs)).toFixed(1)} ms from the tool_result hook) | ${median(c.map((x) => x.ms)).toFixed(1)} ms (\`session.compact()\`) | ${median(n.map((x) => x.ms)).toFixed(1)} ms (\`session.compact()\`, faux model answers instantly) |`,
	`| LLM calls made by the reset | ${median(r.map((x) => x.resetCalls))} | ${median(c.map((x) => x.calls))} | ${median(n.map((x) => x.calls))} |`,
	`| LLM tokens spent by the reset | ${median(r.map((x) => x.resetTokens))} | ${median(c.map((x) => x.tokens))} | prompt ${(u.input ?? 0) + (u.cacheRead ?? 0) + (u.cacheWrite ?? 0)} (input ${u.input ?? 0}, cacheRead ${u.cacheRead ?? 0}, cacheWrite ${u.cacheWrite ?? 0}) + output ${u.output ?? 0} = ${u.totalTokens ?? 0} |`,
	`| Size of the next request | ${median(r.map((x) => x.newPromptTokens))} tokens, ${median(r.map((x) => x.newMessages))} messages (was ${median(r.map((x) => x.oldPromptTokens))} tokens, ${median(r.map((x) => x.oldMessages))} messages) | — | ≈ ${median(n.map((x) => x.tokensAfter))} tokens estimated by Pi (was ${median(n.map((x) => x.tokensBefore))}) |`,
];
console.log(
	[
		"",
		`Faux token counts are characters / 4. The Relay continuation request (normal work of the new window, not counted as reset cost) used ${JSON.stringify(r[0].continuationUsage && { input: r[0].continuationUsage.input, cacheRead: r[0].continuationUsage.cacheRead, cacheWrite: r[0].continuationUsage.cacheWrite, output: r[0].continuationUsage.output })}.`,
		`Relay reset path, ms after the new_context result (first trial): ${JSON.stringify(Object.fromEntries(Object.entries(r[0].hooks).map(([k, v]) => [k, v === null ? null : Number(v.toFixed(2))])))}, first request of the new window at ${r[0].ms.toFixed(2)}.`,
		`Time inside the Relay addon on that path (median of ${TRIALS}): ${median(r.map((x) => x.addon.total)).toFixed(2)} ms; first trial by call: ${JSON.stringify(Object.fromEntries(Object.entries(r[0].addon.by).map(([k, v]) => [k, Number(v.toFixed(2))])))}.`,
		`While building the Relay session: handle(hook turn_end, with its feed) median ${median(buildTurnEnd).toFixed(2)} ms, max ${Math.max(...buildTurnEnd).toFixed(2)} ms over ${buildTurnEnd.length} turns.`,
		`Pi's compaction prompt(s): ${n[0].promptChars} characters (≈ ${n[0].estPrompt} tokens at chars/4) for a scripted ${SUMMARY_CHARS}-character summary.`,
		`Node ${process.version}; total bench time ${((performance.now() - t0) / 1000).toFixed(1)} s.`,
		"",
		...rows,
		"",
	].join("\n"),
);
