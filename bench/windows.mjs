// `make bench-windows` (issue 26, item 5): what tool-result clearing trades. One long scripted run
// (RELAY_BENCH_CALLS tool calls, default 300, with outputs of realistic, varied sizes: mostly small
// reads and listings, some test logs and diffs, a few very large dumps) replayed through the real
// Pi agent loop with Relay (the SDK and the faux model of tests/extension/harness.mjs), once with
// relay.clearToolResults off and once with its defaults, in a 200,000-token window, and once as
// bare Pi keeping the whole run in one window (the baseline for the time a window that clearing
// keeps alive costs Pi). Printed side by side: resets, peak and mean request size, total input
// tokens, an estimated bill with prompt caching (each request reads from the cache the prefix it
// shares, message for message, with the request before it, at 0.1x the input price, and writes
// the rest at 1.25x), the wall time and how much of it Pi spent deep-copying requests.
//
//   node bench/windows.mjs            # RELAY_BENCH_CALLS=300 RELAY_BENCH_SEED=1
//   RELAY_BENCH_CLEAR='{"clearAtLeast":50000}' node bench/windows.mjs   # other settings for the "on" run
//
// Token counts are Pi's own estimate of each message (ceil(characters / 4)), the same on both
// sides; the system prompt and the model's output are left out (equal on both sides).
import { startSession } from "../tests/extension/harness.mjs";
import { CacheLedger, bill, digest, sizes, tokensOf } from "./common.mjs";

const CALLS = Number(process.env.RELAY_BENCH_CALLS ?? 300);
const SEED = Number(process.env.RELAY_BENCH_SEED ?? 1);
const WINDOW = 200_000;

// Every deep copy in the process is timed: Pi's (its copy of each request's messages for its
// `context` handlers, made whether or not an extension is loaded) and the bench's own.
const copies = { ms: 0 };
const clone = globalThis.structuredClone;
globalThis.structuredClone = (value, options) => {
	const start = performance.now();
	try {
		return clone(value, options);
	} finally {
		copies.ms += performance.now() - start;
	}
};

const output = (n, chars) => `OUT-${n} ` + `line ${n}: result text of a tool call; `.repeat(Math.ceil(chars / 30)).slice(0, chars);

const tools = (pi) => {
	pi.registerTool({
		name: "run_tool",
		label: "run",
		description: "runs step n",
		parameters: { type: "object", properties: { n: { type: "number" }, chars: { type: "number" } }, required: ["n", "chars"] },
		async execute(_id, p) {
			return { content: [{ type: "text", text: output(p.n, p.chars) }], details: {} };
		},
	});
};

async function run(label, clearToolResults, { relay = true, contextWindow = WINDOW } = {}) {
	const steps = sizes(CALLS, SEED).map((chars, i) => ({ tool: "run_tool", args: { n: i + 1, chars } }));
	const t = await startSession({
		contextWindow,
		relay,
		settings: { relay: { clearToolResults } },
		extraFactories: [tools],
		steps: [...steps, "All steps done."],
		persist: true,
	});
	const t0 = performance.now();
	const copied = copies.ms;
	try {
		await t.session.prompt("Run every step of the plan.");
		// Pi's and Relay's time: the run less the harness's copies of the requests (a copy per
		// request, larger the more messages a request holds, is the bench's work, not theirs).
		const seconds = (performance.now() - t0 - t.recordedMs) / 1000;
		const piCopies = (copies.ms - copied - t.recordedMs) / 1000;
		// Relay's own continuations after a reset are extra requests; the script continues.
		const requests = t.requests;
		const ledger = new CacheLedger();
		for (const request of requests) ledger.add(request.map((m) => ({ key: digest(m), tokens: tokensOf(m) })));
		const { total, peak, read, write } = ledger;
		const branch = t.sessionManager.getBranch();
		return {
			label,
			requests: requests.length,
			toolCalls: branch.filter((e) => e.type === "message" && e.message.role === "toolResult").length,
			resets: branch.filter((e) => e.type === "compaction").length,
			clearings: branch.filter((e) => e.type === "custom" && e.customType === "relay/clear-tool-results").length,
			peak,
			mean: Math.round(total / Math.max(1, requests.length)),
			total,
			read,
			write,
			// In input-token units: a cache read at 0.1x the input price, a write at 1.25x.
			bill: bill({ read, write }, { input: 1, cacheRead: 0.1, cacheWrite: 1.25 }),
			seconds,
			piCopies,
			errors: t.errors.length,
		};
	} finally {
		await t.dispose();
	}
}

const group = (n) => Math.round(n).toLocaleString("en-US");
const off = await run("clearing off", { enabled: false });
const onSettings = process.env.RELAY_BENCH_CLEAR ? JSON.parse(process.env.RELAY_BENCH_CLEAR) : {};
const on = await run(process.env.RELAY_BENCH_CLEAR ? "clearing on (RELAY_BENCH_CLEAR)" : "clearing on (defaults)", onSettings);
// The time baseline for a window clearing keeps alive: bare Pi (no extension) with a window ten
// times larger, so that the whole run is one window of as many messages as clearing keeps.
const bare = await run("bare Pi, one window", { enabled: false }, { relay: false, contextWindow: WINDOW * 10 });
const rows = [
	["tool calls run", (r) => group(r.toolCalls)],
	["provider requests", (r) => group(r.requests)],
	["resets", (r) => group(r.resets)],
	["tool-result clearings", (r) => group(r.clearings)],
	["peak request (tokens)", (r) => group(r.peak)],
	["mean request (tokens)", (r) => group(r.mean)],
	["total input tokens", (r) => group(r.total)],
	["  read from the cache", (r) => group(r.read)],
	["  written to the cache", (r) => group(r.write)],
	["bill, cache priced (input-token units)", (r) => group(r.bill)],
	["bill without a cache (= total input)", (r) => group(r.total)],
	["wall time less the bench's request copies (s)", (r) => r.seconds.toFixed(2)],
	["  of which Pi's copies of the requests (s)", (r) => r.piCopies.toFixed(2)],
	["  the rest: Pi's other work and Relay's (s)", (r) => (r.seconds - r.piCopies).toFixed(2)],
];
console.log(`bench-windows: ${CALLS} tool calls (seed ${SEED}), ${group(WINDOW)}-token window, cache read 0.1x, cache write 1.25x the input price`);
const w = 40;
const columns = [off, on, bare];
const widths = [18, 26, 24];
console.log("".padEnd(w) + columns.map((c, i) => c.label.padStart(widths[i])).join(""));
for (const [name, f] of rows) console.log(name.padEnd(w) + columns.map((c, i) => f(c).padStart(widths[i])).join(""));
const ratio = on.bill / off.bill;
console.log(`\nheadline: with clearing on the cache-priced bill is ${ratio.toFixed(3)}x the bill with it off (${((1 - ratio) * 100).toFixed(1)} % ${ratio <= 1 ? "less" : "more"}); total input tokens ${(on.total / off.total).toFixed(3)}x; resets ${off.resets} → ${on.resets}`);
const rest = (r) => r.seconds - r.piCopies;
console.log(
	`time: clearing on is ${(on.seconds / off.seconds).toFixed(2)}x clearing off in wall time; less Pi's copies of the requests ` +
		`${(rest(on) / rest(off)).toFixed(2)}x. Pi deep-copies every request's messages for its \`context\` handlers, with or without an extension, ` +
		`at a cost per message of the window: a window clearing keeps alive copies more (bare Pi keeping the run in one window: ${bare.piCopies.toFixed(2)} s of copies).`,
);
if (off.errors || on.errors) console.log(`warning: extension errors: off ${off.errors}, on ${on.errors}`);
