// A second share of the host's for bench/resume.mjs, loaded with bench/host/empty.ts: Pi's two
// boundary hooks, subscribed and answered with nothing. For each `turn_end` and
// `agent_before_settle` with a subscriber Pi builds a preview of the whole branch, whoever the
// subscriber is; Relay subscribes to them while its engine needs them (engine/boundary.rs), which
// includes the end of a run in a window that holds more than `idleMinTokens`.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function boundaryHooks(pi: ExtensionAPI) {
	pi.on("turn_end", () => undefined);
	pi.on("agent_before_settle", () => undefined);
}
