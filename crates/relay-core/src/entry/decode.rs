//! Decoding session lines and `getBranch()` objects into [`Entry`] values.
//!
//! Contract: parsing goes through borrowed intermediate structs (`raw.rs`) so that a large session is
//! decoded without building a `serde_json::Value` tree for every message body. Unknown fields are
//! skipped, unknown entry types become [`EntryKind::Unknown`], an entry without a usable `id` is an
//! error, and a line that cannot be decoded is reported with its line number while the rest of the
//! file still loads. Decoding never panics, whatever the input.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde_json::Value;

use super::raw::{RawContent, RawLine, RawMessage, RawUsage, SkimMessage, Str};
use super::types::{
    Entry, EntryKind, Header, Line, LineError, Message, ModelRef, ParseError, ParsedSession,
    Replacement, SystemDelta, ToolCall, UsageParts,
};
use crate::text::utf16_len;

/// Characters Pi's estimate counts for one image (`ESTIMATED_IMAGE_CHARS` in Pi's compaction code).
pub const ESTIMATED_IMAGE_CHARS: u64 = 4_800;

/// How a line's `message` becomes a [`Message`].
trait IntoMessage {
    fn into_message(self) -> Message;
}

impl IntoMessage for RawMessage<'_> {
    fn into_message(self) -> Message {
        convert_message(self)
    }
}

impl IntoMessage for SkimMessage<'_> {
    fn into_message(self) -> Message {
        Message {
            role: self.role.as_deref().unwrap_or_default().to_string(),
            text: String::new(),
            tool_name: owned(self.tool_name),
            tool_call_id: owned(self.tool_call_id),
            is_error: self.is_error.unwrap_or(false),
            usage_total: self.usage.as_ref().map(usage_total),
            usage: self.usage.as_ref().map(usage_parts),
            stop_reason: owned(self.stop_reason),
            custom_type: owned(self.custom_type),
            estimate_chars: 0,
            system: None,
            tool_calls: Box::default(),
            model: model_of(self.role.as_deref(), self.provider, self.model),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Conversion
// ---------------------------------------------------------------------------------------------

/// An assistant message's model, when it names both its provider and its model.
fn model_of(
    role: Option<&str>,
    provider: Option<Str<'_>>,
    model: Option<Str<'_>>,
) -> Option<Box<ModelRef>> {
    match (role, provider, model) {
        (Some("assistant"), Some(provider), Some(model)) => Some(Box::new(ModelRef {
            provider: provider.into_owned(),
            model: model.into_owned(),
        })),
        _ => None,
    }
}

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

/// Characters JavaScript's `length` gives for `v` as `JSON.stringify` writes it.
fn json_chars(v: &Value) -> u64 {
    serde_json::to_string(v).map_or(0, |s| utf16_len(&s) as u64)
}

/// Pi's `estimateTextAndImageContentChars`: text (a string, or non-empty text blocks) plus a
/// fixed 4,800 per image block.
fn text_and_image_chars(content: Option<&RawContent<'_>>) -> u64 {
    match content {
        None => 0,
        Some(RawContent::Text(t)) => utf16_len(t) as u64,
        Some(RawContent::Blocks(blocks)) => blocks
            .iter()
            .map(|b| match b.kind.as_deref() {
                Some("text") => b.text.as_ref().map_or(0, |t| utf16_len(&t.0) as u64),
                Some("image") => ESTIMATED_IMAGE_CHARS,
                _ => 0,
            })
            .sum(),
    }
}

/// Pi's estimate of an assistant message: text, thinking, and each tool call's name plus its
/// arguments as JSON. A plain-string content counts nothing (Pi iterates blocks).
fn assistant_chars(content: Option<&RawContent<'_>>) -> u64 {
    let Some(RawContent::Blocks(blocks)) = content else {
        return 0;
    };
    blocks
        .iter()
        .map(|b| match b.kind.as_deref() {
            Some("text") => b.text.as_ref().map_or(0, |t| utf16_len(&t.0) as u64),
            Some("thinking") => b.thinking.as_ref().map_or(0, |t| utf16_len(&t.0) as u64),
            Some("toolCall") => {
                b.name.as_deref().map_or(0, |n| utf16_len(n) as u64)
                    + b.arguments.as_ref().map_or(0, json_chars)
            }
            _ => 0,
        })
        .sum()
}

/// A system message's delta, and its own estimate (content, section texts, tool declarations).
fn system_delta(raw: &RawMessage<'_>) -> (SystemDelta, u64) {
    let content_chars = match raw.content.as_ref() {
        None => 0,
        Some(RawContent::Text(t)) => utf16_len(t) as u64,
        Some(RawContent::Blocks(blocks)) => blocks
            .iter()
            .filter(|b| b.kind.as_deref() == Some("text"))
            .map(|b| b.text.as_ref().map_or(0, |t| utf16_len(&t.0) as u64))
            .sum(),
    };
    let mut own = text_and_image_chars(raw.content.as_ref());
    let mut sections = Vec::new();
    if let Some(Value::Object(map)) = &raw.sections {
        for (name, value) in map {
            let chars = value.as_str().map(|t| utf16_len(t) as u64);
            own += chars.unwrap_or(0);
            sections.push((name.clone(), chars));
        }
    }
    let mut tools_added = Vec::new();
    if let Some(tools) = &raw.tools_added {
        own += json_chars(&Value::Array(tools.clone()));
        for tool in tools {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
            tools_added.push((name.to_string(), json_chars(tool)));
        }
    }
    let tools_removed = raw
        .tools_removed
        .iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    (
        SystemDelta {
            content_chars,
            sections,
            tools_added,
            tools_removed,
        },
        own,
    )
}

/// A usage in its parts (see [`UsageParts`]).
fn usage_parts(u: &RawUsage) -> UsageParts {
    let count = |v: Option<f64>| to_u64(v).unwrap_or(0);
    UsageParts {
        input: count(u.input),
        output: count(u.output),
        cache_read: count(u.cache_read),
        cache_write: count(u.cache_write),
        total: usage_total(u),
        cost: u
            .cost
            .as_ref()
            .and_then(|c| c.total)
            .filter(|c| c.is_finite()),
    }
}

/// Total tokens of a usage: `totalTokens`, or the sum of its parts.
fn usage_total(u: &RawUsage) -> u64 {
    let total = to_u64(u.total_tokens).unwrap_or(0);
    if total > 0 {
        total
    } else {
        [u.input, u.output, u.cache_read, u.cache_write]
            .into_iter()
            .map(|v| to_u64(v).unwrap_or(0))
            .sum()
    }
}

fn convert_message(raw: RawMessage<'_>) -> Message {
    let role = raw.role.as_deref().unwrap_or_default().to_string();
    let mut system = None;
    let estimate_chars = match role.as_str() {
        "user" | "custom" | "toolResult" => text_and_image_chars(raw.content.as_ref()),
        "assistant" => assistant_chars(raw.content.as_ref()),
        "bashExecution" => {
            raw.command.as_deref().map_or(0, |c| utf16_len(c) as u64)
                + raw.output.as_deref().map_or(0, |o| utf16_len(o) as u64)
        }
        "compactionSummary" | "branchSummary" => {
            raw.summary.as_deref().map_or(0, |t| utf16_len(t) as u64)
        }
        "system" => {
            let (delta, own) = system_delta(&raw);
            system = Some(Box::new(delta));
            own
        }
        _ => 0,
    };
    let tool_calls = if role == "assistant" {
        let at_ms = raw
            .timestamp
            .as_ref()
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite() && t.abs() < 1e16)
            .map(|t| t as i64);
        tool_calls_of(raw.content.as_ref(), at_ms)
    } else {
        Box::default()
    };
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
    let usage_total = raw.usage.as_ref().map(usage_total);
    let usage = raw.usage.as_ref().map(usage_parts);
    let model = model_of(Some(role.as_str()), raw.provider, raw.model);
    Message {
        role,
        text,
        tool_name: owned(raw.tool_name),
        tool_call_id: owned(raw.tool_call_id),
        is_error: raw.is_error.unwrap_or(false),
        usage_total,
        usage,
        stop_reason: owned(raw.stop_reason),
        custom_type: owned(raw.custom_type),
        estimate_chars,
        system,
        tool_calls,
        model,
    }
}

/// The arguments that name what a call acts on, in the order they are looked for: the first
/// one present as a string is the call's key argument.
const KEY_ARGUMENTS: &[&str] = &[
    "path",
    "file_path",
    "command",
    "pattern",
    "query",
    "url",
    "prefix",
    "name",
    "id",
];

/// The `toolCall` blocks of an assistant message's content, in order.
fn tool_calls_of(content: Option<&RawContent<'_>>, at_ms: Option<i64>) -> Box<[ToolCall]> {
    let Some(RawContent::Blocks(blocks)) = content else {
        return Box::default();
    };
    blocks
        .iter()
        .filter(|b| b.kind.as_deref() == Some("toolCall"))
        .map(|b| {
            let name = b.name.as_deref().unwrap_or("").to_string();
            let args = b.arguments.as_ref();
            let wrote = matches!(name.as_str(), "edit" | "write")
                .then(|| args.and_then(|a| a.get("path")).and_then(Value::as_str))
                .flatten()
                .map(str::to_string);
            ToolCall {
                id: owned(b.id.clone()),
                key: key_argument(args),
                name,
                wrote,
                at_ms,
            }
        })
        .collect()
}

/// A call's key argument: the first of [`KEY_ARGUMENTS`] given as a string, else the arguments
/// as compact JSON (empty for none), uncut.
pub fn key_argument(args: Option<&Value>) -> String {
    let Some(args) = args else {
        return String::new();
    };
    KEY_ARGUMENTS
        .iter()
        .find_map(|k| args.get(k).and_then(Value::as_str))
        .map(str::to_string)
        .unwrap_or_else(|| match args {
            Value::Object(m) if m.is_empty() => String::new(),
            _ => serde_json::to_string(args).unwrap_or_default(),
        })
}

fn missing(entry_type: &str, field: &str) -> ParseError {
    ParseError::new(format!("`{entry_type}` entry has no `{field}`"))
}

fn convert<M: IntoMessage>(raw: RawLine<'_, M>) -> Result<Line, ParseError> {
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
            EntryKind::Message(message.into_message())
        }
        "compaction" => EntryKind::Compaction {
            summary: owned(raw.summary).unwrap_or_default(),
            first_kept_entry_id: owned(raw.first_kept_entry_id),
            tokens_before: to_u64(raw.tokens_before),
            details: raw.details.unwrap_or(Value::Null),
            from_hook: raw.from_hook.unwrap_or(false),
            system_message: raw
                .system_message
                .as_ref()
                .map(|m| Box::new(system_delta(m).0)),
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
            estimate_chars: text_and_image_chars(raw.content.as_ref()),
            text: content_text(raw.content, false),
            display: raw.display.unwrap_or(false),
            details: raw.details.unwrap_or(Value::Null),
        },
        "context_edit" => EntryKind::ContextEdit {
            target_id: owned(raw.target_id).ok_or_else(|| missing("context_edit", "targetId"))?,
            replacement: raw.replacement.as_ref().map(|r| {
                // Pi puts a string replacement of an assistant message into one text block.
                let assistant_chars = match r.content.as_ref() {
                    Some(RawContent::Text(t)) => utf16_len(t) as u64,
                    other => assistant_chars(other),
                };
                Replacement {
                    content_chars: text_and_image_chars(r.content.as_ref()),
                    assistant_chars,
                }
            }),
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
    // The replaced packages' entries read as Relay's own (see `foreign`).
    let kind = super::foreign::adopt(kind);
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
/// A message as Pi hands it to an extension (`message_end`), read as a message entry's is, straight
/// from the already parsed value (no copy, no second parse). `None`: not a message.
pub fn message_of_value(v: &Value) -> Option<Message> {
    use serde::Deserialize;
    RawMessage::deserialize(v).ok().map(convert_message)
}

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

/// The entry a line holds, if it is a well-formed entry line (`\r` ending and blanks allowed).
/// Lines are visited from the end of a file to find its last entry (see [`super::stream_branch`]).
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

/// [`last_entry_of_line`] without reading the messages' texts: the same entry (or none) but a
/// `message` entry's [`Message`] has an empty `text`, `estimate_chars` 0 and no system delta.
/// Every other entry type is read in full. About seven times faster on a large session, for the
/// facts a branch's history of earlier windows needs (ids, roles, tools, usage, Relay's entries).
pub fn skim_entry_of_line(raw: &str) -> Option<Entry> {
    let line = raw.strip_suffix('\r').unwrap_or(raw);
    if line.trim().is_empty() {
        return None;
    }
    // A message line in Pi's shape is read by the fast path, any other by serde: the same entry.
    let raw = match super::skim::message_line(line) {
        Some(raw) => raw,
        None => serde_json::from_str::<RawLine<'_, SkimMessage<'_>>>(line).ok()?,
    };
    match convert(raw) {
        Ok(Line::Entry(e)) => Some(e),
        _ => None,
    }
}

/// [`skim_entry_of_line`] read by serde alone (the fast path's oracle in the tests).
#[cfg(test)]
pub(super) fn skim_entry_of_line_by_serde(raw: &str) -> Option<Entry> {
    let line = raw.strip_suffix('\r').unwrap_or(raw);
    if line.trim().is_empty() {
        return None;
    }
    let raw: RawLine<'_, SkimMessage<'_>> = serde_json::from_str(line).ok()?;
    match convert(raw) {
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
    push_lines(text, |entry, _, _| out.push(entry));
}

/// [`push_entries_of_lines`] for a `text` that starts at byte `base` of its file: with each
/// entry pushed to `out`, the place of its line is pushed to `at` (the line reads back as the
/// same entry with [`last_entry_of_line`]).
pub fn push_located_entries_of_lines(
    text: &str,
    base: u64,
    out: &mut Vec<Entry>,
    at: &mut Vec<super::types::LineAt>,
) {
    push_lines(text, |entry, start, end| {
        let len = u32::try_from(end - start).unwrap_or(u32::MAX);
        out.push(entry);
        at.push(super::types::LineAt {
            offset: base + start as u64,
            len,
        });
    });
}

/// The entries of the lines of `text`, each with the byte range of its line (from its first
/// non-blank byte to its line break).
fn push_lines(text: &str, mut push: impl FnMut(Entry, usize, usize)) {
    let bytes = text.as_bytes();
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\r');
    let mut pos = 0;
    while pos < bytes.len() {
        let base = pos;
        let mut values = serde_json::Deserializer::from_str(text.get(base..).unwrap_or_default())
            .into_iter::<RawLine<'_>>();
        loop {
            // Where the next value starts: blank lines before it are passed over, as the
            // reader does and as they would be on their own.
            let rest = bytes.get(pos..).unwrap_or_default();
            let start = match rest.iter().position(|b| !blank(b) && *b != b'\n') {
                Some(i) => pos + i,
                None => return,
            };
            let line_end = match memchr::memchr(b'\n', bytes.get(start..).unwrap_or_default()) {
                Some(i) => start + i,
                None => bytes.len(),
            };
            let alone = match values.next() {
                Some(Ok(raw)) => {
                    let end = base + values.byte_offset();
                    let trailing = bytes.get(end..line_end);
                    trailing.is_some_and(|t| t.iter().all(blank)).then_some(raw)
                }
                _ => None,
            };
            pos = line_end + 1;
            match alone {
                Some(raw) => {
                    if let Ok(Line::Entry(e)) = convert(raw) {
                        push(e, start, line_end);
                    }
                    if pos > bytes.len() {
                        return;
                    }
                }
                None => {
                    let before = bytes.get(..start).unwrap_or_default();
                    let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
                    let line = text.get(line_start..line_end).unwrap_or_default();
                    if let Some(e) = last_entry_of_line(line) {
                        push(e, line_start, line_end);
                    }
                    break; // start a new reader on the next line
                }
            }
        }
    }
}
