//! Table test: one row per lifecycle rule (seed 000's lifecycle table plus the scheduler rules),
//! and snapshot traces of complete lifecycles.

use super::*;
use std::fmt::Write as _;

use Allowance as A;
use CompactReason as R;
use ResetSource as S;
use SchedInput as I;
use SchedOutput as O;

/// One step of a row: feed an input and expect exactly these outputs, call the tool, or check a getter.
#[derive(Debug)]
enum Step {
    In(SchedInput, Vec<SchedOutput>),
    Tool(NewContextAnswer),
    Pending(Option<ResetSource>),
    Allow(Allowance),
    InFlight(Option<AttemptId>),
    /// The engine's verdict on overflow recovery ([`Scheduler::allow_overflow_reset`]).
    AllowOverflow(bool),
    /// The engine gives up the retry ([`Scheduler::give_up_retry`]): third failure or a cancel.
    GiveUpRetry,
}

struct Row {
    rule: &'static str,
    enabled: bool,
    steps: Vec<Step>,
}

fn row(rule: &'static str, steps: Vec<Step>) -> Row {
    Row {
        rule,
        enabled: true,
        steps,
    }
}

fn row_disabled(rule: &'static str, steps: Vec<Step>) -> Row {
    Row {
        rule,
        enabled: false,
        steps,
    }
}

fn on(input: SchedInput, outputs: Vec<SchedOutput>) -> Step {
    Step::In(input, outputs)
}

fn quiet(input: SchedInput) -> Step {
    Step::In(input, Vec::new())
}

fn tool(answer: NewContextAnswer) -> Step {
    Step::Tool(answer)
}

fn reset(attempt: AttemptId, source: ResetSource, continuation: bool) -> Vec<SchedOutput> {
    vec![O::Reset {
        attempt,
        source,
        continuation,
        restate_dropped_request: false,
    }]
}

fn reset_no_continuation(attempt: AttemptId, source: ResetSource) -> Vec<SchedOutput> {
    reset(attempt, source, false)
}

fn overflow_reset(attempt: AttemptId, source: ResetSource) -> Vec<SchedOutput> {
    vec![O::Reset {
        attempt,
        source,
        continuation: false,
        restate_dropped_request: true,
    }]
}

fn hook(reason: CompactReason, idle: bool) -> SchedInput {
    I::CompactHook { reason, idle }
}

fn settle(has_queued_user_messages: bool) -> SchedInput {
    I::BeforeSettle {
        outcome: Outcome::Completed,
        has_queued_user_messages,
    }
}

fn settle_with(outcome: Outcome) -> SchedInput {
    I::BeforeSettle {
        outcome,
        has_queued_user_messages: false,
    }
}

fn turn_end(has_queued_user_messages: bool) -> SchedInput {
    I::TurnEnd {
        has_queued_user_messages,
        completed: true,
        steer_delivered: true,
    }
}

/// A completed `turn_end` whose request did not carry the note-taking steer (still queued).
fn turn_end_before_steer() -> SchedInput {
    I::TurnEnd {
        has_queued_user_messages: false,
        completed: true,
        steer_delivered: false,
    }
}

/// A `turn_end` of a failed request (a provider error Pi may retry).
fn turn_end_failed() -> SchedInput {
    I::TurnEnd {
        has_queued_user_messages: false,
        completed: false,
        steer_delivered: true,
    }
}

fn borrow() -> Vec<SchedOutput> {
    vec![O::SteerNotes, O::CancelCompaction]
}

fn cancel() -> Vec<SchedOutput> {
    vec![O::CancelCompaction]
}

fn pass() -> Vec<SchedOutput> {
    vec![O::PassThrough]
}

const START: SchedInput = I::BeforeAgentStart;
const DONE: SchedInput = I::Settled { aborted: false };
const ABORTED: SchedInput = I::Settled { aborted: true };

fn rows() -> Vec<Row> {
    use NewContextAnswer::{AlreadyPending, Disabled, Scheduled};
    vec![
        // ----- seed 000 lifecycle table -----
        row("new_context marks an explicit request; repeated calls report already pending; one reset with continuation at the completed settle", vec![
            quiet(START),
            tool(Scheduled),
            tool(AlreadyPending),
            Step::Pending(Some(S::NewContext)),
            on(settle(false), reset(1, S::NewContext, true)),
            Step::Pending(None),
            Step::InFlight(Some(1)),
            quiet(I::ResetApplied { attempt: 1 }),
            Step::InFlight(None),
            quiet(DONE),
        ]),
        row("new_context through the input enum behaves like the tool call", vec![
            quiet(START),
            quiet(I::NewContextCalled),
            tool(AlreadyPending),
            on(settle(false), reset(1, S::NewContext, true)),
        ]),
        row("streaming automatic hook: available -> borrowed, one steer and a cancel; later hooks only cancel", vec![
            quiet(START),
            Step::Allow(A::Available),
            on(hook(R::Threshold, false), borrow()),
            Step::Allow(A::Borrowed),
            on(hook(R::Threshold, false), cancel()),
            on(hook(R::Threshold, false), cancel()),
            Step::Allow(A::Borrowed),
        ]),
        row("agent_end: borrowed -> ready; the completed settle resets (fallback) with one continuation", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            quiet(I::AgentEnd),
            Step::Allow(A::Ready),
            on(hook(R::Threshold, false), cancel()),
            Step::Allow(A::Ready),
            on(settle(false), reset(1, S::Fallback, true)),
            Step::Allow(A::Spent),
            quiet(I::ResetApplied { attempt: 1 }),
            quiet(DONE),
            Step::Allow(A::Available),
        ]),
        row("the borrowed turn is the one whose request carried the steer: a turn end before it (a user's steer delivered first, a router model's fixed request) waits, overdue or not", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            quiet(turn_end_before_steer()),
            Step::Allow(A::Borrowed),
            // A router model checks again before the next request: overdue, still waiting.
            on(hook(R::Threshold, false), cancel()),
            quiet(turn_end_before_steer()),
            Step::Pending(Some(S::Fallback)),
            on(turn_end(false), reset(1, S::Fallback, true)),
            Step::Allow(A::Spent),
        ]),
        row("a borrowed turn whose request failed and that Pi retries resets at the retried turn's end; a crossing meanwhile is overdue, never only cancelled", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            quiet(turn_end_failed()),
            quiet(I::AgentEnd),
            Step::Allow(A::Ready),
            on(hook(R::Threshold, false), cancel()),
            on(turn_end(false), reset(1, S::Fallback, true)),
            Step::Allow(A::Spent),
            quiet(I::ResetApplied { attempt: 1 }),
            Step::Allow(A::Available),
        ]),
        row("a threshold hook after agent_end borrows; the steered low-level run's agent_end makes it ready", vec![
            quiet(START),
            quiet(I::AgentEnd),
            Step::Allow(A::Available),
            on(hook(R::Threshold, false), borrow()),
            quiet(I::AgentEnd),
            Step::Allow(A::Ready),
            on(settle(false), reset(1, S::Fallback, true)),
        ]),
        row("idle automatic threshold hook resets directly, no borrowed turn, no continuation", vec![
            on(hook(R::Threshold, true), reset(1, S::Threshold, false)),
            Step::Allow(A::Available),
        ]),
        row("pre-prompt threshold hook (no run active) resets directly even when ctx.isIdle() was false", vec![
            quiet(START),
            quiet(DONE),
            on(hook(R::Threshold, false), reset(1, S::Threshold, false)),
            quiet(I::ResetApplied { attempt: 1 }),
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
        ]),
        row("manual /compact resets directly, idle or streaming", vec![
            on(hook(R::Manual, true), reset(1, S::Manual, false)),
            quiet(I::ResetApplied { attempt: 1 }),
            quiet(START),
            on(hook(R::Manual, false), reset(2, S::Manual, false)),
        ]),
        row("overflow resets at once and restates the dropped request; never borrows", vec![
            quiet(START),
            on(hook(R::Overflow, false), overflow_reset(1, S::Overflow)),
            Step::Allow(A::Available),
            quiet(I::ResetApplied { attempt: 1 }),
            on(settle(false), vec![]),
        ]),
        row("overflow refused (recovery off, or the window's one retry spent): cancel, never Pi's summarizer", vec![
            quiet(START),
            Step::AllowOverflow(false),
            on(hook(R::Overflow, false), cancel()),
            Step::InFlight(None),
            Step::Pending(None),
            Step::AllowOverflow(true),
            on(hook(R::Overflow, false), overflow_reset(1, S::Overflow)),
        ]),
        row("overflow refused keeps the requests already pending (a ready handoff still commits)", vec![
            quiet(START),
            quiet(I::HandoffCommitReady),
            Step::AllowOverflow(false),
            on(hook(R::Overflow, false), cancel()),
            Step::Pending(Some(S::Handoff)),
            on(turn_end(false), reset(1, S::Handoff, true)),
        ]),
        row_disabled("overflow refused while Relay is off still passes through to Pi", vec![
            Step::AllowOverflow(false),
            on(hook(R::Overflow, false), pass()),
        ]),
        row("overflow in a borrowed window resets at once and consumes the borrowed turn", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            on(hook(R::Overflow, false), overflow_reset(1, S::Overflow)),
            quiet(I::AgentEnd),
            on(settle(false), vec![]),
            quiet(I::ResetApplied { attempt: 1 }),
            Step::Allow(A::Available),
        ]),
        row("aborted run (agent_settled aborted) clears the explicit request and spends the borrowed allowance", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            tool(Scheduled),
            quiet(ABORTED),
            Step::Pending(None),
            Step::Allow(A::Spent),
            quiet(START),
            // a crossing in the next run does not borrow again: it is overdue and resets at the
            // run's next boundary (here the settle point)
            on(hook(R::Threshold, false), cancel()),
            Step::Pending(Some(S::Fallback)),
            quiet(I::AgentEnd),
            on(settle(false), reset(1, S::Fallback, true)),
            quiet(DONE),
            // a reset that never landed: the next prompt's pre-prompt check retries at once
            on(hook(R::Threshold, false), reset(2, S::Threshold, false)),
        ]),
        row("error outcome at agent_before_settle: no reset now; the new_context is owed and the next idle input's compaction serves it (issue 24, item 12)", vec![
            quiet(START),
            tool(Scheduled),
            on(settle_with(Outcome::Error), vec![]),
            quiet(DONE),
            Step::Pending(Some(S::NewContext)),
            tool(AlreadyPending),
            on(I::InputResetRequested, vec![O::Compact { attempt: 1 }]),
            on(hook(R::Manual, true), reset_no_continuation(1, S::NewContext)),
            quiet(I::ResetApplied { attempt: 1 }),
            Step::Pending(None),
        ]),
        row("an owed new_context whose input compaction failed resets at the next completed settle point", vec![
            quiet(START),
            tool(Scheduled),
            on(settle_with(Outcome::Error), vec![]),
            quiet(DONE),
            on(I::InputResetRequested, vec![O::Compact { attempt: 1 }]),
            quiet(I::InputResetFailed { attempt: 1 }),
            quiet(START),
            on(hook(R::Threshold, false), cancel()),
            Step::Allow(A::Available),
            on(settle(false), reset(2, S::NewContext, true)),
        ]),
        row("an error outcome without a new_context clears the run's work", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            on(settle_with(Outcome::Error), vec![]),
            quiet(DONE),
            Step::Pending(None),
            Step::Allow(A::Spent),
        ]),
        row("aborted outcome at agent_before_settle behaves like an error", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            quiet(I::AgentEnd),
            on(settle_with(Outcome::Aborted), vec![]),
            Step::Allow(A::Spent),
            Step::Pending(None),
        ]),
        row("matching completion re-arms the allowance: a new window may borrow again", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            quiet(I::AgentEnd),
            on(settle(false), reset(1, S::Fallback, true)),
            quiet(I::ResetApplied { attempt: 1 }),
            on(hook(R::Threshold, false), borrow()),
            quiet(I::AgentEnd),
            on(settle(false), reset(2, S::Fallback, true)),
        ]),
        row("duplicate completion callback is ignored", vec![
            quiet(START),
            tool(Scheduled),
            on(settle(false), reset(1, S::NewContext, true)),
            quiet(I::ResetApplied { attempt: 1 }),
            on(hook(R::Threshold, false), borrow()),
            quiet(I::ResetApplied { attempt: 1 }),
            Step::Allow(A::Borrowed),
        ]),
        row("stale attempt ids never consume a newer attempt", vec![
            quiet(START),
            tool(Scheduled),
            on(settle(false), reset(1, S::NewContext, true)),
            quiet(I::ResetRejected { attempt: 1 }),
            tool(Scheduled),
            on(settle(false), reset(2, S::NewContext, true)),
            quiet(I::ResetApplied { attempt: 1 }),
            quiet(I::ResetRejected { attempt: 1 }),
            quiet(I::ResetApplied { attempt: 3 }),
            Step::InFlight(Some(2)),
            tool(AlreadyPending),
            on(hook(R::Threshold, false), cancel()),
            quiet(I::ResetApplied { attempt: 2 }),
            Step::InFlight(None),
        ]),
        row("completion error: the request is cleared, no automatic retry; a later explicit call retries", vec![
            quiet(START),
            tool(Scheduled),
            on(settle(false), reset(1, S::NewContext, true)),
            quiet(I::ResetRejected { attempt: 1 }),
            Step::Pending(None),
            on(settle(false), vec![]),
            quiet(DONE),
            quiet(START),
            tool(Scheduled),
            on(settle(true), reset(2, S::NewContext, false)),
        ]),
        row("a rejected fallback reset is retried at the next settle point without borrowing again", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            quiet(I::AgentEnd),
            on(settle(false), reset(1, S::Fallback, true)),
            quiet(I::ResetRejected { attempt: 1 }),
            Step::Pending(Some(S::Fallback)),
            quiet(DONE),
            quiet(START),
            on(hook(R::Threshold, false), cancel()),
            quiet(I::AgentEnd),
            on(settle(false), reset(2, S::Fallback, true)),
            quiet(I::ResetApplied { attempt: 2 }),
            Step::Pending(None),
        ]),
        row("a rejected retry leaves the next retry; an aborted run keeps it; a navigation drops it", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            quiet(I::AgentEnd),
            on(settle(false), reset(1, S::Fallback, true)),
            quiet(I::ResetRejected { attempt: 1 }),
            quiet(DONE),
            quiet(START),
            on(settle(false), reset(2, S::Fallback, true)),
            quiet(I::ResetRejected { attempt: 2 }),
            quiet(I::Settled { aborted: true }),
            Step::Pending(Some(S::Fallback)),
            quiet(I::Invalidate),
            Step::Pending(None),
        ]),
        row("a given-up retry (third failure, or a cancelled reset) leaves nothing pending; a later crossing borrows nothing", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            quiet(I::AgentEnd),
            on(settle(false), reset(1, S::Fallback, true)),
            quiet(I::ResetRejected { attempt: 1 }),
            Step::Pending(Some(S::Fallback)),
            Step::GiveUpRetry,
            Step::Pending(None),
            quiet(DONE),
            quiet(START),
            on(settle(false), vec![]),
            Step::Allow(A::Spent),
        ]),
        row("stale callbacks: an abort, new input, a session switch or shutdown end the attempt; its late outcome changes nothing", vec![
            quiet(START),
            tool(Scheduled),
            on(settle(false), reset(1, S::NewContext, true)),
            quiet(I::Settled { aborted: true }),
            Step::InFlight(None),
            quiet(START),
            tool(Scheduled),
            quiet(I::ResetRejected { attempt: 1 }),
            quiet(I::ResetApplied { attempt: 1 }),
            Step::Pending(Some(S::NewContext)),
            on(settle(false), reset(2, S::NewContext, true)),
            quiet(I::Invalidate),
            Step::InFlight(None),
            quiet(I::ResetRejected { attempt: 2 }),
            Step::Pending(None),
            Step::Allow(A::Available),
        ]),
        row("a rejected threshold reset is retried by the next hook; a rejected manual one is not", vec![
            on(hook(R::Threshold, true), reset(1, S::Threshold, false)),
            quiet(I::ResetRejected { attempt: 1 }),
            Step::Pending(Some(S::Fallback)),
            on(hook(R::Threshold, true), reset(2, S::Threshold, false)),
            quiet(I::ResetApplied { attempt: 2 }),
            on(hook(R::Manual, true), reset(3, S::Manual, false)),
            quiet(I::ResetRejected { attempt: 3 }),
            Step::Pending(None),
        ]),
        row("shutdown/session start/tree navigation drop the pending request", vec![
            quiet(START),
            tool(Scheduled),
            quiet(I::Invalidate),
            Step::Pending(None),
            quiet(START),
            on(settle(false), vec![]),
        ]),
        row("invalidation makes callbacks of the in-flight attempt stale", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            quiet(I::AgentEnd),
            on(settle(false), reset(1, S::Fallback, true)),
            quiet(I::Invalidate),
            Step::InFlight(None),
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            quiet(I::ResetApplied { attempt: 1 }),
            Step::Allow(A::Borrowed),
            quiet(I::AgentEnd),
            on(settle(false), reset(2, S::Fallback, true)),
        ]),
        row("toggle off drops work and the in-flight attempt; hooks pass through; new_context is disabled", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            quiet(I::AgentEnd),
            quiet(I::SetEnabled(false)),
            Step::Pending(None),
            on(hook(R::Threshold, false), pass()),
            on(hook(R::Overflow, false), pass()),
            on(hook(R::Manual, true), pass()),
            tool(Disabled),
            on(settle(false), vec![]),
        ]),
        row("toggle off while a reset is in flight: later callbacks are stale; toggle on starts a fresh window", vec![
            quiet(START),
            tool(Scheduled),
            on(settle(false), reset(1, S::NewContext, true)),
            quiet(I::SetEnabled(false)),
            quiet(I::ResetApplied { attempt: 1 }),
            quiet(I::SetEnabled(true)),
            Step::InFlight(None),
            Step::Allow(A::Available),
            tool(Scheduled),
            on(settle(false), reset(2, S::NewContext, true)),
        ]),
        row("toggle on while already on changes nothing", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            quiet(I::SetEnabled(true)),
            Step::Allow(A::Borrowed),
            on(hook(R::Threshold, false), cancel()),
        ]),
        // ----- scheduler rules -----
        row_disabled("disabled: every compaction hook passes through; requests are ignored; nothing resets", vec![
            on(hook(R::Threshold, true), pass()),
            quiet(START),
            on(hook(R::Threshold, false), pass()),
            on(hook(R::Overflow, false), pass()),
            on(hook(R::Manual, false), pass()),
            tool(Disabled),
            quiet(I::HandoffCommitReady),
            quiet(I::ForcedResetRequested { source: S::Forced, at_turn_end: false }),
            quiet(turn_end(false)),
            quiet(I::AgentEnd),
            on(settle(false), vec![]),
            Step::Pending(None),
        ]),
        row_disabled("switching on mid-run enables the scheduler with run tracking intact", vec![
            quiet(START),
            quiet(I::SetEnabled(true)),
            on(hook(R::Threshold, false), borrow()),
        ]),
        row("queued user prompt: the reset omits the continuation", vec![
            quiet(START),
            tool(Scheduled),
            on(settle(true), reset(1, S::NewContext, false)),
        ]),
        row("new_context during a borrowed run consumes the fallback: one reset, one continuation", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            tool(Scheduled),
            Step::Pending(Some(S::NewContext)),
            quiet(I::AgentEnd),
            on(settle(false), reset(1, S::NewContext, true)),
            Step::Pending(None),
            on(hook(R::Threshold, false), cancel()),
            quiet(I::ResetApplied { attempt: 1 }),
            quiet(I::AgentEnd),
            on(settle(false), vec![]),
            quiet(DONE),
        ]),
        row("a threshold crossing while an explicit reset is pending only cancels (no borrowed turn)", vec![
            quiet(START),
            tool(Scheduled),
            on(hook(R::Threshold, false), cancel()),
            Step::Allow(A::Available),
            on(settle(false), reset(1, S::NewContext, true)),
        ]),
        row("a borrowed turn whose agent_end was not seen still resets at the completed settle", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            on(settle(false), reset(1, S::Fallback, true)),
        ]),
        row("handoff commits at that turn_end with a continuation", vec![
            quiet(START),
            quiet(turn_end(false)),
            quiet(I::HandoffCommitReady),
            Step::Pending(Some(S::Handoff)),
            on(turn_end(false), reset(1, S::Handoff, true)),
            quiet(I::ResetApplied { attempt: 1 }),
            on(settle(false), vec![]),
        ]),
        row("handoff with a queued user message commits without continuation", vec![
            quiet(START),
            quiet(I::HandoffCommitReady),
            on(turn_end(true), reset(1, S::Handoff, false)),
        ]),
        row("handoff and new_context in the same turn: one reset at turn_end, none at settle", vec![
            quiet(START),
            tool(Scheduled),
            quiet(I::HandoffCommitReady),
            on(turn_end(false), reset(1, S::Handoff, true)),
            tool(AlreadyPending),
            quiet(I::ResetApplied { attempt: 1 }),
            on(settle(false), vec![]),
        ]),
        row("a new request after an applied reset in the same run is served at the settle point", vec![
            quiet(START),
            quiet(I::HandoffCommitReady),
            on(turn_end(false), reset(1, S::Handoff, true)),
            quiet(I::ResetApplied { attempt: 1 }),
            tool(Scheduled),
            on(settle(false), reset(2, S::NewContext, true)),
        ]),
        row("a handoff ready when a compaction hook fires makes that reset a handoff reset", vec![
            quiet(START),
            quiet(I::HandoffCommitReady),
            on(hook(R::Overflow, false), overflow_reset(1, S::Handoff)),
            on(turn_end(false), vec![]),
        ]),
        row("forced reset is served at the next completed settle, not at turn_end", vec![
            quiet(START),
            quiet(I::ForcedResetRequested { source: S::Forced, at_turn_end: false }),
            Step::Pending(Some(S::Forced)),
            tool(AlreadyPending),
            on(turn_end(false), vec![]),
            on(hook(R::Threshold, false), cancel()),
            on(settle(false), reset(1, S::Forced, true)),
        ]),
        row("a forced reset asked for at turn_end is installed at that turn_end, with continuation", vec![
            quiet(START),
            quiet(turn_end(false)),
            quiet(I::ForcedResetRequested { source: S::Forced, at_turn_end: true }),
            Step::Pending(Some(S::Forced)),
            on(turn_end(false), reset(1, S::Forced, true)),
            quiet(I::ResetApplied { attempt: 1 }),
            on(settle(false), vec![]),
        ]),
        row("a settle-point forced request is brought forward by a later turn-end request", vec![
            quiet(START),
            quiet(I::ForcedResetRequested { source: S::Forced, at_turn_end: false }),
            on(turn_end(false), vec![]),
            quiet(I::ForcedResetRequested { source: S::Idle, at_turn_end: true }),
            on(turn_end(true), reset(1, S::Forced, false)),
        ]),
        row("an idle handoff's commit outranks new_context in the same batch: one idle reset at the turn end", vec![
            quiet(START),
            quiet(I::NewContextCalled),
            quiet(I::ForcedResetRequested { source: S::Idle, at_turn_end: true }),
            Step::Pending(Some(S::Idle)),
            on(turn_end(false), reset(1, S::Idle, true)),
            quiet(I::ResetApplied { attempt: 1 }),
            Step::Pending(None),
            on(settle(false), vec![]),
        ]),
        row("the borrowed turn's turn_end resets, as the steer promises (issue 24, item 9)", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            Step::Pending(Some(S::Fallback)),
            on(turn_end(false), reset(1, S::Fallback, true)),
            Step::Allow(A::Spent),
            // Pi's check between turns while the reset is being installed: no second borrow.
            on(hook(R::Threshold, false), cancel()),
            quiet(I::ResetApplied { attempt: 1 }),
            Step::Allow(A::Available),
            on(settle(false), vec![]),
            quiet(DONE),
        ]),
        row("the borrowed turn's turn_end with a prompt queued resets without a continuation", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            on(turn_end(true), reset(1, S::Fallback, false)),
        ]),
        row("a crossing mid-run with the allowance spent (aborted borrow) resets at the next turn_end", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            quiet(ABORTED),
            Step::Allow(A::Spent),
            quiet(START),
            on(hook(R::Threshold, false), cancel()),
            on(turn_end(true), reset(1, S::Fallback, false)),
        ]),
        row("an overdue reset is dropped with its run when the run aborts", vec![
            quiet(START),
            on(hook(R::Threshold, false), borrow()),
            on(hook(R::Threshold, false), cancel()),
            quiet(ABORTED),
            Step::Pending(None),
            quiet(START),
            on(turn_end(false), vec![]),
        ]),
        row("forced reset requested while idle survives to the next run's settle point", vec![
            quiet(I::ForcedResetRequested { source: S::Idle, at_turn_end: false }),
            quiet(DONE),
            quiet(START),
            Step::Pending(Some(S::Idle)),
            on(settle(true), reset(1, S::Idle, false)),
        ]),
        row("an aborted run clears a forced request too", vec![
            quiet(START),
            quiet(I::ForcedResetRequested { source: S::Forced, at_turn_end: false }),
            quiet(ABORTED),
            Step::Pending(None),
        ]),
        row("one reset in flight: compaction hooks cancel, requests are absorbed, settle does not reset again", vec![
            quiet(START),
            on(hook(R::Overflow, false), overflow_reset(1, S::Overflow)),
            on(hook(R::Overflow, false), cancel()),
            on(hook(R::Manual, false), cancel()),
            on(hook(R::Threshold, true), cancel()),
            tool(AlreadyPending),
            quiet(I::HandoffCommitReady),
            quiet(I::ForcedResetRequested { source: S::Forced, at_turn_end: false }),
            Step::Pending(None),
            on(turn_end(false), vec![]),
            on(settle(false), vec![]),
        ]),
        row("an attempt still unresolved when the run settles is abandoned", vec![
            quiet(START),
            tool(Scheduled),
            on(settle(false), reset(1, S::NewContext, true)),
            quiet(DONE),
            Step::InFlight(None),
            quiet(I::ResetApplied { attempt: 1 }),
            Step::Allow(A::Available),
            quiet(START),
            tool(Scheduled),
            on(settle(false), reset(2, S::NewContext, true)),
        ]),
        row("a pending explicit request does not outlive its run's settle point", vec![
            quiet(START),
            on(settle(false), vec![]),
            tool(Scheduled),
            quiet(DONE),
            Step::Pending(None),
            quiet(START),
            on(settle(false), vec![]),
        ]),
        row("idle-input reset: a compaction is asked for, and its manual hook resets as idle with the id handed out", vec![
            on(I::InputResetRequested, vec![O::Compact { attempt: 1 }]),
            Step::Pending(Some(S::Idle)),
            on(hook(R::Manual, true), reset_no_continuation(1, S::Idle)),
            Step::InFlight(Some(1)),
            quiet(I::ResetApplied { attempt: 1 }),
            Step::InFlight(None),
            quiet(START),
            tool(Scheduled),
            on(settle(false), reset(2, S::NewContext, true)),
        ]),
        row("idle-input reset: not while a run is active, a reset is in flight or another request is pending", vec![
            quiet(START),
            on(I::InputResetRequested, vec![]),
            quiet(DONE),
            tool(Scheduled),
            on(I::InputResetRequested, vec![]),
            quiet(START),
            on(settle(false), reset(1, S::NewContext, true)),
            on(I::InputResetRequested, vec![]),
        ]),
        row_disabled("idle-input reset: nothing while Relay is off", vec![
            on(I::InputResetRequested, vec![]),
            on(hook(R::Manual, true), pass()),
        ]),
        row("idle-input reset: a failure before the hook ends the request; a stale failure id changes nothing", vec![
            on(I::InputResetRequested, vec![O::Compact { attempt: 1 }]),
            quiet(I::InputResetFailed { attempt: 7 }),
            Step::Pending(Some(S::Idle)),
            quiet(I::InputResetFailed { attempt: 1 }),
            Step::Pending(None),
            // The user's own /compact afterwards is the user's.
            on(hook(R::Manual, true), reset_no_continuation(2, S::Manual)),
        ]),
        row("idle-input reset: the run the input starts ends an unanswered request (one reset per boundary)", vec![
            on(I::InputResetRequested, vec![O::Compact { attempt: 1 }]),
            quiet(START),
            Step::Pending(None),
            on(settle(false), vec![]),
            quiet(DONE),
            on(I::InputResetRequested, vec![O::Compact { attempt: 2 }]),
            quiet(I::Invalidate),
            Step::Pending(None),
        ]),
        row("idle-input reset: a pre-prompt threshold hook before the manual one consumes the request", vec![
            on(I::InputResetRequested, vec![O::Compact { attempt: 1 }]),
            on(hook(R::Threshold, true), reset_no_continuation(2, S::Threshold)),
            on(hook(R::Manual, true), cancel()),
            Step::Pending(None),
        ]),
        row("idle-input reset: a retry left by a rejected reset is served by it", vec![
            quiet(START),
            on(hook(R::Threshold, true), reset_no_continuation(1, S::Threshold)),
            quiet(I::ResetRejected { attempt: 1 }),
            quiet(DONE),
            Step::Pending(Some(S::Fallback)),
            on(I::InputResetRequested, vec![O::Compact { attempt: 2 }]),
            on(hook(R::Manual, true), reset_no_continuation(2, S::Idle)),
            quiet(I::ResetApplied { attempt: 2 }),
            Step::Pending(None),
        ]),
        row("a new run does not clear a request made before it", vec![
            tool(Scheduled),
            quiet(START),
            Step::Pending(Some(S::NewContext)),
            on(settle(false), reset(1, S::NewContext, true)),
        ]),
    ]
}

fn run_row(row: &Row) {
    let mut s = Scheduler::new(row.enabled);
    for (i, step) in row.steps.iter().enumerate() {
        let at = || format!("rule `{}`, step {i} ({step:?})", row.rule);
        match step {
            Step::In(input, expected) => {
                assert_eq!(&s.handle(*input), expected, "{}", at());
            }
            Step::Tool(answer) => assert_eq!(s.new_context(), *answer, "{}", at()),
            Step::Pending(p) => assert_eq!(s.pending(), *p, "{}", at()),
            Step::Allow(a) => assert_eq!(s.allowance(), *a, "{}", at()),
            Step::InFlight(id) => assert_eq!(s.in_flight().map(|(id, _)| id), *id, "{}", at()),
            Step::AllowOverflow(allowed) => s.allow_overflow_reset(*allowed),
            Step::GiveUpRetry => s.give_up_retry(),
        }
    }
}

#[test]
fn lifecycle_table() {
    let rows = rows();
    assert!(rows.len() >= 40, "table shrank to {} rows", rows.len());
    for row in &rows {
        run_row(row);
    }
}

#[test]
fn attempt_floor_never_lowers_ids() {
    let mut s = Scheduler::new(true);
    s.set_next_attempt_floor(41);
    assert_eq!(s.handle(hook(R::Manual, true)), reset(41, S::Manual, false));
    s.set_next_attempt_floor(7);
    s.handle(I::ResetApplied { attempt: 41 });
    assert_eq!(s.handle(hook(R::Manual, true)), reset(42, S::Manual, false));
}

#[test]
fn borrowed_this_window_follows_the_allowance() {
    let mut s = Scheduler::new(true);
    s.handle(START);
    assert!(!s.borrowed_this_window());
    s.handle(hook(R::Threshold, false));
    assert!(s.borrowed_this_window());
    s.handle(I::AgentEnd);
    let out = s.handle(settle(false));
    assert!(s.borrowed_this_window(), "spent until the reset is applied");
    let Some(O::Reset { attempt, .. }) = out.first().copied() else {
        panic!("expected a reset, got {out:?}");
    };
    s.handle(I::ResetApplied { attempt });
    assert!(!s.borrowed_this_window());
}

#[test]
fn output_json_shape_is_stable() {
    let out = O::Reset {
        attempt: 3,
        source: S::NewContext,
        continuation: true,
        restate_dropped_request: false,
    };
    assert_eq!(
        serde_json::to_string(&out).unwrap(),
        r#"{"type":"reset","attempt":3,"source":"new_context","continuation":true,"restate_dropped_request":false}"#
    );
    assert_eq!(
        serde_json::to_string(&O::CancelCompaction).unwrap(),
        r#"{"type":"cancel_compaction"}"#
    );
    for source in [
        S::NewContext,
        S::Fallback,
        S::Handoff,
        S::Forced,
        S::Idle,
        S::Manual,
        S::Overflow,
        S::Threshold,
    ] {
        assert_eq!(
            serde_json::to_value(source).unwrap(),
            serde_json::Value::String(source.as_str().into())
        );
    }
}

/// Render a lifecycle as a readable transcript: each input, what the scheduler answered, and the
/// state a `/relay` status would show.
fn transcript(enabled: bool, script: &[Result<SchedInput, ()>]) -> String {
    let mut s = Scheduler::new(enabled);
    let mut text = String::new();
    for step in script {
        let (label, outputs) = match step {
            Ok(input) => (format!("{input:?}"), format!("{:?}", s.handle(*input))),
            Err(()) => (
                "new_context tool".to_string(),
                format!("{:?}", s.new_context()),
            ),
        };
        writeln!(
            text,
            "{label}\n  -> {outputs}\n  state: pending={:?} in_flight={:?} allowance={:?} run_active={}",
            s.pending(),
            s.in_flight(),
            s.allowance(),
            s.run_active()
        )
        .unwrap();
    }
    text
}

#[test]
fn transcript_two_phase_fallback_then_explicit_reset() {
    let script = [
        Ok(START),
        Ok(hook(R::Threshold, false)),
        Ok(hook(R::Threshold, false)),
        Ok(I::AgentEnd),
        Ok(settle(false)),
        Ok(I::ResetApplied { attempt: 1 }),
        Ok(I::AgentEnd),
        Ok(settle(false)),
        Ok(DONE),
        Ok(START),
        Err(()),
        Err(()),
        Ok(I::AgentEnd),
        Ok(settle(true)),
        Ok(I::ResetApplied { attempt: 2 }),
        Ok(DONE),
    ];
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => true }, {
        insta::assert_snapshot!(transcript(true, &script));
    });
}

#[test]
fn transcript_overflow_abort_and_toggle() {
    let script = [
        Ok(START),
        Ok(hook(R::Threshold, false)),
        Ok(hook(R::Overflow, false)),
        Ok(hook(R::Threshold, false)),
        Ok(I::ResetApplied { attempt: 1 }),
        Ok(hook(R::Threshold, false)),
        Ok(ABORTED),
        Ok(START),
        Ok(hook(R::Threshold, false)),
        Ok(I::SetEnabled(false)),
        Ok(hook(R::Threshold, false)),
        Err(()),
        Ok(I::SetEnabled(true)),
        Ok(hook(R::Threshold, false)),
    ];
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => true }, {
        insta::assert_snapshot!(transcript(true, &script));
    });
}

/// A window marker's source reads back as the source that wrote it; one this Relay does not know
/// is `None` (its readers say what that means).
#[test]
fn a_recorded_reset_source_reads_back_and_an_unknown_one_is_none() {
    for source in ResetSource::ALL {
        assert_eq!(ResetSource::parse(source.as_str()), Some(source));
    }
    assert_eq!(ResetSource::parse("budget"), None);
    assert_eq!(ResetSource::parse("Overflow"), None);
}
