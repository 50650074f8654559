// Collects the raw configuration sources for the engine. No precedence and no defaults here: the
// engine merges the global and project settings the way Pi does, project only when trusted, and
// validates them (crates/relay-core/src/engine/configure.rs). No file is read here: the addon
// reads each file named (relay-io), never blocking, only a regular file, within a cap.
import { CONFIG_DIR_NAME, getAgentDir, type ExtensionAPI, type ExtensionContext } from "@earendil-works/pi-coding-agent";
import { unlinkSync } from "node:fs";
import { join } from "node:path";
import type { ConfigSources, WrapperFacts } from "./generated/wire.ts";

/** The variables pi-session gives Pi (crates/relay-cli/src/session/mod.rs). */
const WRAPPER_VARS = ["PI_RELAUNCH_MARKER", "PI_RELAUNCH_KEY_FILE", "PI_SESSION_WRAPPER", "PI_SESSION_WRAPPER_PID", "PI_SESSION_LAUNCH_ID"] as const;

/** What Relay took from pi-session, kept process-wide so that the module a /reload evaluates again finds it. */
const WRAPPER_SLOT = Symbol.for("relay.pi-session-wrapper");
type TakenWrapper = Omit<WrapperFacts, "pid" | "ppid" | "sessionFile">;

/**
 * Take what pi-session handed this Pi, once, when Relay loads (before any tool can run): every
 * wrapper variable is removed from `process.env`, and the relaunch key file's path goes to the
 * addon with `describe` (`relaunchKeyFile`), which reads the key and removes the file (relay-io
 * `relaunch::take_key`). A command the model runs (or a Pi it starts) then inherits none of them
 * and finds no key to sign a marker with; only Relay can sign the marker the wrapper relaunches
 * for. (`/proc/<pid>/environ` still shows Pi's initial variables: the key file's path, but the
 * file is gone.) When the variables are absent, what an earlier load took stays.
 */
export function takeWrapperHandover(): void {
	const env = process.env;
	if (!WRAPPER_VARS.some((name) => env[name] !== undefined)) return;
	const taken: TakenWrapper = {
		relaunchMarker: env.PI_RELAUNCH_MARKER ?? null,
		wrapper: env.PI_SESSION_WRAPPER ?? null,
		wrapperPid: env.PI_SESSION_WRAPPER_PID ?? null,
		launchId: env.PI_SESSION_LAUNCH_ID ?? null,
		relaunchKeyFile: env.PI_RELAUNCH_KEY_FILE || null,
	};
	(globalThis as Record<symbol, unknown>)[WRAPPER_SLOT] = taken;
	for (const name of WRAPPER_VARS) delete env[name];
}

function taken(): TakenWrapper | undefined {
	return (globalThis as Record<symbol, unknown>)[WRAPPER_SLOT] as TakenWrapper | undefined;
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
 * What pi-session handed this process (taken when Relay loaded) and this process's place under
 * it: the engine decides whether this runtime owns the wrapper (crates/relay-core/src/engine/wrapper.rs).
 */
function wrapperFacts(ctx: ExtensionContext): WrapperFacts {
	const t = taken();
	return {
		relaunchMarker: t?.relaunchMarker ?? null,
		wrapper: t?.wrapper ?? null,
		wrapperPid: t?.wrapperPid ?? null,
		launchId: t?.launchId ?? null,
		relaunchKeyFile: t?.relaunchKeyFile ?? null,
		pid: process.pid,
		ppid: process.ppid,
		sessionFile: ctx.sessionManager.getSessionFile() ?? null,
	};
}

/**
 * The facts the engine decides from: Pi's settings, where the project file is, trust, and where
 * the budget policy file may be (`PI_CONTEXT_BUDGET_CONFIG` as set, Pi's agent directory, which
 * honours `PI_CODING_AGENT_DIR`). Which file applies, and what its absence means, is decided in
 * Rust; the addon reads the budget file and a trusted project's settings file (an untrusted
 * project's is never opened), each as a file that cannot block Pi.
 */
export function loadSettings(pi: ExtensionAPI, ctx: ExtensionContext, guardsError: string | null): ConfigSources {
	const agentDir = getAgentDir();
	const globalFile = join(agentDir, "settings.json");
	return {
		global: pi.getSettings() ?? null,
		projectFile: join(ctx.cwd, CONFIG_DIR_NAME, "settings.json"),
		projectTrusted: ctx.isProjectTrusted(),
		globalFile,
		guardsError: guardsError ?? undefined,
		budgetConfigEnv: process.env.PI_CONTEXT_BUDGET_CONFIG ?? null,
		agentDir,
		stateDir: process.env.PI_CONTEXT_BUDGET_STATE_DIR ?? null,
		cwd: ctx.cwd,
		wrapper: wrapperFacts(ctx),
		resumeCheckEnv: process.env.PI_RESUME_CHECK,
	};
}
