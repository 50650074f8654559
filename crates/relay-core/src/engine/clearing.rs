//! Tool-result clearing in the engine: at a `turn_end` whose tool results keep the run going and
//! that installs nothing else, the current window's old tool results are replaced in every later
//! request by a stub ([`crate::clearing`] decides which and renders the stubs). The answer is a
//! [`HookResult::Clear`]: one `relay/clear-tool-results` record holding the stubs, which every
//! later `context` hook of the window puts in place of the results ([`Output::stubs`]) and which
//! the status line, `/relay` and `relay timeline` count. One entry per clearing: Pi's own
//! `context_edit` entries would cost a walk of the whole branch each (ARCHITECTURE.md).
//!
//! [`Output::stubs`]: super::door::Output::stubs
//!
//! Everything the decision reads is a projection of the branch (the window's tool results, what
//! earlier edits replaced, Pi's estimate of the window), and what it writes is persisted on the
//! branch, so a reload, a `/tree` navigation or a resume builds the same requests. Drafts Pi
//! refuses leave the branch as it was: the next turn end decides again.

use super::files::TelemetryEvent;
use super::wire::{HookReply, HookResult, Moment};
use super::Engine;
use crate::clearing::{decide, trigger_tokens};
use crate::records::{ClearedStub, ClearingRecord, CustomRecord};
use crate::settings::reminder_threshold;

impl Engine {
    /// The trigger in this moment's window (`None`: no clearing).
    pub(super) fn clear_trigger(&self, moment: &Moment) -> Option<u64> {
        let window = moment.usage.map(|u| u.context_window).or(moment.window())?;
        let reminder = reminder_threshold(
            window,
            self.reserve_for(moment),
            self.settings.config.reminder_margin_tokens,
        );
        trigger_tokens(
            &self.settings.config.clear_tool_results,
            window.saturating_sub(reminder),
        )
    }

    /// See the module documentation. True when a clearing was asked for.
    pub(super) fn maybe_clear(&self, moment: &Moment, reply: &mut HookReply) -> bool {
        if reply.result.is_some() || !self.enabled() || self.mirror.skimmed {
            return false;
        }
        let cfg = &self.settings.config.clear_tool_results;
        if !cfg.enabled {
            return false;
        }
        let tokens = moment.usage.and_then(|u| u.tokens);
        let trigger = self.clear_trigger(moment);
        // Below the trigger nothing is read. Past it, the running total says whether the old
        // results free enough (O(keep)); the window's results are walked (O(window)) only for a
        // clearing that happens.
        if tokens.zip(trigger).is_none_or(|(t, trigger)| t < trigger) {
            return false;
        }
        let keep = usize::try_from(cfg.keep).unwrap_or(usize::MAX);
        let freeable = self.mirror.clearable_tokens(&cfg.exclude_tools, keep);
        if freeable == 0 || freeable < cfg.clear_at_least {
            return false;
        }
        let window_id = self.mirror.history.current_window_id();
        let results = self.mirror.window_tool_results();
        let Some(clearing) = decide(cfg, trigger, tokens, window_id, &results) else {
            return false;
        };
        let record = ClearingRecord {
            v: crate::records::VERSION,
            window_id: window_id.to_string(),
            items: clearing.items.len() as u64,
            tokens_freed: clearing.tokens_freed,
            tokens_before: tokens,
            stubs: clearing
                .items
                .into_iter()
                .map(|c| ClearedStub {
                    id: c.entry_id,
                    call: c.call,
                    nth: c.nth,
                    text: c.stub,
                })
                .collect(),
        };
        // events.jsonl is the budget policy's log: an event there only while it enforces (the
        // branch's record is what the status line, `/relay` and `relay timeline` read).
        if self.policy_mode() == crate::policy::Mode::Enforce {
            // The line's envelope names the window (`windowId`).
            let data = TelemetryEvent::ToolResultsCleared {
                items: record.items,
                tokens_freed: record.tokens_freed,
                tokens_before: record.tokens_before,
            };
            self.push_telemetry(data, moment, reply);
        }
        reply.result = Some(HookResult::Clear {
            record: record.marker(),
        });
        true
    }

    /// The clearings on the branch and the tokens they freed: (in this window, on the branch).
    pub(super) fn clearing_totals(&self) -> ((u32, u64), (u32, u64)) {
        let window = self.mirror.history.current_window_id();
        let mut here = (0, 0);
        let mut all = (0, 0);
        for c in &self.mirror.clearings {
            all = (all.0 + 1, all.1 + c.freed);
            if c.window_id == window {
                here = (here.0 + 1, here.1 + c.freed);
            }
        }
        (here, all)
    }
}
