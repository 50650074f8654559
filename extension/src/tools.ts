// Parameter schemas of Relay's tools. Names, labels and descriptions come from the engine
// (crates/relay-core, snapshot-tested); argument checking beyond types is the engine's as well.
import { Type, type TSchema } from "typebox";

const optInt = (description: string) => Type.Optional(Type.Integer({ description }));
const optStr = (description: string) => Type.Optional(Type.Union([Type.String(), Type.Null()], { description }));
const role = Type.Optional(
	Type.Union([Type.Literal("user"), Type.Literal("assistant"), Type.Literal("tool"), Type.Literal("system"), Type.Null()], {
		description: "Only items with this role.",
	}),
);
const recentFirst = Type.Optional(Type.Boolean({ description: "Newest first (default true)." }));
const closed = { additionalProperties: false };

export const TOOL_SCHEMAS: Record<string, TSchema> = {
	history_list_windows: Type.Object({ limit: optInt("At most this many windows."), recent_first: recentFirst }, closed),
	history_list_items: Type.Object(
		{
			window_id: optStr("Only items of this window."),
			role,
			tool_namespace: optStr("Only tool items of this namespace (the tool name before its first underscore)."),
			tool_name: optStr("Only tool items of this tool."),
			limit: optInt("At most this many items (default 50)."),
			recent_first: recentFirst,
			max_chars_per_item: optInt("Truncate each item to this many characters (default 1200)."),
		},
		closed,
	),
	history_read_item: Type.Object(
		{
			window_id: Type.String({ description: "The item's window id." }),
			item_id: Type.String({ description: "The item id." }),
			offset_chars: optInt("Start at this character offset (default 0)."),
			limit_chars: optInt("Read at most this many characters (default 20000)."),
		},
		closed,
	),
	history_search_contents: Type.Object(
		{
			query: Type.String({ description: "Case-sensitive literal text to find." }),
			window_id: optStr("Only items of this window."),
			role,
			tool_namespace: optStr("Only tool items of this namespace."),
			tool_name: optStr("Only tool items of this tool."),
			limit: optInt("At most this many matching items (default 20)."),
			recent_first: recentFirst,
		},
		closed,
	),
	notes_list_files_by_prefix: Type.Object(
		{ prefix: Type.Optional(Type.String({ description: "Path prefix (default: all notes)." })), limit: optInt("At most this many files.") },
		closed,
	),
	notes_read_file: Type.Object(
		{
			path: Type.String({ description: "Note path." }),
			start_line: optInt("First line, 1-based; negative counts from the end."),
			end_line: optInt("Last line, inclusive; negative counts from the end."),
		},
		closed,
	),
	notes_search_contents: Type.Object(
		{
			query: Type.String({ description: "Case-sensitive literal text to find." }),
			path_prefix: Type.Optional(Type.String({ description: "Only notes under this prefix." })),
			limit: optInt("At most this many matching lines."),
		},
		closed,
	),
	notes_append_to_file: Type.Object(
		{ path: Type.String({ description: "Note path." }), content: Type.String({ description: "Text to append." }) },
		closed,
	),
	notes_write_file: Type.Object(
		{
			path: Type.String({ description: "Note path." }),
			content: Type.String({ description: "The whole new content; empty deletes the note." }),
		},
		closed,
	),
	new_context: Type.Object({}, closed),
	context_handoff: Type.Object(
		{
			goal: Type.String({ description: "The task and the original request, verbatim where it matters." }),
			next_step: Type.String({ description: "The exact next action." }),
			facts: Type.String({ description: "Verified state: HEAD/commits, test and CI results, completed work." }),
			decisions: Type.Optional(Type.String({ description: "Decisions taken, and why." })),
			user_constraints: Type.Optional(Type.String({ description: "The user's constraints, verbatim." })),
			open_items: Type.Optional(Type.String({ description: "What is still open." })),
			hypotheses: Type.Optional(Type.String({ description: "Unverified explanations, explicitly not facts." })),
			files_to_read: Type.Optional(Type.Array(Type.String(), { description: "Absolute paths to read first in the next window." })),
			launch_prompt: Type.Optional(Type.String({ description: "Absolute path of a prompt file for a relaunch." })),
		},
		closed,
	),
	get_context_remaining: Type.Object({}, closed),
};
