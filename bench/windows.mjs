// `make bench-windows` (issue 26, item 5): what tool-result clearing trades. One long scripted run
// (RELAY_BENCH_CALLS tool calls, default 300, with outputs of realistic, varied sizes: mostly small
// reads and listings, some test logs and diffs, a few very large dumps) replayed through the real
// Pi agent loop with Relay (the SDK and the faux model of tests/extension/harness.mjs), once with
// relay.clearToolResults off and once with its defaults, in a 200,000-token window. Printed side
// by side: resets, peak and mean request size, total input tokens, and an estimated bill with
// prompt caching (each request reads from the cache the prefix it shares, message for message,
// with the request before it, at 0.1x the input price, and writes the rest at 1.25x).
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

async function run(label, clearToolResults) {
	const steps = sizes(CALLS, SEED).map((chars, i) => ({ tool: "run_tool", args: { n: i + 1, chars } }));
	const t = await startSession({
		contextWindow: WINDOW,
		settings: { relay: { clearToolResults } },
		extraFactories: [tools],
		steps: [...steps, "All steps done."],
		persist: true,
	});
	const t0 = performance.now();
	try {
		await t.session.prompt("Run every step of the plan.");
		// Pi's and Relay's time: the run less the harness's copies of the requests (a copy per
		// request, larger the more messages a request holds, is the bench's work, not theirs).
		const seconds = (performance.now() - t0 - t.recordedMs) / 1000;
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
	["wall time less the bench's request copies (s)", (r) => r.seconds.toFixed(1)],
];
console.log(`bench-windows: ${CALLS} tool calls (seed ${SEED}), ${group(WINDOW)}-token window, cache read 0.1x, cache write 1.25x the input price`);
const w = 40;
console.log(`${"".padEnd(w)}${off.label.padStart(18)}${on.label.padStart(26)}`);
for (const [name, f] of rows) console.log(`${name.padEnd(w)}${f(off).padStart(18)}${f(on).padStart(26)}`);
const ratio = on.bill / off.bill;
console.log(`\nheadline: with clearing on the cache-priced bill is ${ratio.toFixed(3)}x the bill with it off (${((1 - ratio) * 100).toFixed(1)} % ${ratio <= 1 ? "less" : "more"}); total input tokens ${(on.total / off.total).toFixed(3)}x; resets ${off.resets} → ${on.resets}`);
if (off.errors || on.errors) console.log(`warning: extension errors: off ${off.errors}, on ${on.errors}`);
