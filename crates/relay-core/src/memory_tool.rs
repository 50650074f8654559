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
//!   notes tool to use ([`crate::render::memory_tool`], snapshot-tested).

use serde_json::{json, Value};

use crate::args::{self, Memory, MemoryCommand};
use crate::notes::{Notes, TOOL_LIST, TOOL_READ, TOOL_WRITE};
use crate::render::memory_tool as texts;
use crate::ToolOutput;

/// The tool's name, as registered with Pi (Anthropic's).
pub const TOOL: &str = args::MEMORY;

/// The folder that stands for the notes.
pub const ROOT: &str = args::MEMORY_ROOT;

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
        return Err(texts::not_used(name, command, takes));
    }
    let path = || required(a.path.as_ref().map(|t| t.0.as_str()), "path");
    match a.command {
        MemoryCommand::View => view(notes, path()?, a.view_range.as_ref()),
        MemoryCommand::Create => {
            let path = path()?;
            let target = file_path(path, "path")?;
            let text = required(a.file_text.as_ref().map(|t| t.0.as_str()), "file_text")?;
            write(target, text)
        }
        MemoryCommand::Delete => {
            let path = path()?;
            let target = file_path(path, "path")?;
            if notes.get(target).is_none() {
                return Err(texts::nothing_to_delete(path));
            }
            write(target, "")
        }
        MemoryCommand::StrReplace => {
            let old = || required(a.old_str.as_ref().map(|t| t.0.as_str()), "old_str");
            let new = || required(a.new_str.as_ref().map(|t| t.0.as_str()), "new_str");
            let path = path()?;
            let target = file_path(path, "path")?;
            let (old, new) = (old()?, new()?);
            str_replace(notes, target, path, old, new)
        }
        MemoryCommand::Insert => {
            let path = path()?;
            let target = file_path(path, "path")?;
            let line = a
                .insert_line
                .map(|n| n.0)
                .ok_or_else(|| texts::required("insert_line"))?;
            let text = required(a.insert_text.as_ref().map(|t| t.0.as_str()), "insert_text")?;
            insert(notes, target, path, line, text)
        }
        MemoryCommand::Rename => Err(texts::rename_unsupported()),
    }
}

/// The one notes call that writes `content` as the whole note `target`.
fn write(target: &str, content: &str) -> Result<NotesCall, ToolOutput> {
    Ok(NotesCall {
        tool: TOOL_WRITE,
        args: json!({ "path": target, "content": content }),
    })
}

/// `view`: a note is read (within `view_range`), `/memories` or a folder of notes is listed.
fn view(
    notes: &Notes,
    path: &str,
    view_range: Option<&args::LineRange>,
) -> Result<NotesCall, ToolOutput> {
    let target = note_path(path, "path")?;
    if !target.is_empty() && notes.get(target).is_some() {
        let read = match view_range {
            Some(range) => json!({ "path": target, "start_line": range.0, "end_line": range.1 }),
            None => json!({ "path": target }),
        };
        return Ok(NotesCall {
            tool: TOOL_READ,
            args: read,
        });
    }
    let prefix = if target.is_empty() {
        String::new()
    } else {
        format!("{}/", target.trim_end_matches('/'))
    };
    if !prefix.is_empty() && !notes.iter().any(|n| n.path.starts_with(&prefix)) {
        return Err(texts::no_note_or_folder(path));
    }
    Ok(NotesCall {
        tool: TOOL_LIST,
        args: json!({ "prefix": prefix }),
    })
}

/// `str_replace`: the note with its one occurrence of `old` replaced by `new`.
fn str_replace(
    notes: &Notes,
    target: &str,
    path: &str,
    old: &str,
    new: &str,
) -> Result<NotesCall, ToolOutput> {
    let content = existing(notes, target, path)?;
    if old.is_empty() {
        return Err(texts::empty_old_str());
    }
    let count = content.matches(old).count();
    if count != 1 {
        return Err(texts::old_str_not_unique(path, count));
    }
    write(target, &content.replacen(old, new, 1))
}

/// `insert`: the note with `text` after its line `line` (0: at the start).
fn insert(
    notes: &Notes,
    target: &str,
    path: &str,
    line: usize,
    text: &str,
) -> Result<NotesCall, ToolOutput> {
    let content = existing(notes, target, path)?;
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    if line > lines.len() {
        return Err(texts::insert_line_past_end(path, line, lines.len()));
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
    write(target, &out)
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
    value.ok_or_else(|| texts::required(name))
}

/// The note path (or folder, `""` for all notes) that `path` names under `/memories`.
fn note_path<'a>(path: &'a str, name: &str) -> Result<&'a str, ToolOutput> {
    let rest = path
        .strip_prefix(ROOT)
        .filter(|r| r.is_empty() || r.starts_with('/'));
    match rest {
        Some(r) => Ok(r.trim_start_matches('/')),
        None => Err(texts::outside_root(name, path)),
    }
}

/// The note `path` names under `/memories`, which must be a file, not the folder itself.
fn file_path<'a>(path: &'a str, name: &str) -> Result<&'a str, ToolOutput> {
    let target = note_path(path, name)?;
    if target.is_empty() || target.ends_with('/') {
        return Err(texts::names_a_folder(name, path));
    }
    Ok(target)
}

/// The content of the note `target` (named `path` by the model), which must exist.
fn existing<'n>(notes: &'n Notes, target: &str, path: &str) -> Result<&'n str, ToolOutput> {
    notes
        .get(target)
        .map(|n| n.content.as_str())
        .ok_or_else(|| texts::no_such_note(path))
}

#[cfg(test)]
pub(crate) mod tests;
