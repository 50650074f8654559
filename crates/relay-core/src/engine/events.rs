//! The event's own step of [`Engine::handle`]: [`Engine::on_event`] dispatches each Pi hook to
//! one method here. The common steps before and after it stay in `handle` and run for every
//! event: a step that is done early returns to `on_event`, never past them.

use serde_json::Value;

use super::files::TelemetryEvent;
use super::reset;
use super::wire::{
    Effect, Event, HookReply, HookResult, Moment, NotifyLevel, PiCompactReason, PiOutcome,
    BOOT_TYPE,
};
use super::{Engine, Failure};
use crate::policy::{FailureKind, PolicyInput};
use crate::render::render_tree_summary_refused;
use crate::scheduler::{CompactReason, Outcome, SchedInput, SchedOutput};
use crate::tool_name::ToolName;

impl Engine {
    /// The event's own step of [`Engine::handle`]: one method per hook (or per group of hooks
    /// that share their step).
    pub(super) fn on_event(&mut self, event: &Event, moment: &Moment, reply: &mut HookReply) {
        match event {
            Event::SessionStart { run_active } => {
                self.on_session_start(*run_active, moment, reply);
            }
            Event::SessionTree => self.on_tree_or_shutdown(false),
            Event::SessionShutdown => self.on_tree_or_shutdown(true),
            Event::Input => self.on_input(moment, reply),
            Event::CompactError {
                attempt,
                error_message,
            } => self.on_compact_error(*attempt, error_message, moment, reply),
            Event::BeforeAgentStart => self.on_before_agent_start(moment, reply),
            Event::Context => reply.effects.push(self.status_effect(moment)),
            Event::ToolCall {
                tool_name,
                tool_call_id,
            } => self.on_tool_call(tool_name, tool_call_id, moment, reply),
            Event::ToolResult {
                tool_name,
                tool_call_id,
                is_error,
            } => self.on_tool_result(tool_name, tool_call_id, *is_error, moment, reply),
            // Their facts are read by `unseen_turn_end` and `boundary_hooks`, around every event.
            Event::TurnStart | Event::MessageEnd { .. } => {}
            Event::TurnEnd {
                tool_results,
                outcome,
                aborted,
                ..
            } => {
                let outcome = match aborted {
                    true => Some(&PiOutcome::Aborted),
                    false => outcome.as_ref(),
                };
                self.on_turn_end(*tool_results, outcome, moment, reply)
            }
            Event::AgentEnd => {
                self.scheduler.handle(SchedInput::AgentEnd);
            }
            Event::AgentBeforeSettle { outcome, jobs, .. } => {
                self.on_before_settle(outcome.as_ref(), jobs.as_deref(), moment, reply);
            }
            Event::AgentSettled { aborted } => self.on_settled(*aborted, moment, reply),
            Event::SessionCompactFailed {
                reason,
                aborted,
                error_message,
            } => self.on_compact_failed(
                reason.as_ref(),
                *aborted,
                error_message.as_deref(),
                moment,
                reply,
            ),
            Event::SessionBeforeTree {
                user_wants_summary,
                summarizing,
            } => {
                let resets = summarizing.iter().filter(|t| *t == "compaction").count();
                let resets = u32::try_from(resets).unwrap_or(u32::MAX);
                self.on_before_tree(*user_wants_summary, resets, reply)
            }
            Event::SessionBeforeCompact {
                reason,
                will_retry,
                custom_instructions,
            } => self.on_before_compact(
                reason,
                *will_retry,
                custom_instructions.as_deref(),
                moment,
                reply,
            ),
            Event::Command { args } => self.command(args, moment, reply),
        }
    }

    /// `session_start`: nothing handed out survives; the policy's phase as the branch stands, and
    /// the root window's boot block if it has none yet (not into a run under way).
    fn on_session_start(&mut self, run_active: bool, moment: &Moment, reply: &mut HookReply) {
        self.scheduler.handle(SchedInput::Invalidate);
        self.restore_allowance();
        self.outstanding.reset = None;
        self.outstanding.input_compact = None;
        self.last_activity_ms = None;
        // A window checked in an earlier process (or before a reload, a resume, a fork) is
        // checked again: the workspace may have moved meanwhile.
        self.budget.stale_recheck = true;
        self.budget.stale_started = None;
        // A /reload in the middle of a run (Pi 1.3 lets one through) starts this engine
        // inside that run: its turn ends, crossings and settle point are the run's, and so is
        // the handoff request the engine before it sent (one per run, read from the branch).
        self.run_active = run_active;
        if run_active {
            self.scheduler.handle(SchedInput::BeforeAgentStart);
            self.last_activity_ms = Some(moment.now_ms);
            let (asked, idle_open) = self.mirror.run_request();
            self.budget.policy.settle_continued |= asked;
            self.budget.policy.idle_requested |= idle_open;
        }
        self.report_skipped_notes(reply);
        self.report_unimported(reply);
        // The policy's phase as the branch stands (shown in the status file at once).
        let fx = self.policy_step(self.usage_input(moment));
        self.apply_policy(fx, moment, reply);
        // The boot block opens the root window, before its first request. A run already under
        // way made its requests without it (a reload inside a run, on a branch that has none:
        // a new session, or `/tree` back to its root), and Pi would hold the message until the
        // turn ends, where a reset can carry it into the next window. So the run goes on as it
        // began; the next session_start while idle sends the block, as it does for any root
        // window without one.
        if self.enabled()
            && !run_active
            && self.window_count() == 1
            && self.mirror.current_window().boot_at.is_none()
            && !self.outstanding.boot
        {
            self.outstanding.boot = true;
            let text = self.boot_text(None, None, reset::BootExtras::default());
            reply.effects.push(Effect::Send {
                custom_type: BOOT_TYPE.into(),
                content: text,
                display: true,
                trigger_turn: false,
                deliver_as: None,
                details: Some(crate::records::MessageDetails::current()),
            });
        }
        reply.effects.push(self.status_effect(moment));
        self.write_status(moment, reply);
    }

    /// `session_tree` / `session_shutdown`: what was handed out for the branch being left is
    /// dropped; after a navigation the policy starts over from the new branch.
    fn on_tree_or_shutdown(&mut self, shutdown: bool) {
        if shutdown {
            self.run_active = false;
        }
        self.scheduler.handle(SchedInput::Invalidate);
        self.restore_allowance();
        self.outstanding.reset = None;
        self.outstanding.input_compact = None;
        self.outstanding.reminder = None;
        self.outstanding.boot = false;
        if !shutdown {
            // The policy's state belongs to the branch that was left: start over from what
            // the new branch holds, as a reload of it would.
            self.restart_policy();
        }
    }

    /// `input`: idle input with a stored handoff may recover first; a `new_context` still owed
    /// opens its window before the input runs.
    fn on_input(&mut self, moment: &Moment, reply: &mut HookReply) {
        // A compaction started for earlier input whose callback never came is stale.
        self.outstanding.input_compact = None;
        // Input while a run is active is a steer or follow-up: not a boundary. Without a
        // stored handoff there is nothing to recover with (the run's own checks follow).
        if !self.run_active && self.budget.stored_handoff.is_some() {
            let idle_ms = self
                .last_activity_ms
                .map(|t| u64::try_from(moment.now_ms.saturating_sub(t)).unwrap_or(0));
            let stored_handoff = self.budget.stored_handoff.as_ref().map(|h| h.path.clone());
            let mut fx = self.policy_step(self.usage_input(moment));
            fx.extend(self.policy_step(PolicyInput::ExternalInput {
                idle_ms,
                stored_handoff,
            }));
            self.apply_policy(fx, moment, reply);
        }
        // A `new_context` whose run failed is still owed: the new window opens before
        // this input runs (Pi's compaction, answered with the `new_context` reset).
        if !self.run_active && reply.result.is_none() && self.scheduler.new_context_owed() {
            let outs = self.scheduler.handle(SchedInput::InputResetRequested);
            self.apply_sched(outs, moment, reply);
        }
    }

    /// The error callback of a compaction Relay started or answered: which outstanding reset (if
    /// any) it ends.
    fn on_compact_error(
        &mut self,
        attempt: u64,
        error_message: &str,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        // Pi reports a failure to `session_compact_failed` first: then this is the same
        // failure again, and nothing is outstanding for it any more.
        let failure = Failure::Reported {
            aborted: false,
            message: Some(error_message),
        };
        if self.outstanding.input_compact == Some(attempt) {
            self.input_compact_failed(attempt, failure, moment, reply);
        } else if self.outstanding.hook_reset == Some(attempt)
            && self.outstanding.reset == Some(attempt)
        {
            self.outstanding.hook_reset = None;
            self.outstanding.reset = None;
            self.reject_reset(attempt, failure, moment, reply);
        }
    }

    /// `before_agent_start`: a run begins; the window's size is judged before its first tool
    /// call, and the low-budget reminder may go in before its first request.
    fn on_before_agent_start(&mut self, moment: &Moment, reply: &mut HookReply) {
        // An externally started run: a handoff stored before it is no longer current.
        self.budget.stored_handoff = None;
        // The input's boundary is over: a late callback of its compaction is stale.
        self.outstanding.input_compact = None;
        self.run_active = true;
        self.scheduler.handle(SchedInput::BeforeAgentStart);
        // The window's size is judged before the run's first tool call: a session resumed
        // past the handoff or hard limit is enforced at once.
        let mut fx = self.policy_step(self.usage_input(moment));
        fx.extend(self.policy_step(PolicyInput::BeforeAgentStart));
        self.apply_policy(fx, moment, reply);
        self.maybe_remind(moment, reply);
    }

    /// `tool_call`: the policy judges the call (it may block it).
    fn on_tool_call(
        &mut self,
        tool_name: &str,
        tool_call_id: &str,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        let mut fx = self.policy_step(self.usage_input(moment));
        fx.extend(self.policy_step(PolicyInput::ToolCall {
            id: tool_call_id.to_string(),
            name: tool_name.to_string(),
        }));
        self.apply_policy(fx, moment, reply);
    }

    /// `tool_result`: a tool that really ran invalidates a stored handoff; the policy hears the
    /// call finished.
    fn on_tool_result(
        &mut self,
        tool_name: &str,
        tool_call_id: &str,
        is_error: bool,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        // A tool that really ran (a blocked call did not) invalidates a handoff written
        // before it: it neither commits nor travels into an overflow reset.
        if ToolName::of(tool_name) != ToolName::ContextHandoff
            && !self
                .budget
                .policy
                .blocked_calls
                .iter()
                .any(|id| id == tool_call_id)
        {
            self.tool_results_seen += 1;
            self.budget.stored_handoff = None;
            self.budget.handoff_ready = None;
        }
        let fx = self.policy_step(PolicyInput::ToolFinished {
            id: tool_call_id.to_string(),
            name: tool_name.to_string(),
            success: !is_error,
        });
        self.apply_policy(fx, moment, reply);
    }

    /// `turn_end`: the policy and the scheduler judge the boundary; a turn that keeps the run
    /// going may clear old tool results, else be reminded of the budget.
    fn on_turn_end(
        &mut self,
        tool_results: u32,
        outcome: Option<&PiOutcome>,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        let mut fx = self.policy_step(self.usage_input(moment));
        fx.extend(self.policy_step(PolicyInput::TurnEnd {
            continues: tool_results > 0,
        }));
        self.apply_policy(fx, moment, reply);
        let outs = self.scheduler.handle(SchedInput::TurnEnd {
            has_queued_user_messages: moment.has_pending_messages,
            completed: PiOutcome::completed(outcome),
            steer_delivered: self.mirror.current_window().steer_at.is_some(),
        });
        self.apply_sched(outs, moment, reply);
        // The reminder goes in where the next request will read it: after a turn whose
        // tool results keep the run going (Pi appends it before that request), or before
        // a run's first request. Never after a final answer, which must stay the last
        // message (print mode prints only a final assistant message).
        // Old tool results give way to stubs before the reminder would fire; a turn that
        // clears is not reminded (the next one judges the smaller window).
        if tool_results > 0 && !self.maybe_clear(moment, reply) {
            self.maybe_remind(moment, reply);
        }
        // The status file is written at session start, when a run settles and after a
        // reset or handoff, never per turn: an atomic write costs fsyncs on the hot path.
    }

    /// `agent_before_settle`: the policy and the scheduler decide whether the run ends here or
    /// goes on (a reset, a continuation, the one continuation after an early stop).
    fn on_before_settle(
        &mut self,
        outcome: Option<&PiOutcome>,
        jobs: Option<&[Value]>,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        if PiOutcome::completed(outcome) {
            // Pending work: a queued user follow-up, background work the host reports
            // (`Moment::pending_work`), or this session's pending pi-jobs jobs/watches.
            let jobs = crate::integrations::pending_jobs(jobs, self.mirror.history.session_id());
            let fx = self.policy_step(PolicyInput::BeforeSettle {
                pending_work: moment.has_pending_messages || moment.pending_work > 0 || jobs > 0,
                reset_due: self.scheduler.settle_reset_due(),
                stored_handoff: self.budget.stored_handoff.is_some(),
            });
            self.apply_policy(fx, moment, reply);
        }
        // An outcome this Relay does not know is not a completed one: the scheduler keeps
        // what the run owes, as after an error.
        let outcome = match outcome {
            None | Some(PiOutcome::Completed) => Outcome::Completed,
            Some(PiOutcome::Aborted) => Outcome::Aborted,
            Some(PiOutcome::Error | PiOutcome::Other(_)) => Outcome::Error,
        };
        let outs = self.scheduler.handle(SchedInput::BeforeSettle {
            outcome,
            has_queued_user_messages: moment.has_pending_messages,
        });
        self.apply_sched(outs, moment, reply);
        if outcome == Outcome::Completed {
            self.continue_after_early_stop(moment, reply);
        }
    }

    /// `agent_settled`: a reset handed out at this settle point that never reached the branch
    /// failed; the run is over (and an armed fallback relaunches).
    fn on_settled(&mut self, aborted: bool, moment: &Moment, reply: &mut HookReply) {
        if let Some(attempt) = self.outstanding.reset.take() {
            // The reset handed out at this settle point never reached the branch (Pi
            // found the boundary draft invalid, or the run ended before it was applied).
            // An aborted run is the user's doing: benign, like a cancellation.
            let failure = if aborted {
                Failure::Reported {
                    aborted: true,
                    message: None,
                }
            } else {
                Failure::Rejected
            };
            self.reject_reset(attempt, failure, moment, reply);
        }
        self.run_active = false;
        self.scheduler.handle(SchedInput::Settled { aborted });
        // An armed fallback with an owned wrapper: the marker, then Pi's shutdown.
        self.settle_relaunch(aborted, moment, reply);
        reply.effects.push(self.status_effect(moment));
        self.write_status(moment, reply);
        // A large resumed session's earlier windows are read now, while the user reads the
        // answer (a `pi -p` run ends here and stops that load at shutdown): never before the
        // first request, which waits only for the current window.
        reply.load_history = !self.history_complete();
    }

    /// `session_compact_failed`: which compaction failed (Relay's answered reset, the idle-input
    /// compaction, Pi's own summarizer, an overflow Pi gave up on) and what that failure means.
    fn on_compact_failed(
        &mut self,
        reason: Option<&PiCompactReason>,
        aborted: bool,
        error_message: Option<&str>,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        let failure = Failure::Reported {
            aborted,
            message: error_message,
        };
        // The reset returned from a compaction hook was cancelled or failed (a cancel of
        // Relay's own, for a borrowed turn, also lands here but leaves no attempt): the
        // request is over, and a later one may try again.
        let answered = self
            .outstanding
            .hook_reset
            .take()
            .filter(|a| self.outstanding.reset == Some(*a));
        match answered {
            Some(attempt) => {
                self.outstanding.reset = None;
                self.reject_reset(attempt, failure, moment, reply);
            }
            // The idle-input compaction failed before its hook ("Nothing to compact",
            // "Already compacted"): Pi calls no hook then, so this is its only trace.
            None if reason == Some(&PiCompactReason::Manual)
                && self.outstanding.input_compact.is_some() =>
            {
                if let Some(attempt) = self.outstanding.input_compact {
                    self.input_compact_failed(attempt, failure, moment, reply);
                }
            }
            // Pi's own summarizer, let through while the guard is off, failed: the
            // window earns one mechanical fallback at its next compaction.
            None if std::mem::take(&mut self.native.passed)
                && self.budget.guard_off
                && !aborted
                && reason != Some(&PiCompactReason::Overflow)
                && failure.kind() != FailureKind::Benign =>
            {
                self.arm_native_fallback(reason.map(PiCompactReason::as_str), moment, reply);
            }
            // Pi gave up on an overflow without calling the hook: its one
            // compact-and-retry (Relay's overflow reset) is spent and the retry overflowed.
            None if self.enabled() && !aborted && reason == Some(&PiCompactReason::Overflow) => {
                self.overflow_exhausted("retry_overflowed", moment, reply);
            }
            None => {}
        }
    }

    /// `session_before_tree`: Relay refuses a branch summary that would read windows resets
    /// already ended.
    fn on_before_tree(
        &mut self,
        user_wants_summary: bool,
        resets_to_summarize: u32,
        reply: &mut HookReply,
    ) {
        // Pi's branch summarizer would read windows that resets already ended (and spend
        // a model call on them): Relay cancels that navigation and says how to do it.
        if self.enabled() && user_wants_summary && resets_to_summarize > 0 {
            reply.result = Some(HookResult::Cancel);
            reply.effects.push(Effect::Notify {
                text: render_tree_summary_refused(resets_to_summarize),
                level: NotifyLevel::Warning,
            });
        }
    }

    /// `session_before_compact`: whether Relay answers the hook at all (off, or Pi's own
    /// summarizer while the guard is off), then a cancel for a futile threshold compaction or
    /// the scheduler's reset; an overflow's answer is reported.
    fn on_before_compact(
        &mut self,
        reason: &PiCompactReason,
        will_retry: bool,
        custom_instructions: Option<&str>,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        // The idle-input compaction reached its hook: from here on its failure is the
        // failure of the reset answered here.
        self.outstanding.input_compact = None;
        if !self.enabled() {
            return;
        }
        let Some(native_fallback) = self.guard_off_compaction(reason, moment, reply) else {
            return;
        };
        self.compact_instructions = custom_instructions
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        let reason = match reason {
            PiCompactReason::Manual => CompactReason::Manual,
            PiCompactReason::Overflow => CompactReason::Overflow,
            PiCompactReason::Threshold => CompactReason::Threshold,
            // A reason this Relay does not know (a later Pi's) is answered as Pi's own
            // threshold compaction: a reset like any automatic one, never a retry.
            PiCompactReason::Other(_) => CompactReason::Threshold,
        };
        // Overflow recovery: off by configuration, or this window's one reset-and-retry
        // is spent (only user input or a successful answer re-arms it).
        let off = self.budget.overflow_recovery_off();
        let spent = self.mirror.current_window().overflow_retry_spent();
        let futile = match reason {
            CompactReason::Threshold => self.futile_threshold(moment),
            _ => None,
        };
        if let Some(futile) = futile {
            reply.result = Some(HookResult::Cancel);
            self.warn_futile(futile, reply);
        } else {
            let allow_overflow = off.is_none() && !spent;
            self.reset_for_compact_hook(
                reason,
                native_fallback,
                allow_overflow,
                will_retry,
                moment,
                reply,
            );
        }
        // The instructions belong to this hook's answer only.
        self.compact_instructions = None;
        if reason == CompactReason::Overflow {
            self.report_overflow(off, spent, will_retry, moment, reply);
        }
    }

    /// Whether Relay answers a compaction hook while the shared context guard is off: `None`
    /// lets Pi's own manual or threshold compaction through unchanged; `Some(true)` is the
    /// window's one mechanical fallback after Pi's summarizer failed in it; `Some(false)` is
    /// Relay's answer as with the guard on (always for an overflow: its recovery stays Relay's).
    fn guard_off_compaction(
        &mut self,
        reason: &PiCompactReason,
        moment: &Moment,
        reply: &mut HookReply,
    ) -> Option<bool> {
        if !self.budget.guard_off || *reason == PiCompactReason::Overflow {
            return Some(false);
        }
        match self.mirror.current_window().native_fallback() {
            Some(false) => {
                reply.appends.push(self.native_fallback_record(true));
                self.native.passed = false;
                self.push_telemetry(
                    TelemetryEvent::NativeCompactionFallback {
                        reason: reason.as_str().to_string(),
                    },
                    moment,
                    reply,
                );
                Some(true)
            }
            _ => {
                self.native.passed = true;
                None
            }
        }
    }

    /// The scheduler's answer to a compaction hook (a reset, or a cancel for a borrowed turn),
    /// applied; the reset it returns is remembered as the hook's until Pi appends or drops it.
    fn reset_for_compact_hook(
        &mut self,
        reason: CompactReason,
        native_fallback: bool,
        allow_overflow: bool,
        will_retry: bool,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        self.scheduler.allow_overflow_reset(allow_overflow);
        // The branch decides whether this window had its note-taking turn, also when the
        // scheduler forgot a borrow (a reload) before Pi delivered its steer.
        let steered = self.mirror.current_window().steer_at.is_some();
        self.scheduler.restore_allowance(steered, false);
        let outs = self
            .scheduler
            .handle(SchedInput::CompactHook {
                reason,
                // The fallback resets at once: no borrowed turn (no summarizer either); nor does
                // a window whose note-taking request would not fit it.
                idle: !self.run_active || native_fallback || self.no_room_for_notes(moment),
            })
            .into_iter()
            .map(|out| match out {
                // An overflow Pi will not retry had its reply already: nothing is pending. A
                // reset answered from the compaction hook installs no continuation: Pi retries
                // or goes on by itself after its compaction.
                SchedOutput::Reset {
                    attempt,
                    source,
                    restate_dropped_request,
                    ..
                } => SchedOutput::Reset {
                    attempt,
                    source,
                    continuation: false,
                    restate_dropped_request: restate_dropped_request && will_retry,
                },
                other => other,
            })
            .collect();
        self.scheduler.allow_overflow_reset(true);
        self.apply_sched(outs, moment, reply);
        self.outstanding.hook_reset = match reply.result {
            Some(HookResult::Reset { .. }) => self.outstanding.reset,
            _ => None,
        };
    }
}
