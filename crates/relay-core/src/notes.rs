//! Model-written notes: small virtual text files that survive every window reset.
//!
//! Notes are a projection of the session branch. Every change is one [`NoteOp`] persisted as a
//! custom session entry (`customType` [`NOTE_CUSTOM_TYPE`], the operation in `data`) and
//! replayed in branch order with [`Notes::apply`]. Nothing else is stored, so a reload of the
//! JSONL rebuilds exactly the same notes and a sibling branch never sees another branch's notes.
//!
//! # Rules
//!
//! - **Paths** are relative virtual paths: segments separated by `/`, no leading `/`, no empty
//!   segment (`a//b`, trailing `/`), no `.` or `..` segment, no backslash, no control character,
//!   at most [`MAX_PATH_BYTES`] UTF-8 bytes. They name nothing on disk. A tool call (and the
//!   CLI's export) also refuses invisible and text-direction characters, look-alikes of `/`, `\`
//!   and `.` (U+2215, U+2044, …) and every compatibility character, one NFKC would rewrite
//!   (fullwidth U+FF0F `／`, U+FF0E `．`, U+2024 `․`, halfwidth forms, ligatures): such a path is
//!   refused, never normalized, so a note keeps exactly the name written ([`validate_path`]).
//!   Replay checks only the structural rules ([`validate_replayed_path`]): a note an earlier
//!   version stored under such a name is not lost.
//! - **Size**: a note holds at most [`MAX_NOTE_BYTES`] UTF-8 bytes *after* the operation.
//! - **Timestamps** (`atMs`, milliseconds since the Unix epoch) must be integers within
//!   ±8.64e15 ms, the range a JavaScript `Date` can represent.
//! - **Write** creates or replaces a note; a write with empty content **deletes** the note (an
//!   empty note and an absent note are the same thing). **Append** adds text to the end of a
//!   note, creating it if needed; an empty append is rejected.
//! - **Lines**: `""` has 0 lines, `"a\n"` 1 line, `"a\nb"` 2 lines. Only `\n` separates lines.
//!
//! **Invariant:** an invalid operation (from a tool call or found in a session file) never changes
//! state: [`Notes::apply`] returns `Err` and leaves every note as it was, so a malformed entry can
//! never replace a valid note.
//!
//! # Persisted shape
//!
//! ```json
//! {"v":1,"kind":"write","path":"plan.md","content":"…","atMs":1764453907000}
//! ```
//! [`crate::records::NoteRecord`]: `kind` is `"write"` or `"append"`; `v` is absent in an earlier
//! Relay's operations. Unknown extra keys are ignored (forward compatibility); a missing or
//! mistyped known key makes the whole operation invalid, and the error names it.

use std::collections::BTreeMap;
use std::ops::Bound;

use serde_json::Value;

use crate::records::{NoteRecord, Record};

mod tools;

/// The `customType` of the custom session entry carrying one note operation in its `data`.
pub use crate::records::NOTE_CUSTOM_TYPE;
/// Maximum size of one note, in UTF-8 bytes, after an operation.
pub const MAX_NOTE_BYTES: usize = 1_000_000;
/// Maximum length of a note path, in UTF-8 bytes.
pub const MAX_PATH_BYTES: usize = 256;
/// Largest timestamp magnitude accepted, in ms (what a JavaScript `Date` can represent).
pub const MAX_TIMESTAMP_MS: i64 = 8_640_000_000_000_000;

/// Default number of files listed by `notes_list_files_by_prefix`.
pub const DEFAULT_LIST_LIMIT: u64 = crate::args::DEFAULT_NOTES_LIST_LIMIT;
/// Default number of matching lines returned by `notes_search_contents`.
pub const DEFAULT_SEARCH_LIMIT: u64 = crate::args::DEFAULT_NOTES_SEARCH_LIMIT;
/// A matching line longer than this many Unicode characters is cut and ends with `…`.
pub const SEARCH_LINE_MAX_CHARS: usize = 300;

/// Tool names, as registered with Pi.
pub const TOOL_LIST: &str = crate::args::NOTES_LIST_FILES_BY_PREFIX;
pub const TOOL_READ: &str = crate::args::NOTES_READ_FILE;
pub const TOOL_SEARCH: &str = crate::args::NOTES_SEARCH_CONTENTS;
pub const TOOL_APPEND: &str = crate::args::NOTES_APPEND_TO_FILE;
pub const TOOL_WRITE: &str = crate::args::NOTES_WRITE_FILE;

/// Why a note operation was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    /// The persisted data does not have the operation's shape.
    #[error("malformed note operation: {0}")]
    Malformed(String),
    /// `kind` is a string but not one this version understands.
    #[error("unknown note operation kind {0:?} (expected \"write\" or \"append\")")]
    UnknownKind(String),
    /// The path breaks a path rule.
    #[error("invalid note path {path:?}: {reason}")]
    InvalidPath { path: String, reason: String },
    /// The timestamp is not an integer within ±8.64e15 ms.
    #[error("invalid note timestamp: {0}")]
    InvalidTimestamp(String),
    /// The note would exceed [`MAX_NOTE_BYTES`].
    #[error("note {path:?} would be {bytes} UTF-8 bytes, over the limit of {MAX_NOTE_BYTES}")]
    TooLarge { path: String, bytes: usize },
    /// An append with nothing to append.
    #[error("empty append to note {0:?}")]
    EmptyAppend(String),
}

/// The two kinds of note operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteOpKind {
    /// Create or replace; empty content deletes.
    Write,
    /// Add to the end; creates the note if absent.
    Append,
}

impl NoteOpKind {
    fn as_str(self) -> &'static str {
        match self {
            NoteOpKind::Write => "write",
            NoteOpKind::Append => "append",
        }
    }
}

/// One persisted change to one note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteOp {
    pub kind: NoteOpKind,
    pub path: String,
    pub content: String,
    pub at_ms: i64,
}

impl NoteOp {
    /// Parse an operation persisted in a custom entry's `data` ([`NoteRecord`], any version),
    /// validating its shape, path and timestamp. (Size depends on the current note and is
    /// checked by [`Notes::apply`].)
    pub fn from_data(data: &Value) -> Result<NoteOp, NoteError> {
        if !data.is_object() {
            return Err(NoteError::Malformed(format!(
                "expected an object, got {}",
                crate::json_kind(data)
            )));
        }
        let record = NoteRecord::parse(data).map_err(NoteError::Malformed)?;
        let kind = match record.kind.as_str() {
            "write" => NoteOpKind::Write,
            "append" => NoteOpKind::Append,
            _ => return Err(NoteError::UnknownKind(record.kind)),
        };
        validate_replayed_path(&record.path)?;
        let at_ms = timestamp_from_json(&record.at_ms)?;
        Ok(NoteOp {
            kind,
            path: record.path,
            content: record.content,
            at_ms,
        })
    }

    /// The record the extension persists with `appendEntry(NOTE_CUSTOM_TYPE, data)`.
    pub fn record(&self) -> NoteRecord {
        NoteRecord {
            v: crate::records::VERSION,
            kind: self.kind.as_str().into(),
            path: self.path.clone(),
            content: self.content.clone(),
            at_ms: self.at_ms.into(),
        }
    }

    /// [`NoteOp::record`] as JSON.
    pub fn to_data(&self) -> Value {
        self.record().to_value()
    }
}

/// One note as the current branch defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub path: String,
    pub content: String,
    /// Timestamp of the last operation that changed it.
    pub updated_ms: i64,
}

impl Note {
    /// Number of lines (see the module rules).
    pub fn lines(&self) -> usize {
        count_lines(&self.content)
    }

    /// Size in UTF-8 bytes.
    pub fn bytes(&self) -> usize {
        self.content.len()
    }
}

/// Number of lines in `text`: `""` → 0, `"a\n"` → 1, `"a\nb"` → 2 (see [`crate::text`]).
pub use crate::text::count_lines;

/// All notes of the current branch, keyed by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notes {
    files: BTreeMap<String, Note>,
    /// The line starts of the note read last, so that paging through a long note costs each page
    /// its own size, not a scan of the whole note (a 1 MB note of line breaks is about 30 pages).
    lines: LineCache,
}

/// A one-note cache of line starts for [`Notes::read_file`]: the path and the byte offset of the
/// start of every line. Emptied by every change ([`Notes::apply`]); not part of the notes' value
/// (equal, cloned empty, not shown by `Debug`).
#[derive(Default)]
struct LineCache(std::sync::Mutex<Option<(String, std::sync::Arc<[usize]>)>>);

impl LineCache {
    /// The line starts of `note`, from the cache or computed (and kept) now.
    fn starts(&self, note: &Note) -> std::sync::Arc<[usize]> {
        let mut slot = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((path, starts)) = slot.as_ref() {
            if *path == note.path {
                return starts.clone();
            }
        }
        let starts: std::sync::Arc<[usize]> = line_starts(&note.content).into();
        *slot = Some((note.path.clone(), starts.clone()));
        starts
    }

    fn clear(&mut self) {
        *self
            .0
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}

impl Clone for LineCache {
    fn clone(&self) -> Self {
        LineCache::default()
    }
}

impl PartialEq for LineCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for LineCache {}

impl std::fmt::Debug for LineCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LineCache")
    }
}

/// The byte offset of the start of every line of `text` (a final line break opens no line).
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = Vec::with_capacity(64);
    starts.push(0usize);
    starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
    if text.ends_with('\n') {
        starts.pop();
    }
    starts
}

impl Notes {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of notes.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The note at `path`, if any.
    pub fn get(&self, path: &str) -> Option<&Note> {
        self.files.get(path)
    }

    /// All notes in path order.
    pub fn iter(&self) -> impl Iterator<Item = &Note> {
        self.files.values()
    }

    /// Replay one operation. An invalid operation returns `Err` and changes nothing.
    ///
    /// Appends extend the existing string in place (amortised O(appended bytes)), so replaying
    /// thousands of appends never copies whole notes.
    pub fn apply(&mut self, op: &NoteOp) -> Result<(), NoteError> {
        validate_replayed_path(&op.path)?;
        validate_timestamp(op.at_ms)?;
        self.lines.clear();
        match op.kind {
            NoteOpKind::Write => {
                if op.content.len() > MAX_NOTE_BYTES {
                    return Err(NoteError::TooLarge {
                        path: op.path.clone(),
                        bytes: op.content.len(),
                    });
                }
                if op.content.is_empty() {
                    self.files.remove(&op.path);
                } else if let Some(note) = self.files.get_mut(&op.path) {
                    note.content.clear();
                    note.content.push_str(&op.content);
                    note.updated_ms = op.at_ms;
                } else {
                    self.files.insert(
                        op.path.clone(),
                        Note {
                            path: op.path.clone(),
                            content: op.content.clone(),
                            updated_ms: op.at_ms,
                        },
                    );
                }
            }
            NoteOpKind::Append => {
                if op.content.is_empty() {
                    return Err(NoteError::EmptyAppend(op.path.clone()));
                }
                let existing = self.files.get(&op.path).map_or(0, Note::bytes);
                let bytes = existing + op.content.len();
                if bytes > MAX_NOTE_BYTES {
                    return Err(NoteError::TooLarge {
                        path: op.path.clone(),
                        bytes,
                    });
                }
                match self.files.get_mut(&op.path) {
                    Some(note) => {
                        note.content.push_str(&op.content);
                        note.updated_ms = op.at_ms;
                    }
                    None => {
                        self.files.insert(
                            op.path.clone(),
                            Note {
                                path: op.path.clone(),
                                content: op.content.clone(),
                                updated_ms: op.at_ms,
                            },
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// The notes whose path starts with `prefix`, in path order.
    fn under<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a Note> + 'a {
        self.files
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |(p, _)| p.starts_with(prefix))
            .map(|(_, note)| note)
    }

    /// The `n` most recently updated notes, most recent first; equal times in path order.
    pub fn recent(&self, n: usize) -> Vec<&Note> {
        let mut all: Vec<&Note> = self.files.values().collect();
        // Stable sort over path-ordered input keeps path order among equal timestamps.
        all.sort_by_key(|n| std::cmp::Reverse(n.updated_ms));
        all.truncate(n);
        all
    }
}

/// Characters that look like `/`, `\\` or `.` and that NFKC leaves alone (so the compatibility
/// check below does not catch them): the slash and dot look-alikes of Unicode's confusables list,
/// minus letters and digits of living scripts.
const LOOKALIKES: &[(char, &str)] = &[
    ('\u{1735}', "a look-alike of `/`"),
    ('\u{2041}', "a look-alike of `/`"),
    ('\u{2044}', "FRACTION SLASH, a look-alike of `/`"),
    ('\u{2215}', "DIVISION SLASH, a look-alike of `/`"),
    ('\u{2571}', "a look-alike of `/`"),
    ('\u{27CB}', "a look-alike of `/`"),
    ('\u{29F8}', "BIG SOLIDUS, a look-alike of `/`"),
    ('\u{31D3}', "a look-alike of `/`"),
    ('\u{0337}', "a combining slash overlay"),
    ('\u{0338}', "a combining slash overlay"),
    ('\u{2216}', "SET MINUS, a look-alike of `\\`"),
    ('\u{27CD}', "a look-alike of `\\`"),
    ('\u{29F5}', "a look-alike of `\\`"),
    ('\u{29F9}', "BIG REVERSE SOLIDUS, a look-alike of `\\`"),
    ('\u{31D4}', "a look-alike of `\\`"),
    ('\u{0701}', "a look-alike of `.`"),
    ('\u{0702}', "a look-alike of `.`"),
    ('\u{3002}', "IDEOGRAPHIC FULL STOP, a look-alike of `.`"),
    ('\u{A4F8}', "a look-alike of `.`"),
    ('\u{A60E}', "a look-alike of `.`"),
    ('\u{10A50}', "a look-alike of `.`"),
    ('\u{1D16D}', "a look-alike of `.`"),
];

/// Why `c` may not appear in a note path, beyond the structural rules: invisible and
/// direction-changing characters, the look-alikes of [`LOOKALIKES`], and every compatibility
/// character (one NFKC rewrites: fullwidth and halfwidth forms such as U+FF0F `／` and U+FF0E
/// `．`, U+2024 `․`, U+2025 `‥`, U+2026 `…`, ligatures, superscripts). Such a path would look
/// like another one (`a／..／b` reads as `a/../b`), so it is refused rather than normalized: a
/// note is always stored, listed and exported under exactly the name the model wrote.
fn refused_char(c: char) -> Option<String> {
    use unicode_normalization::char::decompose_compatible;
    let code = format!("U+{:04X}", u32::from(c));
    if c.is_control() {
        return Some(format!("control characters are not allowed ({code})"));
    }
    let invisible = matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}' | '\u{E0000}'..='\u{E007F}');
    if invisible {
        return Some(format!(
            "invisible and text-direction characters are not allowed ({code})"
        ));
    }
    if let Some((_, what)) = LOOKALIKES.iter().find(|(l, _)| *l == c) {
        return Some(format!(
            "{code} is {what}; look-alike characters are not allowed"
        ));
    }
    let mut plain = String::new();
    decompose_compatible(c, |d| plain.push(d));
    // A canonical decomposition (é → e + U+0301) is the same text; only a compatibility one
    // (NFKC ≠ NFC) makes the character a look-alike of another.
    let mut canonical = String::new();
    unicode_normalization::char::decompose_canonical(c, |d| canonical.push(d));
    if plain != canonical {
        return Some(format!(
            "{code} is a compatibility form of {plain:?} (NFKC); look-alike characters are not allowed"
        ));
    }
    None
}

/// The path as an error message shows it: whole up to 80 characters, else its ends.
fn path_preview(path: &str) -> String {
    crate::text::head_tail_preview(path, 80, 40, 39)
}

/// Check a note path against the path rules (see the module's Rules), as a tool call and the
/// export must: the structural rules and no refused character (invisible, look-alike or
/// compatibility characters).
pub fn validate_path(path: &str) -> Result<(), NoteError> {
    validate_replayed_path(path)?;
    for c in path.chars() {
        if let Some(reason) = refused_char(c) {
            return Err(NoteError::InvalidPath {
                path: path.to_string(),
                reason,
            });
        }
    }
    Ok(())
}

/// The structural path rules alone (relative, no empty, `.` or `..` segment, no backslash, no
/// control character, at most [`MAX_PATH_BYTES`]): what a replayed operation must pass. A note an
/// earlier Relay stored under a look-alike name still replays (nothing is lost); no tool can
/// write a new one, and the export refuses it by name.
pub fn validate_replayed_path(path: &str) -> Result<(), NoteError> {
    let bad = |reason: &str| {
        Err(NoteError::InvalidPath {
            path: path_preview(path),
            reason: reason.to_string(),
        })
    };
    if path.is_empty() {
        return bad("it is empty");
    }
    if path.len() > MAX_PATH_BYTES {
        return bad(&format!(
            "it is {} UTF-8 bytes, longer than {MAX_PATH_BYTES}",
            path.len()
        ));
    }
    if path.starts_with('/') {
        return bad("absolute paths are not allowed; use a relative path like `plan.md`");
    }
    if path.contains('\\') {
        return bad("backslashes are not allowed; separate folders with `/`");
    }
    if let Some(c) = path.chars().find(|c| c.is_control()) {
        return bad(&format!(
            "control characters are not allowed (U+{:04X})",
            u32::from(c)
        ));
    }
    for segment in path.split('/') {
        match segment {
            "" => return bad("empty segment (doubled or trailing `/`)"),
            "." | ".." => return bad("`.` and `..` segments are not allowed"),
            _ => {}
        }
    }
    Ok(())
}

/// Check that a timestamp is within ±8.64e15 ms.
pub fn validate_timestamp(ms: i64) -> Result<(), NoteError> {
    if ms.unsigned_abs() > MAX_TIMESTAMP_MS as u64 {
        return Err(NoteError::InvalidTimestamp(format!(
            "{ms} ms is outside ±{MAX_TIMESTAMP_MS} ms"
        )));
    }
    Ok(())
}

fn timestamp_from_json(v: &Value) -> Result<i64, NoteError> {
    let ms = if let Some(i) = v.as_i64() {
        i
    } else if let Some(f) = v.as_f64() {
        if !f.is_finite() || f.fract() != 0.0 || f.abs() > MAX_TIMESTAMP_MS as f64 {
            return Err(NoteError::InvalidTimestamp(format!(
                "`atMs` {f} is not an integer within ±{MAX_TIMESTAMP_MS} ms"
            )));
        }
        f as i64
    } else {
        return Err(NoteError::InvalidTimestamp(format!(
            "`atMs` must be a number, got {}",
            crate::json_kind(v)
        )));
    };
    validate_timestamp(ms)?;
    Ok(ms)
}

fn path_reason(e: &NoteError) -> String {
    match e {
        NoteError::InvalidPath { reason, .. } => format!("is not a valid note path: {reason}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{args, ToolOutput};
    use serde_json::json;

    const T0: i64 = 1_764_453_907_000;

    fn op(kind: NoteOpKind, path: &str, content: &str, at_ms: i64) -> NoteOp {
        NoteOp {
            kind,
            path: path.into(),
            content: content.into(),
            at_ms,
        }
    }

    fn parsed(out: &ToolOutput) -> Value {
        assert!(!out.is_error, "unexpected tool error: {}", out.text);
        serde_json::from_str(&out.text).expect("tool output is JSON")
    }

    fn err_text(out: ToolOutput) -> String {
        assert!(out.is_error, "expected a tool error, got {}", out.text);
        out.text
    }

    fn notes_with(files: &[(&str, &str, i64)]) -> Notes {
        let mut n = Notes::new();
        for (p, c, t) in files {
            n.apply(&op(NoteOpKind::Write, p, c, *t)).unwrap();
        }
        n
    }

    #[test]
    fn data_round_trips() {
        for o in [
            op(NoteOpKind::Write, "plan.md", "goal\n", T0),
            op(NoteOpKind::Append, "a/b/c.txt", "ü🙂\n", -5),
            op(NoteOpKind::Write, "x", "", MAX_TIMESTAMP_MS),
        ] {
            let data = o.to_data();
            assert_eq!(data["kind"], o.kind.as_str());
            assert_eq!(NoteOp::from_data(&data).unwrap(), o);
        }
    }

    #[test]
    fn from_data_accepts_integral_float_timestamps_and_extra_keys() {
        let d = json!({"kind":"append","path":"p","content":"x","atMs":1.7e12,"future":1});
        assert_eq!(NoteOp::from_data(&d).unwrap().at_ms, 1_700_000_000_000);
    }

    #[test]
    fn from_data_rejects_malformed_operations() {
        let ok = json!({"kind":"write","path":"p.md","content":"x","atMs":T0});
        let with = |k: &str, v: Value| {
            let mut d = ok.clone();
            d[k] = v;
            d
        };
        let without = |k: &str| {
            let mut d = ok.clone();
            d.as_object_mut().unwrap().remove(k);
            d
        };
        let cases: Vec<(Value, &str)> = vec![
            (json!("write"), "malformed"),
            (json!(null), "malformed"),
            (json!([1]), "malformed"),
            (without("kind"), "malformed"),
            (with("kind", json!(1)), "malformed"),
            (with("kind", json!("delete")), "kind"),
            (with("kind", json!("Write")), "kind"),
            (without("path"), "malformed"),
            (with("path", json!(["p"])), "malformed"),
            (with("path", json!("/etc/passwd")), "path"),
            (with("path", json!("../up")), "path"),
            (with("path", json!("a/./b")), "path"),
            (with("path", json!("a//b")), "path"),
            (with("path", json!("a/")), "path"),
            (with("path", json!("a\\b")), "path"),
            (with("path", json!("a\u{7}b")), "path"),
            (with("path", json!("")), "path"),
            (with("path", json!("x".repeat(257))), "path"),
            (without("content"), "malformed"),
            (with("content", json!(42)), "malformed"),
            (with("content", json!(null)), "malformed"),
            (without("atMs"), "malformed"),
            (with("atMs", json!("1764453907000")), "timestamp"),
            (with("atMs", json!(null)), "timestamp"),
            (with("atMs", json!(1.5)), "timestamp"),
            (with("atMs", json!(8_640_000_000_000_001i64)), "timestamp"),
            (with("atMs", json!(-8_640_000_000_000_001i64)), "timestamp"),
            (with("atMs", json!(1e300)), "timestamp"),
            (with("atMs", json!(u64::MAX)), "timestamp"),
        ];
        for (data, want) in cases {
            let err = NoteOp::from_data(&data).expect_err(&data.to_string());
            let got = match err {
                NoteError::Malformed(_) => "malformed",
                NoteError::UnknownKind(_) => "kind",
                NoteError::InvalidPath { .. } => "path",
                NoteError::InvalidTimestamp(_) => "timestamp",
                other => panic!("unexpected {other:?}"),
            };
            assert_eq!(got, want, "{data}");
        }
    }

    #[test]
    fn invalid_operations_never_replace_a_valid_note() {
        let mut notes = notes_with(&[("plan.md", "keep me\n", T0)]);
        let before = notes.get("plan.md").cloned().unwrap();
        // Operations that parse but must be rejected by apply.
        let bad_ops = [
            op(
                NoteOpKind::Write,
                "plan.md",
                &"x".repeat(MAX_NOTE_BYTES + 1),
                T0 + 1,
            ),
            op(
                NoteOpKind::Append,
                "plan.md",
                &"x".repeat(MAX_NOTE_BYTES),
                T0 + 1,
            ),
            op(NoteOpKind::Append, "plan.md", "", T0 + 1),
            op(NoteOpKind::Write, "plan.md", "new", MAX_TIMESTAMP_MS + 1),
            op(NoteOpKind::Write, "plan.md", "new", i64::MIN),
            op(NoteOpKind::Write, "/plan.md", "new", T0 + 1),
            op(NoteOpKind::Write, "plan.md/", "new", T0 + 1),
        ];
        for o in &bad_ops {
            assert!(notes.apply(o).is_err(), "{:?} {}", o.kind, o.path);
            assert_eq!(notes.get("plan.md"), Some(&before));
            assert_eq!(notes.len(), 1);
        }
        // Persisted data that does not parse is skipped by the replayer; state stays the same.
        let session = [
            json!({"kind":"write","path":"plan.md","content":"","atMs":"soon"}),
            json!({"kind":"truncate","path":"plan.md","content":"","atMs":T0}),
            json!({"kind":"write","path":"plan.md","content":{"text":"x"},"atMs":T0}),
            json!({"kind":"write","path":"../plan.md","content":"evil","atMs":T0}),
            json!({"kind":"append","path":"plan.md","content":"more\n","atMs":T0 + 9}),
        ];
        let mut skipped = 0;
        for d in &session {
            match NoteOp::from_data(d).and_then(|o| notes.apply(&o)) {
                Ok(()) => {}
                Err(_) => skipped += 1,
            }
        }
        assert_eq!(skipped, 4);
        let note = notes.get("plan.md").unwrap();
        assert_eq!(note.content, "keep me\nmore\n");
        assert_eq!(note.updated_ms, T0 + 9);
    }

    #[test]
    fn size_limit_applies_after_the_operation() {
        let mut notes = Notes::new();
        let half = "a".repeat(MAX_NOTE_BYTES / 2);
        notes
            .apply(&op(NoteOpKind::Append, "big", &half, T0))
            .unwrap();
        notes
            .apply(&op(NoteOpKind::Append, "big", &half, T0))
            .unwrap();
        assert_eq!(notes.get("big").unwrap().bytes(), MAX_NOTE_BYTES);
        let err = notes
            .apply(&op(NoteOpKind::Append, "big", "b", T0))
            .unwrap_err();
        assert_eq!(
            err,
            NoteError::TooLarge {
                path: "big".into(),
                bytes: MAX_NOTE_BYTES + 1
            }
        );
        // Multi-byte: 4-byte emoji counts as 4 bytes.
        let mut n2 = Notes::new();
        let near = "a".repeat(MAX_NOTE_BYTES - 3);
        n2.apply(&op(NoteOpKind::Write, "e", &near, T0)).unwrap();
        assert!(n2.apply(&op(NoteOpKind::Append, "e", "🙂", T0)).is_err());
        n2.apply(&op(NoteOpKind::Append, "e", "é", T0)).unwrap();
        assert_eq!(n2.get("e").unwrap().bytes(), MAX_NOTE_BYTES - 1);
        // A write replaces, so its size alone counts.
        n2.apply(&op(NoteOpKind::Write, "e", &"z".repeat(MAX_NOTE_BYTES), T0))
            .unwrap();
    }

    #[test]
    fn write_replaces_and_empty_write_deletes() {
        let mut notes = notes_with(&[("a", "one", T0)]);
        notes
            .apply(&op(NoteOpKind::Write, "a", "two", T0 + 1))
            .unwrap();
        assert_eq!(notes.get("a").unwrap().content, "two");
        assert_eq!(notes.get("a").unwrap().updated_ms, T0 + 1);
        notes
            .apply(&op(NoteOpKind::Write, "a", "", T0 + 2))
            .unwrap();
        assert!(notes.get("a").is_none());
        assert!(notes.is_empty());
        notes
            .apply(&op(NoteOpKind::Append, "a", "x", T0 + 3))
            .unwrap();
        assert_eq!(notes.get("a").unwrap().content, "x");
    }

    #[test]
    fn line_counts() {
        for (text, lines) in [
            ("", 0),
            ("a", 1),
            ("a\n", 1),
            ("a\nb", 2),
            ("a\nb\n", 2),
            ("\n", 1),
            ("\n\n", 2),
            ("a\r\nb\r\n", 2),
        ] {
            assert_eq!(count_lines(text), lines, "{text:?}");
        }
    }

    #[test]
    fn path_rules() {
        for ok in [
            "plan.md",
            "a/b/c",
            "dir/.hidden",
            "a..b",
            "ü/🙂 ñ",
            "x".repeat(256).as_str(),
        ] {
            assert_eq!(validate_path(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "/a",
            "a/",
            "a//b",
            "./a",
            "a/..",
            "..",
            ".",
            "a\\b",
            "a\nb",
            "a\u{0}",
            "a\u{85}b",
            "x".repeat(257).as_str(),
        ] {
            assert!(validate_path(bad).is_err(), "{bad:?}");
        }
        // 256 bytes of multi-byte characters is fine; 257 is not.
        assert!(validate_path(&"é".repeat(128)).is_ok());
        assert!(validate_path(&format!("{}a", "é".repeat(128))).is_err());
    }

    /// Hostile note paths: each is refused by both note-writing tools with an error naming the
    /// `path` argument and the reason; nothing is written, the existing notes stay as they were,
    /// and the error never echoes more than a preview of the path.
    #[test]
    fn hostile_paths_are_refused_by_name_and_change_nothing() {
        let notes = notes_with(&[("plan.md", "keep\n", T0), ("a/b", "keep too", T0)]);
        let before = notes.clone();
        let ten_k_segments = "a/".repeat(10_000) + "a";
        let long_segment = "x".repeat(100_000);
        let cases: Vec<(&str, String)> = vec![
            ("dotdot", "../plan.md".into()),
            ("dotdot inside", "a/../../etc/passwd".into()),
            ("absolute", "/etc/passwd".into()),
            ("NUL", "plan\u{0}.md".into()),
            ("escape", "a\u{1b}[2Jb".into()),
            ("newline", "a\nb".into()),
            ("DEL", "a\u{7f}".into()),
            ("U+2215 division slash", "..\u{2215}..\u{2215}etc".into()),
            ("U+2044 fraction slash", "a\u{2044}b".into()),
            ("U+FF0F fullwidth solidus", "..\u{ff0f}plan.md".into()),
            (
                "U+FF0E fullwidth full stop",
                "\u{ff0e}\u{ff0e}/plan.md".into(),
            ),
            ("U+2024 one dot leader", "\u{2024}\u{2024}/x".into()),
            ("U+2025 two dot leader", "\u{2025}/x".into()),
            ("U+FF3C fullwidth backslash", "a\u{ff3c}b".into()),
            ("U+FE52 small full stop", "a\u{fe52}md".into()),
            (
                "U+FF61 halfwidth ideographic full stop",
                "a\u{ff61}md".into(),
            ),
            ("U+3002 ideographic full stop", "a\u{3002}md".into()),
            ("U+FF50 fullwidth letter", "\u{ff50}lan.md".into()),
            ("U+202E right-to-left override", "a\u{202e}dm.txt".into()),
            ("U+200B zero width space", "plan\u{200b}.md".into()),
            ("U+FEFF byte order mark", "\u{feff}plan.md".into()),
            ("10k segments", ten_k_segments),
            ("100k-byte segment", long_segment),
        ];
        let mut table = String::new();
        for (name, path) in &cases {
            for tool in [TOOL_WRITE, TOOL_APPEND] {
                let err = notes
                    .prepare(tool, &json!({"path": path, "content": "x"}), T0 + 1)
                    .expect_err(name);
                assert!(err.is_error, "{name}");
                assert!(
                    err.text.starts_with(&format!(
                        "{tool}: argument \"path\" is not a valid note path: "
                    )),
                    "{name}: {}",
                    err.text
                );
                assert!(
                    err.text.len() < 400,
                    "{name}: error of {} bytes",
                    err.text.len()
                );
                if tool == TOOL_WRITE {
                    table.push_str(&format!("{name}: {}\n", err.text));
                }
            }
            let read = notes.read_file(&json!({ "path": path }));
            assert!(
                read.is_error && read.text.len() < 600,
                "{name}: {}",
                read.text
            );
            assert_eq!(notes, before, "{name}");
        }
        insta::assert_snapshot!(table);
        // NFKC would map these onto `/` and `.`; a refused path is never normalized onto a note.
        assert_eq!(
            unicode_normalization::UnicodeNormalization::nfkc("\u{ff0e}\u{ff0e}\u{ff0f}")
                .collect::<String>(),
            "../"
        );
        // Plain letters of any script, accents (precomposed or combining) and emoji stay valid.
        for ok in [
            "ü/🙂 ñ",
            "e\u{301}t\u{e9}.md",
            "日本語/メモ.md",
            "Ωμέγα.txt",
            "dir/.hidden",
        ] {
            assert_eq!(validate_path(ok), Ok(()), "{ok:?}");
        }
    }

    /// A note an earlier version stored under a look-alike name still replays (nothing is lost);
    /// the structural rules still hold at replay.
    #[test]
    fn replay_keeps_lookalike_notes_but_not_structural_violations() {
        let mut notes = Notes::new();
        let old = json!({"kind":"write","path":"a\u{ff0f}b","content":"old","atMs":T0});
        notes.apply(&NoteOp::from_data(&old).unwrap()).unwrap();
        assert_eq!(notes.get("a\u{ff0f}b").unwrap().content, "old");
        assert!(validate_path("a\u{ff0f}b").is_err());
        for bad in ["../a", "/a", "a\u{0}"] {
            let data = json!({"kind":"write","path":bad,"content":"x","atMs":T0});
            assert!(NoteOp::from_data(&data).is_err(), "{bad:?}");
            assert!(
                notes.apply(&op(NoteOpKind::Write, bad, "x", T0)).is_err(),
                "{bad:?}"
            );
        }
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn prepare_builds_ops_without_applying_them() {
        let notes = notes_with(&[("a.md", "x\n", T0)]);
        let o = notes
            .prepare(TOOL_APPEND, &json!({"path":"a.md","content":"y\n"}), T0 + 5)
            .unwrap();
        assert_eq!(o, op(NoteOpKind::Append, "a.md", "y\n", T0 + 5));
        assert_eq!(notes.get("a.md").unwrap().content, "x\n");
        let d = notes
            .prepare(TOOL_WRITE, &json!({"path":"a.md","content":""}), T0 + 6)
            .unwrap();
        assert_eq!(d.kind, NoteOpKind::Write);
        assert!(d.content.is_empty());
    }

    #[test]
    fn prepare_rejects_every_argument_error() {
        let notes = notes_with(&[("full", &"a".repeat(MAX_NOTE_BYTES), T0)]);
        let big = "b".repeat(MAX_NOTE_BYTES + 1);
        let cases: Vec<(&str, Value, i64, &str)> = vec![
            (
                "notes_delete_file",
                json!({"path":"a","content":"x"}),
                T0,
                "notes_delete_file: not a note-writing tool (expected notes_write_file or notes_append_to_file)",
            ),
            (
                TOOL_WRITE,
                json!("a"),
                T0,
                r#"notes_write_file: arguments must be an object, got "a""#,
            ),
            (
                TOOL_WRITE,
                json!({"path":"a","content":"x","mode":"w"}),
                T0,
                r#"notes_write_file: unknown argument "mode" (accepted: path, content)"#,
            ),
            (
                TOOL_WRITE,
                json!({"content":"x"}),
                T0,
                r#"notes_write_file: argument "path" is required"#,
            ),
            (
                TOOL_WRITE,
                json!({"path":7,"content":"x"}),
                T0,
                r#"notes_write_file: argument "path" must be a string, got 7"#,
            ),
            (
                TOOL_WRITE,
                json!({"path":"../a","content":"x"}),
                T0,
                r#"notes_write_file: argument "path" is not a valid note path: `.` and `..` segments are not allowed"#,
            ),
            (
                TOOL_WRITE,
                json!({"path":"/a","content":"x"}),
                T0,
                r#"notes_write_file: argument "path" is not a valid note path: absolute paths are not allowed; use a relative path like `plan.md`"#,
            ),
            (
                TOOL_APPEND,
                json!({"path":"a"}),
                T0,
                r#"notes_append_to_file: argument "content" is required"#,
            ),
            (
                TOOL_APPEND,
                json!({"path":"a","content":["x"]}),
                T0,
                r#"notes_append_to_file: argument "content" must be a string, got ["x"]"#,
            ),
            (
                TOOL_APPEND,
                json!({"path":"a","content":""}),
                T0,
                r#"notes_append_to_file: argument "content" is empty; there is nothing to append"#,
            ),
            (
                TOOL_WRITE,
                json!({"path":"a","content":""}),
                T0,
                r#"notes_write_file: argument "content" is empty, which deletes a note, but there is no note at "a"; nothing was changed"#,
            ),
            (
                TOOL_WRITE,
                json!({"path":"a","content":big}),
                T0,
                r#"notes_write_file: argument "content" is 1000001 UTF-8 bytes; a note holds at most 1000000. Nothing was written"#,
            ),
            (
                TOOL_APPEND,
                json!({"path":"full","content":"z"}),
                T0,
                r#"notes_append_to_file: argument "content" would grow "full" to 1000001 UTF-8 bytes; a note holds at most 1000000. Nothing was appended"#,
            ),
            (
                TOOL_WRITE,
                json!({"path":"a","content":"x"}),
                i64::MAX,
                "notes_write_file: the current time (9223372036854775807 ms) is not a representable timestamp; nothing was written",
            ),
        ];
        for (tool, args, now, want) in cases {
            let text = err_text(notes.prepare(tool, &args, now).unwrap_err());
            assert_eq!(text, want, "{tool} {args}");
        }
    }

    #[test]
    fn op_result_reports_the_note_after_the_operation() {
        let mut notes = Notes::new();
        let o = op(NoteOpKind::Write, "p", "a\nb", T0);
        notes.apply(&o).unwrap();
        assert_eq!(
            parsed(&notes.op_result(&o)),
            json!({"path":"p","lines":2,"bytes":3,"deleted":false})
        );
        let o = op(NoteOpKind::Append, "p", "ü\n", T0);
        notes.apply(&o).unwrap();
        assert_eq!(
            parsed(&notes.op_result(&o)),
            json!({"path":"p","lines":2,"bytes":6,"deleted":false})
        );
        let o = op(NoteOpKind::Write, "p", "", T0);
        notes.apply(&o).unwrap();
        assert_eq!(
            parsed(&notes.op_result(&o)),
            json!({"path":"p","deleted":true})
        );
        // Not applied: reported as an error, not as success.
        assert!(
            notes
                .op_result(&op(NoteOpKind::Append, "q", "x", T0))
                .is_error
        );
    }

    #[test]
    fn read_file_line_ranges() {
        let notes = notes_with(&[("f", "l1\nl2\nl3\nl4\nl5\n", T0), ("g", "a\nb", T0)]);
        let cases: Vec<(Value, (i64, i64, &str))> = vec![
            (json!({"path":"f"}), (1, 5, "l1\nl2\nl3\nl4\nl5")),
            (
                json!({"path":"f","start_line":null,"end_line":null}),
                (1, 5, "l1\nl2\nl3\nl4\nl5"),
            ),
            (
                json!({"path":"f","start_line":2,"end_line":3}),
                (2, 3, "l2\nl3"),
            ),
            (json!({"path":"f","start_line":-2}), (4, 5, "l4\nl5")),
            (
                json!({"path":"f","start_line":-1,"end_line":-1}),
                (5, 5, "l5"),
            ),
            (
                json!({"path":"f","start_line":1,"end_line":-2}),
                (1, 4, "l1\nl2\nl3\nl4"),
            ),
            (
                json!({"path":"f","start_line":-99,"end_line":2}),
                (1, 2, "l1\nl2"),
            ),
            (
                json!({"path":"f","start_line":4,"end_line":99}),
                (4, 5, "l4\nl5"),
            ),
            (json!({"path":"f","start_line":5}), (5, 5, "l5")),
            (json!({"path":"f","end_line":1}), (1, 1, "l1")),
            (json!({"path":"f","start_line":3.0}), (3, 5, "l3\nl4\nl5")),
            (json!({"path":"g","start_line":2}), (2, 2, "b")),
            (json!({"path":"g"}), (1, 2, "a\nb")),
        ];
        for (args, (s, e, content)) in cases {
            let v = parsed(&notes.read_file(&args));
            assert_eq!(v["start_line"], s, "{args}");
            assert_eq!(v["end_line"], e, "{args}");
            assert_eq!(v["content"], content, "{args}");
            assert_eq!(v["path"], args["path"]);
        }
        assert_eq!(
            parsed(&notes.read_file(&json!({"path":"f"})))["total_lines"],
            5
        );
    }

    /// Fuzzing finding (fuzz/README.md, finding 4): a line of text that JSON escapes heavily
    /// (quotes, backslashes, control characters) made read_file reply with empty content and
    /// "continue with start_line 1", the same call again: such a note could never be read. The
    /// reply now holds the longest prefix that fits, and following it reads the note whole.
    /// `read_file` keeps the line starts of the note it read last; any change to the notes,
    /// even one that keeps the note's length, makes the next read count lines again.
    #[test]
    fn a_changed_note_is_read_with_its_new_lines() {
        let line = |n: &Notes, l: i64| {
            let v: Value = serde_json::from_str(
                &n.read_file(&json!({"path": "f", "start_line": l, "end_line": l}))
                    .text,
            )
            .unwrap();
            (v["content"].clone(), v["total_lines"].clone())
        };
        let mut n = notes_with(&[("f", "a\nb\nc", T0), ("g", "x\ny", T0)]);
        assert_eq!(line(&n, 2), (json!("b"), json!(3)));
        // Same length, other lines.
        n.apply(&op(NoteOpKind::Write, "f", "abc\nd", T0 + 1))
            .unwrap();
        assert_eq!(line(&n, 2), (json!("d"), json!(2)));
        n.apply(&op(NoteOpKind::Append, "f", "\ne\n", T0 + 2))
            .unwrap();
        assert_eq!(line(&n, 3), (json!("e"), json!(3)));
        // Another note read in between, then this one again.
        let v: Value =
            serde_json::from_str(&n.read_file(&json!({"path": "g", "start_line": 2})).text)
                .unwrap();
        assert_eq!(v["content"], "y");
        assert_eq!(line(&n, 1), (json!("abc"), json!(3)));
        // The cache is not part of the value.
        let fresh = notes_with(&[("f", "abc\nd\ne\n", T0 + 2), ("g", "x\ny", T0)]);
        assert_eq!(n, fresh);
    }

    #[test]
    fn escape_heavy_notes_read_back_whole() {
        for fill in ["\"", "\\", "\u{1}", "\"\n"] {
            let content = fill.repeat(200_000);
            let notes = notes_with(&[("f", &content, T0)]);
            let mut got = String::new();
            let mut call = json!({"path": "f"});
            for _ in 0..100 {
                let out = notes.read_file(&call);
                assert!(out.text.len() <= args::MAX_RESULT_BYTES);
                let v: Value = serde_json::from_str(&out.text).unwrap();
                let part = v["content"].as_str().unwrap();
                assert!(!part.is_empty() || fill == "\"\n", "{fill:?}: empty reply");
                got.push_str(part);
                let Some(next) = v["next_start_line"].as_i64() else {
                    break;
                };
                call = match v["next_offset_chars"].as_i64() {
                    Some(o) => json!({"path": "f", "start_line": next, "offset_chars": o}),
                    None => {
                        got.push('\n');
                        json!({"path": "f", "start_line": next})
                    }
                };
            }
            assert_eq!(
                got,
                content.strip_suffix('\n').unwrap_or(&content),
                "{fill:?}"
            );
        }
    }

    #[test]
    fn read_file_errors() {
        let notes = notes_with(&[("f", "l1\nl2\nl3\n", T0)]);
        let cases: Vec<(Value, &str)> = vec![
            (json!({}), r#"argument "path" is required"#),
            (
                json!({"path":1}),
                r#"argument "path" must be a string, got 1"#,
            ),
            (
                json!({"path":"nope"}),
                r#"argument "path" names no note: there is no note at "nope" (list notes with notes_list_files_by_prefix)"#,
            ),
            (
                json!({"path":"../f"}),
                r#"argument "path" names no note: there is no note at "../f" (is not a valid note path: `.` and `..` segments are not allowed)"#,
            ),
            (
                json!({"path":"f","start_line":0}),
                r#"argument "start_line" must not be 0: lines are 1-based, and negative values count from the end (-1 = last line)"#,
            ),
            (
                json!({"path":"f","end_line":0}),
                r#"argument "end_line" must not be 0: lines are 1-based, and negative values count from the end (-1 = last line)"#,
            ),
            (
                json!({"path":"f","start_line":4}),
                r#"argument "start_line" is 4, past the end of "f" (3 lines)"#,
            ),
            (
                json!({"path":"f","start_line":3,"end_line":2}),
                r#"argument "end_line" is 2, which resolves to line 2, before start_line 3 (line 3)"#,
            ),
            (
                json!({"path":"f","start_line":-1,"end_line":1}),
                r#"argument "end_line" is 1, which resolves to line 1, before start_line -1 (line 3)"#,
            ),
            (
                json!({"path":"f","start_line":"2"}),
                r#"argument "start_line" must be an integer, got "2""#,
            ),
            (
                json!({"path":"f","end_line":1.5}),
                r#"argument "end_line" must be an integer, got 1.5"#,
            ),
            (
                json!({"path":"f","lines":2}),
                r#"unknown argument "lines" (accepted: path, start_line, end_line, offset_chars)"#,
            ),
            (json!([]), "arguments must be an object, got []"),
        ];
        for (args, want) in cases {
            let text = err_text(notes.read_file(&args));
            assert_eq!(text, format!("notes_read_file: {want}"), "{args}");
        }
    }

    #[test]
    fn search_reports_matching_lines_with_numbers() {
        let notes = notes_with(&[
            ("a/one", "alpha\nbeta TODO\ngamma\nTODO TODO twice\n", T0),
            ("a/two", "todo lower\nno match\nTODO last", T0),
            ("b/three", "TODO elsewhere", T0),
        ]);
        let v = parsed(&notes.search_contents(&json!({"query":"TODO"})));
        assert_eq!(
            v,
            json!({"matches":[
                {"path":"a/one","lines":[{"line":2,"text":"beta TODO"},{"line":4,"text":"TODO TODO twice"}]},
                {"path":"a/two","lines":[{"line":3,"text":"TODO last"}]},
                {"path":"b/three","lines":[{"line":1,"text":"TODO elsewhere"}]}
            ],"match_count":4,"truncated":false,"next_offset":null})
        );
        // Prefix filter and case sensitivity.
        let v = parsed(&notes.search_contents(&json!({"query":"todo","path_prefix":"a/"})));
        assert_eq!(
            v["matches"],
            json!([{"path":"a/two","lines":[{"line":1,"text":"todo lower"}]}])
        );
        // Limit truncates but still counts.
        let v = parsed(&notes.search_contents(&json!({"query":"TODO","limit":2})));
        assert_eq!(v["match_count"], 4);
        assert_eq!(v["truncated"], true);
        assert_eq!(v["matches"].as_array().unwrap().len(), 1);
        assert_eq!(v["matches"][0]["lines"].as_array().unwrap().len(), 2);
        // No match.
        let v = parsed(&notes.search_contents(&json!({"query":"zzz"})));
        assert_eq!(
            v,
            json!({"matches":[],"match_count":0,"truncated":false,"next_offset":null})
        );
        // A query spanning a line break reports the line where it starts.
        let v = parsed(&notes.search_contents(&json!({"query":"alpha\nbeta"})));
        assert_eq!(v["matches"][0]["lines"], json!([{"line":1,"text":"alpha"}]));
        // A query starting with a line break matches at the end of the line before it.
        let v = parsed(&notes.search_contents(&json!({"query":"\nTODO"})));
        assert_eq!(
            v["matches"],
            json!([
                {"path":"a/one","lines":[{"line":3,"text":"gamma"}]},
                {"path":"a/two","lines":[{"line":2,"text":"no match"}]}
            ])
        );
        let v = parsed(&notes.search_contents(&json!({"query":"\n"})));
        assert_eq!(v["match_count"], 6);
    }

    #[test]
    fn search_cuts_long_lines() {
        let long = format!("{}needle{}", "é".repeat(400), "x".repeat(10));
        let notes = notes_with(&[("l", &long, T0)]);
        let v = parsed(&notes.search_contents(&json!({"query":"needle"})));
        let text = v["matches"][0]["lines"][0]["text"].as_str().unwrap();
        assert_eq!(text.chars().count(), SEARCH_LINE_MAX_CHARS + 1);
        assert!(text.ends_with('…'));
    }

    #[test]
    fn search_errors() {
        let notes = Notes::new();
        for (args, want) in [
            (json!({}), r#"argument "query" is required"#),
            (json!({"query":""}), r#"argument "query" must not be empty"#),
            (
                json!({"query":5}),
                r#"argument "query" must be a string, got 5"#,
            ),
            (
                json!({"query":"a","path_prefix":1}),
                r#"argument "path_prefix" must be a string, got 1"#,
            ),
            (
                json!({"query":"a","limit":0}),
                r#"argument "limit" must be a positive integer, got 0"#,
            ),
            (
                json!({"query":"a","limit":-3}),
                r#"argument "limit" must be a positive integer, got -3"#,
            ),
            (
                json!({"query":"a","limit":"5"}),
                r#"argument "limit" must be a positive integer, got "5""#,
            ),
            (
                json!({"query":"a","regex":true}),
                r#"unknown argument "regex" (accepted: query, path_prefix, limit, offset)"#,
            ),
        ] {
            let text = err_text(notes.search_contents(&args));
            assert_eq!(text, format!("notes_search_contents: {want}"), "{args}");
        }
    }

    #[test]
    fn list_filters_by_prefix_and_limits() {
        let notes = notes_with(&[
            ("b/2", "x\ny", T0 + 2),
            ("a", "1", T0),
            ("b/1", "é", T0 + 1),
            ("bb", "z", T0),
            ("c", "c", T0),
        ]);
        let v = parsed(&notes.list_files_by_prefix(&json!({"prefix":"b/"})));
        assert_eq!(
            v,
            json!({"files":[
                {"path":"b/1","lines":1,"bytes":2,"updated_ms":T0 + 1},
                {"path":"b/2","lines":2,"bytes":3,"updated_ms":T0 + 2}
            ],"total":2,"truncated":false,"next_offset":null})
        );
        let v = parsed(&notes.list_files_by_prefix(&json!({})));
        let paths: Vec<&str> = v["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["a", "b/1", "b/2", "bb", "c"]);
        let v = parsed(&notes.list_files_by_prefix(&json!({"prefix":"b","limit":2})));
        assert_eq!(v["total"], 3);
        assert_eq!(v["truncated"], true);
        assert_eq!(v["files"].as_array().unwrap().len(), 2);
        let v = parsed(&notes.list_files_by_prefix(&Value::Null));
        assert_eq!(v["total"], 5);
        let v = parsed(&notes.list_files_by_prefix(&json!({"prefix":"zz"})));
        assert_eq!(
            v,
            json!({"files":[],"total":0,"truncated":false,"next_offset":null})
        );
        for (args, want) in [
            (
                json!({"limit":0}),
                r#"argument "limit" must be a positive integer, got 0"#,
            ),
            (
                json!({"limit":true}),
                r#"argument "limit" must be a positive integer, got true"#,
            ),
            (
                json!({"prefix":["a"]}),
                r#"argument "prefix" must be a string, got ["a"]"#,
            ),
            (
                json!({"paths":"a"}),
                r#"unknown argument "paths": did you mean "prefix"? (accepted: prefix, limit, offset)"#,
            ),
        ] {
            let text = err_text(notes.list_files_by_prefix(&args));
            assert_eq!(
                text,
                format!("notes_list_files_by_prefix: {want}"),
                "{args}"
            );
        }
    }

    #[test]
    fn recent_is_most_recent_first_with_path_ties() {
        let mut notes = notes_with(&[
            ("c", "x", T0),
            ("a", "x", T0),
            ("b", "x", T0 - 1),
            ("d", "x", T0 + 5),
        ]);
        let order = |n: &Notes, k| {
            n.recent(k)
                .iter()
                .map(|n| n.path.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(order(&notes, 10), ["d", "a", "c", "b"]);
        assert_eq!(order(&notes, 2), ["d", "a"]);
        notes
            .apply(&op(NoteOpKind::Append, "b", "y", T0 + 9))
            .unwrap();
        assert_eq!(order(&notes, 3), ["b", "d", "a"]);
        assert!(Notes::new().recent(3).is_empty());
    }

    mod replay_props {
        use super::*;
        use proptest::prelude::*;

        fn any_op() -> impl Strategy<Value = NoteOp> {
            let path = prop_oneof![
                4 => prop::sample::select(vec!["a", "b/c", "b/d", "é/🙂"]).prop_map(String::from),
                1 => prop::sample::select(vec!["", "/a", "a/", "../a", "a//b", "a\\b", "a\u{1}"]).prop_map(String::from),
            ];
            let content = prop_oneof![
                4 => "[a-z\n🙂]{0,12}",
                1 => Just(String::new()),
                1 => (MAX_NOTE_BYTES - 8..MAX_NOTE_BYTES + 8).prop_map(|n| "x".repeat(n)),
            ];
            let at_ms = prop_oneof![
                8 => 0i64..2_000_000_000_000,
                1 => Just(MAX_TIMESTAMP_MS + 1),
                1 => Just(i64::MIN),
            ];
            (any::<bool>(), path, content, at_ms).prop_map(|(w, path, content, at_ms)| NoteOp {
                kind: if w {
                    NoteOpKind::Write
                } else {
                    NoteOpKind::Append
                },
                path,
                content,
                at_ms,
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]
            /// Each op either fails and changes nothing, or does exactly what it says; every
            /// note stays non-empty and within the size limit; persisted data round-trips.
            #[test]
            fn replay_matches_the_operation_semantics(ops in prop::collection::vec(any_op(), 1..40)) {
                let mut notes = Notes::new();
                for op in &ops {
                    let before = notes.clone();
                    let old = before.get(&op.path).map(|n| n.content.clone());
                    match notes.apply(op) {
                        Err(_) => prop_assert_eq!(&notes, &before),
                        Ok(()) => {
                            let now = notes.get(&op.path).map(|n| n.content.clone());
                            let want = match op.kind {
                                NoteOpKind::Write if op.content.is_empty() => None,
                                NoteOpKind::Write => Some(op.content.clone()),
                                NoteOpKind::Append => Some(old.unwrap_or_default() + &op.content),
                            };
                            prop_assert_eq!(now, want);
                            prop_assert_eq!(notes.len() + usize::from(before.get(&op.path).is_some()),
                                before.len() + usize::from(notes.get(&op.path).is_some()));
                            prop_assert_eq!(NoteOp::from_data(&op.to_data()), Ok(op.clone()));
                        }
                    }
                    for n in notes.iter() {
                        prop_assert!(!n.content.is_empty() && n.bytes() <= MAX_NOTE_BYTES);
                    }
                }
            }
        }
    }

    mod capped {
        use super::*;
        use crate::args::abbreviated;
        use crate::test_support::within_cap;

        fn snap(name: &str, v: &Value) {
            insta::assert_snapshot!(name, serde_json::to_string_pretty(&abbreviated(v)).unwrap());
        }

        /// A 1,000,000-byte note on one line: read part by part with offset_chars.
        #[test]
        fn reading_a_one_line_note_of_a_million_bytes_pages_inside_the_line() {
            let text: String = "ab\"cé漢\\d"
                .chars()
                .cycle()
                .take(200_000)
                .collect::<String>();
            let text = format!("{text}{}", "x".repeat(MAX_NOTE_BYTES - text.len()));
            assert_eq!(text.len(), MAX_NOTE_BYTES);
            let notes = notes_with(&[("big.md", &text, T0)]);
            let first = within_cap(&notes.read_file(&json!({"path": "big.md"})));
            snap("read_one_long_line", &first);
            assert_eq!(first["next_start_line"], 1);
            let mut got = String::new();
            let mut offset = 0u64;
            loop {
                let v = within_cap(&notes.read_file(
                    &json!({"path": "big.md", "start_line": 1, "offset_chars": offset}),
                ));
                got.push_str(v["content"].as_str().unwrap());
                match v["next_offset_chars"].as_u64() {
                    Some(n) => {
                        assert!(n > offset);
                        offset = n;
                    }
                    None => break,
                }
            }
            assert_eq!(got, text);
        }

        /// Many lines: whole lines up to the cap, then next_start_line.
        #[test]
        fn reading_many_lines_stops_at_a_whole_line_and_says_where_to_go_on() {
            let lines: Vec<String> = (1..=20_000)
                .map(|i| format!("line {i:05} of the log"))
                .collect();
            let text = lines.join("\n") + "\n";
            let notes = notes_with(&[("log.md", &text, T0)]);
            let first = within_cap(&notes.read_file(&json!({"path": "log.md"})));
            snap("read_many_lines", &first);
            let next = first["next_start_line"].as_i64().unwrap();
            assert_eq!(first["end_line"], next - 1);
            assert!(first.get("next_offset_chars").is_none());
            let shown: Vec<&str> = first["content"].as_str().unwrap().split('\n').collect();
            assert_eq!(shown.len() as i64, next - 1);
            assert_eq!(
                shown.last().copied(),
                Some(lines[(next - 2) as usize].as_str())
            );
            let mut got: Vec<String> = shown.iter().map(|s| s.to_string()).collect();
            let mut start = next;
            loop {
                let v =
                    within_cap(&notes.read_file(&json!({"path": "log.md", "start_line": start})));
                got.extend(
                    v["content"]
                        .as_str()
                        .unwrap()
                        .split('\n')
                        .map(str::to_string),
                );
                match v["next_start_line"].as_i64() {
                    Some(n) => start = n,
                    None => break,
                }
            }
            assert_eq!(got, lines);
            // A small range is not capped.
            let v = parsed(
                &notes.read_file(&json!({"path": "log.md", "start_line": 2, "end_line": 3})),
            );
            assert!(v.get("capped").is_none());
            assert_eq!(v["content"], "line 00002 of the log\nline 00003 of the log");
            let e = err_text(
                notes.read_file(&json!({"path": "log.md", "start_line": 2, "offset_chars": 22})),
            );
            assert_eq!(e, "notes_read_file: argument \"offset_chars\" is 22, past the end of line 2 (21 characters)");
        }

        #[test]
        fn searching_with_a_huge_limit_is_capped_and_pages_with_offset() {
            let text: String = (1..=5_000).map(|i| format!("TODO item {i}\n")).collect();
            let notes = notes_with(&[("a.md", &text, T0), ("b.md", &text, T0)]);
            let first =
                within_cap(&notes.search_contents(&json!({"query": "TODO", "limit": 1_000_000})));
            snap("search_many_lines", &first);
            assert_eq!(first["match_count"], 10_000);
            let mut total = 0;
            let mut offset = 0u64;
            loop {
                let v = within_cap(&notes.search_contents(
                    &json!({"query": "TODO", "limit": 1_000_000, "offset": offset}),
                ));
                total += v["matches"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m["lines"].as_array().unwrap().len())
                    .sum::<usize>();
                match v["next_offset"].as_u64() {
                    Some(n) => offset = n,
                    None => break,
                }
            }
            assert_eq!(total, 10_000);
        }

        #[test]
        fn listing_many_notes_is_capped_and_pages_with_offset() {
            let files: Vec<(String, String)> = (0..3_000)
                .map(|i| (format!("notes/{i:05}-{}.md", "p".repeat(100)), "x".into()))
                .collect();
            let refs: Vec<(&str, &str, i64)> = files
                .iter()
                .map(|(p, c)| (p.as_str(), c.as_str(), T0))
                .collect();
            let notes = notes_with(&refs);
            let first = within_cap(&notes.list_files_by_prefix(&json!({"limit": 1_000_000})));
            assert!(first["capped"].is_string());
            assert_eq!(first["total"], 3_000);
            let mut seen = 0;
            let mut offset = 0u64;
            loop {
                let v = within_cap(
                    &notes.list_files_by_prefix(&json!({"limit": 1_000_000, "offset": offset})),
                );
                seen += v["files"].as_array().unwrap().len();
                match v["next_offset"].as_u64() {
                    Some(n) => offset = n,
                    None => break,
                }
            }
            assert_eq!(seen, 3_000);
        }
    }
}
