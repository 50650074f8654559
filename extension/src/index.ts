// Relay for Pi: registers tools, hooks and the /relay command, and routes each of them through the
// Rust engine. See ARCHITECTURE.md: this file translates, the engine decides.
import {
	CONFIG_DIR_NAME,
	VERSION,
	type AgentBeforeSettleEvent,
	type AgentSettledEvent,
	type ExtensionAPI,
	type ExtensionContext,
	type MessageEndEvent,
	type SessionCompactFailedEvent,
	type ToolResultEvent,
	type TurnEndEvent,
} from "@earendil-works/pi-coding-agent";
import type { TSchema } from "typebox";
import * as piAi from "@earendil-works/pi-ai";
import {
	ask,
	bindBoundary,
	boundaryAnswer,
	bindRuntime,
	drive,
	messageOf,
	moment,
	openSession,
	prefetchSession,
	releaseRuntime,
	resetDrafts,
	closeSession,
	whenComplete,
	whenLoaded,
	request,
	type EventFields,
	type Runtime,
} from "./adapter.ts";
import type { Description, Event, Input, Output } from "./generated/wire.ts";
import { jobRecords, loadGuards, type GuardsVet } from "./integrations.ts";
import { dropRelaunchKeyFile, loadSettings, relaunchKeyFile, takeWrapperHandover } from "./settings.ts";
import { registerRenderers } from "./tui.ts";
import { native } from "./native.ts";

/** The JavaScript runtime this host runs on: `bun <version>` or `node <version>` (a fact for the engine's host check). */
function runtimeName(): string {
	const bun = (process.versions as Record<string, string | undefined>).bun;
	return bun ? `bun ${bun}` : `node ${process.versions.node}`;
}

export default function relay(pi: ExtensionAPI) {
	// First, before any tool can run and whatever follows: pi-session's relaunch key and variables
	// leave Pi's environment (settings.ts).
	takeWrapperHandover();
	// Without a core for this machine, or on a Pi older than Relay supports, register nothing: say
	// so once and let Pi run without Relay (the engine decides which versions are supported).
	let rt: Runtime;
	let description: Description | undefined;
	let refusal: string | null;
	try {
		rt = { pi, engine: new (native().Engine)(), state: {}, subagent: false };
		const describe = { piVersion: String(VERSION), configDir: String(CONFIG_DIR_NAME), runtime: runtimeName(), relaunchKeyFile: relaunchKeyFile() };
		description = ask(rt, { type: "describe", ...describe }) as Description;
		refusal = description.refusal;
	} catch (error) {
		// No core for this machine: the message names the platform and the command that builds it.
		refusal = messageOf(error);
		dropRelaunchKeyFile();
		rt = undefined as never;
	}
	if (refusal || !description) {
		const text = refusal || "relay: no description";
		console.error(text);
		pi.on("session_start", (_event, ctx) => {
			if (ctx.hasUI) ctx.ui.notify(text, "error");
		});
		return;
	}
	// A session file named on Pi's command line is read while Pi is still starting.
	prefetchSession(rt);
	// Whether another Relay runtime was already bound in this process when this one started.
	const runtime = {};
	const lastResort = description.lastResort;

	/**
	 * Serve `input` through the engine; a failure of Relay's (a Pi call that threw, an addon
	 * error) goes back to the engine, whose failure policy answers for the hook (a compaction
	 * hook is cancelled while Relay's windows are on) and tells the user once. Nothing throws
	 * into Pi.
	 */
	const serve = (ctx: ExtensionContext, where: string, input: Input, signal?: AbortSignal): Output | Promise<Output> => {
		const failed = (error: unknown): Output => {
			const message = messageOf(error);
			try {
				return drive(rt, ctx, { type: "failed", hook: where, message }) as Output;
			} catch {
				// The engine itself cannot answer: the answer it described for this hook or tool
				// (a compaction hook is cancelled: Pi's summarizer stays away).
				console.error(`relay: ${where} failed: ${message}`);
				return lastResort[where] ?? lastResort[""]!;
			}
		};
		try {
			const out = drive(rt, ctx, input, signal);
			return out instanceof Promise ? out.catch(failed) : out;
		} catch (error) {
			return failed(error);
		}
	};
	const cancelled = (out: Output) => (out.result?.kind === "cancel" ? { cancel: true as const } : undefined);
	const then = <R>(out: Output | Promise<Output>, body: (out: Output) => R): R | Promise<R> => (out instanceof Promise ? out.then(body) : body(out));
	const handleNow = <T extends Event["type"]>(ctx: ExtensionContext, type: T, extra = {} as EventFields<T>, signal?: AbortSignal) =>
		serve(ctx, type, { type: "hook", observation: { moment: moment(ctx, rt), event: { type, ...extra } as Event } }, signal);
	// Every other hook and tool waits for the start-up load's current window first.
	const handle = <T extends Event["type"]>(ctx: ExtensionContext, type: T, extra = {} as EventFields<T>, signal?: AbortSignal) =>
		whenLoaded(rt.state, () => handleNow(ctx, type, extra, signal));

	const configure = (ctx: ExtensionContext, guardsError: string | null) =>
		serve(ctx, "configuration", { type: "configure", sources: loadSettings(pi, ctx, guardsError) });
	// The shared guard library, vetted by the engine before it is imported (integrations.ts).
	const guards = () => loadGuards((agentDir) => ask(rt, { type: "guards", agentDir }) as ReturnType<GuardsVet>);

	for (const spec of description.tools) {
		pi.registerTool({
			name: spec.name,
			label: spec.label,
			description: spec.description,
			// A plain JSON Schema generated from the Rust argument structs (crates/relay-core/src/args.rs).
			parameters: spec.parameters as TSchema,
			// Before Pi checks the arguments against the schema: the engine renames the names
			// Codex-trained models use (file_path, pattern, offset, …) and refuses unknown ones with
			// an error naming the right parameter (a throw here is the tool's error result).
			prepareArguments(args: unknown) {
				let prepared: { args?: unknown; error?: string };
				try {
					prepared = ask(rt, { type: "prepare", tool: spec.name, args: args ?? {} }) as typeof prepared;
				} catch (error) {
					console.error(`relay: ${spec.name} arguments: ${messageOf(error)}`);
					return args as never;
				}
				if (prepared.error !== undefined) throw new Error(prepared.error);
				// Pi checks the arguments against the schema next, and its error repeats every
				// argument: a 100 MB argument of the wrong type would be a 100 MB tool result. Run
				// Pi's own check here; the engine tells its refusal from anything else and gives the
				// error without the copy.
				if (typeof piAi.validateToolArguments === "function") {
					try {
						piAi.validateToolArguments(
							{ name: spec.name, description: "", parameters: spec.parameters as TSchema },
							{ type: "toolCall", id: "relay-schema-check", name: spec.name, arguments: prepared.args as never },
						);
					} catch (error) {
						const refused = ask(rt, { type: "schema_refused", tool: spec.name, message: messageOf(error) }) as { error?: string };
						if (refused.error !== undefined) throw new Error(refused.error);
					}
				}
				return prepared.args as never;
			},
			async execute(toolCallId, params, signal, _onUpdate, ctx) {
				// A tool called while the start-up load is in flight waits for it; one that reads
				// earlier windows (the history tools) waits for the whole history.
				await (spec.needsHistory ? whenComplete(rt, ctx, () => undefined) : whenLoaded(rt.state, () => undefined));
				const out = await serve(
					ctx,
					spec.name,
					{ type: "tool", callId: toolCallId, name: spec.name, args: params ?? {}, moment: moment(ctx, rt, spec.usesPiUsage) },
					signal,
				);
				const reply = out.reply ?? lastResort[spec.name]!.reply!;
				return {
					content: [{ type: "text" as const, text: reply.text }],
					details: {},
					isError: reply.isError,
					...(reply.terminate ? { terminate: true } : {}),
				};
			},
		});
	}

	pi.on("session_start", async (_event, ctx) => {
		rt.subagent = bindRuntime(runtime);
		// The shared guard library, when the setup has one (consulted live by every moment).
		const guardsError = await guards();
		// A large session is loaded off Pi's event loop: this hook returns at once, every other
		// hook and tool waits for its current window, and what reads earlier windows waits for
		// the whole history (see openSession); configuration and the engine's session_start
		// follow the first step.
		openSession(
			rt,
			ctx,
			() => {
				configure(ctx, guardsError);
				// (The engine hands a /reload's new engine the session's last /relay on|off.)
				// Pi 1.3 lets a /reload through in the middle of a run: the new engine starts inside it.
				handleNow(ctx, "session_start", { runActive: !ctx.isIdle() });
			},
			(error) => serve(ctx, "loading the session", { type: "failed", hook: "session_start", message: messageOf(error) }),
		);
	});
	// A navigation may land in an earlier window: it waits for the whole history.
	pi.on("session_before_tree", (event, ctx) =>
		whenComplete(rt, ctx, () => {
			const { userWantsSummary, entriesToSummarize } = event.preparation;
			const summarizing = entriesToSummarize.map((e) => e.type);
			return then(handleNow(ctx, "session_before_tree", { userWantsSummary, summarizing }), cancelled);
		}),
	);
	pi.on("session_tree", (_event, ctx) => whenComplete(rt, ctx, () => void handleNow(ctx, "session_tree")));
	pi.on("session_shutdown", (_event, ctx) => {
		// A load still in flight is for nobody now (`pi -p` ends, /quit, a switch or /reload): it
		// stops, Pi does not wait for it, and its result never reaches this ctx, which Pi makes
		// stale as the session ends.
		if (closeSession(rt)) handleNow(ctx, "session_shutdown");
		releaseRuntime(runtime);
	});
	pi.on("input", (_event, ctx) =>
		whenLoaded(rt.state, async () => {
			configure(ctx, await guards());
			// The engine may ask for a reset before this input runs (idle-input recovery): Pi's
			// compaction is awaited here (its hook gets Relay's reset); the input goes on either way.
			const out = await handleNow(ctx, "input");
			if (out.result?.kind !== "compact") return undefined;
			const { attempt } = out.result;
			const failed = (error: unknown) => void handleNow(ctx, "compact_error", { attempt, errorMessage: messageOf(error) });
			await new Promise<void>((resolve) => {
				try {
					ctx.compact({ onComplete: () => resolve(), onError: (error) => resolve(failed(error)) });
				} catch (error) {
					resolve(failed(error));
				}
			});
			return undefined;
		}),
	);
	// The hooks the engine only observes: each event's facts, once the start-up load is done.
	const observe =
		<T extends Event["type"], E>(type: T, fields: (event: E) => EventFields<T>) =>
		(event: E, ctx: ExtensionContext) =>
			whenLoaded(rt.state, () => void handleNow(ctx, type, fields(event)));
	pi.on("before_agent_start", observe("before_agent_start", () => ({})));
	// The window's checks (resume, watch, stale handoff) run as jobs under the run's abort signal
	// (Esc ends the wait and their work); the answer is what every request of the window carries.
	pi.on("context", (event, ctx) =>
		then(handle(ctx, "context", {}, ctx.signal), (out) => {
			const messages = request(event.messages, out, rt.state.stubs);
			return messages ? { messages } : undefined;
		}),
	);
	pi.on("tool_call", (event, ctx) =>
		then(handle(ctx, "tool_call", { toolName: event.toolName, toolCallId: event.toolCallId }), (out) =>
			out.result?.kind === "block" ? { block: true, reason: out.result.reason, terminate: out.result.terminate } : undefined,
		),
	);
	pi.on("tool_result", observe("tool_result", (e: ToolResultEvent) => ({ toolName: e.toolName, toolCallId: e.toolCallId, isError: e.isError })));
	pi.on("turn_start", observe("turn_start", () => ({})));
	// Each message as it ends, before Pi appends it: the coming boundary's usage (the boundary
	// hooks follow the engine's answer) and, under a router model, the model that answered.
	pi.on("message_end", observe("message_end", (e: MessageEndEvent) => ({ message: e.message })));
	// Pi's boundary hooks: subscribed only while the engine needs them (its `boundary` answer).
	bindBoundary(rt, {
		turn_end: (event: TurnEndEvent, ctx: ExtensionContext) =>
			then(
				handle(ctx, "turn_end", { toolResults: event.toolResults.length, outcome: event.outcome, aborted: ctx.signal?.aborted === true, continue: event.continue }),
				(out) => boundaryAnswer(pi, ctx, event.entries, out),
			),
		agent_before_settle: (event: AgentBeforeSettleEvent, ctx: ExtensionContext) =>
			then(handle(ctx, "agent_before_settle", { outcome: event.outcome, continue: event.continue, jobs: jobRecords() ?? undefined }), (out) =>
				boundaryAnswer(pi, ctx, event.entries, out),
			),
	});
	pi.on("agent_end", observe("agent_end", () => ({})));
	pi.on("agent_settled", observe("agent_settled", (e: AgentSettledEvent) => ({ aborted: e.aborted })));
	pi.on(
		"session_compact_failed",
		observe("session_compact_failed", (e: SessionCompactFailedEvent) => ({
			reason: e.reason,
			aborted: e.aborted === true,
			...(e.errorMessage ? { errorMessage: e.errorMessage } : {}),
		})),
	);
	// Every compaction hook is answered with a reset or a cancel while Relay's windows are on, also
	// when something fails on the way (the engine's failure policy): Pi's summarizer never runs.
	pi.on("session_before_compact", (event, ctx) =>
		then(
			handle(ctx, "session_before_compact", {
				reason: event.reason,
				willRetry: event.willRetry,
				...(event.customInstructions ? { customInstructions: event.customInstructions } : {}),
			}),
			(out) => {
				const result = out.result;
				if (result?.kind !== "reset") return cancelled(out);
				try {
					const { markerId } = resetDrafts(pi, ctx, result.plan);
					const { summary, details } = result.plan;
					return { compaction: { summary, details, firstKeptEntryId: markerId ?? "", tokensBefore: event.preparation?.tokensBefore ?? 0 } };
				} catch (error) {
					return cancelled(serve(ctx, "session_before_compact", { type: "failed", hook: "session_before_compact", message: messageOf(error) }) as Output);
				}
			},
		),
	);

	registerRenderers(pi, description.renderedTypes);

	const command = description.command;
	pi.registerCommand(command.name, {
		description: command.description,
		getArgumentCompletions: (prefix: string) => command.completions.filter((c) => c.startsWith(prefix)).map((c) => ({ value: c, label: c })),
		handler: async (args, ctx) => {
			await whenLoaded(rt.state, () => undefined);
			handleNow(ctx, "command", { args: args.trim() });
		},
	});
}
