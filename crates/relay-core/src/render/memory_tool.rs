//! Every error the `memory` tool returns: each names `memory`, the argument and, where the model
//! must do something else, the notes tool to use, and says that nothing changed (the translation
//! into notes calls is [`crate::memory_tool`]).

use crate::args::{invalid, quote_name, MEMORY as TOOL, MEMORY_ROOT as ROOT};
use crate::ToolOutput;

/// An argument the command does not use; `takes` are the ones it does.
pub fn not_used(name: &str, command: &str, takes: &[&str]) -> ToolOutput {
    invalid(
        TOOL,
        name,
        format!(
            "is not used by the {command} command, which takes {}; nothing was changed",
            takes.join(", ")
        ),
    )
}

/// A required argument is missing.
pub fn required(name: &str) -> ToolOutput {
    invalid(TOOL, name, "is required")
}

/// `view` of a path that is no note and holds none.
pub fn no_note_or_folder(path: &str) -> ToolOutput {
    invalid(
        TOOL,
        "path",
        format!(
            "names no note and no folder of notes: {}; nothing under {ROOT} matches (view {ROOT} lists every note)",
            quote_name(path)
        ),
    )
}

/// `delete` of a note that does not exist.
pub fn nothing_to_delete(path: &str) -> ToolOutput {
    invalid(
        TOOL,
        "path",
        format!(
            "names no note: {}; nothing was deleted (view {ROOT} lists every note; a folder goes when its last note does)",
            quote_name(path)
        ),
    )
}

/// `str_replace` with an empty `old_str`.
pub fn empty_old_str() -> ToolOutput {
    invalid(
        TOOL,
        "old_str",
        "is empty; give the text to replace (to add text use the insert command or notes_append_to_file)",
    )
}

/// `str_replace` whose `old_str` occurs `count` times (not once) in the note `path`.
pub fn old_str_not_unique(path: &str, count: usize) -> ToolOutput {
    let how = if count == 0 {
        "does not occur in".to_string()
    } else {
        format!("occurs {count} times in")
    };
    invalid(
        TOOL,
        "old_str",
        format!(
            "{how} {}; it must occur exactly once, nothing was changed (read the note with notes_read_file, then give a longer old_str)",
            quote_name(path)
        ),
    )
}

/// `insert` after line `line` of a note `path` of `lines` lines.
pub fn insert_line_past_end(path: &str, line: usize, lines: usize) -> ToolOutput {
    invalid(
        TOOL,
        "insert_line",
        format!(
            "is {line}, but {} has {lines} line(s); nothing was changed (0 inserts at the start, {lines} at the end)",
            quote_name(path),
        ),
    )
}

/// `rename`, which no notes call does.
pub fn rename_unsupported() -> ToolOutput {
    ToolOutput::error(format!(
        "{TOOL}: the rename command has no notes equivalent; nothing was changed. Read the note with notes_read_file, write it under the new path with notes_write_file, then delete the old one with notes_write_file and empty content."
    ))
}

/// A path outside `/memories`.
pub fn outside_root(name: &str, path: &str) -> ToolOutput {
    invalid(
        TOOL,
        name,
        format!(
            "must be under {ROOT} (your notes: {ROOT}/plan.md is the note plan.md), got {}",
            quote_name(path)
        ),
    )
}

/// A folder where the command needs a note.
pub fn names_a_folder(name: &str, path: &str) -> ToolOutput {
    invalid(
        TOOL,
        name,
        format!(
            "names a folder, not a file: {}; give a file path like {ROOT}/plan.md",
            quote_name(path)
        ),
    )
}

/// A note the command changes does not exist.
pub fn no_such_note(path: &str) -> ToolOutput {
    invalid(
        TOOL,
        "path",
        format!(
            "names no note: {}; nothing was changed (create it first; view {ROOT} lists every note)",
            quote_name(path)
        ),
    )
}

#[cfg(test)]
#[path = "memory_tool_tests.rs"]
mod tests;
