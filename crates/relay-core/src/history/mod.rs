//! Durable session history: an incremental mirror of the current Pi branch, split into context
//! windows at every compaction, and the four `history_*` tools the model uses to browse it.
//!
//! - `store`: [`History`] itself: windows, items and where their texts are, push and truncate;
//! - `text`: reading texts back: from the arena, or from the session file's lines
//!   ([`LineSource`], which the host provides);
//! - `search`: filters, candidate walks and the literal substring search over the arena;
//! - `blocks`: the block filter (trigram bitmaps per 64 KiB of arena) that lets a search skip
//!   the blocks where its needle cannot start;
//! - `tools`: `history_list_windows`, `history_list_items`, `history_read_item`,
//!   `history_search_contents`.
//!
//! Contract: per-request work never depends on session length (push is O(new text), lookups are
//! O(1), filtered listings walk posting lists); the mirror is a projection of the branch and holds
//! nothing a replay would not rebuild; tool errors are model-readable and name the argument.

pub(crate) mod blocks;
mod search;
mod store;
mod text;
mod tools;

/// Re-exported for the engine's usage estimate (which counts what JavaScript's `length` counts).
pub use crate::text::utf16_len;
pub use store::{History, LineSource, ROLE_NAMES};
pub use text::TextUnavailable;

/// `history_list_items` returns at most this many items unless `limit` says otherwise.
pub const DEFAULT_LIST_ITEMS_LIMIT: usize = crate::args::DEFAULT_HISTORY_LIST_ITEMS_LIMIT;
/// `history_search_contents` returns at most this many items unless `limit` says otherwise.
pub const DEFAULT_SEARCH_LIMIT: usize = crate::args::DEFAULT_HISTORY_SEARCH_LIMIT;
/// `history_list_items` shows at most this many characters of each item by default.
pub const DEFAULT_MAX_CHARS_PER_ITEM: usize = crate::args::DEFAULT_MAX_CHARS_PER_ITEM;
/// `history_read_item` returns at most this many characters by default.
pub const DEFAULT_READ_LIMIT_CHARS: usize = crate::args::DEFAULT_READ_LIMIT_CHARS;
/// Characters of context shown on each side of a search match.
pub const SNIPPET_CONTEXT_CHARS: usize = 80;

#[cfg(test)]
mod tests;
