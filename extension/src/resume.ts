// Resume checks: the facts the engine needs to pick the operator's command, and carrying out what
// it decided. The engine decides whether a check runs and which command; the command runs in the
// addon on the libuv pool, never on Pi's event loop.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { ContextMessage, Marker, ResumeFacts } from "./generated/wire.ts";
import type { NativeEngine } from "./native.ts";

/** `PI_RESUME_CHECK` and the session's name, as they are now (facts only). */
export function resumeFacts(ctx: ExtensionContext): string {
	const facts: ResumeFacts = {
		env: process.env.PI_RESUME_CHECK ?? null,
		sessionName: ctx.sessionManager.getSessionName() ?? null,
	};
	return JSON.stringify(facts);
}

/**
 * Right before a handoff is written: the check the engine hands out for these arguments (none when
 * it says so), resolved to the result JSON `tool("context_handoff", …)` takes. Rejects on failure.
 */
export async function checkBeforeHandoff(engine: NativeEngine, argsJson: string, momentJson: string, gitJson: string | null, ctx: ExtensionContext): Promise<string | null> {
	const pending = engine.handoffResumeCheck(argsJson, momentJson, gitJson, resumeFacts(ctx));
	return pending ? await pending.run() : null;
}

/**
 * After a committed handoff reset, before the window's first request: run the check the engine
 * hands out (at most once per window) and append its record, which the mirror then holds.
 * Returns whether a record was appended (the caller syncs the mirror).
 */
export async function runResetCheck(pi: ExtensionAPI, engine: NativeEngine, ctx: ExtensionContext, momentJson: () => string): Promise<boolean> {
	if (!engine.resumeCheckDue()) return false;
	const pending = engine.resetResumeCheck(momentJson(), resumeFacts(ctx));
	if (!pending) return false;
	const record = JSON.parse(await pending.run()) as Marker;
	pi.appendEntry(record.customType, record.data);
	return true;
}

/** The visible messages of a request with the window's resume check inserted where the engine says. */
export function withResumeMessage<M>(messages: M[], message: ContextMessage): M[] {
	const inserted = {
		role: "custom",
		customType: message.customType,
		content: message.content,
		display: false,
		timestamp: message.timestamp,
	} as unknown as M;
	return [...messages.slice(0, message.index), inserted, ...messages.slice(message.index)];
}
