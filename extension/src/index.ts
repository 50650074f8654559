// Relay for Pi: registers tools, hooks and the /relay command, and routes each of them through the
// Rust engine. See ARCHITECTURE.md: this file translates, the engine decides.
import { CONFIG_DIR_NAME, VERSION, type ExtensionAPI, type ExtensionContext, type ExtensionEvent } from "@earendil-works/pi-coding-agent";
import type { TSchema } from "typebox";
import * as piAi from "@earendil-works/pi-ai";
import * as adapter from "./adapter.ts";
import { ask, drive, messageOf, moment, when, type Runtime } from "./adapter.ts";
import type { Description, Event, HookAnswer, Input, Output } from "./generated/wire.ts";
import { jobRecords, loadGuards, type GuardsVet } from "./integrations.ts";
import { loadSettings, relaunchKeyFile, takeWrapperHandover } from "./settings.ts";
import { registerRenderers } from "./tui.ts";
import { native } from "./native.ts";

// A Pi event as the generic hook translation reads it.
type PiEvent = Record<string, unknown> & { messages?: unknown[]; entries?: never[]; preparation?: { tokensBefore?: number } };

/** The facts a hook carries that the host computes rather than copies from Pi's event (typed by Pi's event of that name). */
const COMPUTED: { [K in ExtensionEvent["type"]]?: (event: Extract<ExtensionEvent, { type: K }>, ctx: ExtensionContext) => Record<string, unknown> } = {
	turn_end: (event, ctx) => ({ toolResults: event.toolResults.length, aborted: ctx.signal?.aborted === true }),
	agent_before_settle: () => ({ jobs: jobRecords() ?? undefined }),
	session_before_tree: ({ preparation }) => ({
		userWantsSummary: preparation.userWantsSummary,
		summarizing: preparation.entriesToSummarize.map((e) => e.type),
	}),
};

/** The fields of `event` named in `fields` that have a value. */
function pick(event: PiEvent, fields: string[]): Record<string, unknown> {
	return Object.fromEntries(fields.filter((f) => event[f] !== undefined && event[f] !== null && event[f] !== "").map((f) => [f, event[f]]));
}

export default function relay(pi: ExtensionAPI) {
	// First, before any tool can run: pi-session's relaunch key and variables leave Pi's environment.
	takeWrapperHandover();
	// Without a core for this machine (the error names the platform and how to build one), or on a
	// Pi the engine does not support, register nothing: say so once and let Pi run without Relay.
	let rt = undefined as never as Runtime;
	let description: Description;
	try {
		rt = { pi, engine: new (native().Engine)(), state: {}, subagent: false };
		// The JavaScript runtime (`bun <version>` or `node <version>`) is a fact for the engine's host check.
		const bun = (process.versions as Record<string, string | undefined>).bun;
		const js = bun ? `bun ${bun}` : `node ${process.versions.node}`;
		const describe = { piVersion: String(VERSION), configDir: String(CONFIG_DIR_NAME), runtime: js, relaunchKeyFile: relaunchKeyFile() };
		description = ask(rt, { type: "describe", ...describe }) as Description;
		rt.routerApi = description.routerApi;
	} catch (error) {
		relaunchKeyFile(true);
		description = { refusal: messageOf(error) } as Description;
	}
	if (description.refusal !== null) {
		const text = description.refusal || "relay: no Relay core";
		console.error(text);
		pi.on("session_start", (_event, ctx) => void (ctx.hasUI && ctx.ui.notify(text, "error")));
		return;
	}
	// A session file named on Pi's command line is read while Pi is still starting.
	adapter.prefetchSession(rt);
	// Whether another Relay runtime was already bound in this process when this one started.
	const runtime = {};
	const lastResort = description.lastResort;

	// Serve `input` through the engine. A failure of Relay's (a Pi call that threw, an addon error)
	// goes back to the engine, whose failure policy answers for the hook and tells the user once;
	// when even that fails, the answer it described (`lastResort`). Nothing throws into Pi.
	const serve = (ctx: ExtensionContext, where: string, input: Input, signal?: AbortSignal): Output | Promise<Output> => {
		const failed = (error: unknown): Output => {
			const message = messageOf(error);
			try {
				return drive(rt, ctx, { type: "failed", hook: where, message }) as Output;
			} catch {
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
	const handle = (ctx: ExtensionContext, type: Event["type"], facts: object = {}, signal?: AbortSignal) =>
		serve(ctx, type, { type: "hook", observation: { moment: moment(ctx, rt), event: { type, ...facts } as Event } }, signal);
	const configure = (ctx: ExtensionContext, guardsError: string | null) =>
		serve(ctx, "configuration", { type: "configure", sources: loadSettings(pi, ctx, guardsError) });
	// The shared guard library, vetted by the engine before it is imported (integrations.ts).
	const guards = () => loadGuards((agentDir) => ask(rt, { type: "guards", agentDir }) as ReturnType<GuardsVet>);

	for (const spec of description.tools) {
		pi.registerTool({
			name: spec.name,
			label: spec.label,
			description: spec.description,
			parameters: spec.parameters as TSchema,
			// The engine renames the names Codex-trained models use (file_path, pattern, offset, …) and
			// refuses unknown ones, naming the right parameter (a throw is the tool's error result).
			prepareArguments(args: unknown) {
				let prepared: { args?: unknown; error?: string };
				try {
					prepared = ask(rt, { type: "prepare", tool: spec.name, args: args ?? {} }) as typeof prepared;
				} catch (error) {
					console.error(`relay: ${spec.name} arguments: ${messageOf(error)}`);
					return args as never;
				}
				if (prepared.error !== undefined) throw new Error(prepared.error);
				// Pi's own schema check runs here first: its error repeats every argument (a 100 MB
				// argument of the wrong type would be a 100 MB tool result); the engine tells its
				// refusal from anything else and gives the error without the copy.
				try {
					piAi.validateToolArguments?.(
						{ name: spec.name, description: "", parameters: spec.parameters as TSchema },
						{ type: "toolCall", id: "relay-schema-check", name: spec.name, arguments: prepared.args as never },
					);
				} catch (error) {
					const refused = ask(rt, { type: "schema_refused", tool: spec.name, message: messageOf(error) }) as { error?: string };
					if (refused.error !== undefined) throw new Error(refused.error);
				}
				return prepared.args as never;
			},
			async execute(toolCallId, params, signal, _onUpdate, ctx) {
				// A tool waits for the start-up load; one that reads earlier windows, for the whole history.
				await when(rt, ctx, spec.needsHistory ? "history" : "window", () => undefined);
				const input: Input = { type: "tool", callId: toolCallId, name: spec.name, args: params ?? {}, moment: moment(ctx, rt, spec.usesPiUsage) };
				const reply = (await serve(ctx, spec.name, input, signal)).reply ?? lastResort[spec.name]!.reply!;
				return { content: [{ type: "text" as const, text: reply.text }], details: {}, isError: reply.isError, ...(reply.terminate ? { terminate: true } : {}) };
			},
		});
	}

	pi.on("session_start", async (_event, ctx) => {
		rt.subagent = adapter.bindRuntime(runtime);
		const guardsError = await guards();
		// A large session loads off Pi's event loop: this hook returns at once; configuration and
		// the engine's session_start follow once its window is in (unless the session ended first).
		adapter.openSession(rt, ctx);
		const session = rt.state.token;
		void when(rt, ctx, "window", () => {
			if (rt.state.token !== session) return;
			configure(ctx, guardsError);
			// Pi 1.3 lets a /reload through in the middle of a run: the new engine starts inside it.
			handle(ctx, "session_start", { runActive: !ctx.isIdle() });
		});
	});
	pi.on("session_shutdown", (_event, ctx) => {
		// A load still in flight is for nobody now (`pi -p` ends, /quit, a switch or /reload): it
		// stops, and its result never reaches this ctx, which Pi makes stale as the session ends.
		if (adapter.closeSession(rt)) handle(ctx, "session_shutdown");
		adapter.releaseRuntime(runtime);
	});
	pi.on("input", (_event, ctx) =>
		when(rt, ctx, "window", async () => {
			configure(ctx, await guards());
			// The engine may ask for a reset before this input runs (idle-input recovery): the
			// input's operation then waits for Pi's compaction; the input goes on either way.
			await handle(ctx, "input");
			return undefined;
		}),
	);

	// How the engine's output returns to Pi, by the hook's `answer` (generated/wire.ts: HookAnswer).
	const answers: Record<HookAnswer, (out: Output, event: PiEvent, ctx: ExtensionContext) => unknown> = {
		observe: () => undefined,
		cancel: cancelled,
		block: ({ result }) => (result?.kind === "block" ? { block: true, reason: result.reason, terminate: result.terminate } : undefined),
		request: (out, event) => {
			const messages = adapter.request(event.messages!, out, rt.state.stubs);
			return messages ? { messages } : undefined;
		},
		// Pi's drafts, then the engine's (a clearing, a continuation, a reset), and its `continue`.
		boundary: (out, event, ctx) => (out.drafts.length ? { entries: [...event.entries!, ...adapter.drafts(pi, ctx, out)], continue: out.continue === true } : undefined),
		compaction: (out, event, ctx) => {
			if (out.result?.kind !== "reset") return cancelled(out);
			try {
				const { summary, details, firstKeptEntryId } = adapter.drafts(pi, ctx, out)[0] as { summary: string; details: unknown; firstKeptEntryId: string | null };
				return { compaction: { summary, details, firstKeptEntryId: firstKeptEntryId ?? "", tokensBefore: event.preparation?.tokensBefore ?? 0 } };
			} catch (error) {
				return cancelled(serve(ctx, "session_before_compact", { type: "failed", hook: "session_before_compact", message: messageOf(error) }) as Output);
			}
		},
	};
	// Every other hook as the engine lists it: the event's facts once what it waits for is loaded,
	// then the engine's answer (an observed hook does not wait for the engine's jobs).
	const boundary: Record<string, (event: never, ctx: ExtensionContext) => unknown> = {};
	for (const hook of description.hooks) {
		const handler = (event: PiEvent, ctx: ExtensionContext) => {
			const facts = { ...pick(event, hook.fields), ...(COMPUTED as Record<string, (e: PiEvent, c: ExtensionContext) => object>)[hook.name]?.(event, ctx) };
			const serveHook = () => {
				const out = handle(ctx, hook.name as Event["type"], facts, hook.abortable ? ctx.signal : undefined);
				return hook.answer === "observe" ? undefined : then(out, (o) => answers[hook.answer](o, event, ctx));
			};
			return when(rt, ctx, hook.waits, serveHook);
		};
		if (hook.boundary) boundary[hook.name] = handler as never;
		else pi.on(hook.name as "context", handler as never);
	}
	// Pi's boundary hooks: subscribed only while the engine needs them (its `boundary` answer).
	adapter.bindBoundary(rt, boundary as never);

	registerRenderers(pi, description.renderedTypes);

	const command = description.command;
	pi.registerCommand(command.name, {
		description: command.description,
		getArgumentCompletions: (prefix: string) => command.completions.filter((c) => c.startsWith(prefix)).map((c) => ({ value: c, label: c })),
		handler: async (args, ctx) => {
			await when(rt, ctx, "window", () => undefined);
			handle(ctx, "command", { args: args.trim() });
		},
	});
}
