// Loads the Rust core (napi-rs addon). Everything Relay decides is decided in there.
import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
// The JSON the engine reads and writes has these types (generated from the Rust wire types).
import type { Input, Job, JobOutcome, Output } from "./generated/wire.ts";

/**
 * The addon's surface (crates/relay-node): one door into the engine and one job runner. Every
 * argument and result is a JSON string of a type in ./generated/wire.ts; an input with a field
 * the engine does not know is an error.
 */
export interface NativeEngine {
	/**
	 * Feed what Pi appended since the engine's tip (`feed`: `{truncate?, after?, append?}`), then
	 * handle one {@link Input}; returns the {@link Output}.
	 */
	handle(input: string, feed?: string | null): string;
}

interface NativeModule {
	Engine: new () => NativeEngine;
	/** Run a {@link Job} on the libuv pool: a promise of its {@link JobOutcome} JSON. */
	runJob(job: string): Promise<string>;
	version(): string;
	/** The one line Pi's TUI shows for a Relay message, or `null` for a type that is not Relay's. */
	messageLine(customType: string, content: string): string | null;
}

const here = dirname(fileURLToPath(import.meta.url));
const requireHere = createRequire(import.meta.url);

/** napi-rs's name for this machine: `<platform>-<arch>[-<abi>]`, e.g. `linux-x64-gnu`. */
function triple(): string {
	const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime;
	const abi = process.platform === "linux" ? (glibc ? "-gnu" : "-musl") : process.platform === "win32" ? "-msvc" : "";
	return `${process.platform}-${process.arch}${abi}`;
}

/**
 * Where the addon is: `RELAY_ADDON` when set (an explicit choice wins), else the platform package
 * npm installed beside pi-relay (`pi-relay-<triple>`), else a local build in `native/`
 * (`make build`). None of them: an error naming the platform and how to build the core (on
 * Windows, which Relay does not support, an error saying so).
 */
function addonPath(): string {
	if (process.platform === "win32") {
		throw new Error("relay: Relay does not support Windows: its core needs Unix (process groups, file modes, O_NOFOLLOW) and does not build there. Pi runs without Relay.");
	}
	const fromEnv = process.env.RELAY_ADDON;
	if (fromEnv) return fromEnv;
	const name = triple();
	const platformPackage = `pi-relay-${name}`;
	try {
		return requireHere.resolve(`${platformPackage}/relay.${name}.node`);
	} catch {
		// not installed: try a local build
	}
	const candidates = [join(here, "..", "native", `relay.${name}.node`), join(here, "..", "native", "relay.node")];
	const found = candidates.find((candidate) => existsSync(candidate));
	if (!found) {
		throw new Error(
			`relay: no Relay core for ${name}: the package ${platformPackage} is not installed (there is no prebuilt core for this platform, or npm skipped optional dependencies) and there is no local build (${candidates.join(", ")}). Build it from source with \`make build\` in a Relay checkout (needs Rust), or set RELAY_ADDON to a built relay.node. Pi runs without Relay until then.`,
		);
	}
	return found;
}

let cached: NativeModule | undefined;

/** The addon, loaded once per process (a /reload re-evaluates this module but dlopen returns the same library). */
export function native(): NativeModule {
	if (!cached) cached = requireHere(addonPath()) as NativeModule;
	return cached;
}
