//! Pi session entries: the typed model of a session file's lines and of the objects
//! `getBranch()` returns, and a fast parser for them.
//!
//! Parsing goes through borrowed intermediate structs (`Raw*`) so that a large session is decoded
//! without building a `serde_json::Value` tree for every message body. Unknown fields are skipped,
//! unknown entry types become [`EntryKind::Unknown`], and a line that cannot be decoded is reported
//! with its line number while the rest of the file still loads.

use rustc_hash::FxHashMap as HashMap;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

/// One session entry: the common base fields plus its type-specific body.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: String,
    pub parent_id: Option<String>,
    pub timestamp: String,
    pub kind: EntryKind,
}

/// The type-specific part of an [`Entry`].
#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    Message(Message),
    Compaction {
        summary: String,
        first_kept_entry_id: Option<String>,
        tokens_before: Option<u64>,
        details: Value,
        from_hook: bool,
    },
    BranchSummary {
        from_id: Option<String>,
        summary: String,
        details: Value,
    },
    Custom {
        custom_type: String,
        data: Value,
    },
    CustomMessage {
        custom_type: String,
        text: String,
        display: bool,
        details: Value,
    },
    ContextEdit {
        target_id: String,
    },
    Label {
        target_id: String,
        label: Option<String>,
    },
    ModelChange {
        provider: String,
        model_id: String,
    },
    ThinkingLevelChange {
        thinking_level: String,
    },
    SessionInfo {
        name: Option<String>,
    },
    /// Pi's `usage` entries (usage outside the conversation); their content is not kept.
    Usage,
    /// Any other entry type: it keeps its place in the branch but is otherwise passed over.
    Unknown {
        entry_type: String,
    },
}

/// The message carried by a `message` entry, reduced to what Relay needs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Message {
    /// "user", "assistant", "toolResult", "custom", "bashExecution", "compactionSummary",
    /// "branchSummary", "system", or whatever other role Pi wrote.
    pub role: String,
    /// The message rendered as plain text (see the module documentation of each role).
    pub text: String,
    pub tool_name: Option<String>,
    pub tool_call_id: Option<String>,
    pub is_error: bool,
    /// Total tokens of an assistant message's usage (`totalTokens`, or the sum of its parts).
    pub usage_total: Option<u64>,
    pub stop_reason: Option<String>,
    pub custom_type: Option<String>,
}

/// The first line of a session file (`"type":"session"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub id: String,
    pub version: Option<u64>,
    pub cwd: Option<String>,
    pub timestamp: Option<String>,
    pub parent_session: Option<String>,
}

/// One decoded line of a session file.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Header(Header),
    Entry(Entry),
}

/// Why a line or entry could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    pub message: String,
}

impl ParseError {
    fn new(message: impl Into<String>) -> Self {
        ParseError {
            message: message.into(),
        }
    }
}

/// A malformed line of a session file: its 1-based line number and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A whole session file: its header (if any), its entries in file order, and the lines skipped.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedSession {
    pub header: Option<Header>,
    pub entries: Vec<Entry>,
    pub errors: Vec<LineError>,
}

// ---------------------------------------------------------------------------------------------
// Raw (borrowed) shapes
// ---------------------------------------------------------------------------------------------

type Str<'a> = Cow<'a, str>;

#[derive(Deserialize)]
struct RawLine<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Str<'a>>,
    #[serde(borrow)]
    id: Option<Str<'a>>,
    #[serde(rename = "parentId", borrow)]
    parent_id: Option<Str<'a>>,
    #[serde(borrow)]
    timestamp: Option<Str<'a>>,
    // header
    version: Option<f64>,
    #[serde(borrow)]
    cwd: Option<Str<'a>>,
    #[serde(rename = "parentSession", borrow)]
    parent_session: Option<Str<'a>>,
    // message
    #[serde(borrow)]
    message: Option<RawMessage<'a>>,
    // model / thinking changes
    #[serde(borrow)]
    provider: Option<Str<'a>>,
    #[serde(rename = "modelId", borrow)]
    model_id: Option<Str<'a>>,
    #[serde(rename = "thinkingLevel", borrow)]
    thinking_level: Option<Str<'a>>,
    // compaction / branch summary
    #[serde(borrow)]
    summary: Option<Str<'a>>,
    #[serde(rename = "firstKeptEntryId", borrow)]
    first_kept_entry_id: Option<Str<'a>>,
    #[serde(rename = "tokensBefore")]
    tokens_before: Option<f64>,
    details: Option<Value>,
    #[serde(rename = "fromHook")]
    from_hook: Option<bool>,
    #[serde(rename = "fromId", borrow)]
    from_id: Option<Str<'a>>,
    // custom / custom_message
    #[serde(rename = "customType", borrow)]
    custom_type: Option<Str<'a>>,
    data: Option<Value>,
    #[serde(borrow)]
    content: Option<RawContent<'a>>,
    display: Option<bool>,
    // label / context_edit / session_info
    #[serde(rename = "targetId", borrow)]
    target_id: Option<Str<'a>>,
    #[serde(borrow)]
    label: Option<Str<'a>>,
    #[serde(borrow)]
    name: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow)]
    role: Option<Str<'a>>,
    #[serde(borrow)]
    content: Option<RawContent<'a>>,
    #[serde(rename = "toolName", borrow)]
    tool_name: Option<Str<'a>>,
    #[serde(rename = "toolCallId", borrow)]
    tool_call_id: Option<Str<'a>>,
    #[serde(rename = "isError")]
    is_error: Option<bool>,
    usage: Option<RawUsage>,
    #[serde(rename = "stopReason", borrow)]
    stop_reason: Option<Str<'a>>,
    #[serde(rename = "customType", borrow)]
    custom_type: Option<Str<'a>>,
    #[serde(borrow)]
    command: Option<Str<'a>>,
    #[serde(borrow)]
    output: Option<Str<'a>>,
    #[serde(borrow)]
    summary: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct RawUsage {
    input: Option<f64>,
    output: Option<f64>,
    #[serde(rename = "cacheRead")]
    cache_read: Option<f64>,
    #[serde(rename = "cacheWrite")]
    cache_write: Option<f64>,
    #[serde(rename = "totalTokens")]
    total_tokens: Option<f64>,
}

#[derive(Deserialize)]
struct RawBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Str<'a>>,
    text: Option<JsonText>,
    #[serde(borrow)]
    name: Option<Str<'a>>,
    arguments: Option<Value>,
}

/// A JSON string decoded in one pass: serde_json finds its end and decodes its escapes in the
/// same scan, and the text is copied once into a `String` of exactly its size.
struct JsonText(String);

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl Visitor<'_> for TextVisitor {
            type Value = JsonText;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(JsonText(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(JsonText(v))
            }
        }

        deserializer.deserialize_str(TextVisitor)
    }
}

/// Message content: a plain string or an array of content blocks.
enum RawContent<'a> {
    Text(Str<'a>),
    Blocks(Vec<RawBlock<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for RawContent<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor<'a>(PhantomData<&'a ()>);

        impl<'de: 'a, 'a> Visitor<'de> for ContentVisitor<'a> {
            type Value = RawContent<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(RawContent::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawContent::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(RawContent::Text(Cow::Owned(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(RawContent::Blocks(Vec::new()))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(RawContent::Blocks(Vec::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(2));
                while let Some(block) = seq.next_element::<RawBlock<'a>>()? {
                    blocks.push(block);
                }
                Ok(RawContent::Blocks(blocks))
            }
        }

        deserializer.deserialize_any(ContentVisitor(PhantomData))
    }
}

// ---------------------------------------------------------------------------------------------
// Conversion
// ---------------------------------------------------------------------------------------------

fn owned(s: Option<Str<'_>>) -> Option<String> {
    s.map(Cow::into_owned)
}

fn to_u64(v: Option<f64>) -> Option<u64> {
    v.filter(|x| x.is_finite() && *x >= 0.0).map(|x| x as u64)
}

/// Joins content blocks into text. Text blocks become their text, images `[image]`; when
/// `assistant` is true, thinking blocks are dropped and tool calls become
/// `[tool_call <name>] <compact JSON arguments>`. Other block types are passed over.
fn content_text(content: Option<RawContent<'_>>, assistant: bool) -> String {
    match content {
        None => String::new(),
        Some(RawContent::Text(t)) => t.into_owned(),
        Some(RawContent::Blocks(mut blocks)) => {
            // The usual case, a single text block, is moved rather than copied.
            if let [block] = blocks.as_mut_slice() {
                if block.kind.as_deref() == Some("text") {
                    if let Some(t) = block.text.take() {
                        return t.0;
                    }
                }
            }
            let mut out = String::new();
            let mut first = true;
            for block in blocks {
                let kind = block.kind.as_deref().unwrap_or("");
                let piece: Cow<'_, str> = match kind {
                    "text" => match block.text {
                        Some(t) => Cow::Owned(t.0),
                        None => continue,
                    },
                    "image" => Cow::Borrowed("[image]"),
                    "toolCall" if assistant => {
                        let name = block.name.as_deref().unwrap_or("");
                        let args = block
                            .arguments
                            .as_ref()
                            .map(|a| serde_json::to_string(a).unwrap_or_default())
                            .unwrap_or_else(|| "{}".to_string());
                        Cow::Owned(format!("[tool_call {name}] {args}"))
                    }
                    _ => continue,
                };
                if !first {
                    out.push('\n');
                }
                first = false;
                out.push_str(&piece);
            }
            out
        }
    }
}

fn convert_message(raw: RawMessage<'_>) -> Message {
    let role = raw.role.map(Cow::into_owned).unwrap_or_default();
    let text = match role.as_str() {
        "assistant" => content_text(raw.content, true),
        "bashExecution" => {
            let command = raw.command.as_deref().unwrap_or("");
            let output = raw.output.as_deref().unwrap_or("");
            let mut s = String::with_capacity(command.len() + output.len() + 3);
            s.push_str("$ ");
            s.push_str(command);
            s.push('\n');
            s.push_str(output);
            s
        }
        "compactionSummary" | "branchSummary" => owned(raw.summary).unwrap_or_default(),
        _ => content_text(raw.content, false),
    };
    let usage_total = raw.usage.map(|u| {
        let total = to_u64(u.total_tokens).unwrap_or(0);
        if total > 0 {
            total
        } else {
            [u.input, u.output, u.cache_read, u.cache_write]
                .into_iter()
                .map(|v| to_u64(v).unwrap_or(0))
                .sum()
        }
    });
    Message {
        role,
        text,
        tool_name: owned(raw.tool_name),
        tool_call_id: owned(raw.tool_call_id),
        is_error: raw.is_error.unwrap_or(false),
        usage_total,
        stop_reason: owned(raw.stop_reason),
        custom_type: owned(raw.custom_type),
    }
}

fn missing(entry_type: &str, field: &str) -> ParseError {
    ParseError::new(format!("`{entry_type}` entry has no `{field}`"))
}

fn convert(raw: RawLine<'_>) -> Result<Line, ParseError> {
    let entry_type = raw
        .kind
        .ok_or_else(|| ParseError::new("object has no `type` field"))?;
    if entry_type == "session" {
        let id = raw.id.ok_or_else(|| missing("session", "id"))?;
        if id.is_empty() {
            return Err(ParseError::new("`session` header has an empty `id`"));
        }
        return Ok(Line::Header(Header {
            id: id.into_owned(),
            version: to_u64(raw.version),
            cwd: owned(raw.cwd),
            timestamp: owned(raw.timestamp),
            parent_session: owned(raw.parent_session),
        }));
    }
    let id = raw
        .id
        .ok_or_else(|| ParseError::new(format!("`{entry_type}` entry has no `id`")))?
        .into_owned();
    // An entry is addressed by its id (branch walk, mirror, history item ids): an empty one is
    // as unusable as a missing one.
    if id.is_empty() {
        return Err(ParseError::new(format!(
            "`{entry_type}` entry has an empty `id`"
        )));
    }
    let kind = match entry_type.as_ref() {
        "message" => {
            let message = raw.message.ok_or_else(|| missing("message", "message"))?;
            EntryKind::Message(convert_message(message))
        }
        "compaction" => EntryKind::Compaction {
            summary: owned(raw.summary).unwrap_or_default(),
            first_kept_entry_id: owned(raw.first_kept_entry_id),
            tokens_before: to_u64(raw.tokens_before),
            details: raw.details.unwrap_or(Value::Null),
            from_hook: raw.from_hook.unwrap_or(false),
        },
        "branch_summary" => EntryKind::BranchSummary {
            from_id: owned(raw.from_id),
            summary: owned(raw.summary).unwrap_or_default(),
            details: raw.details.unwrap_or(Value::Null),
        },
        "custom" => EntryKind::Custom {
            custom_type: owned(raw.custom_type).unwrap_or_default(),
            data: raw.data.unwrap_or(Value::Null),
        },
        "custom_message" => EntryKind::CustomMessage {
            custom_type: owned(raw.custom_type).unwrap_or_default(),
            text: content_text(raw.content, false),
            display: raw.display.unwrap_or(false),
            details: raw.details.unwrap_or(Value::Null),
        },
        "context_edit" => EntryKind::ContextEdit {
            target_id: owned(raw.target_id).ok_or_else(|| missing("context_edit", "targetId"))?,
        },
        "label" => EntryKind::Label {
            target_id: owned(raw.target_id).ok_or_else(|| missing("label", "targetId"))?,
            label: owned(raw.label),
        },
        "model_change" => EntryKind::ModelChange {
            provider: owned(raw.provider).unwrap_or_default(),
            model_id: owned(raw.model_id).unwrap_or_default(),
        },
        "thinking_level_change" => EntryKind::ThinkingLevelChange {
            thinking_level: owned(raw.thinking_level).unwrap_or_default(),
        },
        "session_info" => EntryKind::SessionInfo {
            name: owned(raw.name),
        },
        "usage" => EntryKind::Usage,
        other => EntryKind::Unknown {
            entry_type: other.to_string(),
        },
    };
    Ok(Line::Entry(Entry {
        id,
        parent_id: owned(raw.parent_id),
        timestamp: owned(raw.timestamp).unwrap_or_default(),
        kind,
    }))
}

fn json_error(e: serde_json::Error) -> ParseError {
    ParseError::new(format!("invalid JSON: {e}"))
}

/// Parses one line of a session file (the header or an entry).
pub fn parse_line(line: &str) -> Result<Line, ParseError> {
    let raw: RawLine<'_> = serde_json::from_str(line).map_err(json_error)?;
    convert(raw)
}

/// Parses one entry object given as JSON (for example a `getBranch()` element, stringified).
/// A session header is an error here.
pub fn parse_entry(json: &str) -> Result<Entry, ParseError> {
    match parse_line(json)? {
        Line::Entry(e) => Ok(e),
        Line::Header(_) => Err(ParseError::new(
            "expected a session entry, found a session header",
        )),
    }
}

/// Parses a JSON array of entry objects. A bad element makes the whole call fail with an error
/// naming its (0-based) index.
pub fn parse_entries(json_array: &str) -> Result<Vec<Entry>, ParseError> {
    struct Entries;

    impl<'de> Visitor<'de> for Entries {
        type Value = Vec<Entry>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array of session entries")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            loop {
                let index = out.len();
                let raw = match seq.next_element::<RawLine<'de>>() {
                    Ok(Some(raw)) => raw,
                    Ok(None) => break,
                    Err(e) => return Err(de::Error::custom(format!("element {index}: {e}"))),
                };
                match convert(raw) {
                    Ok(Line::Entry(e)) => out.push(e),
                    Ok(Line::Header(_)) => {
                        return Err(de::Error::custom(format!(
                            "element {index}: expected a session entry, found a session header"
                        )))
                    }
                    Err(e) => return Err(de::Error::custom(format!("element {index}: {e}"))),
                }
            }
            Ok(out)
        }
    }

    let mut de = serde_json::Deserializer::from_str(json_array);
    let entries = de
        .deserialize_seq(Entries)
        .map_err(|e| ParseError::new(e.to_string()))?;
    de.end().map_err(json_error)?;
    Ok(entries)
}

/// Parses a whole session file. Blank lines are ignored; a malformed line is recorded in
/// `errors` (1-based line number) and skipped, and the rest of the file still loads. The first
/// header wins; a later header line is reported as an error.
pub fn parse_session(text: &str) -> ParsedSession {
    let mut session = ParsedSession::default();
    for (index, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line) {
            Ok(Line::Entry(entry)) => session.entries.push(entry),
            Ok(Line::Header(header)) => {
                if session.header.is_none() {
                    session.header = Some(header);
                } else {
                    session.errors.push(LineError {
                        line: index + 1,
                        message: "a second session header; ignored".into(),
                    });
                }
            }
            Err(e) => session.errors.push(LineError {
                line: index + 1,
                message: e.message,
            }),
        }
    }
    session
}

/// The indices (into `entries`) of the path from the root to `leaf_id`, following `parent_id`.
/// Without a leaf, the last entry is the leaf. An unknown leaf gives an empty path; a missing
/// parent ends the walk (that entry is the root); a cycle is cut where it closes.
pub fn branch_indices(entries: &[Entry], leaf_id: Option<&str>) -> Vec<usize> {
    branch_path(
        entries.len(),
        |i| (entries[i].id.as_str(), entries[i].parent_id.as_deref()),
        leaf_id,
    )
}

/// [`branch_indices`] over `len` entries given as `(id, parent_id)` by `at`.
fn branch_path<'a>(
    len: usize,
    at: impl Fn(usize) -> (&'a str, Option<&'a str>),
    leaf_id: Option<&str>,
) -> Vec<usize> {
    let mut by_id: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(len, Default::default());
    for i in 0..len {
        by_id.insert(at(i).0, i);
    }
    let start = match leaf_id {
        Some(id) => by_id.get(id).copied(),
        None => len.checked_sub(1),
    };
    let mut path = Vec::new();
    let mut seen = vec![false; len];
    let mut cursor = start;
    while let Some(i) = cursor {
        if seen[i] {
            break;
        }
        seen[i] = true;
        path.push(i);
        cursor = at(i).1.and_then(|p| by_id.get(p).copied());
    }
    path.reverse();
    path
}

/// Receives the entries of a branch from [`stream_branch`].
pub trait BranchSink {
    /// Starts (or starts over): forget every entry received since the previous `begin`.
    fn begin(&mut self);
    /// The next entry of the branch, root first.
    fn entry(&mut self, entry: Entry);
    /// [`BranchSink::entry`] for an entry the caller keeps (to free or reuse it where it was
    /// made). By default the sink gets a copy; a sink that only reads the entry should take it
    /// as is.
    fn entry_ref(&mut self, entry: &Entry) {
        self.entry(entry.clone());
    }
}

/// What the general path of [`stream_branch`] keeps of each entry line.
struct LineRec {
    id: String,
    parent_id: Option<String>,
    start: usize,
    end: usize,
}

/// The non-blank lines of a session file with their byte ranges (`\r\n` endings trimmed).
fn lines_with_ranges(text: &str) -> impl Iterator<Item = (usize, usize, &str)> {
    let ends = memchr::memchr_iter(b'\n', text.as_bytes()).chain(std::iter::once(text.len()));
    let mut start = 0;
    ends.filter_map(move |end| {
        let raw = &text[start..end];
        let from = start;
        start = end + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        (!line.trim().is_empty()).then_some((from, from + line.len(), line))
    })
}

/// The last entry of a session file, as [`parse_session`] would list it.
fn last_entry(text: &str) -> Option<Entry> {
    text.rsplit('\n').find_map(last_entry_of_line)
}

/// The entry a line holds, if it is a well-formed entry line (`\r` ending and blanks allowed).
/// Lines are visited from the end of a file to find its last entry (see [`last_entry`]).
pub fn last_entry_of_line(raw: &str) -> Option<Entry> {
    let line = raw.strip_suffix('\r').unwrap_or(raw);
    if line.trim().is_empty() {
        return None;
    }
    match parse_line(line) {
        Ok(Line::Entry(e)) => Some(e),
        _ => None,
    }
}

/// Appends to `out` the entries of the lines of `text` (split at `\n`), in order: exactly
/// `text.split('\n').filter_map(last_entry_of_line)`, but decoded by one JSON reader that
/// goes from line to line, so its buffer for unescaping strings is reused rather than grown
/// anew for every line. A line that is not one JSON value alone (a malformed line, one with
/// trailing garbage, a value spread over lines) is decoded on its own, as
/// [`last_entry_of_line`] does, and the reader starts again on the next line.
pub fn push_entries_of_lines(text: &str, out: &mut Vec<Entry>) {
    let bytes = text.as_bytes();
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\r');
    let mut pos = 0;
    while pos < bytes.len() {
        let base = pos;
        let mut values =
            serde_json::Deserializer::from_str(&text[base..]).into_iter::<RawLine<'_>>();
        loop {
            // Where the next value starts: blank lines before it are passed over, as the
            // reader does and as they would be on their own.
            let start = match bytes[pos..].iter().position(|b| !blank(b) && *b != b'\n') {
                Some(i) => pos + i,
                None => return,
            };
            let line_end = match memchr::memchr(b'\n', &bytes[start..]) {
                Some(i) => start + i,
                None => bytes.len(),
            };
            let alone = match values.next() {
                Some(Ok(raw)) => {
                    let end = base + values.byte_offset();
                    (end <= line_end && bytes[end..line_end].iter().all(blank)).then_some(raw)
                }
                _ => None,
            };
            pos = line_end + 1;
            match alone {
                Some(raw) => {
                    if let Ok(Line::Entry(e)) = convert(raw) {
                        out.push(e);
                    }
                    if pos > bytes.len() {
                        return;
                    }
                }
                None => {
                    let line_start = memchr::memrchr(b'\n', &bytes[..start]).map_or(0, |i| i + 1);
                    out.extend(last_entry_of_line(&text[line_start..line_end]));
                    break; // start a new reader on the next line
                }
            }
        }
    }
}

/// The fast path of [`stream_branch`], fed one line at a time: for a file without branches whose
/// last entry is the leaf, every entry line is decoded once and handed to the sink at once.
///
/// Use: check that the file's last entry is the leaf (see [`last_entry_of_line`]), call
/// `sink.begin()`, feed every line in file order to [`LinearFeed::line`] while it returns true,
/// then ask [`LinearFeed::finish`]. When either says no, the sink holds a partial branch: take
/// the general path ([`stream_branch_by_parents`]), which begins the sink again.
#[derive(Debug, Default)]
pub struct LinearFeed {
    prev_id: Option<String>,
    /// Hashes of the ids pushed so far; a repeated hash (a repeated id, or a rare collision)
    /// sends the caller to the general path, which is right in both cases.
    seen: rustc_hash::FxHashSet<u64>,
    repeated: bool,
}

impl LinearFeed {
    pub fn new() -> Self {
        LinearFeed::default()
    }

    /// Feeds the next line of the file (without its `\n`; a `\r` ending and blank lines are
    /// allowed). Returns false when the entry does not follow the previous one: the file has
    /// branches, so stop feeding. Malformed lines and headers are passed over.
    pub fn line(&mut self, raw: &str, sink: &mut impl BranchSink) -> bool {
        match last_entry_of_line(raw) {
            Some(entry) => self.entry(entry, sink),
            None => true,
        }
    }

    /// [`LinearFeed::line`] for a line already decoded (with [`last_entry_of_line`], which may
    /// run on another thread): the entry of the next entry line of the file.
    pub fn entry(&mut self, entry: Entry, sink: &mut impl BranchSink) -> bool {
        if !self.follows(&entry) {
            return false;
        }
        sink.entry(entry);
        true
    }

    /// [`LinearFeed::entry`] for an entry the caller keeps: the sink gets it through
    /// [`BranchSink::entry_ref`].
    pub fn entry_ref(&mut self, entry: &Entry, sink: &mut impl BranchSink) -> bool {
        if !self.follows(entry) {
            return false;
        }
        sink.entry_ref(entry);
        true
    }

    /// Whether `entry` follows the previous one; if so, it becomes the previous one.
    fn follows(&mut self, entry: &Entry) -> bool {
        if let Some(prev) = &self.prev_id {
            if entry.parent_id.as_deref() != Some(prev.as_str()) {
                return false;
            }
        }
        {
            use std::hash::BuildHasher;
            let h = rustc_hash::FxBuildHasher.hash_one(entry.id.as_str());
            if !self.seen.insert(h) {
                self.repeated = true;
            }
        }
        let prev = self.prev_id.get_or_insert_with(String::new);
        prev.clear();
        prev.push_str(&entry.id);
        true
    }

    /// After the last line: true when the sink now holds exactly the branch that ends at
    /// `leaf_id` (the last entry fed is the leaf and no id was repeated).
    pub fn finish(&self, leaf_id: &str) -> bool {
        !self.repeated && self.prev_id.as_deref() == Some(leaf_id)
    }
}

/// Feeds the branch of a session file that ends at the entry `leaf_id` to `sink`, root first,
/// decoding one line at a time: the whole file is never held as a list of entries.
///
/// The entries the sink receives after its last `begin` are exactly those of
/// `branch_indices(&parse_session(text).entries, Some(leaf_id))`, in that order. Returns false,
/// without calling the sink at all, when no entry of the file has the id `leaf_id`.
///
/// When the leaf is the file's last entry and every entry's parent is the entry before it (a
/// file without branches), each line is decoded once and handed over at once (see
/// [`LinearFeed`]). Otherwise [`stream_branch_by_parents`] does the work.
pub fn stream_branch(text: &str, leaf_id: &str, sink: &mut impl BranchSink) -> bool {
    if last_entry(text).is_some_and(|e| e.id == leaf_id) {
        let mut feed = LinearFeed::new();
        sink.begin();
        let all_fed = lines_with_ranges(text).all(|(_, _, line)| feed.line(line, sink));
        if all_fed && feed.finish(leaf_id) {
            return true;
        }
    }
    stream_branch_by_parents(text, leaf_id, sink)
}

/// The general path of [`stream_branch`], same contract: the ids and parents of all lines are
/// read first, then only the branch's lines are decoded again and handed over.
pub fn stream_branch_by_parents(text: &str, leaf_id: &str, sink: &mut impl BranchSink) -> bool {
    let mut recs: Vec<LineRec> = Vec::new();
    for (start, end, line) in lines_with_ranges(text) {
        if let Ok(Line::Entry(entry)) = parse_line(line) {
            recs.push(LineRec {
                id: entry.id,
                parent_id: entry.parent_id,
                start,
                end,
            });
        }
    }
    let path = branch_path(
        recs.len(),
        |i| (recs[i].id.as_str(), recs[i].parent_id.as_deref()),
        Some(leaf_id),
    );
    if path.is_empty() {
        return false;
    }
    sink.begin();
    for i in path {
        if let Ok(Line::Entry(entry)) = parse_line(&text[recs[i].start..recs[i].end]) {
            sink.entry(entry);
        }
    }
    true
}

#[cfg(test)]
mod empty_id_tests {
    use super::*;

    #[test]
    fn an_empty_id_is_a_clear_parse_error_and_the_rest_loads() {
        let err = parse_line(r#"{"type":"thinking_level_change","id":""}"#).unwrap_err();
        assert!(err.to_string().contains("empty `id`"), "{err}");
        assert!(parse_line(r#"{"type":"session","version":3,"id":""}"#).is_err());
        let text = "{\"type\":\"message\",\"id\":\"\",\"timestamp\":\"T\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n{\"type\":\"message\",\"id\":\"b\",\"timestamp\":\"T\",\"message\":{\"role\":\"user\",\"content\":\"y\"}}\n";
        let parsed = parse_session(text);
        assert_eq!(parsed.entries.len(), 1);
        assert_eq!(parsed.errors.len(), 1);
        assert_eq!(parsed.errors[0].line, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(line: &str) -> Entry {
        match parse_line(line) {
            Ok(Line::Entry(e)) => e,
            other => panic!("expected an entry, got {other:?}"),
        }
    }

    fn message(line: &str) -> Message {
        match entry(line).kind {
            EntryKind::Message(m) => m,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    /// The text of a message whose one text block is the JSON string literal `"{body}"`, as
    /// the parser decodes it (an error when the literal is not valid JSON).
    fn unescaped(body: &str) -> Result<String, ParseError> {
        let line = format!(
            r#"{{"type":"message","id":"a","message":{{"role":"user","content":[{{"type":"text","text":"{body}"}}]}}}}"#
        );
        parse_line(&line).map(|l| match l {
            Line::Entry(Entry {
                kind: EntryKind::Message(m),
                ..
            }) => m.text,
            other => panic!("expected a message, got {other:?}"),
        })
    }

    #[test]
    fn unescape_json_strings() {
        assert_eq!(
            unescaped(r#"a\"b\\c\/d\be\ff\ng\rh\ti"#).unwrap(),
            "a\"b\\c/d\u{8}e\u{c}f\ng\rh\ti"
        );
        assert_eq!(unescaped(r"\u00e9\u4E2D \ud83d\ude00!").unwrap(), "é中 😀!");
        assert_eq!(unescaped("plain é 😀").unwrap(), "plain é 😀");
        for bad in [
            r"\x",
            r"\",
            r"\u12",
            r"\u12g4",
            r"\ud83d",
            r"\ud83dx",
            r"\ud83d\n",
            r"\ud83d\u0041",
            r"\ude00",
            "\\é",
        ] {
            assert!(unescaped(bad).is_err(), "{bad:?} must be rejected");
            let json = format!("\"{bad}\"");
            assert!(serde_json::from_str::<String>(&json).is_err(), "{bad:?}");
        }
    }

    proptest::proptest! {
        /// Any text survives serde_json's encoding and our decoding.
        #[test]
        fn unescape_round_trips(text in "\\PC*|[\\x00-\\x1f\"\\\\/\u{80}-\u{10ffff}a]*") {
            let json = serde_json::to_string(&text).unwrap();
            proptest::prop_assert_eq!(unescaped(&json[1..json.len() - 1]).unwrap(), text);
        }

        /// On arbitrary escape soup, we accept exactly what serde_json accepts for a string,
        /// with the same text.
        #[test]
        fn unescape_agrees_with_serde(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    "[a-z\u{e9}\u{1F600}]{0,3}",
                    "\\\\[\"\\\\/bfnrtux0]",
                    "\\\\u[0-9a-fA-F]{4}",
                    "\\\\u[dD][89abAB][0-9a-f]{2}",
                    "\\\\u[dD][c-fC-F][0-9a-f]{2}",
                    "\\\\u[0-9a-g]{0,3}",
                ],
                0..8,
            )
        ) {
            let body: String = pieces.concat();
            let ours = unescaped(&body).ok();
            let theirs = serde_json::from_str::<String>(&format!("\"{body}\"")).ok();
            proptest::prop_assert_eq!(ours, theirs, "{:?}", body);
        }
    }

    #[test]
    fn text_blocks_decode_like_serde() {
        let m = message(
            r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"user","content":[{"type":"text","text":"x\u00e9\ud83d\ude00\"\\y"},{"type":"text","text":null},{"type":"text","text":"z"}]}}"#,
        );
        assert_eq!(m.text, "xé😀\"\\y\nz");
        for bad in [
            r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"user","content":[{"type":"text","text":5}]}}"#,
            r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"user","content":[{"type":"text","text":"\ud800"}]}}"#,
            r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"user","content":[{"type":"text","text":"\q"}]}}"#,
        ] {
            let err = parse_line(bad).unwrap_err();
            assert!(err.message.starts_with("invalid JSON"), "{bad}: {err}");
        }
    }

    #[test]
    fn header_line() {
        let line = r#"{"type":"session","version":3,"id":"0199-abc","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w","parentSession":"/s/p.jsonl","extra":1}"#;
        assert_eq!(
            parse_line(line).unwrap(),
            Line::Header(Header {
                id: "0199-abc".into(),
                version: Some(3),
                cwd: Some("/w".into()),
                timestamp: Some("2025-01-01T00:00:00.000Z".into()),
                parent_session: Some("/s/p.jsonl".into()),
            })
        );
    }

    #[test]
    fn base_fields() {
        let e = entry(
            r#"{"type":"model_change","id":"aa11","parentId":"bb22","timestamp":"T1","provider":"faux","modelId":"faux-1"}"#,
        );
        assert_eq!(e.id, "aa11");
        assert_eq!(e.parent_id.as_deref(), Some("bb22"));
        assert_eq!(e.timestamp, "T1");
        assert_eq!(
            e.kind,
            EntryKind::ModelChange {
                provider: "faux".into(),
                model_id: "faux-1".into()
            }
        );
        let root = entry(
            r#"{"type":"session_info","id":"r","parentId":null,"timestamp":"T","name":"demo"}"#,
        );
        assert_eq!(root.parent_id, None);
        assert_eq!(
            root.kind,
            EntryKind::SessionInfo {
                name: Some("demo".into())
            }
        );
    }

    #[test]
    fn user_message_string_and_blocks() {
        let m = message(
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"T","message":{"role":"user","content":"hello \"there\"\nsecond","timestamp":1}}"#,
        );
        assert_eq!(m.role, "user");
        assert_eq!(m.text, "hello \"there\"\nsecond");
        let m = message(
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"T","message":{"role":"user","content":[{"type":"text","text":"one"},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"two"}]}}"#,
        );
        assert_eq!(m.text, "one\n[image]\ntwo");
    }

    #[test]
    fn assistant_message() {
        let m = message(
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"T","message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret plan"},{"type":"text","text":"Let me look."},{"type":"toolCall","id":"c1","name":"history_search_contents","arguments":{"query":"foo","limit":3}}],"api":"x","provider":"faux","model":"m","usage":{"input":10,"output":5,"cacheRead":1,"cacheWrite":0,"totalTokens":16,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1}}"#,
        );
        assert_eq!(m.role, "assistant");
        assert_eq!(
            m.text,
            "Let me look.\n[tool_call history_search_contents] {\"query\":\"foo\",\"limit\":3}"
        );
        assert!(!m.text.contains("secret"));
        assert_eq!(m.usage_total, Some(16));
        assert_eq!(m.stop_reason.as_deref(), Some("toolUse"));
    }

    #[test]
    fn usage_total_falls_back_to_sum() {
        let m = message(
            r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"assistant","content":[],"usage":{"input":10,"output":5,"cacheRead":3,"cacheWrite":2,"totalTokens":0}}}"#,
        );
        assert_eq!(m.usage_total, Some(20));
        let m = message(
            r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"assistant","content":[]}}"#,
        );
        assert_eq!(m.usage_total, None);
    }

    #[test]
    fn tool_result_message() {
        let m = message(
            r#"{"type":"message","id":"a","parentId":"p","timestamp":"T","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"file body"}],"isError":true,"timestamp":1}}"#,
        );
        assert_eq!(m.role, "toolResult");
        assert_eq!(m.text, "file body");
        assert_eq!(m.tool_name.as_deref(), Some("read"));
        assert_eq!(m.tool_call_id.as_deref(), Some("c1"));
        assert!(m.is_error);
    }

    #[test]
    fn custom_bash_and_summary_messages() {
        let m = message(
            r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"custom","customType":"relay-note","content":"note text","display":true}}"#,
        );
        assert_eq!((m.role.as_str(), m.text.as_str()), ("custom", "note text"));
        assert_eq!(m.custom_type.as_deref(), Some("relay-note"));
        let m = message(
            r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"bashExecution","command":"ls -a","output":"x\ny","exitCode":0,"cancelled":false,"truncated":false}}"#,
        );
        assert_eq!(m.text, "$ ls -a\nx\ny");
        let m = message(
            r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"compactionSummary","summary":"sum","tokensBefore":5}}"#,
        );
        assert_eq!(m.text, "sum");
        let m = message(
            r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"branchSummary","summary":"bs","fromId":null}}"#,
        );
        assert_eq!(m.text, "bs");
        let m = message(
            r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"system","content":[{"type":"text","text":"sys"}],"sections":{"a":"b"},"toolsAdded":[]}}"#,
        );
        assert_eq!((m.role.as_str(), m.text.as_str()), ("system", "sys"));
        let m = message(
            r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"mystery","content":"?"}}"#,
        );
        assert_eq!((m.role.as_str(), m.text.as_str()), ("mystery", "?"));
    }

    #[test]
    fn compaction_and_branch_summary() {
        let e = entry(
            r#"{"type":"compaction","id":"c","parentId":"p","timestamp":"T","summary":"S","firstKeptEntryId":"k","tokensBefore":1234,"details":{"relay":"window","windowId":"pcw:s:abcd0123"},"fromHook":true,"usage":{"input":1},"systemMessage":{"role":"system","content":"x"}}"#,
        );
        assert_eq!(
            e.kind,
            EntryKind::Compaction {
                summary: "S".into(),
                first_kept_entry_id: Some("k".into()),
                tokens_before: Some(1234),
                details: json!({"relay":"window","windowId":"pcw:s:abcd0123"}),
                from_hook: true,
            }
        );
        let e = entry(
            r#"{"type":"compaction","id":"c","parentId":"p","timestamp":"T","summary":"S","firstKeptEntryId":null,"tokensBefore":0}"#,
        );
        assert!(matches!(
            e.kind,
            EntryKind::Compaction {
                first_kept_entry_id: None,
                from_hook: false,
                details: Value::Null,
                ..
            }
        ));
        let e = entry(
            r#"{"type":"branch_summary","id":"b","parentId":"p","timestamp":"T","fromId":"f","summary":"went elsewhere","details":[1]}"#,
        );
        assert_eq!(
            e.kind,
            EntryKind::BranchSummary {
                from_id: Some("f".into()),
                summary: "went elsewhere".into(),
                details: json!([1])
            }
        );
    }

    #[test]
    fn custom_and_custom_message() {
        let e = entry(
            r#"{"type":"custom","id":"c","parentId":"p","timestamp":"T","customType":"relay-reset","data":{"n":1}}"#,
        );
        assert_eq!(
            e.kind,
            EntryKind::Custom {
                custom_type: "relay-reset".into(),
                data: json!({"n":1})
            }
        );
        let e = entry(
            r#"{"type":"custom","id":"c","parentId":"p","timestamp":"T","customType":"bare"}"#,
        );
        assert_eq!(
            e.kind,
            EntryKind::Custom {
                custom_type: "bare".into(),
                data: Value::Null
            }
        );
        let e = entry(
            r#"{"type":"custom_message","id":"c","parentId":"p","timestamp":"T","customType":"reminder","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"display":true,"details":{"k":2}}"#,
        );
        assert_eq!(
            e.kind,
            EntryKind::CustomMessage {
                custom_type: "reminder".into(),
                text: "a\nb".into(),
                display: true,
                details: json!({"k":2})
            }
        );
    }

    #[test]
    fn small_entry_types() {
        assert_eq!(
            entry(r#"{"type":"label","id":"l","parentId":"p","timestamp":"T","targetId":"x","label":"bookmark"}"#).kind,
            EntryKind::Label { target_id: "x".into(), label: Some("bookmark".into()) }
        );
        assert_eq!(
            entry(r#"{"type":"label","id":"l","parentId":"p","timestamp":"T","targetId":"x"}"#)
                .kind,
            EntryKind::Label {
                target_id: "x".into(),
                label: None
            }
        );
        assert_eq!(
            entry(r#"{"type":"thinking_level_change","id":"t","parentId":"p","timestamp":"T","thinkingLevel":"high"}"#).kind,
            EntryKind::ThinkingLevelChange { thinking_level: "high".into() }
        );
        assert_eq!(
            entry(r#"{"type":"context_edit","id":"e","parentId":"p","timestamp":"T","targetId":"x","replacement":null}"#).kind,
            EntryKind::ContextEdit { target_id: "x".into() }
        );
        assert_eq!(
            entry(r#"{"type":"context_edit","id":"e","parentId":"p","timestamp":"T","targetId":"x","replacement":{"content":[{"type":"text","text":"r"}]}}"#).kind,
            EntryKind::ContextEdit { target_id: "x".into() }
        );
        assert_eq!(
            entry(r#"{"type":"usage","id":"u","parentId":"p","timestamp":"T","kind":"cache_warm","provider":"a","model":"b","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3}}"#).kind,
            EntryKind::Usage
        );
        assert_eq!(
            entry(r#"{"type":"session_info","id":"s","parentId":"p","timestamp":"T"}"#).kind,
            EntryKind::SessionInfo { name: None }
        );
    }

    #[test]
    fn unknown_types_and_fields_are_kept() {
        let e = entry(
            r#"{"type":"future_thing","id":"f","parentId":"p","timestamp":"T","payload":{"deep":[1,2,{"x":null}]}}"#,
        );
        assert_eq!(
            e.kind,
            EntryKind::Unknown {
                entry_type: "future_thing".into()
            }
        );
        assert_eq!(e.parent_id.as_deref(), Some("p"));
        let m = message(
            r#"{"type":"message","id":"a","timestamp":"T","novel":true,"message":{"role":"user","content":[{"type":"text","text":"x","newField":[1]},{"type":"audio","data":"..."}],"brandNew":{"a":1}}}"#,
        );
        assert_eq!(m.text, "x");
    }

    #[test]
    fn structural_errors_are_clear() {
        assert!(parse_line("{not json")
            .unwrap_err()
            .message
            .contains("invalid JSON"));
        assert!(parse_line(r#"{"id":"x"}"#)
            .unwrap_err()
            .message
            .contains("`type`"));
        assert!(parse_line(r#"{"type":"message","timestamp":"T"}"#)
            .unwrap_err()
            .message
            .contains("`id`"));
        assert!(parse_line(r#"{"type":"message","id":"a"}"#)
            .unwrap_err()
            .message
            .contains("`message`"));
        assert!(parse_line(r#"{"type":"label","id":"a"}"#)
            .unwrap_err()
            .message
            .contains("`targetId`"));
        assert!(parse_line(
            r#"{"type":"message","id":"a","message":{"role":"user","content":{"oops":1}}}"#
        )
        .is_err());
        assert!(parse_entry(r#"{"type":"session","id":"s"}"#).is_err());
    }

    #[test]
    fn malformed_lines_are_reported_and_skipped() {
        let text = concat!(
            r#"{"type":"session","version":3,"id":"S","timestamp":"T","cwd":"/w"}"#,
            "\n",
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"T","message":{"role":"user","content":"hi"}}"#,
            "\r\n",
            "\n",
            "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",trunc\n",
            r#"{"type":"custom","id":"c","parentId":"a","timestamp":"T","customType":"x"}"#,
            "\n",
            r#"{"type":"session","id":"S2"}"#,
            "\n",
        );
        let parsed = parse_session(text);
        assert_eq!(parsed.header.as_ref().map(|h| h.id.as_str()), Some("S"));
        let ids: Vec<_> = parsed.entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(parsed.errors.len(), 2);
        assert_eq!(parsed.errors[0].line, 4);
        assert!(
            parsed.errors[0].message.contains("invalid JSON"),
            "{}",
            parsed.errors[0]
        );
        assert_eq!(parsed.errors[1].line, 6);
        assert_eq!(
            parsed.errors[0].to_string(),
            format!("line 4: {}", parsed.errors[0].message)
        );
    }

    #[test]
    fn entries_array() {
        let json = r#"[{"type":"message","id":"a","parentId":null,"timestamp":"T","message":{"role":"user","content":"x"}},{"type":"custom","id":"b","parentId":"a","timestamp":"T","customType":"k"}]"#;
        let entries = parse_entries(json).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].id, "b");
        assert_eq!(parse_entries("[]").unwrap(), vec![]);
        let bad = r#"[{"type":"custom","id":"a","customType":"k"},{"type":"custom"},{"type":"x","id":"c"}]"#;
        let err = parse_entries(bad).unwrap_err();
        assert!(err.message.contains("element 1"), "{err}");
        let bad =
            r#"[{"type":"custom","id":"a"},{"type":"message","id":"b","message":{"content":5}}]"#;
        assert!(parse_entries(bad)
            .unwrap_err()
            .message
            .contains("element 1"));
        assert!(parse_entries("{}").is_err());
        assert!(parse_entries("[] x").is_err());
    }

    #[test]
    fn entry_matches_line_parse() {
        let json = r#"{"type":"compaction","id":"c","parentId":"p","timestamp":"T","summary":"S","firstKeptEntryId":"k","tokensBefore":3}"#;
        assert_eq!(
            Line::Entry(parse_entry(json).unwrap()),
            parse_line(json).unwrap()
        );
    }

    fn e(id: &str, parent: Option<&str>) -> Entry {
        Entry {
            id: id.into(),
            parent_id: parent.map(Into::into),
            timestamp: String::new(),
            kind: EntryKind::Usage,
        }
    }

    #[test]
    fn branch_follows_parents() {
        // a - b - c
        //      \- d
        let entries = vec![
            e("a", None),
            e("b", Some("a")),
            e("c", Some("b")),
            e("d", Some("b")),
        ];
        assert_eq!(branch_indices(&entries, None), vec![0, 1, 3]);
        assert_eq!(branch_indices(&entries, Some("c")), vec![0, 1, 2]);
        assert_eq!(branch_indices(&entries, Some("zz")), Vec::<usize>::new());
        assert_eq!(branch_indices(&[], None), Vec::<usize>::new());
        let cyclic = vec![e("a", Some("b")), e("b", Some("a"))];
        assert_eq!(branch_indices(&cyclic, None), vec![0, 1]);
        let orphan = vec![e("x", Some("missing")), e("y", Some("x"))];
        assert_eq!(branch_indices(&orphan, None), vec![0, 1]);
    }

    /// Records what `stream_branch` hands over; `begin` forgets earlier entries.
    #[derive(Default)]
    struct Recorder {
        begins: usize,
        entries: Vec<Entry>,
    }

    impl BranchSink for Recorder {
        fn begin(&mut self) {
            self.begins += 1;
            self.entries.clear();
        }
        fn entry(&mut self, entry: Entry) {
            self.entries.push(entry);
        }
    }

    /// `stream_branch` must give exactly the branch `parse_session` + `branch_indices` give.
    fn assert_stream_matches(text: &str, leaf: &str) -> Recorder {
        let parsed = parse_session(text);
        let expected: Vec<Entry> = branch_indices(&parsed.entries, Some(leaf))
            .into_iter()
            .map(|i| parsed.entries[i].clone())
            .collect();
        let mut rec = Recorder::default();
        let found = stream_branch(text, leaf, &mut rec);
        assert_eq!(found, !expected.is_empty(), "leaf {leaf} in {text}");
        if found {
            assert!(rec.begins >= 1);
            assert_eq!(rec.entries, expected, "leaf {leaf} in {text}");
        } else {
            assert_eq!(
                rec.begins, 0,
                "the sink is untouched when the leaf is missing"
            );
            assert!(rec.entries.is_empty());
        }
        rec
    }

    fn line(id: &str, parent: Option<&str>, text: &str) -> String {
        serde_json::to_string(&json!({
            "type": "message", "id": id, "parentId": parent, "timestamp": "T",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]}
        }))
        .unwrap()
    }

    #[test]
    fn stream_branch_linear_file_is_read_once() {
        let text = [
            r#"{"type":"session","version":3,"id":"S","timestamp":"T","cwd":"/w"}"#.to_string(),
            line("a", None, "first \"quoted\"\nline"),
            "{broken".to_string(),
            line("b", Some("a"), "second"),
            String::new(),
            line("c", Some("b"), "third"),
        ]
        .join("\r\n");
        let rec = assert_stream_matches(&text, "c");
        assert_eq!(rec.begins, 1, "a linear file takes the one-pass path");
        assert_eq!(rec.entries.len(), 3);
        assert_stream_matches(&text, "b");
        assert_stream_matches(&text, "a");
        assert_stream_matches(&text, "missing");
        assert_stream_matches("", "a");
    }

    #[test]
    fn stream_branch_branched_files() {
        // a - b - c - d
        //      \- e - f     (the file ends on the abandoned branch or on the live one)
        let lines = [
            line("a", None, "A"),
            line("b", Some("a"), "B"),
            line("c", Some("b"), "C"),
            line("d", Some("c"), "D"),
            line("e", Some("b"), "E"),
            line("f", Some("e"), "F"),
        ];
        let text = lines.join("\n");
        for leaf in ["a", "b", "c", "d", "e", "f", "zz"] {
            assert_stream_matches(&text, leaf);
        }
        // Repeated ids in an otherwise linear chain resolve as `branch_indices` resolves them.
        let text = [
            line("a", None, "1"),
            line("b", Some("a"), "2"),
            line("a", Some("b"), "3"),
            line("c", Some("a"), "4"),
        ]
        .join("\n");
        for leaf in ["a", "b", "c"] {
            assert_stream_matches(&text, leaf);
        }
        // A cycle and a dangling parent.
        let text = [line("x", Some("y"), "1"), line("y", Some("x"), "2")].join("\n");
        assert_stream_matches(&text, "y");
        let text = [line("x", Some("gone"), "1"), line("y", Some("x"), "2")].join("\n\n");
        assert_eq!(assert_stream_matches(&text, "y").begins, 1);
    }

    proptest::proptest! {
        /// Decoding many lines at once gives exactly the entries of decoding each line alone,
        /// whatever blank, malformed, split or padded lines come between.
        #[test]
        fn lines_decode_together_as_alone(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just(r#"{"type":"message","id":"m1","parentId":null,"timestamp":"T","message":{"role":"user","content":"a\"b\\n"}}"#),
                    proptest::strategy::Just(r#"{"type":"message","id":"m2","parentId":"m1","message":{"role":"assistant","content":[{"type":"text","text":"x\ty"},{"type":"toolCall","name":"f","arguments":{"a":[1]}}]}}"#),
                    proptest::strategy::Just(r#"{"type":"custom","id":"c","customType":"k","data":{"n":1}}"#),
                    proptest::strategy::Just(r#"{"type":"session","id":"S"}"#),
                    proptest::strategy::Just(r#"{"type":"label","id":"l"}"#),
                    proptest::strategy::Just(r#"{"type":"compaction","#),
                    proptest::strategy::Just(r#""id":"z","summary":"s"}"#),
                    proptest::strategy::Just("{broken"),
                    proptest::strategy::Just("}"),
                    proptest::strategy::Just("5"),
                    proptest::strategy::Just("[]"),
                    proptest::strategy::Just("\u{a0}"),
                    proptest::strategy::Just("\u{feff}{}"),
                    proptest::strategy::Just(""),
                    proptest::strategy::Just(" \t"),
                    proptest::strategy::Just("x"),
                ],
                0..12,
            ),
            seps in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just("\n"),
                    proptest::strategy::Just("\r\n"),
                    proptest::strategy::Just(" \n"),
                    proptest::strategy::Just("\n\n"),
                    proptest::strategy::Just(" "),
                    proptest::strategy::Just("\r"),
                    proptest::strategy::Just(""),
                ],
                12,
            ),
            lead in proptest::prop_oneof![proptest::strategy::Just(""), proptest::strategy::Just("  "), proptest::strategy::Just("\n")],
        ) {
            let mut text = lead.to_string();
            for (piece, sep) in pieces.iter().zip(&seps) {
                text.push_str(piece);
                text.push_str(sep);
            }
            let alone: Vec<Entry> = text.split('\n').filter_map(last_entry_of_line).collect();
            let mut together = Vec::new();
            push_entries_of_lines(&text, &mut together);
            proptest::prop_assert_eq!(together, alone, "{:?}", text);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        #[test]
        fn stream_branch_agrees_with_branch_indices(
            parents in proptest::collection::vec(proptest::option::of(0usize..12), 0..12),
            ids in proptest::collection::vec(0usize..14, 12),
            bad in proptest::collection::vec(proptest::prelude::any::<bool>(), 12),
            leaf in 0usize..14,
        ) {
            let mut lines = Vec::new();
            for (i, parent) in parents.iter().enumerate() {
                if bad[i] && i % 3 == 0 {
                    lines.push("{\"type\":\"message\",\"id\":".to_string());
                    continue;
                }
                let id = format!("e{}", ids[i]);
                // Mostly linear: the parent is the line before, sometimes any other id.
                let parent = match parent {
                    Some(p) if *p < 9 && i > 0 => Some(format!("e{}", ids[i - 1])),
                    Some(p) => Some(format!("e{p}")),
                    None => None,
                };
                lines.push(line(&id, parent.as_deref(), &format!("text {i}")));
            }
            assert_stream_matches(&lines.join("\n"), &format!("e{leaf}"));
        }
    }
}
