// Collects the raw configuration sources for the engine. No precedence and no defaults here: the
// engine merges the global and project settings the way Pi does, project only when trusted, and
// validates them (crates/relay-core/src/config.rs).
import { CONFIG_DIR_NAME, getAgentDir, SettingsManager, type ExtensionAPI, type ExtensionContext } from "@earendil-works/pi-coding-agent";
import { existsSync, readFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import type { ConfigSources, WrapperFacts } from "./generated/wire.ts";

/** Pi's settings object for this runtime; on a Pi without getSettings(), the global settings file. */
function piSettings(pi: ExtensionAPI, ctx: ExtensionContext): unknown {
	const api = pi as unknown as { getSettings?: () => unknown };
	if (typeof api.getSettings === "function") return api.getSettings() ?? null;
	return SettingsManager.create(ctx.cwd, getAgentDir(), { projectTrusted: false }).getGlobalSettings();
}

/** The project's settings file as it is on disk (null when there is none), or why it cannot be read. */
function projectSettings(cwd: string): Pick<ConfigSources, "project" | "projectError"> {
	const file = join(cwd, CONFIG_DIR_NAME, "settings.json");
	if (!existsSync(file)) return { project: null, projectError: null };
	try {
		const text = readFileSync(file, "utf8").replace(/^\uFEFF/, "");
		return { project: text ? JSON.parse(text) : {}, projectError: null };
	} catch (error) {
		return { project: null, projectError: error instanceof Error ? error.message : String(error) };
	}
}

/** The variables pi-session gives Pi (crates/relay-cli/src/session/mod.rs). */
const WRAPPER_VARS = ["PI_RELAUNCH_MARKER", "PI_RELAUNCH_KEY_FILE", "PI_SESSION_WRAPPER", "PI_SESSION_WRAPPER_PID", "PI_SESSION_LAUNCH_ID"] as const;

/** What Relay took from pi-session, kept process-wide so that the module a /reload evaluates again finds it. */
const WRAPPER_SLOT = Symbol.for("relay.pi-session-wrapper");
type TakenWrapper = Omit<WrapperFacts, "pid" | "ppid" | "sessionFile">;

/**
 * Take what pi-session handed this Pi, once, when Relay loads (before any tool can run): the
 * launch's relaunch key is read from `PI_RELAUNCH_KEY_FILE` and the file is removed, and every
 * wrapper variable is removed from `process.env`. A command the model runs (or a Pi it starts)
 * then inherits none of them and finds no key to sign a marker with; only Relay can sign the
 * marker the wrapper relaunches for. (`/proc/<pid>/environ` still shows Pi's initial variables:
 * the key file's path, but the file is gone.) When the variables are absent, what an earlier
 * load took stays.
 */
export function takeWrapperHandover(): void {
	const env = process.env;
	if (!WRAPPER_VARS.some((name) => env[name] !== undefined)) return;
	const relaunchKeyFile = env.PI_RELAUNCH_KEY_FILE || null;
	let relaunchKey: string | null = null;
	let relaunchKeyError: string | null = null;
	if (relaunchKeyFile) {
		try {
			relaunchKey = readFileSync(relaunchKeyFile, "utf8");
		} catch (error) {
			relaunchKeyError = error instanceof Error ? error.message : String(error);
		}
		try {
			unlinkSync(relaunchKeyFile);
		} catch {
			// Already gone: the wrapper removes it too once Pi has exited.
		}
	}
	const taken: TakenWrapper = {
		relaunchMarker: env.PI_RELAUNCH_MARKER ?? null,
		wrapper: env.PI_SESSION_WRAPPER ?? null,
		wrapperPid: env.PI_SESSION_WRAPPER_PID ?? null,
		launchId: env.PI_SESSION_LAUNCH_ID ?? null,
		relaunchKeyFile,
		relaunchKey,
		relaunchKeyError,
	};
	(globalThis as Record<symbol, unknown>)[WRAPPER_SLOT] = taken;
	for (const name of WRAPPER_VARS) delete env[name];
}

/**
 * What pi-session handed this process (taken when Relay loaded) and this process's place under
 * it: the engine decides whether this runtime owns the wrapper (crates/relay-core/src/engine/wrapper.rs).
 */
function wrapperFacts(ctx: ExtensionContext): WrapperFacts {
	const taken = (globalThis as Record<symbol, unknown>)[WRAPPER_SLOT] as TakenWrapper | undefined;
	return {
		relaunchMarker: taken?.relaunchMarker ?? null,
		wrapper: taken?.wrapper ?? null,
		wrapperPid: taken?.wrapperPid ?? null,
		launchId: taken?.launchId ?? null,
		relaunchKeyFile: taken?.relaunchKeyFile ?? null,
		relaunchKey: taken?.relaunchKey ?? null,
		relaunchKeyError: taken?.relaunchKeyError ?? null,
		pid: process.pid,
		ppid: process.ppid,
		sessionFile: ctx.sessionManager.getSessionFile() ?? null,
	};
}

/**
 * The facts the engine decides from: Pi's settings, the project file, trust, and where the budget
 * policy file may be (`PI_CONTEXT_BUDGET_CONFIG` as set, Pi's agent directory, which honours
 * `PI_CODING_AGENT_DIR`). Which file applies, and what its absence means, is decided in Rust.
 */
export function loadSettings(pi: ExtensionAPI, ctx: ExtensionContext): ConfigSources {
	const agentDir = getAgentDir();
	return {
		global: piSettings(pi, ctx),
		...projectSettings(ctx.cwd),
		projectTrusted: ctx.isProjectTrusted(),
		globalFile: join(agentDir, "settings.json"),
		budgetConfigEnv: process.env.PI_CONTEXT_BUDGET_CONFIG ?? null,
		agentDir,
		stateDir: process.env.PI_CONTEXT_BUDGET_STATE_DIR ?? null,
		cwd: ctx.cwd,
		wrapper: wrapperFacts(ctx),
		resumeCheckEnv: process.env.PI_RESUME_CHECK,
	};
}
