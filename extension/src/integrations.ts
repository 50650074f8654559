// The optional integrations: facts Relay reads from other Pi packages when they are present, never
// installs or changes. The engine decides what they mean (what is pending, what the handoff and the
// new window show); this file only copies what the registries and the guard library say.
//
// - the shared guard library `<agent dir>/lib/guards.ts` (`isGuardOff("context")`, consulted live);
// - `globalThis[Symbol.for("pi-jobs.liveManagers")]`: the live job managers (jobs and watches);
// - `globalThis[Symbol.for("pi-subagents:manager")]`: the subagent manager (`listAgents`, `getRecord`);
// - on disk (read by the addon off Pi's event loop): the pending-questions store, the issue-claim
//   registry and this session's subagent task directory.
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
 * Load the agent dir's guard library (`<agent dir>/lib/guards.ts`) once per agent dir, when it
 * exists (dynamic import; the file is never written). The engine first has it vetted (`vet`: a
 * regular file within its cap, opened without blocking), and its import is bounded, so that a
 * FIFO or a device put there cannot hold Pi's start-up. A library that fails to load leaves the
 * guard unavailable; when it exists but was refused, the answer says why (the engine warns once).
 */
export async function loadGuards(vet: GuardsVet): Promise<string | null> {
	const agentDir = getAgentDir();
	if (guards || guardsTried === agentDir) return guardsError;
	const { file, error } = vet(agentDir);
	if (!file) return null;
	guardsTried = agentDir;
	guardsError = error;
	if (guardsError) return guardsError;
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<"late">((resolve) => {
		timer = setTimeout(() => resolve("late"), GUARDS_IMPORT_MS);
		timer.unref?.();
	});
	try {
		const loaded = await Promise.race([import(pathToFileURL(file).href) as Promise<GuardLibrary>, late]);
		if (loaded === "late") guardsError = `its import did not finish within ${GUARDS_IMPORT_MS / 1000} s`;
		else guards = loaded;
	} catch {
		guards = undefined;
	} finally {
		clearTimeout(timer);
	}
	return guardsError;
}

/** The context guard as the library answers right now. */
export function contextGuard(): GuardState {
	if (typeof guards?.isGuardOff !== "function") return "unavailable";
	try {
		const off = guards.isGuardOff("context");
		return off === true ? "off" : off === false ? "on" : "unavailable";
	} catch {
		return "unavailable";
	}
}

/** A registry value as plain JSON (functions and cycles dropped); `undefined` when it cannot be copied. */
function plain(value: unknown): unknown {
	try {
		return JSON.parse(JSON.stringify(value ?? null));
	} catch {
		return undefined;
	}
}

function listOf(value: unknown): unknown[] | undefined {
	if (value instanceof Map) return [...value.values()];
	if (Array.isArray(value)) return value;
	if (value && typeof (value as Iterable<unknown>)[Symbol.iterator] === "function" && typeof value !== "string")
		return [...(value as Iterable<unknown>)];
	return undefined;
}

const JOBS = Symbol.for("pi-jobs.liveManagers");

/**
 * What the live job managers list: each manager's `list()` (or `listJobs()`, or its `jobs`
 * collection), as plain JSON records; `null` when the process has no registry or it cannot be read.
 */
export function jobRecords(): unknown[] | null {
	try {
		const managers = listOf((globalThis as Record<symbol, unknown>)[JOBS]);
		if (!managers) return null;
		const records: unknown[] = [];
		for (const manager of managers) {
			const m = manager as { list?: () => unknown; listJobs?: () => unknown; jobs?: unknown };
			const listed = typeof m?.list === "function" ? m.list() : typeof m?.listJobs === "function" ? m.listJobs() : m?.jobs;
			for (const record of listOf(listed) ?? []) {
				const copy = plain(record);
				if (copy !== undefined) records.push(copy);
			}
		}
		return records;
	} catch {
		return null;
	}
}

const SUBAGENTS = Symbol.for("pi-subagents:manager");

/**
 * The subagent manager's records: `listAgents()`, else `getRecord(id)` for the ids found in this
 * session's task directory; `null` when neither is available.
 */
export function subagentRecords(taskIds: string[] | null | undefined): unknown[] | null {
	try {
		const manager = (globalThis as Record<symbol, unknown>)[SUBAGENTS] as
			| { listAgents?: () => unknown; getRecord?: (id: string) => unknown }
			| undefined;
		if (!manager) return null;
		let listed: unknown[] | undefined;
		if (typeof manager.listAgents === "function") listed = listOf(manager.listAgents());
		else if (typeof manager.getRecord === "function" && taskIds) listed = taskIds.map((id) => manager.getRecord!(id)).filter((r) => r != null);
		if (!listed) return null;
		return listed.map(plain).filter((r) => r !== undefined);
	} catch {
		return null;
	}
}
