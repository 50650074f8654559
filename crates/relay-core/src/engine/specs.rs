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
            "List this session's context windows (the oldest is the root) with item counts and what opened each (handoff, reset, compaction). Replies stop at 64 KiB; continue with offset=next_offset.",
        ),
        spec(
            "history_list_items",
            "History: list items",
            "List items (user, assistant, tool, system) of any window, also before resets, each cut to max_chars_per_item. Replies stop at 64 KiB (the last item may be cut); continue with offset=next_offset.",
        ),
        spec(
            "history_read_item",
            "History: read item",
            "Read a range of Unicode characters of one history item. Replies stop at 64 KiB; next_offset_chars says where the next range starts.",
        ),
        spec(
            "history_search_contents",
            "History: search",
            "Find a case-sensitive literal substring (no regex, no semantic search) in the items of every window, with a snippet around each hit. Replies stop at 64 KiB; continue with offset=next_offset.",
        ),
        spec(
            "notes_list_files_by_prefix",
            "Notes: list",
            "List your notes (session-scoped virtual files that survive window resets) under a path prefix, with line and byte counts. Replies stop at 64 KiB; continue with offset=next_offset.",
        ),
        spec(
            "notes_read_file",
            "Notes: read",
            "Read a note or a line range of it. Replies stop at 64 KiB after the last whole line that fits; next_start_line (and next_offset_chars inside a long line) says where to continue.",
        ),
        spec(
            "notes_search_contents",
            "Notes: search",
            "Find a case-sensitive literal substring in your notes: the matching lines with their numbers. Replies stop at 64 KiB; continue with offset=next_offset.",
        ),
        spec(
            "notes_append_to_file",
            "Notes: append",
            "Append text to a note, creating it if needed. A note holds at most 1,000,000 UTF-8 bytes.",
        ),
        spec(
            "notes_write_file",
            "Notes: write",
            "Create or replace a note; empty content deletes it. A note holds at most 1,000,000 UTF-8 bytes.",
        ),
        spec(
            "new_context",
            "New context window",
            "Start a fresh context window once this run settles: the conversation leaves the context (the history tools still find it); the new window opens with your notes index. Write notes first; call it alone in its batch.",
        ),
        spec(
            "context_handoff",
            "Context handoff",
            "Write a structured handoff and continue from it in a fresh window (only when the budget policy enforces; else nothing is written). Your fields are recorded as claims for the next window to check; Relay records git branch and HEAD. The narrative fields share 12 KiB: longer ones are shortened (the reply names them; the JSON sidecar keeps them whole). Call it alone and end your turn: the reset follows.",
        ),
        spec(
            "get_context_remaining",
            "Context remaining",
            "Estimated tokens left in this window before the compaction reserve: {\"remaining_tokens\": n}, or null before Pi can estimate it (no reply with usage yet in this window).",
        ),
        spec(
            "memory",
            "Memory",
            "Anthropic's memory tool over your notes (the notes_* files). /memories is the folder of all notes: /memories/plan.md is the note plan.md. Commands: view (a note, optionally view_range; a folder lists its notes), create, str_replace, insert, delete. rename is unsupported: create the new note, delete the old.",
        ),
    ]
}

/// The `/relay` command Relay registers (its arguments are `Engine`'s status and toggle).
pub fn command_spec() -> CommandSpec {
    CommandSpec {
        name: "relay".into(),
        description: "Relay context windows: /relay (status), /relay config (every setting in force and where it came from), /relay stats (what each window cost), /relay pins (the instructions every window's boot block repeats), /relay pin <text>, /relay unpin <n>, /relay on, /relay off".into(),
        completions: ["on", "off", "status", "config", "stats", "pins", "pin", "unpin"].map(String::from).to_vec(),
    }
}

#[cfg(test)]
#[path = "specs_tests.rs"]
mod tests;
