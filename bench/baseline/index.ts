// The baseline of bench/host.mjs: a straightforward TypeScript implementation of the work Relay
// does in the host, written the way the seed extensions did it. Every hook and tool walks Pi's
// branch (`getBranch()`) and asks Pi for its usage (`getContextUsage()`, another branch walk);
// history search rebuilds the items and scans them with `includes`; notes are replayed from the
// branch before each write. Only what the benchmark's script calls is implemented. Not part of
// the Relay package.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

const NOTE = "baseline/note";
const REMINDER = "baseline/reminder";

type Item = { id: string; role: string; text: string };

function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content.filter((p: any) => p.type === "text").map((p: any) => p.text).join("\n");
}

/** Every message of the branch as a searchable item. */
function items(ctx: ExtensionContext): Item[] {
	const out: Item[] = [];
	for (const e of ctx.sessionManager.getBranch() as any[]) {
		if (e.type !== "message") continue;
		out.push({ id: e.id, role: e.message.role, text: textOf(e.message.content) });
	}
	return out;
}

/** The notes, replayed from the branch's note entries. */
function notes(ctx: ExtensionContext): Map<string, string> {
	const files = new Map<string, string>();
	for (const e of ctx.sessionManager.getBranch() as any[]) {
		if (e.type !== "custom" || e.customType !== NOTE) continue;
		const d = e.data as { path: string; content: string };
		files.set(d.path, d.content);
	}
	return files;
}

/** Whether the current window already holds the low-budget reminder (a scan back to its start). */
function reminded(ctx: ExtensionContext): boolean {
	const branch = ctx.sessionManager.getBranch() as any[];
	for (let i = branch.length - 1; i >= 0; i--) {
		const e = branch[i];
		if (e.type === "compaction") return false;
		if (e.type === "custom_message" && e.customType === REMINDER) return true;
	}
	return false;
}

function budget(ctx: ExtensionContext) {
	const usage = ctx.getContextUsage();
	return { tokens: usage?.tokens ?? null, window: usage?.contextWindow ?? null };
}

const text = (value: unknown) => ({ content: [{ type: "text" as const, text: JSON.stringify(value) }], details: {} });

export default function baseline(pi: ExtensionAPI) {
	let state = { notes: 0, items: 0 };
	pi.on("session_start", (_e, ctx) => {
		state = { notes: notes(ctx).size, items: items(ctx).length };
	});
	pi.on("context", (_e, ctx) => {
		budget(ctx);
		reminded(ctx);
		return undefined;
	});
	pi.on("tool_call", (_e, ctx) => {
		budget(ctx);
		return undefined;
	});
	pi.registerTool({
		name: "history_search_contents",
		label: "History search",
		description: "Case-sensitive substring search over the session's messages, newest first.",
		parameters: Type.Object({ query: Type.String(), limit: Type.Optional(Type.Number()) }),
		async execute(_id, params: { query: string; limit?: number }, _signal, _update, ctx) {
			budget(ctx);
			const limit = params.limit ?? 20;
			const all = items(ctx);
			const hits = [];
			for (let i = all.length - 1; i >= 0 && hits.length < limit; i--) {
				const at = all[i].text.indexOf(params.query);
				if (at < 0) continue;
				hits.push({ item_id: all[i].id, role: all[i].role, match_offset_chars: at, snippet: all[i].text.slice(Math.max(0, at - 80), at + params.query.length + 80) });
			}
			return text({ items: hits });
		},
	});
	pi.registerTool({
		name: "notes_append_to_file",
		label: "Append to a note",
		description: "Append text to a note file.",
		parameters: Type.Object({ path: Type.String(), content: Type.String() }),
		async execute(_id, params: { path: string; content: string }, _signal, _update, ctx) {
			budget(ctx);
			const files = notes(ctx);
			const content = (files.get(params.path) ?? "") + params.content;
			pi.appendEntry(NOTE, { path: params.path, content });
			state.notes = files.size;
			return text({ path: params.path, bytes: Buffer.byteLength(content), lines: content.split("\n").length - 1 });
		},
	});
}
