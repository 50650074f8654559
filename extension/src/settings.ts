// Collects the raw configuration sources for the engine, which validates them. No defaults here.
import { getAgentDir, SettingsManager, type ExtensionAPI, type ExtensionContext } from "@earendil-works/pi-coding-agent";
import { join } from "node:path";

function settingsOf(pi: ExtensionAPI, ctx: ExtensionContext): Record<string, unknown> {
	const api = pi as unknown as { getSettings?: () => unknown };
	if (typeof api.getSettings === "function") return (api.getSettings() ?? {}) as Record<string, unknown>;
	// Pi before getSettings(): read global and (when trusted) project settings the way Pi merges them.
	const manager = SettingsManager.create(ctx.cwd, getAgentDir());
	const global = manager.getGlobalSettings() as Record<string, unknown>;
	const project = ctx.isProjectTrusted() ? (manager.getProjectSettings() as Record<string, unknown>) : {};
	const relay = { ...((global.relay as object) ?? {}), ...((project.relay as object) ?? {}) };
	return { ...global, ...project, relay, compaction: { ...((global.compaction as object) ?? {}), ...((project.compaction as object) ?? {}) } };
}

export function loadSettings(pi: ExtensionAPI, ctx: ExtensionContext) {
	const settings = settingsOf(pi, ctx);
	const agentDir = getAgentDir();
	return {
		relay: settings.relay ?? null,
		compaction: settings.compaction ?? null,
		agentDir,
		budgetConfigPath: process.env.PI_CONTEXT_BUDGET_CONFIG || join(agentDir, "context-budget.json"),
		budgetConfigFromEnv: Boolean(process.env.PI_CONTEXT_BUDGET_CONFIG),
		stateDir: process.env.PI_CONTEXT_BUDGET_STATE_DIR || join(agentDir, "context-budget"),
		cwd: ctx.cwd,
		hasUI: ctx.hasUI,
		mode: (ctx as unknown as { mode?: string }).mode ?? null,
	};
}
