// `make bench-long` (issue 36, item 3): what one turn costs as the session grows. One scripted run
// through the real Pi agent loop (the SDK and the faux model of tests/extension/harness.mjs) on a
// resumed session of 1k, 5k, 25k and 100k branch entries, for bare Pi, an extension that subscribes
// to Relay's hooks and does nothing (bench/host/empty.ts), and Relay (with its defaults, and with
// tool-result clearing off).
//
// Method: bench/session-gen.mjs writes each session (realistic entries, a Pi compaction every
// 1,000 entries, so the current window is about 1,000 entries at every size and what grows is the
// branch); a child process per size, variant and run (RELAY_LONG_RUNS, 2, the variants alternating)
// opens a private copy with Pi's SessionManager, prompts once,
// and the faux model answers RELAY_LONG_TURNS (20) tool calls of a one-line tool, then a text. A
// turn's cost is the wall time from the provider's answer (the faux script returning the tool call)
// to the next request (the script called again): Pi appending the answer, the tool call and its
// result, `turn_end`, the `context` hook, building the next request, and every extension handler
// on the way. The first RELAY_LONG_WARMUP (3) turns are left out (start-up loads); the figure is
// the median of the rest. Pi's compaction is off and the window is 10^9 tokens: no reset happens.
// The generated window holds about 400k tokens, so Relay's levels (thresholds, idle request,
// clearing trigger) are set above it (`QUIET`): every turn is one of a window's quiet ones, where
// Relay is no boundary subscriber (issue 36, item 3). A window past its levels decides at every
// turn end, as it must (`engine/boundary.rs`).
//
//   node_modules/.bin/node bench/long.mjs                       # 1k, 5k, 25k, 100k entries
//   RELAY_LONG_SIZES=1000,5000 node_modules/.bin/node bench/long.mjs
//
// Prints the table with the differences (Relay minus the empty extension: Relay's own cost; the
// empty extension minus bare Pi: what Pi spends for any extension with these hooks), the same in
// CPU time, and the time between bench/host's timing probes loaded around the empty extension and
// around Relay (two more variants: the extension's own handlers per turn, per hook), and writes
// bench/long-<date>.svg (turn cost against branch length, three lines).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const EMPTY = join(HERE, "host", "empty.ts");
const BEFORE = join(HERE, "host", "timing-before.ts");
const AFTER = join(HERE, "host", "timing-after.ts");
const RELAY = join(HERE, "..", "extension", "src", "index.ts");
// The probes of bench/host.mjs around the extension: Pi runs an event's handlers in load order, so
// the time between the two probes is the extension's own (its handlers and the jobs they await).
const SIZES = (process.env.RELAY_LONG_SIZES ?? "1000,5000,25000,100000").split(",").map(Number);
const TURNS = Number(process.env.RELAY_LONG_TURNS ?? 20);
const WARMUP = Number(process.env.RELAY_LONG_WARMUP ?? 3);
const VARIANTS = ["bare", "empty", "relay", "relayNoClear", "emptyProbed", "relayProbed"];
// The plot's three lines; Relay with tool-result clearing off is printed beside them (what the
// clearing's Pi `context_edit` entries cost each turn, issue 36 item 1).
const PLOTTED = ["bare", "empty", "relay"];
const RUNS = Number(process.env.RELAY_LONG_RUNS ?? 2);
const COMPACTION_EVERY = 1_000;
// Relay's levels above the generated window's ~400k tokens (see the header).
const QUIET = { budget: { main: { soft: 600_000, handoff: 700_000, hard: 800_000 }, idleMinTokens: 900_000 } };
// Relay's own cost per turn (Relay minus the empty extension) at every size (issue 36).
const TARGET_MS = 2;

const median = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	const m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** One size and variant, in this process (the child): the per-turn times in ms, as JSON on stdout. */
async function one(size, variant) {
	const { session, copyWithCwd } = await import("./session-gen.mjs");
	const { startSession, fauxAssistantMessage, fauxToolCall } = await import("../tests/extension/harness.mjs");
	const gen = session(`long-c${COMPACTION_EVERY}`, { seed: 1, targetBytes: Infinity, maxEntries: size, compactionEvery: COMPACTION_EVERY });
	const root = mkdtempSync(join(tmpdir(), "relay-long-"));
	const cwd = join(root, "work");
	const file = join(root, "session.jsonl");
	execFileSync("mkdir", ["-p", cwd, join(root, "sessions")]);
	copyWithCwd(gen.file, file, cwd);
	const step = (pi) => {
		pi.registerTool({
			name: "step",
			label: "step",
			description: "one cheap step",
			parameters: { type: "object", properties: { n: { type: "number" } } },
			async execute(_id, p) {
				return { content: [{ type: "text", text: `step ${p.n} done` }], details: {} };
			},
		});
	};
	const extensions = {
		bare: [],
		empty: [EMPTY],
		emptyProbed: [BEFORE, EMPTY, AFTER],
		relayProbed: [BEFORE, RELAY, AFTER],
	}[variant];
	const t = await startSession({
		root,
		sessionFile: file,
		contextWindow: 1_000_000_000,
		settings: { compaction: { enabled: false }, relay: variant === "relayNoClear" ? { ...QUIET, clearToolResults: { enabled: false } } : { ...QUIET, clearToolResults: { triggerTokens: 600_000 } } },
		extraFactories: [step],
		relay: variant === "relay" || variant === "relayNoClear",
		extensions,
	});
	// The faux model's own answers, without the harness's copy of every request: each records when
	// the request came and when it answered.
	const asked = [];
	const answered = [];
	const cpuAsked = [];
	const cpuAnswered = [];
	const cpu = () => {
		const u = process.cpuUsage();
		return (u.user + u.system) / 1000;
	};
	const responses = Array.from({ length: TURNS + 1 }, (_, i) => () => {
		asked.push(performance.now());
		cpuAsked.push(cpu());
		const message =
			i < TURNS
				? fauxAssistantMessage([fauxToolCall("step", { n: i + 1 })], { stopReason: "toolUse" })
				: fauxAssistantMessage("All steps done.");
		cpuAnswered.push(cpu());
		answered.push(performance.now());
		return message;
	});
	t.faux.setResponses(responses);
	const branch = t.sessionManager.getBranch().length;
	await t.session.prompt("Run the steps.");
	const turns = [];
	const cpuTurns = [];
	for (let i = 1; i < asked.length; i++) {
		turns.push(asked[i] - answered[i - 1]);
		cpuTurns.push(cpuAsked[i] - cpuAnswered[i - 1]);
	}
	// Between the probes: per turn, the sum of the intervals from a `before` mark to the next
	// `after` mark of the same event that fall between the answer and the next request.
	const marks = globalThis[Symbol.for("relay.host-bench")] ?? [];
	const between = [];
	for (let i = 1; i < asked.length; i++) {
		let sum = 0;
		const open = new Map();
		for (const m of marks) {
			if (m.t < answered[i - 1] || m.t > asked[i]) continue;
			if (m.probe === "before") open.set(m.event, m.t);
			else if (open.has(m.event)) {
				sum += m.t - open.get(m.event);
				open.delete(m.event);
			}
		}
		between.push(sum);
	}
	// Per event, the mean over the measured turns.
	const perEvent = {};
	{
		const open = new Map();
		for (const m of marks) {
			if (m.t < answered[WARMUP] || m.t > asked.at(-1)) continue;
			if (m.probe === "before") open.set(m.event, m.t);
			else if (open.has(m.event)) {
				perEvent[m.event] = (perEvent[m.event] ?? 0) + (m.t - open.get(m.event)) / (asked.length - 1 - WARMUP);
				open.delete(m.event);
			}
		}
	}
	const errors = t.errors.map(String);
	const after = t.sessionManager.getBranch().length;
	await t.dispose();
	rmSync(root, { recursive: true, force: true });
	process.stdout.write(JSON.stringify({ size, variant, branch, after, turns, cpuTurns, between, perEvent, errors }) + "\n");
}

/** Turn cost against branch length, three lines, as a small hand-written SVG. */
function svg(rows) {
	const W = 640, H = 400, L = 64, R = 130, T = 30, B = 50;
	const xs = rows.map((r) => r.branch);
	const ys = rows.flatMap((r) => PLOTTED.map((v) => r[v]));
	const x0 = Math.log10(Math.min(...xs)), x1 = Math.log10(Math.max(...xs));
	const y1 = Math.max(...ys) * 1.1 || 1;
	const px = (x) => L + ((Math.log10(x) - x0) / (x1 - x0 || 1)) * (W - L - R);
	const py = (y) => H - B - (y / y1) * (H - T - B);
	const colors = { bare: "#888888", empty: "#1f77b4", relay: "#d62728" };
	const names = { bare: "bare Pi", empty: "empty extension (Relay's hooks)", relay: "Relay" };
	const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">`];
	out.push(`<text x="${W / 2}" y="16" text-anchor="middle" font-size="13">Cost of one turn against branch length (median ms, real Pi loop)</text>`);
	out.push(`<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="black"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="black"/>`);
	for (const x of xs) out.push(`<text x="${px(x).toFixed(1)}" y="${H - B + 16}" text-anchor="middle">${x.toLocaleString("en-US")}</text>`);
	out.push(`<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">branch entries (log scale)</text>`);
	for (let i = 0; i <= 4; i++) {
		const y = (y1 / 4) * i;
		out.push(`<text x="${L - 6}" y="${(py(y) + 4).toFixed(1)}" text-anchor="end">${y.toFixed(y1 < 10 ? 1 : 0)}</text>`);
		out.push(`<line x1="${L}" y1="${py(y).toFixed(1)}" x2="${W - R}" y2="${py(y).toFixed(1)}" stroke="#eeeeee"/>`);
	}
	out.push(`<text x="14" y="${(T + H - B) / 2}" transform="rotate(-90 14 ${(T + H - B) / 2})" text-anchor="middle">ms per turn</text>`);
	PLOTTED.forEach((v, i) => {
		const pts = rows.map((r) => `${px(r.branch).toFixed(1)},${py(r[v]).toFixed(1)}`).join(" ");
		out.push(`<polyline fill="none" stroke="${colors[v]}" stroke-width="2" points="${pts}"/>`);
		for (const r of rows) out.push(`<circle cx="${px(r.branch).toFixed(1)}" cy="${py(r[v]).toFixed(1)}" r="3" fill="${colors[v]}"/>`);
		out.push(`<rect x="${W - R + 8}" y="${T + 10 + i * 34}" width="12" height="3" fill="${colors[v]}"/>`);
		out.push(`<text x="${W - R + 24}" y="${T + 15 + i * 34}">${names[v].length > 18 ? names[v].slice(0, 15) : names[v]}</text>`);
		if (names[v].length > 18) out.push(`<text x="${W - R + 24}" y="${T + 28 + i * 34}">${names[v].slice(16)}</text>`);
	});
	out.push("</svg>");
	return out.join("\n") + "\n";
}

async function main() {
	const started = performance.now();
	const node = process.execPath;
	const results = [];
	console.log(`Machine: ${cpus()[0]?.model ?? "?"}, ${cpus().length} cores; load average ${loadavg().map((l) => l.toFixed(2)).join(" ")} at the start. Node ${process.version}.`);
	console.log(`${TURNS} tool turns per run, the first ${WARMUP} left out, median of the rest; a Pi compaction every ${COMPACTION_EVERY} entries in the generated sessions.`);
	for (const size of SIZES) {
		const row = { size };
		const turns = Object.fromEntries(VARIANTS.map((v) => [v, { wall: [], cpu: [], between: [] }]));
		// The variants alternate, run after run, so that a change of load on the machine falls on all.
		for (let run = 0; run < RUNS; run++)
		for (const variant of VARIANTS) {
			const out = execFileSync(node, ["--max-old-space-size=8192", fileURLToPath(import.meta.url), "--one", String(size), variant], {
				encoding: "utf8",
				stdio: ["ignore", "pipe", "inherit"],
				maxBuffer: 64 * 1048576,
			});
			const r = JSON.parse(out.trim().split("\n").at(-1));
			if (r.errors.length) throw new Error(`${variant} at ${size}: ${r.errors.join("; ")}`);
			row.branch = r.branch;
			turns[variant].wall.push(...r.turns.slice(WARMUP));
			turns[variant].cpu.push(...r.cpuTurns.slice(WARMUP));
			turns[variant].between.push(...r.between.slice(WARMUP));
			for (const [event, ms] of Object.entries(r.perEvent)) {
				row[`${variant}:${event}`] = (row[`${variant}:${event}`] ?? 0) + ms / RUNS;
			}
			row[`${variant}Entries`] = r.after - r.branch;
		}
		for (const variant of VARIANTS) {
			row[variant] = median(turns[variant].wall);
			row[`${variant}Cpu`] = median(turns[variant].cpu);
			row[`${variant}Between`] = median(turns[variant].between);
		}
		results.push(row);
		console.error(`  ${size}: bare ${row.bare.toFixed(2)} ms, empty ${row.empty.toFixed(2)} ms, relay ${row.relay.toFixed(2)} ms, relay without clearing ${row.relayNoClear.toFixed(2)} ms; entries the run appended: ${VARIANTS.map((v) => `${v} ${row[`${v}Entries`]}`).join(", ")}`);
	}
	const f = (n) => n.toFixed(2);
	console.log("");
	console.log("Wall time per turn (median):");
	console.log("");
	console.log("| branch entries | bare Pi | empty extension (Relay's hooks) | Relay | Relay, clearing off | Relay minus empty (Relay's own) | the same, clearing off | empty minus bare (Pi, for any subscriber) | Relay / empty | target |");
	console.log("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
	for (const r of results) {
		const own = r.relay - r.empty;
		console.log(`| ${r.branch.toLocaleString("en-US")} | ${f(r.bare)} ms | ${f(r.empty)} ms | ${f(r.relay)} ms | ${f(r.relayNoClear)} ms | ${f(own)} ms | ${f(r.relayNoClear - r.empty)} ms | ${f(r.empty - r.bare)} ms | ${(r.relay / r.empty).toFixed(2)}× | ${own <= TARGET_MS ? "≤ 2 ms: met" : "≤ 2 ms: NOT met"} |`);
	}
	console.log("");
	console.log("The same turns in CPU time of the Pi process (all its threads; less sensitive to other load on the machine):");
	console.log("");
	console.log("| branch entries | bare Pi | empty extension | Relay | Relay, clearing off | Relay minus empty | the same, clearing off | empty minus bare |");
	console.log("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
	for (const r of results) {
		console.log(`| ${r.branch.toLocaleString("en-US")} | ${f(r.bareCpu)} ms | ${f(r.emptyCpu)} ms | ${f(r.relayCpu)} ms | ${f(r.relayNoClearCpu)} ms | ${f(r.relayCpu - r.emptyCpu)} ms | ${f(r.relayNoClearCpu - r.emptyCpu)} ms | ${f(r.emptyCpu - r.bareCpu)} ms |`);
	}
	console.log("");
	console.log("Between the probes (bench/host's timing probes around the extension, its handlers of one turn summed; the probes'");
	console.log("own `turn_end` subscriptions add Pi's previews to both, and the interval holds Pi's preview after the extension's handler):");
	console.log("");
	console.log("| branch entries | empty extension | Relay | Relay minus empty (Relay's own per turn) | target |");
	console.log("| ---: | ---: | ---: | ---: | --- |");
	for (const r of results) {
		const own = r.relayProbedBetween - r.emptyProbedBetween;
		console.log(`| ${r.branch.toLocaleString("en-US")} | ${f(r.emptyProbedBetween)} ms | ${f(r.relayProbedBetween)} ms | ${f(own)} ms | ${own <= TARGET_MS ? "≤ 2 ms: met" : "≤ 2 ms: NOT met"} |`);
	}
	console.log("");
	console.log("The same per hook (mean ms per turn between the probes; `turn_end` holds Pi's preview of the whole branch after the handler):");
	console.log("");
	console.log("| branch entries | `context` empty / Relay | `tool_call` + `tool_result` empty / Relay | `turn_end` empty / Relay |");
	console.log("| ---: | ---: | ---: | ---: |");
	for (const r of results) {
		const g = (v, e) => r[`${v}:${e}`] ?? 0;
		const tools = (v) => g(v, "tool_call") + g(v, "tool_result");
		console.log(`| ${r.branch.toLocaleString("en-US")} | ${f(g("emptyProbed", "context"))} / ${f(g("relayProbed", "context"))} ms | ${f(tools("emptyProbed"))} / ${f(tools("relayProbed"))} ms | ${f(g("emptyProbed", "turn_end"))} / ${f(g("relayProbed", "turn_end"))} ms |`);
	}
	const first = results[0], last = results.at(-1);
	if (first !== last) {
		const growth = (k) => (last[k] - first[k]) / ((last.branch - first.branch) / 1000);
		console.log("");
		console.log(`Growth per 1,000 branch entries (${first.branch.toLocaleString("en-US")} → ${last.branch.toLocaleString("en-US")}), wall: bare ${growth("bare").toFixed(3)} ms, empty extension ${growth("empty").toFixed(3)} ms, Relay ${growth("relay").toFixed(3)} ms (clearing off ${growth("relayNoClear").toFixed(3)} ms); Relay's own (Relay minus empty) ${(growth("relay") - growth("empty")).toFixed(3)} ms. CPU: bare ${growth("bareCpu").toFixed(3)} ms, empty ${growth("emptyCpu").toFixed(3)} ms, Relay ${growth("relayCpu").toFixed(3)} ms (clearing off ${growth("relayNoClearCpu").toFixed(3)} ms).`);
		console.log("What grows with the branch in the empty extension and not in bare Pi is Pi's: for every `turn_end` and `agent_before_settle` subscriber Pi builds a preview of the whole branch (`_buildBoundaryContext`).");
	}
	const date = new Date().toISOString().slice(0, 10);
	const plot = join(HERE, `long-${date}.svg`);
	writeFileSync(plot, svg(results));
	console.log("");
	console.log(`Plot: bench/long-${date}.svg. Load average ${loadavg().map((l) => l.toFixed(2)).join(" ")} at the end. Total ${((performance.now() - started) / 1000).toFixed(0)} s.`);
}

if (process.argv[2] === "--one") await one(Number(process.argv[3]), process.argv[4]);
else await main();
