// `make bench-arms` (issue 37): Relay against Pi's own summary compaction and observation masking,
// side by side on one scripted long task through the real Pi agent loop (the SDK harness of
// tests/extension, pi-ai's faux provider answering from a script). Four arms, each the same script
// in the same window on the same Pi, differing only in what they name:
//   1. Pi native compaction: Relay not loaded; Pi's summarization requests are answered by the
//      scripted model with a summary of SUMMARY_CHARS characters (a split turn's prefix summary
//      PREFIX_CHARS);
//   2. observation masking (bench/masking.mjs): tool outputs older than the last 10 turns replaced
//      by a placeholder at every request; Relay not loaded, Pi's compaction on beside it;
//   3. Relay with resets only (relay.clearToolResults.enabled: false);
//   4. Relay with its defaults (resets, notes, tool-result clearing).
//
//   node bench/arms.mjs                                   # 300 tool calls, seeds 1, 2, 3
//   RELAY_BENCH_CALLS=80 RELAY_BENCH_SEEDS=1 RELAY_BENCH_ARMS=1,4 node bench/arms.mjs   # quick mode
//   RELAY_BENCH_OWN_WORDS=all node bench/arms.mjs         # summaries and notes keep every fact they see
//
// docs/performance.md ("Relay against Pi's compaction and masking") has the method and the limits.
import { rmSync, readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { startSession } from "../tests/extension/harness.mjs";
import { CacheLedger, between, bill, digest, outputSize, rng, tokensOf } from "./common.mjs";
import { masking } from "./masking.mjs";

const env = process.env;
const CALLS = Number(env.RELAY_BENCH_CALLS ?? 300);
const SEEDS = (env.RELAY_BENCH_SEEDS ?? "1,2,3").split(",").map(Number);
const ARMS = (env.RELAY_BENCH_ARMS ?? "1,2,3,4").split(",").map(Number);
const WINDOW = Number(env.RELAY_BENCH_WINDOW ?? 128_000);
const MASK_TURNS = 10;
// Tool calls per turn (the model's batch): 1 to TURN_MAX, seeded.
const TURN_MAX = Number(env.RELAY_BENCH_TURN_MAX ?? 4);
// Pi's compaction settings, its defaults, the same in every arm.
const COMPACTION = { enabled: true, reserveTokens: 16_384, keepRecentTokens: 20_000 };
// What the scripted model's own words (Pi's summaries, Relay's notes) keep of the planted facts it
// can see: "user" (default) the facts the user stated; "all" every planted fact.
const OWN_WORDS = env.RELAY_BENCH_OWN_WORDS ?? "user";
// The scripted summary: about 2,000 tokens for the history, 1,000 for a split turn's prefix.
const SUMMARY_CHARS = 8_000;
const PREFIX_CHARS = 4_000;
const NOTES_CHARS = 1_500;

// Price table, US dollars per million tokens, list prices as published when this bench was written
// (PRICE_DATE; not fetched at run time): Claude Sonnet 5.5 from Anthropic's pricing page (cache
// write: the 5-minute cache); GPT-5.4 from OpenAI's list (cached input at a tenth; no surcharge for
// writing the cache, so a write pays the input price). A summary request is sent with cache
// retention off (Pi's completeSummarization), so it pays the plain input price.
const PRICES = [
	{ name: "Claude Sonnet 5.5", input: 2.0, cacheRead: 0.2, cacheWrite: 2.5, output: 10.0 },
	{ name: "GPT-5.4", input: 2.5, cacheRead: 0.25, cacheWrite: 2.5, output: 15.0 },
];
const PRICE_DATE = "2026-12-04";

/** The version of the Pi the harness loads (the package.json above its resolved entry). */
function piVersionOf() {
	let dir = new URL(".", import.meta.resolve("@earendil-works/pi-coding-agent"));
	for (let i = 0; i < 5; i++, dir = new URL("..", dir)) {
		try {
			const pkg = JSON.parse(readFileSync(new URL("package.json", dir), "utf8"));
			if (pkg.name === "@earendil-works/pi-coding-agent") return pkg.version;
		} catch {}
	}
	return "unknown";
}
const piVersion = piVersionOf();

// Time inside Relay's engine: every call through the addon's one door, `Engine.handle` (the
// extension and this script share the loaded library, as in bench/reset.mjs). Jobs the engine
// asks for run on the libuv pool, off Pi's thread, and are not counted.
let engineMs = 0;
{
	const { native } = await import(new URL("../extension/src/native.ts", import.meta.url).href);
	const proto = native().Engine.prototype;
	const handle = proto.handle;
	proto.handle = function (...args) {
		const a = performance.now();
		try {
			return handle.apply(this, args);
		} finally {
			engineMs += performance.now() - a;
		}
	};
}
const relayVersion = JSON.parse(readFileSync(new URL("../extension/package.json", import.meta.url), "utf8")).version;

// ---- the task --------------------------------------------------------------------------------

/** The user's messages: the task, a redirect, a fact, the wrap-up; each starts a run at `at` (a fraction of the calls). */
const PROMPTS = [
	{ at: 0, text: "Fix the lease expiry handling in the session service. Work through the plan step by step with run_tool. A standing constraint for the whole task: never modify anything under api/v1/ (it is frozen for the 2.4 release)." },
	{ at: 0.35, text: "Change of plan: stop the retry refactor, the real bug is in lease renewal. From now on work on the branch fix/lease-renewal-3318 and continue the plan there." },
	{ at: 0.65, text: "For the integration runs: the staging database listens on port 6543. Continue the plan." },
	{ at: 0.85, text: "Finish up: rerun the suite, write the changelog entry, and report what changed." },
];

/**
 * The planted facts. A user fact is in a user message; a tool fact in the output of call `call`
 * (at its start, middle or end; Pi's summarizer sees only the first 2,000 characters of each
 * output). `need` is the fraction of the calls at which a step needs it; `key` is what the model
 * searches for when it no longer has it.
 */
const FACTS = [
	{ id: "api-freeze", kind: "user", text: "never modify anything under api/v1/", key: "api/v1/", need: 0.95 },
	{ id: "branch", kind: "user", text: "fix/lease-renewal-3318", key: "fix/lease-renewal-", need: 0.9 },
	{ id: "port", kind: "user", text: "listens on port 6543", key: "listens on port", need: 0.93 },
	{ id: "ttl", kind: "tool", text: "LEASE_TTL_MS = 47113", key: "LEASE_TTL_MS", call: 4, at: "start", chars: 3_000, need: 0.8 },
	{ id: "seed", kind: "tool", text: "flake reproduces with --seed 90417", key: "flake reproduces with", call: 12, at: "end", chars: 24_000, need: 0.7 },
	{ id: "checksum", kind: "tool", text: "fixture checksum sha256:9c41e07d55ab", key: "fixture checksum", call: 30, at: "middle", chars: 9_000, need: 0.87 },
	{ id: "config", kind: "tool", text: "config file deploy/staging/lease-renewal.toml", key: "deploy/staging/", call: 70, at: "start", chars: 1_500, need: 0.97 },
];

/** The plan of one seed: per run (user message) its turns, each a batch of 1–3 tool calls. */
function plan(seed) {
	const r = rng(seed);
	const calls = Array.from({ length: CALLS }, (_, i) => {
		const n = i + 1;
		const fact = FACTS.find((f) => f.kind === "tool" && f.call === n);
		return { n, chars: fact ? fact.chars : outputSize(r) };
	});
	const starts = PROMPTS.map((p) => Math.round(p.at * CALLS));
	const runs = PROMPTS.map((p, k) => {
		const mine = calls.slice(starts[k], starts[k + 1] ?? CALLS);
		const turns = [];
		for (let i = 0; i < mine.length; ) {
			const size = between(r, 1, TURN_MAX);
			turns.push(mine.slice(i, i + size));
			i += size;
		}
		return { prompt: p.text, turns };
	});
	const needs = new Map(FACTS.filter((f) => f.kind === "user" || f.call <= CALLS).map((f) => [f, Math.min(CALLS, Math.max(1, Math.round(f.need * CALLS)))]));
	return { runs, needs };
}

const LINE = (n, k) => `${String(k).padStart(5, "0")} step ${n}: result text of a tool call, ordinary output line\n`;

/** The output of call `n`: `chars` characters of lines, with a planted fact where the plan puts it. */
function output(n, chars) {
	let text = "";
	for (let k = 0; text.length < chars; k++) text += LINE(n, k);
	text = `OUT-${n}\n` + text.slice(0, chars);
	const fact = FACTS.find((f) => f.kind === "tool" && f.call === n);
	if (!fact) return text;
	const line = `${fact.text}\n`;
	if (fact.at === "start") return `OUT-${n}\n${line}${text.slice(`OUT-${n}\n`.length)}`;
	if (fact.at === "end") return `${text}\n${line}`;
	const mid = text.indexOf("\n", Math.floor(text.length / 2)) + 1;
	return text.slice(0, mid) + line + text.slice(mid);
}

const tools = (pi) => {
	pi.registerTool({
		name: "run_tool",
		label: "run",
		description: "Runs step n of the plan (a command, a file read or a test run) and returns its output.",
		parameters: { type: "object", properties: { n: { type: "number" }, chars: { type: "number" } }, required: ["n", "chars"] },
		async execute(_id, p) {
			return { content: [{ type: "text", text: output(p.n, p.chars) }], details: {} };
		},
	});
};

// ---- the scripted model -----------------------------------------------------------------------

const textOfContent = (content) => (typeof content === "string" ? content : (content ?? []).map((b) => (b.type === "text" ? b.text : "")).join("\n"));
const SUMMARY_MARKS = ["Create a structured context checkpoint summary", "NEW conversation messages to incorporate", "Create a concise checkpoint of the user's request"];
const PREFIX_MARK = SUMMARY_MARKS[2];

/** A request as the cache ledger sees it: the system prompt and tools, then each message. */
function partsOf(context) {
	const head = (context.systemPrompt ?? "") + JSON.stringify(context.tools ?? []);
	return [{ key: digest(head), tokens: Math.ceil(head.length / 4) }, ...context.messages.map((msg) => ({ key: digest(msg), tokens: tokensOf(msg) }))];
}

/** Filler prose for the model's own words, to a given size. */
function prose(head, chars) {
	let s = head;
	for (let k = 1; s.length < chars; k++) s += `- [x] step group ${k}: read the code, ran the tests, recorded the result\n`;
	return s.slice(0, chars);
}

/** The facts the model's own words keep out of `text` (what it can see). */
const keptFacts = (text) => FACTS.filter((f) => (OWN_WORDS === "all" || f.kind === "user") && text.includes(f.text));

/**
 * One arm's model: a function the faux provider calls for every request. It answers Pi's
 * summarization requests with a summary; with Relay, answers Relay's note-taking and low-budget
 * messages by writing its notes, and searches the history for a fact a step needs that is not in
 * its request; otherwise it runs the next turn of the plan, and ends each run with a short answer.
 */
function model({ relay, seedPlan, record }) {
	const state = { run: 0, turn: 0, window: null, pendingSearch: null, facts: new Map(), searches: 0 };
	const runTurns = () => seedPlan.runs[state.run].turns;
	const toolCall = (name, args) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
	const respond = (context, text) => {
		const messages = context.messages;
		// Pi's summarization (and a split turn's prefix): one user message with the serialized conversation.
		if (messages.filter((m) => m.role !== "system").length === 1 && SUMMARY_MARKS.some((m) => text.includes(m))) {
			const prefix = text.includes(PREFIX_MARK);
			const kept = keptFacts(text).map((f) => `- ${f.text}`).join("\n");
			const head = prefix
				? `## Original Request\nFix the lease expiry handling.\n\n## Progress So Far\n${kept}\n`
				: `## Goal\nFix the lease expiry handling in the session service.\n\n## Constraints & Preferences\n${kept || "(none)"}\n\n## Progress\n### Done\n`;
			return { kind: "summary", reply: fauxAssistantMessage(prose(head, prefix ? PREFIX_CHARS : SUMMARY_CHARS)) };
		}
		// A new window of Relay's whose boot block shows the notes (cut to a preview): read them, as
		// its continuation asks.
		const windowId = /current_window_id: (\S+)/.exec(text)?.[1];
		if (relay && windowId && windowId !== state.window) {
			state.window = windowId;
			if (text.includes('<note path="task.md"')) return { kind: "notes", reply: toolCall("notes_read_file", { path: "task.md" }) };
		}
		const lastAssistant = messages.findLastIndex((m) => m.role === "assistant");
		const tail = messages.slice(lastAssistant + 1);
		if (relay && tail.some((m) => textOfContent(m.content).includes("<context_window_guidance>"))) {
			const done = seedPlan.runs.slice(0, state.run).reduce((n, r) => n + r.turns.flat().length, 0) + runTurns().slice(0, state.turn).flat().length;
			const kept = keptFacts(text).map((f) => `- ${f.text}`).join("\n");
			const head = `# Task\nGoal: fix the lease expiry handling in the session service.\nFacts and constraints:\n${kept || "- (none noted)"}\nProgress: ${done} of ${CALLS} plan steps done; next: step ${done + 1}.\n`;
			return { kind: "notes", reply: toolCall("notes_write_file", { path: "task.md", content: prose(head, NOTES_CHARS) }) };
		}
		if (state.pendingSearch) {
			const fact = state.pendingSearch;
			state.pendingSearch = null;
			// The latest search result in the request (a note written in between leaves it earlier).
			const found = messages.findLast((m) => m.role === "toolResult" && m.toolName === "history_search_contents");
			const result = found ? textOfContent(found.content) : "";
			state.facts.set(fact.id, result.includes(fact.text) ? "search" : "gone");
		}
		const turn = runTurns()[state.turn];
		if (!turn) return { kind: "answer", reply: fauxAssistantMessage(`Run ${state.run + 1} of the task is finished: every step of this part of the plan ran and its results are recorded.`) };
		for (const [fact, at] of seedPlan.needs) {
			if (state.facts.has(fact.id) || !turn.some((c) => c.n === at)) continue;
			if (text.includes(fact.text)) state.facts.set(fact.id, "verbatim");
			else if (relay) {
				state.pendingSearch = fact;
				state.searches++;
				return { kind: "search", reply: toolCall("history_search_contents", { query: fact.key, limit: 5 }) };
			} else state.facts.set(fact.id, "gone");
		}
		state.turn++;
		return { kind: "step", reply: fauxAssistantMessage(turn.map((c) => fauxToolCall("run_tool", { n: c.n, chars: c.chars })), { stopReason: "toolUse" }) };
	};
	const step = (context) => {
		const arrived = performance.now();
		const text = (context.systemPrompt ?? "") + "\n" + context.messages.map((m) => textOfContent(m.content) + (m.role === "compactionSummary" ? m.summary : "")).join("\n");
		const parts = partsOf(context);
		const size = parts.reduce((n, p) => n + p.tokens, 0);
		// A request larger than the window is refused, as a provider does (no tokens billed).
		const summary = context.messages.filter((m) => m.role !== "system").length === 1 && SUMMARY_MARKS.some((m) => text.includes(m));
		const { kind, reply } =
			!summary && size > WINDOW
				? { kind: "overflow", reply: fauxAssistantMessage([], { stopReason: "error", errorMessage: `prompt is too long: ${size} tokens > ${WINDOW} maximum` }) }
				: respond(context, text);
		if (env.RELAY_BENCH_DEBUG && kind !== "step") console.error(`[${kind}] run ${state.run} turn ${state.turn} size ${size} window ${/current_window_id: (\S+)/.exec(text)?.[1]}`);
		record({ text, parts, size, kind, reply, arrived });
		return reply;
	};
	return { step, state, nextRun: () => ((state.run += 1), (state.turn = 0)) };
}

// ---- one arm, one seed ------------------------------------------------------------------------

// Arm 5, a diagnostic outside the default set: arm 1 with an extension that subscribes to every
// hook Relay does and does nothing (bench/host/empty.ts): Pi's own time around those hooks.
const ARM_NAMES = { 1: "Pi compaction", 2: "masking", 3: "Relay resets", 4: "Relay defaults", 5: "Pi + empty hooks" };
const emptyHooks = async () => {
	const { relayHooks } = await import("./host/empty.ts");
	const hooks = relayHooks();
	return (pi) => {
		for (const event of hooks) pi.on(event, () => undefined);
	};
};

async function runArm(arm, seed) {
	const relay = arm === 3 || arm === 4;
	const seedPlan = plan(seed);
	const main = new CacheLedger();
	const m = { summaryRequests: 0, summaryInput: 0, summaryOutput: 0, boundaryRequests: 0, boundaryInput: 0, boundaryRead: 0, boundaryOutput: 0, output: 0, searchRequests: 0, overflows: 0, gaps: [], boundaryGaps: [] };
	let lastReplyAt = null;
	let summariesSince = 0;
	let windowId = null;
	let stubs = 0;
	const record = ({ text, parts, kind, reply, arrived }) => {
		const out = tokensOf(reply);
		if (kind === "summary") {
			m.summaryRequests++;
			m.summaryInput += Math.ceil(text.length / 4);
			m.summaryOutput += out;
			summariesSince++;
			return;
		}
		if (kind === "overflow") {
			m.overflows++;
			return;
		}
		const { size, shared } = main.add(parts);
		m.output += out;
		if (kind === "notes") {
			m.boundaryRequests++;
			m.boundaryInput += size;
			m.boundaryRead += shared;
			m.boundaryOutput += out;
		}
		if (kind === "search") m.searchRequests++;
		// Pi's time since the previous reply (tool runs and model answers take no time here).
		const id = /current_window_id: (\S+)/.exec(text)?.[1] ?? null;
		const nowStubs = text.split("[Relay cleared this").length - 1;
		if (lastReplyAt !== null) {
			const gap = arrived - lastReplyAt;
			const boundary = summariesSince > 0 || (id !== null && id !== windowId) || nowStubs > stubs;
			(boundary ? m.boundaryGaps : m.gaps).push(gap);
		}
		summariesSince = 0;
		windowId = id;
		stubs = nowStubs;
		lastReplyAt = performance.now();
	};
	const scripted = model({ relay, seedPlan, record });
	const extra = [tools];
	if (arm === 2) extra.push(masking(MASK_TURNS));
	if (arm === 5) extra.push(await emptyHooks());
	const settings = { compaction: COMPACTION };
	if (arm === 3) settings.relay = { clearToolResults: { enabled: false } };
	const t = await startSession({ relay, contextWindow: WINDOW, settings, extraFactories: extra, steps: Array.from({ length: 4 * CALLS + 200 }, () => scripted.step), persist: true, recordRequests: false });
	const t0 = performance.now();
	const engine0 = engineMs;
	try {
		for (let k = 0; k < seedPlan.runs.length; k++) {
			if (k > 0) scripted.nextRun();
			await t.session.prompt(seedPlan.runs[k].prompt);
		}
		const seconds = (performance.now() - t0) / 1000;
		const branch = t.sessionManager.getBranch();
		const compactions = branch.filter((e) => e.type === "compaction");
		const clearings = branch.filter((e) => e.type === "custom" && e.customType === "relay/clear-tool-results").length;
		const facts = Object.fromEntries(FACTS.map((f) => [f.id, scripted.state.facts.get(f.id) ?? "not reached"]));
		const cost = (p) => bill({ uncached: m.summaryInput, read: main.read, write: main.write, output: m.output + m.summaryOutput }, p) / 1e6;
		const sum = (xs) => xs.reduce((a, b) => a + b, 0);
		return {
			arm,
			seed,
			requests: main.requests + m.summaryRequests + m.overflows,
			overflows: m.overflows,
			mainRequests: main.requests,
			toolCalls: branch.filter((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === "run_tool").length,
			boundaryRequests: m.summaryRequests + m.boundaryRequests,
			boundaryInput: m.summaryInput + m.boundaryInput,
			boundaryOutput: m.summaryOutput + m.boundaryOutput,
			boundaryRead: m.boundaryRead,
			// Boundary requests at the first price table: a summary pays the plain input price; a
			// note request reads from the cache what it shares with the request before it.
			boundaryCost:
				bill({ uncached: m.summaryInput, read: m.boundaryRead, write: m.boundaryInput - m.boundaryRead, output: m.summaryOutput + m.boundaryOutput }, PRICES[0]) / 1e6,
			searchRequests: m.searchRequests,
			input: main.total + m.summaryInput,
			uncached: m.summaryInput,
			cacheRead: main.read,
			cacheWrite: main.write,
			output: m.output + m.summaryOutput,
			bills: PRICES.map(cost),
			peak: main.peak,
			mean: main.total / main.requests,
			compactions: compactions.length,
			clearings,
			boundaries: compactions.length + clearings,
			breaks: main.breaks,
			boundaryMs: sum(m.boundaryGaps),
			boundaryMsMedian: median(m.boundaryGaps),
			gapMs: median(m.gaps),
			engineMs: engineMs - engine0,
			piMs: sum(m.gaps) + sum(m.boundaryGaps),
			facts,
			seconds,
			errors: t.errors.map(String),
		};
	} finally {
		await t.dispose();
		rmSync(t.root, { recursive: true, force: true });
	}
}

function median(xs) {
	if (!xs.length) return 0;
	const s = [...xs].sort((a, b) => a - b);
	const k = Math.floor(s.length / 2);
	return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2;
}

// ---- the run and the table ------------------------------------------------------------------

const started = performance.now();
const load0 = loadavg().map((x) => x.toFixed(2)).join(" ");
const results = {};
for (const arm of ARMS) {
	results[arm] = [];
	for (const seed of SEEDS) {
		const r = await runArm(arm, seed);
		results[arm].push(r);
		console.error(`arm ${arm} (${ARM_NAMES[arm]}), seed ${seed}: ${r.requests} requests, ${r.boundaries} boundaries, ${r.seconds.toFixed(1)} s${r.errors.length ? `, ${r.errors.length} extension errors: ${r.errors[0]}` : ""}`);
	}
}
const total = (performance.now() - started) / 1000;

const group = (n) => Math.round(n).toLocaleString("en-US");
const fmt = {
	int: group,
	ms: (n) => (n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : group(n)),
	usd: (n) => `$${n.toFixed(2)}`,
};
const ROWS = [
	["tool calls run", (r) => r.toolCalls, "int"],
	["provider requests", (r) => r.requests, "int"],
	["boundary requests (summaries, notes)", (r) => r.boundaryRequests, "int"],
	["  their input tokens", (r) => r.boundaryInput, "int"],
	["    of which read from the cache", (r) => r.boundaryRead, "int"],
	["  their output tokens", (r) => r.boundaryOutput, "int"],
	...PRICES.slice(0, 1).map((p) => [`  their cost, ${p.name}`, (r) => r.boundaryCost, "usd"]),
	["history searches for a fact (requests)", (r) => r.searchRequests, "int"],
	["requests refused as larger than the window", (r) => r.overflows, "int"],
	["total input tokens", (r) => r.input, "int"],
	["  read from the cache", (r) => r.cacheRead, "int"],
	["  written to the cache", (r) => r.cacheWrite, "int"],
	["  uncached (summary requests)", (r) => r.uncached, "int"],
	["output tokens", (r) => r.output, "int"],
	...PRICES.map((p, i) => [`bill, ${p.name}`, (r) => r.bills[i], "usd"]),
	["peak request (tokens)", (r) => r.peak, "int"],
	["mean request (tokens)", (r) => r.mean, "int"],
	["boundaries (compactions, resets, clearings)", (r) => r.boundaries, "int"],
	["  compactions or resets", (r) => r.compactions, "int"],
	["  tool-result clearings", (r) => r.clearings, "int"],
	["prompt-cache breaks", (r) => r.breaks, "int"],
	["Pi-side time at boundaries, total (ms)", (r) => r.boundaryMs, "ms"],
	["  per boundary, median (ms)", (r) => r.boundaryMsMedian, "ms"],
	["  per ordinary request, median (ms)", (r) => r.gapMs, "ms"],
	["Pi-side time over the run, total (ms)", (r) => r.piMs, "ms"],
	["  of which inside Relay's engine (ms)", (r) => r.engineMs, "ms"],
];
const stats = (arm, f) => {
	const xs = results[arm].map(f);
	return { med: median(xs), lo: Math.min(...xs), hi: Math.max(...xs) };
};
const cell = (s, kind) => (s.lo === s.hi ? fmt[kind](s.med) : `${fmt[kind](s.med)} (${fmt[kind](s.lo)}–${fmt[kind](s.hi)})`);

console.log(`# make bench-arms, ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC`);
console.log(`Pi ${piVersion} (SDK agent loop, faux provider), Relay ${relayVersion}, Node ${process.version}; ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), load average ${load0} at the start, ${loadavg().map((x) => x.toFixed(2)).join(" ")} at the end; total ${total.toFixed(0)} s.`);
console.log(`Task: ${CALLS} tool calls in turns of 1–${TURN_MAX}, ${PROMPTS.length} user messages (the task with a standing constraint, a redirect at ${PROMPTS[1].at * 100} %, a fact at ${PROMPTS[2].at * 100} %, the wrap-up at ${PROMPTS[3].at * 100} %), outputs 70 % 400–8,000 characters, 25 % 8,000–40,000, 5 % 40,000–100,000; ${FACTS.length} planted facts. Seeds ${SEEDS.join(", ")}.`);
console.log(`Window ${group(WINDOW)} tokens; Pi compaction ${JSON.stringify(COMPACTION)} in every arm; masking keeps the last ${MASK_TURNS} turns; scripted summary ${group(SUMMARY_CHARS)} characters (split-turn prefix ${group(PREFIX_CHARS)}), Relay notes ${group(NOTES_CHARS)}; the model's own words keep ${OWN_WORDS === "all" ? "every planted fact they can see" : "the facts the user stated"}.`);
console.log(`Prices per million tokens (input / cache read / cache write / output), list prices as of ${PRICE_DATE} (not fetched at run time): ${PRICES.map((p) => `${p.name} $${p.input} / $${p.cacheRead} / $${p.cacheWrite} / $${p.output}`).join("; ")}.`);
console.log("");
const arms = ARMS;
const header = ["", ...arms.map((a) => `${a} ${ARM_NAMES[a]}`)];
console.log(`| ${header.join(" | ")} |`);
console.log(`|${header.map(() => " --- ").join("|")}|`);
const overlaps = [];
for (const [name, f, kind] of ROWS) {
	const base = arms.includes(1) ? stats(1, f) : null;
	const cells = arms.map((a) => {
		const s = stats(a, f);
		let c = cell(s, kind);
		if (base && a !== 1 && base.med) c += ` · ${(s.med / base.med).toFixed(2)}×`;
		return c;
	});
	console.log(`| ${name} | ${cells.join(" | ")} |`);
	const pairs = [];
	for (let i = 0; i < arms.length; i++)
		for (let j = i + 1; j < arms.length; j++) {
			const a = stats(arms[i], f);
			const b = stats(arms[j], f);
			if (a.lo <= b.hi && b.lo <= a.hi && !(a.lo === a.hi && b.lo === b.hi && a.med === b.med)) pairs.push(`${arms[i]}–${arms[j]}`);
		}
	if (pairs.length) overlaps.push(`${name.trim()} (${pairs.join(", ")})`);
}
for (const fact of FACTS) {
	const cells = arms.map((a) => {
		const xs = results[a].map((r) => r.facts[fact.id]);
		const counts = {};
		for (const x of xs) counts[x] = (counts[x] ?? 0) + 1;
		return Object.entries(counts)
			.map(([k, v]) => (v === xs.length ? k : `${k} ${v}/${xs.length}`))
			.join(", ");
	});
	const where = fact.kind === "user" ? "user message" : `output of call ${fact.call}, ${fact.at}`;
	console.log(`| fact "${fact.text}" (${where}; needed at call ${Math.round(fact.need * CALLS)}) | ${cells.join(" | ")} |`);
}
console.log("");
console.log(`Ratios (·) are to arm 1's median; a cell is the median (min–max) of ${SEEDS.length} seeds. Facts: verbatim in the request, found by a history search the model ran, or gone.`);
console.log(overlaps.length ? `Ranges that overlap (those differences do not count): ${overlaps.join("; ")}.` : "No ranges overlap.");
const errors = arms.flatMap((a) => results[a].flatMap((r) => r.errors));
if (errors.length) console.log(`warning: ${errors.length} extension errors, first: ${errors[0]}`);
