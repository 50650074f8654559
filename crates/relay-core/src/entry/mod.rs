//! Pi session entries: the typed model of a session file's lines and of the objects
//! `getBranch()` returns, a fast decoder for them, and the branch walk.
//!
//! - `types`: [`Entry`], [`EntryKind`], [`Message`], [`Header`], [`Line`] and the decoding errors;
//! - `decode`: one JSON line or object → [`Line`] / [`Entry`]; a whole file → [`ParsedSession`];
//! - `raw`: the borrowed serde shapes `decode` reads a line into (in full, or skimmed);
//! - `skim`: the byte-level fast path of the skim for `message` lines (serde's result or "not sure");
//! - `branch`: the root→leaf path of a session's tree, from entries or streamed from a file;
//! - `foreign`: pi-context's and pi-context-budget's entries read as Relay's ([`adopt`]);
//! - `marker`: what opened a window ([`WindowMarker`], Relay's compaction `details` in every shape).
//!
//! Contract: decoding is total (a malformed line is an error value with its line number, never a
//! panic, and the rest of the file still loads); unknown fields are skipped and unknown entry
//! types kept as [`EntryKind::Unknown`], so a newer Pi's sessions still load. Every public item is
//! re-exported here: `crate::entry::X` is the path to use.

mod branch;
mod decode;
mod foreign;
mod marker;
mod raw;
mod skim;
mod types;

pub use branch::{
    branch_indices, stream_branch, stream_branch_by_parents, stream_branch_by_parents_at,
    BranchSink, LinearFeed,
};
pub use decode::ESTIMATED_IMAGE_CHARS;
pub use decode::{
    last_entry_of_line, message_of_value, parse_entries, parse_entry, parse_line, parse_session,
    push_entries_of_lines, push_located_entries_of_lines, skim_entry_of_line,
};
pub use foreign::{adopt, unimported};
pub use marker::{WindowMarker, COUNTED_COMMITS};
pub use types::{
    Entry, EntryKind, Header, Line, LineAt, LineError, Message, ModelRef, ParseError,
    ParsedSession, Replacement, StopReason, SystemDelta, ToolCall, UsageParts,
    TOOL_CALL_KEY_MAX_CHARS,
};

#[cfg(test)]
mod skim_tests;
#[cfg(test)]
mod tests;
