// Loads the Rust core (napi-rs addon). Everything Relay decides is decided in there.
import { createRequire } from "node:module";
/**
 * The addon's surface as napi-rs generates it (native/relay.d.ts, from crates/relay-node): one door
 * and one job runner; every argument and result is a JSON string of a type in ./generated/wire.ts
 * (`Engine.handle`: an `Input` and a `Feed` in, an `Output` out; `runJob`: a `Job`, its outcome).
 */
type NativeModule = typeof import("../native/relay.js");
export type NativeEngine = InstanceType<NativeModule["Engine"]>;

const requireHere = createRequire(import.meta.url);

/** `RELAY_ADDON` when set (an explicit choice wins), else napi-rs's generated loader native/relay.cjs (`make addon`): a local build beside it, else the platform package `pi-relay-<triple>`. */
function load(): NativeModule {
	if (process.platform === "win32") throw new Error("relay: Relay does not support Windows: its core needs Unix (process groups, file modes, O_NOFOLLOW) and does not build there. Pi runs without Relay.");
	if (process.env.RELAY_ADDON) return requireHere(process.env.RELAY_ADDON) as NativeModule;
	try {
		return requireHere("../native/relay.cjs") as NativeModule;
	} catch (error) {
		const tried: string[] = [];
		for (let e = ((error as Error).cause ?? error) as Error | undefined; e; e = e.cause as Error | undefined) tried.push(String(e.message).split("\n")[0]);
		// The platform's napi-rs name for the message (`linux-x64-gnu`), as the loader works it out.
		const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } })?.header?.glibcVersionRuntime;
		const name = `${process.platform}-${process.arch}${process.platform !== "linux" ? "" : glibc ? "-gnu" : "-musl"}`;
		throw new Error(`relay: no Relay core for ${name}: the package pi-relay-${name} is not installed (there is no prebuilt core for this platform, or npm skipped optional dependencies) and there is no local build (native/relay.${name}.node). Build it from source with \`make build\` in a Relay checkout (needs Rust), or set RELAY_ADDON to a built relay.node. Pi runs without Relay until then. The loader said: ${tried.reverse().join("; ")}`);
	}
}

let cached: NativeModule | undefined;
/** The addon, loaded once per process (a /reload re-evaluates this module but dlopen returns the same library). */
export function native(): NativeModule {
	return (cached ??= load());
}
