// Timing probes for bench/host.mjs, loaded twice around the extension under test
// (timing-before.ts, then the extension, then timing-after.ts): Pi runs each event's handlers in
// load order, so the difference of the two probes is the time of the extension between them.
// A tool's execution is the time from the last `tool_call` handler to the first `tool_result` one.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

const KEY = Symbol.for("relay.host-bench");
type Mark = { event: string; probe: "before" | "after"; t: number; toolName?: string; toolCallId?: string };
const marks = (): Mark[] => ((globalThis as { [KEY]?: Mark[] })[KEY] ??= []);

const EVENTS = ["session_start", "input", "before_agent_start", "context", "tool_call", "tool_result", "turn_end", "agent_end"] as const;

export function probe(which: "before" | "after") {
	return (pi: ExtensionAPI) => {
		for (const event of EVENTS) {
			pi.on(event, (e: any) => {
				marks().push({ event, probe: which, t: performance.now(), toolName: e?.toolName, toolCallId: e?.toolCallId });
				return undefined;
			});
		}
		if (which === "after") {
			pi.on("session_shutdown", () => {
				const out = process.env.RELAY_HOST_BENCH_OUT;
				if (out) writeFileSync(out, JSON.stringify(marks()));
				return undefined;
			});
		}
	};
}
