//! The ledger of a branch: what each context window cost, how it ended, what its clearings freed,
//! and what Pi's own summary compaction would have sent at the same boundary (`relay stats`,
//! `/relay stats`).
//!
//! **Contract.**
//! - A ledger is a projection of the branch, read from three kinds of entries ([`LedgerMark`]):
//!   every assistant message is one provider request, with the usage Pi recorded for it (the
//!   provider's own input, cache-read, cache-write and output tokens and Pi's `cost.total`);
//!   every compaction ends a window and opens the next (Relay's window marker says why, see
//!   [`WindowMarker`]; any other compaction is Pi's own); every `relay/clear-tool-results`
//!   record is a clearing of the window it is in, with the tokens it freed.
//! - Nothing is estimated here but one figure, and it is Pi's: at each boundary, the input of
//!   the summary request Pi's compaction would have made there is Pi's own estimate of the
//!   context at that point, which Pi writes into every compaction as `tokensBefore` (for
//!   Relay's resets too). Pi's summarizer sends that context, serialized, minus the recent
//!   messages it keeps (`keepRecentTokens`), plus its instructions, uncached; Relay makes no
//!   such request.
//! - A window whose requests recorded no usage (a provider without usage, an aborted request)
//!   says so (`requests_with_usage: 0`, no cost) rather than showing zeros as if counted.
//! - The CLI feeds the marks of a session file's branch; the engine keeps them on its mirror
//!   with their positions (a navigation drops those past the new leaf). Both build the same
//!   [`Ledger`], whose JSON (`relay stats --json`) is this module's serde form.

use serde::Serialize;

use crate::engine::wire::CLEARING_TYPE;
use crate::entry::{Entry, EntryKind, UsageParts, WindowMarker};
use crate::records::{ClearingRecord, Record};

/// One entry's part in the ledger.
#[derive(Debug, Clone, PartialEq)]
pub enum LedgerMark {
    /// An assistant message: one provider request and the usage Pi recorded for it.
    Request(Option<UsageParts>),
    /// A compaction: the window ends here and the next one opens.
    Boundary(Box<Boundary>),
    /// A tool-result clearing: the results it replaced and the tokens it freed.
    Clearing { items: u64, tokens_freed: u64 },
}

/// A compaction on the branch, as the ledger reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Boundary {
    /// `"handoff"`, `"reset"` (Relay's) or `"compaction"` (Pi's own or another package's).
    pub kind: &'static str,
    /// The budget commit a Relay reset stood for.
    pub commit: Option<String>,
    /// What asked for a Relay reset (`new_context`, `threshold`, `overflow`, …).
    pub source: Option<String>,
    /// Pi's estimate of the context at the boundary (the compaction's `tokensBefore`).
    pub tokens_before: Option<u64>,
    pub at: String,
}

impl LedgerMark {
    /// The entry's part in the ledger (`None`: it has none).
    pub fn of_entry(entry: &Entry) -> Option<LedgerMark> {
        match &entry.kind {
            EntryKind::Message(m) if m.role == "assistant" => Some(LedgerMark::Request(m.usage)),
            EntryKind::Compaction {
                tokens_before,
                details,
                ..
            } => {
                let (record, marker) = WindowMarker::read(details);
                Some(LedgerMark::Boundary(Box::new(Boundary {
                    kind: marker.kind,
                    commit: marker.commit,
                    source: record.and_then(|r| r.source),
                    tokens_before: *tokens_before,
                    at: entry.timestamp.clone(),
                })))
            }
            EntryKind::Custom { custom_type, data } if custom_type == CLEARING_TYPE => {
                let record = ClearingRecord::read(data).unwrap_or_default();
                Some(LedgerMark::Clearing {
                    items: record.items,
                    tokens_freed: record.tokens_freed,
                })
            }
            _ => None,
        }
    }
}

/// The provider's token counts, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tokens {
    /// Input tokens neither read from nor written to the prompt cache.
    pub input: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub output: u64,
}

impl Tokens {
    fn add(&mut self, other: &Tokens) {
        self.input += other.input;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.output += other.output;
    }

    /// Every input token of the requests: uncached, read from and written to the cache.
    pub fn all_input(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }
}

/// How a window ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Ending {
    /// `"open"` (the current window), `"handoff"`, `"reset"` (Relay's) or `"compaction"` (Pi's
    /// own or another package's).
    pub kind: String,
    /// The budget commit the reset stood for (`budget`, `hard`, `forcedHard`, `idle`, …).
    pub commit: Option<String>,
    /// What asked for the reset (`new_context`, `threshold`, `fallback`, `overflow`, `manual`,
    /// `forced`, `idle`, `handoff`).
    pub source: Option<String>,
    /// When (the compaction's timestamp).
    pub at: Option<String>,
}

impl Ending {
    /// The ending in words: `open`, `reset (new_context)`, `handoff (budget)`, `Pi compaction`.
    pub fn describe(&self) -> String {
        let what = match self.kind.as_str() {
            "compaction" => return "Pi compaction".into(),
            other => other,
        };
        let source = self.source.as_deref().filter(|s| *s != what);
        match (source, self.commit.as_deref()) {
            (Some(s), Some(c)) if s != c => format!("{what} ({s}, {c})"),
            (Some(s), _) => format!("{what} ({s})"),
            (None, Some(c)) => format!("{what} ({c})"),
            (None, None) => what.to_string(),
        }
    }
}

/// One window's costs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WindowCost {
    /// 1 for the root window.
    pub number: usize,
    pub window_id: String,
    /// Assistant messages: each one provider request.
    pub requests: u64,
    /// Those whose usage Pi recorded (any count above 0).
    pub requests_with_usage: u64,
    pub tokens: Tokens,
    /// Pi's recorded cost of the window's requests (`None`: none recorded one).
    pub cost: Option<f64>,
    pub ended: Ending,
    pub clearings: u64,
    pub cleared_results: u64,
    pub cleared_tokens: u64,
    /// The input of the summary request Pi's own compaction would have made at the boundary
    /// that ended this window: Pi's estimate of the context there (`tokensBefore`). `None` for
    /// the open window and a compaction that recorded no estimate.
    pub pi_summary_input: Option<u64>,
}

/// The whole branch.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LedgerTotals {
    pub windows: usize,
    pub requests: u64,
    pub requests_with_usage: u64,
    pub tokens: Tokens,
    pub cost: Option<f64>,
    /// Windows ended by Relay (`handoff` or `reset`).
    pub relay_resets: u64,
    /// Windows ended by Pi's own compaction (or another package's).
    pub pi_compactions: u64,
    pub clearings: u64,
    pub cleared_results: u64,
    pub cleared_tokens: u64,
    /// The summary requests' input Pi's compaction would have sent at Relay's boundaries (those
    /// that recorded Pi's estimate).
    pub pi_summary_input: u64,
    /// Relay's boundaries with Pi's estimate (each one summary request Pi would have made).
    pub pi_summary_requests: u64,
}

/// What each window of a branch cost. See the module documentation.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Ledger {
    pub session_id: String,
    pub windows: Vec<WindowCost>,
    pub totals: LedgerTotals,
}

/// A ledger built mark by mark.
#[derive(Debug, Clone)]
pub struct LedgerBuilder {
    /// The windows that ended, oldest first.
    ended: Vec<WindowCost>,
    current: WindowCost,
}

impl Default for LedgerBuilder {
    fn default() -> Self {
        LedgerBuilder::new()
    }
}

impl LedgerBuilder {
    pub fn new() -> Self {
        LedgerBuilder {
            ended: Vec::new(),
            current: WindowCost {
                number: 1,
                ..WindowCost::default()
            },
        }
    }

    /// The next mark of the branch (root first).
    pub fn push(&mut self, mark: &LedgerMark) {
        match mark {
            LedgerMark::Request(usage) => {
                let w = &mut self.current;
                w.requests += 1;
                let Some(u) = usage.filter(|u| {
                    u.total > 0 || u.input + u.output + u.cache_read + u.cache_write > 0
                }) else {
                    return;
                };
                w.requests_with_usage += 1;
                w.tokens.add(&Tokens {
                    input: u.input,
                    cache_read: u.cache_read,
                    cache_write: u.cache_write,
                    output: u.output,
                });
                if let Some(c) = u.cost {
                    *w.cost.get_or_insert(0.0) += c;
                }
            }
            LedgerMark::Boundary(b) => {
                let w = &mut self.current;
                w.ended = Ending {
                    kind: b.kind.to_string(),
                    commit: b.commit.clone(),
                    source: b.source.clone(),
                    at: Some(b.at.clone()),
                };
                w.pi_summary_input = b.tokens_before;
                let number = w.number + 1;
                let next = WindowCost {
                    number,
                    ..WindowCost::default()
                };
                self.ended.push(std::mem::replace(&mut self.current, next));
            }
            LedgerMark::Clearing {
                items,
                tokens_freed,
            } => {
                let w = &mut self.current;
                w.clearings += 1;
                w.cleared_results += items;
                w.cleared_tokens += tokens_freed;
            }
        }
    }

    /// The ledger of session `session_id`, its windows named by `window_ids` (root first, as the
    /// history names them; a window without one is named by its number).
    pub fn finish(self, session_id: &str, window_ids: &[&str]) -> Ledger {
        let mut windows = self.ended;
        windows.push(self.current);
        let mut totals = LedgerTotals::default();
        for (i, w) in windows.iter_mut().enumerate() {
            w.window_id = window_ids
                .get(i)
                .map_or_else(|| format!("window {}", i + 1), |id| id.to_string());
            if w.ended.kind.is_empty() {
                w.ended.kind = "open".into();
            }
            totals.requests += w.requests;
            totals.requests_with_usage += w.requests_with_usage;
            totals.tokens.add(&w.tokens);
            if let Some(c) = w.cost {
                *totals.cost.get_or_insert(0.0) += c;
            }
            match w.ended.kind.as_str() {
                "handoff" | "reset" => {
                    totals.relay_resets += 1;
                    if let Some(t) = w.pi_summary_input {
                        totals.pi_summary_input += t;
                        totals.pi_summary_requests += 1;
                    }
                }
                "compaction" => totals.pi_compactions += 1,
                _ => {}
            }
            totals.clearings += w.clearings;
            totals.cleared_results += w.cleared_results;
            totals.cleared_tokens += w.cleared_tokens;
        }
        totals.windows = windows.len();
        Ledger {
            session_id: session_id.to_string(),
            windows,
            totals,
        }
    }
}

/// The ledger of `marks` (a branch's, root first).
pub fn ledger_of<'a>(
    session_id: &str,
    window_ids: &[&str],
    marks: impl IntoIterator<Item = &'a LedgerMark>,
) -> Ledger {
    let mut builder = LedgerBuilder::new();
    for mark in marks {
        builder.push(mark);
    }
    builder.finish(session_id, window_ids)
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
