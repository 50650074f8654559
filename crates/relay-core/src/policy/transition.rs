//! The handoff policy transitions: the measurements every mode applies, the threshold crossings,
//! the tool blocks, the handoff commit, the forced and idle resets, and [`step`] / [`step_mode`]
//! that compose them.

use super::{
    event, CommitKind, FallbackReason, Floor, Mode, NotifyLevel, PendingHandoff, Phase,
    PolicyEffect, PolicyEvent, PolicyInput, PolicyParams, PolicyReset, PolicyState, Threshold,
};
use crate::render::policy::*;
use crate::tool_name::ToolName;

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
    fx.push(event(PolicyEvent::FallbackArmed {
        reason: reason.as_str().into(),
        tokens: s.tokens,
        floor: s.floor,
        handoffs_committed: s.handoffs_committed,
        max_handoffs_per_session: p.max_handoffs_per_session,
    }));
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
        fx.push(event(PolicyEvent::ThresholdCrossed {
            threshold: Threshold::Hard,
            tokens: t,
            floor: s.floor,
            limit: th.hard,
        }));
        let reason = guard_trip(s, p).unwrap_or(FallbackReason::Hard);
        arm_fallback(s, p, reason, fx);
    } else if progress_ok && t >= th.handoff {
        if s.phase != Phase::HandoffRequired {
            fx.push(event(PolicyEvent::ThresholdCrossed {
                threshold: Threshold::Handoff,
                tokens: t,
                floor: s.floor,
                limit: th.handoff,
            }));
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
            fx.push(event(PolicyEvent::ThresholdCrossed {
                threshold: Threshold::Soft,
                tokens: t,
                floor: s.floor,
                limit: th.soft,
            }));
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
    fx.push(event(PolicyEvent::HandoffCommitted {
        source: pending.kind,
        kind: pending.kind,
        path: pending.path.clone(),
        tokens: s.tokens,
    }));
    // An idle commit is the scheduler's idle reset (source "idle"), served at this boundary.
    let idle = pending.kind == CommitKind::Idle;
    fx.push(PolicyEffect::RequestReset {
        source: if idle {
            PolicyReset::Idle
        } else {
            PolicyReset::Handoff
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
    fx.push(event(PolicyEvent::ForcedReset {
        reason: reason.as_str().into(),
        tokens: s.tokens,
        at_turn_end,
        continues: continue_run,
    }));
    fx.push(PolicyEffect::RequestReset {
        source: PolicyReset::Forced,
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
    fx.push(event(PolicyEvent::IdleInputReset {
        idle_ms: idle,
        idle_minutes_ms: p.idle_ms,
        tokens,
        keep_recent_tokens: p.keep_recent_tokens,
        path: path.to_string(),
    }));
    fx.push(PolicyEffect::RequestReset {
        source: PolicyReset::IdleInput,
        kind: CommitKind::Idle,
        handoff_path: Some(path.to_string()),
        continue_run: false,
        at_turn_end: false,
        note: None,
    });
}

/// The enforce transition: a pure function of the previous state, the parameters and one input.
/// The measurements come first ([`measure`]), then the one step the input names.
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
        PolicyInput::ToolCall { id, name } => on_tool_call(&mut s, params, id, name, &mut fx),
        PolicyInput::HandoffWritten { path } => on_handoff_written(&mut s, path, &mut fx),
        PolicyInput::ToolFinished { id, name, success } => {
            on_tool_finished(&mut s, id, name, *success, &mut fx)
        }
        PolicyInput::TurnEnd { continues } => on_turn_end(&mut s, params, *continues, &mut fx),
        PolicyInput::BeforeSettle {
            pending_work,
            reset_due,
            stored_handoff,
        } => {
            let settle = Settle {
                pending_work: *pending_work,
                reset_due: *reset_due,
                stored_handoff: *stored_handoff,
            };
            on_before_settle(&mut s, params, settle, &mut fx)
        }
        PolicyInput::ExternalInput {
            idle_ms,
            stored_handoff,
        } => idle_input_reset(&mut s, params, *idle_ms, stored_handoff.as_deref(), &mut fx),
        PolicyInput::ResetDropped => on_reset_dropped(&mut s, &mut fx),
        PolicyInput::CompactionFailed => {
            s.committing = None;
            s.pending = None;
            arm_fallback(&mut s, params, FallbackReason::CompactionFailure, &mut fx);
        }
        PolicyInput::ResetApplied => on_reset_applied(&mut s, &mut fx),
    }
    (s, fx)
}

/// A tool call: every tool but the handoff is blocked while the phase blocks.
fn on_tool_call(
    s: &mut PolicyState,
    p: &PolicyParams,
    id: &str,
    name: &str,
    fx: &mut Vec<PolicyEffect>,
) {
    if ToolName::of(name) == ToolName::ContextHandoff {
        return;
    }
    if let Some((reason, terminate)) = block_reason(s, p) {
        s.blocked_calls.push(id.to_string());
        fx.push(event(PolicyEvent::ToolBlocked {
            tool: name.to_string(),
            phase: s.phase,
            tokens: s.tokens,
        }));
        fx.push(PolicyEffect::Block { reason, terminate });
    }
}

/// A handoff file was written: it is pending until its turn end commits it, as the kind the phase
/// asked for; ignored while a reset is under way or a fallback a handoff cannot bypass is armed.
fn on_handoff_written(s: &mut PolicyState, path: &str, fx: &mut Vec<PolicyEffect>) {
    match (s.phase, s.fallback) {
        (Phase::Compacting, _) => fx.push(event(PolicyEvent::HandoffIgnored {
            path: path.to_string(),
            why: "reset already in progress".into(),
        })),
        (Phase::FallbackArmed, Some(r)) if r != FallbackReason::Hard => {
            fx.push(event(PolicyEvent::HandoffIgnored {
                path: path.to_string(),
                why: format!("{} fallback: a handoff cannot bypass it", r.as_str()),
            }))
        }
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
                path: path.to_string(),
                kind,
            });
            s.phase = Phase::HandoffPendingCommit;
            fx.push(event(PolicyEvent::HandoffWritten {
                path: path.to_string(),
                kind,
                tokens: s.tokens,
            }));
        }
    }
}

/// Another tool finished: a success is progress for the loop guard, and any tool that ran
/// invalidates a pending handoff (the phase goes back to what asked for it).
fn on_tool_finished(
    s: &mut PolicyState,
    id: &str,
    name: &str,
    success: bool,
    fx: &mut Vec<PolicyEffect>,
) {
    if ToolName::of(name) == ToolName::ContextHandoff || s.blocked_calls.iter().any(|b| b == id) {
        return;
    }
    if success {
        s.unproductive_commits.clear();
    }
    if s.phase != Phase::HandoffPendingCommit {
        return;
    }
    if let Some(p) = s.pending.take() {
        s.phase = match p.kind {
            CommitKind::Budget => Phase::HandoffRequired,
            CommitKind::Hard => Phase::FallbackArmed,
            _ if s.soft_latched => Phase::SoftNotified,
            _ => Phase::Idle,
        };
        fx.push(event(PolicyEvent::HandoffInvalidated {
            path: p.path,
            tool: name.to_string(),
            kind: p.kind,
        }));
    }
}

/// A turn end: a pending handoff commits; an armed fallback counts the turn and, after the
/// crossing turn plus one, resets here.
fn on_turn_end(s: &mut PolicyState, p: &PolicyParams, continues: bool, fx: &mut Vec<PolicyEffect>) {
    s.blocked_calls.clear();
    match s.phase {
        Phase::HandoffPendingCommit => commit_pending(s, fx),
        // A turn that stops is left to the settle point (ask once, then reset).
        Phase::FallbackArmed if continues => {
            s.fallback_turns += 1;
            // The crossing turn plus one full turn to write a handoff, then reset here
            // (with a wrapper, the relaunch waits for the settle point instead).
            if s.fallback_turns >= 2 && !p.relaunch {
                forced_reset(s, p, true, fx);
            }
        }
        _ => {}
    }
}

/// What [`PolicyInput::BeforeSettle`] tells about the settle point.
#[derive(Clone, Copy)]
struct Settle {
    pending_work: bool,
    reset_due: bool,
    stored_handoff: bool,
}

/// The settle point's one answer: commit a pending handoff, leave it to a reset already due, ask
/// once for a handoff, relaunch or reset mechanically under an armed fallback, or ask once for an
/// idle handoff while work is pending.
fn on_before_settle(s: &mut PolicyState, p: &PolicyParams, at: Settle, fx: &mut Vec<PolicyEffect>) {
    match s.phase {
        Phase::HandoffPendingCommit => commit_pending(s, fx),
        // One settle answer: the reset already due wins; a handoff request would be sent into
        // a window that is being replaced.
        Phase::HandoffRequired | Phase::FallbackArmed if at.reset_due => {
            fx.push(event(PolicyEvent::SettleResetDue {
                tokens: s.tokens,
                phase: s.phase,
            }));
        }
        Phase::HandoffRequired if !s.settle_continued => {
            s.settle_continued = true;
            fx.push(event(PolicyEvent::SettleContinuation {
                tokens: s.tokens,
                fallback: None,
            }));
            fx.push(PolicyEffect::Continue {
                text: render_settle_continuation(s.tokens, &p.thresholds),
                idle: false,
            });
        }
        // At the hard limit a handoff can still commit: ask for it once per run.
        Phase::FallbackArmed if s.fallback == Some(FallbackReason::Hard) && !s.settle_continued => {
            s.settle_continued = true;
            fx.push(event(PolicyEvent::SettleContinuation {
                tokens: s.tokens,
                fallback: Some(FallbackReason::Hard.as_str().into()),
            }));
            fx.push(PolicyEffect::Continue {
                text: if p.relaunch {
                    render_hard_settle_continuation_relaunch(s.tokens, &p.thresholds)
                } else {
                    render_hard_settle_continuation(s.tokens, &p.thresholds)
                },
                idle: false,
            });
        }
        // With an owned wrapper: a fresh process instead of a mechanical reset.
        Phase::FallbackArmed if p.relaunch => {
            let reason = s.fallback.unwrap_or(FallbackReason::Hard);
            s.settle_continued = true;
            fx.push(event(PolicyEvent::FallbackRelaunch {
                reason: reason.as_str().into(),
                tokens: s.tokens,
            }));
            fx.push(PolicyEffect::Relaunch { reason });
        }
        Phase::FallbackArmed => forced_reset(s, p, false, fx),
        Phase::Idle | Phase::SoftNotified if idle_request_due(s, p, at) => {
            // One handoff request per external run, whichever asks first.
            s.idle_requested = true;
            s.settle_continued = true;
            fx.push(event(PolicyEvent::IdleHandoffRequested {
                tokens: s.tokens,
                idle_min_tokens: p.idle_min_tokens,
                requires_handoff: s.pending.is_none(),
            }));
            fx.push(PolicyEffect::Continue {
                text: render_idle_continuation(s.tokens, p.idle_min_tokens),
                idle: true,
            });
        }
        _ => {}
    }
}

/// The last actionable boundary before the session waits: with a large context and work still
/// pending, ask once for a handoff while the cache is warm.
fn idle_request_due(s: &PolicyState, p: &PolicyParams, at: Settle) -> bool {
    at.pending_work
        && !at.reset_due
        && !at.stored_handoff
        && !s.idle_requested
        && !s.settle_continued
        && s.tokens.is_some_and(|t| t >= p.idle_min_tokens)
}

/// The reset asked for was dropped: back to the phase that asked for it.
fn on_reset_dropped(s: &mut PolicyState, fx: &mut Vec<PolicyEffect>) {
    if s.phase != Phase::Compacting {
        return;
    }
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
    fx.push(event(PolicyEvent::ResetDropped {
        kind,
        phase: s.phase,
    }));
}

/// A reset was installed: a counted commit is counted, and the window starts idle.
fn on_reset_applied(s: &mut PolicyState, fx: &mut Vec<PolicyEffect>) {
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
    fx.push(event(PolicyEvent::ResetApplied {
        handoffs_committed: s.handoffs_committed,
    }));
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
