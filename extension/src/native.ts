// Loads the Rust core (napi-rs addon). Everything Relay decides is decided in there.
import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
// The JSON the engine reads and writes has these types (generated from the Rust wire types).
import type { ConfigSources, ContextMessage, HookReply, Marker, Moment, Observation, ResumeFacts, StoreFacts, ToolReply, ToolSpec } from "./generated/wire.ts";

/**
 * Async work the engine prepared, apart from it: `run()` (once) starts it on the libuv pool. The
 * engine hands out these handles instead of promises because napi-rs keeps the engine borrowed
 * until a promise its method returned settles, and every other engine call would fail meanwhile.
 */
export interface Job<T> {
	run(): Promise<T>;
}

/**
 * The Engine class exported by crates/relay-node. Every argument and result is a JSON string of a
 * type in ./generated/wire.ts; an input with a field the engine does not know is an error.
 */
export interface NativeEngine {
	/** Load configuration from a {@link ConfigSources}; returns a {@link HookReply} (one warning per problem). */
	configure(json: string): string;
	/**
	 * True after the addon caught a panic: it replaced its engine, whose mirror is empty until the
	 * next `resync`/`loadSessionFile`. The adapter's `sync()` then does a full resync first.
	 */
	needsResync(): boolean;
	/** Replace the mirror with a whole branch (root → leaf). */
	resync(sessionId: string, entriesJson: string): void;
	/** Replace the mirror by reading the session file up to `leafId`; false when the file cannot serve. */
	loadSessionFile(sessionId: string, path: string, leafId: string): boolean;
	/**
	 * Replace the mirror from a large session file on the libuv pool: `null` when the file is
	 * small (then `loadSessionFile`), else a handle whose `run()` is a promise of whether the file
	 * holds `leafId`. The engine keeps its mirror until `finishLoad()` installs the loaded branch
	 * (false: none to install).
	 */
	loadSessionFileInBackground(sessionId: string, path: string, leafId: string): Job<boolean> | null;
	finishLoad(): boolean;
	/**
	 * False while the installed branch's earlier windows are skimmed (a large session is first
	 * loaded for its current window); the history tools wait until `finishCompleteLoad()`.
	 */
	historyComplete(): boolean;
	/** The whole load that completes the history (`null`: complete already); its `run()` reads the file on the libuv pool. */
	beginCompleteLoad(): Job<boolean> | null;
	/** Swap in the whole branch that load read; false when there is none or it disagrees (then reload in full). */
	finishCompleteLoad(): boolean;
	hasEntry(id: string): boolean;
	tipId(): string | null;
	/** Drop every mirrored entry after `id` (null: drop all). */
	truncateAfter(id: string | null): void;
	/** Append new branch entries (root → leaf order). */
	append(entriesJson: string): void;
	/**
	 * Run a tool with the arguments the model gave and a {@link Moment}; returns a {@link ToolReply}.
	 * `gitJson`: what the module's `collectGit` resolved to, for `context_handoff`; `resumeJson`:
	 * what the `handoffResumeCheck` job resolved to.
	 */
	tool(name: string, argsJson: string, observationJson: string, gitJson?: string | null, resumeJson?: string | null, integrationsJson?: string | null): string;
	/** Whether this window's watch check is still to run (cheap). */
	watchCheckDue(): boolean;
	/** The watch check against the live jobs registry (`null`: no registry): the {@link Marker} JSON to append, or `null`. */
	watchCheck(jobsJson: string | null, nowMs: number): string | null;
	/** The {@link ContextMessage} JSON of this window's watch check, or `null`. */
	watchContext(): string | null;
	/**
	 * The operator's resume check before the handoff `argsJson` is written, with a {@link Moment},
	 * the git facts and the {@link ResumeFacts}: `null` when none runs, else a {@link Job} whose
	 * promise (the command runs on the libuv pool) is the result JSON for `tool`.
	 */
	handoffResumeCheck(argsJson: string, momentJson: string, gitJson: string | null, factsJson: string): Job<string> | null;
	/** Whether the after-reset resume check of this window is still to run (cheap). */
	resumeCheckDue(): boolean;
	/** The after-reset resume check: `null` when none runs, else a {@link Job} whose promise is the {@link Marker} JSON to append. */
	resetResumeCheck(momentJson: string, factsJson: string): Job<string> | null;
	/** The {@link ContextMessage} JSON this window's requests carry, or `null`. */
	resumeContext(): string | null;
	/** Whether this window's stale-handoff check is still to run (cheap). */
	staleCheckDue(): boolean;
	/** The stale-handoff check: `null` when none runs, else a {@link Job} whose promise (git and file reads on the libuv pool) is the {@link Marker} JSON to append. */
	staleCheck(): Job<string> | null;
	/** The {@link ContextMessage} JSON of this window's stale-handoff check, or `null` (none, or nothing differed). */
	staleContext(): string | null;
	/** Feed one {@link Observation}; returns a {@link HookReply}. */
	handle(observationJson: string): string;
	/** The {@link ToolSpec}s: tool names, labels and descriptions the model sees. */
	toolSpecs(): string;
	/**
	 * The model's arguments for a tool as Pi should validate them (Codex-style aliases renamed):
	 * `{"args": …}`, or `{"error": text}` for an unknown argument (the text names the right one).
	 */
	prepareArguments(name: string, argsJson: string): string;
}

interface NativeModule {
	Engine: new () => NativeEngine;
	/**
	 * Git metadata for a handoff, collected on the libuv pool within one deadline (opaque JSON for
	 * `tool`); given the handoff's arguments, also what it records of the workspace for the
	 * stale-handoff check of the window it opens.
	 */
	collectGit(cwd: string, argsJson?: string | null): Promise<string>;
	/** Read the optional integrations' stores on disk on the libuv pool ({@link StoreFacts} in, `StoreContents` JSON out). */
	collectStores(factsJson: string): Promise<string>;
	version(): string;
	/** The tool error for a call Pi's schema check refused (`piMessage`: Pi's error, at most its first 64 KiB), without Pi's copy of the arguments. */
	schemaRefusal(tool: string, piMessage: string): string;
	/** `null` when Relay supports this Pi version, else the message to show instead of loading. */
	piVersionRefusal(piVersion: string): string | null;
	/** The one line Pi's TUI shows for a Relay message, or `null` for a type that is not Relay's. */
	messageLine(customType: string, content: string): string | null;
	/** The message types to register a TUI renderer for. */
	renderedMessageTypes(): string[];
}

const here = dirname(fileURLToPath(import.meta.url));
const requireHere = createRequire(import.meta.url);

/** napi-rs's name for this machine: `<platform>-<arch>[-<abi>]`, e.g. `linux-x64-gnu`. */
function triple(): string {
	const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime;
	const abi = process.platform === "linux" ? (glibc ? "-gnu" : "-musl") : process.platform === "win32" ? "-msvc" : "";
	return `${process.platform}-${process.arch}${abi}`;
}

/**
 * Where the addon is: `RELAY_ADDON` when set (an explicit choice wins), else the platform package
 * npm installed beside pi-relay (`pi-relay-<triple>`), else a local build in `native/`
 * (`make build`). None of them: an error naming the platform and how to build the core.
 */
function addonPath(): string {
	const fromEnv = process.env.RELAY_ADDON;
	if (fromEnv) return fromEnv;
	const name = triple();
	const platformPackage = `pi-relay-${name}`;
	try {
		return requireHere.resolve(`${platformPackage}/relay.${name}.node`);
	} catch {
		// not installed: try a local build
	}
	const candidates = [join(here, "..", "native", `relay.${name}.node`), join(here, "..", "native", "relay.node")];
	const found = candidates.find((candidate) => existsSync(candidate));
	if (!found) {
		throw new Error(
			`relay: no Relay core for ${name}: the package ${platformPackage} is not installed (there is no prebuilt core for this platform, or npm skipped optional dependencies) and there is no local build (${candidates.join(", ")}). Build it from source with \`make build\` in a Relay checkout (needs Rust), or set RELAY_ADDON to a built relay.node. Pi runs without Relay until then.`,
		);
	}
	return found;
}

let cached: NativeModule | undefined;

/** The addon, loaded once per process (a /reload re-evaluates this module but dlopen returns the same library). */
export function native(): NativeModule {
	if (!cached) cached = requireHere(addonPath()) as NativeModule;
	return cached;
}
