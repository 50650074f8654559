//! Tool specs: the name, label and description of every tool Relay registers, as the model reads
//! them (snapshot-tested in `tests::tool_specs_are_what_the_model_reads`).
//!
//! **Contract.** The order is the registration order; every name here is dispatched by
//! [`super::Engine::tool`] (or, for `context_handoff`, by the binding through the three
//! `handoff_*` steps), and the extension registers exactly these tools.

use serde_json::Value;

use super::wire::{CommandSpec, ToolSpec};
use crate::args;
use crate::tool_name::ToolName;

/// Every tool Relay registers, in registration order.
pub fn tool_specs() -> Vec<ToolSpec> {
    let schemas = args::parameter_schemas();
    let spec = |name: &'static str, label, description| ToolSpec {
        name,
        label,
        description,
        parameters: schemas.get(name).cloned().unwrap_or(Value::Null),
        collects_git: name == args::CONTEXT_HANDOFF,
        uses_pi_usage: name == args::CONTEXT_HANDOFF || name == args::GET_CONTEXT_REMAINING,
        needs_history: ToolName::of(name).is_history(),
    };
    vec![
        spec(
            "history_list_windows",
            "History: list windows",
            "List the context windows of this session (oldest window is the root), each with what opened it (a handoff or a reset). Every item of every window stays readable with the history tools, even after resets. A reply holds at most 64 KiB (65,536 bytes of JSON): a longer list stops early and next_offset says where to continue (pass it as offset).",
        ),
        spec(
            "history_list_items",
            "History: list items",
            "List items (user, assistant, tool and system messages) of the durable session history, including windows before resets. Filter by window_id, role, tool_namespace or tool_name. A reply holds at most 64 KiB (65,536 bytes of JSON): a longer list stops early (the last item may be cut) and next_offset says where to continue (pass it as offset).",
        ),
        spec(
            "history_read_item",
            "History: read item",
            "Read one history item by window_id and item_id, as a range of Unicode characters (offset_chars, limit_chars). The reply says where the next range starts (next_offset_chars). A reply holds at most 64 KiB (65,536 bytes of JSON): a longer range is cut there and next_offset_chars continues right after it.",
        ),
        spec(
            "history_search_contents",
            "History: search",
            "Search every item of the session history, across all windows, for a case-sensitive literal substring (no regex, no semantic search). Filter by window_id, role, tool_namespace or tool_name. A reply holds at most 64 KiB (65,536 bytes of JSON): more hits than fit stop early and next_offset says where to continue (pass it as offset).",
        ),
        spec(
            "notes_list_files_by_prefix",
            "Notes: list",
            "List your notes (session-scoped virtual files that survive window resets) whose path starts with prefix, with line and byte counts. A reply holds at most 64 KiB (65,536 bytes of JSON): a longer list stops early and next_offset says where to continue (pass it as offset).",
        ),
        spec(
            "notes_read_file",
            "Notes: read",
            "Read a note, optionally a line range: start_line and end_line are 1-based and inclusive; negative values count from the end (-1 is the last line). A reply holds at most 64 KiB (65,536 bytes of JSON): a longer range stops after the last whole line that fits (or inside a very long line) and next_start_line (with next_offset_chars inside a line) says where to continue.",
        ),
        spec(
            "notes_search_contents",
            "Notes: search",
            "Search your notes for a case-sensitive literal substring; returns matching lines with their line numbers. path_prefix narrows the search. A reply holds at most 64 KiB (65,536 bytes of JSON): more matching lines than fit stop early and next_offset says where to continue (pass it as offset).",
        ),
        spec(
            "notes_append_to_file",
            "Notes: append",
            "Append text to a note, creating it if needed. Paths are relative virtual paths like plan/todo.md. A note holds at most 1,000,000 UTF-8 bytes.",
        ),
        spec(
            "notes_write_file",
            "Notes: write",
            "Create or replace a note with the given content. Empty content deletes the note. Paths are relative virtual paths like plan/todo.md. A note holds at most 1,000,000 UTF-8 bytes.",
        ),
        spec(
            "new_context",
            "New context window",
            "Start a fresh context window once this run settles: the conversation so far leaves the context (it stays searchable with the history tools) and the new window opens with your notes index. Write notes first. Call it alone in its tool batch.",
        ),
        spec(
            "context_handoff",
            "Context handoff",
            "Write a structured handoff and continue in a fresh context window from it (when the budget policy enforces; otherwise nothing is written). Required: goal (the task, verbatim where it matters), next_step (the exact next action), facts (the state you checked: commits, test results, completed work). Optional: decisions, user_constraints (verbatim, never shortened), open_items, hypotheses (unverified, kept apart from facts), files_to_read (absolute paths), launch_prompt (absolute path). Everything you write is recorded as your own claims for the next window to check; git branch and HEAD are recorded by Relay itself. The narrative sections (goal, next_step, facts, decisions, open_items, hypotheses) share 12 KiB: longer ones are shortened in the handoff, and the reply's shortened field names each one with its size before and after (the JSON sidecar keeps them whole). Call it alone and end your turn: the reset happens at the end of this turn.",
        ),
        spec(
            "get_context_remaining",
            "Context remaining",
            "Report the estimated tokens left in this window before the compaction reserve: {\"remaining_tokens\": n}, or null when Pi cannot estimate it (no reply with usage yet in this window).",
        ),
        spec(
            "memory",
            "Memory",
            "Anthropic's memory tool over your notes (the same files as the notes_* tools; they survive window resets). /memories is the folder of all notes: /memories/plan.md is the note plan.md. Commands: view (a note, optionally view_range [first, last]; or a folder: lists its notes), create (path, file_text: the whole note), str_replace (path, old_str occurring exactly once, new_str), insert (path, insert_line: after this line, 0 = at the start; insert_text), delete (path). rename is not supported: write the new note and delete the old one.",
        ),
    ]
}

/// The `/relay` command Relay registers (its arguments are `Engine`'s status and toggle).
pub fn command_spec() -> CommandSpec {
    CommandSpec {
        name: "relay".into(),
        description: "Relay context windows: /relay (status), /relay config (every setting in force and where it came from), /relay stats (what each window cost), /relay on, /relay off".into(),
        completions: ["on", "off", "status", "config", "stats"].map(String::from).to_vec(),
    }
}
