// The adapter between Pi and the Rust engine: it keeps the engine's branch mirror current, turns Pi
// events into observations, and carries out the effects the engine returns. It decides nothing.
import type { ExtensionAPI, ExtensionContext, SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import { existsSync } from "node:fs";
import type { NativeEngine } from "./native.ts";

export type Effect =
	| {
			kind: "send";
			customType: string;
			content: string;
			display: boolean;
			triggerTurn: boolean;
			deliverAs?: "steer" | "followUp" | "nextTurn";
			details?: unknown;
	  }
	| { kind: "append"; customType: string; data: unknown }
	| { kind: "notify"; text: string; level: "info" | "warning" | "error" }
	| { kind: "status"; text: string | null }
	| { kind: "log"; text: string };

export interface ResetPlan {
	marker: { customType: string; data: unknown };
	summary: string;
	details: unknown;
	continuation: { customType: string; content: string } | null;
}

export type HookResult =
	| { kind: "cancel" }
	| { kind: "block"; reason: string }
	| { kind: "reset"; plan: ResetPlan }
	| { kind: "continue"; continuation: { customType: string; content: string } };

export interface HookReply {
	effects: Effect[];
	result?: HookResult;
}

export interface ToolReply {
	text: string;
	isError: boolean;
	terminate?: boolean;
	persist?: { customType: string; data: unknown };
	details?: unknown;
	effects?: Effect[];
}

/**
 * Facts about the moment that every observation carries. Pi computes them; the engine judges them.
 * Pi's usage figure is only fetched for tools (`withUsage`): `getContextUsage()` walks the whole
 * branch, so hooks that run on every request let the engine estimate usage from its mirror instead.
 */
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

export function moment(ctx: ExtensionContext, withUsage = false, subagent = false): Record<string, unknown> {
	let usage: { tokens: number | null; contextWindow: number } | null = null;
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
		idle: ctx.isIdle(),
		hasPendingMessages: ctx.hasPendingMessages(),
		cwd: ctx.cwd,
		sessionId: ctx.sessionManager.getSessionId(),
		subagent,
	};
}

/**
 * Bring the engine's mirror up to the current leaf. Walks from the leaf back to the newest entry the
 * engine already knows, so the cost is the number of new entries, never the session length. After
 * the addon caught a panic (`needsResync()`), or in another session, it is a full resync instead.
 */
export function sync(engine: NativeEngine, ctx: ExtensionContext, state: { sessionId?: string }): void {
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
export function fullSync(engine: NativeEngine, ctx: ExtensionContext, state: { sessionId?: string }): void {
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
			case "append":
				pi.appendEntry(effect.customType, effect.data);
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
