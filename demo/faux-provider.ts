// An offline model for the demo and the end-to-end tests: registers pi-ai's faux provider as
// provider "faux" (model faux-1) and replies from the JSON script in $RELAY_FAUX_SCRIPT.
// A step is {"text": "..."} or {"tool": "name", "args": {...}}; "tokens": N makes Pi record N total
// tokens of usage for that reply (to cross budget thresholds); "usage": {...} sets those usage fields
// as a provider would report them (e.g. {"cost": {"total": 0.0123}}); "error": "..." replies with an error.
// With RELAY_FAUX_TRACE=1 every request is printed to stderr as the model saw it; with
// RELAY_FAUX_DUMP=<file> each request's whole message list is appended to that file as one JSON line.
// {"followStub": true} calls history_read_item with the arguments the first cleared tool result of
// the request names (as a model reading Relay's stub would), plus the step's "args".
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { fauxAssistantMessage, fauxProvider, fauxToolCall } from "@earendil-works/pi-ai";
import { appendFileSync, readFileSync } from "node:fs";

interface Step {
	text?: string;
	tool?: string;
	args?: Record<string, unknown>;
	tokens?: number;
	usage?: Record<string, unknown>;
	error?: string;
	followStub?: boolean;
}

function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.map((b: any) => (b.type === "text" ? b.text : b.type === "toolCall" ? `[calls ${b.name} ${JSON.stringify(b.arguments)}]` : ""))
		.join(" ");
}

export default function (pi: ExtensionAPI) {
	const file = process.env.RELAY_FAUX_SCRIPT;
	const script: Step[] = file ? JSON.parse(readFileSync(file, "utf8")) : [];
	const trace = process.env.RELAY_FAUX_TRACE === "1";
	const dump = process.env.RELAY_FAUX_DUMP;
	const faux = fauxProvider({
		provider: "faux",
		models: [{ id: "faux-1", contextWindow: Number(process.env.RELAY_FAUX_WINDOW ?? 128000), maxTokens: 4096 }],
	});
	let n = 0;
	let pendingTokens: number | undefined;
	let pendingUsage: Record<string, unknown> | undefined;
	const step = (context: { messages: Array<{ role: string; content?: unknown }> }) => {
		const item = script[n++];
		if (trace) {
			const lines = context.messages.map((m) => {
				const text = textOf(m.content).replace(/\s+/g, " ").trim();
				return `    ${m.role.padEnd(16)} ${text.length > 110 ? `${text.slice(0, 110)}…` : text}`;
			});
			process.stderr.write(`\n── request ${n}: the model sees ${context.messages.length} messages\n${lines.join("\n")}\n`);
		}
		if (dump) appendFileSync(dump, `${JSON.stringify(context.messages)}\n`);
		pendingTokens = item?.tokens;
		pendingUsage = item?.usage;
		if (!item) return fauxAssistantMessage("(the demo script has no more replies)");
		if (item.error) return fauxAssistantMessage([], { stopReason: "error", errorMessage: item.error });
		if (item.followStub) {
			const stub = context.messages
				.filter((m) => m.role === "toolResult")
				.map((m) => textOf(m.content).match(/history_read_item (\{[^}]*\})\]$/))
				.find(Boolean);
			if (!stub) return fauxAssistantMessage("(no cleared tool result to read back)");
			return fauxAssistantMessage([fauxToolCall("history_read_item", { ...JSON.parse(stub[1]), ...item.args } as any)], { stopReason: "toolUse" });
		}
		if (item.tool) return fauxAssistantMessage([fauxToolCall(item.tool, (item.args ?? {}) as any)], { stopReason: "toolUse" });
		return fauxAssistantMessage(item.text ?? "");
	};
	faux.setResponses(Array.from({ length: 500 }, () => step));
	pi.registerProvider(faux.provider);
	pi.on("message_end", (event) => {
		const message = event.message as any;
		if (message.role !== "assistant" || (pendingTokens === undefined && pendingUsage === undefined)) return undefined;
		const fields = { ...(pendingTokens === undefined ? {} : { totalTokens: pendingTokens }), ...pendingUsage };
		pendingTokens = undefined;
		pendingUsage = undefined;
		return { message: { ...message, usage: { ...message.usage, ...fields } } };
	});
}
