//! Tool arguments: one typed struct per tool, one decoder with one error format, and the JSON
//! Schemas of the tools' parameters, all from the same definitions.
//!
//! Contract:
//! - **One source.** Each tool's parameters are one struct below: its fields are the parameter
//!   names, their doc comments the descriptions the model reads, their `#[serde(default)]` the
//!   defaults (stated once, as the constant the tool uses). [`parameter_schemas`] derives the
//!   JSON Schemas from them (checked in as `extension/src/generated/tool-params.json`, regenerated
//!   with `UPDATE_GENERATED=1 cargo test -p relay-core generated`).
//! - **One decoder.** [`decode`] turns the model's JSON arguments into the struct. `null`
//!   arguments are no arguments and a `null` value is an absent argument (Pi's own validation
//!   drops such nulls too); an unknown argument is an error, never silently dropped.
//! - **One error format**, naming the tool and the argument, for decoding and for every later
//!   check a tool makes about an argument ([`invalid`]):
//!   - `history_read_item: unknown argument "foo" (accepted: window_id, item_id, …)`
//!   - `history_read_item: argument "item_id" is required`
//!   - `history_list_items: argument "limit" must be a positive integer, got "x"`
//!   - `context_handoff: argument "files_to_read[1]" must be a string path, got 1`
//!   - `notes_read_file: arguments must be an object, got [1]`
//!
//! The schemas state types only (no minimum, no pattern): every value check is made here, so that
//! the model always reads errors in this one format.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt::Display;
use std::sync::OnceLock;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::{de, Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::ToolOutput;

// ---------------------------------------------------------------------------------------------
// Tool names

pub const HISTORY_LIST_WINDOWS: &str = "history_list_windows";
pub const HISTORY_LIST_ITEMS: &str = "history_list_items";
pub const HISTORY_READ_ITEM: &str = "history_read_item";
pub const HISTORY_SEARCH_CONTENTS: &str = "history_search_contents";
pub const NOTES_LIST_FILES_BY_PREFIX: &str = "notes_list_files_by_prefix";
pub const NOTES_READ_FILE: &str = "notes_read_file";
pub const NOTES_SEARCH_CONTENTS: &str = "notes_search_contents";
pub const NOTES_APPEND_TO_FILE: &str = "notes_append_to_file";
pub const NOTES_WRITE_FILE: &str = "notes_write_file";
pub const NEW_CONTEXT: &str = "new_context";
pub const CONTEXT_HANDOFF: &str = "context_handoff";
pub const GET_CONTEXT_REMAINING: &str = "get_context_remaining";
/// The roles of history items, as the history tools show them and accept them in filters, in
/// the order of `history`'s `Role`.
pub const ROLE_NAMES: [&str; 4] = ["user", "assistant", "tool", "system"];
/// The memory tool's name, as registered with Pi (Anthropic's).
pub const MEMORY: &str = "memory";
/// The memory tool's folder that stands for the notes.
pub const MEMORY_ROOT: &str = "/memories";

// ---------------------------------------------------------------------------------------------
// The one error format

/// The tool error for an argument that is present but wrong: `{tool}: argument "{arg}" {message}`,
/// where `message` continues the sentence ("must be …", "is …").
pub fn invalid(tool: &str, arg: &str, message: impl Display) -> ToolOutput {
    ToolOutput::error(format!("{tool}: argument \"{arg}\" {message}"))
}

/// What the model gets when Pi's own schema check refuses a call to `tool` (Pi checks the
/// arguments after `prepare`): Pi's list of what is wrong, without the copy of every argument Pi's
/// message ends with (after `Received arguments:`), which made a 100 MB argument of the wrong type
/// a 100 MB tool result. At most [`SCHEMA_REFUSAL_LINES`] lines of at most 200 characters.
/// Whether `message` is Pi's refusal of arguments that do not match a tool's schema (its
/// `validateToolArguments` error), rather than some other failure of the check.
pub fn is_schema_refusal(message: &str) -> bool {
    message.starts_with("Validation failed for tool")
}

pub fn schema_refusal(tool: &str, pi_message: &str) -> String {
    let body = pi_message
        .split_once("\n\nReceived arguments:")
        .map_or(pi_message, |(head, _)| head);
    let mut lines = body.lines().filter(|l| !l.trim().is_empty()).peekable();
    // Pi's first line names the tool ("Validation failed for tool …:"); ours does.
    if lines
        .peek()
        .is_some_and(|l| l.starts_with("Validation failed for tool"))
    {
        lines.next();
    }
    let all: Vec<&str> = lines.collect();
    let mut out = format!("{tool}: the arguments do not match the tool's parameters:");
    for line in all.iter().take(SCHEMA_REFUSAL_LINES) {
        out.push('\n');
        out.push_str(&crate::text::ellipsize(line, 200));
    }
    if all.len() > SCHEMA_REFUSAL_LINES {
        out.push_str(&format!(
            "\n  … and {} more",
            all.len() - SCHEMA_REFUSAL_LINES
        ));
    }
    if all.is_empty() {
        out.push_str("\n  (no detail given)");
    }
    out.push_str("\n(The arguments are not repeated here.)");
    out
}

/// At most this many lines of Pi's schema errors go into [`schema_refusal`].
pub const SCHEMA_REFUSAL_LINES: usize = 10;

/// A JSON value as an error message quotes it: compact JSON, cut after 40 characters.
pub fn quote(v: &Value) -> String {
    crate::text::ellipsize(&v.to_string(), 40)
}

// ---------------------------------------------------------------------------------------------
// The one result cap

/// No tool result is larger than this many bytes of JSON (64 KiB): a longer read, listing or
/// search stops there and says where to continue (`next_offset`, `next_offset_chars`,
/// `next_start_line`).
pub const MAX_RESULT_BYTES: usize = 65_536;

/// Room kept for a result's own fields around its list or content.
const RESULT_FRAME_BYTES: usize = 1_024;

/// The sentence a capped result carries in its `capped` field.
pub fn capped_note(how_to_continue: &str) -> String {
    format!("result capped at {MAX_RESULT_BYTES} bytes; {how_to_continue}")
}

/// Adds the `capped` sentence to a result object.
pub fn mark_capped(out: &mut Value, how_to_continue: &str) {
    if let Value::Object(m) = out {
        m.insert("capped".into(), capped_note(how_to_continue).into());
    }
}

/// A paged tool's answer: the object `out` closed by `next_offset`, where the next page starts
/// (`next`) when there is `more`, else null; when `capped`, the `capped` sentence that says to
/// call again from there for `the_rest` ("the next files", …).
pub fn paged(mut out: Value, next: usize, more: bool, capped: bool, the_rest: &str) -> ToolOutput {
    if let Value::Object(m) = &mut out {
        let next_offset = if more { Value::from(next) } else { Value::Null };
        m.insert("next_offset".into(), next_offset);
    }
    if capped {
        mark_capped(
            &mut out,
            &format!("call again with offset {next} for {the_rest}"),
        );
    }
    ToolOutput::json(&out)
}

/// The room left in one tool result, counted in bytes of compact JSON.
#[derive(Debug, Clone)]
pub struct ResultBudget {
    left: usize,
}

impl Default for ResultBudget {
    fn default() -> Self {
        ResultBudget {
            left: MAX_RESULT_BYTES - RESULT_FRAME_BYTES,
        }
    }
}

impl ResultBudget {
    /// Bytes still free.
    pub fn left(&self) -> usize {
        self.left
    }

    /// Takes `v` when its JSON fits in what is left (a separating comma included).
    pub fn take(&mut self, v: &Value) -> bool {
        let n = json_len(v).saturating_add(1);
        if n > self.left {
            return false;
        }
        self.left -= n;
        true
    }

    /// The longest prefix of `text` (at a character boundary) that, as the string field `key` of
    /// `head`, makes an element that fits in what is left; `None` when not even an empty one fits.
    pub fn fit_text<'t>(
        &self,
        head: &Map<String, Value>,
        key: &str,
        text: &'t str,
    ) -> Option<&'t str> {
        let head_len = serde_json::to_string(head).map_or(usize::MAX, |s| s.len());
        // `,"key":""` inside the head's braces (the comma, the key's quotes, the colon, the
        // value's quotes) and the comma that separates the element in `take`, so that taking
        // the element then succeeds.
        let frame = head_len.saturating_add(key.len()).saturating_add(7);
        let room = self.left.checked_sub(frame)?;
        // One pass: the JSON of a prefix is the sum of what each byte takes, so the longest
        // prefix that fits ends at the last character boundary before the byte that overflows.
        // (An earlier bisection re-serialised the text ~17 times a page: 1 MB notes read back at
        // a few pages a millisecond; `fit_text_agrees_with_serde_json` checks the byte costs.)
        let mut used = 0usize;
        for (i, b) in text.bytes().enumerate() {
            used += json_string_byte_len(b);
            if used > room {
                let end = (0..=i)
                    .rev()
                    .find(|&j| text.is_char_boundary(j))
                    .unwrap_or(0);
                return text.get(..end);
            }
        }
        Some(text)
    }
}

/// Bytes one byte of a string takes inside compact JSON as serde_json writes it: `"`, `\` and
/// the control characters with a short escape (backspace, tab, line feed, form feed, carriage
/// return) take two, the other control characters six (`\u00XX`), every other byte one (UTF-8
/// is written as it is).
pub(crate) fn json_string_byte_len(b: u8) -> usize {
    match b {
        b'"' | b'\\' | 0x08 | b'\t' | b'\n' | 0x0c | b'\r' => 2,
        0x00..=0x1f => 6,
        _ => 1,
    }
}

/// Long strings of a capped reply, abbreviated for a snapshot: `<N bytes: head…tail>`.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn abbreviated(v: &Value) -> Value {
    match v {
        Value::String(s) if s.len() > 80 => {
            let head: String = s.chars().take(12).collect();
            let tail: String = {
                let t: Vec<char> = s.chars().rev().take(12).collect();
                t.into_iter().rev().collect()
            };
            Value::String(format!("<{} bytes: {head}…{tail}>", s.len()))
        }
        Value::Array(a) if a.len() > 3 => {
            let mut out: Vec<Value> = a.iter().take(2).map(abbreviated).collect();
            out.push(Value::String(format!("<{} more>", a.len() - 3)));
            out.push(abbreviated(a.last().unwrap()));
            Value::Array(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(abbreviated).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    // The model-facing sentence stays whole.
                    let v = if k == "capped" {
                        v.clone()
                    } else {
                        abbreviated(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Length of `v` as compact JSON.
pub fn json_len(v: &Value) -> usize {
    serde_json::to_string(v).map_or(usize::MAX, |s| s.len())
}

// ---------------------------------------------------------------------------------------------
// The one decoder

/// Parameters of one tool: the struct [`decode`] fills.
pub trait ToolArgs: DeserializeOwned + JsonSchema {
    /// The tool these are the parameters of.
    const TOOL: &'static str;
    /// The accepted and the required parameter names, read once from the schema.
    fn names() -> &'static Names;
}

/// A tool's parameter names, in declaration order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    pub accepted: Vec<String>,
    pub required: Vec<String>,
}

impl Names {
    fn of<T: JsonSchema>() -> Names {
        let schema = schema_of::<T>();
        let list = |key: &str| -> Vec<String> {
            match schema.get(key) {
                Some(Value::Object(m)) => m.keys().cloned().collect(),
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect(),
                _ => Vec::new(),
            }
        };
        Names {
            accepted: list("properties"),
            required: list("required"),
        }
    }
}

/// Decodes the model's arguments for `tool` into `T`, or answers the tool error (see the module
/// documentation for the format). Checks, in order: the arguments are an object (or `null`);
/// every argument is known; every required argument is present (and not `null`); every value is
/// of its parameter's kind.
pub fn decode<T: ToolArgs>(tool: &str, args: &Value) -> Result<T, ToolOutput> {
    let empty = Map::new();
    let map = match args {
        Value::Null => &empty,
        Value::Object(m) => m,
        other => {
            return Err(ToolOutput::error(format!(
                "{tool}: arguments must be an object, got {}",
                quote(other)
            )))
        }
    };
    let names = T::names();
    let normalized = normalize(tool, names, map)?;
    let map = &normalized;
    let present = |k: &str| map.get(k).is_some_and(|v| !v.is_null());
    if let Some(k) = names.required.iter().find(|k| !present(k)) {
        return Err(invalid(tool, k, "is required"));
    }
    // Deserialize the non-null arguments, remembering which one is being read, so that a value
    // error names its argument.
    let current: RefCell<Option<&str>> = RefCell::new(None);
    let entries = map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| {
        current.replace(Some(k.as_str()));
        (k.as_str(), v)
    });
    let de = de::value::MapDeserializer::<_, serde_json::Error>::new(entries);
    T::deserialize(de).map_err(|e| {
        let message = e.to_string();
        match current.take() {
            // `[i] must …` is about one element of an array argument.
            Some(arg) => match message.strip_prefix('[').and_then(|m| m.split_once(']')) {
                Some((index, rest)) => invalid(tool, &format!("{arg}[{index}]"), rest.trim_start()),
                None => invalid(tool, arg, message),
            },
            None => ToolOutput::error(format!("{tool}: {message}")),
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Other names for the same parameter (args/aliases.rs) and the parameter kinds (args/kinds.rs)

mod aliases;
#[macro_use]
mod kinds;
pub use aliases::*;
pub use kinds::*;

// ---------------------------------------------------------------------------------------------
// The tools' defaults (`history` and `notes` name them too)

/// `history_list_items` returns at most this many items unless `limit` says otherwise.
pub const DEFAULT_HISTORY_LIST_ITEMS_LIMIT: usize = 50;
/// `history_search_contents` returns at most this many items unless `limit` says otherwise.
pub const DEFAULT_HISTORY_SEARCH_LIMIT: usize = 20;
/// `history_list_items` shows at most this many characters of each item by default.
pub const DEFAULT_MAX_CHARS_PER_ITEM: usize = 1200;
/// `history_read_item` returns at most this many characters by default.
pub const DEFAULT_READ_LIMIT_CHARS: usize = 20_000;
/// Default number of files listed by `notes_list_files_by_prefix`.
pub const DEFAULT_NOTES_LIST_LIMIT: u64 = 100;
/// Default number of matching lines returned by `notes_search_contents`.
pub const DEFAULT_NOTES_SEARCH_LIMIT: u64 = 50;

// ---------------------------------------------------------------------------------------------
// The tools' parameters

fn yes() -> Flag {
    Flag(true)
}
fn list_items_limit() -> PositiveInt {
    PositiveInt(DEFAULT_HISTORY_LIST_ITEMS_LIMIT)
}
fn max_chars_per_item() -> PositiveInt {
    PositiveInt(DEFAULT_MAX_CHARS_PER_ITEM)
}
fn read_limit_chars() -> PositiveInt {
    PositiveInt(DEFAULT_READ_LIMIT_CHARS)
}
fn history_search_limit() -> PositiveInt {
    PositiveInt(DEFAULT_HISTORY_SEARCH_LIMIT)
}
fn notes_list_limit() -> PositiveInt {
    PositiveInt(usize::try_from(DEFAULT_NOTES_LIST_LIMIT).unwrap_or(usize::MAX))
}
fn notes_search_limit() -> PositiveInt {
    PositiveInt(usize::try_from(DEFAULT_NOTES_SEARCH_LIMIT).unwrap_or(usize::MAX))
}
fn first_line() -> LineIndex {
    LineIndex(1)
}
fn last_line() -> LineIndex {
    LineIndex(-1)
}

/// `history_list_windows`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryListWindows {
    /// At most this many windows (default: all).
    pub limit: Option<PositiveInt>,
    /// Skip this many (a reply's next_offset).
    #[serde(default)]
    pub offset: NonNegativeInt,
    /// Newest first.
    #[serde(default = "yes")]
    pub recent_first: Flag,
}

/// `history_list_items`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryListItems {
    /// Only this window's items.
    pub window_id: Option<Text>,
    /// Only this role.
    pub role: Option<RoleName>,
    /// The tool name before its first _.
    pub tool_namespace: Option<Text>,
    /// Only this tool.
    pub tool_name: Option<Text>,
    /// At most this many items.
    #[serde(default = "list_items_limit")]
    pub limit: PositiveInt,
    /// Skip this many (a reply's next_offset).
    #[serde(default)]
    pub offset: NonNegativeInt,
    /// Newest first.
    #[serde(default = "yes")]
    pub recent_first: Flag,
    /// Characters shown per item (history_read_item reads the rest).
    #[serde(default = "max_chars_per_item")]
    pub max_chars_per_item: PositiveInt,
}

/// `history_read_item`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryReadItem {
    /// The item's window.
    pub window_id: Text,
    pub item_id: Text,
    /// First character.
    #[serde(default)]
    pub offset_chars: NonNegativeInt,
    /// At most this many characters.
    #[serde(default = "read_limit_chars")]
    pub limit_chars: PositiveInt,
}

/// `history_search_contents`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistorySearchContents {
    pub query: Query,
    /// Only this window's items.
    pub window_id: Option<Text>,
    /// Only this role.
    pub role: Option<RoleName>,
    /// The tool name before its first _.
    pub tool_namespace: Option<Text>,
    /// Only this tool.
    pub tool_name: Option<Text>,
    /// At most this many items.
    #[serde(default = "history_search_limit")]
    pub limit: PositiveInt,
    /// Skip this many (a reply's next_offset).
    #[serde(default)]
    pub offset: NonNegativeInt,
    /// Newest first.
    #[serde(default = "yes")]
    pub recent_first: Flag,
}

/// `notes_list_files_by_prefix`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesListFilesByPrefix {
    /// Empty: all notes.
    #[serde(default)]
    pub prefix: Text,
    /// At most this many notes.
    #[serde(default = "notes_list_limit")]
    pub limit: PositiveInt,
    /// Skip this many (a reply's next_offset).
    #[serde(default)]
    pub offset: NonNegativeInt,
}

/// `notes_read_file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesReadFile {
    pub path: Text,
    /// First line, 1-based; negative counts from the end.
    #[serde(default = "first_line")]
    pub start_line: LineIndex,
    /// Last line, inclusive; -1 is the last.
    #[serde(default = "last_line")]
    pub end_line: LineIndex,
    /// Start this many characters into start_line (a reply's next_offset_chars).
    #[serde(default)]
    pub offset_chars: NonNegativeInt,
}

/// `notes_search_contents`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesSearchContents {
    pub query: Query,
    /// Only notes under this prefix.
    #[serde(default)]
    pub path_prefix: Text,
    /// At most this many lines.
    #[serde(default = "notes_search_limit")]
    pub limit: PositiveInt,
    /// Skip this many (a reply's next_offset).
    #[serde(default)]
    pub offset: NonNegativeInt,
}

/// `notes_append_to_file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesAppendToFile {
    /// Relative, like plan.md or task/log.md.
    pub path: Text,
    pub content: Text,
}

/// `notes_write_file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesWriteFile {
    /// Relative, like plan.md or task/log.md.
    pub path: Text,
    /// The whole note; empty deletes it.
    pub content: Text,
}

/// `context_handoff`. Optional texts that are blank count as absent.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextHandoff {
    /// The task and the original request, verbatim where it matters.
    pub goal: NonBlank,
    /// The exact next action.
    pub next_step: NonBlank,
    /// The state you checked: commits, test and CI results, completed work.
    pub facts: NonBlank,
    /// Decisions taken, and why.
    pub decisions: Option<Text>,
    /// The user's constraints, verbatim (never shortened).
    pub user_constraints: Option<Text>,
    pub open_items: Option<Text>,
    /// Unverified explanations, kept apart from facts.
    pub hypotheses: Option<Text>,
    /// Absolute paths to read first.
    #[serde(default)]
    pub files_to_read: PathList,
    /// Absolute path of a prompt file for a relaunch.
    pub launch_prompt: Option<Text>,
}

/// A `memory` command (the commands of Anthropic's memory tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryCommand {
    View,
    Create,
    StrReplace,
    Insert,
    Delete,
    Rename,
}

impl MemoryCommand {
    /// Every command, as the model writes it.
    pub const NAMES: [&'static str; 6] = [
        "view",
        "create",
        "str_replace",
        "insert",
        "delete",
        "rename",
    ];
    const ALL: [MemoryCommand; 6] = [
        MemoryCommand::View,
        MemoryCommand::Create,
        MemoryCommand::StrReplace,
        MemoryCommand::Insert,
        MemoryCommand::Delete,
        MemoryCommand::Rename,
    ];
}

impl JsonSchema for MemoryCommand {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "MemoryCommand".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "enum": MemoryCommand::NAMES})
    }
}

impl<'de> Deserialize<'de> for MemoryCommand {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked(d, |v| {
            let found = v.as_str().and_then(|s| {
                MemoryCommand::NAMES
                    .iter()
                    .zip(MemoryCommand::ALL)
                    .find(|(n, _)| **n == s)
                    .map(|(_, c)| c)
            });
            found.ok_or_else(|| {
                format!(
                    "must be one of {}, got {}",
                    MemoryCommand::NAMES.join(", "),
                    quote(&v)
                )
            })
        })
    }
}

/// A line range `[first, last]`: 1-based, inclusive, -1 as last is the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LineRange(pub i64, pub i64);
kind!(LineRange, {"type": "array", "items": {"type": "integer"}});

impl<'de> Deserialize<'de> for LineRange {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        checked(d, |v| {
            let pair = v.as_array().filter(|a| a.len() == 2).and_then(|a| {
                let n = |i: usize| {
                    a.get(i)
                        .and_then(integer)
                        .and_then(|n| i64::try_from(n).ok())
                };
                Some(LineRange(n(0)?, n(1)?))
            });
            pair.ok_or_else(|| {
                format!(
                    "must be two integers [first_line, last_line], got {}",
                    quote(&v)
                )
            })
        })
    }
}

/// `memory`: Anthropic's memory tool over Relay's notes. Which arguments a command takes is
/// checked by [`crate::memory_tool`].
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub command: MemoryCommand,
    /// Under /memories.
    pub path: Option<Text>,
    /// view: [first, last] line, 1-based; last -1 is the end.
    pub view_range: Option<LineRange>,
    /// create: the whole note.
    pub file_text: Option<Text>,
    /// str_replace: occurs exactly once.
    pub old_str: Option<Text>,
    pub new_str: Option<Text>,
    /// insert: after this line (0: at the start).
    pub insert_line: Option<NonNegativeInt>,
    pub insert_text: Option<Text>,
    pub old_path: Option<Text>,
    pub new_path: Option<Text>,
}

/// `new_context`: no parameters.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewContext {}

/// `get_context_remaining`: no parameters.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetContextRemaining {}

macro_rules! tools {
    ($($ty:ty => $name:expr),* $(,)?) => {
        $(
            impl ToolArgs for $ty {
                const TOOL: &'static str = $name;
                fn names() -> &'static Names {
                    static NAMES: OnceLock<Names> = OnceLock::new();
                    NAMES.get_or_init(Names::of::<$ty>)
                }
            }
        )*

        /// Every tool's name, in registration order.
        pub const TOOL_NAMES: [&str; 13] = [$($name),*];

        /// The parameter names of the tool `tool`.
        pub fn names_of(tool: &str) -> Option<&'static Names> {
            $( if tool == $name { return Some(<$ty>::names()); } )*
            None
        }

        /// Every tool's parameter schema: an object from tool name to the JSON Schema of its
        /// parameters (`type: object`, `properties`, `required`, `additionalProperties: false`;
        /// no `$schema`, titles or definitions), usable as a Pi tool's `parameters` as is.
        pub fn parameter_schemas() -> Value {
            let mut out = Map::new();
            $( out.insert($name.to_string(), schema_of::<$ty>()); )*
            Value::Object(out)
        }
    };
}

tools! {
    HistoryListWindows => HISTORY_LIST_WINDOWS,
    HistoryListItems => HISTORY_LIST_ITEMS,
    HistoryReadItem => HISTORY_READ_ITEM,
    HistorySearchContents => HISTORY_SEARCH_CONTENTS,
    NotesListFilesByPrefix => NOTES_LIST_FILES_BY_PREFIX,
    NotesReadFile => NOTES_READ_FILE,
    NotesSearchContents => NOTES_SEARCH_CONTENTS,
    NotesAppendToFile => NOTES_APPEND_TO_FILE,
    NotesWriteFile => NOTES_WRITE_FILE,
    NewContext => NEW_CONTEXT,
    ContextHandoff => CONTEXT_HANDOFF,
    GetContextRemaining => GET_CONTEXT_REMAINING,
    Memory => MEMORY,
}

/// The tidy parameter schema of `T`: inlined, without `$schema`, `title`, the struct's own
/// description or definitions; optional parameters are simply not required (no `null` type);
/// each parameter's default is added to its description, so the model reads it in one place.
fn schema_of<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut root = generator.into_root_schema_for::<T>().to_value();
    let mut out = Map::new();
    out.insert("type".into(), "object".into());
    let mut properties = match root.get_mut("properties").map(Value::take) {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    for property in properties.values_mut() {
        tidy_property(property);
    }
    out.insert("properties".into(), Value::Object(properties));
    if let Some(Value::Array(required)) = root.get_mut("required").map(Value::take) {
        if !required.is_empty() {
            out.insert("required".into(), Value::Array(required));
        }
    }
    out.insert("additionalProperties".into(), Value::Bool(false));
    Value::Object(out)
}

fn tidy_property(p: &mut Value) {
    let Value::Object(obj) = p else { return };
    // `Option<T>`: schemars writes `type: [T, "null"]` or `anyOf: [T, {type: null}]`.
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_mut_slice() {
            let only = only.take();
            obj.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(any_of)) = obj.remove("anyOf") {
        let mut rest: Vec<Value> = any_of
            .into_iter()
            .filter(|s| s.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        match rest.pop() {
            Some(Value::Object(inner)) if rest.is_empty() => {
                for (k, v) in inner {
                    obj.entry(k).or_insert(v);
                }
            }
            Some(other) => {
                rest.push(other);
                obj.insert("anyOf".into(), Value::Array(rest));
            }
            None => {}
        }
    }
    if let Some(default) = obj.get("default").cloned() {
        let description = obj
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let text = format!("{description} Default: {default}.");
        obj.insert("description".into(), text.trim_start().into());
        // Said once, in the description: the key would cost every request its bytes again (Pi's
        // schema check ignores `default`; the decoder applies the defaults).
        obj.remove("default");
    }
}

#[cfg(test)]
mod tests;
