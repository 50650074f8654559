// The engine driven without Pi, through its one door (`handle(input, feed)` and `runJob`), for
// the tests and benchmarks that load session files straight into an engine.
import { statSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);

/** The addon: RELAY_ADDON when set, else the local build. */
export function addon() {
	return require(process.env.RELAY_ADDON ?? fileURLToPath(new URL("../../extension/native/relay.linux-x64-gnu.node", import.meta.url)));
}

export const MOMENT = { nowMs: 1_000, tzOffsetMinutes: 0, usage: null, model: null, contextWindow: null, hasPendingMessages: false, cwd: "/nowhere", subagent: false };

/** One crossing: the output of `input` (and `feed`). */
export function step(engine, input, feed = null) {
	return JSON.parse(engine.handle(JSON.stringify(input), feed === null ? null : JSON.stringify(feed)));
}

/** The size of `file`, as the host reports it with `open` (the engine's load rule reads it). */
export function sizeOf(file) {
	return statSync(file).size;
}

/** Load `file` into `engine` at once; true when it holds `leaf`. */
export function loadFile(engine, sessionId, file, leaf) {
	return !step(engine, { type: "open", sessionId, file, size: sizeOf(file), leaf, background: false }).needsBranch;
}

/** Replace the mirror with Pi's branch (`getBranch()`). */
export function resync(engine, sessionId, entries) {
	return step(engine, { type: "resync", sessionId, entries });
}

/** Run every job of `out` and hand the results back; the next output. */
export async function finishJobs(engine, out, moment = MOMENT) {
	const { runJob } = addon();
	const results = await Promise.all(out.jobs.map(async (job) => ({ id: job.id, outcome: JSON.parse(await runJob(JSON.stringify(job))) })));
	return step(engine, { type: "done", op: out.op, results, moment });
}

/** Load `file` the way a session start does for a large file: the first pass on the pool. */
export async function loadInBackground(engine, sessionId, file, leaf) {
	const out = step(engine, { type: "open", sessionId, file, size: sizeOf(file), leaf, background: true });
	if (out.op === undefined) return { found: !out.needsBranch, next: out };
	const next = await finishJobs(engine, out);
	return { found: !next.needsBranch, next };
}

/** A tool's reply (tools other than context_handoff answer at once). */
export function callTool(engine, name, args, moment = MOMENT) {
	return step(engine, { type: "tool", callId: "t", name, args, moment }).reply;
}

/** Feed one hook observation. */
export function hook(engine, observation) {
	return step(engine, { type: "hook", observation });
}
