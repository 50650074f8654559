//! Tool-result clearing, with no LLM call (`relay.clearToolResults`).
//!
//! As a window fills, its old tool results give way, in every later request, to a one-line stub
//! that names the tool, says how large the result was and how to read it back
//! (`history_read_item` with its window and item id). The session file keeps every result whole;
//! the stubs are written into the clearing's record on the branch (branch-relative and persisted,
//! so a `/reload`, a `/tree` navigation and a resume build the same request) and put in place of
//! the results where each request is built (the `context` hook). Pi's `context_edit` entries
//! would do the same, but Pi checks each one by walking the whole branch, twice: a clearing of
//! hundreds of results on a long branch held Pi for seconds (ARCHITECTURE.md).
//!
//! **Contract** ([`decide`], a pure function of the window's tool results and its size):
//! - nothing happens below the trigger ([`trigger_tokens`]);
//! - the newest `keep` tool results of the window are never cleared, nor a result that is already
//!   edited (a stub, or another extension's edit), nor Relay's own notes and history results
//!   ([`never_cleared`]), nor a tool named in `excludeTools`;
//! - every other result is cleared at once, oldest included, and only when together they free
//!   at least `clearAtLeast` tokens: a clearing changes the request's prefix (the provider's
//!   prompt cache is written again from the first stub on), so between clearings consecutive
//!   requests share their prefix byte for byte, and each clearing buys a long stretch of them.
//!
//! The stub text is [`crate::render::clearing::render_stub`] (snapshot-tested).

use crate::render::clearing::render_stub;
use crate::settings::ClearToolResults;
use crate::tool_name::ToolName;

/// The trigger when none is configured, in a window large enough for it.
pub const DEFAULT_TRIGGER_TOKENS: u64 = 100_000;

/// Relay's own tools whose results a clearing never touches: the notes and the history (a
/// result read back through `history_read_item` must stay readable).
pub fn never_cleared(tool: &str) -> bool {
    let name = ToolName::of(tool);
    name.is_notes() || name.is_history()
}

/// The context size (tokens) from which a clearing is considered: `triggerTokens` when set; else
/// 100,000, but never later than `clearAtLeast` before the point where Relay's low-budget reminder
/// fires (`reminder_at`, in tokens used), so that a clearing comes first and keeps the window
/// below the reminder. `None` (no clearing) when that leaves less than `clearAtLeast`: the window
/// is too small for a clearing to pay for its cache break.
pub fn trigger_tokens(cfg: &ClearToolResults, reminder_at: u64) -> Option<u64> {
    if let Some(t) = cfg.trigger_tokens {
        return Some(t);
    }
    let latest = reminder_at.saturating_sub(cfg.clear_at_least);
    (latest >= cfg.clear_at_least.max(1)).then_some(DEFAULT_TRIGGER_TOKENS.min(latest))
}

/// One tool result of the current window, oldest first, as the decision needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResultView<'a> {
    /// The entry id (the `item_id` of `history_read_item`).
    pub entry_id: &'a str,
    pub tool: &'a str,
    /// Characters of the result's text as the history holds it.
    pub chars: usize,
    /// What the result counts in Pi's estimate now (ceil(chars/4)).
    pub tokens: u64,
    /// A context edit already replaced it (a stub of Relay's or another extension's edit).
    pub edited: bool,
    /// The tool call it answers (`None`: a result without one, which a stub could not find in
    /// the request), and how many earlier results of the window answer a call of that id.
    pub call: Option<&'a str>,
    pub nth: u32,
}

/// One result to replace: its entry, its tool call (and `nth`, as in [`ToolResultView`]) and the
/// stub that replaces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cleared {
    pub entry_id: String,
    pub call: String,
    pub nth: u32,
    pub stub: String,
}

/// A clearing: the results it replaces and what it frees in Pi's estimate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clearing {
    pub items: Vec<Cleared>,
    pub tokens_freed: u64,
}

/// What a text counts in Pi's estimate: ceil(UTF-16 code units / 4).
pub fn estimate_tokens(text: &str) -> u64 {
    (text.encode_utf16().count() as u64).div_ceil(4)
}

/// See the module documentation. `context_tokens` is the window's size now (Pi's estimate),
/// `trigger` the result of [`trigger_tokens`].
pub fn decide(
    cfg: &ClearToolResults,
    trigger: Option<u64>,
    context_tokens: Option<u64>,
    window_id: &str,
    results: &[ToolResultView],
) -> Option<Clearing> {
    if !cfg.enabled {
        return None;
    }
    let (trigger, tokens) = (trigger?, context_tokens?);
    if tokens < trigger {
        return None;
    }
    let keep = usize::try_from(cfg.keep).unwrap_or(usize::MAX);
    let older = results.len().saturating_sub(keep);
    let mut items = Vec::new();
    let mut freed = 0u64;
    for r in results.iter().take(older) {
        let Some(call) = r.call else { continue };
        if r.edited || never_cleared(r.tool) || cfg.exclude_tools.iter().any(|t| t == r.tool) {
            continue;
        }
        let stub = render_stub(r.tool, r.chars, r.tokens, window_id, r.entry_id);
        let stub_tokens = estimate_tokens(&stub);
        if r.tokens <= stub_tokens {
            continue;
        }
        freed += r.tokens - stub_tokens;
        items.push(Cleared {
            entry_id: r.entry_id.to_string(),
            call: call.to_string(),
            nth: r.nth,
            stub,
        });
    }
    (!items.is_empty() && freed >= cfg.clear_at_least).then_some(Clearing {
        items,
        tokens_freed: freed,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    fn view<'a>(id: &'a str, tool: &'a str, tokens: u64) -> ToolResultView<'a> {
        ToolResultView {
            entry_id: id,
            tool,
            chars: (tokens * 4) as usize,
            tokens,
            edited: false,
            call: Some(id),
            nth: 0,
        }
    }

    fn cfg(keep: u64, at_least: u64) -> ClearToolResults {
        ClearToolResults {
            trigger_tokens: Some(100_000),
            keep,
            clear_at_least: at_least,
            ..ClearToolResults::default()
        }
    }

    #[test]
    fn below_the_trigger_nothing_is_cleared() {
        let r = [view("a", "read", 50_000), view("b", "read", 10)];
        let c = cfg(0, 1);
        assert_eq!(decide(&c, Some(100_000), Some(99_999), "w", &r), None);
        assert_eq!(decide(&c, Some(100_000), None, "w", &r), None);
        assert!(decide(&c, Some(100_000), Some(100_000), "w", &r).is_some());
        let off = ClearToolResults {
            enabled: false,
            ..c.clone()
        };
        assert_eq!(decide(&off, Some(1), Some(100_000), "w", &r), None);
    }

    #[test]
    fn keeps_the_newest_and_the_excluded_and_clears_the_rest_at_once() {
        let r: Vec<String> = (0..9).map(|i| format!("e{i}")).collect();
        let mut views: Vec<_> = r.iter().map(|id| view(id, "fetch_page", 12_000)).collect();
        views[1].tool = "notes_read_file";
        views[2].tool = "history_read_item";
        views[3].tool = "bash";
        views[4].edited = true;
        // A result that answers no tool call cannot be found in a request: it stays.
        views[0].call = None;
        let mut c = cfg(3, 1);
        c.exclude_tools = vec!["bash".into()];
        let got = decide(&c, Some(1), Some(200_000), "w", &views).unwrap();
        let ids: Vec<_> = got.items.iter().map(|i| i.entry_id.as_str()).collect();
        assert_eq!(ids, ["e5"]);
        assert_eq!((got.items[0].call.as_str(), got.items[0].nth), ("e5", 0));
        let stub = estimate_tokens(&got.items[0].stub);
        assert_eq!(got.tokens_freed, 12_000 - stub);
    }

    #[test]
    fn a_clearing_that_frees_too_little_does_not_happen() {
        let views = [
            view("a", "t", 20_000),
            view("b", "t", 20_000),
            view("c", "t", 1),
        ];
        assert!(decide(&cfg(1, 39_000), Some(1), Some(1), "w", &views).is_some());
        assert_eq!(decide(&cfg(1, 41_000), Some(1), Some(1), "w", &views), None);
        // A result smaller than its stub is never replaced.
        assert_eq!(
            decide(&cfg(0, 0), Some(1), Some(1), "w", &[view("c", "t", 3)]),
            None
        );
    }

    #[test]
    fn the_default_trigger_comes_before_the_reminder() {
        let c = ClearToolResults::default();
        // 200k window, Pi's reserve and Relay's margin: the reminder at 159,040 tokens used.
        assert_eq!(trigger_tokens(&c, 159_040), Some(100_000));
        // 128k window: reminder at 87,040 used → clear from 57,040.
        assert_eq!(trigger_tokens(&c, 87_040), Some(57_040));
        // A 24k window is too small for a clearing of 30,000 tokens.
        assert_eq!(trigger_tokens(&c, 6_000), None);
        let set = ClearToolResults {
            trigger_tokens: Some(5),
            ..c
        };
        assert_eq!(trigger_tokens(&set, 6_000), Some(5));
    }
}
