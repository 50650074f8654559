// The optional integrations, copied as facts when present (the engine decides what they mean): the
// guard library `<agent dir>/lib/guards.ts`, and on `globalThis` the pi-jobs managers
// (`pi-jobs.liveManagers`), the subagent manager (`pi-subagents:manager`) and `relay.pending-work`.
// The stores on disk (questions, issue claims, subagent tasks) are the addon's, off Pi's event loop.
import { getAgentDir } from "@earendil-works/pi-coding-agent";
import { pathToFileURL } from "node:url";
import type { GuardState } from "./generated/wire.ts";

type GuardLibrary = { isGuardOff?: (name: string) => unknown };
let guards: GuardLibrary | undefined;
let guardsTried: string | undefined;
let guardsError: string | null = null;

/** The engine's answer to `{type: "guards", agentDir}`: the library to import (`null`: none), or why not. */
export type GuardsVet = (agentDir: string) => { file: string | null; error: string | null };
/** How long the guard library's import may take before Relay goes on without it. */
const GUARDS_IMPORT_MS = 2000;

/**
 * Import the agent dir's guard library once, when it exists: vetted by the engine first (a regular
 * file within its cap) and bounded in time, so that a FIFO or a device there cannot hold Pi's
 * start-up. Answers why a library that exists was refused (the engine warns once).
 */
export async function loadGuards(vet: GuardsVet): Promise<string | null> {
	const agentDir = getAgentDir();
	if (guards || guardsTried === agentDir) return guardsError;
	const { file, error } = vet(agentDir);
	if (!file) return null;
	[guardsTried, guardsError] = [agentDir, error];
	if (guardsError) return guardsError;
	const late = new Promise<"late">((resolve) => AbortSignal.timeout(GUARDS_IMPORT_MS).addEventListener("abort", () => resolve("late")));
	try {
		const loaded = await Promise.race([import(pathToFileURL(file).href) as Promise<GuardLibrary>, late]);
		if (loaded === "late") guardsError = `its import did not finish within ${GUARDS_IMPORT_MS / 1000} s`;
		else guards = loaded;
	} catch {
		guards = undefined;
	}
	return guardsError;
}

/** The context guard as the library answers right now. */
export function contextGuard(): GuardState {
	try {
		const off = guards?.isGuardOff?.("context");
		return off === true ? "off" : off === false ? "on" : "unavailable";
	} catch {
		return "unavailable";
	}
}

/** A registry's values as a list (a Map's values, an array, any other iterable but a string). */
function listOf(value: unknown): unknown[] | undefined {
	if (value instanceof Map) return [...value.values()];
	if (Array.isArray(value)) return value;
	if (value && typeof value !== "string" && typeof (value as Iterable<unknown>)[Symbol.iterator] === "function") return [...(value as Iterable<unknown>)];
	return undefined;
}

/** Registry records as plain JSON (functions and cycles dropped; a record that cannot be copied is left out). */
function plain(records: unknown[]): unknown[] {
	return records.flatMap((record) => {
		try {
			return [JSON.parse(JSON.stringify(record ?? null))];
		} catch {
			return [];
		}
	});
}

const registry = (name: string) => (globalThis as Record<symbol, unknown>)[Symbol.for(name)];

/** What the live job managers list (each manager's `list()`, `listJobs()` or `jobs`); `null`: no registry, or it cannot be read. */
export function jobRecords(): unknown[] | null {
	try {
		const managers = listOf(registry("pi-jobs.liveManagers"));
		type Manager = { list?: () => unknown; listJobs?: () => unknown; jobs?: unknown };
		return managers ? plain((managers as Manager[]).flatMap((m) => listOf(typeof m?.list === "function" ? m.list() : typeof m?.listJobs === "function" ? m.listJobs() : m?.jobs) ?? [])) : null;
	} catch {
		return null;
	}
}

/** The subagent manager's records: `listAgents()`, else `getRecord(id)` for the ids of this session's task directory; `null`: neither. */
export function subagentRecords(taskIds: string[] | null | undefined): unknown[] | null {
	try {
		const manager = registry("pi-subagents:manager") as { listAgents?: () => unknown; getRecord?: (id: string) => unknown } | undefined;
		const { listAgents, getRecord } = manager ?? {};
		const listed =
			typeof listAgents === "function" ? listOf(listAgents.call(manager)) : typeof getRecord === "function" && taskIds ? taskIds.map((id) => getRecord.call(manager, id)).filter((r) => r != null) : undefined;
		return listed ? plain(listed) : null;
	} catch {
		return null;
	}
}

/** How much background work an integration reports pending (0: none, or no number). */
export function pendingWork(): number {
	try {
		const n = (registry("relay.pending-work") as (() => unknown) | undefined)?.();
		return typeof n === "number" ? n : 0;
	} catch {
		return 0;
	}
}
