// The host's own share, for bench/host.mjs: an extension with Relay's hooks and the script's tool
// names that does nothing. What Pi spends around any extension's handlers between the probes
// (its per-handler copy of the context messages, the tool machinery) shows up here.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

export default function empty(pi: ExtensionAPI) {
	for (const event of ["session_start", "before_agent_start", "context", "tool_call", "tool_result", "turn_end", "agent_end"] as const) {
		pi.on(event, () => undefined);
	}
	for (const name of ["history_search_contents", "notes_append_to_file"]) {
		pi.registerTool({
			name,
			label: name,
			description: "does nothing (host benchmark)",
			parameters: Type.Object({}, { additionalProperties: true }),
			async execute() {
				return { content: [{ type: "text" as const, text: "{}" }], details: {} };
			},
		});
	}
}
