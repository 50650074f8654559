// Observation masking, for `make bench-arms` only (never part of Relay): at every provider request
// (Pi's `context` hook) the output of every tool call older than the last `turns` turns is replaced
// by a one-line placeholder, as "The Complexity Trap" (Lindenbauer et al., 2025) defines it for
// SWE-agent (a turn: one assistant message and the results of its tool calls). The session keeps
// every output whole; only the request changes. Pi's own compaction stays on beside it.

/** The placeholder of one masked output. */
export const placeholder = (lines) => `[Old tool output omitted: ${lines} lines, older than the last turns.]`;

/** An extension factory that masks tool outputs older than the last `turns` turns. */
export function masking(turns = 10) {
	return (pi) => {
		pi.on("context", (event) => {
			const messages = event.messages;
			// The ids of the tool calls made by the last `turns` assistant messages that called tools.
			const recent = new Set();
			let seen = 0;
			for (let i = messages.length - 1; i >= 0 && seen < turns; i--) {
				const m = messages[i];
				if (m.role !== "assistant" || !Array.isArray(m.content)) continue;
				const calls = m.content.filter((b) => b.type === "toolCall");
				if (!calls.length) continue;
				seen++;
				for (const c of calls) recent.add(c.id);
			}
			if (seen < turns) return undefined;
			let changed = false;
			const masked = messages.map((m) => {
				if (m.role !== "toolResult" || recent.has(m.toolCallId)) return m;
				const text = (m.content ?? []).map((b) => (b.type === "text" ? b.text : "")).join("\n");
				const stub = placeholder(text.split("\n").length);
				if (text === stub) return m;
				changed = true;
				return { ...m, content: [{ type: "text", text: stub }] };
			});
			return changed ? { messages: masked } : undefined;
		});
	};
}
