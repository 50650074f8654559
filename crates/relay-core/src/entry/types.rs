//! The typed model of Pi session entries: [`Entry`] with its type-specific [`EntryKind`], the
//! [`Message`] a `message` entry carries, the session [`Header`], one decoded [`Line`], and the
//! errors of decoding ([`ParseError`], [`LineError`], [`ParsedSession`]).
//!
//! Contract: these are plain data. Every field is what Pi wrote, reduced to what Relay needs;
//! nothing here decodes, validates or walks (see `decode` and `branch`).

use std::fmt;

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
        /// The prompt and tool snapshot Pi stores with the compaction (`systemMessage`).
        system_message: Option<Box<SystemDelta>>,
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
        /// Its part of Pi's context estimate (see [`Message::estimate_chars`]).
        estimate_chars: u64,
    },
    ContextEdit {
        target_id: String,
        /// The target's new content; `None` removes it from the context.
        replacement: Option<Replacement>,
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
#[derive(Debug, Clone, PartialEq, Default)]
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
    /// An assistant message's usage in its parts, as the provider reported it (`None`: no
    /// `usage` object).
    pub usage: Option<UsageParts>,
    /// Pi's `stopReason` as written; read it through [`Message::stop`].
    pub stop_reason: Option<String>,
    pub custom_type: Option<String>,
    /// The characters (UTF-16 code units, as JavaScript counts) Pi's own estimate
    /// (`estimateTokens` in Pi's compaction code) counts for this message, before `ceil(/4)`:
    /// text, 4,800 per image, thinking, tool call name + JSON arguments, bash command + output,
    /// summaries, and for a system message its content, sections and tool declarations.
    pub estimate_chars: u64,
    /// A system message's changes to the prompt and tools (replayed for Pi's current system
    /// message).
    pub system: Option<Box<SystemDelta>>,
    /// An assistant message's tool calls, in order (empty for other roles and skimmed lines).
    pub tool_calls: Box<[ToolCall]>,
    /// The model that wrote an assistant message (its `provider` and `model`, both strings; `None`
    /// for other roles).
    pub model: Option<Box<ModelRef>>,
}

/// A physical model by Pi's names: `provider` and model id (`ctx.modelRegistry.find(provider,
/// model)`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ModelRef {
    pub provider: String,
    pub model: String,
}

/// One `toolCall` block of an assistant message: its id, the tool, and its key argument (see
/// `entry::decode::key_argument`), cut to [`TOOL_CALL_KEY_MAX_CHARS`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolCall {
    pub id: Option<String>,
    pub name: String,
    pub key: String,
    /// The `path` argument of a call that writes a file (Pi's `edit` and `write`), uncut.
    pub wrote: Option<String>,
    /// The message's `timestamp` (milliseconds since the epoch), when Pi wrote a number.
    pub at_ms: Option<i64>,
}

/// A tool call's key argument is kept up to this many characters (cut in the middle).
pub const TOOL_CALL_KEY_MAX_CHARS: usize = 160;

/// An assistant message's `usage` as Pi recorded it from the provider: the provider's own token
/// counts (a missing or malformed count is 0) and Pi's cost of the request (`cost.total`, `None`
/// when Pi recorded none).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UsageParts {
    /// Input tokens that were neither read from nor written to the prompt cache.
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// `totalTokens`, or the sum of the four counts when it is absent or 0.
    pub total: u64,
    pub cost: Option<f64>,
}

impl Message {
    /// Pi's `stopReason` of an assistant message (`None` when absent).
    pub fn stop(&self) -> Option<StopReason> {
        self.stop_reason.as_deref().map(StopReason::from)
    }

    /// The model of a successful answer: an assistant message not failed or aborted that names
    /// its model (Pi's `findLatestResponse`, whose model's window a router's usage reads).
    pub fn answered_by(&self) -> Option<&ModelRef> {
        match self.stop().is_some_and(|r| r.aborted_or_failed()) {
            true => None,
            false => self.model.as_deref(),
        }
    }
}

/// Why Pi's model stopped (an assistant message's `stopReason`). A value this Relay does not know
/// is [`StopReason::Other`]: it is not a tool call, an error, a cut-off or an abort.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// `stop`: the model finished its answer.
    Stop,
    /// `length`: the answer was cut at the output limit.
    Length,
    /// `toolUse`: the model called tools.
    ToolUse,
    /// `error`: the provider failed.
    Error,
    /// `aborted`: the user stopped it.
    Aborted,
    /// A reason a later Pi may write.
    Other(String),
}

impl StopReason {
    /// An answer that failed or was cut off (`error`, `length`).
    pub fn failed_or_cut(&self) -> bool {
        matches!(self, StopReason::Error | StopReason::Length)
    }

    /// An answer whose usage Pi does not trust (`aborted`, `error`).
    pub fn aborted_or_failed(&self) -> bool {
        matches!(self, StopReason::Aborted | StopReason::Error)
    }
}

impl From<&str> for StopReason {
    fn from(s: &str) -> Self {
        match s {
            "stop" => StopReason::Stop,
            "length" => StopReason::Length,
            "toolUse" => StopReason::ToolUse,
            "error" => StopReason::Error,
            "aborted" => StopReason::Aborted,
            other => StopReason::Other(other.to_string()),
        }
    }
}

/// What one system message changes, measured as Pi's estimate measures it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SystemDelta {
    /// Characters of its text content (empty: 0, adds no paragraph).
    pub content_chars: u64,
    /// Prompt sections set (`Some(chars)`) or deleted (`None`).
    pub sections: Vec<(String, Option<u64>)>,
    /// Tools declared: name and the characters of its JSON.
    pub tools_added: Vec<(String, u64)>,
    /// Tools withdrawn, by name.
    pub tools_removed: Vec<String>,
}

/// A `context_edit` replacement, measured both ways Pi measures content: as a user, tool result
/// or custom message's content, and as an assistant message's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Replacement {
    pub content_chars: u64,
    pub assistant_chars: u64,
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
// A `Line` lives only while one line is decoded (never held in bulk), so the header's variant
// being smaller than an entry's costs nothing worth a box on every entry.
#[allow(clippy::large_enum_variant)]
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
    pub(crate) fn new(message: impl Into<String>) -> Self {
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

/// Where an entry's line is in its session file: the offset of its first byte and its length in
/// bytes (without the line break). A sink that keeps it can read the line again later instead of
/// holding its text (see `History`'s line source).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineAt {
    pub offset: u64,
    pub len: u32,
}
