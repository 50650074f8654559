// The probe of bench/resume.mjs, loaded last: the time of `session_start` and of the first
// `context` handler (the last handler before the first provider request), written with the peak
// resident set (VmHWM) when the process exits, after anything still running in it has stopped.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { readFileSync, writeFileSync } from "node:fs";

const status = (key: string): number => {
	const line = readFileSync("/proc/self/status", "utf8").split("\n").find((l) => l.startsWith(`${key}:`));
	return line ? Number(line.split(/\s+/)[1]) * 1024 : Number.NaN;
};

export default function resumeProbe(pi: ExtensionAPI) {
	const out = process.env.RELAY_RESUME_BENCH_OUT;
	if (!out) return;
	const marks: { sessionStart?: number; firstRequest?: number; rssAtFirstRequest?: number; answer?: number; agentEnd?: number; settled?: number; shutdown?: number } = {};
	// The run's end, on hooks that are not boundary hooks (a subscriber to those makes Pi build its
	// whole-branch preview): the answer's end, then `turn_end` (its preview), then the run's end,
	// then `agent_before_settle` (its preview), then the settle.
	pi.on("message_end", (event) => {
		if ((event.message as { role?: string }).role === "assistant") marks.answer ??= Date.now();
		return undefined;
	});
	pi.on("agent_end", () => {
		marks.agentEnd ??= Date.now();
		return undefined;
	});
	pi.on("agent_settled", () => {
		marks.settled ??= Date.now();
		return undefined;
	});
	pi.on("session_start", () => {
		marks.sessionStart ??= Date.now();
		return undefined;
	});
	pi.on("context", () => {
		if (marks.firstRequest === undefined) {
			marks.firstRequest = Date.now();
			marks.rssAtFirstRequest = status("VmRSS");
		}
		return undefined;
	});
	pi.on("session_shutdown", () => {
		marks.shutdown ??= Date.now();
		return undefined;
	});
	process.on("exit", () => {
		writeFileSync(out, JSON.stringify({ ...marks, exit: Date.now(), peakRss: status("VmHWM") }));
	});
}
