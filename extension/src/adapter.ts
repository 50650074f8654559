// The driver between Pi and the Rust engine: the one place that executes what the engine
// answers. It turns Pi events into inputs, keeps the engine's branch mirror current (every input
// carries what Pi appended since the engine's tip), carries out effects and appends, and runs the
// jobs the engine asks for, off Pi's event loop, within their deadline and under Pi's abort
// signal. It decides nothing: which job runs, in which order, and what a result means are the
// engine's (crates/relay-core/src/engine/door.rs).
import type { ExtensionAPI, ExtensionContext, SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import { getAgentDir, parseArgs as parsePiArgs } from "@earendil-works/pi-coding-agent";
import { statSync } from "node:fs";
import { tmpdir } from "node:os";
import { resolve } from "node:path";
import type { BoundaryHooks, Continuation, Effect, Event, HostFacts, Input, Job, JobResult, ModelRef, Moment, Output, ResetPlan, Work } from "./generated/wire.ts";
import { native, type NativeEngine } from "./native.ts";
import { contextGuard, jobRecords, subagentRecords } from "./integrations.ts";

/**
 * The process-wide hosting marker: the first Relay runtime bound in a process is the primary one;
 * runtimes bound while it is alive (SDK child sessions) are subagents. Released at the primary's
 * shutdown, so a forked or resumed main session stays main.
 */
const HOST = Symbol.for("relay.primary-runtime");
type Host = { [HOST]?: object };

export function bindRuntime(token: object): boolean {
	const host = globalThis as Host;
	if (!host[HOST]) host[HOST] = token;
	return host[HOST] !== token;
}

export function releaseRuntime(token: object): void {
	const host = globalThis as Host;
	if (host[HOST] === token) delete host[HOST];
}

/**
 * Background work a host integration reports (jobs, watches, subagents): a process-wide function
 * `globalThis[Symbol.for("relay.pending-work")]` returning how many are pending, handed to the
 * engine as it answered (a number; the engine reads it). A missing or failing function counts as none.
 */
const PENDING_WORK = Symbol.for("relay.pending-work");
type PendingWorkHost = { [PENDING_WORK]?: () => unknown };

function pendingWork(): number {
	try {
		const n = (globalThis as PendingWorkHost)[PENDING_WORK]?.();
		return typeof n === "number" ? n : 0;
	} catch {
		return 0;
	}
}

/** Pi's tag on a router (virtual) model (`VIRTUAL_MODEL_API` in Pi's virtual-models module). */
const VIRTUAL_API = "pi-virtual";

/**
 * Facts about the moment that every input carries. Pi computes them; the engine judges them.
 * Pi's usage figure is only fetched for the tools whose spec says `usesPiUsage` (`withUsage`):
 * `getContextUsage()` walks the whole branch, so hooks and every other tool let the engine
 * estimate usage from its mirror instead. Under a router model, the registry's window of the
 * model the engine last named (`answeredModel`). Without a ctx (before `session_start`): the
 * process's own facts, no model.
 */
export function moment(ctx: ExtensionContext | null, rt: Runtime | null = null, withUsage = false): Moment {
	let usage: Moment["usage"] = null;
	if (withUsage && ctx) {
		try {
			const u = ctx.getContextUsage();
			if (u) usage = { tokens: u.tokens, contextWindow: u.contextWindow };
		} catch {
			usage = null;
		}
	}
	const model = ctx?.model;
	const router = (model as { api?: string } | undefined)?.api === VIRTUAL_API;
	const answered = router ? rt?.state.answered : null;
	return {
		nowMs: Date.now(),
		tzOffsetMinutes: -new Date().getTimezoneOffset(),
		usage,
		model: model ? `${model.provider}/${model.id}` : null,
		contextWindow: model ? (model.contextWindow ?? null) : null,
		router,
		answeredWindow: (answered && ctx?.modelRegistry.find(answered.provider, answered.model)?.contextWindow) ?? null,
		hasPendingMessages: ctx?.hasPendingMessages() ?? false,
		pendingWork: pendingWork(),
		cwd: ctx?.cwd ?? process.cwd(),
		contextGuard: contextGuard(),
		subagent: rt?.subagent ?? false,
	};
}

/** The fields of the Pi event of type `T` besides its tag. */
export type EventFields<T extends Event["type"]> = Omit<Extract<Event, { type: T }>, "type">;

/**
 * What the driver remembers between inputs: the session the mirror holds and its tip (from the
 * engine's last output), the model whose window it asked for (`answered`), whether the engine
 * asked for the whole branch and whether its history is complete, the one load in flight (`load`;
 * `token` names the session it is for), and the window's stubs as the engine last sent them, by
 * `nth:call` (they cross only when they change).
 */
export type SyncState = {
	sessionId?: string;
	stubs?: Map<string, string>;
	tip?: string | null;
	answered?: ModelRef | null;
	needsBranch?: boolean;
	historyComplete?: boolean;
	load?: Load;
	token?: object;
};

/**
 * A load in flight: a read ahead of `file` (only the `open` of that file waits for it; `done`
 * gives its tip), the start-up load (`blocks`: every hook and tool waits for it) or the whole
 * history's (only what reads earlier windows waits for it). `done` never rejects.
 */
type Load = { done: Promise<unknown>; blocks: boolean; file?: string };

/**
 * How far back from Pi's leaf {@link openSession} looks for the tip a read ahead reached: Pi
 * appends a few entries at start-up (a thinking level, a model change) after Relay read ahead.
 */
const READ_AHEAD_WALK = 64;

/** `tip` when Pi's branch passes through it within {@link READ_AHEAD_WALK} entries of the leaf. */
function tipOnBranch(ctx: ExtensionContext, tip: string | null | undefined): string | undefined {
	if (!tip) return undefined;
	const sm = ctx.sessionManager;
	let id: string | null | undefined = sm.getLeafId();
	for (let i = 0; id && i < READ_AHEAD_WALK; i++) {
		if (id === tip) return tip;
		id = sm.getEntry(id)?.parentId;
	}
	return undefined;
}

/** One Relay runtime: its engine, what the driver remembers, and the hosting rule's answer. */
export type Runtime = { pi: ExtensionAPI; engine: NativeEngine; state: SyncState; subagent: boolean; boundary?: Boundary };

/** The boundary hooks' handlers, and the unsubscribe function of each one subscribed now (`null`: a Pi without one). */
type BoundaryHook = "turn_end" | "agent_before_settle";
type Boundary = { handlers: Record<BoundaryHook, (event: never, ctx: ExtensionContext) => unknown>; off: Partial<Record<BoundaryHook, (() => void) | null>> };

/**
 * Subscribe to Pi's `turn_end` and `agent_before_settle` with `handlers` while the engine's latest
 * output says it needs them ({@link followBoundary}); both until it says otherwise.
 */
export function bindBoundary(rt: Runtime, handlers: Boundary["handlers"]): void {
	rt.boundary = { handlers, off: {} };
	followBoundary(rt, { turnEnd: true, settle: true });
}

/**
 * Follow the engine's `boundary`: Pi builds a preview of the whole branch for every boundary hook
 * that has a subscriber, so Relay is subscribed only while the engine needs the hook.
 */
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

/** One crossing: `input` (and `feed`) in, the output back, the remembered tip and boundary hooks updated. */
function call(rt: Runtime, input: Input, feed: string | null = null): Output {
	const out = JSON.parse(rt.engine.handle(JSON.stringify(input), feed)) as Output;
	rt.state.tip = out.tip;
	rt.state.answered = out.answeredModel;
	rt.state.needsBranch = out.needsBranch;
	rt.state.historyComplete = out.historyComplete;
	if (out.stubs) rt.state.stubs = new Map(out.stubs.map((s) => [`${s.nth}:${s.call}`, s.text]));
	followBoundary(rt, out.boundary);
	return out;
}

/** A query the engine answers without its mirror (`describe`, `prepare`, `schema_refused`). */
export function ask(rt: Runtime, input: Input): unknown {
	return call(rt, input).value;
}

/**
 * What Pi appended since the engine's tip, as a feed: the walk goes from Pi's leaf back to the
 * tip, so its cost is the number of new entries, never the session's length. A leaf that does
 * not descend from the tip (a navigation) asks the engine which of the walked entries it holds
 * and drops what follows that one.
 */
function feedOf(rt: Runtime, ctx: ExtensionContext): string | null {
	const sm = ctx.sessionManager;
	const leaf = sm.getLeafId();
	const tip = rt.state.tip ?? null;
	if (leaf === tip) return null;
	const fresh: { id: string; parentId: string | null }[] = [];
	let id: string | null | undefined = leaf;
	while (id && id !== tip) {
		const entry = sm.getEntry(id) as { id: string; parentId: string | null } | undefined;
		if (!entry) break;
		fresh.push(entry);
		id = entry.parentId;
	}
	if ((id ?? null) === tip) return JSON.stringify({ append: fresh.reverse() });
	const known = call(rt, { type: "known", ids: fresh.map((e) => e.id) }).value as number | null;
	const keep = known === null ? fresh : fresh.slice(0, known);
	const after = known === null ? null : fresh[known]!.id;
	return JSON.stringify({ truncate: true, after, append: keep.reverse() });
}

/**
 * Reload the engine's mirror in full: from the session file when it holds the branch, else from
 * Pi's `getBranch()` (after a caught panic, in another session, or when the engine asks).
 */
export function reload(rt: Runtime, ctx: ExtensionContext): void {
	open(rt, ctx, false);
}

/** Open Pi's session in the engine (its file and leaf; the branch itself when the engine asks for it). */
function open(rt: Runtime, ctx: ExtensionContext, background: boolean, readAhead?: string): Output {
	const sm = ctx.sessionManager;
	const sessionId = sm.getSessionId();
	const file = sm.getSessionFile();
	rt.state.sessionId = sessionId;
	rt.state.tip = undefined;
	const size = fileSize(file);
	const out = call(rt, { type: "open", sessionId, file: size === null ? null : file!, size, leaf: sm.getLeafId(), background, ...(readAhead ? { readAhead } : {}) });
	perform(rt, ctx, out);
	if (rt.state.needsBranch) perform(rt, ctx, call(rt, { type: "resync", sessionId, entries: sm.getBranch() }));
	return out;
}

/**
 * Hand `input` to the engine with what Pi appended, then carry out its output; an output that
 * waits for jobs is driven to its end (the jobs run off Pi's event loop; `signal`: Pi's abort).
 * Answers at once, without a promise, when nothing waits.
 */
export function drive(rt: Runtime, ctx: ExtensionContext, input: Input, signal?: AbortSignal): Output | Promise<Output> {
	if (rt.state.sessionId !== ctx.sessionManager.getSessionId() || rt.state.needsBranch) reload(rt, ctx);
	const out = call(rt, input, feedOf(rt, ctx));
	perform(rt, ctx, out);
	return out.op === undefined ? out : follow(rt, ctx, out, signal);
}

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

/**
 * Carry out an output: the entries to append first, then the effects in order; the whole
 * history's load, when the engine hands it out, runs in the background ({@link completeHistory}).
 */
function perform(rt: Runtime, ctx: ExtensionContext, out: Output): void {
	for (const marker of out.appends) rt.pi.appendEntry(marker.customType, marker.data);
	run(rt.pi, ctx, out.effects);
	if (out.historyLoad) completeHistory(rt, ctx, out.historyLoad);
}

/**
 * Run one job: facts only the host has here, everything else in the addon on the libuv pool.
 * The job's deadline and Pi's abort signal end the wait (the outcome says which); a job never
 * rejects.
 */
export function runJob(job: Job, ctx: ExtensionContext | null, signal?: AbortSignal): Promise<JobResult> {
	const result = (outcome: JobResult["outcome"]): JobResult => ({ id: job.id, outcome });
	if (signal?.aborted) return Promise.resolve(result({ kind: "aborted" }));
	const work: Promise<JobResult> =
		job.work.kind === "facts"
			? Promise.resolve().then(() => result({ kind: "done", value: hostFacts(job.work as Extract<Work, { kind: "facts" }>, ctx), atMs: Date.now() }))
			: native()
					.runJob(JSON.stringify(job))
					.then((text) => result(JSON.parse(text)));
	const guarded = work.catch((error: unknown) => result({ kind: "failed", error: messageOf(error), exists: false }));
	const waits: Promise<JobResult>[] = [guarded];
	const cleanups: (() => void)[] = [];
	const left = job.deadlineMs - Date.now();
	if (left < 2 ** 31) {
		waits.push(
			new Promise((resolve) => {
				const timer = setTimeout(() => resolve(result({ kind: "failed", error: `the ${job.work.kind} job did not finish within its deadline`, exists: false })), Math.max(0, left));
				timer.unref?.();
				cleanups.push(() => clearTimeout(timer));
			}),
		);
	}
	if (signal) {
		waits.push(
			new Promise((resolve) => {
				const onAbort = () => resolve(result({ kind: "aborted" }));
				signal.addEventListener("abort", onAbort, { once: true });
				cleanups.push(() => signal.removeEventListener("abort", onAbort));
			}),
		);
	}
	return Promise.race(waits).finally(() => cleanups.forEach((c) => c()));
}

/** The facts a `facts` job asks for. */
function hostFacts(work: Extract<Work, { kind: "facts" }>, ctx: ExtensionContext | null): HostFacts {
	const facts: HostFacts = {};
	if (work.sessionName) facts.sessionName = ctx?.sessionManager.getSessionName() ?? undefined;
	if (work.registries) {
		facts.jobs = jobRecords();
		facts.subagents = subagentRecords(work.taskIds);
	}
	if (work.store && ctx) {
		facts.store = {
			agentDir: getAgentDir(),
			questionsHome: process.env.PI_QUESTIONS_HOME ?? null,
			tmpDir: tmpdir(),
			uid: typeof process.getuid === "function" ? process.getuid() : null,
			sessionId: ctx.sessionManager.getSessionId(),
			cwd: ctx.cwd,
		};
	}
	return facts;
}

/** The size of the regular file `file` (`null`: none there), a fact the engine's load rule reads. */
function fileSize(file: string | undefined): number | null {
	if (!file) return null;
	try {
		const stat = statSync(file, { throwIfNoEntry: false });
		return stat?.isFile() ? stat.size : null;
	} catch {
		return null;
	}
}

/**
 * The session file Pi was told to open on its command line (`--session <file>`, read with Pi's
 * own argument parser), when that is a file; `undefined` otherwise (no such flag, a session id,
 * a folder, a `--fork`, which opens a copy).
 */
export function sessionFileOf(argv: string[], cwd: string): string | undefined {
	let session: string | undefined;
	try {
		const args = parsePiArgs(argv);
		session = args.fork === undefined ? args.session : undefined;
	} catch {
		return undefined;
	}
	if (typeof session !== "string" || session === "") return undefined;
	const file = resolve(cwd, session);
	return fileSize(file) === null ? undefined : file;
}

/** Whether a Relay runtime of this process already read a session ahead (one does, the first). */
const PREFETCHED = Symbol.for("relay.prefetched");

/** The message of a thrown value. */
export function messageOf(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

/** Make `load` the one in flight until it is done. */
function track(rt: Runtime, load: Load): void {
	rt.state.load = load;
	void load.done.finally(() => {
		if (rt.state.load === load) rt.state.load = undefined;
	});
}

/**
 * While Pi is still starting (it has read the session but not yet started it), read the session
 * file named on its command line on the libuv pool: the first pass of {@link openSession}, done
 * before `session_start` instead of after it (Pi spends a quarter of a second between loading
 * the extensions and `session_start` on a 256 MiB session). The engine keeps what was read for
 * the `open` of that file at its last entry and drops it for anything else; only the first
 * runtime of a process reads ahead (an in-process subagent has the parent's command line).
 */
export function prefetchSession(rt: Runtime, argv: string[] = process.argv.slice(2)): void {
	const flags = globalThis as { [PREFETCHED]?: boolean };
	if (flags[PREFETCHED]) return;
	flags[PREFETCHED] = true;
	const file = sessionFileOf(argv, process.cwd());
	if (!file) return;
	const warn = (error: unknown) => console.error(`relay: reading the session ahead failed: ${messageOf(error)}`);
	const token = (rt.state.token = {});
	try {
		const { op, jobs } = call(rt, { type: "prefetch", file, size: fileSize(file) ?? 0 });
		if (op === undefined) return;
		const done = Promise.all(jobs.map((job) => runJob(job, null))).then((results) => {
			// An `open` of another file, or the session's end, dropped it.
			if (rt.state.token !== token) return undefined;
			// Before session_start there is no ctx: the moment of the process alone.
			const value = call(rt, { type: "done", op, results, moment: moment(null) }).value as { tip?: string | null } | undefined;
			return value?.tip ?? null;
		});
		track(rt, { done: done.catch(warn), blocks: false, file });
	} catch (error) {
		warn(error);
	}
}

/**
 * Load the session at start-up, then run `after` (configuration and the `session_start` event).
 * A large session file is read on the libuv pool in two passes, so opening it does not hold Pi:
 * the engine answers `open` with a load job (the current window in full, the earlier windows
 * skimmed), which every hook and tool awaits first ({@link whenLoaded}). The whole history is a
 * second load job the engine hands out when something needs it or the first run settles; it runs
 * while the hooks go on, and what reads earlier windows awaits it ({@link whenComplete}).
 */
export function openSession(rt: Runtime, ctx: ExtensionContext, after: () => void, report: (error: unknown) => void): void {
	// A read ahead of this very file is waited for (the engine installs it at `open`); one of
	// another file is dropped without a wait.
	const ahead = rt.state.load?.file === ctx.sessionManager.getSessionFile() ? rt.state.load : undefined;
	if (!ahead) {
		rt.state.load = undefined;
		rt.state.token = {};
	}
	const token = rt.state.token;
	const start = (readAhead?: string): Promise<void> | undefined => {
		if (rt.state.token !== token) return undefined;
		let out: Output | null = null;
		try {
			out = open(rt, ctx, true, readAhead);
		} catch (error) {
			report(error);
		}
		if (out?.op === undefined) {
			after();
			return undefined;
		}
		return loadPass(rt, ctx, out.jobs, out.op, report).then(() => {
			if (rt.state.token === token) after();
		});
	};
	const done = ahead ? ahead.done.then((tip) => start(tipOnBranch(ctx, tip as string | null | undefined))) : start();
	if (done) track(rt, { done, blocks: true });
}

/** Run a load's jobs and hand their result to the engine (a failure reloads the session in full). */
async function loadPass(rt: Runtime, ctx: ExtensionContext, jobs: Job[], op: number, report: (error: unknown) => void): Promise<void> {
	const token = rt.state.token;
	const results = await Promise.all(jobs.map((job) => runJob(job, ctx)));
	if (rt.state.token !== token) return;
	try {
		perform(rt, ctx, call(rt, { type: "done", op, results, moment: moment(ctx, rt) }));
		if (rt.state.needsBranch) reload(rt, ctx);
	} catch (error) {
		report(error);
	}
}

/** Run the whole history's load in the background. */
function completeHistory(rt: Runtime, ctx: ExtensionContext, job: Job): void {
	if (!rt.state.token) return;
	const report = (error: unknown) => {
		try {
			perform(rt, ctx, call(rt, { type: "failed", hook: "loading the history", message: messageOf(error) }));
		} catch {
			console.error(`relay: loading the history failed: ${messageOf(error)}`);
		}
	};
	track(rt, { done: loadPass(rt, ctx, [job], job.id, report), blocks: false });
}

/**
 * The session ends: a load in flight is dropped (its result, when it comes, is ignored). True when
 * the session had started (its start-up load was done), so that the engine sees the end of it;
 * false when it ends during that load, which the engine then stops (`close`) without anything else.
 */
export function closeSession(rt: Runtime): boolean {
	const starting = rt.state.load?.blocks === true;
	rt.state.token = undefined;
	rt.state.load = undefined;
	if (!starting) return true;
	try {
		call(rt, { type: "close" });
	} catch (error) {
		console.error(`relay: stopping the session load failed: ${messageOf(error)}`);
	}
	return false;
}

/**
 * Run `body` once the start-up load and the completion of the history are done ({@link openSession});
 * a skimmed history whose whole load has not started asks the engine for it first.
 */
export function whenComplete<R>(rt: Runtime, ctx: ExtensionContext, body: () => R): R | Promise<Awaited<R>> {
	if (!rt.state.load && rt.state.historyComplete === false) perform(rt, ctx, call(rt, { type: "history" }));
	const load = rt.state.load;
	if (!load) return body();
	return load.done.then(() => whenComplete(rt, ctx, body)) as Promise<Awaited<R>>;
}

/** Run `body` once no start-up load is in flight (at once, without a promise, when none is). */
export function whenLoaded<R>(state: SyncState, body: () => R): R | Promise<Awaited<R>> {
	const load = state.load;
	if (!load?.blocks) return body();
	return load.done.then(() => whenLoaded(state, body)) as Promise<Awaited<R>>;
}

/** Carry out effects in order. */
export function run(pi: ExtensionAPI, ctx: ExtensionContext, effects: Effect[] | undefined): void {
	for (const effect of effects ?? []) {
		switch (effect.kind) {
			case "send":
				pi.sendMessage(
					{ customType: effect.customType, content: effect.content, display: effect.display, details: effect.details },
					{ triggerTurn: effect.triggerTurn, ...(effect.deliverAs ? { deliverAs: effect.deliverAs } : {}) },
				);
				break;
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
				// The tools the engine withholds leave the set declared to the model; those it
				// declares again rejoin it. Pi is not asked when nothing changes.
				const active = pi.getActiveTools();
				const next = [...active.filter((name) => !effect.withhold.includes(name)), ...effect.restore.filter((name) => !active.includes(name))];
				if (next.length !== active.length || next.some((name, i) => name !== active[i])) pi.setActiveTools(next);
				break;
			}
			case "shutdown":
				// The relaunch marker is written: end this process so pi-session starts a fresh one.
				// Interactive Pi quits at once when idle (this runs at agent_settled); print mode
				// ignores the call and exits by itself after its last prompt.
				ctx.shutdown();
				break;
		}
	}
}

/** Append the reset marker and return the compaction draft (and hidden continuation) that install the new window. */
export function resetDrafts(pi: ExtensionAPI, ctx: ExtensionContext, plan: ResetPlan) {
	pi.appendEntry(plan.marker.customType, plan.marker.data);
	const markerId = ctx.sessionManager.getLeafId();
	const drafts: SessionBoundaryDraft[] = [
		{ type: "compaction", summary: plan.summary, firstKeptEntryId: markerId, details: plan.details },
	];
	if (plan.continuation) drafts.push(hidden(plan.continuation));
	return { markerId, drafts };
}

/** A hidden custom message draft. */
function hidden({ customType, content, details }: Continuation): SessionBoundaryDraft {
	return { type: "custom_message", customType, content, display: false, details };
}

/**
 * A boundary hook's answer (`turn_end`, `agent_before_settle`): Pi's drafts, then the engine's (a
 * clearing's record, a continuation, a reset), and Pi's `continue` as the engine says; nothing
 * when the engine adds none.
 */
export function boundaryAnswer(pi: ExtensionAPI, ctx: ExtensionContext, entries: SessionBoundaryDraft[], out: Output) {
	const result = out.result;
	let drafts: SessionBoundaryDraft[];
	if (result?.kind === "clear") drafts = [{ type: "custom", customType: result.record.customType, data: result.record.data }];
	else if (result?.kind === "continue") drafts = [hidden(result.continuation)];
	else if (result?.kind === "reset") drafts = resetDrafts(pi, ctx, result.plan).drafts;
	else return undefined;
	return { entries: [...entries, ...drafts], continue: out.continue === true };
}

/**
 * A request as the engine says it goes out: its cleared tool results replaced by their stubs (the
 * `nth` result answering each call), its messages inserted where it says. `undefined`: unchanged.
 */
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
	for (const message of out.messages) {
		const inserted = {
			role: "custom",
			customType: message.customType,
			content: message.content,
			display: false,
			timestamp: message.timestamp,
		} as unknown as M;
		result = [...result.slice(0, message.index), inserted, ...result.slice(message.index)];
	}
	return result;
}
