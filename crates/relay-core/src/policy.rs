//! The token-budget policy: configuration ([`budget_file`]), threshold resolution, modes and a pure,
//! immutable transition function.
//!
//! # Shape
//!
//! - **getters**: [`PolicyState::phase`], [`handoff_is_forced`], [`status_fields`];
//! - **transition**: [`step`] (the enforce policy) and [`step_mode`] (the same transition under a
//!   mode: off = measurements only, observe = every effect turned into a `would_*` event, enforce =
//!   real effects);
//! - **texts**: `render_*` functions produce every text the model or the user sees.
//!
//! The adapter feeds [`PolicyInput`]s from Pi hooks and executes the [`PolicyEffect`]s. No clock is
//! read: turns are counted from [`PolicyInput::TurnEnd`].
//!
//! # Phases
//!
//! ```text
//! Idle ──soft──▶ SoftNotified ──handoff──▶ HandoffRequired ──handoff written──▶ HandoffPendingCommit
//!   │                 │                        │  ▲                                    │ turn_end
//!   └──────hard / cap / loop guard─────────────┴──┼──▶ FallbackArmed                  ▼
//!                                                 └── sibling tool finished ◀── Compacting ──ResetApplied──▶ Idle
//! ```
//!
//! **Idle request.** At a completed settle point in `Idle`/`SoftNotified`, with work pending
//! ([`PolicyInput::BeforeSettle`]`{ pending_work }`) and at least `idleMinTokens`, one
//! continuation asks for a handoff (`idle_requested`; it also spends the run's settle
//! continuation). A handoff written then is pending as [`CommitKind::Idle`] (other tools blocked)
//! and its turn end requests [`PolicyReset::Idle`]; an idle commit never counts. Only
//! [`PolicyInput::BeforeAgentStart`] (a new external run) or an applied reset ends the request.
//!
//! **Idle-input recovery.** New input while no run is active ([`PolicyInput::ExternalInput`]),
//! after at least `idleMinutes` since the agent's last activity (the engine measures it from the
//! `nowMs` of its observations), with a stored handoff still valid and a window larger than
//! `keepRecentTokens`, requests [`PolicyReset::IdleInput`]: an uncounted idle commit of that
//! handoff, installed before the input runs and continuing nothing (the input is the new window's
//! first request). Not in `Compacting`/`HandoffPendingCommit`, nor under a cap, loop-guard or
//! compaction-failure fallback. **One reset per boundary:** this reset is installed from Pi's
//! `input`, before Pi's pre-prompt threshold check; that check then sees a window whose last
//! answer predates the reset and does nothing, and the scheduler serves at most one reset for the
//! input (its request is consumed by the first compaction hook and ends with the run the input
//! starts). Without it, the threshold reset happens as before.
//!
//! **Failures** of a reset are classified from Pi's error text ([`classify_compact_failure`]):
//! benign ones (cancelled, "Nothing to compact", "Already compacted") never count; a persistent
//! one of a reset Relay owns arms [`FallbackReason::CompactionFailure`] at once
//! ([`PolicyInput::CompactionFailed`]); transient ones are retried, the third arms it.

pub mod budget_file;
mod events;
mod failure;
pub mod glob;
mod modes;
mod thresholds;
mod transition;

pub use budget_file::{
    invalid_file_config, parse_budget_config, BudgetConfig, LoopGuard, Mode, ModelOverride,
    ThresholdOverrides,
};
pub use modes::{cwd_matches, effective_mode, EffectiveMode};
pub use thresholds::{
    derived_thresholds, resolve_thresholds, PolicyParams, Thresholds, DEFAULT_IDLE_MINUTES,
    DEFAULT_IDLE_MIN_TOKENS, DEFAULT_KEEP_RECENT_TOKENS, SEED_MAIN, SEED_SUBAGENT,
};

pub use events::{PolicyEvent, Threshold};
pub use failure::{classify_compact_failure, FailureKind};
pub use transition::{
    armed_by_compaction_failure, disarm_compaction_failure, handoff_is_forced, notes_access, step,
    step_mode,
};

use serde::{Deserialize, Serialize};

/// The name of the handoff tool, which the policy never blocks.
pub const HANDOFF_TOOL: &str = "context_handoff";

/// Named lifecycle phases (seed "Lifecycle model").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    #[default]
    Idle,
    /// The soft advisory was shown for this crossing.
    SoftNotified,
    /// Tokens reached the handoff threshold with enough progress: every tool except
    /// `context_handoff` is blocked.
    HandoffRequired,
    /// A valid handoff was written; the turn's end commits a retain-none reset.
    HandoffPendingCommit,
    /// A reset was requested; waiting for [`PolicyInput::ResetApplied`].
    Compacting,
    /// Hard limit without a handoff, handoff cap or loop guard: non-handoff tools stay blocked until
    /// a forced mechanical reset (or, at the hard limit, a valid handoff).
    FallbackArmed,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::SoftNotified => "soft-notified",
            Phase::HandoffRequired => "handoff-required",
            Phase::HandoffPendingCommit => "handoff-pending-commit",
            Phase::Compacting => "compacting",
            Phase::FallbackArmed => "fallback-armed",
        }
    }
}

/// Why the fallback is armed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FallbackReason {
    /// Tokens reached `hard` without a usable handoff. A valid handoff still commits.
    Hard,
    /// `maxHandoffsPerSession` budget/hard commits were already made.
    Cap,
    /// `loop.maxHandoffsWithoutProgress` commits within `loop.withinTurns` turns without a
    /// successful non-handoff tool.
    Loop,
    /// Relay's own reset failed three times in this window (or failed for good): the window
    /// cannot be reset by retrying, so tools stay blocked until a mechanical reset succeeds.
    CompactionFailure,
}

impl FallbackReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FallbackReason::Hard => "hard",
            FallbackReason::Cap => "cap",
            FallbackReason::Loop => "loop",
            FallbackReason::CompactionFailure => "compaction_failure",
        }
    }
}

/// What a handoff commits as. Budget and hard commits count toward the cap and the loop guard;
/// voluntary ones (written before any threshold required it) do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CommitKind {
    Voluntary,
    Budget,
    Hard,
    /// A mechanical reset after the hard limit without a handoff (counts like `Hard`).
    ForcedHard,
    /// A mechanical reset after the cap or the loop guard (does not count).
    ForcedGuard,
    /// A handoff written after an idle request (warm cache, pending work): never counts toward
    /// the cap or the loop guard.
    Idle,
}

impl CommitKind {
    fn counts(self) -> bool {
        matches!(
            self,
            CommitKind::Budget | CommitKind::Hard | CommitKind::ForcedHard
        )
    }
    pub fn as_str(self) -> &'static str {
        match self {
            CommitKind::Voluntary => "voluntary",
            CommitKind::Budget => "budget",
            CommitKind::Hard => "hard",
            CommitKind::ForcedHard => "forcedHard",
            CommitKind::ForcedGuard => "forcedGuard",
            CommitKind::Idle => "idle",
        }
    }
}

/// A written handoff waiting for its turn's end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingHandoff {
    pub path: String,
    pub kind: CommitKind,
}

/// The policy's whole state. Plain data: clone, compare, serialize.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyState {
    pub phase: Phase,
    /// Last observed context tokens; `None` = unknown or fresh after a reset.
    pub tokens: Option<u64>,
    /// First assistant usage after bootstrap or a reset; `None` = unknown (never blocks).
    pub floor: Option<u64>,
    /// The next known usage becomes the floor.
    pub awaiting_floor: bool,
    /// The soft advisory fired for the current crossing (re-armed below `soft`).
    pub soft_latched: bool,
    pub pending: Option<PendingHandoff>,
    /// The commit a requested reset stands for, counted when the reset is applied.
    pub committing: Option<CommitKind>,
    pub fallback: Option<FallbackReason>,
    /// Turn ends seen while the fallback is armed.
    pub fallback_turns: u32,
    /// A settle continuation was already sent in this external run.
    pub settle_continued: bool,
    /// The idle handoff continuation was sent; only a new external run or an applied reset ends
    /// the request (no second one meanwhile).
    pub idle_requested: bool,
    /// Turn counter (one per [`PolicyInput::TurnEnd`]).
    pub turn: u64,
    /// Budget/hard commits applied in this session (cap).
    pub handoffs_committed: u32,
    /// Turns at which budget/hard commits were applied since the last successful non-handoff tool.
    pub unproductive_commits: Vec<u64>,
    /// Tool call ids blocked in the current turn (their results never invalidate a handoff).
    pub blocked_calls: Vec<String>,
    /// The state is an observe-mode projection.
    pub projected: bool,
    /// The projection applied a would-be reset: its window restarted there, so its floor is the
    /// next usage (the branch's floor belongs to the real window).
    pub preview_window: bool,
    /// Actual commit counters saved when a projection started; restored when enforcement resumes.
    pub actual_commits: Option<(u32, Vec<u64>)>,
}

impl Default for PolicyState {
    fn default() -> Self {
        PolicyState {
            phase: Phase::Idle,
            tokens: None,
            floor: None,
            awaiting_floor: true,
            soft_latched: false,
            pending: None,
            committing: None,
            fallback: None,
            fallback_turns: 0,
            settle_continued: false,
            idle_requested: false,
            turn: 0,
            handoffs_committed: 0,
            unproductive_commits: Vec::new(),
            blocked_calls: Vec::new(),
            projected: false,
            preview_window: false,
            actual_commits: None,
        }
    }
}

impl PolicyState {
    pub fn phase(&self) -> Phase {
        self.phase
    }
}

/// Observations the adapter feeds, one per Pi hook event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PolicyInput {
    /// `before_agent_start` of a genuinely new external run (not an internal `agent_start`).
    BeforeAgentStart,
    /// Context tokens from an assistant message's usage (`turn_end`/`message_end`); `None` when the
    /// provider reported none (after a reset: the context is fresh).
    ///
    /// `floor`: what the caller knows of the window's floor (see [`Floor`]).
    Usage {
        tokens: Option<u64>,
        #[serde(default)]
        floor: Floor,
    },
    /// `tool_call`: answered with [`PolicyEffect::Block`] or nothing (allowed).
    ToolCall { id: String, name: String },
    /// `context_handoff` produced a valid handoff file at `path` (enforce only: the tool is a no-op
    /// in observe).
    HandoffWritten { path: String },
    /// `tool_result` of a tool that actually ran. The order of inputs defines "after the handoff":
    /// a non-handoff tool finishing while a handoff is pending invalidates it; a call this policy
    /// blocked (same `id`) never does.
    ToolFinished {
        id: String,
        name: String,
        success: bool,
    },
    /// `turn_end`. `continues`: the turn ran tools, so the run goes on to another request (a
    /// turn without tool results is the model trying to stop).
    TurnEnd { continues: bool },
    /// `agent_before_settle` of a completed run: the agent is about to stop. `pending_work`: work
    /// the session still waits for (a queued user follow-up, or background work a host reports);
    /// with a large context it asks for an idle handoff.
    BeforeSettle {
        #[serde(default)]
        pending_work: bool,
        /// The scheduler resets the window at this settle point anyway (a `new_context`, a
        /// retry, a forced or borrowed-turn reset, or one already in flight): the policy asks
        /// for nothing then (no handoff or idle request into a window being reset); a written
        /// handoff still commits with that reset, and an armed fallback waits for it.
        #[serde(default)]
        reset_due: bool,
        /// A handoff written in this window is still valid (no real tool ran and no external
        /// run started since): no idle handoff is asked for while one is at hand.
        #[serde(default)]
        stored_handoff: bool,
    },
    /// New external input (Pi's `input`) while no run is active, before the run it starts.
    /// `idle_ms`: time since the agent's last activity (`None`: unknown, e.g. right after a
    /// session start). `stored_handoff`: the path of a handoff written in this window that is
    /// still valid (no real tool ran and no external run started since it was written).
    ExternalInput {
        idle_ms: Option<u64>,
        stored_handoff: Option<String>,
    },
    /// A reset (any source) was applied: new window, floor unknown.
    ResetApplied,
    /// Relay's own reset failed for the third time in this window (or failed for good): arm the
    /// fallback with [`FallbackReason::CompactionFailure`], whatever phase the policy was in.
    CompactionFailed,
    /// The reset this policy requested will not happen (the run was aborted, the session
    /// navigated, Relay was switched off, or Pi rejected it): leave `Compacting` and return to the
    /// phase the request came from, so enforcement goes on.
    ResetDropped,
}

/// The floor as an input knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum Floor {
    /// Not known to the caller: the first known usage after a reset becomes the floor.
    #[default]
    Unknown,
    /// The window's first assistant usage as the branch holds it (`None`: no assistant usage in
    /// this window yet, so the floor is unknown and never blocks).
    Branch(Option<u64>),
}

/// Notification level for the UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifyLevel {
    Info,
    Warning,
}

/// What a reset the policy requests is (the scheduler's `ResetSource` is why a reset happens,
/// of every kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PolicyReset {
    /// Commit of a written handoff: the boot block carries it.
    Handoff,
    /// Mechanical fallback reset: the boot block carries `note` instead of a handoff.
    Forced,
    /// Commit of a handoff written after an idle request: the boot block carries it; the reset is
    /// logged with source `idle` and never counts toward the cap or the loop guard.
    Idle,
    /// Idle-input recovery: new input after `idleMinutes` resets with the stored handoff before
    /// the input runs (source `idle`, never counted); the input then passes through unchanged.
    IdleInput,
}

/// Effects for the adapter to execute.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PolicyEffect {
    /// A UI notification (never sent to the model).
    Notify { level: NotifyLevel, text: String },
    /// Answer the current `tool_call` with `{block: true, reason}`. `terminate`: also end the run
    /// after this tool batch (the user decides what comes next).
    Block { reason: String, terminate: bool },
    /// Ask the reset scheduler for a retain-none reset. `continue_run`: request an automatic
    /// continuation. `at_turn_end`: install it at this `turn_end` (else at the settle point).
    /// `note`: the boot block's notice of a forced (mechanical) reset.
    RequestReset {
        source: PolicyReset,
        kind: CommitKind,
        handoff_path: Option<String>,
        continue_run: bool,
        at_turn_end: bool,
        note: Option<String>,
    },
    /// Continue the run with a hidden message asking the model for something; `idle`: it is the
    /// idle handoff request (recorded as such, so that an engine re-created inside the run
    /// knows the request is open).
    Continue { text: String, idle: bool },
    /// The armed fallback ends this process instead of resetting the window (only with
    /// [`PolicyParams::relaunch`]): the engine writes the pi-session marker and requests Pi's
    /// shutdown at `agent_settled`; the wrapper starts a fresh Pi from the latest handoff.
    Relaunch { reason: FallbackReason },
    /// A telemetry event for `events.jsonl`; `would`: the observe mode's preview of it
    /// (`would_<kind>`).
    Event { event: PolicyEvent, would: bool },
}

impl PolicyEffect {
    /// The observe-mode form of this effect: `would_<kind>`, an event keeping its kind and
    /// fields, any other effect its preview event ([`PolicyEvent::preview_of`]).
    pub fn to_would(&self) -> PolicyEffect {
        PolicyEffect::Event {
            event: PolicyEvent::preview_of(self),
            would: true,
        }
    }

    /// An event's name as `events.jsonl` has it (`would_` before a preview's); `None` for an
    /// effect that is not an event.
    pub fn event_name(&self) -> Option<String> {
        match self {
            PolicyEffect::Event { event, would } => Some(if *would {
                format!("would_{}", event.name())
            } else {
                event.name().to_string()
            }),
            _ => None,
        }
    }
}

fn event(event: PolicyEvent) -> PolicyEffect {
    PolicyEffect::Event {
        event,
        would: false,
    }
}

/// The policy part of `status/<sessionId>.json`: phase, projection flag, tokens, floor, thresholds,
/// counters and modes, in the file's key order. The engine adds cwd, model, role, window id and
/// the last handoff (`engine::budget::StatusFile`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyStatus {
    pub phase: &'static str,
    /// What the policy does now, in words (`blocking tools until a handoff`, `none`, …).
    pub action: &'static str,
    pub projected: bool,
    pub tokens: Option<u64>,
    pub floor: Option<u64>,
    pub thresholds: Thresholds,
    pub handoffs_committed: u32,
    pub max_handoffs_per_session: u32,
    pub fallback: Option<&'static str>,
    pub configured_mode: &'static str,
    pub effective_mode: &'static str,
    pub mode_reason: Option<String>,
}

/// The policy part of the status file for this state.
pub fn status_fields(
    state: &PolicyState,
    params: &PolicyParams,
    mode: &EffectiveMode,
) -> PolicyStatus {
    let action = match state.phase {
        Phase::HandoffRequired => "blocking tools until a handoff",
        Phase::HandoffPendingCommit => "committing the handoff at turn end",
        Phase::Compacting => "resetting the context",
        Phase::FallbackArmed => "fallback armed",
        Phase::SoftNotified => "soft advisory shown",
        Phase::Idle => "none",
    };
    PolicyStatus {
        phase: state.phase.as_str(),
        action,
        projected: state.projected,
        tokens: state.tokens,
        floor: state.floor,
        thresholds: params.thresholds,
        handoffs_committed: state
            .actual_commits
            .as_ref()
            .map(|a| a.0)
            .unwrap_or(state.handoffs_committed),
        max_handoffs_per_session: params.max_handoffs_per_session,
        fallback: state.fallback.map(FallbackReason::as_str),
        configured_mode: mode.configured.as_str(),
        effective_mode: mode.effective.as_str(),
        mode_reason: mode.reason.clone(),
    }
}

#[cfg(test)]
mod tests;
