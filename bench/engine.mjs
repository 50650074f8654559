// Issue 2 benchmarks, measured through the addon exactly as the extension calls it.
//
//   node --expose-gc bench/engine.mjs            # 256 MB session (default)
//   RELAY_BENCH_MB=16 node --expose-gc bench/engine.mjs   # quick mode (< 30 s)
//
// Env: RELAY_BENCH_MB (session size, default 256), RELAY_BENCH_ITERS (per-request iterations,
// default 2000), RELAY_BENCH_SEED (generator seed, default 1), RELAY_BENCH_DIR (where generated
// sessions are cached, default <tmpdir>/relay-bench).
//
// The per-request path imports `drive`, `open` and `moment` from extension/src/adapter.ts
// directly (Node 22.23 strips the types), so what is timed is the extension's own code, not a copy
// of it: `drive` hands the engine the input with the feed of what Pi appended, then carries out
// the output, as extension/src/index.ts does for every hook.
// No timed assertions: the script prints figures, ratios and a verdict per requirement.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { COMMON, RARE, session } from "./session-gen.mjs";

const ADAPTER = new URL("../extension/src/adapter.ts", import.meta.url).href;
const NATIVE = new URL("../extension/src/native.ts", import.meta.url).href;
const SETTINGS = new URL("../extension/src/settings.ts", import.meta.url).href;
const SELF = fileURLToPath(import.meta.url);

const SEARCH_LIMIT = 20;

const gc = () => {
	if (typeof global.gc === "function") {
		global.gc();
		global.gc();
	}
};
const rss = () => process.memoryUsage().rss;
const mib = (b) => (b / 1048576).toFixed(1);

/** One crossing of the addon's door: the output of `input` (and `feed`). */
const step = (engine, input, feed = null) => JSON.parse(engine.handle(JSON.stringify(input), feed === null ? null : JSON.stringify(feed)));

/** A moment for the inputs that carry one outside a hook (the load's `done`). */
const fixedMoment = () => ({ nowMs: Date.now(), tzOffsetMinutes: 0, usage: null, model: null, contextWindow: null, hasPendingMessages: false, pendingWork: 0, cwd: "/", subagent: false });

// ---------------------------------------------------------------------------------------------
// Start-up child: one fresh process per measurement, so the RSS growth is the engine's alone.
// `open` with background false loads the file at once (what a reload does); `needsBranch` in the
// output means the file did not hold the leaf.
// ---------------------------------------------------------------------------------------------
if (process.argv[2] === "--startup-child") {
	const [, , , file, sessionId, leafId] = process.argv;
	const { native } = await import(NATIVE);
	const { Engine } = native();
	gc();
	const before = rss();
	const t0 = performance.now();
	const engine = new Engine();
	const out = step(engine, { type: "open", sessionId, file, size: statSync(file).size, leaf: leafId, background: false });
	const ms = performance.now() - t0;
	gc();
	const after = rss();
	process.stdout.write(
		JSON.stringify({ ok: !out.needsBranch && out.op === undefined, ms, before, after, growth: after - before, peak: process.resourceUsage().maxRSS * 1024, tip: out.tip, complete: out.historyComplete }) + "\n",
	);
	process.exit(0);
}

// Resume child: the extension's own path for a large file (adapter.ts openSession): `open` with
// background true answers with an operation and one `load` job (the current window, the rest
// skimmed); the job runs on the libuv pool (`runJob`) and its `done` installs it; `history` then
// asks for a second `load` job (the whole history), run and installed the same way. Its RSS is
// taken after the first pass, when the history is complete and at its peak.
if (process.argv[2] === "--resume-child") {
	const [, , , file, sessionId, leafId] = process.argv;
	const { native } = await import(NATIVE);
	const { Engine, runJob } = native();
	/** Run the load job of `out` on the pool and hand its result back: the next output. */
	const pass = async (engine, out) => {
		if (out.op === undefined || out.jobs.length !== 1 || out.jobs[0].work.kind !== "load") throw new Error(`expected one load job: ${JSON.stringify(out)}`);
		const results = await Promise.all(out.jobs.map(async (job) => ({ id: job.id, outcome: JSON.parse(await runJob(JSON.stringify(job))) })));
		return step(engine, { type: "done", op: out.op, results, moment: fixedMoment() });
	};
	gc();
	const before = rss();
	const engine = new Engine();
	const t0 = performance.now();
	const opened = step(engine, { type: "open", sessionId, file, size: statSync(file).size, leaf: leafId, background: true });
	const next = await pass(engine, opened);
	if (next.needsBranch || next.tip !== leafId) throw new Error("the first pass of the background load failed");
	const firstMs = performance.now() - t0;
	gc();
	const afterFirst = rss();
	// The whole history loads when something asks for it (`history`: a history tool, a navigation,
	// the first settle): its `historyLoad` job, run and handed back the same way.
	const { historyLoad } = step(engine, { type: "history" });
	const last = historyLoad ? await pass(engine, { op: historyLoad.id, jobs: [historyLoad] }) : next;
	if (last.needsBranch || last.op !== undefined || !last.historyComplete) throw new Error("the whole load did not complete the history");
	const ms = performance.now() - t0;
	gc();
	const after = rss();
	const peak = process.resourceUsage().maxRSS * 1024;
	process.stdout.write(
		JSON.stringify({ firstMs, ms, firstGrowth: afterFirst - before, growth: after - before, peakGrowth: peak - before, complete: last.historyComplete, tip: last.tip, twoPasses: historyLoad !== undefined }) + "\n",
	);
	process.exit(0);
}

/** A private copy: appending through the real SessionManager writes to the file. */
function workCopy(src) {
	const dst = src.replace(/\.jsonl$/, `.work-${process.pid}.jsonl`);
	copyFileSync(src, dst);
	return dst;
}

// ---------------------------------------------------------------------------------------------
// Helpers: statistics, the extension's per-request path, the TypeScript baselines
// ---------------------------------------------------------------------------------------------

function stats(samples) {
	const s = Float64Array.from(samples).sort();
	const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
	return { median: q(0.5), p90: q(0.9), n: s.length };
}

/** ctx as Pi hands it to a hook: the real SessionManager, fixed facts for the rest. */
function makeCtx(sm) {
	return {
		sessionManager: sm,
		cwd: "/home/dev/project",
		hasUI: false,
		model: { provider: "anthropic", id: "claude-sonnet-4-5", api: "anthropic-messages", contextWindow: 200_000 },
		modelRegistry: { find: () => ({ contextWindow: 200_000 }) },
		getContextUsage: () => ({ tokens: 40_000, contextWindow: 200_000, percent: 20 }),
		isIdle: () => false,
		hasPendingMessages: () => false,
		isProjectTrusted: () => false,
	};
}

/**
 * The stub `pi` the effects run against (no UI: status effects are dropped, as in print mode). Its
 * `appendEntry` appends to the session as Pi's does (`appendCustomEntry`), so that the engine's
 * markers come back to it in the next feed.
 */
const piStubFor = (sm) => {
	let active = [];
	return {
		sendMessage() {},
		appendEntry: (customType, data) => sm.appendCustomEntry(customType, data),
		getSettings: () => ({}),
		getActiveTools: () => active,
		setActiveTools: (names) => void (active = names),
	};
};

/** What the straightforward TypeScript approach did per request: the whole branch, then a tail scan. */
function baselinePerRequest(sm) {
	const branch = sm.getBranch();
	for (let i = branch.length - 1; i >= 0; i--) {
		const e = branch[i];
		if (e.type === "compaction") return false;
		if (e.type === "custom_message" && e.customType === "seed/reminder") return true;
	}
	return false;
}

/** The seed extensions' items: every message entry of the branch, its text parts joined. */
function baselineItems(sm) {
	const items = [];
	for (const e of sm.getBranch()) {
		if (e.type !== "message") continue;
		const c = e.message.content;
		const text = typeof c === "string" ? c : (c ?? []).filter((p) => p.type === "text").map((p) => p.text).join("\n");
		items.push({ id: e.id, role: e.message.role, text });
	}
	return items;
}

/** Rebuild, then includes() newest-first until `limit` hits. */
function baselineSearch(sm, query, limit) {
	const items = baselineItems(sm);
	const hits = [];
	for (let i = items.length - 1; i >= 0 && hits.length < limit; i--) {
		const at = items[i].text.indexOf(query);
		if (at >= 0) hits.push({ item_id: items[i].id, at });
	}
	return hits;
}

/** Rebuild, scan every item, then slice (what the seed did before slicing to the limit). */
function baselineSearchAll(sm, query, limit) {
	const items = baselineItems(sm);
	const hits = [];
	for (const item of items) {
		const at = item.text.indexOf(query);
		if (at >= 0) hits.push({ item_id: item.id, at });
	}
	return hits.reverse().slice(0, limit);
}

function timeRuns(fn, runs) {
	fn(); // warm-up
	const samples = [];
	let result;
	for (let i = 0; i < runs; i++) {
		const t0 = performance.now();
		result = fn();
		samples.push(performance.now() - t0);
	}
	return { ...stats(samples), result };
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

const MB = Number(process.env.RELAY_BENCH_MB ?? 256);
const ITERS = Number(process.env.RELAY_BENCH_ITERS ?? 2000);
const SEED = Number(process.env.RELAY_BENCH_SEED ?? 1);
if (!(MB > 0) || !(ITERS > 0)) throw new Error("RELAY_BENCH_MB and RELAY_BENCH_ITERS must be positive numbers");
if (typeof global.gc !== "function") console.error("note: run with --expose-gc for steadier RSS figures");

// Pi's agent folder and Relay's state folder (status file, event log) go to a private temp folder,
// never to the user's ~/.pi. The status file is written as in production (at session start and when a run settles).
const scratch = mkdtempSync(join(tmpdir(), "relay-bench-agent-"));
process.env.PI_CODING_AGENT_DIR = join(scratch, "agent");
process.env.PI_CONTEXT_BUDGET_STATE_DIR = join(scratch, "context-budget");
mkdirSync(process.env.PI_CODING_AGENT_DIR, { recursive: true });

const { drive, open, moment, request } = await import(ADAPTER);
const { native } = await import(NATIVE);
const { loadSettings } = await import(SETTINGS);
const { SessionManager } = await import("@earendil-works/pi-coding-agent");
const { Engine } = native();

const log = (...a) => console.error(...a);
const tStart = performance.now();

const big = session("big", { targetBytes: Math.round(MB * 1048576), maxEntries: Infinity, seed: SEED });
const small = session("small", { targetBytes: Infinity, maxEntries: 1000, seed: SEED + 1 });
log(`session: ${big.file} ${mib(big.bytes)} MiB, ${big.entries} entries, ${mib(big.textBytes)} MiB text, ${big.compactions} compactions, ${big.bigOutputs} outputs of 50–200 KB, rare needle in ${big.rareId}, common needle in ${big.commonItems} items (${big.reused ? "reused" : `generated in ${(big.generateMs / 1000).toFixed(1)} s`})`);
log(`small:   ${small.file} ${mib(small.bytes)} MiB, ${small.entries} entries`);

const bigWork = workCopy(big.file);
const smallWork = workCopy(small.file);
process.on("exit", () => {
	for (const f of [bigWork, smallWork]) rmSync(f, { force: true });
	rmSync(scratch, { recursive: true, force: true });
});

// ---- start-up: 3 fresh processes -----------------------------------------------------------
const startups = [];
for (let i = 0; i < 3; i++) {
	const out = execFileSync(process.execPath, ["--expose-gc", SELF, "--startup-child", bigWork, big.sessionId, big.leafId], { encoding: "utf8" });
	const r = JSON.parse(out.trim().split("\n").pop());
	if (!r.ok || r.tip !== big.leafId || !r.complete) throw new Error(`open (background: false) failed: ${out}`);
	startups.push(r);
	log(`start-up ${i + 1}: ${r.ms.toFixed(0)} ms, RSS +${mib(r.growth)} MiB (peak ${mib(r.peak)} MiB)`);
}
const startMs = stats(startups.map((r) => r.ms)).median;
const startGrowth = stats(startups.map((r) => r.growth)).median;
const startPeak = stats(startups.map((r) => r.peak)).median;
const resumes = [];
for (let i = 0; i < 3; i++) {
	const out = execFileSync(process.execPath, ["--expose-gc", SELF, "--resume-child", bigWork, big.sessionId, big.leafId], { encoding: "utf8" });
	const r = JSON.parse(out.trim().split("\n").pop());
	if (!r.complete || r.tip !== big.leafId) throw new Error(`the background load did not complete: ${out}`);
	resumes.push(r);
	log(`resume ${i + 1}: first pass ${r.firstMs.toFixed(0)} ms, complete at ${r.ms.toFixed(0)} ms${r.twoPasses ? "" : " (one pass: the branch has no compaction)"}, RSS +${mib(r.firstGrowth)} MiB after the first pass, +${mib(r.growth)} MiB complete, peak +${mib(r.peakGrowth)} MiB`);
}
const resumeGrowth = stats(resumes.map((r) => r.growth)).median;
const resumePeak = stats(resumes.map((r) => r.peakGrowth)).median;
const resumeFirst = stats(resumes.map((r) => r.firstGrowth)).median;

// ---- open the big session with Pi and bring up the engine as session_start does ---------------
let t0 = performance.now();
const bigSm = SessionManager.open(bigWork);
const piOpenMs = performance.now() - t0;
if (bigSm.getLeafId() !== big.leafId) throw new Error("SessionManager did not open the generated leaf");
/** `out` when it waits for nothing; a hook of the bench must not start an operation. */
function settled(out, what) {
	if (out instanceof Promise) throw new Error(`${what} started an operation that waits for jobs`);
	return out;
}

/**
 * What the extension's session_start path does, with the file loaded at once: `open` (with
 * background false, the branch from Pi when the file does not hold the leaf), then
 * `configure` and the `session_start` hook through `drive`.
 */
function bringUp(sm) {
	const ctx = makeCtx(sm);
	const pi = piStubFor(sm);
	const rt = { pi, engine: new Engine(), state: {}, subagent: false };
	open(rt, ctx);
	settled(drive(rt, ctx, { type: "configure", sources: loadSettings(pi, ctx) }), "configure");
	const out = settled(drive(rt, ctx, { type: "hook", observation: { moment: moment(ctx, rt), event: { type: "session_start" } } }), "session_start");
	if (!out.historyComplete || out.needsBranch) throw new Error("the engine did not load the whole session");
	return { ctx, rt };
}
const bigCtx = makeCtx(bigSm);
gc();
const rssBeforeEngine = rss();
t0 = performance.now();
const { rt: bigRt } = bringUp(bigSm);
const sessionStartMs = performance.now() - t0;
gc();
const inProcessGrowth = rss() - rssBeforeEngine;
log(`Pi SessionManager.open: ${piOpenMs.toFixed(0)} ms; session_start path (open + configure + session_start hook): ${sessionStartMs.toFixed(0)} ms, RSS +${mib(inProcessGrowth)} MiB`);

// ---- search ----------------------------------------------------------------------------------
const SEARCH_RUNS = 7;
const searchMoment = moment(bigCtx);
const relaySearch = (query) => () => {
	const out = step(bigRt.engine, { type: "tool", callId: "bench-search", name: "history_search_contents", args: { query, limit: SEARCH_LIMIT }, moment: searchMoment });
	if (!out.reply || out.reply.isError) throw new Error(`history_search_contents failed: ${JSON.stringify(out)}`);
	return JSON.parse(out.reply.text);
};
const search = {};
for (const [label, query] of [["rare", RARE], ["common", COMMON]]) {
	const relay = timeRuns(relaySearch(query), SEARCH_RUNS);
	const base = timeRuns(() => baselineSearch(bigSm, query, SEARCH_LIMIT), SEARCH_RUNS);
	const baseAll = timeRuns(() => baselineSearchAll(bigSm, query, SEARCH_LIMIT), SEARCH_RUNS);
	const relayIds = relay.result.items.map((i) => i.item_id);
	const baseIds = base.result.map((h) => h.item_id);
	if (JSON.stringify(relayIds) !== JSON.stringify(baseIds) || JSON.stringify(baseIds) !== JSON.stringify(baseAll.result.map((h) => h.item_id))) {
		throw new Error(`search results differ for ${label}: relay ${relayIds} baseline ${baseIds}`);
	}
	if (label === "rare" && (relayIds.length !== 1 || relayIds[0] !== big.rareId)) throw new Error(`rare needle not found where planted: ${relayIds}`);
	search[label] = { relay, base, baseAll, hits: relayIds.length };
	log(`search ${label}: relay ${relay.median.toFixed(2)} ms, baseline ${base.median.toFixed(1)} ms, baseline(all) ${baseAll.median.toFixed(1)} ms, ${relayIds.length} hits (same items in all three)`);
}

// ---- per request -----------------------------------------------------------------------------
/**
 * One iteration = one model turn with a tool call, as Pi persists it: a user message before the
 * `context` hook, the assistant's tool call before `tool_call`, the tool result before `turn_end`.
 * Appending through Pi is Pi's work and is not timed; the hook path is timed exactly as
 * extension/src/index.ts runs it: `drive(rt, ctx, {type: "hook", observation: {moment, event}})`
 * (the feed of what Pi appended, the crossing, the output parsed, its appends and effects carried
 * out), and for `context` the request's messages with the engine's inserted when it has any.
 */
function perRequest(sm, rt, iters) {
	const ctx = makeCtx(sm);
	const messages = [{ role: "user", content: "…" }];
	const hook = (type, extra) => {
		const out = settled(drive(rt, ctx, { type: "hook", observation: { moment: moment(ctx, rt), event: { type, ...extra } } }), type);
		if (type === "context") request(messages, out, rt.state.stubs);
		return out;
	};
	const samples = { context: [], tool_call: [], turn_end: [] };
	const appendMs = [];
	const text = "Please continue with the next step of the refactoring and keep the tests green. ".repeat(3);
	const time = (key, fn) => {
		const a = performance.now();
		fn();
		samples[key].push((performance.now() - a) * 1000);
	};
	const warm = 50;
	for (let i = 0; i < iters + warm; i++) {
		const keep = i >= warm;
		let a = performance.now();
		sm.appendMessage({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
		if (keep) appendMs.push(performance.now() - a);
		if (keep) time("context", () => hook("context"));
		else hook("context");
		const callId = `toolu_bench${i}`;
		sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "Reading the file." }, { type: "toolCall", id: callId, name: "read", arguments: { path: "src/lib.rs" } }], api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5", usage: { input: 3, output: 20, cacheRead: 40000, cacheWrite: 0, totalTokens: 40023, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "toolUse", timestamp: Date.now() });
		if (keep) time("tool_call", () => hook("tool_call", { toolName: "read", toolCallId: callId }));
		else hook("tool_call", { toolName: "read", toolCallId: callId });
		sm.appendMessage({ role: "toolResult", toolCallId: callId, toolName: "read", content: [{ type: "text", text: "fn main() {}\n" }], isError: false, timestamp: Date.now() });
		if (keep) time("turn_end", () => hook("turn_end", { toolResults: 1 }));
		else hook("turn_end", { toolResults: 1 });
	}
	if (rt.state.last?.tip !== sm.getLeafId() || step(rt.engine, { type: "known", ids: [sm.getLeafId()] }).value !== 0) throw new Error("the mirror did not follow the leaf");
	const all = [...samples.context, ...samples.tool_call, ...samples.turn_end];
	return { context: stats(samples.context), tool_call: stats(samples.tool_call), turn_end: stats(samples.turn_end), all: stats(all), appendMs: stats(appendMs) };
}

function baselineRequests(sm, runs) {
	return timeRuns(() => baselinePerRequest(sm), runs);
}

const bigReq = perRequest(bigSm, bigRt, ITERS);
const bigBase = baselineRequests(bigSm, Math.min(ITERS, 60));
log(`per request @${big.entries}: relay median ${bigReq.all.median.toFixed(1)} µs; baseline ${bigBase.median.toFixed(2)} ms`);

const smallSm = SessionManager.open(smallWork);
const { rt: smallRt } = bringUp(smallSm);
const smallReq = perRequest(smallSm, smallRt, ITERS);
const smallBase = baselineRequests(smallSm, ITERS);
log(`per request @${small.entries}: relay median ${smallReq.all.median.toFixed(1)} µs; baseline ${smallBase.median.toFixed(3)} ms`);

// ---- diagnostic: the same hooks without Relay's status-file write (stateDir unset) -------------
const DIAG_ITERS = Math.min(ITERS, 500);
const noStatus = (rt, sm) => {
	const ctx = makeCtx(sm);
	settled(drive(rt, ctx, { type: "configure", sources: { ...loadSettings(rt.pi, ctx), stateDir: null } }), "configure");
};
noStatus(bigRt, bigSm);
const bigNoStatus = perRequest(bigSm, bigRt, DIAG_ITERS);
noStatus(smallRt, smallSm);
const smallNoStatus = perRequest(smallSm, smallRt, DIAG_ITERS);
log(`without the status-file write: context/tool_call/turn_end @${big.entries} ${["context", "tool_call", "turn_end"].map((k) => bigNoStatus[k].median.toFixed(1)).join("/")} µs, @${small.entries} ${["context", "tool_call", "turn_end"].map((k) => smallNoStatus[k].median.toFixed(1)).join("/")} µs`);

// ---- report ----------------------------------------------------------------------------------
const us = (x) => `${x.toFixed(1)} µs`;
const ms = (x, d = 1) => `${x.toFixed(d)} ms`;
const verdict = (ok) => (ok ? "PASS" : "MISS");
const rows = [];
const row = (...cells) => rows.push(`| ${cells.join(" | ")} |`);
const rssRatio = startGrowth / big.textBytes;
const flat = bigReq.all.median / smallReq.all.median;
row("Measure", "Relay", "TypeScript baseline", "Ratio", "Requirement", "Verdict");
row("---", "---", "---", "---", "---", "---");
row(`Start-up: \`new Engine()\` + \`open\` (background: false; median of 3 fresh processes)`, ms(startMs, 0), "—", "—", "≤ 500 ms", verdict(startMs <= 500));
row(`Start-up: engine RSS growth vs message text (${mib(big.textBytes)} MiB)`, `${mib(startGrowth)} MiB (peak RSS ${mib(startPeak)} MiB)`, "—", `${rssRatio.toFixed(2)}× text`, "≤ 1.5× text", verdict(rssRatio <= 1.5));
row("Start-up: whole `session_start` path in the extension, the file loaded at once (open + configure + session_start hook, through `drive`)", ms(sessionStartMs, 0), "—", "—", "(info)", "");
row(`Resume as the extension loads a large file (two passes off Pi's thread): RSS growth once complete vs text (the one-pass load beside it)`, `${mib(resumeGrowth)} MiB (${mib(resumeFirst)} MiB after the first pass)`, `one pass: ${mib(startGrowth)} MiB`, `${(resumeGrowth / big.textBytes).toFixed(2)}× text (${(resumeGrowth / startGrowth).toFixed(2)}× the one pass)`, "≤ 1.5× text", verdict(resumeGrowth / big.textBytes <= 1.5));
row(`Resume as the extension loads a large file: peak RSS growth during the load vs text`, `${mib(resumePeak)} MiB`, "—", `${(resumePeak / big.textBytes).toFixed(2)}× text`, "≤ 1.5× text", verdict(resumePeak / big.textBytes <= 1.5));
for (const [label, r, b, entries] of [["1k", smallReq, smallBase, small.entries], ["full", bigReq, bigBase, big.entries]]) {
	for (const k of ["context", "tool_call", "turn_end"]) {
		row(`Per request @${entries} entries: \`${k}\` (median / p90)`, `${us(r[k].median)} / ${us(r[k].p90)}`, k === "context" ? `${ms(b.median, 3)} / ${ms(b.p90, 3)}` : "—", k === "context" ? `${(b.median * 1000 / r[k].median).toFixed(0)}× faster` : "—", "≤ 50 µs median", verdict(r[k].median <= 50));
	}
}
for (const k of ["context", "tool_call", "turn_end"]) {
	row(`Diagnostic, stateDir unset (no status-file write): \`${k}\` @1k / @full (median; ${DIAG_ITERS} iterations)`, `${us(smallNoStatus[k].median)} / ${us(bigNoStatus[k].median)}`, "—", `${(bigNoStatus[k].median / smallNoStatus[k].median).toFixed(2)}×`, "(info)", "");
}
row("Per request: flatness, full / 1k (all three hooks, median)", `${us(bigReq.all.median)} / ${us(smallReq.all.median)}`, `${ms(bigBase.median, 2)} / ${ms(smallBase.median, 3)}`, `${flat.toFixed(2)}× (baseline ${(bigBase.median / smallBase.median).toFixed(0)}×)`, "≤ 1.5×", verdict(flat <= 1.5));
for (const [label, need] of [["rare", 10], ["common", 5]]) {
	const s = search[label];
	const ratio = s.base.median / s.relay.median;
	row(`Search \`history_search_contents\`, ${label} needle (${s.hits} hits; median of ${SEARCH_RUNS})`, ms(s.relay.median, 2), `${ms(s.base.median)} (scan-all variant ${ms(s.baseAll.median)})`, `${ratio.toFixed(1)}× (${(s.baseAll.median / s.relay.median).toFixed(1)}×)`, `≥ ${need}×`, verdict(ratio >= need));
}

const header = [
	`Session: ${mib(big.bytes)} MiB JSONL, ${big.entries} entries, ${mib(big.textBytes)} MiB of message text, ${big.compactions} compactions (seed ${SEED}); small session: ${small.entries} entries.`,
	`Pi's own SessionManager.open of the big session: ${ms(piOpenMs, 0)}; Pi's appendMessage per entry (not in the Relay figures): median ${ms(bigReq.appendMs.median, 3)}.`,
	`Node ${process.version}, ${ITERS} iterations per hook, total bench time ${((performance.now() - tStart) / 1000).toFixed(0)} s.`,
];
console.log(["", ...header, "", ...rows, ""].join("\n"));
