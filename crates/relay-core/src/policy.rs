//! The token-budget policy: configuration ([`config`]), threshold resolution, modes and a pure,
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
//! and its turn end requests [`ResetSource::Idle`]; an idle commit never counts. Only
//! [`PolicyInput::BeforeAgentStart`] (a new external run) or an applied reset ends the request.
//!
//! **Idle-input recovery.** New input while no run is active ([`PolicyInput::ExternalInput`]),
//! after at least `idleMinutes` since the agent's last activity (the engine measures it from the
//! `nowMs` of its observations), with a stored handoff still valid and a window larger than
//! `keepRecentTokens`, requests [`ResetSource::IdleInput`]: an uncounted idle commit of that
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

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod config;
pub mod glob;

pub use config::{
    cwd_matches, derived_thresholds, effective_mode, invalid_file_config, parse_budget_config,
    resolve_thresholds, BudgetConfig, EffectiveMode, LoopGuard, Mode, ModelOverride, PolicyParams,
    ThresholdOverrides, Thresholds, SEED_MAIN, SEED_SUBAGENT,
};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

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

/// What a requested reset is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ResetSource {
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
        source: ResetSource,
        kind: CommitKind,
        handoff_path: Option<String>,
        continue_run: bool,
        at_turn_end: bool,
        note: Option<String>,
    },
    /// Continue the run with a hidden message asking the model for something.
    Continue { text: String },
    /// The armed fallback ends this process instead of resetting the window (only with
    /// [`PolicyParams::relaunch`]): the engine writes the pi-session marker and requests Pi's
    /// shutdown at `agent_settled`; the wrapper starts a fresh Pi from the latest handoff.
    Relaunch { reason: FallbackReason },
    /// A telemetry event for `events.jsonl`.
    Event { name: String, fields: Value },
}

impl PolicyEffect {
    /// The observe-mode form of this effect: `would_<kind>` (events keep their name after the
    /// prefix), with the effect's data as fields.
    pub fn to_would(&self) -> PolicyEffect {
        match self {
            PolicyEffect::Event { name, fields } => PolicyEffect::Event {
                name: format!("would_{name}"),
                fields: fields.clone(),
            },
            other => {
                let mut fields = serde_json::to_value(other).unwrap_or(Value::Null);
                let kind = fields
                    .as_object_mut()
                    .and_then(|o| o.remove("type"))
                    .and_then(|t| t.as_str().map(str::to_string))
                    .unwrap_or_default();
                let name = match kind.as_str() {
                    "notify" => "would_notify",
                    "block" => "would_block",
                    "requestReset" => "would_reset",
                    "continue" => "would_continue",
                    "relaunch" => "would_relaunch",
                    _ => "would_unknown",
                };
                PolicyEffect::Event {
                    name: name.to_string(),
                    fields,
                }
            }
        }
    }
}

fn event(name: &str, fields: Value) -> PolicyEffect {
    PolicyEffect::Event {
        name: name.to_string(),
        fields,
    }
}

/// How a failed compaction of Relay's is treated, judged from Pi's error text
/// ([`classify_compact_failure`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FailureKind {
    /// Nothing was lost: a cancellation, "Nothing to compact", "Already compacted". Never
    /// counted, never retried, no fallback.
    Benign,
    /// May succeed later (rate limit, overload, network, timeout, 5xx, or a cause Relay cannot
    /// tell): retried at the next eligible boundary; the third failure in a window arms the
    /// fallback.
    Transient,
    /// Retrying cannot help (authentication or permission, an invalid request, no model or
    /// quota, a context too large for the summarizer): a reset Relay owns arms the fallback at
    /// once.
    Persistent,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Benign => "benign",
            FailureKind::Transient => "transient",
            FailureKind::Persistent => "persistent",
        }
    }
}

/// Texts (lower case) of failures that lose nothing: Pi's own no-op answers and cancellation.
const BENIGN_FAILURES: &[&str] = &[
    "nothing to compact",
    "already compacted",
    "compaction cancelled",
    "request was aborted",
    "aborted",
];

/// Texts (lower case) of failures a retry cannot fix. Authentication and permission (Pi's
/// "Authentication failed for …", "No API key found for …", provider 401/403 texts), an invalid
/// request (400 and its error types), no model, quota and billing exhaustion (pi-ai's
/// non-retryable limits), and a context the summarizer cannot take (pi-ai's overflow texts).
const PERSISTENT_FAILURES: &[&str] = &[
    "authentication",
    "unauthorized",
    "forbidden",
    "permission",
    "api key",
    "credentials",
    "/login",
    "invalid request",
    "invalid_request",
    "bad request",
    "invalid_parameter",
    "no model selected",
    "model not found",
    "not_found_error",
    "insufficient_quota",
    "quota exceeded",
    "billing",
    "usage limit",
];

/// Texts (lower case) of a context the summarizer cannot take (pi-ai's overflow texts). Checked
/// after the transient ones, so a throttle that mentions tokens ("Too many tokens, please wait")
/// stays transient.
const OVERFLOW_FAILURES: &[&str] = &[
    "prompt is too long",
    "prompt too long",
    "request_too_large",
    "context window",
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
    "token limit",
    "exceeds the limit",
];

/// Texts (lower case) of failures that may pass: pi-ai's retryable provider and transport errors
/// (a subset).
const TRANSIENT_FAILURES: &[&str] = &[
    "rate limit",
    "rate_limit",
    "too many requests",
    "overloaded",
    "server_busy",
    "temporarily unavailable",
    "service unavailable",
    "server error",
    "internal error",
    "network",
    "fetch failed",
    "socket hang up",
    "econnreset",
    "econnrefused",
    "etimedout",
    "timed out",
    "timeout",
    "connection",
    "please wait",
];

/// HTTP status codes in a failure text (not part of a longer number or word): the first list is
/// persistent, the second transient.
const PERSISTENT_CODES: &[&str] = &["400", "401", "403", "404", "413"];
const TRANSIENT_CODES: &[&str] = &[
    "408", "429", "500", "502", "503", "504", "520", "524", "529",
];

fn has_code(text: &str, code: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(code).any(|(i, m)| {
        let before = i.checked_sub(1).and_then(|j| bytes.get(j));
        let after = bytes.get(i + m.len());
        !before.is_some_and(u8::is_ascii_alphanumeric)
            && !after.is_some_and(u8::is_ascii_alphanumeric)
    })
}

/// Classify a failed compaction from Pi's `session_compact_failed` (`aborted`, `errorMessage`)
/// or `ctx.compact()`'s error. The rule, in order:
///
/// 1. aborted, or a benign text ("Nothing to compact", "Already compacted", "Compaction
///    cancelled") → [`FailureKind::Benign`];
/// 2. authentication, permission, API key, invalid request, no model, quota or billing, or the
///    status 400/401/403/404/413 → [`FailureKind::Persistent`] (Pi's "Authentication failed …
///    network is unavailable" is an authentication failure);
/// 3. a transient text or status (rate limit, overload, network, timeout, 408/429/5xx) →
///    [`FailureKind::Transient`];
/// 4. a context too large for the summarizer ("prompt is too long", "too many tokens", …) →
///    [`FailureKind::Persistent`];
/// 5. anything else, and no text at all → [`FailureKind::Transient`]: retrying is bounded (the
///    third failure arms the fallback), so an unknown cause costs at most two more tries.
pub fn classify_compact_failure(aborted: bool, message: Option<&str>) -> FailureKind {
    if aborted {
        return FailureKind::Benign;
    }
    let Some(text) = message.map(str::to_lowercase) else {
        return FailureKind::Transient;
    };
    let any = |list: &[&str]| list.iter().any(|t| text.contains(t));
    let code = |list: &[&str]| list.iter().any(|c| has_code(&text, c));
    if any(BENIGN_FAILURES) {
        FailureKind::Benign
    } else if any(PERSISTENT_FAILURES) || code(PERSISTENT_CODES) {
        FailureKind::Persistent
    } else if any(TRANSIENT_FAILURES) || code(TRANSIENT_CODES) {
        FailureKind::Transient
    } else if any(OVERFLOW_FAILURES) {
        FailureKind::Persistent
    } else {
        FailureKind::Transient
    }
}

/// Whether a handoff written now is forced by the policy (handoff threshold or fallback): forced
/// handoffs bypass the duplicate back-off.
pub fn handoff_is_forced(state: &PolicyState) -> bool {
    matches!(state.phase, Phase::HandoffRequired | Phase::FallbackArmed)
        || matches!(
            state.pending,
            Some(PendingHandoff {
                kind: CommitKind::Budget | CommitKind::Hard,
                ..
            })
        )
}

/// Apply the measurement part of an input (tokens, floor, turn counter, window reset). Used by every
/// mode, including off.
fn measure(s: &mut PolicyState, input: &PolicyInput) {
    match input {
        PolicyInput::Usage {
            tokens: Some(t),
            floor,
        } => {
            s.tokens = Some(*t);
            match floor {
                Floor::Branch(f) => {
                    s.floor = *f;
                    s.awaiting_floor = f.is_none();
                }
                Floor::Unknown if s.awaiting_floor => {
                    s.floor = Some(*t);
                    s.awaiting_floor = false;
                }
                Floor::Unknown => {}
            }
        }
        PolicyInput::Usage {
            tokens: None,
            floor,
        } => {
            if let Floor::Branch(f) = floor {
                s.floor = *f;
                s.awaiting_floor = f.is_none();
            }
            // Unknown usage: after a reset the context is fresh; otherwise nothing is known.
            s.tokens = None;
        }
        PolicyInput::TurnEnd { .. } => {
            s.turn += 1;
        }
        PolicyInput::ResetApplied => {
            s.tokens = None;
            s.floor = None;
            s.awaiting_floor = true;
        }
        _ => {}
    }
}

fn guard_trip(s: &PolicyState, p: &PolicyParams) -> Option<FallbackReason> {
    if s.handoffs_committed >= p.max_handoffs_per_session {
        return Some(FallbackReason::Cap);
    }
    let within = p.loop_guard.within_turns as u64;
    let recent = s
        .unproductive_commits
        .iter()
        .filter(|&&t| s.turn.saturating_sub(t) < within)
        .count();
    if recent >= p.loop_guard.max_handoffs_without_progress as usize {
        return Some(FallbackReason::Loop);
    }
    None
}

fn arm_fallback(
    s: &mut PolicyState,
    p: &PolicyParams,
    reason: FallbackReason,
    fx: &mut Vec<PolicyEffect>,
) {
    s.phase = Phase::FallbackArmed;
    s.fallback = Some(reason);
    s.fallback_turns = 0;
    s.soft_latched = true;
    fx.push(event(
        "fallback_armed",
        json!({
            "reason": reason.as_str(),
            "tokens": s.tokens,
            "floor": s.floor,
            "handoffsCommitted": s.handoffs_committed,
            "maxHandoffsPerSession": p.max_handoffs_per_session,
        }),
    ));
}

fn on_usage(s: &mut PolicyState, p: &PolicyParams, fx: &mut Vec<PolicyEffect>) {
    let Some(t) = s.tokens else { return };
    if matches!(
        s.phase,
        Phase::Compacting | Phase::HandoffPendingCommit | Phase::FallbackArmed
    ) {
        return;
    }
    let th = p.thresholds;
    let progress_ok = s
        .floor
        .map(|f| t.saturating_sub(f) >= th.min_progress)
        .unwrap_or(false);
    if progress_ok && t >= th.hard {
        fx.push(event(
            "threshold_crossed",
            json!({"threshold": "hard", "tokens": t, "floor": s.floor, "limit": th.hard}),
        ));
        let reason = guard_trip(s, p).unwrap_or(FallbackReason::Hard);
        arm_fallback(s, p, reason, fx);
    } else if progress_ok && t >= th.handoff {
        if s.phase != Phase::HandoffRequired {
            fx.push(event(
                "threshold_crossed",
                json!({"threshold": "handoff", "tokens": t, "floor": s.floor, "limit": th.handoff}),
            ));
            s.soft_latched = true;
            match guard_trip(s, p) {
                Some(reason) => arm_fallback(s, p, reason, fx),
                None => s.phase = Phase::HandoffRequired,
            }
        }
    } else if t >= th.soft {
        if s.phase == Phase::HandoffRequired {
            s.phase = Phase::SoftNotified;
        }
        if !s.soft_latched {
            s.soft_latched = true;
            s.phase = Phase::SoftNotified;
            fx.push(event(
                "threshold_crossed",
                json!({"threshold": "soft", "tokens": t, "floor": s.floor, "limit": th.soft}),
            ));
            fx.push(PolicyEffect::Notify {
                level: NotifyLevel::Info,
                text: render_soft_advisory(t, &th),
            });
        }
    } else {
        s.soft_latched = false;
        s.phase = Phase::Idle;
    }
}

/// Why a non-handoff tool is blocked now, and whether the run should end after the batch.
fn block_reason(s: &PolicyState, p: &PolicyParams) -> Option<(String, bool)> {
    match s.phase {
        Phase::HandoffRequired => Some((render_block_handoff(s.tokens, &p.thresholds), false)),
        Phase::HandoffPendingCommit => Some((render_block_pending(), false)),
        Phase::FallbackArmed => {
            let reason = s.fallback.unwrap_or(FallbackReason::Hard);
            if p.relaunch {
                // With a wrapper the run has to end for the relaunch: at the hard limit after
                // the turn in which a handoff could still be written.
                let terminate = reason != FallbackReason::Hard || s.fallback_turns >= 2;
                return Some((
                    render_block_fallback_relaunch(reason, s.tokens, p),
                    terminate,
                ));
            }
            // After the cap or the loop guard the user decides: the run ends after this batch.
            let terminate = reason != FallbackReason::Hard;
            Some((render_block_fallback(reason, s.tokens, p), terminate))
        }
        // The reset this policy asked for is not installed yet: nothing else may run before it.
        Phase::Compacting => Some((render_block_resetting(), true)),
        _ => None,
    }
}

/// What the policy's blocks leave of the notes tools now (the same phases as `block_reason`):
/// `None` when nothing is blocked, else what the borrowed turn's steer may ask for.
pub fn notes_access(s: &PolicyState) -> Option<crate::render::BudgetSteer> {
    use crate::render::BudgetSteer;
    match s.phase {
        Phase::Idle | Phase::SoftNotified => None,
        Phase::HandoffRequired => Some(BudgetSteer::HandoffOnly),
        Phase::FallbackArmed
            if s.fallback.unwrap_or(FallbackReason::Hard) == FallbackReason::Hard =>
        {
            Some(BudgetSteer::HandoffOnly)
        }
        Phase::FallbackArmed | Phase::Compacting => Some(BudgetSteer::Closed),
        Phase::HandoffPendingCommit => Some(BudgetSteer::HandoffWritten),
    }
}

fn commit_pending(s: &mut PolicyState, fx: &mut Vec<PolicyEffect>) {
    let Some(pending) = s.pending.take() else {
        return;
    };
    s.phase = Phase::Compacting;
    s.committing = Some(pending.kind);
    fx.push(event(
        "handoff_committed",
        json!({"source": pending.kind.as_str(), "kind": pending.kind.as_str(), "path": pending.path, "tokens": s.tokens}),
    ));
    // An idle commit is the scheduler's idle reset (source "idle"), served at this boundary.
    let idle = pending.kind == CommitKind::Idle;
    fx.push(PolicyEffect::RequestReset {
        source: if idle {
            ResetSource::Idle
        } else {
            ResetSource::Handoff
        },
        kind: pending.kind,
        handoff_path: Some(pending.path),
        continue_run: true,
        at_turn_end: idle,
        note: None,
    });
}

/// The mechanical reset of an armed fallback. `at_turn_end`: the model kept calling (blocked)
/// tools, so the reset is installed at this turn's end and, at the hard limit, the work continues
/// in the new window; at the settle point the model stopped by itself, so nothing continues (a
/// finished answer is not continued with a made-up task).
fn forced_reset(
    s: &mut PolicyState,
    p: &PolicyParams,
    at_turn_end: bool,
    fx: &mut Vec<PolicyEffect>,
) {
    let reason = s.fallback.unwrap_or(FallbackReason::Hard);
    let kind = if reason == FallbackReason::Hard {
        CommitKind::ForcedHard
    } else {
        CommitKind::ForcedGuard
    };
    s.phase = Phase::Compacting;
    s.committing = Some(kind);
    s.pending = None;
    // At the hard limit a run that was still working continues by itself; after the cap or the
    // loop guard the user decides.
    let continue_run = at_turn_end && reason == FallbackReason::Hard;
    fx.push(event(
        "forced_reset",
        json!({"reason": reason.as_str(), "tokens": s.tokens, "atTurnEnd": at_turn_end, "continues": continue_run}),
    ));
    fx.push(PolicyEffect::RequestReset {
        source: ResetSource::Forced,
        kind,
        handoff_path: None,
        continue_run,
        at_turn_end,
        note: Some(render_forced_reset_note(reason, p)),
    });
}

/// Idle-input recovery: new input after at least `idleMinutes` without agent activity, with a
/// stored handoff still valid and a window larger than `keepRecentTokens`, resets the window with
/// that handoff before the input runs. The reset is an idle commit (never counted) and continues
/// nothing: the user's input is the next request of the new window.
///
/// Not while a reset or a commit is already under way, nor when the cap, the loop guard or a
/// compaction failure armed the fallback (a handoff cannot bypass those); at the hard limit a
/// valid handoff still commits, so it resets there too. An unknown idle time or window size never
/// resets.
fn idle_input_reset(
    s: &mut PolicyState,
    p: &PolicyParams,
    idle_ms: Option<u64>,
    stored: Option<&str>,
    fx: &mut Vec<PolicyEffect>,
) {
    let phase_ok = match s.phase {
        Phase::Idle | Phase::SoftNotified | Phase::HandoffRequired => true,
        Phase::FallbackArmed => s.fallback == Some(FallbackReason::Hard),
        Phase::HandoffPendingCommit | Phase::Compacting => false,
    };
    let (Some(path), Some(idle), Some(tokens)) = (stored, idle_ms, s.tokens) else {
        return;
    };
    if !phase_ok || idle < p.idle_ms || tokens <= p.keep_recent_tokens {
        return;
    }
    s.phase = Phase::Compacting;
    s.committing = Some(CommitKind::Idle);
    s.pending = None;
    fx.push(event(
        "idle_input_reset",
        json!({
            "idleMs": idle,
            "idleMinutesMs": p.idle_ms,
            "tokens": tokens,
            "keepRecentTokens": p.keep_recent_tokens,
            "path": path,
        }),
    ));
    fx.push(PolicyEffect::RequestReset {
        source: ResetSource::IdleInput,
        kind: CommitKind::Idle,
        handoff_path: Some(path.to_string()),
        continue_run: false,
        at_turn_end: false,
        note: None,
    });
}

/// The enforce transition: a pure function of the previous state, the parameters and one input.
pub fn step(
    state: &PolicyState,
    params: &PolicyParams,
    input: &PolicyInput,
) -> (PolicyState, Vec<PolicyEffect>) {
    let mut s = state.clone();
    let mut fx = Vec::new();
    measure(&mut s, input);
    match input {
        PolicyInput::BeforeAgentStart => {
            s.settle_continued = false;
            s.idle_requested = false;
        }
        PolicyInput::Usage { .. } => on_usage(&mut s, params, &mut fx),
        PolicyInput::ToolCall { id, name } => {
            if name != HANDOFF_TOOL {
                if let Some((reason, terminate)) = block_reason(&s, params) {
                    s.blocked_calls.push(id.clone());
                    fx.push(event(
                        "tool_blocked",
                        json!({"tool": name, "phase": s.phase.as_str(), "tokens": s.tokens}),
                    ));
                    fx.push(PolicyEffect::Block { reason, terminate });
                }
            }
        }
        PolicyInput::HandoffWritten { path } => match (s.phase, s.fallback) {
            (Phase::Compacting, _) => fx.push(event(
                "handoff_ignored",
                json!({"path": path, "why": "reset already in progress"}),
            )),
            (Phase::FallbackArmed, Some(r)) if r != FallbackReason::Hard => fx.push(event(
                "handoff_ignored",
                json!({"path": path, "why": format!("{} fallback: a handoff cannot bypass it", r.as_str())}),
            )),
            (phase, _) => {
                let kind = match phase {
                    Phase::HandoffRequired => CommitKind::Budget,
                    Phase::FallbackArmed => CommitKind::Hard,
                    Phase::Idle | Phase::SoftNotified if s.idle_requested => CommitKind::Idle,
                    Phase::HandoffPendingCommit => s
                        .pending
                        .as_ref()
                        .map(|p| p.kind)
                        .unwrap_or(CommitKind::Voluntary),
                    _ => CommitKind::Voluntary,
                };
                s.pending = Some(PendingHandoff {
                    path: path.clone(),
                    kind,
                });
                s.phase = Phase::HandoffPendingCommit;
                fx.push(event(
                    "handoff_written",
                    json!({"path": path, "kind": kind.as_str(), "tokens": s.tokens}),
                ));
            }
        },
        PolicyInput::ToolFinished { id, name, success } => {
            if name != HANDOFF_TOOL && !s.blocked_calls.contains(id) {
                if *success {
                    s.unproductive_commits.clear();
                }
                if s.phase == Phase::HandoffPendingCommit {
                    if let Some(p) = s.pending.take() {
                        s.phase = match p.kind {
                            CommitKind::Budget => Phase::HandoffRequired,
                            CommitKind::Hard => Phase::FallbackArmed,
                            _ if s.soft_latched => Phase::SoftNotified,
                            _ => Phase::Idle,
                        };
                        fx.push(event(
                            "handoff_invalidated",
                            json!({"path": p.path, "tool": name, "kind": p.kind.as_str()}),
                        ));
                    }
                }
            }
        }
        PolicyInput::TurnEnd { continues } => {
            s.blocked_calls.clear();
            match s.phase {
                Phase::HandoffPendingCommit => commit_pending(&mut s, &mut fx),
                // A turn that stops is left to the settle point (ask once, then reset).
                Phase::FallbackArmed if *continues => {
                    s.fallback_turns += 1;
                    // The crossing turn plus one full turn to write a handoff, then reset here
                    // (with a wrapper, the relaunch waits for the settle point instead).
                    if s.fallback_turns >= 2 && !params.relaunch {
                        forced_reset(&mut s, params, true, &mut fx);
                    }
                }
                _ => {}
            }
        }
        PolicyInput::BeforeSettle {
            pending_work,
            reset_due,
            stored_handoff,
        } => match s.phase {
            Phase::HandoffPendingCommit => commit_pending(&mut s, &mut fx),
            // One settle answer: the reset already due wins; a handoff request would be sent into
            // a window that is being replaced.
            Phase::HandoffRequired | Phase::FallbackArmed if *reset_due => {
                fx.push(event(
                    "settle_reset_due",
                    json!({"tokens": s.tokens, "phase": s.phase.as_str()}),
                ));
            }
            Phase::HandoffRequired if !s.settle_continued => {
                s.settle_continued = true;
                fx.push(event(
                    "settle_continuation",
                    json!({"tokens": s.tokens}),
                ));
                fx.push(PolicyEffect::Continue {
                    text: render_settle_continuation(s.tokens, &params.thresholds),
                });
            }
            // At the hard limit a handoff can still commit: ask for it once per run.
            Phase::FallbackArmed
                if s.fallback == Some(FallbackReason::Hard) && !s.settle_continued =>
            {
                s.settle_continued = true;
                fx.push(event(
                    "settle_continuation",
                    json!({"tokens": s.tokens, "fallback": "hard"}),
                ));
                fx.push(PolicyEffect::Continue {
                    text: if params.relaunch {
                        render_hard_settle_continuation_relaunch(s.tokens, &params.thresholds)
                    } else {
                        render_hard_settle_continuation(s.tokens, &params.thresholds)
                    },
                });
            }
            // With an owned wrapper: a fresh process instead of a mechanical reset.
            Phase::FallbackArmed if params.relaunch => {
                let reason = s.fallback.unwrap_or(FallbackReason::Hard);
                s.settle_continued = true;
                fx.push(event(
                    "fallback_relaunch",
                    json!({"reason": reason.as_str(), "tokens": s.tokens}),
                ));
                fx.push(PolicyEffect::Relaunch { reason });
            }
            Phase::FallbackArmed => forced_reset(&mut s, params, false, &mut fx),
            // The last actionable boundary before the session waits: with a large context and
            // work still pending, ask once for a handoff while the cache is warm.
            Phase::Idle | Phase::SoftNotified
                if *pending_work
                    && !*reset_due
                    && !*stored_handoff
                    && !s.idle_requested
                    && !s.settle_continued
                    && s.tokens.is_some_and(|t| t >= params.idle_min_tokens) =>
            {
                // One handoff request per external run, whichever asks first.
                s.idle_requested = true;
                s.settle_continued = true;
                fx.push(event(
                    "idle_handoff_requested",
                    json!({
                        "tokens": s.tokens,
                        "idleMinTokens": params.idle_min_tokens,
                        "requiresHandoff": s.pending.is_none(),
                    }),
                ));
                fx.push(PolicyEffect::Continue {
                    text: render_idle_continuation(s.tokens, params.idle_min_tokens),
                });
            }
            _ => {}
        },
        PolicyInput::ExternalInput {
            idle_ms,
            stored_handoff,
        } => idle_input_reset(&mut s, params, *idle_ms, stored_handoff.as_deref(), &mut fx),
        PolicyInput::ResetDropped => {
            if s.phase == Phase::Compacting {
                let kind = s.committing.take();
                s.pending = None;
                s.phase = match kind {
                    Some(CommitKind::Budget) => Phase::HandoffRequired,
                    Some(CommitKind::Hard | CommitKind::ForcedHard | CommitKind::ForcedGuard) => {
                        s.fallback_turns = 0;
                        if s.fallback.is_none() {
                            s.fallback = Some(FallbackReason::Hard);
                        }
                        Phase::FallbackArmed
                    }
                    _ if s.soft_latched => Phase::SoftNotified,
                    _ => Phase::Idle,
                };
                fx.push(event(
                    "reset_dropped",
                    json!({"kind": kind.map(|k| k.as_str()), "phase": s.phase.as_str()}),
                ));
            }
        }
        PolicyInput::CompactionFailed => {
            s.committing = None;
            s.pending = None;
            arm_fallback(&mut s, params, FallbackReason::CompactionFailure, &mut fx);
        }
        PolicyInput::ResetApplied => {
            if let Some(kind) = s.committing.take() {
                if kind.counts() {
                    s.handoffs_committed += 1;
                    s.unproductive_commits.push(s.turn);
                }
            }
            s.phase = Phase::Idle;
            s.soft_latched = false;
            s.pending = None;
            s.fallback = None;
            s.fallback_turns = 0;
            s.idle_requested = false;
            s.blocked_calls.clear();
            fx.push(event(
                "reset_applied",
                json!({"handoffsCommitted": s.handoffs_committed}),
            ));
        }
    }
    (s, fx)
}

/// The state rebuilt from a branch on which Relay gave up resetting the current window: the
/// compaction-failure fallback is armed, as [`PolicyInput::CompactionFailed`] left it (no event:
/// it was logged when it happened).
pub fn armed_by_compaction_failure(state: PolicyState) -> PolicyState {
    PolicyState {
        phase: Phase::FallbackArmed,
        fallback: Some(FallbackReason::CompactionFailure),
        fallback_turns: 0,
        soft_latched: true,
        pending: None,
        committing: None,
        ..state
    }
}

/// A mode change disarms the fallback a compaction failure armed (the user changed the
/// situation; Relay's next reset is tried afresh). Other fallbacks stay.
pub fn disarm_compaction_failure(mut state: PolicyState) -> PolicyState {
    disarm_compaction_failure_in(&mut state);
    state
}

fn disarm_compaction_failure_in(s: &mut PolicyState) {
    if s.phase == Phase::FallbackArmed && s.fallback == Some(FallbackReason::CompactionFailure) {
        s.phase = Phase::Idle;
        s.fallback = None;
        s.fallback_turns = 0;
        s.soft_latched = false;
    }
}

/// The transition under a mode.
///
/// - **off**: only measurements (tokens, floor, turns) are updated; no effects at all.
/// - **observe**: the state becomes a projection (`projected: true`); [`step`] runs on it and every
///   effect is returned as its `would_*` event ([`PolicyEffect::to_would`]), 1:1. A would-be reset
///   is applied to the projection at once (as the adapter would under enforce), its effects also
///   converted, so the preview keeps going.
/// - **enforce**: [`step`] itself. A projected state is discarded first: phase, latches and
///   preview-only commits go; measurements and the actual commit counters stay.
pub fn step_mode(
    mode: Mode,
    state: &PolicyState,
    params: &PolicyParams,
    input: &PolicyInput,
) -> (PolicyState, Vec<PolicyEffect>) {
    match mode {
        Mode::Off => {
            let mut s = leave_projection(state);
            disarm_compaction_failure_in(&mut s);
            measure(&mut s, input);
            if matches!(input, PolicyInput::ResetApplied) {
                s.phase = Phase::Idle;
                s.soft_latched = false;
                s.pending = None;
                s.committing = None;
                s.fallback = None;
            }
            (s, Vec::new())
        }
        Mode::Observe => {
            let mut base = state.clone();
            if !base.projected {
                // Entering observe from enforce: a mode change disarms a compaction failure.
                disarm_compaction_failure_in(&mut base);
                base.projected = true;
                base.actual_commits =
                    Some((base.handoffs_committed, base.unproductive_commits.clone()));
            }
            let (mut s, fx) = step(&base, params, input);
            let mut out: Vec<PolicyEffect> = fx.iter().map(PolicyEffect::to_would).collect();
            if fx
                .iter()
                .any(|e| matches!(e, PolicyEffect::RequestReset { .. }))
            {
                let (s2, fx2) = step(&s, params, &PolicyInput::ResetApplied);
                out.extend(fx2.iter().map(PolicyEffect::to_would));
                s = s2;
                s.preview_window = true;
            }
            (s, out)
        }
        Mode::Enforce => step(&leave_projection(state), params, input),
    }
}

/// Drop an observe projection, keeping measurements and actual commit counters.
fn leave_projection(state: &PolicyState) -> PolicyState {
    if !state.projected {
        return state.clone();
    }
    let (handoffs_committed, unproductive_commits) =
        state.actual_commits.clone().unwrap_or((0, Vec::new()));
    PolicyState {
        tokens: state.tokens,
        floor: state.floor,
        awaiting_floor: state.awaiting_floor,
        turn: state.turn,
        settle_continued: state.settle_continued,
        handoffs_committed,
        unproductive_commits,
        ..PolicyState::default()
    }
}

/// The policy part of `status/<sessionId>.json`: phase, projection flag, tokens, floor, thresholds,
/// counters and modes. The caller adds cwd, model, role, window id and the last handoff.
pub fn status_fields(state: &PolicyState, params: &PolicyParams, mode: &EffectiveMode) -> Value {
    let action = match state.phase {
        Phase::HandoffRequired => "blocking tools until a handoff",
        Phase::HandoffPendingCommit => "committing the handoff at turn end",
        Phase::Compacting => "resetting the context",
        Phase::FallbackArmed => "fallback armed",
        Phase::SoftNotified => "soft advisory shown",
        Phase::Idle => "none",
    };
    json!({
        "phase": state.phase.as_str(),
        "action": action,
        "projected": state.projected,
        "tokens": state.tokens,
        "floor": state.floor,
        "thresholds": params.thresholds,
        "handoffsCommitted": state.actual_commits.as_ref().map(|a| a.0).unwrap_or(state.handoffs_committed),
        "maxHandoffsPerSession": params.max_handoffs_per_session,
        "fallback": state.fallback.map(FallbackReason::as_str),
        "configuredMode": mode.configured.as_str(),
        "effectiveMode": mode.effective.as_str(),
        "modeReason": mode.reason,
    })
}

fn fmt_tokens(t: Option<u64>) -> String {
    match t {
        Some(t) => t.to_string(),
        None => "an unknown number of".to_string(),
    }
}

/// UI advisory at the soft threshold (one per crossing).
pub fn render_soft_advisory(tokens: u64, th: &Thresholds) -> String {
    format!(
        "Context budget: {tokens} tokens, past the soft threshold of {}. Finish the current step, then \
         hand off at a natural boundary with context_handoff. From {} tokens every other tool is blocked \
         until a handoff is written.",
        th.soft, th.handoff
    )
}

/// `tool_call` block reason while a handoff is required.
pub fn render_block_handoff(tokens: Option<u64>, th: &Thresholds) -> String {
    format!(
        "Blocked by the context budget: the context holds {} tokens (handoff threshold {}). Only \
         context_handoff is allowed now. Call it with goal, next_step and facts (verified state), plus \
         user_constraints verbatim, decisions, open_items, hypotheses and files_to_read where they \
         apply. The context then resets at the end of this turn and work continues automatically from \
         your handoff.",
        fmt_tokens(tokens),
        th.handoff
    )
}

/// `tool_call` block reason while a written handoff waits for the turn's end.
pub fn render_block_pending() -> String {
    "Blocked: a handoff was written and the context resets at the end of this turn. Do not call \
     other tools now; end the turn and continue from the handoff's next step in the new window."
        .to_string()
}

/// `tool_call` block reason while the fallback is armed.
pub fn render_block_fallback(
    reason: FallbackReason,
    tokens: Option<u64>,
    p: &PolicyParams,
) -> String {
    match reason {
        FallbackReason::Hard => format!(
            "Blocked: the context holds {} tokens, at or past the hard limit of {}. Only context_handoff \
             is allowed: call it now (goal, next_step, facts, user_constraints verbatim) and the next \
             window continues from it. Without a handoff the context is reset mechanically and \
             nothing is carried over but your notes: at the end of your next turn if you keep \
             calling tools, or when you stop.",
            fmt_tokens(tokens),
            p.thresholds.hard
        ),
        FallbackReason::Cap => format!(
            "Blocked: this session already used its {} automatic handoffs (maxHandoffsPerSession). \
             Do not call more tools and do not hand off again. End your turn now: the context will be \
             reset mechanically and the user decides how to continue.",
            p.max_handoffs_per_session
        ),
        FallbackReason::Loop => format!(
            "Blocked: {} handoffs within {} turns made no progress (no successful tool other than \
             context_handoff). Do not call more tools and do not hand off again. End your turn now: \
             the context will be reset mechanically and the user decides how to continue.",
            p.loop_guard.max_handoffs_without_progress, p.loop_guard.within_turns
        ),
        FallbackReason::CompactionFailure => "Blocked: Relay could not reset this context window: \
             its reset failed three times, or failed in a way a retry cannot fix. Do not call more tools and do not hand off again. End \
             your turn now: the context will be reset mechanically and the user decides how to \
             continue."
            .to_string(),
    }
}

/// `tool_call` block reason while the fallback is armed and this runtime owns a pi-session
/// wrapper: the process ends at the settle point and a fresh one continues from the latest
/// handoff file.
pub fn render_block_fallback_relaunch(
    reason: FallbackReason,
    tokens: Option<u64>,
    p: &PolicyParams,
) -> String {
    let restart = "Pi then restarts in a fresh process (pi-session) that continues from the \
                   latest handoff file; the conversation is not carried over.";
    match reason {
        FallbackReason::Hard => format!(
            "Blocked: the context holds {} tokens, at or past the hard limit of {}. Only \
             context_handoff is allowed: call it now (goal, next_step, facts, user_constraints \
             verbatim) and the next window continues from it in this process. Without a \
             handoff, end your turn: {restart}",
            fmt_tokens(tokens),
            p.thresholds.hard
        ),
        other => {
            let why = match other {
                FallbackReason::Cap => format!(
                    "this session already used its {} automatic handoffs (maxHandoffsPerSession)",
                    p.max_handoffs_per_session
                ),
                FallbackReason::Loop => format!(
                    "{} handoffs within {} turns made no progress (no successful tool other \
                     than context_handoff)",
                    p.loop_guard.max_handoffs_without_progress, p.loop_guard.within_turns
                ),
                _ => "Relay could not reset this context window: its reset failed three times"
                    .to_string(),
            };
            format!(
                "Blocked: {why}. Do not call other tools. If the state changed since your last \
                 handoff, record it with one context_handoff call; then end your turn now: \
                 {restart}"
            )
        }
    }
}

/// `tool_call` block reason while the reset this policy asked for waits to be installed.
pub fn render_block_resetting() -> String {
    "Blocked: this context window is being reset. Do not call any tool now; end your turn. \
     The new window tells you how to continue."
        .to_string()
}

/// Hidden continuation when the agent tries to stop past the hard limit without a handoff (once
/// per run).
pub fn render_hard_settle_continuation(tokens: Option<u64>, th: &Thresholds) -> String {
    format!(
        "The context holds {} tokens, at or past the hard limit of {}, and no handoff was written. \
         Call context_handoff now with goal, next_step and facts (user_constraints verbatim) so the \
         next window can continue from it. If you do not, the context is reset mechanically when \
         you stop, without a handoff; other tools stay blocked until then.",
        fmt_tokens(tokens),
        th.hard
    )
}

/// [`render_hard_settle_continuation`] when this runtime owns a pi-session wrapper.
pub fn render_hard_settle_continuation_relaunch(tokens: Option<u64>, th: &Thresholds) -> String {
    format!(
        "The context holds {} tokens, at or past the hard limit of {}, and no handoff was written. \
         Call context_handoff now with goal, next_step and facts (user_constraints verbatim) so the \
         next window can continue from it in this process. If you do not, Pi restarts in a fresh \
         process when you stop, continuing from the latest handoff file; other tools stay blocked \
         until then.",
        fmt_tokens(tokens),
        th.hard
    )
}

/// Hidden continuation when the agent tries to stop while a handoff is required (once per run).
pub fn render_settle_continuation(tokens: Option<u64>, th: &Thresholds) -> String {
    format!(
        "The context holds {} tokens, past the handoff threshold of {}, and no handoff was written. \
         Call context_handoff now with goal, next_step and facts (user_constraints verbatim). Other \
         tools stay blocked until then; after the handoff the context resets and work continues from \
         it.",
        fmt_tokens(tokens),
        th.handoff
    )
}

/// Hidden continuation at the last settle point before the session waits for pending work with a
/// large context (once per external run): a handoff now, while the prompt cache is warm.
pub fn render_idle_continuation(tokens: Option<u64>, idle_min_tokens: u64) -> String {
    format!(
        "Before you stop: the context holds {} tokens (idle reset from {idle_min_tokens}) and work \
         is still pending, so the session would wait with a large context. Call context_handoff \
         now with goal, next_step and facts (user_constraints verbatim), written so the pending \
         work can be picked up from it. Other tools are blocked once it is written; the context \
         then resets and work continues from your handoff in this session.",
        fmt_tokens(tokens)
    )
}

/// Boot-block note for the window after a forced mechanical reset.
pub fn render_forced_reset_note(reason: FallbackReason, p: &PolicyParams) -> String {
    let why = match reason {
        FallbackReason::Hard => format!(
            "the context reached the hard limit of {} tokens without a usable handoff",
            p.thresholds.hard
        ),
        FallbackReason::Cap => format!(
            "this session reached its limit of {} automatic handoffs",
            p.max_handoffs_per_session
        ),
        FallbackReason::Loop => format!(
            "{} handoffs within {} turns made no progress",
            p.loop_guard.max_handoffs_without_progress, p.loop_guard.within_turns
        ),
        FallbackReason::CompactionFailure => {
            "Relay's reset of the window failed three times, or failed in a way a retry cannot fix \
             (compaction failure)"
                .to_string()
        }
    };
    format!(
        "The previous context window was reset mechanically because {why}. No handoff was \
         written, so nothing was carried over: the earlier conversation is gone from this window \
         but remains in the history tools. Re-establish the state from your notes, the history \
         tools, the workspace files and git (status, log, diff) before acting, and do not ask the \
         user to restate the task unless it cannot be recovered."
    )
}

/// Footer text when configured and effective modes differ, e.g.
/// `relay budget: configured enforce, effective observe (cwd restriction)`.
pub fn render_mode_footer(mode: &EffectiveMode) -> Option<String> {
    if mode.configured == mode.effective {
        return None;
    }
    Some(format!(
        "relay budget: configured {}, effective {}{}",
        mode.configured.as_str(),
        mode.effective.as_str(),
        mode.reason
            .as_ref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests;
