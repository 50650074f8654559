//! The budget policy's telemetry events, one variant per kind, as they stand in `events.jsonl`
//! (the engine's `TelemetryLine` adds the envelope: time, session, window, mode). Field names
//! and order are the file's; each value is the text the policy's `as_str` gives (a fallback
//! reason is `compaction_failure` here, as it always was in this file).
//!
//! The observe mode's previews (`would_<kind>`) are the same events with the prefix
//! ([`PolicyEffect::Event`]'s `would`); `notify`, `block`, `reset`, `continue` and `relaunch` are
//! the previews of the effects that are not events, their fields as the effect's own (in the
//! effect's snake_case, as they always were).

use serde::{Deserialize, Serialize};

use super::{CommitKind, FallbackReason, NotifyLevel, Phase, PolicyEffect, PolicyReset};

/// One event of the budget policy (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "event",
    rename_all = "snake_case",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum PolicyEvent {
    /// The fallback was armed (`reason`: hard, cap, loop, compaction_failure).
    FallbackArmed {
        reason: String,
        tokens: Option<u64>,
        floor: Option<u64>,
        handoffs_committed: u32,
        max_handoffs_per_session: u32,
    },
    /// A threshold (`soft`, `handoff`, `hard`) was reached.
    ThresholdCrossed {
        threshold: Threshold,
        tokens: u64,
        floor: Option<u64>,
        limit: u64,
    },
    /// A written handoff commits (`source` and `kind` are the same kind).
    HandoffCommitted {
        source: CommitKind,
        kind: CommitKind,
        path: String,
        tokens: Option<u64>,
    },
    /// The armed fallback's mechanical reset.
    ForcedReset {
        reason: String,
        tokens: Option<u64>,
        at_turn_end: bool,
        continues: bool,
    },
    /// New input after an idle time resets the window with the stored handoff first.
    IdleInputReset {
        idle_ms: u64,
        idle_minutes_ms: u64,
        tokens: u64,
        keep_recent_tokens: u64,
        path: String,
    },
    /// A tool call was blocked.
    ToolBlocked {
        tool: String,
        phase: Phase,
        tokens: Option<u64>,
    },
    /// A written handoff was not taken (a reset is under way, or a fallback it cannot bypass).
    HandoffIgnored { path: String, why: String },
    /// A handoff was written; it commits at the turn's end.
    HandoffWritten {
        path: String,
        kind: CommitKind,
        tokens: Option<u64>,
    },
    /// A tool ran after the handoff was written: the pending commit is dropped.
    HandoffInvalidated {
        path: String,
        tool: String,
        kind: CommitKind,
    },
    /// At the settle point a reset is due.
    SettleResetDue { tokens: Option<u64>, phase: Phase },
    /// The run is continued at the settle point to ask for a handoff (`fallback`: `hard` at the
    /// hard limit, absent otherwise).
    SettleContinuation {
        tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fallback: Option<String>,
    },
    /// The armed fallback relaunches Pi instead of resetting in-process.
    FallbackRelaunch { reason: String, tokens: Option<u64> },
    /// A handoff is asked for at the settle point while the cache is warm.
    IdleHandoffRequested {
        tokens: Option<u64>,
        idle_min_tokens: u64,
        requires_handoff: bool,
    },
    /// The reset the policy waited for was dropped (`kind`: what it committed as).
    ResetDropped {
        kind: Option<CommitKind>,
        phase: Phase,
    },
    /// A reset was installed.
    ResetApplied { handoffs_committed: u32 },
    /// Preview of [`PolicyEffect::Notify`] (only as `would_notify`).
    Notify { level: NotifyLevel, text: String },
    /// Preview of [`PolicyEffect::Block`] (only as `would_block`).
    Block { reason: String, terminate: bool },
    /// Preview of [`PolicyEffect::RequestReset`] (only as `would_reset`).
    Reset {
        source: PolicyReset,
        kind: CommitKind,
        #[serde(rename = "handoff_path")]
        handoff_path: Option<String>,
        #[serde(rename = "continue_run")]
        continue_run: bool,
        #[serde(rename = "at_turn_end")]
        at_turn_end: bool,
        note: Option<String>,
    },
    /// Preview of [`PolicyEffect::Continue`] (only as `would_continue`).
    Continue { text: String },
    /// Preview of [`PolicyEffect::Relaunch`] (only as `would_relaunch`; `reason` in the reason's
    /// serde name, `compactionFailure`, as the effect serialized it).
    Relaunch { reason: FallbackReason },
}

/// Which threshold a `threshold_crossed` event names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Threshold {
    Soft,
    Handoff,
    Hard,
}

impl PolicyEvent {
    /// The event's name in `events.jsonl` (without an observe preview's `would_`).
    pub fn name(&self) -> &'static str {
        match self {
            PolicyEvent::FallbackArmed { .. } => "fallback_armed",
            PolicyEvent::ThresholdCrossed { .. } => "threshold_crossed",
            PolicyEvent::HandoffCommitted { .. } => "handoff_committed",
            PolicyEvent::ForcedReset { .. } => "forced_reset",
            PolicyEvent::IdleInputReset { .. } => "idle_input_reset",
            PolicyEvent::ToolBlocked { .. } => "tool_blocked",
            PolicyEvent::HandoffIgnored { .. } => "handoff_ignored",
            PolicyEvent::HandoffWritten { .. } => "handoff_written",
            PolicyEvent::HandoffInvalidated { .. } => "handoff_invalidated",
            PolicyEvent::SettleResetDue { .. } => "settle_reset_due",
            PolicyEvent::SettleContinuation { .. } => "settle_continuation",
            PolicyEvent::FallbackRelaunch { .. } => "fallback_relaunch",
            PolicyEvent::IdleHandoffRequested { .. } => "idle_handoff_requested",
            PolicyEvent::ResetDropped { .. } => "reset_dropped",
            PolicyEvent::ResetApplied { .. } => "reset_applied",
            PolicyEvent::Notify { .. } => "notify",
            PolicyEvent::Block { .. } => "block",
            PolicyEvent::Reset { .. } => "reset",
            PolicyEvent::Continue { .. } => "continue",
            PolicyEvent::Relaunch { .. } => "relaunch",
        }
    }

    /// The observe-mode preview of an effect that is not an event.
    pub(super) fn preview_of(effect: &PolicyEffect) -> PolicyEvent {
        match effect {
            PolicyEffect::Event { event, .. } => event.clone(),
            PolicyEffect::Notify { level, text } => PolicyEvent::Notify {
                level: *level,
                text: text.clone(),
            },
            PolicyEffect::Block { reason, terminate } => PolicyEvent::Block {
                reason: reason.clone(),
                terminate: *terminate,
            },
            PolicyEffect::RequestReset {
                source,
                kind,
                handoff_path,
                continue_run,
                at_turn_end,
                note,
            } => PolicyEvent::Reset {
                source: *source,
                kind: *kind,
                handoff_path: handoff_path.clone(),
                continue_run: *continue_run,
                at_turn_end: *at_turn_end,
                note: note.clone(),
            },
            PolicyEffect::Continue { text, .. } => PolicyEvent::Continue { text: text.clone() },
            PolicyEffect::Relaunch { reason } => PolicyEvent::Relaunch { reason: *reason },
        }
    }
}
