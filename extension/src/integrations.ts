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
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { GuardState } from "./generated/wire.ts";

type GuardLibrary = { isGuardOff?: (name: string) => unknown };
let guards: GuardLibrary | undefined;
let guardsTried: string | undefined;

/**
 * Load `<agent dir>/lib/guards.ts` once per agent dir, when it exists (dynamic import; the file is
 * never written). A library that fails to load leaves the guard unavailable.
 */
export async function loadGuards(): Promise<void> {
	const file = join(getAgentDir(), "lib", "guards.ts");
	if (guards || guardsTried === file || !existsSync(file)) return;
	guardsTried = file;
	try {
		guards = (await import(pathToFileURL(file).href)) as GuardLibrary;
	} catch {
		guards = undefined;
	}
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
