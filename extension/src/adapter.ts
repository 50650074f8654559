// The adapter between Pi and the Rust engine: it keeps the engine's branch mirror current, turns Pi
// events into observations, and carries out the effects the engine returns. It decides nothing.
import type { ExtensionAPI, ExtensionContext, SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import { existsSync } from "node:fs";
import type { Effect, Event, Moment, Observation, ResetPlan } from "./generated/wire.ts";
import type { NativeEngine } from "./native.ts";
import { contextGuard } from "./integrations.ts";

// The wire types are generated from the Rust engine (crates/relay-core/src/engine/wire.rs).
export type { HookReply, ToolReply } from "./generated/wire.ts";

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
 * The user's last `/relay on|off` per session, process-wide: `/reload` re-evaluates this module
 * and re-creates the engine, and the new engine is handed the toggle again. A restart of Pi, or
 * another session, starts from the `relay.enabled` setting.
 */
const TOGGLES = Symbol.for("relay.toggles");
type Toggles = { [TOGGLES]?: Map<string, string> };

export function rememberToggle(sessionId: string, args: string): void {
	if (args !== "on" && args !== "off") return;
	const host = globalThis as Toggles;
	(host[TOGGLES] ??= new Map()).set(sessionId, args);
}

export function recallToggle(sessionId: string): string | undefined {
	return (globalThis as Toggles)[TOGGLES]?.get(sessionId);
}

/**
 * Background work a host integration reports (jobs, watches, subagents): a process-wide function
 * `globalThis[Symbol.for("relay.pending-work")]` returning how many are pending. The engine judges
 * it (the idle handoff at the settle point); a missing or failing function counts as none.
 */
const PENDING_WORK = Symbol.for("relay.pending-work");
type PendingWorkHost = { [PENDING_WORK]?: () => unknown };

function pendingWork(): number {
	try {
		const n = (globalThis as PendingWorkHost)[PENDING_WORK]?.();
		return typeof n === "number" && Number.isInteger(n) && n > 0 ? Math.min(n, 0xffff_ffff) : 0;
	} catch {
		return 0;
	}
}

/**
 * Facts about the moment that every observation carries. Pi computes them; the engine judges them.
 * Pi's usage figure is only fetched for the tools whose spec says `usesPiUsage` (`withUsage`):
 * `getContextUsage()` walks the whole branch, so hooks and every other tool let the engine
 * estimate usage from its mirror instead.
 */
export function moment(ctx: ExtensionContext, withUsage = false, subagent = false): Moment {
	let usage: Moment["usage"] = null;
	if (withUsage) {
		try {
			const u = ctx.getContextUsage();
			if (u) usage = { tokens: u.tokens, contextWindow: u.contextWindow };
		} catch {
			usage = null;
		}
	}
	const model = ctx.model ? `${ctx.model.provider}/${ctx.model.id}` : null;
	return {
		nowMs: Date.now(),
		tzOffsetMinutes: -new Date().getTimezoneOffset(),
		usage,
		model,
		contextWindow: ctx.model?.contextWindow ?? null,
		hasPendingMessages: ctx.hasPendingMessages(),
		pendingWork: pendingWork(),
		cwd: ctx.cwd,
		contextGuard: contextGuard(),
		subagent,
	};
}

/** The fields of the Pi event of type `T` besides its tag. */
export type EventFields<T extends Event["type"]> = Omit<Extract<Event, { type: T }>, "type">;

/** The JSON observation `Engine::handle` reads: the moment and the Pi event it reports. */
export function observation<T extends Event["type"]>(ctx: ExtensionContext, type: T, fields: EventFields<T>, subagent = false): string {
	const event = { type, ...fields } as Event;
	return JSON.stringify({ moment: moment(ctx, false, subagent), event } satisfies Observation);
}

/**
 * Bring the engine's mirror up to the current leaf. Walks from the leaf back to the newest entry the
 * engine already knows, so the cost is the number of new entries, never the session length. After
 * the addon caught a panic (`needsResync()`), or in another session, it is a full resync instead.
 */
/**
 * What the adapter remembers between hooks: the session the mirror holds, the start-up load in
 * flight (`loading`, every hook waits for it) and the load that completes a skimmed history
 * (`completing`, only what reads earlier windows waits for it).
 */
export type SyncState = { sessionId?: string; loading?: Promise<void>; completing?: Promise<void>; loadToken?: object };

export function sync(engine: NativeEngine, ctx: ExtensionContext, state: SyncState): void {
	const sm = ctx.sessionManager;
	const sessionId = sm.getSessionId();
	if (state.sessionId !== sessionId || engine.needsResync()) {
		fullSync(engine, ctx, state);
		return;
	}
	const leaf = sm.getLeafId();
	if (leaf === engine.tipId()) return;
	const fresh: unknown[] = [];
	let id: string | null | undefined = leaf;
	while (id && !engine.hasEntry(id)) {
		const entry = sm.getEntry(id);
		if (!entry) break;
		fresh.push(entry);
		id = entry.parentId;
	}
	if ((id ?? null) !== engine.tipId()) engine.truncateAfter(id ?? null);
	if (fresh.length > 0) engine.append(JSON.stringify(fresh.reverse()));
}

/** Rebuild the mirror from scratch: from the session file when it holds the whole branch, else from getBranch(). */
export function fullSync(engine: NativeEngine, ctx: ExtensionContext, state: SyncState): void {
	const sm = ctx.sessionManager;
	const sessionId = sm.getSessionId();
	const file = sm.getSessionFile();
	const leaf = sm.getLeafId();
	if (file && leaf && existsSync(file) && engine.loadSessionFile(sessionId, file, leaf)) {
		state.sessionId = sessionId;
		// Entries Pi has not flushed yet (none once the file exists) arrive through the incremental path.
		sync(engine, ctx, state);
		return;
	}
	engine.resync(sessionId, JSON.stringify(sm.getBranch()));
	// Only a mirror that loaded counts as this session's: a failed load is retried, never walked.
	state.sessionId = sessionId;
}

/**
 * Load the session at start-up, then run `after` (configuration and the `session_start` event).
 * A large session file is read on the libuv pool in two steps, so opening it does not hold Pi:
 * 1. `loadSessionFileInBackground` skims the file and reads the current window in full: every
 *    fact of the branch but the earlier windows' texts. `state.loading` is the promise of this
 *    start-up, which every hook and tool awaits first ({@link whenLoaded}); the engine installs
 *    the branch and the incremental `sync()` adds what Pi appended meanwhile.
 * 2. `beginCompleteLoad().run()` then reads the whole file while the hooks go on; what reads
 *    earlier windows (the history tools, a tree navigation) awaits `state.completing`
 *    ({@link whenComplete}), and the engine swaps the whole history in with what it was given
 *    meanwhile replayed. A session without a compaction is read whole in step 1.
 * A small file, or one the addon cannot serve in the background, loads at once as before.
 */
export function openSession(
	engine: NativeEngine,
	ctx: ExtensionContext,
	state: SyncState,
	after: () => void,
	report: (error: unknown) => void,
): void {
	const sm = ctx.sessionManager;
	const sessionId = sm.getSessionId();
	const file = sm.getSessionFile();
	const leaf = sm.getLeafId();
	let pending: Promise<boolean> | null = null;
	try {
		pending = file && leaf && existsSync(file) ? (engine.loadSessionFileInBackground(sessionId, file, leaf)?.run() ?? null) : null;
	} catch (error) {
		report(error);
	}
	const token = {};
	state.loadToken = token;
	if (!pending) {
		state.loading = undefined;
		try {
			fullSync(engine, ctx, state);
		} catch (error) {
			report(error);
		}
		after();
		return;
	}
	const loading = (async () => {
		let found = false;
		try {
			found = await pending;
		} catch (error) {
			report(error);
		}
		// A later session_start began its own load: this one is stale.
		if (state.loadToken !== token) return;
		let skimmed = false;
		try {
			if (found && engine.finishLoad()) {
				state.sessionId = sessionId;
				sync(engine, ctx, state);
				skimmed = !engine.historyComplete();
			} else {
				fullSync(engine, ctx, state);
			}
		} catch (error) {
			report(error);
		}
		if (skimmed) completeHistory(engine, ctx, state, token, report);
		after();
	})().finally(() => {
		if (state.loading === loading) state.loading = undefined;
	});
	state.loading = loading;
}

/**
 * Step 2 of {@link openSession}: read the whole file on the libuv pool and swap the complete
 * history in. Should that fail, the session is reloaded in full (as a failed start-up load is).
 */
function completeHistory(engine: NativeEngine, ctx: ExtensionContext, state: SyncState, token: object, report: (error: unknown) => void): void {
	let pending: Promise<boolean> | null = null;
	try {
		pending = engine.beginCompleteLoad()?.run() ?? null;
	} catch (error) {
		report(error);
	}
	const completing = (async () => {
		let read = false;
		try {
			read = pending ? await pending : false;
		} catch (error) {
			report(error);
		}
		if (state.loadToken !== token) return;
		try {
			if (!(read && engine.finishCompleteLoad()) && !engine.historyComplete()) fullSync(engine, ctx, state);
		} catch (error) {
			report(error);
		}
	})().finally(() => {
		if (state.completing === completing) state.completing = undefined;
	});
	state.completing = completing;
}

/** Run `body` once the start-up load and the completion of the history are done ({@link openSession}). */
export function whenComplete<R>(state: SyncState, body: () => R): R | Promise<Awaited<R>> {
	const pending = state.loading ?? state.completing;
	if (!pending) return body();
	return pending.then(() => whenComplete(state, body)) as Promise<Awaited<R>>;
}

/** Run `body` once no start-up load is in flight (at once, without a promise, when none is). */
export function whenLoaded<R>(state: SyncState, body: () => R): R | Promise<Awaited<R>> {
	const loading = state.loading;
	if (!loading) return body();
	return loading.then(() => whenLoaded(state, body)) as Promise<Awaited<R>>;
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
	if (plan.continuation) {
		drafts.push({ type: "custom_message", customType: plan.continuation.customType, content: plan.continuation.content, display: false });
	}
	return { markerId, drafts };
}
