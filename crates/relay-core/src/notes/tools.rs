//! The five notes tools over [`Notes`]: `notes_write_file` and `notes_append_to_file` (validated
//! into a [`NoteOp`] by [`Notes::prepare`], answered by [`Notes::op_result`] once applied),
//! `notes_list_files_by_prefix`, `notes_read_file` (line ranges, paged through the one-note line
//! cache) and `notes_search_contents` (substring search, matching lines cut at
//! [`super::SEARCH_LINE_MAX_CHARS`]). Every result is capped at `args`' 64 KiB with a
//! `next_offset` to page on; every argument error is a tool error naming the argument.

use memchr::memmem;
use serde_json::{json, Map, Value};

use super::{
    path_preview, path_reason, validate_path, validate_timestamp, Note, NoteOp, NoteOpKind, Notes,
    MAX_NOTE_BYTES, SEARCH_LINE_MAX_CHARS, TOOL_APPEND, TOOL_LIST, TOOL_READ, TOOL_SEARCH,
    TOOL_WRITE,
};
use crate::args;
use crate::ToolOutput;

impl Notes {
    /// Validate a `notes_write_file` / `notes_append_to_file` call and build the operation to
    /// persist. The operation is *not* applied; the caller persists it, then applies it. `Err`
    /// is the tool error to return to the model (nothing is persisted).
    pub fn prepare(&self, tool: &str, args: &Value, now_ms: i64) -> Result<NoteOp, ToolOutput> {
        let kind = match tool {
            TOOL_WRITE => NoteOpKind::Write,
            TOOL_APPEND => NoteOpKind::Append,
            other => {
                return Err(ToolOutput::error(format!(
                    "{other}: not a note-writing tool (expected {TOOL_WRITE} or {TOOL_APPEND})"
                )))
            }
        };
        let (path, content) = match kind {
            NoteOpKind::Write => {
                let a: args::NotesWriteFile = args::decode(tool, args)?;
                (a.path.0, a.content.0)
            }
            NoteOpKind::Append => {
                let a: args::NotesAppendToFile = args::decode(tool, args)?;
                (a.path.0, a.content.0)
            }
        };
        let invalid = |arg: &str, message: String| args::invalid(tool, arg, message);
        if let Err(e) = validate_path(&path) {
            return Err(invalid("path", path_reason(&e)));
        }
        if validate_timestamp(now_ms).is_err() {
            return Err(ToolOutput::error(format!(
                "{tool}: the current time ({now_ms} ms) is not a representable timestamp; nothing was written"
            )));
        }
        let existing = self.files.get(&path);
        match kind {
            NoteOpKind::Write => {
                if content.is_empty() && existing.is_none() {
                    return Err(invalid(
                        "content",
                        format!(
                            "is empty, which deletes a note, but there is no note at {path:?}; nothing was changed"
                        ),
                    ));
                }
                if content.len() > MAX_NOTE_BYTES {
                    return Err(invalid(
                        "content",
                        format!(
                            "is {} UTF-8 bytes; a note holds at most {MAX_NOTE_BYTES}. Nothing was written",
                            content.len()
                        ),
                    ));
                }
            }
            NoteOpKind::Append => {
                if content.is_empty() {
                    return Err(invalid(
                        "content",
                        "is empty; there is nothing to append".into(),
                    ));
                }
                let total = existing.map_or(0, Note::bytes) + content.len();
                if total > MAX_NOTE_BYTES {
                    return Err(invalid(
                        "content",
                        format!(
                            "would grow {path:?} to {total} UTF-8 bytes; a note holds at most {MAX_NOTE_BYTES}. Nothing was appended"
                        ),
                    ));
                }
            }
        }
        Ok(NoteOp {
            kind,
            path,
            content,
            at_ms: now_ms,
        })
    }

    /// The tool result after `op` was applied: `{"path","deleted":true}` for a delete, else
    /// `{"path","lines","bytes","deleted":false}` describing the note now.
    pub fn op_result(&self, op: &NoteOp) -> ToolOutput {
        if op.kind == NoteOpKind::Write && op.content.is_empty() {
            return ToolOutput::json(&json!({ "path": op.path, "deleted": true }));
        }
        match self.files.get(&op.path) {
            Some(note) => ToolOutput::json(&json!({
                "path": note.path,
                "lines": note.lines(),
                "bytes": note.bytes(),
                "deleted": false,
            })),
            None => ToolOutput::error(format!(
                "note {:?} is missing after the operation; it was not saved",
                op.path
            )),
        }
    }

    /// `notes_list_files_by_prefix {prefix?, limit?}` →
    /// `{"files":[{"path","lines","bytes","updated_ms"}],"total":N,"truncated":bool}`
    /// where `total` counts every note matching the prefix. Parameters:
    /// [`args::NotesListFilesByPrefix`].
    pub fn list_files_by_prefix(&self, args: &Value) -> ToolOutput {
        let a: args::NotesListFilesByPrefix = match args::decode(TOOL_LIST, args) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let (prefix, limit, offset) = (a.prefix.0.as_str(), a.limit.0, a.offset.0);
        let mut files = Vec::new();
        let mut total = 0usize;
        let mut budget = args::ResultBudget::default();
        let mut capped = false;
        for note in self.under(prefix) {
            total += 1;
            if total > offset && files.len() < limit && !capped {
                let file = json!({
                    "path": note.path,
                    "lines": note.lines(),
                    "bytes": note.bytes(),
                    "updated_ms": note.updated_ms,
                });
                if budget.take(&file) {
                    files.push(file);
                } else {
                    capped = true;
                }
            }
        }
        let next = offset.saturating_add(files.len());
        let truncated = next < total;
        let out = json!({ "files": files, "total": total, "truncated": truncated });
        args::paged(out, next, truncated, capped, "the next files")
    }

    /// `notes_read_file {path, start_line?, end_line?}` →
    /// `{"path","start_line","end_line","total_lines","content"}`. Parameters:
    /// [`args::NotesReadFile`].
    ///
    /// Lines are 1-based and inclusive; a negative index counts from the end (-1 = last line) and
    /// clamps to line 1 if it reaches before the start; 0 is an error. An end past the last line
    /// clamps to the last line; a start past the last line, or a start after the end, is an
    /// error. `content` is the selected lines joined by `\n`, without the final line break.
    pub fn read_file(&self, args: &Value) -> ToolOutput {
        let a: args::NotesReadFile = match args::decode(TOOL_READ, args) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let (path, start, end) = (a.path.0.as_str(), a.start_line.0, a.end_line.0);
        let offset_chars = a.offset_chars.0;
        let invalid = |arg: &str, message: String| args::invalid(TOOL_READ, arg, message);
        let Some(note) = self.files.get(path) else {
            let hint = match validate_path(path) {
                Ok(()) => "list notes with notes_list_files_by_prefix".to_string(),
                Err(e) => path_reason(&e),
            };
            return invalid(
                "path",
                format!(
                    "names no note: there is no note at {:?} ({hint})",
                    path_preview(path)
                ),
            );
        };
        let text = note.content.as_str();
        let starts = self.lines.starts(note);
        let total = starts.len() as i64;
        let resolve = |n: i64| if n < 0 { (total + 1 + n).max(1) } else { n };
        let s = resolve(start);
        let e = resolve(end).min(total);
        if s > total {
            return invalid(
                "start_line",
                format!("is {start}, past the end of {path:?} ({total} lines)"),
            );
        }
        if s > e {
            return invalid(
                "end_line",
                format!(
                    "is {end}, which resolves to line {e}, before start_line {start} (line {s})"
                ),
            );
        }
        // 1 <= s <= e <= total = starts.len() here.
        let line_start = starts.get((s - 1) as usize).copied().unwrap_or(0);
        let to = starts.get(e as usize).copied().unwrap_or(text.len());
        let first_line = text.get(line_start..to).unwrap_or_default();
        let first_line = first_line
            .split_once('\n')
            .map_or(first_line, |(line, _)| line);
        let line_chars = crate::text::char_count(first_line);
        if offset_chars > line_chars {
            return invalid(
                "offset_chars",
                format!("is {offset_chars}, past the end of line {s} ({line_chars} characters)"),
            );
        }
        let from = line_start + crate::text::byte_at_char(first_line, offset_chars);
        let lines = text.get(from..to).unwrap_or_default();
        let wanted = lines.strip_suffix('\n').unwrap_or(lines);
        let mut out = Map::new();
        out.insert("path".into(), note.path.clone().into());
        out.insert("start_line".into(), s.into());
        if offset_chars > 0 {
            out.insert("offset_chars".into(), offset_chars.into());
        }
        out.insert("end_line".into(), e.into());
        out.insert("total_lines".into(), total.into());
        // At most MAX_RESULT_BYTES: whole lines when at least one fits, else part of the line;
        // the reply says where to continue.
        let budget = args::ResultBudget::default();
        let fitted = budget.fit_text(&out, "content", wanted).unwrap_or_default();
        if fitted.len() < wanted.len() {
            // Whole lines when the cut part holds a line break, else part of one line.
            let (cut, next_line, next_offset) = match memchr::memrchr(b'\n', fitted.as_bytes()) {
                Some(nl) => {
                    let next_start = from + nl + 1;
                    let next_line = starts.partition_point(|&b| b <= next_start) as i64;
                    (fitted.get(..nl).unwrap_or_default(), next_line, 0)
                }
                None => {
                    let end_byte = from + fitted.len();
                    let next_line = starts.partition_point(|&b| b <= end_byte) as i64;
                    let at = starts.get((next_line - 1) as usize).copied().unwrap_or(0);
                    let into = crate::text::char_count(text.get(at..end_byte).unwrap_or_default());
                    (fitted, next_line, into)
                }
            };
            let last_shown = if next_offset > 0 {
                next_line
            } else {
                next_line - 1
            };
            out.insert("end_line".into(), last_shown.into());
            out.insert("content".into(), cut.into());
            out.insert("next_start_line".into(), next_line.into());
            let how = if next_offset > 0 {
                out.insert("next_offset_chars".into(), next_offset.into());
                format!("line {next_line} goes on; continue with start_line {next_line} and offset_chars {next_offset}")
            } else {
                format!("continue with start_line {next_line}")
            };
            out.insert("capped".into(), args::capped_note(&how).into());
        } else {
            out.insert("content".into(), wanted.into());
        }
        ToolOutput::json(&Value::Object(out))
    }

    /// `notes_search_contents {query, path_prefix?, limit?}` →
    /// `{"matches":[{"path","lines":[{"line","text"}]}],"match_count":N,"truncated":bool}`.
    /// Parameters: [`args::NotesSearchContents`].
    ///
    /// Case-sensitive literal search, notes in path order, each matching line reported once.
    /// `limit` caps the number of matching lines returned; `match_count` counts all of them.
    /// Lines longer than [`SEARCH_LINE_MAX_CHARS`] characters are cut and end with `…`.
    pub fn search_contents(&self, args: &Value) -> ToolOutput {
        let a: args::NotesSearchContents = match args::decode(TOOL_SEARCH, args) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let (query, prefix, limit) = (a.query.0.as_str(), a.path_prefix.0.as_str(), a.limit.0);
        let offset = a.offset.0;
        let mut budget = args::ResultBudget::default();
        let mut capped = false;
        let finder = memmem::Finder::new(query.as_bytes());
        let mut matches = Vec::new();
        let mut shown = 0usize;
        let mut count = 0usize;
        for note in self.under(prefix) {
            let text = note.content.as_str();
            let bytes = text.as_bytes();
            let mut lines = Vec::new();
            let mut pos = 0usize;
            let mut line_no = 1usize;
            let mut counted_to = 0usize;
            while let Some(hit) = bytes.get(pos..).and_then(|rest| finder.find(rest)) {
                let hit = pos + hit;
                let (head, tail) = (bytes.get(..hit), bytes.get(hit..));
                let line_start = head
                    .and_then(|h| memchr::memrchr(b'\n', h))
                    .map_or(0, |i| i + 1);
                let line_end = tail
                    .and_then(|t| memchr::memchr(b'\n', t))
                    .map_or(bytes.len(), |i| hit + i);
                line_no += bytes
                    .get(counted_to..line_start)
                    .map_or(0, |b| memchr::memchr_iter(b'\n', b).count());
                counted_to = line_start;
                count += 1;
                if count > offset && shown < limit && !capped {
                    let line = text.get(line_start..line_end).unwrap_or_default();
                    let hit = json!({
                        "line": line_no,
                        "text": crate::text::ellipsize(line, SEARCH_LINE_MAX_CHARS),
                    });
                    // The path's own share of the result is counted with its first line.
                    let path_cost = if lines.is_empty() {
                        note.path.len() + 24
                    } else {
                        0
                    };
                    if budget.left() > path_cost && budget.take(&hit) {
                        shown += 1;
                        lines.push(hit);
                    } else {
                        capped = true;
                    }
                }
                pos = line_end + 1;
                if pos >= bytes.len() {
                    break;
                }
            }
            if !lines.is_empty() {
                let entry = json!({ "path": note.path, "lines": [] });
                budget.take(&entry);
                matches.push(json!({ "path": note.path, "lines": lines }));
            }
        }
        let next = offset.saturating_add(shown);
        let truncated = count > next;
        let out = json!({ "matches": matches, "match_count": count, "truncated": truncated });
        args::paged(out, next, truncated, capped, "the next matching lines")
    }
}
