// Test harness: the real Pi agent loop (SDK AgentSession, SessionManager, SettingsManager) with
// Relay loaded from extension/src and pi-ai's faux provider scripting the model's replies.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { fauxAssistantMessage, fauxProvider, fauxToolCall } from "@earendil-works/pi-ai";
import {
	createAgentSession,
	createAgentSessionFromServices,
	createAgentSessionRuntime,
	createAgentSessionServices,
	DefaultResourceLoader,
	ModelRuntime,
	SessionManager,
	SettingsManager,
} from "@earendil-works/pi-coding-agent";

export const RELAY = fileURLToPath(new URL("../../extension/src/index.ts", import.meta.url));
export { fauxAssistantMessage, fauxToolCall };

/** A scripted reply: a text, or a tool call `{tool, args}`. */
export function reply(step) {
	if (typeof step === "string") return fauxAssistantMessage(step);
	if (typeof step === "function") return step;
	let message = step;
	if (step.tools) message = fauxAssistantMessage(step.tools.map((t) => fauxToolCall(t.tool, t.args ?? {})), { stopReason: "toolUse" });
	else if (step.tool) message = fauxAssistantMessage([fauxToolCall(step.tool, step.args ?? {}, step.id ? { id: step.id } : undefined)], { stopReason: "toolUse" });
	else if (step.error) message = fauxAssistantMessage([], { stopReason: "error", errorMessage: step.error });
	else if (typeof step.text === "string") message = fauxAssistantMessage(step.text);
	if (step.tokens !== undefined) return { message, tokens: step.tokens };
	return message;
}

/**
 * The faux model Pi talks to and its script: `steps` are scripted replies (see `reply`; a function
 * step gets the request's context and returns a step), each provider request is recorded in
 * `requests` (the exact message list Pi sent), and a step's `tokens` overrides the usage Pi
 * records for that reply (a number sets the total; an object sets usage fields, e.g.
 * {input, totalTokens}). `models` defaults to one faux-1 of `contextWindow`. `loaderOptions` are
 * the resource loader options that load Relay (unless `relay` is false: bare Pi; `extensions`, a
 * list of paths, loads those instead) and the usage patch.
 */
export function scriptedModel({ models, contextWindow = 128000, steps = [], tokenSize, recordRequests = true, relay = true, extensions } = {}) {
	const faux = fauxProvider({
		provider: "faux",
		models: (models ?? [{ id: "faux-1", contextWindow }]).map((m) => ({ maxTokens: 4096, ...m })),
		tokenSize,
	});
	const requests = [];
	// The time spent copying requests (a bench leaves it out of the time it measures).
	const recorded = { ms: 0 };
	const queue = steps.map(reply);
	let pendingTokens;
	const script = async (context) => {
		if (recordRequests) {
			const start = performance.now();
			requests.push(structuredClone(context.messages));
			recorded.ms += performance.now() - start;
		}
		let next = queue.shift();
		if (!next) return fauxAssistantMessage("(script exhausted)");
		if (typeof next === "function") next = reply(await next(context));
		if (next.tokens !== undefined) {
			pendingTokens = next.tokens;
			return next.message;
		}
		return next;
	};
	// Pi recomputes faux usage from characters; a step's `tokens` overrides what Pi records.
	const usagePatch = (pi) => {
		pi.on("message_end", (event) => {
			if (event.message.role !== "assistant" || pendingTokens === undefined) return undefined;
			const tokens = pendingTokens;
			pendingTokens = undefined;
			const fields = typeof tokens === "number" ? { totalTokens: tokens } : tokens;
			return { message: { ...event.message, usage: { ...event.message.usage, ...fields } } };
		});
	};
	faux.setResponses(Array.from({ length: Math.max(200, steps.length + 50) }, () => script));
	return {
		faux,
		requests,
		recorded,
		/** Drop the scripted replies not used yet and queue these instead. */
		rescript(...more) {
			queue.length = 0;
			queue.push(...more.map(reply));
		},
		/** Queue more scripted replies. */
		script(...more) {
			queue.push(...more.map(reply));
		},
		loaderOptions: {
			additionalExtensionPaths: extensions ?? (relay ? [RELAY] : []),
			extensionFactories: [usagePatch],
			noSkills: true,
			noPromptTemplates: true,
			noThemes: true,
			noContextFiles: true,
		},
	};
}

/** Pi's ModelRuntime with the faux provider registered (no models file, no refresh). */
export async function fauxRuntime(agentDir, faux) {
	const modelRuntime = await ModelRuntime.create({ authPath: join(agentDir, "auth.json"), modelsPath: null, refreshOnCreate: false });
	modelRuntime.registerNativeProvider(faux.provider);
	return modelRuntime;
}

/**
 * An AgentSessionRuntime (what Pi's /fork, /clone, /resume and /new replace the session in) on the
 * faux model `faux-1` of `modelRuntime`, with the resource loader options of a `scriptedModel`,
 * starting a new persisted session in `sessionDir`. Extension errors of every session it binds
 * go to `errors`.
 */
export async function startRuntime({ cwd, agentDir, sessionDir, modelRuntime, loaderOptions, errors }) {
	const createRuntime = async ({ cwd, agentDir, sessionManager, sessionStartEvent }) => {
		const services = await createAgentSessionServices({ cwd, agentDir, modelRuntime, resourceLoaderOptions: loaderOptions });
		const result = await createAgentSessionFromServices({
			services,
			sessionManager,
			model: modelRuntime.getModel("faux", "faux-1"),
			thinkingLevel: "off",
			noTools: "builtin",
			sessionStartEvent,
		});
		return { ...result, services, diagnostics: services.diagnostics };
	};
	const runtime = await createAgentSessionRuntime(createRuntime, { cwd, agentDir, sessionManager: SessionManager.create(cwd, sessionDir) });
	runtime.setRebindSession((next) => next.bindExtensions({ onError: (e) => errors.push(e) }));
	await runtime.session.bindExtensions({ onError: (e) => errors.push(e) });
	return runtime;
}

/**
 * Start a session. `steps` are scripted replies; each provider request is recorded in `requests`
 * (the exact message list Pi sent). `usage(n)` may override the total tokens of reply n.
 */
export async function startSession({
	steps = [],
	contextWindow = 128000,
	settings = {},
	persist = true,
	sessionFile,
	root = mkdtempSync(join(tmpdir(), "relay-test-")),
	extraFactories = [],
	// Extra bindExtensions() bindings, e.g. a shutdownHandler (the SDK has none by default).
	bindings = {},
	// The faux provider's streaming chunk size in tokens ({min, max}); large for huge tool arguments.
	tokenSize,
	// Select a router (virtual) model `router/auto` that routes every request to faux-1, declaring
	// no context window (Pi's docs/virtual-models.md), instead of faux-1 itself.
	virtual = false,
	// Whether Pi trusts the project (`ctx.isProjectTrusted()`).
	projectTrusted = true,
	// Load Relay; false runs bare Pi with the same faux model and usage patch. `extensions` (paths)
	// loads those extensions instead.
	relay = true,
	extensions,
	// Whether `requests` keeps a copy of every request (a bench that measures its own time says no).
	recordRequests = true,
} = {}) {
	const agentDir = join(root, "agent");
	const cwd = join(root, "work");
	mkdirSync(agentDir, { recursive: true });
	mkdirSync(cwd, { recursive: true });
	// Keep Relay's files (budget config, status, events) inside the test folder, never in ~/.pi.
	const ownedEnv = [];
	for (const [key, value] of [
		["PI_CODING_AGENT_DIR", agentDir],
		["PI_CONTEXT_BUDGET_STATE_DIR", join(agentDir, "context-budget")],
	]) {
		if (process.env[key] === undefined) {
			process.env[key] = value;
			ownedEnv.push(key);
		}
	}
	const scripted = scriptedModel({ contextWindow, steps, tokenSize, recordRequests, relay, extensions });
	const { faux, requests } = scripted;
	const modelRuntime = await fauxRuntime(agentDir, faux);
	if (virtual) {
		// A router only routes to a model whose provider has credentials.
		await modelRuntime.setRuntimeApiKey("faux", "test-key");
		modelRuntime.registerVirtualModel({
			provider: "router",
			id: "auto",
			name: "Auto",
			route: () => ({ model: modelRuntime.getModel("faux", "faux-1"), thinkingLevel: "off" }),
		});
		await modelRuntime.refresh({ allowNetwork: false });
	}
	const model = virtual ? modelRuntime.getModel("router", "auto") : modelRuntime.getModel("faux", "faux-1");
	const settingsManager = SettingsManager.inMemory({ retry: { enabled: false }, ...settings }, { projectTrusted });
	const resourceLoader = new DefaultResourceLoader({
		cwd,
		agentDir,
		settingsManager,
		...scripted.loaderOptions,
		additionalExtensionPaths: scripted.loaderOptions.additionalExtensionPaths,
		extensionFactories: [...scripted.loaderOptions.extensionFactories, ...extraFactories],
	});
	await resourceLoader.reload();
	const sessionDir = join(root, "sessions");
	const sessionManager = sessionFile
		? SessionManager.open(sessionFile, sessionDir)
		: persist
			? SessionManager.create(cwd, sessionDir)
			: SessionManager.inMemory(cwd);
	const { session, extensionsResult } = await createAgentSession({
		cwd,
		agentDir,
		model,
		thinkingLevel: "off",
		modelRuntime,
		resourceLoader,
		sessionManager,
		settingsManager,
		noTools: "builtin",
	});
	if (extensionsResult.errors.length) throw new Error("extension load errors: " + JSON.stringify(extensionsResult.errors));
	const errors = [];
	await session.bindExtensions({ onError: (e) => errors.push(e), ...bindings });
	return {
		session,
		sessionManager,
		faux,
		requests,
		errors,
		root,
		cwd,
		agentDir,
		rescript: scripted.rescript,
		script: scripted.script,
		/** Milliseconds spent copying requests into `requests` so far. */
		get recordedMs() {
			return scripted.recorded.ms;
		},
		/** The tool results the model received, in order, as {toolName, text, isError}. */
		toolResults() {
			return sessionManager
				.getBranch()
				.filter((e) => e.type === "message" && e.message.role === "toolResult")
				.map((e) => ({ toolName: e.message.toolName, text: textOf(e.message.content), isError: e.message.isError }));
		},
		async dispose() {
			await session.extensionRunner?.emit?.({ type: "session_shutdown", reason: "quit" });
			session.dispose();
			for (const key of ownedEnv) delete process.env[key];
		},
	};
}

export function textOf(content) {
	if (typeof content === "string") return content;
	return (content ?? []).map((b) => (b.type === "text" ? b.text : b.type === "toolCall" ? `[toolCall ${b.name}]` : "")).join("\n");
}

/** A compact view of one provider request: role + first 100 chars of text. */
export function view(messages) {
	return messages.map((m) => `${m.role}:${textOf(m.content).slice(0, 100)}`);
}

export function readJsonl(file) {
	return readFileSync(file, "utf8")
		.split("\n")
		.filter(Boolean)
		.map((l) => JSON.parse(l));
}

export function writeJson(file, value) {
	writeFileSync(file, JSON.stringify(value, null, 2));
}

// ---- small helpers shared by the test files ----

/** A scripted tool call step. */
export const tool = (name, args = {}, id) => ({ tool: name, args, ...(id ? { id } : {}) });

/** The roles a provider request carries, without the system prompt. */
export const roles = (request) => request.filter((m) => m.role !== "system").map((m) => m.role);

/** One provider request as `role:text` lines. */
export const joined = (request) => request.map((m) => `${m.role}:${textOf(m.content)}`).join("\n");

/** A request's text without the boot block's <in_progress> section, which carries the closing
 * window's last actions (tool calls and the model's last words) on purpose (in-progress.test.mjs). */
export const outsideInProgress = (text) => text.replace(/<in_progress [^>]*>\n[\s\S]*?<\/in_progress>\n/, "");

/** Branch entries of a type (and customType). */
export const ofType = (t, type, customType) =>
	t.sessionManager.getBranch().filter((e) => e.type === type && (!customType || e.customType === customType));

/** The results of one tool, in order. */
export const resultsOf = (t, name) => t.toolResults().filter((r) => r.toolName === name);

/** Run `fn` with console.error captured (the adapter prints notifications there without a UI). */
export async function captureStderr(fn) {
	const lines = [];
	const original = console.error;
	console.error = (...args) => lines.push(args.map(String).join(" "));
	try {
		await fn();
	} finally {
		console.error = original;
	}
	return lines;
}

/**
 * Wait for `promise`, or fail after `ms` with a message naming what never happened. Tests order
 * events by waiting on the event itself through this, never by sleeping.
 */
export async function within(promise, ms, what) {
	let timer;
	const timeout = new Promise((_, reject) => {
		timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
	});
	try {
		return await Promise.race([promise, timeout]);
	} finally {
		clearTimeout(timer);
	}
}

/** Wait (bounded) until `file` exists: the moment a worker or a command reached a point. */
export async function until(file, what) {
	await within(
		(async () => {
			while (!existsSync(file)) await new Promise((resolve) => setTimeout(resolve, 10));
		})(),
		20_000,
		what,
	);
}

/**
 * A FIFO at `file`, with a watchdog: a process that opens and closes it (read and write, which
 * never blocks) every `seconds`, so that a read that blocked on it ends and its test fails
 * instead of hanging. Returns the function that stops the watchdog.
 */
export function fifoWithWatchdog(file, seconds) {
	execFileSync("mkfifo", [file]);
	const watchdog = spawn("sh", ["-c", `while :; do sleep ${seconds}; : 3<>"$0"; done`, file], { stdio: "ignore" });
	return () => watchdog.kill("SIGKILL");
}

/**
 * `step()`'s result, which must settle within `ms` of wall-clock time. A thread blocked in a read
 * runs no timer, so `within` alone cannot tell a held thread: the step ends once the read is let
 * go; the elapsed time tells.
 */
export async function inTime(step, ms, what) {
	const started = performance.now();
	const value = await within(step(), ms, what);
	const took = Math.round(performance.now() - started);
	assert.ok(took < ms, `${what} took ${took} ms: a file read held Pi's thread`);
	return value;
}
