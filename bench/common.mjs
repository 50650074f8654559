// Helpers shared by the scripted long-run benches (bench/windows.mjs, bench/arms.mjs): a seeded
// generator, the tool-output size mix, Pi's token estimate of a message and the prompt-cache
// ledger (each request reads from the cache the prefix it shares with the request before it and
// writes the rest).
import { createHash } from "node:crypto";

/** mulberry32: a small seeded generator, so every run of a seed sees the same outputs. */
export function rng(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

/** A number in [lo, hi], rounded, from the generator `r`. */
export const between = (r, lo, hi) => Math.round(lo + (hi - lo) * r());

/**
 * One tool-output size in characters from the generator `r`: 70 % small (400–8,000: file reads,
 * listings), 25 % medium (8,000–40,000: test logs, diffs), 5 % large (40,000–100,000: dumps).
 */
export function outputSize(r) {
	const p = r();
	if (p < 0.7) return between(r, 400, 8_000);
	if (p < 0.95) return between(r, 8_000, 40_000);
	return between(r, 40_000, 100_000);
}

/** `n` output sizes of the mix above, seeded. */
export function sizes(n, seed) {
	const r = rng(seed);
	return Array.from({ length: n }, () => outputSize(r));
}

/** Pi's estimate of one message (ceil(chars/4)): its text, tool calls and their arguments. */
export function tokensOf(m) {
	let chars = 0;
	const content = typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content ?? []);
	for (const b of content) {
		if (b.type === "text") chars += b.text.length;
		else if (b.type === "toolCall") chars += b.name.length + JSON.stringify(b.arguments ?? {}).length;
		else if (b.type === "thinking") chars += (b.thinking ?? "").length;
	}
	if (m.role === "compactionSummary" || m.role === "branchSummary") chars += (m.summary ?? "").length;
	return Math.ceil(chars / 4);
}

/** A short digest of a value's JSON: what the cache ledger compares. */
export const digest = (value) => createHash("sha1").update(JSON.stringify(value)).digest("base64");

/**
 * The prompt-cache ledger of one chain of requests. `add(parts)` takes a request as its parts in
 * order, each `{key, tokens}` (a digest of the part and its size); the request reads from the
 * cache the leading parts it shares, part for part, with the request before it, and writes the
 * rest. A request that does not extend the one before it (a part of that request changed or went)
 * is a cache break.
 */
export class CacheLedger {
	constructor() {
		this.previous = [];
		this.requests = 0;
		this.total = 0;
		this.read = 0;
		this.write = 0;
		this.peak = 0;
		this.breaks = 0;
	}

	add(parts) {
		let shared = 0;
		let i = 0;
		for (; i < Math.min(this.previous.length, parts.length); i++) {
			if (this.previous[i].key !== parts[i].key) break;
			shared += parts[i].tokens;
		}
		const size = parts.reduce((n, p) => n + p.tokens, 0);
		const isBreak = this.requests > 0 && i < this.previous.length;
		if (isBreak) this.breaks++;
		this.requests++;
		this.total += size;
		this.read += shared;
		this.write += size - shared;
		this.peak = Math.max(this.peak, size);
		this.previous = parts;
		return { size, shared, isBreak };
	}
}

/**
 * A bill at one price table (`{input, cacheRead, cacheWrite, output}`, per token or per unit):
 * `uncached` input tokens at the input price, cache reads and writes at theirs, and the output.
 */
export const bill = ({ uncached = 0, read = 0, write = 0, output = 0 }, price) =>
	uncached * price.input + read * price.cacheRead + write * price.cacheWrite + output * (price.output ?? 0);
