// Collects the raw configuration sources for the engine. No precedence and no defaults here: the
// engine merges the global and project settings the way Pi does, project only when trusted, and
// validates them (crates/relay-core/src/engine/configure.rs); the addon reads each file named
// (relay-io), never blocking, only a regular file, within a cap.
import { CONFIG_DIR_NAME, getAgentDir, type ExtensionAPI, type ExtensionContext } from "@earendil-works/pi-coding-agent";
import { unlinkSync } from "node:fs";
import { join } from "node:path";
import type { ConfigSources, WrapperFacts } from "./generated/wire.ts";

/** What Relay took from pi-session, kept process-wide so that the module a /reload evaluates again finds it. */
const WRAPPER_SLOT = Symbol.for("relay.pi-session-wrapper");
type TakenWrapper = Pick<WrapperFacts, "relaunchMarker" | "wrapper" | "wrapperPid" | "launchId" | "relaunchKeyFile">;
const taken = () => (globalThis as { [WRAPPER_SLOT]?: TakenWrapper })[WRAPPER_SLOT];

/**
 * Take what pi-session handed this Pi, once, when Relay loads (before any tool can run): its
 * variables (crates/relay-cli/src/session/mod.rs) leave `process.env`, and the relaunch key
 * file's path goes to the addon with `describe`, which reads the key and removes the file. A
 * command the model runs (or a Pi it starts) inherits none of them and finds no key to sign a
 * marker with. When the variables are absent, what an earlier load took stays.
 */
export function takeWrapperHandover(): void {
	const env = process.env;
	const vars = { relaunchMarker: "PI_RELAUNCH_MARKER", wrapper: "PI_SESSION_WRAPPER", wrapperPid: "PI_SESSION_WRAPPER_PID", launchId: "PI_SESSION_LAUNCH_ID", relaunchKeyFile: "PI_RELAUNCH_KEY_FILE" } as const;
	if (!Object.values(vars).some((name) => env[name] !== undefined)) return;
	const facts = Object.fromEntries(Object.entries(vars).map(([key, name]) => [key, env[name] ?? null])) as TakenWrapper;
	(globalThis as { [WRAPPER_SLOT]?: TakenWrapper })[WRAPPER_SLOT] = { ...facts, relaunchKeyFile: facts.relaunchKeyFile || null };
	for (const name of Object.values(vars)) delete env[name];
}

/** The relaunch key file pi-session named, for `describe` (the addon takes the key from it). */
export function relaunchKeyFile(): string | undefined {
	return taken()?.relaunchKeyFile ?? undefined;
}

/** Without an addon to take it, the key file is only removed (unread): no command the model runs finds it. */
export function dropRelaunchKeyFile(): void {
	try {
		unlinkSync(relaunchKeyFile() ?? "");
	} catch {
		// None, or already gone.
	}
}

/**
 * The facts the engine decides from: Pi's settings, where the project file is, trust, where the
 * budget policy file may be, and what pi-session handed this process with this process's place
 * under it (the engine decides whether this runtime owns the wrapper). Which file applies is
 * decided in Rust; an untrusted project's settings file is never opened.
 */
export function loadSettings(pi: ExtensionAPI, ctx: ExtensionContext, guardsError: string | null): ConfigSources {
	const agentDir = getAgentDir();
	const none = { relaunchMarker: null, wrapper: null, wrapperPid: null, launchId: null, relaunchKeyFile: null };
	return {
		global: pi.getSettings() ?? null,
		projectFile: join(ctx.cwd, CONFIG_DIR_NAME, "settings.json"),
		projectTrusted: ctx.isProjectTrusted(),
		globalFile: join(agentDir, "settings.json"),
		guardsError: guardsError ?? undefined,
		budgetConfigEnv: process.env.PI_CONTEXT_BUDGET_CONFIG ?? null,
		agentDir,
		stateDir: process.env.PI_CONTEXT_BUDGET_STATE_DIR ?? null,
		cwd: ctx.cwd,
		wrapper: { ...none, ...taken(), pid: process.pid, ppid: process.ppid, sessionFile: ctx.sessionManager.getSessionFile() ?? null },
		resumeCheckEnv: process.env.PI_RESUME_CHECK,
	};
}
