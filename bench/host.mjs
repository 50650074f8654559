// Issue 12: Relay inside the real `pi` process. Runs the `pi` CLI in print mode, offline, on the
// generated large session (bench/session-gen.mjs) with the faux model of demo/faux-provider.ts,
// and times the extension under test between two probes (bench/host/timing-*.ts): Relay, and the
// straightforward TypeScript implementation of the same work (bench/baseline/index.ts).
//
//   node bench/host.mjs                       # 256 MiB session (make bench-host)
//   RELAY_BENCH_MB=16 node bench/host.mjs     # quick mode
//
// Env: RELAY_BENCH_MB (default 256), RELAY_HOST_RUNS (pi runs per variant and size, default 3),
// RELAY_HOST_ROUNDS (rounds of [rare search, common search, note append] per run, default 5),
// RELAY_BENCH_SEED, RELAY_BENCH_DIR (the generator's cache). No timed assertions: it prints.
import { execFileSync } from "node:child_process";
import { appendFileSync, closeSync, fstatSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { COMMON, RARE, copyWithCwd, session } from "./session-gen.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const NODE = process.execPath;
const PI = join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");
const FAUX = join(ROOT, "demo/faux-provider.ts");
const BEFORE = join(ROOT, "bench/host/timing-before.ts");
const AFTER = join(ROOT, "bench/host/timing-after.ts");
const VARIANTS = { relay: join(ROOT, "extension"), baseline: join(ROOT, "bench/baseline/index.ts"), empty: join(ROOT, "bench/host/empty.ts") };

const MB = Number(process.env.RELAY_BENCH_MB ?? 256);
const RUNS = Number(process.env.RELAY_HOST_RUNS ?? 3);
const ROUNDS = Number(process.env.RELAY_HOST_ROUNDS ?? 5);
const SEED = Number(process.env.RELAY_BENCH_SEED ?? 1);
if (!(MB > 0) || !(RUNS > 0) || !(ROUNDS > 0)) throw new Error("RELAY_BENCH_MB, RELAY_HOST_RUNS and RELAY_HOST_ROUNDS must be positive");

const log = (...a) => console.error(...a);
const median = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const mib = (b) => (b / 1048576).toFixed(1);
const load = () => readFileSync("/proc/loadavg", "utf8").trim().split(" ").slice(0, 3).join(" ");

const scratch = mkdtempSync(join(tmpdir(), "relay-host-bench-"));
process.on("exit", () => rmSync(scratch, { recursive: true, force: true }));

// The model's script: ROUNDS × (rare search, common search, note append), then a final answer.
const steps = [];
for (let i = 0; i < ROUNDS; i++) {
	steps.push({ tool: "history_search_contents", args: { query: RARE, limit: 20 } });
	steps.push({ tool: "history_search_contents", args: { query: COMMON, limit: 20 } });
	steps.push({ tool: "notes_append_to_file", args: { path: "bench/log.md", content: `round ${i}\n` } });
}
steps.push({ text: "Done." });
const scriptFile = join(scratch, "script.json");
writeFileSync(scriptFile, JSON.stringify(steps));

/**
 * A Pi compaction entry to append to the big session so that its window keeps only the newest
 * `keep` entries: the window of the 1k session, on the big session's history. The flatness
 * measure then compares the session's length alone, not the window's (Pi's own share of the
 * `context` hook grows with the window). Reads the file's tail, more of it until the walk back
 * from the leaf finds `keep` entries.
 */
function compactionKeeping(file, leafId, keep) {
	const fd = openSync(file, "r");
	const size = fstatSync(fd).size;
	try {
		for (let span = 8 * 1048576; ; span *= 2) {
			const start = Math.max(0, size - span);
			const buf = Buffer.alloc(size - start);
			readSync(fd, buf, 0, buf.length, start);
			const lines = buf.toString("utf8").split("\n");
			if (start > 0) lines.shift();
			const byId = new Map();
			for (const l of lines) {
				if (!l) continue;
				const e = JSON.parse(l);
				if (e.id) byId.set(e.id, e);
			}
			let entry = byId.get(leafId);
			for (let i = 1; entry && i < keep; i++) entry = byId.get(entry.parentId);
			if (entry) {
				const leaf = byId.get(leafId);
				const compaction = {
					type: "compaction",
					id: "0c0ffee0",
					parentId: leafId,
					timestamp: new Date(Date.parse(leaf.timestamp) + 1000).toISOString(),
					summary: "The earlier work of this session, summarised for the benchmark.",
					firstKeptEntryId: entry.id,
					tokensBefore: 150000,
				};
				if (byId.has(compaction.id)) throw new Error(`the session already has an entry ${compaction.id}`);
				return JSON.stringify(compaction) + "\n";
			}
			if (start === 0) throw new Error(`the session has fewer than ${keep} entries before ${leafId}`);
		}
	} finally {
		closeSync(fd);
	}
}

/** One `pi -p` run of `variant` on a private copy of `file` (with `tail` appended); returns the probes' marks. */
function runPi(variant, file, n, tail) {
	const dir = join(scratch, `${variant}-${n}`);
	const agent = join(dir, "agent");
	const work = join(dir, "work");
	mkdirSync(agent, { recursive: true });
	mkdirSync(work, { recursive: true });
	// No compaction in the timed runs: the window holds the whole generated text (millions of
	// faux tokens), and a compaction would spend a scripted reply. No tool-result clearing either:
	// in a window no real model has (the whole 122,605-entry branch), the first turn end would clear
	// its 671 old results at once, and Pi checks each `context_edit` against the whole branch (a
	// walk of every entry per edit, twice: the boundary's preview and its commit), which took 53 of
	// a 72 s run (profile of 2026-12-03 in bench/NOTES.md). That cost is Pi's, per cleared result
	// and branch length: `node bench/pi-edits.mjs` measures it.
	writeFileSync(join(agent, "settings.json"), JSON.stringify({ compaction: { enabled: false }, relay: { clearToolResults: { enabled: false } } }));
	const copy = join(dir, "session.jsonl");
	copyWithCwd(file, copy, work);
	if (tail) appendFileSync(copy, tail);
	const out = join(dir, "marks.json");
	const t0 = performance.now();
	execFileSync(
		NODE,
		[PI, "-p", "-ne", "-nbt", "-nc", "-ns", "-np", "--no-themes", "--offline", "--session", copy,
			"-e", FAUX, "-e", BEFORE, "-e", VARIANTS[variant], "-e", AFTER, "--model", "faux/faux-1", "Find the expired lease and log it."],
		{
			cwd: work,
			stdio: ["ignore", "pipe", "pipe"],
			env: {
				...process.env,
				PI_CODING_AGENT_DIR: agent,
				PI_CONTEXT_BUDGET_STATE_DIR: join(agent, "context-budget"),
				PI_OFFLINE: "1",
				RELAY_FAUX_SCRIPT: scriptFile,
				RELAY_FAUX_WINDOW: "1000000000",
				RELAY_HOST_BENCH_OUT: out,
			},
			maxBuffer: 64 * 1048576,
		},
	);
	const wallMs = performance.now() - t0;
	const marks = JSON.parse(readFileSync(out, "utf8"));
	rmSync(dir, { recursive: true, force: true });
	return { marks, wallMs };
}

/** Per-event durations of the extension between the probes, and each tool's execution time. */
function measure({ marks, wallMs }) {
	const spans = {};
	const open = new Map();
	for (const m of marks) {
		const key = `${m.event}:${m.toolCallId ?? ""}`;
		if (m.probe === "before") open.set(key, m.t);
		else if (open.has(key)) {
			(spans[m.event] ??= []).push(m.t - open.get(key));
			open.delete(key);
		}
	}
	// A tool runs between the last tool_call handler (after) and the first tool_result one (before).
	const tools = {};
	const calls = new Map();
	for (const m of marks) {
		if (m.event === "tool_call" && m.probe === "after") calls.set(m.toolCallId, m.t);
		if (m.event === "tool_result" && m.probe === "before" && calls.has(m.toolCallId)) {
			(tools[m.toolName] ??= []).push(m.t - calls.get(m.toolCallId));
		}
	}
	// Phases of the run: Pi's start-up to session_start, to the first request, to the last turn's end.
	const at = (event, probe, last = false) => {
		const list = marks.filter((m) => m.event === event && m.probe === probe);
		return (last ? list.at(-1) : list[0])?.t ?? NaN;
	};
	const phases = {
		toSessionStart: at("session_start", "before"),
		toFirstRequest: at("context", "before") - at("session_start", "before"),
		run: at("agent_end", "after", true) - at("context", "before"),
	};
	// The searches alternate rare, common.
	const searches = tools.history_search_contents ?? [];
	return {
		sessionStart: spans.session_start?.[0] ?? NaN,
		firstContext: spans.context?.[0] ?? NaN,
		context: (spans.context ?? []).slice(1),
		toolCall: spans.tool_call ?? [],
		rare: searches.filter((_, i) => i % 2 === 0),
		common: searches.filter((_, i) => i % 2 === 1),
		notes: tools.notes_append_to_file ?? [],
		wallMs,
		phases,
		toFirstRequest: phases.toFirstRequest,
	};
}

function bench(label, file, variant, tail) {
	const runs = [];
	for (let i = 0; i < RUNS; i++) {
		const r = measure(runPi(variant, file, i, tail));
		if (r.rare.length !== ROUNDS || r.notes.length !== ROUNDS) throw new Error(`${variant}: the script's tools did not all run (${r.rare.length} searches, ${r.notes.length} appends)`);
		runs.push(r);
		log(`${label} ${variant} run ${i + 1}: session_start ${r.sessionStart.toFixed(1)} ms, first context ${r.firstContext.toFixed(1)} ms, context ${median(r.context).toFixed(2)} ms, rare ${median(r.rare).toFixed(2)} ms, common ${median(r.common).toFixed(2)} ms, notes ${median(r.notes).toFixed(2)} ms, pi wall ${(r.wallMs / 1000).toFixed(1)} s (up to session_start ${(r.phases.toSessionStart / 1000).toFixed(1)} s, then to the first request ${(r.phases.toFirstRequest / 1000).toFixed(1)} s, the run ${(r.phases.run / 1000).toFixed(1)} s; load ${load()})`);
	}
	const all = (k) => runs.flatMap((r) => (Array.isArray(r[k]) ? r[k] : [r[k]]));
	return Object.fromEntries(["sessionStart", "firstContext", "toFirstRequest", "context", "toolCall", "rare", "common", "notes", "wallMs"].map((k) => [k, median(all(k))]));
}

/** One memchr pass over the message text (Buffer.indexOf of a byte calls memchr), median of 7. */
function memchrPass(textBytes) {
	const buf = Buffer.alloc(textBytes, 0x61);
	buf.indexOf(0x00);
	const samples = [];
	for (let i = 0; i < 7; i++) {
		const t0 = performance.now();
		if (buf.indexOf(0x00) !== -1) throw new Error("memchr found a byte that is not there");
		samples.push(performance.now() - t0);
	}
	return median(samples);
}

/**
 * The rare and common searches in the engine alone (the addon in this process), median of 7:
 * `inFile` false loads the session at once (texts in memory), true as Pi's start-up does, in the
 * background (the whole load keeps each item's place in the file and reads texts back).
 */
async function engineSearch(meta, inFile) {
	const { native } = await import(new URL("../extension/src/native.ts", import.meta.url).href);
	// The extension's own job runner (the addon's pool, the job's deadline): what Pi runs.
	const { runJob } = await import(new URL("../extension/src/adapter.ts", import.meta.url).href);
	const engine = new (native().Engine)();
	const moment = { nowMs: Date.now(), tzOffsetMinutes: 0, usage: null, model: null, contextWindow: null, hasPendingMessages: false, pendingWork: 0, cwd: "/", subagent: false };
	// One crossing of the addon's door per input; a background load's jobs run on the pool.
	const step = (input) => JSON.parse(engine.handle(JSON.stringify(input)));
	let opened = step({ type: "open", sessionId: meta.sessionId, file: meta.file, size: meta.file ? statSync(meta.file).size : null, leaf: meta.leafId, background: inFile });
	while (opened.op !== undefined && opened.op !== null) {
		const results = await Promise.all(opened.jobs.map((job) => runJob(job, null)));
		opened = step({ type: "done", op: opened.op, results, moment });
	}
	// The whole history loads when something needs it: a history tool asks for it first.
	if (!opened.historyComplete && !opened.needsBranch) {
		const job = step({ type: "history" }).historyLoad;
		if (job) opened = step({ type: "done", op: job.id, results: [await runJob(job, null)], moment });
	}
	if (opened.needsBranch || !opened.historyComplete || opened.tip !== meta.leafId) throw new Error(`the engine could not load the session (${inFile ? "in the background" : "at once"})`);
	const out = {};
	for (const [label, query] of [["rare", RARE], ["common", COMMON]]) {
		const call = () => {
			const reply = step({ type: "tool", callId: "bench-search", name: "history_search_contents", args: { query, limit: 20 }, moment }).reply;
			if (!reply || reply.isError) throw new Error(`history_search_contents failed: ${JSON.stringify(reply)}`);
			return JSON.parse(reply.text);
		};
		const first = call();
		if (label === "rare" && (first.items.length !== 1 || first.items[0].item_id !== meta.rareId)) throw new Error("the engine did not find the rare needle where it was planted");
		const samples = [];
		for (let i = 0; i < 7; i++) {
			const t0 = performance.now();
			call();
			samples.push(performance.now() - t0);
		}
		out[label] = median(samples);
	}
	return out;
}

const tStart = performance.now();
const loadStart = load();
const big = session("big", { targetBytes: Math.round(MB * 1048576), maxEntries: Infinity, seed: SEED });
const small = session("small", { targetBytes: Infinity, maxEntries: 1000, seed: SEED + 1 });
log(`session: ${mib(big.bytes)} MiB, ${big.entries} entries, ${mib(big.textBytes)} MiB of message text; small: ${small.entries} entries`);

const sameWindow = compactionKeeping(big.file, big.leafId, small.entries);

const results = {};
for (const variant of (process.env.RELAY_HOST_VARIANTS ?? "relay,baseline,empty").split(",")) {
	results[variant] = { big: bench("big", big.file, variant), small: bench("1k", small.file, variant) };
	// The big session with the 1k session's window: Relay and the host's share only.
	if (variant !== "baseline") results[variant].sameWindow = bench(`big, ${small.entries}-entry window,`, big.file, variant, sameWindow);
}
const memchrMs = memchrPass(big.textBytes);
const inEngine = await engineSearch(big, false);
const inEngineFile = await engineSearch(big, true);
const loadEnd = load();

// ---- report ----------------------------------------------------------------------------------
const f = (x, d = 2) => (Number.isFinite(x) ? `${x.toFixed(d)} ms` : "—");
const times = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(1)}×` : "—");
// A variant left out of RELAY_HOST_VARIANTS prints as "—".
const R = results.relay?.big ?? {};
const B = results.baseline?.big ?? {};
const E = results.empty?.big ?? {};
const less = (a, b) => (Number.isFinite(a) && Number.isFinite(b) ? Math.max(0, a - b) : NaN);
const line = (label, key, target, d = 2, dr = Math.max(d, 3)) => [label, f(B[key], d), f(R[key], dr), f(E[key], dr), f(less(R[key], E[key]), dr), times(B[key], R[key]), target];
const rows = [
	["work", "seed-style TypeScript", "Relay in the host", "host's own share (empty extension)", "Relay minus the host's share", "TS / Relay", "target"],
	["---", "---", "---", "---", "---", "---", "---"],
	line("per-request `context` hook (median, 2nd request on)", "context", "≤ 0.5 ms"),
	line("`tool_call` hook (median)", "toolCall", "(info)"),
	line("`history_search_contents`, rare needle", "rare", "≥ 10× faster than TS (≤ 10 ms)"),
	line("`history_search_contents`, common needle", "common", "≥ 100× faster than TS"),
	line("`notes_append_to_file`", "notes", "≤ 15 ms"),
	line("`session_start` hook on resume", "sessionStart", "≤ 100 ms", 1),
	line("first `context` hook", "firstContext", "(info)", 1),
	line("from `session_start` to the first request (Relay: its hooks wait for the background load)", "toFirstRequest", "(info)", 0, 0),
	line("whole `pi -p` run (wall)", "wallMs", "(info)", 0, 0),
];
const flat = (v, key = "context", of = "big") => (results[v]?.[of] ? results[v][of][key] / results[v].small[key] : NaN);
const W = results.relay?.sameWindow ?? {};
const EW = results.empty?.sameWindow ?? {};
const extra = [
	"",
	"| measure | value | target |",
	"| --- | --- | --- |",
	`| per-request \`context\` hook, ${big.entries} vs ${small.entries} entries (Relay in the host) | ${f(R.context, 3)} / ${f(results.relay?.small.context, 3)} = ${flat("relay").toFixed(2)}× | ≤ 1.5× |`,
	`| the same, \`tool_call\` hook (Relay in the host) | ${f(R.toolCall, 3)} / ${f(results.relay?.small.toolCall, 3)} = ${flat("relay", "toolCall").toFixed(2)}× | ≤ 1.5× |`,
	...(results.empty
		? [
				`| the same, \`context\` hook of the empty extension (the host's own share) | ${f(E.context, 3)} / ${f(results.empty.small.context, 3)} = ${flat("empty").toFixed(2)}× | — |`,
				`| the same, Relay minus the host's share (\`context\`) | ${f(less(R.context, E.context), 3)} / ${f(less(results.relay?.small.context, results.empty.small.context), 3)} = ${(less(R.context, E.context) / less(results.relay?.small.context, results.empty.small.context)).toFixed(2)}× | ≤ 1.5× |`,
			]
		: []),
	`| the same for the TypeScript baseline (\`context\`) | ${f(B.context)} / ${f(results.baseline?.small.context, 3)} = ${flat("baseline").toFixed(0)}× | — |`,
	`| per-request \`context\` hook, ${big.entries} entries whose window is the newest ${small.entries} (a compaction appended) vs ${small.entries} entries (Relay in the host) | ${f(W.context, 3)} / ${f(results.relay?.small.context, 3)} = ${flat("relay", "context", "sameWindow").toFixed(2)}× | ≤ 1.5× |`,
	...(results.empty
		? [
				`| the same window, \`context\` hook of the empty extension (the host's own share) | ${f(EW.context, 3)} / ${f(results.empty.small.context, 3)} = ${flat("empty", "context", "sameWindow").toFixed(2)}× | — |`,
				`| the same window, Relay minus the host's share (\`context\`) | ${f(less(W.context, EW.context), 3)} / ${f(less(results.relay?.small.context, results.empty.small.context), 3)} = ${(less(W.context, EW.context) / less(results.relay?.small.context, results.empty.small.context)).toFixed(2)}× | ≤ 1.5× |`,
			]
		: []),
	`| one memchr pass over ${mib(big.textBytes)} MiB (the size of the message text) | ${f(memchrMs)} | — |`,
	`| rare-needle search in the engine alone (addon call, median of 7) / one memchr pass | ${f(inEngine.rare)} / ${f(memchrMs)} = ${(inEngine.rare / memchrMs).toFixed(2)}× | ≤ 1.5× |`,
	`| rare-needle search in the host / one memchr pass | ${f(R.rare)} / ${f(memchrMs)} = ${(R.rare / memchrMs).toFixed(2)}× | ≤ 1.5× |`,
	`| common-needle search in the engine alone | ${f(inEngine.common, 3)} | — |`,
	`| the same two with the texts read back from the file (loaded in the background, as at start-up): rare, common | ${f(inEngineFile.rare, 3)}, ${f(inEngineFile.common, 3)} (${times(inEngineFile.rare, inEngine.rare)}, ${times(inEngineFile.common, inEngine.common)} the in-memory figures) | (info) |`,
];
const cpu = cpus();
const header = [
	`Session: ${mib(big.bytes)} MiB JSONL, ${big.entries} entries, ${mib(big.textBytes)} MiB of message text, ${big.compactions} compactions (seed ${SEED}); small session ${small.entries} entries.`,
	`Machine: ${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores; load average (1/5/15 min) ${loadStart} at the start, ${loadEnd} at the end. Node ${process.version}.`,
	`${RUNS} pi runs per variant and size, ${ROUNDS} rounds of (rare search, common search, note append) per run; medians over all runs. Total ${((performance.now() - tStart) / 1000).toFixed(0)} s.`,
];
console.log(["", ...header, "", ...rows.map((r) => `| ${r.join(" | ")} |`), ...extra, ""].join("\n"));
