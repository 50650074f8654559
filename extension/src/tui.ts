// Relay's messages in Pi's interactive TUI: one line each (the engine writes it), the full text
// one expand key away. The model still receives the full text; this is only what the chat shows.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Text } from "@earendil-works/pi-tui";
import { native } from "./native.ts";

function textOf(content: unknown): string {
	if (!Array.isArray(content)) return typeof content === "string" ? content : "";
	return content.map((b: { type?: string; text?: string }) => (b?.type === "text" ? (b.text ?? "") : "")).join("");
}

export function registerRenderers(pi: ExtensionAPI, types: string[]): void {
	const core = native();
	for (const customType of types) {
		pi.registerMessageRenderer(customType, (message, options, theme) => {
			const text = textOf(message.content);
			const line = theme.fg("accent", core.messageLine(customType, text) ?? `Relay · ${customType}`);
			// Pi 1.6 names the user's expand key; Pi 1.3 has no key hints.
			const hints = options as { keyHint?: (action: string, text: string) => string };
			const hint = hints.keyHint ? hints.keyHint("app.tools.expand", "to expand") : "ctrl+o to expand";
			const body = options.expanded ? `${line}\n${text}` : `${line} ${theme.fg("dim", `(${hint})`)}`;
			return new Text(body, options.outputPad, 0);
		});
	}
}
