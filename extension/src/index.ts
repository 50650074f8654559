// Relay for Pi: registers tools, hooks and the /relay command, and routes each of them through the
// Rust engine. See ARCHITECTURE.md: this file translates, the engine decides.
import { VERSION, type ExtensionAPI, type ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { TSchema } from "typebox";
import * as piAi from "@earendil-works/pi-ai";
import {
	bindRuntime,
	moment,
	observation,
	openSession,
	recallToggle,
	releaseRuntime,
	rememberToggle,
	resetDrafts,
	run,
	sync,
	whenComplete,
	whenLoaded,
	type EventFields,
	type SyncState,
	type HookReply,
	type ToolReply,
} from "./adapter.ts";
import type { ContextMessage, Event, Marker, ToolSpec } from "./generated/wire.ts";
import { checkBeforeHandoff, runResetCheck, withResumeMessage } from "./resume.ts";
import { integrationFacts, jobRecords, loadGuards, storeFacts } from "./integrations.ts";
import { loadSettings, takeWrapperHandover } from "./settings.ts";
import { registerRenderers } from "./tui.ts";
import { native, type NativeEngine } from "./native.ts";

export default function relay(pi: ExtensionAPI) {
	// First, before any tool can run and whatever follows: pi-session's relaunch key and variables
	// leave Pi's environment (settings.ts).
	takeWrapperHandover();
	// Without a core for this machine, or on a Pi older than Relay supports, register nothing: say
	// so once and let Pi run without Relay (the engine decides which versions are supported).
	let refusal: string | null;
	try {
		refusal = native().piVersionRefusal(String(VERSION));
	} catch (error) {
		// No core for this machine: the message names the platform and the command that builds it.
		refusal = error instanceof Error ? error.message : String(error);
	}
	if (refusal) {
		console.error(refusal);
		pi.on("session_start", (_event, ctx) => {
			if (ctx.hasUI) ctx.ui.notify(refusal, "error");
		});
		return;
	}
	const engine: NativeEngine = new (native().Engine)();
	const state: SyncState = {};
	// Whether another Relay runtime was already bound in this process when this one started.
	const runtime = {};
	let subagent = false;

	// Nothing Relay does may throw into Pi (a throw in tool_call would block the tool): a failure,
	// a panic the addon caught included, is reported once per message (the UI's notification, else
	// stderr) and the hook carries on as if Relay were absent. After a panic the addon asks for a
	// full resync, which the next sync() does.
	const reported = new Set<string>();
	const report = (where: string, error: unknown, ctx?: ExtensionContext) => {
		const text = `relay: ${where} failed: ${error instanceof Error ? error.message : String(error)}`;
		if (reported.has(text)) return;
		reported.add(text);
		try {
			if (ctx?.hasUI) ctx.ui.notify(text, "error");
			else console.error(text);
		} catch {
			console.error(text);
		}
	};

	const handle = <T extends Event["type"]>(ctx: ExtensionContext, type: T, extra = {} as EventFields<T>): HookReply => {
		try {
			sync(engine, ctx, state);
			const reply = JSON.parse(engine.handle(observation(ctx, type, extra, subagent))) as HookReply;
			run(pi, ctx, reply.effects);
			return reply;
		} catch (error) {
			report(type, error, ctx);
			return { effects: [] };
		}
	};

	const configure = (ctx: ExtensionContext) => {
		try {
			const reply = JSON.parse(engine.configure(JSON.stringify(loadSettings(pi, ctx)))) as HookReply;
			run(pi, ctx, reply.effects);
		} catch (error) {
			report("configuration", error, ctx);
		}
	};

	for (const spec of JSON.parse(engine.toolSpecs()) as ToolSpec[]) {
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
					prepared = JSON.parse(engine.prepareArguments(spec.name, JSON.stringify(args ?? {})));
				} catch (error) {
					report(`${spec.name} arguments`, error);
					return args as never;
				}
				if (prepared.error !== undefined) throw new Error(prepared.error);
				// Pi checks the arguments against the schema next, and its error repeats every
				// argument: a 100 MB argument of the wrong type would be a 100 MB tool result. Run
				// Pi's own check here and refuse with its list of what is wrong, without the copy.
				if (typeof piAi.validateToolArguments === "function") {
					try {
						piAi.validateToolArguments(
							{ name: spec.name, description: "", parameters: spec.parameters as TSchema },
							{ type: "toolCall", id: "relay-schema-check", name: spec.name, arguments: prepared.args as never },
						);
					} catch (error) {
						const message = error instanceof Error ? error.message : String(error);
						// Anything but Pi's refusal (another Pi's signature): Pi's own check decides.
						if (!message.startsWith("Validation failed for tool")) return prepared.args as never;
						throw new Error(native().schemaRefusal(spec.name, message.slice(0, 65_536)));
					}
				}
				return prepared.args as never;
			},
			async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
				let reply: ToolReply;
				try {
					// A tool called while the start-up load is in flight waits for it; one that reads
					// earlier windows (the history tools) waits for the whole history.
					await (spec.needsHistory ? whenComplete : whenLoaded)(state, () => undefined);
					// A handoff's git metadata, and what it records of the workspace for the next
					// window's stale-handoff check, are collected off Pi's event loop within one
					// deadline; the engine work then runs at once with the facts (unknown if
					// collecting failed).
					const git =
						spec.collectsGit
							? await native().collectGit(ctx.cwd, JSON.stringify(params ?? {})).catch((error: unknown) => {
									report("collecting git metadata", error, ctx);
									return null;
								})
							: null;
					sync(engine, ctx, state);
					const args = JSON.stringify(params ?? {});
					// The operator's resume check, right before a handoff is written (the engine
					// decides whether one runs; it runs off Pi's event loop). A failure leaves the
					// handoff without it.
					const check = spec.collectsGit
						? await checkBeforeHandoff(engine, args, JSON.stringify(moment(ctx, false, subagent)), git, ctx).catch((error: unknown) => {
								report("the resume check", error, ctx);
								return null;
							})
						: null;
					// The optional integrations: the stores on disk are read off Pi's event loop, the
					// in-process registries right before the handoff is rendered.
					const stores = spec.collectsGit
						? await native().collectStores(storeFacts(ctx)).catch((error: unknown) => {
								report("reading the integration stores", error, ctx);
								return null;
							})
						: null;
					const integrations = spec.collectsGit ? integrationFacts(stores ? JSON.parse(stores) : null) : null;
					sync(engine, ctx, state);
					reply = JSON.parse(
						engine.tool(spec.name, args, JSON.stringify(moment(ctx, spec.usesPiUsage, subagent)), git, check, integrations),
					) as ToolReply;
					if (reply.persist) {
						pi.appendEntry(reply.persist.customType, reply.persist.data);
						sync(engine, ctx, state);
					}
					run(pi, ctx, reply.effects);
				} catch (error) {
					report(spec.name, error, ctx);
					reply = { text: `${spec.name} failed inside Relay: ${error instanceof Error ? error.message : String(error)}`, isError: true };
				}
				return {
					content: [{ type: "text" as const, text: reply.text }],
					details: {},
					isError: reply.isError,
					...(reply.terminate ? { terminate: true } : {}),
				};
			},
		});
	}

	pi.on("session_start", async (event, ctx) => {
		subagent = bindRuntime(runtime);
		// The shared guard library, when the setup has one (consulted live by every moment).
		await loadGuards();
		// A large session is loaded off Pi's event loop: this hook returns at once, every other
		// hook and tool waits for its current window, and what reads earlier windows waits for
		// the whole history (see openSession); configuration and the engine's session_start
		// follow the first step.
		openSession(
			engine,
			ctx,
			state,
			() => {
				configure(ctx);
				// `/relay on|off` outlives the engine that /reload re-creates: the user's last toggle of
				// this session in this process is handed to the new engine before anything else.
				const toggle = recallToggle(ctx.sessionManager.getSessionId());
				if (toggle) handle(ctx, "command", { args: toggle });
				handle(ctx, "session_start");
			},
			(error) => report("loading the session", error, ctx),
		);
	});
	// A navigation may land in an earlier window: it waits for the whole history.
	pi.on("session_before_tree", (event, ctx) =>
		whenComplete(state, () => {
			const preparation = event.preparation;
			const resetsToSummarize = preparation.userWantsSummary ? preparation.entriesToSummarize.filter((e) => e.type === "compaction").length : 0;
			const reply = handle(ctx, "session_before_tree", { userWantsSummary: preparation.userWantsSummary, resetsToSummarize });
			if (reply.result?.kind === "cancel") return { cancel: true };
			return undefined;
		}),
	);
	pi.on("session_tree", (_event, ctx) =>
		whenComplete(state, () => {
			handle(ctx, "session_tree");
		}),
	);
	pi.on("session_shutdown", (event, ctx) =>
		whenLoaded(state, () => {
			handle(ctx, "session_shutdown");
			releaseRuntime(runtime);
		}),
	);
	pi.on("input", (_event, ctx) =>
		whenLoaded(state, async () => {
			await loadGuards();
			configure(ctx);
			// The engine may ask for the window to be reset before this input runs (idle-input
			// recovery): Pi's compaction is started and awaited here, its hook gets Relay's reset, and
			// the input then goes on unchanged whatever the outcome.
			const reply = handle(ctx, "input");
			if (reply.result?.kind === "compact") {
				const { attempt } = reply.result;
				await new Promise<void>((resolve) => {
					try {
						ctx.compact({
							onComplete: () => resolve(),
							onError: (error) => {
								handle(ctx, "compact_error", { attempt, errorMessage: error.message });
								resolve();
							},
						});
					} catch (error) {
						handle(ctx, "compact_error", { attempt, errorMessage: error instanceof Error ? error.message : String(error) });
						resolve();
					}
				});
			}
			return undefined;
		}),
	);
	pi.on("before_agent_start", (_event, ctx) =>
		whenLoaded(state, () => {
			handle(ctx, "before_agent_start");
			return undefined;
		}),
	);
	pi.on("context", (event, ctx) =>
		whenLoaded(state, async () => {
			handle(ctx, "context");
			// After a committed handoff reset, the operator's resume check runs once before the window's
			// first request; every request of the window then carries its result at the same place.
			try {
				if (await runResetCheck(pi, engine, ctx, () => JSON.stringify(moment(ctx, false, subagent)))) sync(engine, ctx, state);
				let messages = event.messages;
				const message = engine.resumeContext();
				if (message) messages = withResumeMessage(messages, JSON.parse(message) as ContextMessage);
				// The window's watch check: recorded jobs and watches the registry no longer lists.
				if (engine.watchCheckDue()) {
					const jobs = jobRecords();
					const record = engine.watchCheck(jobs ? JSON.stringify(jobs) : null, Date.now());
					if (record) {
						const marker = JSON.parse(record) as Marker;
						pi.appendEntry(marker.customType, marker.data);
						sync(engine, ctx, state);
					}
				}
				const watch = engine.watchContext();
				if (watch) messages = withResumeMessage(messages, JSON.parse(watch) as ContextMessage);
				// The window's stale-handoff check: what changed since its handoff recorded the
				// workspace (git and the file reads run off Pi's event loop, within one deadline).
				if (engine.staleCheckDue()) {
					const pending = engine.staleCheck();
					if (pending) {
						const marker = JSON.parse(await pending.run()) as Marker;
						pi.appendEntry(marker.customType, marker.data);
						sync(engine, ctx, state);
					}
				}
				const stale = engine.staleContext();
				if (stale) messages = withResumeMessage(messages, JSON.parse(stale) as ContextMessage);
				if (messages !== event.messages) return { messages };
			} catch (error) {
				report("the resume, watch or stale-handoff check", error, ctx);
			}
			return undefined;
		}),
	);
	pi.on("tool_call", (event, ctx) =>
		whenLoaded(state, () => {
			const reply = handle(ctx, "tool_call", { toolName: event.toolName, toolCallId: event.toolCallId });
			if (reply.result?.kind === "block") return { block: true, reason: reply.result.reason, terminate: reply.result.terminate };
			return undefined;
		}),
	);
	pi.on("tool_result", (event, ctx) =>
		whenLoaded(state, () => {
			handle(ctx, "tool_result", { toolName: event.toolName, toolCallId: event.toolCallId, isError: event.isError });
			return undefined;
		}),
	);
	pi.on("turn_end", (event, ctx) =>
		whenLoaded(state, () => {
			const reply = handle(ctx, "turn_end", { toolResults: event.toolResults.length });
			if (reply.result?.kind !== "reset") return undefined;
			const { drafts } = resetDrafts(pi, ctx, reply.result.plan);
			return { entries: [...event.entries, ...drafts], continue: reply.result.plan.continuation !== null || event.continue };
		}),
	);
	pi.on("agent_end", (_event, ctx) =>
		whenLoaded(state, () => {
			handle(ctx, "agent_end");
		}),
	);
	pi.on("agent_before_settle", (event, ctx) =>
		whenLoaded(state, () => {
			const jobs = jobRecords();
			const reply = handle(ctx, "agent_before_settle", { outcome: event.outcome, ...(jobs ? { jobs } : {}) });
			if (reply.result?.kind === "continue") {
				const { customType, content } = reply.result.continuation;
				return { entries: [...event.entries, { type: "custom_message", customType, content, display: false }], continue: true };
			}
			if (reply.result?.kind !== "reset") return undefined;
			const { drafts } = resetDrafts(pi, ctx, reply.result.plan);
			return { entries: [...event.entries, ...drafts], continue: reply.result.plan.continuation !== null || event.continue };
		}),
	);
	pi.on("agent_settled", (event, ctx) =>
		whenLoaded(state, () => {
			handle(ctx, "agent_settled", { aborted: event.aborted });
		}),
	);
	pi.on("session_compact_failed", (event, ctx) =>
		whenLoaded(state, () => {
			handle(ctx, "session_compact_failed", {
				reason: event.reason,
				aborted: event.aborted === true,
				...(event.errorMessage ? { errorMessage: event.errorMessage } : {}),
			});
		}),
	);
	pi.on("session_before_compact", (event, ctx) =>
		whenLoaded(state, () => {
			const reply = handle(ctx, "session_before_compact", {
				reason: event.reason,
				willRetry: event.willRetry,
				...(event.customInstructions ? { customInstructions: event.customInstructions } : {}),
			});
			const result = reply.result;
			if (result?.kind === "cancel") return { cancel: true };
			if (result?.kind === "reset") {
				const { markerId } = resetDrafts(pi, ctx, { ...result.plan, continuation: null });
				return {
					compaction: {
						summary: result.plan.summary,
						firstKeptEntryId: markerId ?? "",
						tokensBefore: event.preparation?.tokensBefore ?? 0,
						details: result.plan.details,
					},
				};
			}
			return undefined;
		}),
	);

	registerRenderers(pi);

	pi.registerCommand("relay", {
		description: "Relay context windows: /relay (status), /relay on, /relay off",
		getArgumentCompletions: (prefix: string) =>
			["on", "off", "status"].filter((c) => c.startsWith(prefix)).map((c) => ({ value: c, label: c })),
		handler: async (args, ctx) => {
			await whenLoaded(state, () => undefined);
			const trimmed = args.trim();
			handle(ctx, "command", { args: trimmed });
			rememberToggle(ctx.sessionManager.getSessionId(), trimmed);
		},
	});
}
