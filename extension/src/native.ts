// Loads the Rust core (napi-rs addon). Everything Relay decides is decided in there.
import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
// The JSON the engine reads and writes has these types (generated from the Rust wire types).
import type { ConfigSources, ContextMessage, HookReply, Marker, Moment, Observation, ResumeFacts, ToolReply, ToolSpec } from "./generated/wire.ts";

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
	 * small (then `loadSessionFile`), else a promise of whether the file holds `leafId`. The engine
	 * keeps its mirror until `finishLoad()` installs the loaded branch (false: none to install).
	 */
	loadSessionFileInBackground(sessionId: string, path: string, leafId: string): Promise<boolean> | null;
	finishLoad(): boolean;
	hasEntry(id: string): boolean;
	tipId(): string | null;
	/** Drop every mirrored entry after `id` (null: drop all). */
	truncateAfter(id: string | null): void;
	/** Append new branch entries (root → leaf order). */
	append(entriesJson: string): void;
	/**
	 * Run a tool with the arguments the model gave and a {@link Moment}; returns a {@link ToolReply}.
	 * `gitJson`: what `collectGit` resolved to, for `context_handoff`; `resumeJson`: what
	 * `handoffResumeCheck` resolved to.
	 */
	tool(name: string, argsJson: string, observationJson: string, gitJson?: string | null, resumeJson?: string | null): string;
	/**
	 * The operator's resume check before the handoff `argsJson` is written, with a {@link Moment},
	 * the git facts and the {@link ResumeFacts}: `null` when none runs, else a promise (the command
	 * runs on the libuv pool) of the result JSON for `tool`.
	 */
	handoffResumeCheck(argsJson: string, momentJson: string, gitJson: string | null, factsJson: string): Promise<string> | null;
	/** Whether the after-reset resume check of this window is still to run (cheap). */
	resumeCheckDue(): boolean;
	/** The after-reset resume check: `null` when none runs, else a promise of the {@link Marker} JSON to append. */
	resetResumeCheck(momentJson: string, factsJson: string): Promise<string> | null;
	/** The {@link ContextMessage} JSON this window's requests carry, or `null`. */
	resumeContext(): string | null;
	/** Git metadata for a handoff, collected on the libuv pool within one deadline (opaque JSON for `tool`). */
	collectGit(cwd: string): Promise<string>;
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
	version(): string;
}

const here = dirname(fileURLToPath(import.meta.url));

function addonPath(): string {
	const fromEnv = process.env.RELAY_ADDON;
	if (fromEnv) return fromEnv;
	const abi = process.platform === "linux" ? "-gnu" : process.platform === "win32" ? "-msvc" : "";
	const candidates = [
		join(here, "..", "native", `relay.${process.platform}-${process.arch}${abi}.node`),
		join(here, "..", "native", "relay.node"),
	];
	const found = candidates.find((candidate) => existsSync(candidate));
	if (!found) {
		throw new Error(
			`relay: native core not found (looked for ${candidates.join(", ")}); run \`make build\` in the Relay checkout or set RELAY_ADDON`,
		);
	}
	return found;
}

let cached: NativeModule | undefined;

/** The addon, loaded once per process (a /reload re-evaluates this module but dlopen returns the same library). */
export function native(): NativeModule {
	if (!cached) cached = createRequire(import.meta.url)(addonPath()) as NativeModule;
	return cached;
}
