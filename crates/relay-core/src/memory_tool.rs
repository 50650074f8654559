//! The `memory` tool: Anthropic's memory tool (`view`, `create`, `str_replace`, `insert`,
//! `delete`, `rename` on paths under `/memories`) over Relay's notes, for models trained on it.
//!
//! **Contract.** A call is translated into one call of a notes tool, which then runs as if the
//! model had made it (same checks, same result, the same `relay/note` entry on the branch): no
//! second store, so a note written as `/memories/plan.md` is the note `plan.md` of every notes
//! tool, the boot block's index and the handoff.
//! - `/memories` is the folder of all notes; `/memories/a/b.md` is the note `a/b.md`. A path
//!   outside it is refused, naming the argument.
//! - `view` of a note reads it (`notes_read_file`, `view_range` as `start_line`/`end_line`); of
//!   `/memories` or a folder that holds notes, lists them (`notes_list_files_by_prefix`).
//! - `create` writes the whole note (`notes_write_file`); `delete` writes it empty, which deletes
//!   it (`notes_write_file` with empty content).
//! - `str_replace` (the text must occur exactly once) and `insert` (after a line, 0 = at the
//!   start) compute the note's new content and write it whole (`notes_write_file`).
//! - `rename` has no notes equivalent (one call persists one operation): an error that says
//!   which notes calls do it, and nothing changes.
//! - Every error names `memory`, the argument and, where the model must do something else, the
//!   notes tool to use (snapshot-tested).

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use serde_json::{json, Value};

use crate::args::{self, Memory, MemoryCommand};
use crate::notes::{Notes, TOOL_LIST, TOOL_READ, TOOL_WRITE};
use crate::ToolOutput;

/// The tool's name, as registered with Pi (Anthropic's).
pub const TOOL: &str = "memory";

/// The folder that stands for the notes.
const ROOT: &str = "/memories";

/// One notes call: the tool and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct NotesCall {
    pub tool: &'static str,
    pub args: Value,
}

/// The notes call a `memory` call means, or the error the model reads (nothing changes).
pub fn translate(notes: &Notes, raw: &Value) -> Result<NotesCall, ToolOutput> {
    let a: Memory = args::decode(TOOL, raw)?;
    let takes = takes(a.command);
    let given = raw.as_object().into_iter().flatten();
    if let Some((name, _)) = given
        .filter(|(k, v)| !v.is_null() && !takes.contains(&k.as_str()))
        .find(|(k, _)| *k != "command")
    {
        let command = args::MemoryCommand::NAMES
            .get(a.command as usize)
            .copied()
            .unwrap_or_default();
        return Err(args::invalid(
            TOOL,
            name,
            format!(
                "is not used by the {command} command, which takes {}; nothing was changed",
                takes.join(", ")
            ),
        ));
    }
    let call = |tool, args| Ok(NotesCall { tool, args });
    match a.command {
        MemoryCommand::View => {
            let path = required(a.path.as_ref().map(|t| t.0.as_str()), "path")?;
            let target = note_path(path, "path")?;
            if !target.is_empty() && notes.get(target).is_some() {
                let read = match a.view_range {
                    Some(range) => {
                        json!({ "path": target, "start_line": range.0, "end_line": range.1 })
                    }
                    None => json!({ "path": target }),
                };
                return call(TOOL_READ, read);
            }
            let prefix = if target.is_empty() {
                String::new()
            } else {
                format!("{}/", target.trim_end_matches('/'))
            };
            if !prefix.is_empty() && !notes.iter().any(|n| n.path.starts_with(&prefix)) {
                return Err(args::invalid(
                    TOOL,
                    "path",
                    format!(
                        "names no note and no folder of notes: {}; nothing under {ROOT} matches (view {ROOT} lists every note)",
                        args::quote_name(path)
                    ),
                ));
            }
            call(TOOL_LIST, json!({ "prefix": prefix }))
        }
        MemoryCommand::Create => {
            let path = required(a.path.as_ref().map(|t| t.0.as_str()), "path")?;
            let target = file_path(path, "path")?;
            let text = required(a.file_text.as_ref().map(|t| t.0.as_str()), "file_text")?;
            call(TOOL_WRITE, json!({ "path": target, "content": text }))
        }
        MemoryCommand::Delete => {
            let path = required(a.path.as_ref().map(|t| t.0.as_str()), "path")?;
            let target = file_path(path, "path")?;
            if notes.get(target).is_none() {
                return Err(args::invalid(
                    TOOL,
                    "path",
                    format!(
                        "names no note: {}; nothing was deleted (view {ROOT} lists every note; a folder goes when its last note does)",
                        args::quote_name(path)
                    ),
                ));
            }
            call(TOOL_WRITE, json!({ "path": target, "content": "" }))
        }
        MemoryCommand::StrReplace => {
            let path = required(a.path.as_ref().map(|t| t.0.as_str()), "path")?;
            let target = file_path(path, "path")?;
            let old = required(a.old_str.as_ref().map(|t| t.0.as_str()), "old_str")?;
            let new = required(a.new_str.as_ref().map(|t| t.0.as_str()), "new_str")?;
            let content = existing(notes, target, path)?;
            if old.is_empty() {
                return Err(args::invalid(
                    TOOL,
                    "old_str",
                    "is empty; give the text to replace (to add text use the insert command or notes_append_to_file)",
                ));
            }
            let count = content.matches(old).count();
            if count != 1 {
                let how = if count == 0 {
                    "does not occur in".to_string()
                } else {
                    format!("occurs {count} times in")
                };
                return Err(args::invalid(
                    TOOL,
                    "old_str",
                    format!(
                        "{how} {}; it must occur exactly once, nothing was changed (read the note with notes_read_file, then give a longer old_str)",
                        args::quote_name(path)
                    ),
                ));
            }
            let replaced = content.replacen(old, new, 1);
            call(TOOL_WRITE, json!({ "path": target, "content": replaced }))
        }
        MemoryCommand::Insert => {
            let path = required(a.path.as_ref().map(|t| t.0.as_str()), "path")?;
            let target = file_path(path, "path")?;
            let line = a
                .insert_line
                .map(|n| n.0)
                .ok_or_else(|| args::invalid(TOOL, "insert_line", "is required"))?;
            let text = required(a.insert_text.as_ref().map(|t| t.0.as_str()), "insert_text")?;
            let content = existing(notes, target, path)?;
            let lines: Vec<&str> = content.split_inclusive('\n').collect();
            if line > lines.len() {
                return Err(args::invalid(
                    TOOL,
                    "insert_line",
                    format!(
                        "is {line}, but {} has {} line(s); nothing was changed (0 inserts at the start, {} at the end)",
                        args::quote_name(path),
                        lines.len(),
                        lines.len()
                    ),
                ));
            }
            let (before, after) = lines.split_at(line);
            let mut out = before.concat();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(text);
            if !after.is_empty() && !text.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&after.concat());
            call(TOOL_WRITE, json!({ "path": target, "content": out }))
        }
        MemoryCommand::Rename => Err(ToolOutput::error(format!(
            "{TOOL}: the rename command has no notes equivalent; nothing was changed. Read the note with notes_read_file, write it under the new path with notes_write_file, then delete the old one with notes_write_file and empty content."
        ))),
    }
}

/// The arguments `command` takes, besides `command` itself.
fn takes(command: MemoryCommand) -> &'static [&'static str] {
    match command {
        MemoryCommand::View => &["path", "view_range"],
        MemoryCommand::Create => &["path", "file_text"],
        MemoryCommand::StrReplace => &["path", "old_str", "new_str"],
        MemoryCommand::Insert => &["path", "insert_line", "insert_text"],
        MemoryCommand::Delete => &["path"],
        MemoryCommand::Rename => &["old_path", "new_path"],
    }
}

/// The argument `name`, which the command requires.
fn required<'a>(value: Option<&'a str>, name: &str) -> Result<&'a str, ToolOutput> {
    value.ok_or_else(|| args::invalid(TOOL, name, "is required"))
}

/// The note path (or folder, `""` for all notes) that `path` names under `/memories`.
fn note_path<'a>(path: &'a str, name: &str) -> Result<&'a str, ToolOutput> {
    let rest = path
        .strip_prefix(ROOT)
        .filter(|r| r.is_empty() || r.starts_with('/'));
    match rest {
        Some(r) => Ok(r.trim_start_matches('/')),
        None => Err(args::invalid(
            TOOL,
            name,
            format!(
                "must be under {ROOT} (your notes: {ROOT}/plan.md is the note plan.md), got {}",
                args::quote_name(path)
            ),
        )),
    }
}

/// The note `path` names under `/memories`, which must be a file, not the folder itself.
fn file_path<'a>(path: &'a str, name: &str) -> Result<&'a str, ToolOutput> {
    let target = note_path(path, name)?;
    if target.is_empty() || target.ends_with('/') {
        return Err(args::invalid(
            TOOL,
            name,
            format!(
                "names a folder, not a file: {}; give a file path like {ROOT}/plan.md",
                args::quote_name(path)
            ),
        ));
    }
    Ok(target)
}

/// The content of the note `target` (named `path` by the model), which must exist.
fn existing<'n>(notes: &'n Notes, target: &str, path: &str) -> Result<&'n str, ToolOutput> {
    notes.get(target).map(|n| n.content.as_str()).ok_or_else(|| {
        args::invalid(
            TOOL,
            "path",
            format!(
                "names no note: {}; nothing was changed (create it first; view {ROOT} lists every note)",
                args::quote_name(path)
            ),
        )
    })
}

#[cfg(test)]
mod tests;
