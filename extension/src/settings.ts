// The raw configuration sources for the engine, which merges and validates them (engine/configure.rs);
// the addon reads each file named (relay-io: never blocking, only a regular file, within a cap).
import { CONFIG_DIR_NAME, getAgentDir, type ExtensionAPI, type ExtensionContext } from "@earendil-works/pi-coding-agent";
import { unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConfigSources, WrapperFacts } from "./generated/wire.ts";

/** What Relay took from pi-session, kept process-wide so that the module a /reload evaluates again finds it. */
const SLOT = Symbol.for("relay.pi-session-wrapper");
type TakenWrapper = Pick<WrapperFacts, "relaunchMarker" | "wrapper" | "wrapperPid" | "launchId" | "relaunchKeyFile">;
const slot = globalThis as { [SLOT]?: TakenWrapper };

/**
 * Take what pi-session handed this Pi (crates/relay-cli/src/session/mod.rs) before any tool runs:
 * its variables leave `process.env`, and the addon takes the relaunch key (`describe`) and removes
 * its file, so nothing the model runs can sign a marker. Without the variables, what was taken stays.
 */
export function takeWrapperHandover(): void {
	const env = process.env;
	const vars = { relaunchMarker: "PI_RELAUNCH_MARKER", wrapper: "PI_SESSION_WRAPPER", wrapperPid: "PI_SESSION_WRAPPER_PID", launchId: "PI_SESSION_LAUNCH_ID", relaunchKeyFile: "PI_RELAUNCH_KEY_FILE" } as const;
	if (!Object.values(vars).some((name) => env[name] !== undefined)) return;
	const facts = Object.fromEntries(Object.entries(vars).map(([key, name]) => [key, env[name] ?? null])) as TakenWrapper;
	slot[SLOT] = { ...facts, relaunchKeyFile: facts.relaunchKeyFile || null };
	for (const name of Object.values(vars)) delete env[name];
}

/** The relaunch key file pi-session named; `drop`: without an addon to take the key, the file is only removed. */
export function relaunchKeyFile(drop = false): string | undefined {
	const file = slot[SLOT]?.relaunchKeyFile ?? undefined;
	try {
		if (drop && file) unlinkSync(file);
	} catch {
		// Already gone.
	}
	return file;
}

/** The facts the engine configures from: Pi's settings, where the files may be, trust, and pi-session's handover with this process's place under it. */
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
		wrapper: { ...none, ...slot[SLOT], pid: process.pid, ppid: process.ppid, sessionFile: ctx.sessionManager.getSessionFile() ?? null },
		resumeCheckEnv: process.env.PI_RESUME_CHECK,
		// Where the integrations' stores are (the engine names their paths).
		questionsHome: process.env.PI_QUESTIONS_HOME ?? null,
		tmpDir: tmpdir(),
		uid: typeof process.getuid === "function" ? process.getuid() : null,
	};
}
