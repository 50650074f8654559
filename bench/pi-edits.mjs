// What a tool-result clearing costs Pi: each `context_edit` draft Relay hands over at a turn end
// is checked by Pi's SessionManager against the whole branch (`appendContextEdit` walks it from
// the leaf), once for the boundary's preview and once more when it is committed. This times
// Pi's own `appendContextEdit` on a branch of `n` entries (half of them tool results), for a
// clearing of `k` results, median of 3; it prints, and asserts nothing.
//
//   node bench/pi-edits.mjs
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { performance } from "node:perf_hooks";

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function branch(n) {
	const sm = SessionManager.inMemory("/tmp");
	const results = [];
	for (let i = 0; i < n; i++) {
		if (i % 2 === 0) sm.appendMessage({ role: "user", content: [{ type: "text", text: "x".repeat(100) }], timestamp: 0 });
		else results.push(sm.appendMessage({ role: "toolResult", toolCallId: `c${i}`, toolName: "bash", content: [{ type: "text", text: "y".repeat(500) }], isError: false, timestamp: 0 }));
	}
	return { sm, results };
}

console.log("| branch entries | results cleared | Pi's time (one pass) | per result | at a turn end (preview + commit) |");
console.log("| --- | --- | --- | --- | --- |");
for (const [n, k] of [[5_000, 30], [5_000, 300], [25_000, 30], [25_000, 300], [122_605, 30], [122_605, 671]]) {
	const samples = [];
	for (let run = 0; run < 3; run++) {
		const { sm, results } = branch(n);
		const t0 = performance.now();
		for (let i = 0; i < k; i++) sm.appendContextEdit(results[i], { content: [{ type: "text", text: "[cleared]" }] });
		samples.push(performance.now() - t0);
	}
	const ms = median(samples);
	console.log(`| ${n.toLocaleString("en")} | ${k} | ${ms.toFixed(0)} ms | ${(ms / k).toFixed(2)} ms | ~${((2 * ms) / 1000).toFixed(1)} s |`);
}
