//! Property test of the reset scheduler: random interleavings of Pi events, tool calls, policy
//! requests, duplicate/stale/future callbacks, aborts, invalidations and toggles are run through the
//! real [`Scheduler`] (the system under test) and through a small reference model written
//! independently from the lifecycle rules. Every step compares outputs and observable state, and a
//! trace checker asserts the invariants users rely on, using only the inputs and outputs.
//!
//! Cases: `RELAY_PROPTEST_CASES` for each test when set (`make test` sets it), else 1000 and 500.
//! A failing case's seed is printed and kept in `scheduler_props.proptest-regressions`
//! (support/props.rs).

#[path = "support/props.rs"]
mod props;

use proptest::prelude::*;
use relay_core::scheduler::{
    Allowance, AttemptId, CompactReason, NewContextAnswer, Outcome, ResetSource, SchedInput,
    SchedOutput, Scheduler,
};

// ---------------------------------------------------------------------------------------------
// Generated operations
// ---------------------------------------------------------------------------------------------

/// Which attempt id a callback names, resolved against the ids issued so far.
#[derive(Debug, Clone, Copy)]
enum Pick {
    /// The most recently issued id (usually the in-flight one).
    Latest,
    /// An older issued id (stale), counted back from the latest.
    Older(usize),
    /// An id never issued.
    Future(u64),
}

#[derive(Debug, Clone, Copy)]
enum Op {
    /// The `new_context` tool, through [`Scheduler::new_context`].
    Tool,
    /// Any input that carries no attempt id.
    In(SchedInput),
    Applied(Pick),
    Rejected(Pick),
    /// The idle-input compaction failed before its hook.
    InputFailed(Pick),
    /// The engine's verdict from the branch, through [`Scheduler::restore_allowance`]: the window
    /// holds the note-taking steer, the window holds a rejected window-full reset's notice.
    Restore(bool, bool),
}

fn source() -> impl Strategy<Value = ResetSource> {
    prop_oneof![
        Just(ResetSource::Forced),
        Just(ResetSource::Idle),
        Just(ResetSource::Fallback),
    ]
}

fn pick() -> impl Strategy<Value = Pick> {
    prop_oneof![
        6 => Just(Pick::Latest),
        2 => (0usize..4).prop_map(Pick::Older),
        1 => (0u64..3).prop_map(Pick::Future),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let reason = prop_oneof![
        4 => Just(CompactReason::Threshold),
        1 => Just(CompactReason::Manual),
        1 => Just(CompactReason::Overflow),
    ];
    let outcome = prop_oneof![
        6 => Just(Outcome::Completed),
        1 => Just(Outcome::Aborted),
        1 => Just(Outcome::Error),
    ];
    prop_oneof![
        4 => Just(Op::Tool),
        2 => Just(Op::In(SchedInput::NewContextCalled)),
        2 => Just(Op::In(SchedInput::HandoffCommitReady)),
        1 => (source(), any::<bool>()).prop_map(|(source, at_turn_end)| Op::In(SchedInput::ForcedResetRequested { source, at_turn_end })),
        6 => (reason, any::<bool>()).prop_map(|(reason, idle)| Op::In(SchedInput::CompactHook { reason, idle })),
        4 => Just(Op::In(SchedInput::BeforeAgentStart)),
        4 => (any::<bool>(), prop::bool::weighted(0.9), prop::bool::weighted(0.8)).prop_map(|(q, c, d)| Op::In(SchedInput::TurnEnd {
            has_queued_user_messages: q,
            completed: c,
            steer_delivered: d,
        })),
        4 => Just(Op::In(SchedInput::AgentEnd)),
        5 => (outcome, any::<bool>()).prop_map(|(outcome, q)| Op::In(SchedInput::BeforeSettle { outcome, has_queued_user_messages: q })),
        3 => any::<bool>().prop_map(|aborted| Op::In(SchedInput::Settled { aborted })),
        6 => pick().prop_map(Op::Applied),
        3 => pick().prop_map(Op::Rejected),
        2 => Just(Op::In(SchedInput::InputResetRequested)),
        1 => pick().prop_map(Op::InputFailed),
        1 => Just(Op::In(SchedInput::Invalidate)),
        1 => any::<bool>().prop_map(|on| Op::In(SchedInput::SetEnabled(on))),
        2 => (any::<bool>(), any::<bool>()).prop_map(|(b, f)| Op::Restore(b, f)),
    ]
}

fn resolve(pick: Pick, issued: &[AttemptId]) -> AttemptId {
    let max = issued.last().copied().unwrap_or(0);
    match pick {
        Pick::Latest => max.max(1),
        Pick::Older(k) if !issued.is_empty() => issued[issued.len() - 1 - k % issued.len()],
        Pick::Older(_) => 1,
        Pick::Future(k) => max + 1 + k,
    }
}

// ---------------------------------------------------------------------------------------------
// Reference model
// ---------------------------------------------------------------------------------------------

/// The reference: the lifecycle rules restated as directly as possible, with the outstanding
/// requests kept as a list and the borrowed turn as a phase.
#[derive(Debug, Clone)]
struct Model {
    on: bool,
    running: bool,
    /// Outstanding requests in arrival order (no duplicates).
    wants: Vec<Want>,
    phase: Phase,
    /// A threshold crossing came mid-run after the window's borrowed turn: reset at the next
    /// turn end.
    late: bool,
    flying: Option<(AttemptId, ResetSource)>,
    last_id: AttemptId,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Explicit,
    /// A `new_context` whose run failed (a provider error): still to be served, by the next idle
    /// input's compaction or the next completed settle point.
    Owed,
    Handoff,
    /// A forced request: its source and whether it is due at the next turn end.
    Forced(ResetSource, bool),
    /// A rejected window-full reset waits for its retry.
    Retry,
    /// The idle-input recovery asked for a compaction, whose manual hook resets with this id.
    Input(AttemptId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Fresh,
    Steered,
    TurnDone,
    UsedUp,
}

impl Model {
    fn new(on: bool) -> Self {
        Model {
            on,
            running: false,
            wants: Vec::new(),
            phase: Phase::Fresh,
            late: false,
            flying: None,
            last_id: 0,
        }
    }

    fn has(&self, want: Want) -> bool {
        self.wants.contains(&want)
    }

    fn input(&self) -> Option<AttemptId> {
        self.wants.iter().find_map(|w| match w {
            Want::Input(a) => Some(*a),
            _ => None,
        })
    }

    fn forced(&self) -> Option<ResetSource> {
        self.wants.iter().find_map(|w| match w {
            Want::Forced(s, _) => Some(*s),
            _ => None,
        })
    }

    fn pending(&self) -> Option<ResetSource> {
        if self.has(Want::Handoff) {
            return Some(ResetSource::Handoff);
        }
        // The idle-input recovery's reset is an idle reset too.
        if self.input().is_some() {
            return Some(ResetSource::Idle);
        }
        // An idle reset commits the written idle handoff: it ranks right after a handoff.
        if self.forced() == Some(ResetSource::Idle) {
            return Some(ResetSource::Idle);
        }
        if self.has(Want::Explicit) || self.has(Want::Owed) {
            return Some(ResetSource::NewContext);
        }
        if let Some(s) = self.forced() {
            return Some(s);
        }
        if self.has(Want::Retry) {
            return Some(ResetSource::Fallback);
        }
        match self.phase {
            _ if self.late => Some(ResetSource::Fallback),
            Phase::Steered | Phase::TurnDone => Some(ResetSource::Fallback),
            _ => None,
        }
    }

    fn allowance(&self) -> Allowance {
        match self.phase {
            Phase::Fresh => Allowance::Available,
            Phase::Steered => Allowance::Borrowed,
            Phase::TurnDone => Allowance::Ready,
            Phase::UsedUp => Allowance::Spent,
        }
    }

    /// The branch shows the window's note-taking steer: an unused allowance is gone; it shows a
    /// rejected window-full reset: the retry is back.
    fn restore(&mut self, borrowed: bool, failed: bool) {
        if borrowed && self.phase == Phase::Fresh {
            self.phase = Phase::UsedUp;
        }
        if failed && self.open() && !self.has(Want::Retry) {
            self.wants.push(Want::Retry);
        }
    }

    fn open(&self) -> bool {
        self.on && self.flying.is_none()
    }

    fn fire(&mut self, source: ResetSource, continuation: bool, restate: bool) -> Vec<SchedOutput> {
        self.last_id += 1;
        let id = self.last_id;
        self.fire_as(id, source, continuation, restate)
    }

    fn fire_as(
        &mut self,
        id: AttemptId,
        source: ResetSource,
        continuation: bool,
        restate: bool,
    ) -> Vec<SchedOutput> {
        self.wants.clear();
        self.late = false;
        if matches!(self.phase, Phase::Steered | Phase::TurnDone) {
            self.phase = Phase::UsedUp;
        }
        self.flying = Some((id, source));
        vec![SchedOutput::Reset {
            attempt: id,
            source,
            continuation,
            restate_dropped_request: restate,
        }]
    }

    fn end_run_unserved(&mut self, keep_forced: bool) {
        // A retry and an owed `new_context` belong to the window, not to the run: they survive.
        self.wants.retain(|w| {
            matches!(w, Want::Retry | Want::Owed) || (keep_forced && matches!(w, Want::Forced(..)))
        });
        self.late = false;
        if matches!(self.phase, Phase::Steered | Phase::TurnDone) {
            self.phase = Phase::UsedUp;
        }
    }

    fn wipe(&mut self) {
        self.wants.clear();
        self.late = false;
        self.flying = None;
        self.phase = Phase::Fresh;
    }

    fn tool(&mut self) -> NewContextAnswer {
        if !self.on {
            NewContextAnswer::Disabled
        } else if self.flying.is_some() || !self.wants.is_empty() || self.late {
            NewContextAnswer::AlreadyPending
        } else {
            self.wants.push(Want::Explicit);
            NewContextAnswer::Scheduled
        }
    }

    fn step(&mut self, input: SchedInput) -> Vec<SchedOutput> {
        use SchedInput as I;
        match input {
            I::NewContextCalled => {
                self.tool();
                vec![]
            }
            I::HandoffCommitReady => {
                if self.open() && !self.has(Want::Handoff) {
                    self.wants.push(Want::Handoff);
                }
                vec![]
            }
            I::ForcedResetRequested {
                source,
                at_turn_end,
            } => {
                if self.open() {
                    match self
                        .wants
                        .iter_mut()
                        .find(|w| matches!(w, Want::Forced(..)))
                    {
                        None => self.wants.push(Want::Forced(source, at_turn_end)),
                        Some(Want::Forced(_, due)) => *due |= at_turn_end,
                        Some(_) => {}
                    }
                }
                vec![]
            }
            I::CompactHook { reason, idle } => {
                if !self.on {
                    return vec![SchedOutput::PassThrough];
                }
                if self.flying.is_some() {
                    return vec![SchedOutput::CancelCompaction];
                }
                let handoff = self.has(Want::Handoff);
                if let Some(id) = self.input() {
                    self.wants.retain(|w| !matches!(w, Want::Input(_)));
                    if reason == CompactReason::Manual {
                        let source = if handoff {
                            ResetSource::Handoff
                        } else if self.has(Want::Owed) {
                            ResetSource::NewContext
                        } else {
                            ResetSource::Idle
                        };
                        return self.fire_as(id, source, false, false);
                    }
                }
                let named = |s| if handoff { ResetSource::Handoff } else { s };
                match reason {
                    CompactReason::Overflow => self.fire(named(ResetSource::Overflow), false, true),
                    CompactReason::Manual => self.fire(named(ResetSource::Manual), false, false),
                    CompactReason::Threshold if idle || !self.running => {
                        self.fire(named(ResetSource::Threshold), false, false)
                    }
                    CompactReason::Threshold => {
                        if self.phase == Phase::Fresh && self.wants.is_empty() {
                            self.phase = Phase::Steered;
                            vec![SchedOutput::SteerNotes, SchedOutput::CancelCompaction]
                        } else {
                            // After the borrowed turn (or a spent allowance, or with a rejected
                            // reset waiting for its retry) the crossing is overdue: the next turn
                            // end resets, also after a failed attempt Pi retries (`TurnDone`),
                            // but not when another request is coming anyway.
                            let only_retry = self.wants.iter().all(|w| *w == Want::Retry);
                            if only_retry {
                                self.late = true;
                            }
                            vec![SchedOutput::CancelCompaction]
                        }
                    }
                }
            }
            I::InputResetRequested => {
                // An owed `new_context` is what this compaction serves.
                let other = self
                    .wants
                    .iter()
                    .any(|w| !matches!(w, Want::Retry | Want::Owed));
                if !self.open() || self.running || other {
                    return vec![];
                }
                self.last_id += 1;
                self.wants.push(Want::Input(self.last_id));
                vec![SchedOutput::Compact {
                    attempt: self.last_id,
                }]
            }
            I::InputResetFailed { attempt } => {
                self.wants.retain(|w| *w != Want::Input(attempt));
                vec![]
            }
            I::BeforeAgentStart => {
                self.running = true;
                self.wants.retain(|w| !matches!(w, Want::Input(_)));
                vec![]
            }
            I::TurnEnd {
                has_queued_user_messages,
                completed,
                steer_delivered,
            } => {
                let due = self
                    .wants
                    .iter()
                    .any(|w| matches!(w, Want::Forced(_, true)));
                // A borrowed turn ends at the first turn end whose request carried the steer.
                let steered = matches!(self.phase, Phase::Steered | Phase::TurnDone);
                if self.open() && self.has(Want::Handoff) {
                    self.fire(ResetSource::Handoff, !has_queued_user_messages, false)
                } else if self.open()
                    && (due
                        || (self.late && (!steered || steer_delivered))
                        || (completed && steered && steer_delivered))
                {
                    let source = self.pending().unwrap_or(ResetSource::Fallback);
                    self.fire(source, !has_queued_user_messages, false)
                } else {
                    vec![]
                }
            }
            I::AgentEnd => {
                if self.on && self.phase == Phase::Steered {
                    self.phase = Phase::TurnDone;
                }
                vec![]
            }
            I::BeforeSettle {
                outcome: Outcome::Completed,
                has_queued_user_messages,
            } => match self.pending() {
                Some(source) if self.open() => self.fire(source, !has_queued_user_messages, false),
                _ => vec![],
            },
            I::BeforeSettle { outcome, .. } => {
                // The model was told a new window is coming: a provider error leaves it owed.
                if outcome == Outcome::Error
                    && self.open()
                    && self.has(Want::Explicit)
                    && !self.has(Want::Owed)
                {
                    self.wants.push(Want::Owed);
                }
                self.end_run_unserved(false);
                vec![]
            }
            I::Settled { aborted } => {
                self.running = false;
                self.flying = None;
                self.end_run_unserved(!aborted);
                vec![]
            }
            I::ResetApplied { attempt } => {
                if self.flying.map(|(id, _)| id) == Some(attempt) {
                    self.flying = None;
                    self.phase = Phase::Fresh;
                }
                vec![]
            }
            I::ResetRejected { attempt } => {
                if let Some((id, source)) = self.flying {
                    if id == attempt {
                        self.flying = None;
                        if matches!(
                            source,
                            ResetSource::Fallback | ResetSource::Threshold | ResetSource::Overflow
                        ) {
                            self.wants.push(Want::Retry);
                        }
                    }
                }
                vec![]
            }
            I::Invalidate => {
                self.running = false;
                self.wipe();
                vec![]
            }
            I::SetEnabled(on) => {
                if on != self.on {
                    self.on = on;
                    self.wipe();
                }
                vec![]
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Trace invariants (from inputs and outputs only)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Default)]
struct Trace {
    enabled: bool,
    /// The attempt output and not yet resolved (applied, rejected, invalidated, toggled, settled).
    in_flight: Option<AttemptId>,
    /// Whether the reset in flight was a window-full one (fallback, threshold, overflow).
    in_flight_window_full: bool,
    last_attempt: AttemptId,
    /// A request-creating event happened since the last reset output.
    fresh_request: bool,
    steers_this_window: u32,
    resets_since_settle: u32,
    /// A reset since the last settle point was resolved as applied or rejected.
    resolved_since_settle: bool,
    /// The attempt id an idle-input compaction was handed (its manual hook's reset carries it).
    input_attempt: Option<AttemptId>,
}

fn is_settle(input: &SchedInput) -> bool {
    matches!(
        input,
        SchedInput::BeforeSettle { .. } | SchedInput::Settled { .. }
    )
}

impl Trace {
    fn new(enabled: bool) -> Self {
        Trace {
            enabled,
            ..Trace::default()
        }
    }

    /// The engine restored a rejected window-full reset from the branch: a request again.
    fn restore(&mut self, failed: bool) {
        if failed && self.enabled && self.in_flight.is_none() {
            self.fresh_request = true;
        }
    }

    fn new_window(&mut self) {
        self.steers_this_window = 0;
    }

    fn check_tool(&mut self, answer: NewContextAnswer) -> Result<(), TestCaseError> {
        if !self.enabled {
            prop_assert_eq!(answer, NewContextAnswer::Disabled);
        } else {
            prop_assert_ne!(answer, NewContextAnswer::Disabled);
            if self.in_flight.is_some() {
                prop_assert_eq!(
                    answer,
                    NewContextAnswer::AlreadyPending,
                    "a reset is in flight"
                );
            }
        }
        if answer == NewContextAnswer::Scheduled {
            self.fresh_request = true;
        }
        Ok(())
    }

    fn check(&mut self, input: SchedInput, out: &[SchedOutput]) -> Result<(), TestCaseError> {
        use SchedInput as I;
        use SchedOutput as O;
        let resets: Vec<_> = out
            .iter()
            .filter(|o| matches!(o, O::Reset { .. }))
            .collect();
        prop_assert!(
            resets.len() <= 1,
            "more than one reset in one hook: {:?}",
            out
        );

        // Disabled: compaction hooks pass through, nothing else is ever output.
        if !self.enabled {
            match input {
                I::CompactHook { .. } => prop_assert_eq!(out, &[O::PassThrough][..]),
                _ => prop_assert!(out.is_empty(), "output while disabled: {:?}", out),
            }
        }

        match input {
            I::CompactHook { reason, .. } if self.enabled => {
                // Every hook is answered with a reset or a cancel; never Pi's summarizer.
                let ok = matches!(out, [O::Reset { .. }] | [O::CancelCompaction])
                    || out == [O::SteerNotes, O::CancelCompaction];
                prop_assert!(ok, "compaction hook answered with {:?}", out);
                if let [O::Reset {
                    continuation,
                    restate_dropped_request,
                    ..
                }] = out
                {
                    prop_assert!(!continuation, "continuation from a compaction hook");
                    prop_assert_eq!(*restate_dropped_request, reason == CompactReason::Overflow);
                }
                if out.contains(&O::SteerNotes) {
                    prop_assert_eq!(reason, CompactReason::Threshold, "only threshold borrows");
                }
            }
            I::CompactHook { .. } => {}
            I::InputResetRequested => {
                let ok = matches!(out, [] | [O::Compact { .. }]);
                prop_assert!(ok, "input reset answered with {:?}", out);
                if let [O::Compact { attempt }] = out {
                    prop_assert!(
                        self.in_flight.is_none(),
                        "a compaction while a reset is in flight"
                    );
                    prop_assert!(*attempt > self.last_attempt, "attempt ids must be fresh");
                    self.last_attempt = *attempt;
                    self.input_attempt = Some(*attempt);
                    self.fresh_request = true;
                }
            }
            _ => {
                prop_assert!(
                    out.iter().all(|o| matches!(o, O::Reset { .. })),
                    "non-hook input produced {:?}",
                    out
                );
            }
        }

        if let Some(O::Reset {
            attempt,
            source,
            continuation,
            restate_dropped_request,
        }) = resets.first().copied()
        {
            prop_assert!(self.enabled, "reset while disabled");
            prop_assert!(
                self.in_flight.is_none(),
                "reset {} while {:?} is in flight",
                attempt,
                self.in_flight
            );
            // The idle-input reset carries the id its compaction was handed; any other is new.
            let handed_out = self.input_attempt.take() == Some(*attempt);
            prop_assert!(
                handed_out || *attempt > self.last_attempt,
                "attempt ids must be fresh"
            );
            match input {
                I::TurnEnd {
                    has_queued_user_messages,
                    ..
                }
                | I::BeforeSettle {
                    outcome: Outcome::Completed,
                    has_queued_user_messages,
                } => {
                    // A settle-point reset needs a request that no earlier reset consumed.
                    prop_assert!(self.fresh_request, "reset without a fresh request");
                    prop_assert!(!restate_dropped_request);
                    prop_assert_eq!(*continuation, !has_queued_user_messages);
                }
                I::CompactHook { .. } => {}
                other => prop_assert!(false, "reset from {:?}", other),
            }
            // A second reset between two settle points needs the first one resolved.
            if self.resets_since_settle > 0 {
                prop_assert!(
                    self.resolved_since_settle,
                    "two resets between settle points"
                );
            }
            self.resets_since_settle += 1;
            self.resolved_since_settle = false;
            self.in_flight = Some(*attempt);
            self.in_flight_window_full = matches!(
                source,
                ResetSource::Fallback | ResetSource::Threshold | ResetSource::Overflow
            );
            self.last_attempt = *attempt;
            self.fresh_request = false;
        }

        if out.contains(&O::SteerNotes) {
            self.steers_this_window += 1;
            prop_assert!(
                self.steers_this_window <= 1,
                "second borrowed turn in one window"
            );
            self.fresh_request = true;
        }

        // State changes driven by the input itself.
        match input {
            // A threshold crossing is a request too: the window is full.
            I::HandoffCommitReady
            | I::ForcedResetRequested { .. }
            | I::NewContextCalled
            | I::CompactHook {
                reason: CompactReason::Threshold,
                ..
            } if self.enabled && self.in_flight.is_none() => {
                self.fresh_request = true;
            }
            I::ResetApplied { attempt } if self.in_flight == Some(attempt) => {
                self.in_flight = None;
                self.resolved_since_settle = true;
                self.new_window();
            }
            I::ResetRejected { attempt } if self.in_flight == Some(attempt) => {
                self.in_flight = None;
                self.resolved_since_settle = true;
                // The window is still full: the retry is a request no reset consumed yet.
                if self.in_flight_window_full {
                    self.fresh_request = true;
                }
            }
            // Another session, branch or mode: a new world, so a new window and a new interval.
            I::Invalidate => {
                self.in_flight = None;
                self.resets_since_settle = 0;
                self.new_window();
            }
            I::SetEnabled(on) if on != self.enabled => {
                self.enabled = on;
                self.in_flight = None;
                self.fresh_request = false;
                self.resets_since_settle = 0;
                self.new_window();
            }
            I::Settled { .. } => self.in_flight = None,
            _ => {}
        }
        if is_settle(&input) {
            self.resets_since_settle = 0;
            self.resolved_since_settle = false;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------

fn run(enabled: bool, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut sut = Scheduler::new(enabled);
    let mut model = Model::new(enabled);
    let mut trace = Trace::new(enabled);
    let mut issued: Vec<AttemptId> = Vec::new();

    for (i, op) in ops.iter().enumerate() {
        if let Op::Restore(borrowed, failed) = *op {
            sut.restore_allowance(borrowed, failed);
            model.restore(borrowed, failed);
            trace.restore(failed);
            prop_assert_eq!(sut.allowance(), model.allowance(), "step {}: restore", i);
            prop_assert_eq!(sut.pending(), model.pending(), "step {}: restore", i);
            continue;
        }
        let input = match *op {
            Op::Restore(..) => None,
            Op::Tool => None,
            Op::In(input) => Some(input),
            Op::Applied(p) => Some(SchedInput::ResetApplied {
                attempt: resolve(p, &issued),
            }),
            Op::Rejected(p) => Some(SchedInput::ResetRejected {
                attempt: resolve(p, &issued),
            }),
            Op::InputFailed(p) => Some(SchedInput::InputResetFailed {
                attempt: resolve(p, &issued),
            }),
        };
        match input {
            None => {
                let got = sut.new_context();
                let want = model.tool();
                prop_assert_eq!(got, want, "step {}: new_context", i);
                trace.check_tool(got)?;
            }
            Some(input) => {
                let before = sut.clone();
                let stale = match input {
                    SchedInput::ResetApplied { attempt }
                    | SchedInput::ResetRejected { attempt } => {
                        sut.in_flight().map(|(id, _)| id) != Some(attempt)
                    }
                    _ => false,
                };
                let got = sut.handle(input);
                let want = model.step(input);
                prop_assert_eq!(&got, &want, "step {}: {:?}", i, input);
                if stale {
                    prop_assert_eq!(&sut, &before, "stale callback changed state: {:?}", input);
                }
                trace.check(input, &got)?;
                for o in &got {
                    match o {
                        SchedOutput::Reset { attempt, .. } | SchedOutput::Compact { attempt } => {
                            issued.push(*attempt)
                        }
                        _ => {}
                    }
                }
            }
        }
        // Observable state agrees with the reference, and is internally consistent.
        prop_assert_eq!(sut.enabled(), model.on, "step {}", i);
        prop_assert_eq!(sut.pending(), model.pending(), "step {}", i);
        prop_assert_eq!(sut.in_flight(), model.flying, "step {}", i);
        prop_assert_eq!(sut.allowance(), model.allowance(), "step {}", i);
        prop_assert_eq!(sut.run_active(), model.running, "step {}", i);
        prop_assert_eq!(
            sut.borrowed_this_window(),
            model.phase != Phase::Fresh,
            "step {}",
            i
        );
        prop_assert_eq!(sut.in_flight().map(|(id, _)| id), trace.in_flight);
        if sut.in_flight().is_some() {
            prop_assert_eq!(
                sut.pending(),
                None,
                "a request pending beside an in-flight reset"
            );
        }
        if !sut.enabled() {
            prop_assert_eq!(sut.pending(), None);
            prop_assert_eq!(sut.in_flight(), None);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: props::cases(1000), failure_persistence: props::kept(), ..ProptestConfig::default() })]

    #[test]
    fn scheduler_matches_reference_and_keeps_invariants(
        enabled in prop_oneof![4 => Just(true), 1 => Just(false)],
        ops in prop::collection::vec(op(), 1..120),
    ) {
        run(enabled, &ops)?;
    }
}

/// A realistic run shape: many runs, each with turns, borrowed turns, tool calls and callbacks in
/// the order Pi produces them, so that deep windows (many applied resets) are reached.
fn run_shaped(ops_per_run: Vec<Vec<Op>>) -> Result<(), TestCaseError> {
    let mut ops = Vec::new();
    for mut body in ops_per_run {
        ops.push(Op::In(SchedInput::BeforeAgentStart));
        ops.append(&mut body);
        ops.push(Op::In(SchedInput::AgentEnd));
        ops.push(Op::In(SchedInput::BeforeSettle {
            outcome: Outcome::Completed,
            has_queued_user_messages: false,
        }));
        ops.push(Op::Applied(Pick::Latest));
        ops.push(Op::In(SchedInput::Settled { aborted: false }));
    }
    run(true, &ops)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: props::cases(500), failure_persistence: props::kept(), ..ProptestConfig::default() })]

    #[test]
    fn scheduler_holds_over_well_formed_runs(
        runs in prop::collection::vec(prop::collection::vec(op(), 0..12), 1..20),
    ) {
        run_shaped(runs)?;
    }
}

/// The checker itself must be able to fail: a scheduler that resets twice for one request is caught.
#[test]
fn trace_checker_rejects_a_double_reset() {
    let mut trace = Trace::new(true);
    trace.check_tool(NewContextAnswer::Scheduled).unwrap();
    let settle = SchedInput::BeforeSettle {
        outcome: Outcome::Completed,
        has_queued_user_messages: false,
    };
    let reset = |attempt| SchedOutput::Reset {
        attempt,
        source: ResetSource::NewContext,
        continuation: true,
        restate_dropped_request: false,
    };
    trace.check(settle, &[reset(1)]).unwrap();
    trace
        .check(SchedInput::ResetApplied { attempt: 1 }, &[])
        .unwrap();
    assert!(trace.check(settle, &[reset(2)]).is_err());
}

#[test]
fn trace_checker_rejects_passthrough_while_enabled() {
    let mut trace = Trace::new(true);
    let hook = SchedInput::CompactHook {
        reason: CompactReason::Threshold,
        idle: false,
    };
    assert!(trace.check(hook, &[SchedOutput::PassThrough]).is_err());
}

/// The persistence these property tests use keeps a failing case: its seed goes into the file next
/// to the test's source, and the next run replays that case before any new one.
#[test]
fn a_failing_case_is_kept_next_to_the_test_and_replayed_first() {
    use proptest::test_runner::{Config, TestError, TestRunner};
    use std::cell::RefCell;
    let dir = std::env::temp_dir().join(format!("relay-props-kept-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("some_props.rs");
    std::fs::write(&source, "// stands for a test file\n").unwrap();
    let kept_file = dir.join("some_props.proptest-regressions");
    let _ = std::fs::remove_file(&kept_file);
    let source: &'static str = Box::leak(source.display().to_string().into_boxed_str());
    let config = || Config {
        cases: 64,
        failure_persistence: props::kept(),
        source_file: Some(source),
        ..Config::default()
    };

    // A property that fails for every value from 1000 up: proptest shrinks to 1000 and keeps it.
    let failed = TestRunner::new(config()).run(&(0u32..1_000_000), |v| {
        prop_assert!(v < 1000);
        Ok(())
    });
    assert!(
        matches!(failed, Err(TestError::Fail(_, 1000))),
        "{failed:?}"
    );
    let text = std::fs::read_to_string(&kept_file).unwrap();
    let seeds: Vec<&str> = text.lines().filter(|l| l.starts_with("cc ")).collect();
    assert_eq!(seeds.len(), 1, "{text}");
    assert!(seeds[0].ends_with("# shrinks to 1000"), "{text}");

    // The next run starts from the kept case: its first input fails again at once.
    let first = RefCell::new(None);
    let again = TestRunner::new(config()).run(&(0u32..1_000_000), |v| {
        first.borrow_mut().get_or_insert(v);
        prop_assert!(v < 1000);
        Ok(())
    });
    assert!(matches!(again, Err(TestError::Fail(..))), "{again:?}");
    assert!(first.borrow().unwrap() >= 1000, "the kept case ran first");
    std::fs::remove_dir_all(&dir).unwrap();
}
