// Collects the raw configuration sources for the engine. No precedence and no defaults here: the
// engine merges the global and project settings the way Pi does, project only when trusted, and
// validates them (crates/relay-core/src/config.rs).
import { CONFIG_DIR_NAME, getAgentDir, SettingsManager, type ExtensionAPI, type ExtensionContext } from "@earendil-works/pi-coding-agent";
import { existsSync, readFileSync } from "node:fs";
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

/**
 * The pi-session wrapper's variables and this process's place under it: the engine decides
 * whether this runtime owns the wrapper (crates/relay-core/src/engine/wrapper.rs).
 */
function wrapperFacts(ctx: ExtensionContext): WrapperFacts {
	return {
		relaunchMarker: process.env.PI_RELAUNCH_MARKER ?? null,
		wrapper: process.env.PI_SESSION_WRAPPER ?? null,
		wrapperPid: process.env.PI_SESSION_WRAPPER_PID ?? null,
		launchId: process.env.PI_SESSION_LAUNCH_ID ?? null,
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
		stateDir: process.env.PI_CONTEXT_BUDGET_STATE_DIR || join(agentDir, "context-budget"),
		cwd: ctx.cwd,
		wrapper: wrapperFacts(ctx),
		resumeCheckEnv: process.env.PI_RESUME_CHECK,
	};
}
