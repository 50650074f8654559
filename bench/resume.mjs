// Issue 25: what resuming a large session costs inside the real `pi` process. `pi -p --session
// <copy> go` with one scripted reply, for bare Pi (the faux model only), an extension with
// Relay's hooks that does nothing (bench/host/empty.ts: Pi's own share of having an extension),
// the same with Pi's two boundary hooks (bench/host/boundary.ts: the whole-branch previews Pi
// builds for any subscriber to them) and Relay, alternating, on the generated session of
// RELAY_BENCH_MB MiB and on a 25 MiB one. Prints the whole run, the time from `session_start` to
// the first provider request, the run's end hook by hook (bench/host/resume-probe.ts), and the
// peak resident set (VmHWM at exit, and the largest of the samples taken every 50 ms through the
// run), each against both empty extensions. No timed assertions: it prints.
//
//   node bench/resume.mjs                        # 256 MiB and 25 MiB (part of make bench-host)
//   RELAY_BENCH_MB=64 RELAY_RESUME_RUNS=1 node bench/resume.mjs
//
// Env: RELAY_BENCH_MB (default 256), RELAY_RESUME_SMALL_MB (default 25), RELAY_RESUME_RUNS (runs per
// variant and size, default 3), RELAY_BENCH_SEED, RELAY_BENCH_DIR (the generator's cache).
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { copyWithCwd, session } from "./session-gen.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const NODE = process.execPath;
const PI = join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");
const FAUX = join(ROOT, "demo/faux-provider.ts");
const PROBE = join(ROOT, "bench/host/resume-probe.ts");
const EMPTY = join(ROOT, "bench/host/empty.ts");
const VARIANTS = { bare: [], empty: [EMPTY], boundary: [EMPTY, join(ROOT, "bench/host/boundary.ts")], relay: [join(ROOT, "extension")] };

const MB = Number(process.env.RELAY_BENCH_MB ?? 256);
const SMALL_MB = Number(process.env.RELAY_RESUME_SMALL_MB ?? 25);
const RUNS = Number(process.env.RELAY_RESUME_RUNS ?? 3);
const SEED = Number(process.env.RELAY_BENCH_SEED ?? 1);
if (!(MB > 0) || !(SMALL_MB > 0) || !(RUNS > 0)) throw new Error("RELAY_BENCH_MB, RELAY_RESUME_SMALL_MB and RELAY_RESUME_RUNS must be positive");

const log = (...a) => console.error(...a);
const median = (xs) => {
	const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
	return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const mib = (b) => (b / 1048576).toFixed(0);
const load = () => readFileSync("/proc/loadavg", "utf8").trim().split(" ").slice(0, 3).join(" ");
const rss = (pid) => {
	try {
		const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"));
		return line ? Number(line.split(/\s+/)[1]) * 1024 : NaN;
	} catch {
		return NaN; // the process has exited between two samples
	}
};

const scratch = mkdtempSync(join(tmpdir(), "relay-resume-bench-"));
process.on("exit", () => rmSync(scratch, { recursive: true, force: true }));
const scriptFile = join(scratch, "script.json");
writeFileSync(scriptFile, JSON.stringify([{ text: "Done." }]));

/** One `pi -p` resume of a private copy of `file` with `variant`; the probe's marks and the RSS samples. */
async function runPi(variant, file, n) {
	const dir = join(scratch, `${variant}-${n}`);
	const agent = join(dir, "agent");
	const work = join(dir, "work");
	mkdirSync(agent, { recursive: true });
	mkdirSync(work, { recursive: true });
	writeFileSync(join(agent, "settings.json"), JSON.stringify({ compaction: { enabled: false } }));
	const copy = join(dir, "session.jsonl");
	copyWithCwd(file, copy, work);
	const out = join(dir, "marks.json");
	const extensions = [FAUX, ...VARIANTS[variant], PROBE].flatMap((e) => ["-e", e]);
	const t0 = Date.now();
	const child = spawn(
		NODE,
		[PI, "-p", "-ne", "-nbt", "-nc", "-ns", "-np", "--no-themes", "--offline", "--session", copy, ...extensions, "--model", "faux/faux-1", "go"],
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
				RELAY_RESUME_BENCH_OUT: out,
			},
		},
	);
	let stdout = "";
	let stderr = "";
	child.stdout.on("data", (d) => (stdout += d));
	child.stderr.on("data", (d) => (stderr += d));
	const samples = [];
	const timer = setInterval(() => samples.push({ t: Date.now() - t0, rss: rss(child.pid) }), 50);
	const code = await new Promise((resolve) => child.on("close", resolve));
	clearInterval(timer);
	const wallMs = Date.now() - t0;
	if (code !== 0 || !stdout.includes("Done.")) throw new Error(`${variant}: pi exited ${code}, stdout ${JSON.stringify(stdout.slice(0, 200))}, stderr ${stderr.slice(-2000)}`);
	const marks = JSON.parse(readFileSync(out, "utf8"));
	rmSync(dir, { recursive: true, force: true });
	const sampled = samples.map((s) => s.rss).filter(Number.isFinite);
	return {
		wallMs,
		toFirstRequest: marks.firstRequest - marks.sessionStart,
		firstRequestAt: marks.firstRequest - t0,
		sessionStartAt: marks.sessionStart - t0,
		shutdownAt: (marks.shutdown ?? marks.exit) - t0,
		afterShutdown: marks.exit - (marks.shutdown ?? marks.exit),
		// The run's end: answer → agent_end (turn_end's preview and handlers), agent_end → settled
		// (agent_before_settle's), settled → session_shutdown.
		toAgentEnd: marks.agentEnd - marks.answer,
		toSettled: marks.settled - marks.agentEnd,
		settledToShutdown: (marks.shutdown ?? marks.exit) - marks.settled,
		peakRss: marks.peakRss,
		peakSampled: Math.max(...sampled),
		rssAtFirstRequest: marks.rssAtFirstRequest,
		curve: samples,
	};
}

async function bench(label, file) {
	const runs = Object.fromEntries(Object.keys(VARIANTS).map((v) => [v, []]));
	for (let i = 0; i < RUNS; i++) {
		for (const variant of Object.keys(VARIANTS)) {
			const r = await runPi(variant, file, i);
			runs[variant].push(r);
			log(`${label} ${variant} run ${i + 1}: whole run ${(r.wallMs / 1000).toFixed(2)} s, session_start at ${(r.sessionStartAt / 1000).toFixed(2)} s, first request ${(r.firstRequestAt / 1000).toFixed(2)} s (${r.toFirstRequest} ms after session_start), session_shutdown at ${(r.shutdownAt / 1000).toFixed(2)} s, exit ${r.afterShutdown} ms after session_shutdown, answer → agent_end ${r.toAgentEnd} ms, → agent_settled ${r.toSettled} ms, → session_shutdown ${r.settledToShutdown} ms, peak RSS ${mib(r.peakRss)} MiB (sampled ${mib(r.peakSampled)}), RSS at the first request ${mib(r.rssAtFirstRequest)} MiB; load ${load()}`);
		}
	}
	return Object.fromEntries(
		Object.entries(runs).map(([v, rs]) => [v, Object.fromEntries(["wallMs", "toFirstRequest", "firstRequestAt", "sessionStartAt", "shutdownAt", "afterShutdown", "toAgentEnd", "toSettled", "peakRss", "peakSampled", "rssAtFirstRequest"].map((k) => [k, median(rs.map((r) => r[k]))]))]),
	);
}

const loadStart = load();
const sizes = [
	["big", session("big", { targetBytes: Math.round(MB * 1048576), maxEntries: Infinity, seed: SEED })],
	["resume-small", session("resume-small", { targetBytes: Math.round(SMALL_MB * 1048576), maxEntries: Infinity, seed: SEED })],
];
const results = [];
for (const [name, s] of sizes) {
	log(`${name}: ${mib(s.bytes)} MiB, ${s.entries} entries, ${mib(s.textBytes)} MiB of message text`);
	results.push([s, await bench(name, s.file)]);
}

const sec = (ms) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : "—");
const msf = (ms) => (Number.isFinite(ms) ? `${ms.toFixed(0)} ms` : "—");
const mb = (b) => (Number.isFinite(b) ? `${mib(b)} MiB` : "—");
const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : "—");
const lines = [""];
for (const [s, r] of results) {
	const { bare, empty, boundary, relay } = r;
	const text = s.textBytes;
	// Each measure: the four variants, then Relay against the empty extension and against the
	// empty extension with the boundary hooks (what Pi builds for any subscriber to them).
	const row = (name, key, fmt, vs, target) => `| ${name} | ${[bare, empty, boundary, relay].map((v) => fmt(v[key])).join(" | ")} | ${vs(relay[key], empty[key])} | ${vs(relay[key], boundary[key])} | ${target} |`;
	const plus = (fmt) => (a, b) => (Number.isFinite(a - b) ? `${a >= b ? "+" : "−"}${fmt(Math.abs(a - b))}` : "—");
	lines.push(
		`Session ${mib(s.bytes)} MiB JSONL, ${s.entries} entries, ${mib(text)} MiB of message text (seed ${SEED}); ${RUNS} runs per variant, alternating; medians.`,
		"",
		"| measure | bare Pi | empty extension | empty + boundary hooks | Relay | Relay / empty | Relay / empty + boundary | target |",
		"| --- | --- | --- | --- | --- | --- | --- | --- |",
		row("whole `pi -p` run", "wallMs", sec, ratio, "≤ 1.10×"),
		row("`session_start` → first provider request", "toFirstRequest", msf, plus(msf), "≤ +150 ms"),
		row("the run's end: answer → `agent_end` (`turn_end`)", "toAgentEnd", msf, plus(msf), "(info)"),
		row("the run's end: `agent_end` → `agent_settled` (`agent_before_settle`)", "toSettled", msf, plus(msf), "(info)"),
		row("process exit after `session_shutdown`", "afterShutdown", msf, () => "—", "(info)"),
		row("RSS at the first request", "rssAtFirstRequest", mb, plus(mb), "(info)"),
		`| peak RSS (VmHWM at exit) | ${[bare, empty, boundary, relay].map((v) => mb(v.peakRss)).join(" | ")} | +${mb(relay.peakRss - empty.peakRss)} = ${((relay.peakRss - empty.peakRss) / text).toFixed(2)}× the text | +${mb(relay.peakRss - boundary.peakRss)} = ${((relay.peakRss - boundary.peakRss) / text).toFixed(2)}× the text | ≤ 0.5× the text |`,
		row("peak RSS (sampled every 50 ms)", "peakSampled", mb, plus(mb), "(info)"),
		"",
	);
}
const cpu = cpus();
lines.push(`Machine: ${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores; load average ${loadStart} at the start, ${load()} at the end. Node ${process.version}.`, "");
console.log(lines.join("\n"));
