// The host's own share, for bench/host.mjs and bench/resume.mjs: an extension with Relay's hooks
// and the script's tool names that does nothing. What Pi spends around any extension's handlers
// (its per-handler copy of the context messages, the tool machinery, and for a boundary hook,
// `turn_end` or `agent_before_settle`, the preview of the whole branch it builds for it) shows up
// here. The hooks are Relay's own, so the two cannot drift apart: the ones its index.ts subscribes
// to itself (`pi.on`) and the ones its engine lists in `describe` (`hooks`), without the boundary
// hooks it subscribes to only while its engine needs them, which a quiet window does without.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { readFileSync } from "node:fs";
import { Type } from "typebox";
import { native } from "../../extension/src/native.ts";

const RELAY_INDEX = new URL("../../extension/src/index.ts", import.meta.url);

/** Every event Relay's extension subscribes to (its index.ts's `pi.on("<event>", ...)` and its engine's hook list). */
export function relayHooks(): string[] {
	const own = [...readFileSync(RELAY_INDEX, "utf8").matchAll(/\bpi\.on\(\s*"([a-z_]+)"/g)].map((m) => m[1]!);
	const describe = { type: "describe", piVersion: "1.6.0", configDir: ".pi", runtime: `node ${process.versions.node}` };
	const out = JSON.parse(new (native().Engine)().handle(JSON.stringify(describe), null));
	const listed = (out.value.hooks as { name: string; boundary: boolean }[]).filter((h) => !h.boundary).map((h) => h.name);
	const hooks = [...new Set([...own, ...listed])];
	if (!hooks.includes("context") || !hooks.includes("message_end") || !hooks.includes("session_start")) {
		throw new Error(`bench/host/empty.ts: could not read Relay's hooks from ${RELAY_INDEX.pathname} and its engine`);
	}
	return hooks;
}

export default function empty(pi: ExtensionAPI) {
	for (const event of relayHooks()) {
		(pi.on as (event: string, handler: () => undefined) => void)(event, () => undefined);
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
