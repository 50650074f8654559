// The driver between Pi and the engine: inputs in (with what Pi appended since the engine's tip),
// outputs carried out (appends, effects, jobs off Pi's event loop). It decides nothing (engine/door.rs).
import type { ExtensionAPI, ExtensionContext, SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import { parseArgs as parsePiArgs } from "@earendil-works/pi-coding-agent";
import { statSync } from "node:fs";
import { resolve } from "node:path";
import type { BoundaryHooks, Effect, HookWaits, HostFacts, Input, Job, JobResult, Moment, Output, Work } from "./generated/wire.ts";
import { native, type NativeEngine } from "./native.ts";
import { contextGuard, jobRecords, pendingWork, subagentRecords } from "./integrations.ts";

/** The first Relay runtime bound in a process is the primary; one bound while it lives is a subagent's (a fact the engine reads). */
const HOST = Symbol.for("relay.primary-runtime");
const host = globalThis as { [HOST]?: object };
export const bindRuntime = (token: object): boolean => (host[HOST] ??= token) !== token;
export const releaseRuntime = (token: object): void => void (host[HOST] === token && delete host[HOST]);

/**
 * The facts of the moment every input carries (without a ctx, before `session_start`: the
 * process's own). Pi's usage only for a tool whose spec says `usesPiUsage` (`getContextUsage()`
 * walks the whole branch; the engine estimates from its mirror otherwise).
 */
export function moment(ctx: ExtensionContext | null, rt: Runtime | null = null, withUsage = false): Moment {
	let usage: Moment["usage"] = null;
	try {
		const u = withUsage ? ctx?.getContextUsage() : undefined;
		if (u) usage = { tokens: u.tokens, contextWindow: u.contextWindow };
	} catch {
		// Pi could not tell: the engine estimates.
	}
	const model = ctx?.model;
	const api = (model as { api?: string } | undefined)?.api ?? null;
	// Under a router model only (the engine names its tag), the window of the model it last named.
	const answered = api !== null && api === rt?.routerApi ? rt.state.last?.answeredModel : null;
	return {
		nowMs: Date.now(),
		tzOffsetMinutes: -new Date().getTimezoneOffset(),
		usage,
		model: model ? `${model.provider}/${model.id}` : null,
		contextWindow: model ? (model.contextWindow ?? null) : null,
		api,
		answeredWindow: (answered && ctx?.modelRegistry.find(answered.provider, answered.model)?.contextWindow) ?? null,
		hasPendingMessages: ctx?.hasPendingMessages() ?? false,
		pendingWork: pendingWork(),
		cwd: ctx?.cwd ?? process.cwd(),
		contextGuard: contextGuard(),
		subagent: rt?.subagent ?? false,
	};
}

/** What the driver remembers: the session the mirror holds, the engine's last output, the stubs as last sent (by `nth:call`), the one load in flight (for session `token`). */
export type SyncState = { sessionId?: string; last?: Output; stubs?: Map<string, string>; load?: Load; token?: object };

/** A load in flight (`done` never rejects): a read ahead of `file`, the start-up load (`blocks`), or the whole history's. */
type Load = { done: Promise<unknown>; blocks: boolean; file?: string };

/** One Relay runtime: its engine, what the driver remembers, whether it is a subagent's, its boundary hooks, the router models' `api`. */
export type Runtime = { pi: ExtensionAPI; engine: NativeEngine; state: SyncState; subagent: boolean; boundary?: Boundary; routerApi?: string };

/** The boundary hooks' handlers, and the unsubscribe function of each one subscribed (`null`: a Pi without one). */
type BoundaryHook = "turn_end" | "agent_before_settle";
type Boundary = { handlers: Record<BoundaryHook, (event: never, ctx: ExtensionContext) => unknown>; off: Partial<Record<BoundaryHook, (() => void) | null>> };

/** Subscribe `handlers` to Pi's boundary hooks while the engine's outputs say it needs them. */
export function bindBoundary(rt: Runtime, handlers: Boundary["handlers"]): void {
	rt.boundary = { handlers, off: {} };
	followBoundary(rt, { turnEnd: true, settle: true });
}

/** Follow the engine's `boundary` (Pi previews the whole branch for each subscribed boundary hook). */
function followBoundary(rt: Runtime, needs: BoundaryHooks): void {
	const b = rt.boundary;
	if (!b) return;
	for (const [hook, needed] of [["turn_end", needs.turnEnd], ["agent_before_settle", needs.settle]] as const) {
		const off = b.off[hook];
		if (needed && off === undefined) {
			const unsubscribe = rt.pi.on(hook as "turn_end", b.handlers[hook] as never) as unknown;
			b.off[hook] = typeof unsubscribe === "function" ? (unsubscribe as () => void) : null;
		} else if (!needed && off) {
			delete b.off[hook];
			off();
		}
	}
}

/** One crossing: `input` (and `feed`) in, the output back and remembered (its stubs, its boundary hooks). */
function call(rt: Runtime, input: Input, feed: string | null = null): Output {
	const out = JSON.parse(rt.engine.handle(JSON.stringify(input), feed)) as Output;
	rt.state.last = out;
	if (out.stubs) rt.state.stubs = new Map(out.stubs.map((s) => [`${s.nth}:${s.call}`, s.text]));
	followBoundary(rt, out.boundary);
	return out;
}

/** A query the engine answers without its mirror (`describe`, `prepare`, `schema_refused`). */
export function ask(rt: Runtime, input: Input): unknown {
	return call(rt, input).value;
}

/** Pi's entries from the leaf back to `tip` (newest first, `tip` excluded), and whether the walk met it: O(entries walked). */
function walk(ctx: ExtensionContext, tip: string | null): { fresh: { id: string; parentId: string | null }[]; met: boolean } {
	const sm = ctx.sessionManager;
	const fresh: { id: string; parentId: string | null }[] = [];
	let id: string | null | undefined = sm.getLeafId();
	while (id && id !== tip) {
		const entry = sm.getEntry(id);
		if (!entry) break;
		fresh.push(entry);
		id = entry.parentId;
	}
	return { fresh, met: (id ?? null) === tip };
}

/** What Pi appended since the engine's tip; after a navigation the engine says which walked entry it holds, and what follows it is dropped. */
function feedOf(rt: Runtime, ctx: ExtensionContext): string | null {
	const { fresh, met } = walk(ctx, rt.state.last?.tip ?? null);
	if (met) return fresh.length ? JSON.stringify({ append: fresh.reverse() }) : null;
	const known = call(rt, { type: "known", ids: fresh.map((e) => e.id) }).value as number | null;
	const keep = known === null ? fresh : fresh.slice(0, known);
	const after = known === null ? null : fresh[known]!.id;
	return JSON.stringify({ truncate: true, after, append: keep.reverse() });
}

/** Open Pi's session in the engine (its file and leaf; the branch when the engine asks); `background`: a large file may load on the pool. */
export function open(rt: Runtime, ctx: ExtensionContext, background = false, readAhead?: string): Output {
	const sm = ctx.sessionManager;
	const sessionId = sm.getSessionId();
	const file = sm.getSessionFile();
	const size = fileSize(file);
	rt.state.sessionId = sessionId;
	rt.state.last = undefined;
	const out = call(rt, { type: "open", sessionId, file: size === null ? null : file!, size, leaf: sm.getLeafId(), background, ...(readAhead ? { readAhead } : {}) });
	perform(rt, ctx, out);
	if (out.needsBranch) perform(rt, ctx, call(rt, { type: "resync", sessionId, entries: sm.getBranch() }));
	return out;
}

/** Hand `input` to the engine and carry out its output, driving an operation's jobs to the end (a promise only then). */
export function drive(rt: Runtime, ctx: ExtensionContext, input: Input, signal?: AbortSignal): Output | Promise<Output> {
	if (rt.state.sessionId !== ctx.sessionManager.getSessionId() || rt.state.last?.needsBranch) open(rt, ctx);
	const out = call(rt, input, feedOf(rt, ctx));
	perform(rt, ctx, out);
	return out.op === undefined ? out : follow(rt, ctx, out, signal);
}

/** The rest of an operation: its jobs run, their results go back with what Pi appended since, each output is carried out. */
async function follow(rt: Runtime, ctx: ExtensionContext, first: Output, signal?: AbortSignal): Promise<Output> {
	let out = first;
	const effects = [...out.effects];
	while (out.op !== undefined) {
		const results = await Promise.all(out.jobs.map((job) => runJob(job, ctx, signal)));
		out = call(rt, { type: "done", op: out.op, results, moment: moment(ctx, rt) }, feedOf(rt, ctx));
		perform(rt, ctx, out);
		effects.push(...out.effects);
	}
	return { ...out, effects };
}

/** Carry out an output: its appends, its effects in order, and the whole history's load in the background. */
function perform(rt: Runtime, ctx: ExtensionContext, out: Output): void {
	for (const marker of out.appends) rt.pi.appendEntry(marker.customType, marker.data);
	run(rt.pi, ctx, out.effects);
	const job = out.historyLoad;
	if (job && rt.state.token) track(rt, { done: pass(rt, ctx, () => ({ op: job.id, jobs: [job] })), blocks: false });
}

/** Run one job (host facts and Pi's compaction here, the rest on the addon's pool) until done, its deadline or Pi's abort; never rejects. */
export function runJob(job: Job, ctx: ExtensionContext | null, signal?: AbortSignal): Promise<JobResult> {
	const result = (outcome: JobResult["outcome"]): JobResult => ({ id: job.id, outcome });
	if (signal?.aborted) return Promise.resolve(result({ kind: "aborted" }));
	const left = job.deadlineMs - Date.now();
	const deadline = left < 2 ** 31 ? AbortSignal.timeout(Math.max(0, left)) : undefined;
	const stop = AbortSignal.any([signal, deadline].filter((s) => s !== undefined));
	return new Promise<JobResult>((resolve) => {
		const onStop = () =>
			resolve(result(signal?.aborted ? { kind: "aborted" } : { kind: "failed", error: `the ${job.work.kind} job did not finish within its deadline`, exists: false }));
		stop.addEventListener("abort", onStop, { once: true });
		const done = (value: unknown) => result({ kind: "done", value, atMs: Date.now() });
		const work: Promise<JobResult> =
			job.work.kind === "facts"
				? Promise.resolve().then(() => done(hostFacts(job.work as Extract<Work, { kind: "facts" }>, ctx)))
				: job.work.kind === "compact" // Pi's compaction: Relay's hook answers it with the reset.
					? new Promise((resolve, reject) => ctx!.compact({ onComplete: () => resolve(done(null)), onError: reject }))
					: native().runJob(JSON.stringify(job)).then((text) => result(JSON.parse(text)));
		work.catch((error: unknown) => result({ kind: "failed", error: messageOf(error), exists: false }))
			.then(resolve)
			.finally(() => stop.removeEventListener("abort", onStop));
	});
}

/** The facts a `facts` job asks for. */
const hostFacts = ({ sessionName, registries, taskIds }: Extract<Work, { kind: "facts" }>, ctx: ExtensionContext | null): HostFacts => ({
	sessionName: sessionName ? (ctx?.sessionManager.getSessionName() ?? undefined) : undefined,
	...(registries ? { jobs: jobRecords(), subagents: subagentRecords(taskIds) } : {}),
});

/** The size of the regular file `file` (`null`: none there), a fact the engine's load rule reads. */
function fileSize(file: string | undefined): number | null {
	try {
		const stat = file ? statSync(file, { throwIfNoEntry: false }) : undefined;
		return stat?.isFile() ? stat.size : null;
	} catch {
		return null;
	}
}

/** The session file of Pi's `--session <file>` (Pi's own parser), when it is a file and no `--fork`. */
export function sessionFileOf(argv: string[], cwd: string): string | undefined {
	try {
		const args = parsePiArgs(argv);
		const file = args.fork === undefined && typeof args.session === "string" && args.session !== "" ? resolve(cwd, args.session) : undefined;
		return fileSize(file) === null ? undefined : file;
	} catch {
		return undefined;
	}
}

/** The message of a thrown value. */
export function messageOf(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

/** Whether a Relay runtime of this process already read a session ahead (one does, the first). */
const PREFETCHED = Symbol.for("relay.prefetched");

/** Read the session file on Pi's command line ahead of `session_start`, on the pool, for its `open` (the first runtime of a process). */
export function prefetchSession(rt: Runtime, argv: string[] = process.argv.slice(2)): void {
	const flags = globalThis as { [PREFETCHED]?: boolean };
	const file = flags[PREFETCHED] ? undefined : sessionFileOf(argv, process.cwd());
	flags[PREFETCHED] = true;
	rt.state.token = {};
	if (file) track(rt, { done: pass(rt, null, () => call(rt, { type: "prefetch", file, size: fileSize(file) ?? 0 })), blocks: false, file });
}

/**
 * Load the session at start-up. A large file loads on the pool: the current window first, which
 * every hook and tool awaits; the whole history later, which only what reads earlier windows
 * awaits ({@link when}). A read ahead of this file is waited for and installed when its tip is on
 * Pi's branch; one of another file is dropped.
 */
export function openSession(rt: Runtime, ctx: ExtensionContext): void {
	const ahead = rt.state.load?.file === ctx.sessionManager.getSessionFile() ? rt.state.load : undefined;
	if (!ahead) rt.state.token = {};
	const token = rt.state.token;
	const start = async (read?: unknown) => {
		const tip = (read as { tip?: string } | undefined)?.tip;
		return rt.state.token === token ? pass(rt, ctx, () => open(rt, ctx, true, tip && walk(ctx, tip).met ? tip : undefined)) : undefined;
	};
	track(rt, { done: ahead ? ahead.done.then(start) : start(), blocks: true });
}

/**
 * One step of a load: `step`'s output, then its jobs on the pool and their results to the engine
 * (a failed load is done again in full). Resolves to the engine's answer; never rejects: a
 * failure is the engine's to tell (on stderr when even that fails, or before a session).
 */
async function pass(rt: Runtime, ctx: ExtensionContext | null, step: () => Pick<Output, "op" | "jobs">): Promise<unknown> {
	const token = rt.state.token;
	try {
		const { op, jobs } = step();
		if (op === undefined) return undefined;
		const results = await Promise.all(jobs.map((job) => runJob(job, ctx)));
		if (rt.state.token !== token) return undefined;
		const out = call(rt, { type: "done", op, results, moment: moment(ctx, rt) });
		if (ctx) perform(rt, ctx, out);
		if (ctx && rt.state.last?.needsBranch) open(rt, ctx);
		return out.value;
	} catch (error) {
		try {
			if (ctx) return perform(rt, ctx, call(rt, { type: "failed", hook: "loading the session", message: messageOf(error) }));
		} catch {
			// Told below.
		}
		console.error(`relay: loading the session failed: ${messageOf(error)}`);
	}
}

/** Make `load` the one in flight until it is done. */
function track(rt: Runtime, load: Load): void {
	rt.state.load = load;
	void load.done.finally(() => {
		if (rt.state.load === load) rt.state.load = undefined;
	});
}

/** The session ends: a load in flight is dropped. False when it ends during its start-up load (the engine stops it). */
export function closeSession(rt: Runtime): boolean {
	const starting = rt.state.load?.blocks === true;
	[rt.state.token, rt.state.load] = [undefined, undefined];
	if (starting) pass(rt, null, () => call(rt, { type: "close" }));
	return !starting;
}

/** Run `body` once what it `waits` for is in (at once when it is): the start-up load's window, or the whole history (asked for first). */
export function when<R>(rt: Runtime, ctx: ExtensionContext, waits: HookWaits, body: () => R): R | Promise<Awaited<R>> {
	const history = waits === "history";
	if (history && !rt.state.load && rt.state.last?.historyComplete === false) perform(rt, ctx, call(rt, { type: "history" }));
	const load = rt.state.load;
	if (!load || (!history && !load.blocks)) return body();
	return load.done.then(() => when(rt, ctx, waits, body)) as Promise<Awaited<R>>;
}

/** Carry out effects in order. */
export function run(pi: ExtensionAPI, ctx: ExtensionContext, effects: Effect[] | undefined): void {
	for (const effect of effects ?? []) {
		switch (effect.kind) {
			case "send": {
				const { customType, content, display, details, triggerTurn, deliverAs } = effect;
				pi.sendMessage({ customType, content, display, details }, { triggerTurn, ...(deliverAs ? { deliverAs } : {}) });
				break;
			}
			case "notify":
				if (ctx.hasUI) ctx.ui.notify(effect.text, effect.level);
				else console.error(effect.text);
				break;
			case "status":
				if (ctx.hasUI) ctx.ui.setStatus("relay", effect.text ?? undefined);
				break;
			case "log":
				console.error(effect.text);
				break;
			case "activeTools": {
				// Withheld tools leave the declared set, restored ones rejoin it; Pi is asked only on a change.
				const active = pi.getActiveTools();
				const next = [...active.filter((name) => !effect.withhold.includes(name)), ...effect.restore.filter((name) => !active.includes(name))];
				if (next.length !== active.length || next.some((name, i) => name !== active[i])) pi.setActiveTools(next);
				break;
			}
			case "shutdown":
				// The relaunch marker is written: pi-session starts a fresh Pi (print mode exits by itself).
				ctx.shutdown();
				break;
		}
	}
}

/** The engine's boundary drafts as Pi takes them: a reset's marker is appended first, and its compaction keeps from it. */
export function drafts(pi: ExtensionAPI, ctx: ExtensionContext, out: Output): SessionBoundaryDraft[] {
	const marker = out.result?.kind === "reset" ? out.result.plan.marker : undefined;
	if (marker) pi.appendEntry(marker.customType, marker.data);
	const firstKeptEntryId = ctx.sessionManager.getLeafId();
	return out.drafts.map((d) => (d.type === "compaction" ? { ...d, firstKeptEntryId } : d)) as SessionBoundaryDraft[];
}

/** The request with the window's stubs in place (the `nth` result of each call) and the engine's messages inserted. */
export function request<M>(messages: M[], out: Output, stubs: Map<string, string> | undefined): M[] | undefined {
	if (out.messages.length === 0 && !stubs?.size) return undefined;
	let result = messages;
	if (stubs?.size) {
		const seen = new Map<string, number>();
		result = messages.map((m) => {
			const r = m as { role?: string; toolCallId?: string };
			if (r.role !== "toolResult" || typeof r.toolCallId !== "string") return m;
			const nth = seen.get(r.toolCallId) ?? 0;
			seen.set(r.toolCallId, nth + 1);
			const text = stubs.get(`${nth}:${r.toolCallId}`);
			return text === undefined ? m : ({ ...m, content: [{ type: "text", text }] } as M);
		});
	}
	// Each of the engine's messages at its index, as Pi's hidden custom message.
	if (out.messages.length) result = [...result];
	for (const { index, customType, content, timestamp } of out.messages) result.splice(index, 0, { role: "custom", customType, content, display: false, timestamp } as M);
	return result;
}
