// The soak run (tests/soak/soak.mjs) on the real Pi agent loop: a generated session of many turns
// with Relay loaded, then every invariant of the property test checked on the JSONL it wrote
// (crates/relay-core/tests/session_check.rs), memory flat after warm-up, and the engine's time per
// hook printed for the first and the last quarter.
//
// `make test` runs a short soak (SOAK_TURNS, default 300); `make soak` the long one. SOAK_SEED sets
// the seed (default: 1 here, printed either way).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { engineTiming, quarters, runSoak } from "../soak/soak.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const TURNS = Number(process.env.SOAK_TURNS ?? 300);
const SEED = Number(process.env.SOAK_SEED ?? 1);
// Memory after warm-up. The session itself grows (Pi keeps every entry in memory and Relay's mirror
// keeps the history searchable), so memory is bounded against the session, two ways:
// - the heap after a full GC: the last quarter's median at most HEAP_FACTOR × the second quarter's;
// - at the end, against a fresh process that opens the same session file (tests/soak/fresh.mjs):
//   the heap at most FRESH_HEAP × what the session alone needs; the RSS at most FRESH_RSS × the
//   fresh process's plus RELOAD_RSS × the session file. A /reload of a large session parses it on
//   a libuv pool thread, and the allocator keeps each thread's freed memory for reuse, so RSS
//   climbs over the first few reloads and then stays (bench/NOTES.md, Soak: about 4 × the file).
const HEAP_FACTOR = 1.5;
const FRESH_HEAP = 1.25;
// RSS is the allocator's as much as Relay's: the runtime's own pages after 300 turns already put it
// 30 % above a fresh process on a 1 MiB session (184 vs 141 MiB in one CI run), so it gets more room
// than the heap; a leak shows first in the heap bound above.
const FRESH_RSS = 1.5;
const RELOAD_RSS = 6;

// The timestamps the history tools show are in local time: the checker reads them in UTC.
process.env.TZ = "UTC";

const mib = (b) => (b / 2 ** 20).toFixed(1);
const ms = (x) => (Number.isFinite(x) ? x.toFixed(3) : "-");

test(`soak: ${TURNS} turns (seed ${SEED}) through the real Pi loop keep every invariant, memory flat`, { timeout: 6 * 60 * 60 * 1000 }, async () => {
	console.log(`soak: seed ${SEED} (SOAK_SEED=${SEED} SOAK_TURNS=${TURNS} reproduces this run)`);
	const started = Date.now();
	const run = await runSoak({ turns: TURNS, seed: SEED, log: (line) => console.log(line) });
	const seconds = (Date.now() - started) / 1000;
	const { mem, hooks } = quarters(run);
	const figures = {
		seed: SEED,
		turns: run.turns,
		seconds,
		counts: run.counts,
		resets: run.resets,
		resetsBySource: run.resetsBySource,
		fileMiB: Number(mib(run.fileBytes)),
		memoryMiB: mem.map((q) => ({ heap: Number(mib(q.heap)), rss: Number(mib(q.rss)), sessionFile: Number(mib(q.file)), samples: q.n })),
		engines: run.engines,
		hookMedianMs: Object.fromEntries(Object.entries(hooks).map(([h, v]) => [h, { calls: v.calls, first: v.medianMs[0], last: v.medianMs[3] }])),
	};
	console.log(`soak: ${run.turns} turns, ${run.counts.prompts} prompts, ${run.counts.userMessages} user messages, ${seconds.toFixed(1)} s`);
	console.log(`soak: resets ${run.resets} ${JSON.stringify(run.resetsBySource)}, aborts ${run.counts.aborts}, reloads ${run.counts.reloads}, /compact ${run.counts.compacts}, overflows ${run.counts.overflows}`);
	console.log(`soak: session file ${mib(run.fileBytes)} MiB, ${run.entries} entries on the branch: ${run.file}`);
	console.log(`soak: engines created ${run.engines.created} (one per start and /reload), at most ${run.engines.aliveMax} alive after a GC`);
	for (const [i, q] of mem.entries()) console.log(`soak: quarter ${i + 1}: heap ${mib(q.heap)} MiB, rss ${mib(q.rss)} MiB (median of ${q.n} samples; session file ${mib(q.file)} MiB)`);
	for (const [hook, v] of Object.entries(hooks)) console.log(`soak: ${hook}: ${v.calls} calls, median ${ms(v.medianMs[0])} ms first quarter, ${ms(v.medianMs[3])} ms last`);
	// A fresh process on the same session file.
	const fresh = spawnSync(process.execPath, [join(ROOT, "tests/soak/fresh.mjs"), run.file, String(run.window)], { cwd: ROOT, encoding: "utf8", env: process.env });
	assert.equal(fresh.status, 0, `tests/soak/fresh.mjs on ${run.file}:\n${fresh.stderr}`);
	const freshMem = JSON.parse(fresh.stdout.trim().split("\n").at(-1));
	const end = run.samples.at(-1);
	figures.endMiB = { heap: Number(mib(end.heap)), rss: Number(mib(end.rss)) };
	figures.freshProcessMiB = { heap: Number(mib(freshMem.heap)), rss: Number(mib(freshMem.rss)) };
	console.log(`soak: at the end: heap ${mib(end.heap)} MiB, rss ${mib(end.rss)} MiB; a fresh process on the same session: heap ${mib(freshMem.heap)} MiB, rss ${mib(freshMem.rss)} MiB`);

	// The engine alone on this session: its first quarter, then all of it, loaded into a fresh engine.
	const alone = engineTiming(run.file);
	figures.engineAloneUs = alone;
	const perHook = (row) => Object.entries(row).filter(([k]) => k !== "entries").map(([k, v]) => `${k} ${v.toFixed(1)}`).join(", ");
	console.log(`soak: the engine alone at ${alone.quarter.entries} entries (µs per call): ${perHook(alone.quarter)}`);
	console.log(`soak: the engine alone at ${alone.whole.entries} entries (µs per call): ${perHook(alone.whole)}`);
	const report = () => process.env.SOAK_REPORT && writeFileSync(process.env.SOAK_REPORT, JSON.stringify(figures, null, 2));
	report();
	assert.deepEqual(run.errors, [], "no prompt, /compact or extension error");
	assert.equal(run.counts.summarizerCalls, 0, "Pi's own summarizer never ran");

	// Every invariant of the property test, on the session file.
	const check = spawnSync(
		"cargo",
		["test", "-q", "-p", "relay-core", "--test", "session_check", "--", "--session", run.file, "--prompts", String(run.counts.userMessages)],
		{ cwd: ROOT, encoding: "utf8" },
	);
	assert.equal(check.status, 0, `session_check on ${run.file}:\n${check.stderr.slice(-20_000)}\n${check.stdout}`);
	const line = check.stdout.split("\n").find((l) => l.startsWith("session_check: every invariant holds: "));
	assert.ok(line, `session_check printed its report:\n${check.stdout}`);
	const checked = JSON.parse(line.slice("session_check: every invariant holds: ".length));
	assert.equal(checked.prompts, run.counts.userMessages);
	console.log(`soak: session_check: every invariant holds: ${line.slice("session_check: every invariant holds: ".length)}`);
	figures.checked = checked;
	report();

	assert.ok(run.turns >= TURNS, `ran ${run.turns} turns`);
	// The run exercised what it is meant to: every kind of reset Relay makes in it, aborts,
	// reloads, queued follow-ups and steers (a seed whose run misses one fails, naming it).
	for (const source of ["new_context", "handoff", "fallback"]) assert.ok(run.resetsBySource[source] > 0, `a ${source} reset happened: ${JSON.stringify(run.resetsBySource)}`);
	for (const what of ["aborts", "reloads", "followUps", "steers", "blocked"]) assert.ok(run.counts[what] > 0, `${what} happened: ${JSON.stringify(run.counts)}`);
	assert.ok(checked.borrowed_turns > 0 && checked.tool_answers_compared > 0 && checked.notes > 0, JSON.stringify(checked));
	assert.ok(run.engines.aliveMax <= 2, `the engines of earlier /reloads are collected: ${JSON.stringify(run.engines)}`);
	for (const [i, q] of mem.entries()) assert.ok(q.n > 0, `memory samples in quarter ${i + 1}`);
	assert.ok(mem[3].heap <= mem[1].heap * HEAP_FACTOR, `heap: last quarter ${mib(mem[3].heap)} MiB > ${HEAP_FACTOR} × second quarter ${mib(mem[1].heap)} MiB`);
	assert.ok(end.heap <= freshMem.heap * FRESH_HEAP, `heap at the end ${mib(end.heap)} MiB > ${FRESH_HEAP} × a fresh process on the session (${mib(freshMem.heap)} MiB)`);
	const rssBound = freshMem.rss * FRESH_RSS + RELOAD_RSS * run.fileBytes;
	assert.ok(end.rss <= rssBound, `rss at the end ${mib(end.rss)} MiB > ${FRESH_RSS} × a fresh process on the session (${mib(freshMem.rss)} MiB) + ${RELOAD_RSS} × the session file (${mib(run.fileBytes)} MiB)`);
	// Passed: the session folder goes (a failed run keeps it, named in the failure, to look into).
	rmSync(run.root, { recursive: true, force: true });
});
