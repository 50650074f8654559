//! What the scheduler reads and answers: the reset sources, Pi's reasons and outcomes, the
//! [`SchedInput`]s it is fed and the [`SchedOutput`]s it returns (re-exported by the scheduler).

use serde::Serialize;

/// Identity of one reset attempt. Carried on the compaction entry as `details.attempt`.
pub type AttemptId = u64;

/// Why a reset happens. Decides the boot block's extras and the telemetry tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResetSource {
    /// The model called `new_context`.
    NewContext,
    /// The second phase of the two-phase automatic fallback (after a borrowed note-taking turn).
    Fallback,
    /// A handoff was written and commits at this `turn_end`.
    Handoff,
    /// The budget policy forces a reset.
    Forced,
    /// The budget policy's idle reset: an idle handoff's commit, or the idle-input recovery's
    /// reset with a stored handoff.
    Idle,
    /// The user's `/compact`.
    Manual,
    /// Pi's overflow recovery.
    Overflow,
    /// Pi's threshold check while no run is active (pre-prompt).
    Threshold,
}

impl ResetSource {
    /// Stable lower-case name, for status and telemetry.
    pub fn as_str(self) -> &'static str {
        match self {
            ResetSource::NewContext => "new_context",
            ResetSource::Fallback => "fallback",
            ResetSource::Handoff => "handoff",
            ResetSource::Forced => "forced",
            ResetSource::Idle => "idle",
            ResetSource::Manual => "manual",
            ResetSource::Overflow => "overflow",
            ResetSource::Threshold => "threshold",
        }
    }

    /// The source a window marker records ([`ResetSource::as_str`]); `None` for one this Relay
    /// does not know (a later Relay's), which each reader handles explicitly.
    pub fn parse(name: &str) -> Option<ResetSource> {
        ResetSource::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Every source.
    pub const ALL: [ResetSource; 8] = [
        ResetSource::NewContext,
        ResetSource::Fallback,
        ResetSource::Handoff,
        ResetSource::Forced,
        ResetSource::Idle,
        ResetSource::Manual,
        ResetSource::Overflow,
        ResetSource::Threshold,
    ];
}

/// `session_before_compact`'s `reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactReason {
    Manual,
    Threshold,
    Overflow,
}

/// A boundary's `outcome`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Completed,
    Aborted,
    Error,
}

/// One observation from Pi (or from Relay's own tools and policy) fed to [`Scheduler::handle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedInput {
    /// The `new_context` tool ran. Prefer [`Scheduler::new_context`], which also answers the tool.
    NewContextCalled,
    /// Policy: a handoff was written in this turn and must commit at this turn's `turn_end`.
    HandoffCommitReady,
    /// Policy: the budget fallback or idle reset wants a reset. `at_turn_end`: serve it at this
    /// turn's `turn_end` (the policy asks from its own `turn_end` step); otherwise at the next
    /// completed settle point.
    ForcedResetRequested {
        source: ResetSource,
        at_turn_end: bool,
    },
    /// `session_before_compact`. `idle` is the adapter's view; see the module docs on idle detection.
    CompactHook { reason: CompactReason, idle: bool },
    /// Policy: idle-input recovery wants the window reset before new input runs. Answered with
    /// [`SchedOutput::Compact`] (the adapter starts Pi's compaction, whose `manual` hook this
    /// scheduler then answers with the `Idle` reset) when no run is active and nothing else is
    /// pending; otherwise ignored.
    InputResetRequested,
    /// The compaction started for [`SchedInput::InputResetRequested`] failed before its hook (Pi's
    /// "Nothing to compact", "Already compacted", …): the request is over.
    InputResetFailed { attempt: AttemptId },
    /// `before_agent_start`: a genuinely new run starts (user prompt or idle-triggered message).
    BeforeAgentStart,
    /// `turn_end`. `has_queued_user_messages`: a steer or follow-up from the user is waiting.
    /// `completed`: Pi's outcome of the turn is `completed` (not aborted by the user, no error).
    /// `steer_delivered`: the current window's branch holds Relay's note-taking steer, so a
    /// request of this window carried it (Pi appends a queued message as it puts it into a
    /// request).
    TurnEnd {
        has_queued_user_messages: bool,
        completed: bool,
        steer_delivered: bool,
    },
    /// `agent_end` (may happen several times per run).
    AgentEnd,
    /// `agent_before_settle` (Pi skips it for aborted runs).
    BeforeSettle {
        outcome: Outcome,
        has_queued_user_messages: bool,
    },
    /// `agent_settled`.
    Settled { aborted: bool },
    /// The compaction entry of that attempt reached the branch.
    ResetApplied { attempt: AttemptId },
    /// Pi rejected the draft or the hook's result was not applied.
    ResetRejected { attempt: AttemptId },
    /// Shutdown, session start or switch, tree navigation: outstanding work belongs to another world.
    Invalidate,
    /// `/relay on` / `/relay off`.
    SetEnabled(bool),
}

/// What the adapter must do in the hook that delivered the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SchedOutput {
    /// Return a reset from the current hook (boundary draft from `turn_end`/`agent_before_settle`,
    /// `{compaction}` from `session_before_compact`). `continuation`: include the hidden
    /// continuation and `continue: true`. `restate_dropped_request`: the boot block must restate the
    /// user request Pi dropped (overflow).
    Reset {
        attempt: AttemptId,
        source: ResetSource,
        continuation: bool,
        restate_dropped_request: bool,
    },
    /// Return `{cancel: true}` from `session_before_compact`.
    CancelCompaction,
    /// Start Pi's compaction now and wait for it before the input goes on (`ctx.compact()` from
    /// `input`); its `manual` hook gets the reset with this `attempt` id.
    Compact { attempt: AttemptId },
    /// Send the note-taking steer (`triggerTurn: true`, steers into this run): the borrowed turn.
    SteerNotes,
    /// Return nothing from `session_before_compact`: Pi's own compaction applies (Relay is off).
    PassThrough,
}
