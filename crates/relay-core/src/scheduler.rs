//! The one reset scheduler: every window reset Relay performs is decided here.
//!
//! `new_context`, a committed handoff, a forced budget or idle reset, Pi's automatic threshold and
//! overflow compaction and the user's `/compact` all ask this one owner for a reset. It answers
//! *when* a reset happens (which hook returns it) and *what kind* it is (source, whether a hidden
//! continuation follows, whether the dropped request must be restated). It never builds entries:
//! the engine renders the boot block and the adapter returns the boundary draft or compaction
//! result to Pi.
//!
//! **Architecture Invariant:** at most one reset is in flight at any time, every reset consumes
//! every request that preceded it (no request ever produces two resets), and a reset carries at
//! most one continuation.
//!
//! **Architecture Invariant:** while Relay is enabled, every compaction hook is answered with a
//! reset or a cancel, so Pi's LLM summarizer never runs. While disabled, every compaction hook
//! passes through and the scheduler outputs nothing else.
//!
//! **Architecture Invariant:** the scheduler never touches queued user messages. Its only
//! queue-related decision is to omit the continuation when the user already has a prompt queued.
//!
//! # How it is driven
//!
//! Like quinn-proto's `Connection`, the [`Scheduler`] is a plain state machine with no clock and
//! no IO. Its methods fall into three groups:
//!
//! - **getters** ([`Scheduler::enabled`], [`Scheduler::pending`], [`Scheduler::in_flight`],
//!   [`Scheduler::allowance`], [`Scheduler::borrowed_this_window`], [`Scheduler::retry_pending`],
//!   [`Scheduler::run_active`])
//!   read state for `/relay` status and never change it;
//! - **handle** ([`Scheduler::handle`]) feeds one [`SchedInput`] observed from Pi and returns the
//!   [`SchedOutput`]s the adapter must apply *in the hook that produced the input*;
//! - **mutators** ([`Scheduler::new_context`], [`Scheduler::set_next_attempt_floor`],
//!   [`Scheduler::restore_allowance`]) change state on behalf of a tool call or of the engine's
//!   bookkeeping.
//!
//! # Lifecycle
//!
//! | Input | Decision |
//! | --- | --- |
//! | `new_context` tool | mark an explicit request (`Scheduled`); `AlreadyPending` when any reset is pending or in flight; `Disabled` when off |
//! | `session_before_compact` threshold, run active | fallback `Available` → `Borrowed`: `[SteerNotes, CancelCompaction]`; `Borrowed`, `Ready` or `Spent` (the window had its turn): overdue, `[CancelCompaction]`; otherwise `[CancelCompaction]` |
//! | `session_before_compact` threshold, no run active | reset at once (`Threshold`), no borrowed turn |
//! | `session_before_compact` manual | reset at once (`Manual`) |
//! | `session_before_compact` overflow | reset at once (`Overflow`), restate the dropped request, never borrow |
//! | idle-input reset requested (policy, at `input`), no run active, nothing pending | allocate an attempt id, `[Compact]`: the adapter starts Pi's compaction and awaits it |
//! | `session_before_compact` manual while an input reset is requested | reset at once with that attempt id (`Idle`, or `Handoff` when a handoff is ready), no continuation |
//! | input reset failed before its hook (matching attempt), `before_agent_start`, `agent_settled` | the input reset request is gone |
//! | `session_before_compact` overflow, recovery refused ([`Scheduler::allow_overflow_reset`]`(false)`: off, or the window's one retry is spent) | `[CancelCompaction]`; pending requests stay |
//! | `turn_end` | commit a ready handoff: reset (`Handoff`); else a forced request asked for at this turn end; else the end of the borrowed turn (`Borrowed` or `Ready`, completed, its request carried the steer) or an overdue threshold reset (`Fallback`, once the steer of a borrowed turn was delivered); each with continuation unless the user has a prompt queued |
//! | `agent_end` | fallback `Borrowed` → `Ready` (a borrowed turn whose `turn_end` was not seen) |
//! | `agent_before_settle` completed | one reset for the pending request (explicit, forced or ready fallback), with continuation unless the user has a prompt queued |
//! | `agent_before_settle` aborted/error, `agent_settled` aborted | clear pending work, spend a borrowed allowance; no reset, no continuation; a `new_context` of a run that failed (error) is owed instead of cleared |
//! | idle input while a `new_context` is owed ([`SchedInput::InputResetRequested`]) | `[Compact]`; its `manual` hook resets (`NewContext`, no continuation: the input follows) |
//! | `agent_settled` | the run is over; an attempt still unresolved is abandoned |
//! | reset applied (matching attempt) | attempt done; fallback re-armed for the new window |
//! | reset rejected (matching attempt) | attempt done; a window-full reset (fallback, threshold, overflow) is retried at the next settle point or compaction hook, without borrowing; others are not retried |
//! | [`Scheduler::give_up_retry`] (third failure in a window, or a cancelled reset) | no retry left pending |
//! | stale attempt id | ignored |
//! | shutdown / session start / tree navigation / toggle | drop pending work and the in-flight attempt; the engine restores the allowance from the branch |
//!
//! # Decisions the requirements leave open
//!
//! - **Idle detection.** Pi's `ctx.isIdle()` is false at all three automatic compaction points,
//!   including the pre-prompt check (pi-host-facts §2). The scheduler therefore tracks runs itself
//!   (`BeforeAgentStart` … `Settled`) and treats a compaction hook as idle when the input says so
//!   *or* no run is active. The pre-prompt check fires before `before_agent_start`, so it resets
//!   directly whatever the adapter passes as `idle`.
//! - **Forced resets** (`ForcedResetRequested`) are served where the policy asks: at this
//!   `turn_end` (`at_turn_end`, the policy's own turn-end step: the model kept calling blocked
//!   tools, so the run goes on in the new window) or at the next completed
//!   `agent_before_settle`. A compaction hook arriving first serves them too. A forced request
//!   made while idle survives until the next run's settle point; an aborted or failed run clears it.
//! - **The borrowed turn is the one whose request carried the steer**, and its `turn_end`
//!   installs the reset (`Fallback`), as the steer promises ("as soon as you finish this turn"),
//!   whether the model wrote notes or went on working. Usually that is the next turn (Pi runs
//!   its threshold check after a turn's end and picks the steer up for the next request), but
//!   not always: Pi delivers a user's steer (or an extension's) queued earlier first, one per
//!   request, and for a router (virtual) model it checks the threshold after the request's
//!   messages are fixed. The engine reports at each `turn_end` whether the window's branch holds
//!   the steer (Pi appends a queued message as it puts it into a request); until it does, the
//!   window waits, overdue or not. A borrowed turn whose request failed and that Pi retries
//!   (`Ready` after the failed attempt's `agent_end`, no settle in between) resets at the
//!   retried turn's end. A model that ignores the steer never gets a turn in the full window
//!   after its borrowed one.
//! - **Later crossings in a window** reset: a mid-run threshold hook after the window's borrowed
//!   turn (allowance `Spent` without a reset) marks the reset overdue, and the next `turn_end`
//!   installs it (`Fallback`). The model never gets a second note-taking turn, and the context
//!   cannot grow on until the provider overflows.
//! - **Explicit requests** survive until the settle point of the run they were made in: served at
//!   a completed `agent_before_settle`, cleared by an aborted one, and cleared by `agent_settled`
//!   if still pending then. A run that fails (a provider error) leaves its `new_context` *owed*:
//!   the model was told a new window is coming, so the next idle input resets before it runs
//!   (the engine asks with [`SchedInput::InputResetRequested`]), else the next completed settle
//!   point does; only an applied reset (or a window boundary: `Invalidate`, a toggle) ends it.
//! - **Priority** when several requests are served by one reset: `Handoff` > `Idle` (an idle
//!   handoff's commit) > `NewContext` > forced source > `Fallback`. A compaction hook reports its own reason (`Manual`, `Threshold`,
//!   `Overflow`) unless a handoff is ready, in which case the reset is `Handoff` (the boot block
//!   then carries the handoff) and, for overflow, still restates the dropped request.
//! - **No borrow when a reset is already coming**: a mid-run threshold hook while an explicit,
//!   handoff or forced request is pending only cancels.
//! - **A borrowed turn whose `agent_end` was never seen** still resets at the completed settle.
//! - **Requests while a reset is in flight are absorbed by it**: `new_context` answers
//!   `AlreadyPending`, handoff/forced requests are ignored, compaction hooks are cancelled. If the
//!   attempt is then rejected, those requests are gone (no loop); a later request may retry. A
//!   rejected window-full reset leaves one retry (`pending() == Fallback`): the window is still
//!   full, so the next completed settle point or compaction hook resets it, and a mid-run
//!   threshold crossing meanwhile only cancels (no second borrowed turn). A retry that is
//!   rejected again leaves the next retry, one per settle point at most.
//! - **Window boundaries**: the fallback allowance re-arms on an applied reset. `Invalidate`
//!   (a session start, reload or tree navigation) and switching Relay on forget the in-memory
//!   allowance; the engine then restores it from the branch with
//!   [`Scheduler::restore_allowance`]: a window whose branch already shows the note-taking steer
//!   has spent its borrowed turn, whatever happened to the process in between.
//! - **Attempt ids** are never reused within one scheduler. The engine should call
//!   [`Scheduler::set_next_attempt_floor`] with one more than the largest attempt id found on the
//!   branch, so that an old compaction entry can never match a new attempt.
//! - **Contract with the engine**: `ResetApplied`/`ResetRejected` for an attempt must be reported
//!   before the `Settled` of the run it was output in; an attempt still unresolved at `Settled` is
//!   abandoned so that a lost callback cannot block resets forever.

use serde::Serialize;

mod io;
pub use io::*;

/// The `new_context` tool's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NewContextAnswer {
    /// A reset will happen once the run settles.
    Scheduled,
    /// A reset is already pending or under way; nothing changed.
    AlreadyPending,
    /// Relay's window features are off.
    Disabled,
}

/// The per-window fallback allowance: may this window still borrow a note-taking turn?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Allowance {
    /// No turn borrowed yet in this window.
    Available,
    /// The note-taking steer was sent; waiting for the run's `agent_end`.
    Borrowed,
    /// The borrowed turn ended; reset at the completed settle.
    Ready,
    /// The borrowed turn was used up (reset issued, run aborted or failed, or the branch shows the
    /// window's steer: [`Scheduler::restore_allowance`]). Re-armed only by an applied reset.
    Spent,
}

/// The reset scheduler. See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheduler {
    enabled: bool,
    /// A run is active: `BeforeAgentStart` seen and no `Settled` since. Tracked even while disabled.
    run_active: bool,
    /// `new_context` was called and not yet served or cleared.
    explicit: bool,
    /// A `new_context` whose run failed before its settle point: still to be served, at the next
    /// idle input (its compaction) or the next completed settle point.
    owed: bool,
    /// A handoff waits for its `turn_end` commit.
    handoff: bool,
    /// Idle-input recovery asked for a compaction (the attempt id its reset will carry); its
    /// `manual` hook is answered with the `Idle` reset. Cleared by that hook, a failure before
    /// it, and the run the input starts.
    input_reset: Option<AttemptId>,
    /// The policy wants a reset: its source, and whether it is served at the next `turn_end`
    /// (else at the next completed settle).
    forced: Option<(ResetSource, bool)>,
    /// A window-full reset (fallback, threshold, overflow) was rejected: the window still needs
    /// one. Served like a borrowed turn that ended (at the next completed settle, or by a
    /// compaction hook), without borrowing another turn; it survives aborted runs.
    retry: bool,
    allowance: Allowance,
    /// A threshold crossing came mid-run after this window's borrowed turn (or after the
    /// allowance was spent without a reset): the reset is installed at the next `turn_end`.
    overdue: bool,
    /// The reset that was output and is not yet applied, rejected or abandoned.
    in_flight: Option<(AttemptId, ResetSource)>,
    next_attempt: AttemptId,
    /// An overflow hook may reset now (set by the engine before each overflow hook: recovery is
    /// on and this window's one reset-and-retry is not spent). When false the hook is cancelled.
    overflow_allowed: bool,
}

impl Scheduler {
    /// A scheduler for a fresh window, with Relay's window features on or off.
    pub fn new(enabled: bool) -> Self {
        Scheduler {
            enabled,
            run_active: false,
            explicit: false,
            owed: false,
            handoff: false,
            input_reset: None,
            forced: None,
            retry: false,
            allowance: Allowance::Available,
            overdue: false,
            in_flight: None,
            next_attempt: 1,
            overflow_allowed: true,
        }
    }

    // ----- getters -----

    /// Relay's window features are on.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The source the next reset would carry, if a reset is requested and not yet output.
    pub fn pending(&self) -> Option<ResetSource> {
        if self.handoff {
            Some(ResetSource::Handoff)
        } else if self.input_reset.is_some() {
            Some(ResetSource::Idle)
        } else if let Some((ResetSource::Idle, _)) = self.forced {
            // An idle reset commits a written handoff: it ranks with a handoff.
            Some(ResetSource::Idle)
        } else if self.explicit || self.owed {
            Some(ResetSource::NewContext)
        } else if let Some((source, _)) = self.forced {
            Some(source)
        } else if self.overdue
            || self.retry
            || matches!(self.allowance, Allowance::Borrowed | Allowance::Ready)
        {
            Some(ResetSource::Fallback)
        } else {
            None
        }
    }

    /// The reset that was output and whose outcome is not yet known.
    pub fn in_flight(&self) -> Option<(AttemptId, ResetSource)> {
        self.in_flight
    }

    /// The fallback allowance of the current window.
    pub fn allowance(&self) -> Allowance {
        self.allowance
    }

    /// A note-taking turn was borrowed in the current window.
    pub fn borrowed_this_window(&self) -> bool {
        self.allowance != Allowance::Available
    }

    /// A rejected window-full reset waits for its retry.
    pub fn retry_pending(&self) -> bool {
        self.retry
    }

    /// A completed settle point now would reset the window anyway: a request this scheduler
    /// serves there (explicit, owed, forced, a retry, a borrowed or overdue window-full reset,
    /// a ready handoff), or a reset already in flight. The budget policy asks for nothing then.
    pub fn settle_reset_due(&self) -> bool {
        self.in_flight.is_some() || (self.pending().is_some() && self.accepts_requests())
    }

    /// A `new_context` of a run that failed is still to be served.
    pub fn new_context_owed(&self) -> bool {
        self.owed
    }

    /// A run is active (between `before_agent_start` and `agent_settled`).
    pub fn run_active(&self) -> bool {
        self.run_active
    }

    // ----- handle -----

    /// Feed one input; returns what the adapter must do in the current hook. At most one
    /// [`SchedOutput::Reset`] per call. A [`SchedInput::CompactHook`] always gets exactly one of
    /// `Reset`, `CancelCompaction` or `PassThrough` as its last output (possibly preceded by
    /// `SteerNotes`); other inputs get `Reset` or nothing.
    pub fn handle(&mut self, input: SchedInput) -> Vec<SchedOutput> {
        match input {
            SchedInput::NewContextCalled => {
                self.new_context();
                Vec::new()
            }
            SchedInput::HandoffCommitReady => {
                if self.accepts_requests() {
                    self.handoff = true;
                }
                Vec::new()
            }
            SchedInput::ForcedResetRequested {
                source,
                at_turn_end,
            } => {
                self.handle_forced_request(source, at_turn_end);
                Vec::new()
            }
            SchedInput::CompactHook { reason, idle } => self.handle_compact_hook(reason, idle),
            SchedInput::InputResetRequested => self.handle_input_reset_request(),
            SchedInput::InputResetFailed { attempt } => {
                if self.input_reset == Some(attempt) {
                    self.input_reset = None;
                }
                Vec::new()
            }
            SchedInput::BeforeAgentStart => {
                self.run_active = true;
                // The input's boundary is over: an input reset not installed by now never is.
                self.input_reset = None;
                Vec::new()
            }
            SchedInput::TurnEnd {
                has_queued_user_messages,
                completed,
                steer_delivered,
            } => self.handle_turn_end(has_queued_user_messages, completed, steer_delivered),
            SchedInput::AgentEnd => {
                if self.enabled && self.allowance == Allowance::Borrowed {
                    self.allowance = Allowance::Ready;
                }
                Vec::new()
            }
            SchedInput::BeforeSettle {
                outcome,
                has_queued_user_messages,
            } => self.handle_before_settle(outcome, has_queued_user_messages),
            SchedInput::Settled { aborted } => {
                self.run_active = false;
                self.input_reset = None;
                // Contract: the outcome of every attempt is known by now. A lost one is abandoned.
                self.in_flight = None;
                self.drop_run_work(aborted);
                Vec::new()
            }
            SchedInput::ResetApplied { attempt } => {
                if self.is_current_attempt(attempt) {
                    self.in_flight = None;
                    self.allowance = Allowance::Available;
                }
                Vec::new()
            }
            SchedInput::ResetRejected { attempt } => {
                self.handle_reset_rejected(attempt);
                Vec::new()
            }
            SchedInput::Invalidate => {
                self.run_active = false;
                self.forget_window();
                Vec::new()
            }
            SchedInput::SetEnabled(on) => {
                if on != self.enabled {
                    self.enabled = on;
                    self.forget_window();
                }
                Vec::new()
            }
        }
    }

    // ----- mutators -----

    /// The `new_context` tool: record an explicit request and say what happened.
    pub fn new_context(&mut self) -> NewContextAnswer {
        if !self.enabled {
            NewContextAnswer::Disabled
        } else if self.in_flight.is_some()
            || self.explicit
            || self.owed
            || self.handoff
            || self.input_reset.is_some()
            || self.forced.is_some()
            || self.overdue
            || self.retry
        {
            NewContextAnswer::AlreadyPending
        } else {
            // A borrowed fallback is consumed by the explicit request: one reset, one continuation.
            self.explicit = true;
            NewContextAnswer::Scheduled
        }
    }

    /// The branch's verdict on the current window, given after a session start, a reload, a tree
    /// navigation or `/relay on` (which forget the in-memory state): `borrowed` when the window
    /// already holds Relay's note-taking steer, `reset_failed` when it holds the notice of a
    /// rejected window-full reset. A borrowed window never borrows a second turn (`Available`
    /// becomes `Spent`; a borrow in progress is left alone); a failed one gets its retry back.
    pub fn restore_allowance(&mut self, borrowed: bool, reset_failed: bool) {
        if borrowed && self.allowance == Allowance::Available {
            self.allowance = Allowance::Spent;
        }
        if reset_failed && self.accepts_requests() {
            self.retry = true;
        }
    }

    /// Relay gives up retrying the current window's rejected reset (its third failure in the
    /// window, or a benign cancellation): no retry is left pending. The engine arms the budget
    /// fallback instead when the failure counts.
    pub fn give_up_retry(&mut self) {
        self.retry = false;
    }

    /// Whether the next overflow hook may reset: false when overflow recovery is off or the
    /// window already had its one reset-and-retry (the engine reads both from the configuration
    /// and the branch). A refused overflow hook is cancelled, never passed to Pi's summarizer.
    pub fn allow_overflow_reset(&mut self, allowed: bool) {
        self.overflow_allowed = allowed;
    }

    /// Make every attempt id issued from now on at least `floor` (ids are never lowered). The
    /// engine passes one more than the largest attempt id stored on the branch.
    pub fn set_next_attempt_floor(&mut self, floor: AttemptId) {
        self.next_attempt = self.next_attempt.max(floor);
    }

    // ----- internals -----

    fn accepts_requests(&self) -> bool {
        self.enabled && self.in_flight.is_none()
    }

    fn is_current_attempt(&self, attempt: AttemptId) -> bool {
        matches!(self.in_flight, Some((id, _)) if id == attempt)
    }

    /// A forced reset is requested: remembered (with the earliest serving point asked for) while
    /// the scheduler accepts requests.
    fn handle_forced_request(&mut self, source: ResetSource, at_turn_end: bool) {
        if self.accepts_requests() {
            match &mut self.forced {
                None => self.forced = Some((source, at_turn_end)),
                // A later request may only bring the serving point forward.
                Some((_, due)) => *due |= at_turn_end,
            }
        }
    }

    /// Idle input asks for a reset: a compaction is started only when nothing else is pending or
    /// running that would serve it.
    fn handle_input_reset_request(&mut self) -> Vec<SchedOutput> {
        // A retry left by a rejected reset is served by this reset too, and so is a
        // `new_context` owed by a failed run (its reset is this one).
        let other = self.handoff || self.explicit || self.forced.is_some();
        if !self.accepts_requests() || self.run_active || other || self.input_reset.is_some() {
            return Vec::new();
        }
        let attempt = self.next_attempt;
        self.next_attempt += 1;
        self.input_reset = Some(attempt);
        vec![SchedOutput::Compact { attempt }]
    }

    /// A turn ended: a committed handoff, a forced reset due at turn end, an overdue reset or the
    /// end of a borrowed turn is served here. The borrowed turn is the one whose request carried
    /// the steer (`steer_delivered`): until then the window waits, so that the note-taking
    /// request is read in the window it is about.
    fn handle_turn_end(
        &mut self,
        has_queued_user_messages: bool,
        completed: bool,
        steer_delivered: bool,
    ) -> Vec<SchedOutput> {
        if !self.accepts_requests() {
            return Vec::new();
        }
        let borrowing = matches!(self.allowance, Allowance::Borrowed | Allowance::Ready);
        // The steer is still queued behind something Pi delivered first (a user's steer, an
        // extension's message) or missed a request already fixed (a router model's check).
        let steer_waits = borrowing && !steer_delivered;
        if self.handoff {
            self.issue(ResetSource::Handoff, !has_queued_user_messages, false)
        } else if matches!(self.forced, Some((_, true)))
            || (self.overdue && !steer_waits)
            || (completed && borrowing && steer_delivered)
        {
            // A borrowed turn ends here (its request carried the steer): the steer promised
            // the reset as soon as this turn is finished. One the user aborted (or that
            // failed) resets nothing: its run's settle drops it, and one Pi retries
            // (`Ready` after its `agent_end`) resets at the retried turn's end.
            // One reset serves every request; the source is the highest pending one.
            match self.pending() {
                Some(source) => self.issue(source, !has_queued_user_messages, false),
                None => Vec::new(),
            }
        } else {
            Vec::new()
        }
    }

    /// The run is about to settle: a completed one serves the highest pending reset; an aborted
    /// or failed one drops the run's work (a failed `new_context` stays owed).
    fn handle_before_settle(
        &mut self,
        outcome: Outcome,
        has_queued_user_messages: bool,
    ) -> Vec<SchedOutput> {
        match outcome {
            Outcome::Completed => match self.pending() {
                Some(source) if self.accepts_requests() => {
                    self.issue(source, !has_queued_user_messages, false)
                }
                _ => Vec::new(),
            },
            Outcome::Aborted => {
                self.drop_run_work(true);
                Vec::new()
            }
            Outcome::Error => {
                // The model was told a new window is coming: a provider error does not
                // cancel that (the user's Esc does).
                self.owed |= self.explicit && self.accepts_requests();
                self.drop_run_work(true);
                Vec::new()
            }
        }
    }

    /// The reset in flight was rejected: a reset for a full window is retried without borrowing
    /// another turn.
    fn handle_reset_rejected(&mut self, attempt: AttemptId) {
        if let Some((id, source)) = self.in_flight {
            if id == attempt {
                self.in_flight = None;
                // The window is still full: try again without borrowing another turn.
                self.retry = matches!(
                    source,
                    ResetSource::Fallback | ResetSource::Threshold | ResetSource::Overflow
                );
            }
        }
    }

    fn handle_compact_hook(&mut self, reason: CompactReason, idle: bool) -> Vec<SchedOutput> {
        if !self.enabled {
            return vec![SchedOutput::PassThrough];
        }
        if self.in_flight.is_some() {
            return vec![SchedOutput::CancelCompaction];
        }
        // The compaction the idle-input recovery started: its reset, with the id handed out.
        if let Some(attempt) = self.input_reset.take() {
            if reason == CompactReason::Manual {
                let source = if self.handoff {
                    ResetSource::Handoff
                } else if self.owed {
                    ResetSource::NewContext
                } else {
                    ResetSource::Idle
                };
                return self.issue_as(attempt, source, false, false);
            }
        }
        let handoff_ready = self.handoff;
        let hook_source = |source| {
            if handoff_ready {
                ResetSource::Handoff
            } else {
                source
            }
        };
        match reason {
            CompactReason::Overflow if !self.overflow_allowed => {
                vec![SchedOutput::CancelCompaction]
            }
            CompactReason::Overflow => self.issue(hook_source(ResetSource::Overflow), false, true),
            CompactReason::Manual => self.issue(hook_source(ResetSource::Manual), false, false),
            CompactReason::Threshold if idle || !self.run_active => {
                self.issue(hook_source(ResetSource::Threshold), false, false)
            }
            CompactReason::Threshold => {
                let reset_coming =
                    self.explicit || self.owed || self.handoff || self.forced.is_some();
                match self.allowance {
                    Allowance::Available if !reset_coming && !self.retry => {
                        self.allowance = Allowance::Borrowed;
                        vec![SchedOutput::SteerNotes, SchedOutput::CancelCompaction]
                    }
                    // The window already had its note-taking turn (or spent it without a reset,
                    // or its reset was rejected) and the run goes on growing: reset at the next
                    // turn boundary.
                    Allowance::Borrowed
                    | Allowance::Ready
                    | Allowance::Spent
                    | Allowance::Available
                        if !reset_coming =>
                    {
                        self.overdue = true;
                        vec![SchedOutput::CancelCompaction]
                    }
                    _ => vec![SchedOutput::CancelCompaction],
                }
            }
        }
    }

    /// Output one reset; it consumes every pending request.
    fn issue(
        &mut self,
        source: ResetSource,
        continuation: bool,
        restate_dropped_request: bool,
    ) -> Vec<SchedOutput> {
        let attempt = self.next_attempt;
        self.next_attempt += 1;
        self.issue_as(attempt, source, continuation, restate_dropped_request)
    }

    /// [`Scheduler::issue`] with an attempt id handed out before (an input reset's).
    fn issue_as(
        &mut self,
        attempt: AttemptId,
        source: ResetSource,
        continuation: bool,
        restate_dropped_request: bool,
    ) -> Vec<SchedOutput> {
        self.input_reset = None;
        self.explicit = false;
        self.owed = false;
        self.handoff = false;
        self.forced = None;
        self.overdue = false;
        self.retry = false;
        if matches!(self.allowance, Allowance::Borrowed | Allowance::Ready) {
            self.allowance = Allowance::Spent;
        }
        self.in_flight = Some((attempt, source));
        vec![SchedOutput::Reset {
            attempt,
            source,
            continuation,
            restate_dropped_request,
        }]
    }

    /// A run ended without serving its requests (aborted, failed, or settled with work left over):
    /// clear the run's requests and spend a borrowed allowance. `clear_forced` also drops a forced
    /// request, which otherwise survives to the next run.
    fn drop_run_work(&mut self, clear_forced: bool) {
        self.explicit = false;
        self.handoff = false;
        self.input_reset = None;
        self.overdue = false;
        if clear_forced {
            self.forced = None;
        }
        if matches!(self.allowance, Allowance::Borrowed | Allowance::Ready) {
            self.allowance = Allowance::Spent;
        }
    }

    /// Drop every request and the in-flight attempt; the next window starts with a fresh allowance.
    fn forget_window(&mut self) {
        self.explicit = false;
        self.owed = false;
        self.handoff = false;
        self.input_reset = None;
        self.forced = None;
        self.overdue = false;
        self.retry = false;
        self.in_flight = None;
        self.allowance = Allowance::Available;
    }
}

#[cfg(test)]
mod tests;
