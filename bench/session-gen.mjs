// The deterministic large-session generator shared by the benchmarks (bench/engine.mjs,
// bench/host.mjs) and the start-up test: a Pi 1.6 session file of realistic entries, cached by
// its parameters. See bench/README.md for what it writes.
import { existsSync, mkdirSync, openSync, readFileSync, readSync, renameSync, statSync, writeFileSync, writeSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

const GEN_VERSION = 2;
/** Planted once, in a user message near the start. */
export const RARE = "StaleLeaseError: lease 5e1f0c7a expired";
/** In about 5 % of the items. */
export const COMMON = "ECONNRESET_RETRY_BUDGET";
const COMMON_RATE = 0.05;
const COMPACTION_EVERY = 10_000;

/** sfc32: small, fast, seedable. */
function prng(seed) {
	let a = 0x9e3779b9 ^ seed,
		b = 0x243f6a88 + seed,
		c = 0xb7e15162 ^ (seed * 7),
		d = 1;
	const next = () => {
		a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0;
		let t = (a + b) | 0;
		a = b ^ (b >>> 9);
		b = (c + (c << 3)) | 0;
		c = (c << 21) | (c >>> 11);
		d = (d + 1) | 0;
		t = (t + d) | 0;
		c = (c + t) | 0;
		return (t >>> 0) / 4294967296;
	};
	for (let i = 0; i < 20; i++) next();
	return next;
}

function makeGenerator(seed) {
	const rnd = prng(seed);
	const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
	const pick = (arr) => arr[Math.floor(rnd() * arr.length)];
	const logUniform = (lo, hi) => Math.round(Math.exp(Math.log(lo) + rnd() * (Math.log(hi) - Math.log(lo))));
	const syllables = ["ta", "ro", "ne", "mi", "ka", "lu", "se", "do", "vi", "pe", "ga", "fo", "ri", "zu", "be", "hal", "tor", "ment", "ing", "con", "str", "al", "er", "ex", "pro", "que", "sync", "load", "io"];
	const vocab = Array.from({ length: 3000 }, () => Array.from({ length: int(1, 4) }, () => pick(syllables)).join(""));
	const cap = (w) => w[0].toUpperCase() + w.slice(1);
	// Mixed case, digits and punctuation, so neither the JS baseline nor memmem's prefilter gets
	// an unrealistically easy haystack. The needles are checked absent from the pools below.
	const word = () => {
		const r = rnd();
		return r < 0.88 ? pick(vocab) : r < 0.94 ? cap(pick(vocab)) : r < 0.97 ? cap(pick(vocab)) + cap(pick(vocab)) : String(int(0, 99999));
	};
	const prose = [];
	let n = 0;
	while (n < 6 * 1048576) {
		const words = Array.from({ length: int(6, 18) }, word);
		words[0] = cap(words[0]);
		const line = words.join(rnd() < 0.2 ? ", " : " ") + (rnd() < 0.3 ? ".\n" : ". ");
		prose.push(line);
		n += line.length;
	}
	const code = [];
	n = 0;
	while (n < 6 * 1048576) {
		const r = rnd();
		const line =
			r < 0.35
				? `    let ${pick(vocab)}_${pick(vocab)} = ${cap(pick(vocab))}${cap(pick(vocab))}::${pick(vocab)}(&${pick(vocab)}, "${word()} ${word()}")?;\n`
				: r < 0.6
					? `src/${pick(vocab)}/${pick(vocab)}.rs:${int(1, 2000)}:${int(1, 99)}: ${cap(pick(vocab))}Error: ${word()} ${word()} ${word()}\n`
					: r < 0.8
						? `{"${pick(vocab)}": ${int(0, 99999)}, "${pick(vocab)}Id": "${int(0, 4294967295).toString(16)}", "ok": ${rnd() < 0.5}}\n`
						: `\t${cap(pick(vocab))}\t${int(0, 99999)}\t${word()} ${word()}\n`;
		code.push(line);
		n += line.length;
	}
	const pools = { prose: prose.join(""), code: code.join("") };
	for (const pool of Object.values(pools)) {
		if (pool.includes(RARE) || pool.includes(COMMON)) throw new Error("a needle occurs in the generated text pool; change the needle");
	}
	const slice = (pool, len) => {
		const p = pools[pool];
		const off = Math.floor(rnd() * (p.length - len));
		return p.slice(off, off + len);
	};
	const plant = (text, needle) => {
		const at = Math.floor(rnd() * text.length);
		return text.slice(0, at) + needle + text.slice(at);
	};
	const ids = new Set();
	const hex8 = () => {
		for (;;) {
			const id = Math.floor(rnd() * 4294967296).toString(16).padStart(8, "0");
			if (!ids.has(id)) {
				ids.add(id);
				return id;
			}
		}
	};
	return { rnd, int, pick, logUniform, slice, plant, hex8 };
}

const TOOLS = ["read", "bash", "edit", "write", "grep", "find", "ls", "notes_write_file", "history_search_contents"];

/**
 * Writes a Pi 1.6 session file: header, then message entries (user → assistant [toolCall →
 * toolResult → assistant]* → user …) with a Pi compaction every `compactionEvery` entries (about
 * 10k). Stops at `targetBytes` or `maxEntries`. Returns the stats the bench needs.
 */
export function generate(file, { targetBytes = Infinity, maxEntries = Infinity, seed, compactionEvery = COMPACTION_EVERY }) {
	const g = makeGenerator(seed);
	const sessionId = `${g.hex8()}-${g.hex8().slice(0, 4)}-4${g.hex8().slice(0, 3)}-8${g.hex8().slice(0, 3)}-${g.hex8()}${g.hex8().slice(0, 4)}`;
	let ts = Date.UTC(2025, 0, 6, 9, 0, 0);
	const iso = () => new Date(ts).toISOString();
	const fd = openSync(file + ".part", "w");
	let buf = [];
	let bufBytes = 0;
	let bytes = 0;
	const write = (obj) => {
		const line = JSON.stringify(obj) + "\n";
		buf.push(line);
		bufBytes += line.length;
		bytes += Buffer.byteLength(line);
		if (bufBytes > 8 * 1048576) flush();
	};
	const flush = () => {
		writeSync(fd, buf.join(""));
		buf = [];
		bufBytes = 0;
	};
	write({ type: "session", version: 3, id: sessionId, timestamp: iso(), cwd: "/home/dev/project" });
	let parentId = null;
	let entries = 0;
	let textBytes = 0;
	let rareId = null;
	let commonItems = 0;
	let compactions = 0;
	let bigOutputs = 0;
	let next = "user";
	let pendingCall = null;
	const recentIds = [];
	const text = (pool, len) => {
		let t = g.slice(pool, len);
		if (g.rnd() < COMMON_RATE) {
			t = g.plant(t, COMMON);
			commonItems++;
		}
		return t;
	};
	const push = (entry) => {
		write(entry);
		parentId = entry.id;
		recentIds.push(entry.id);
		if (recentIds.length > 40) recentIds.shift();
		entries++;
	};
	while (bytes < targetBytes && entries < maxEntries) {
		ts += g.int(1, 40) * 1000;
		if (entries > 0 && entries % compactionEvery === 0) {
			const summary = g.slice("prose", g.int(1500, 3000));
			textBytes += summary.length;
			push({ type: "compaction", id: g.hex8(), parentId, timestamp: iso(), summary, firstKeptEntryId: recentIds[recentIds.length - 20] ?? parentId, tokensBefore: g.int(120000, 180000) });
			compactions++;
			continue;
		}
		const id = g.hex8();
		let message;
		if (next === "user") {
			let t = text("prose", g.logUniform(500, 2500));
			if (rareId === null && entries >= 100) {
				t = g.plant(t, RARE);
				rareId = id;
			}
			textBytes += t.length;
			message = { role: "user", content: [{ type: "text", text: t }], timestamp: ts };
			next = "assistant";
		} else if (next === "assistant") {
			const t = text("prose", g.logUniform(300, 3000));
			textBytes += t.length;
			const content = [{ type: "text", text: t }];
			const callTool = g.rnd() < 0.7;
			if (callTool) {
				const name = g.pick(TOOLS);
				pendingCall = { id: `toolu_${g.hex8()}${g.hex8()}`, name };
				content.push({ type: "toolCall", id: pendingCall.id, name, arguments: { path: `src/${g.slice("prose", 12).trim().replace(/\W+/g, "_")}.rs`, limit: g.int(10, 400) } });
			}
			const input = g.int(2000, 150000);
			const output = Math.ceil(t.length / 4);
			message = {
				role: "assistant",
				content,
				api: "anthropic-messages",
				provider: "anthropic",
				model: "claude-sonnet-4-5",
				usage: { input: 3, output, cacheRead: input, cacheWrite: g.int(0, 4000), totalTokens: input + output + 3, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
				stopReason: callTool ? "toolUse" : "stop",
				timestamp: ts,
			};
			next = callTool ? "toolResult" : "user";
		} else {
			const big = g.rnd() < 0.0085;
			if (big) bigOutputs++;
			const t = text("code", big ? g.int(50_000, 200_000) : g.logUniform(500, 4000));
			textBytes += t.length;
			message = { role: "toolResult", toolCallId: pendingCall.id, toolName: pendingCall.name, content: [{ type: "text", text: t }], isError: g.rnd() < 0.03, timestamp: ts };
			next = "assistant";
		}
		push({ type: "message", id, parentId, timestamp: iso(), message });
	}
	flush();
	closeSync(fd);
	renameSync(file + ".part", file);
	return { sessionId, leafId: parentId, entries, bytes, textBytes, rareId, commonItems, compactions, bigOutputs };
}

/** The generated session for these parameters, reused from the cache directory when present. */
export function session(name, params) {
	const dir = process.env.RELAY_BENCH_DIR || join(tmpdir(), "relay-bench");
	mkdirSync(dir, { recursive: true });
	const key = `${name}-v${GEN_VERSION}-s${params.seed}-${params.targetBytes === Infinity ? "all" : params.targetBytes}-${params.maxEntries === Infinity ? "all" : params.maxEntries}`;
	const file = join(dir, `${key}.jsonl`);
	const metaFile = join(dir, `${key}.meta.json`);
	if (existsSync(file) && existsSync(metaFile)) {
		const meta = JSON.parse(readFileSync(metaFile, "utf8"));
		if (statSync(file).size === meta.bytes) return { file, ...meta, reused: true };
	}
	const t0 = performance.now();
	const meta = generate(file, params);
	meta.generateMs = performance.now() - t0;
	writeFileSync(metaFile, JSON.stringify(meta));
	return { file, ...meta, reused: false };
}

/** A private copy of the session file whose header names `cwd` (Pi refuses a missing cwd). */
export function copyWithCwd(src, dst, cwd) {
	const input = openSync(src, "r");
	const output = openSync(dst, "w");
	const buf = Buffer.alloc(8 * 1048576);
	let first = true;
	for (;;) {
		const n = readSync(input, buf, 0, buf.length, null);
		if (n === 0) break;
		let chunk = buf.subarray(0, n);
		if (first) {
			const end = chunk.indexOf(0x0a);
			const header = { ...JSON.parse(chunk.subarray(0, end).toString("utf8")), cwd };
			writeSync(output, JSON.stringify(header));
			chunk = chunk.subarray(end);
			first = false;
		}
		writeSync(output, chunk);
	}
	closeSync(input);
	closeSync(output);
}
