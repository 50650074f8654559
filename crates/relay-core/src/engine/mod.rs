//! The engine: one object that holds the mirror of Pi's branch and every piece of policy, fed by
//! inputs and answering with outputs. Sans-IO, like quinn-proto's `Connection` and str0m's `Rtc`:
//! **no internal clock** (time arrives as `nowMs` in every input), no IO, no threads of its own;
//! every effect is data in the reply of the call that caused it, so there is no `poll_*`.
//!
//! # Methods, by kind
//!
//! - **inputs: the mirror feed** keeps the mirror equal to Pi's current branch
//!   ([`Engine::resync`], [`Engine::begin_resync`] / [`Engine::push_replayed`] /
//!   [`Engine::end_resync`] for a streamed load, [`Engine::append`], [`Engine::truncate_after`]).
//!   They return nothing: what an entry means (a reset applied, a boot block arrived) is folded
//!   into state and reported with the next reply.
//! - **inputs: observations**: [`Engine::handle`] takes one Pi hook ([`Observation`]) and returns
//!   a [`HookReply`]: effects to execute in order, and what the hook must return to Pi.
//! - **commands**: [`Engine::configure`] / [`Engine::configure_reply`] (settings, budget policy),
//!   [`Engine::tool`] (every tool the model calls), the `context_handoff` steps
//!   ([`Engine::handoff_begin`], [`Engine::handoff_render`], [`Engine::handoff_written`], with the
//!   binding's IO between them), and the `/relay on|off` toggle (a [`Event::Command`]
//!   observation).
//! - **outputs** are the replies: [`HookReply`] (of [`Effect`]s and an optional [`HookResult`])
//!   and [`ToolReply`]; the types are in [`wire`], the one contract with the extension.
//! - **getters**: [`Engine::tip`], [`Engine::contains`], [`Engine::window_count`],
//!   [`Engine::history`], [`Engine::notes`], [`Engine::enabled`], and [`tool_specs`].
//!
//! # Modules
//!
//! - [`wire`]: every type that crosses the boundary (TypeScript is generated from it);
//! - `events`: the event's own step of [`Engine::handle`], one method per Pi hook;
//! - `mirror`: feeding the mirror, per-window state, Pi's usage estimate;
//! - `reset`: reset planning, boot-block assembly, window ids;
//! - `budget`: the budget policy's state and its effects;
//! - `status`: the status line, `/relay`, the low-budget reminder;
//! - `resume`: resume checks (which command, when, the record and the message a window carries);
//! - `watch`: the watch check of a window opened by a handoff (recorded jobs no longer live);
//! - `on_task`: the one continuation after an early stop in the first run of a window an
//!   automatic or forced reset opened;
//! - `tools`: tool dispatch and the `context_handoff` steps; `specs`: tool names, labels,
//!   descriptions;
//! - `configure`: settings precedence and validation, applied.
//!
//! **Architecture Invariant:** the engine never performs IO and never reads the clock. The adapter
//! passes `nowMs`, the local time-zone offset and (for tools) Pi's usage figure in every input.
//!
//! **Architecture Invariant:** every reset goes through the one [`Scheduler`]; the engine only
//! plans what the scheduler decided and remembers what it handed out until the mirror sees it.

mod boundary;
mod budget;
pub(crate) use budget::select_budget;
mod clearing;
mod configure;
pub mod door;
mod events;
pub mod files;
mod mirror;
mod on_task;
mod reset;
mod resume;
mod router;
mod specs;
mod stale;
mod status;
mod tools;
pub mod tui;
mod watch;
pub mod wire;
pub mod wrapper;

#[cfg(test)]
mod hostile_tests;
#[cfg(test)]
mod tests;

pub use door::{
    Answer, BoundaryHooks, Description, GitWire, HostFacts, Input, Job, JobOutcome, JobResult,
    LoadPass, Loaded, Output, Work, BACKGROUND_LOAD_BYTES,
};
pub use mirror::{Appended, LoadedBranch};
pub use resume::{resume_record, ResumeCommand};
pub use specs::tool_specs;
pub use stale::stale_record;
pub use wire::{
    BudgetFilePath, ConfigSources, ContextMessage, Continuation, DeliverAs, Effect, Event, Feed,
    GitFacts, GuardState, HookReply, HookResult, Marker, Moment, NotifyLevel, Observation,
    PiOutcome, RelaunchKey, ResetPlan, ResumeFacts, ToolReply, ToolSpec, ToolStub, Usage,
    WrapperFacts, BOOT_TYPE, CLEARING_TYPE, CONTINUE_TASK_TYPE, CONTINUE_TYPE,
    HANDOFF_REQUEST_TYPE, HANDOFF_TYPE, NATIVE_FALLBACK_TYPE, REMINDER_TYPE, RESET_FAILED_TYPE,
    RESET_MARKER_TYPE, RESUME_CHECK_TYPE, STEER_TYPE, WATCH_CHECK_TYPE,
};

use crate::history::History;
use crate::notes::Notes;
use crate::policy::{classify_compact_failure, FailureKind, PolicyInput};
use crate::records::{CustomRecord, Record};
use crate::render::{
    render_futile_threshold, render_native_fallback_notice, render_overflow_exhausted,
    render_overflow_recovery_off, render_reset_failed, render_reset_failed_notice,
};
use crate::scheduler::{AttemptId, ResetSource, SchedInput, Scheduler};

/// While the shared context guard is off, Pi's own summarizer runs for `/compact` and threshold
/// compactions. When it fails, the window gets one bounded mechanical fallback: the next such
/// compaction hook in that window is answered with Relay's reset (the earlier user input, no
/// summarizer), once. Whether the window's fallback is armed or spent is on the branch
/// (`relay/native-fallback` records, [`mirror::WindowState::native_fallback`]).
#[derive(Debug, Clone, Default)]
struct NativeFallback {
    /// A manual or threshold compaction passed through to Pi's summarizer and not finished yet.
    passed: bool,
}

/// The failure of a reset Relay owns that arms the budget fallback ("compaction failure") in
/// its window: the first two are retried at the next eligible boundary.
pub(super) const MAX_OWNED_RESET_FAILURES: usize = 3;

use budget::Budget;
use configure::Settings;
use mirror::Mirror;

/// Outputs handed to the adapter that the mirror has not seen yet. Each keeps the engine from
/// handing out the same thing twice before Pi has appended it.
#[derive(Debug, Default)]
struct Outstanding {
    /// The root window's boot block was sent.
    boot: bool,
    /// The window id for which a reminder was sent.
    reminder: Option<String>,
    /// The reset handed to the adapter (its attempt id).
    reset: Option<AttemptId>,
    /// The reset returned as a `session_before_compact` result, until Pi appends or drops it.
    hook_reset: Option<AttemptId>,
    /// The `launch_prompt` of the handoff being rendered, for `handoff_written`.
    handoff_launch_prompt: Option<String>,
    /// Sections the last `handoff_render` shortened, for `handoff_written`'s reply.
    handoff_cuts: Vec<crate::handoff::SectionCut>,
    /// The window whose spent overflow recovery was reported (`overflow_recovery_exhausted`).
    exhausted_reported: Option<String>,
    /// The compaction started from `input` for the idle-input recovery ([`HookResult::Compact`]),
    /// until its hook is answered or its failure reported: the failure hook and the error
    /// callback that follows it are one failure.
    input_compact: Option<AttemptId>,
}

/// How a reset handed out ended without reaching the branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure<'a> {
    /// Pi never appended it (an invalid boundary draft, or the run ended first): no error text.
    Rejected,
    /// Pi reported the compaction failed or was cancelled.
    Reported {
        aborted: bool,
        message: Option<&'a str>,
    },
}

impl Failure<'_> {
    fn kind(self) -> FailureKind {
        match self {
            Failure::Rejected => FailureKind::Transient,
            Failure::Reported { aborted, message } => classify_compact_failure(aborted, message),
        }
    }
}

/// Relay's engine. See the module documentation.
pub struct Engine {
    /// The projection of Pi's branch: history, notes, windows, usage estimate.
    mirror: Mirror,
    /// Relay's settings, Pi's compaction reserve and the `/relay` toggle.
    settings: Settings,
    /// The budget policy (seed 004).
    budget: Budget,
    /// The one reset scheduler.
    scheduler: Scheduler,
    /// What was handed out and is not on the branch yet.
    outstanding: Outstanding,
    /// Between `before_agent_start` and `agent_settled`. Pi's `isIdle()` is false in its pre-prompt
    /// compaction check, so the engine tracks runs itself to tell that check from a streaming one.
    run_active: bool,
    /// The local time-zone offset of the latest input (timestamps in the boot block).
    tz_offset_minutes: i32,
    /// The instructions of the `/compact` being answered, only while its hook is handled.
    compact_instructions: Option<String>,
    /// The window (its start position) whose futile threshold compaction the user was told
    /// about: one warning per window (a UI courtesy, not state the branch must hold).
    futile_warned: Option<usize>,
    /// The guard-off pass-through of Pi's own summarizer (seed 004): the reason of the manual or
    /// threshold compaction Relay let through, until its outcome.
    native: NativeFallback,
    /// The `nowMs` of the agent's latest activity (any observation of a run, from
    /// `before_agent_start` to `agent_settled`); `None` until this process saw one. New input
    /// measures its idleness from it.
    last_activity_ms: Option<i64>,
    /// The operations that wait for jobs (the `context` hook's checks, `context_handoff`).
    ops: door::Ops,
    /// Tool results of real tool runs seen by this engine (a handoff collecting its facts
    /// notices a sibling tool that finished meanwhile).
    tool_results_seen: u64,
    /// The session's load, read ahead and feed ([`door::session`]).
    loads: door::session::Loads,
    /// What the user was told once (configuration problems, failures) and is not told again.
    told: Vec<String>,
    /// The last configuration that applied and the last `/relay on|off`, for
    /// [`Engine::restarted`].
    last_sources: Option<ConfigSources>,
    toggle: Option<String>,
    /// A failed write of Relay's files was told (once per engine).
    write_failure_told: bool,
    /// The boundary hooks the engine needs, as the latest hook left its state (every output
    /// carries it; `engine/boundary.rs`).
    boundary: door::BoundaryHooks,
    /// An assistant answer ended (`message_end`) and its turn's `turn_end` was not seen yet: a
    /// turn end the host was told it need not send is counted at the next hook after it.
    turn_open: bool,
    /// The window's stubs as the host last received them (`Output::stubs`); `None` until this
    /// engine sent any. A request whose stubs are unchanged crosses without them.
    stubs_told: Option<Vec<crate::records::ClearedStub>>,
    /// The latest answer seen at its `message_end`, and the model the last output named
    /// (`engine/router.rs`).
    answers: router::Answers,
}

/// The room a note-taking turn needs in a window of `window` tokens beyond its messages so far:
/// the steer asking for notes, and a margin for Pi's estimate (characters / 4) counting fewer
/// tokens than a provider does; a sixteenth of the window, at most 4,096 tokens (a 24,000-token
/// window keeps 1,500, so a crossing at Pi's threshold there still gets its note-taking turn).
fn note_turn_room(window: u64) -> u64 {
    (window / 16).min(4_096)
}

/// Why a threshold compaction in this window would not free anything (see
/// [`Engine::futile_threshold`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Futile {
    /// The window has no usage of its own yet: the figure Pi judged predates it.
    Stale,
    /// The window grew less than `min_progress` since its first request (`first` tokens).
    NoProgress {
        first: u64,
        tokens: u64,
        min_progress: u64,
    },
}

impl Default for Engine {
    fn default() -> Self {
        Self::new()
    }
}

impl Engine {
    pub fn new() -> Self {
        let settings = Settings::new();
        Engine {
            mirror: Mirror::new(""),
            scheduler: Scheduler::new(settings.config.enabled),
            settings,
            budget: Budget::new(),
            outstanding: Outstanding::default(),
            run_active: false,
            tz_offset_minutes: 0,
            compact_instructions: None,
            futile_warned: None,
            native: NativeFallback::default(),
            last_activity_ms: None,
            ops: door::Ops::default(),
            tool_results_seen: 0,
            loads: door::session::Loads::default(),
            told: Vec::new(),
            stubs_told: None,
            answers: router::Answers::default(),
            last_sources: None,
            toggle: None,
            write_failure_told: false,
            boundary: door::BoundaryHooks::default(),
            turn_open: false,
        }
    }

    // ----- getters -----

    /// The id of the newest mirrored entry.
    pub fn tip(&self) -> Option<&str> {
        self.mirror.history.tip()
    }

    /// Whether entry `id` is mirrored.
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.mirror.history.contains(id)
    }

    pub(crate) fn window_count(&self) -> usize {
        self.mirror.history.window_count()
    }

    pub fn history(&self) -> &History {
        &self.mirror.history
    }

    pub fn notes(&self) -> &Notes {
        &self.mirror.notes
    }

    /// Whether the window features are on (the `enabled` setting, or `/relay on|off`).
    pub fn enabled(&self) -> bool {
        self.scheduler.enabled()
    }

    /// Tell the scheduler what the branch says about the current window's borrowed turn, after
    /// anything that made it forget (session start, reload, navigation, `/relay on`): a window
    /// that already holds the note-taking steer never borrows a second turn, and a window that
    /// holds the notice of a rejected window-full reset still gets its retry.
    pub(super) fn restore_allowance(&mut self) {
        let window = self.mirror.current_window();
        self.scheduler
            .restore_allowance(window.steer_at.is_some(), window.reset_failed_at.is_some());
    }

    /// The reset `attempt` was handed out and never reached the branch: the scheduler hears of
    /// it, and (when it was the reset in flight and Relay is on) the user gets a warning and the
    /// model a message that the window did not reset. Nothing else changes: the window and its
    /// history stay as they were, the borrowed turn stays spent, and the next reset opportunity
    /// (the next prompt's threshold check, `new_context`, `/compact`) resets without borrowing.
    ///
    /// A cancelled reset Relay owns (`cancelled`: Pi reports the compaction aborted) is benign:
    /// no warning, no retry, no count. A failure of a reset Relay owns (every source but the user's
    /// `/compact`) is counted from the window's `relay/reset-failed` notices on the branch: the
    /// first two leave their retry for the next eligible boundary, the third gives up retrying
    /// and arms the budget fallback ("compaction failure"); a persistent failure (Pi's error text,
    /// [`classify_compact_failure`]) gives up and arms it at once, and a benign one ("Nothing to
    /// compact", "Already compacted") is treated like a cancellation. A failed `/compact` is the
    /// user's: a warning, no retry, no fallback.
    fn reject_reset(
        &mut self,
        attempt: AttemptId,
        failure: Failure<'_>,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        let source = match self.scheduler.in_flight() {
            Some((id, source)) if id == attempt => Some(source),
            _ => None,
        };
        self.scheduler.handle(SchedInput::ResetRejected { attempt });
        let Some(source) = source.filter(|_| self.enabled()) else {
            return;
        };
        self.report_failure(attempt, source, failure, moment, reply);
    }

    /// The compaction started from `input` for the idle-input recovery failed before Relay's
    /// reset was installed (Pi's "Nothing to compact" or "Already compacted" before its hook, or
    /// an error after it): the request is over and the input goes on unchanged. A benign failure
    /// is only logged (`idle_input_skipped`); any other is a failure of Relay's own reset.
    fn input_compact_failed(
        &mut self,
        attempt: AttemptId,
        failure: Failure<'_>,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        self.outstanding.input_compact = None;
        self.scheduler
            .handle(SchedInput::InputResetFailed { attempt });
        if !self.enabled() {
            return;
        }
        if failure.kind() == FailureKind::Benign {
            let why = match failure {
                Failure::Reported { message, .. } => message.map(str::to_string),
                Failure::Rejected => None,
            };
            // events.jsonl is the budget policy's log: only while it enforces (the compaction of
            // a `new_context` still owed is started from `input` in every mode).
            if self.policy_mode() == crate::policy::Mode::Enforce {
                self.push_telemetry(
                    files::TelemetryEvent::IdleInputSkipped { attempt, why },
                    moment,
                    reply,
                );
            }
            return;
        }
        self.report_failure(attempt, ResetSource::Idle, failure, moment, reply);
    }

    /// A failure of a reset Relay handed out, classified: see [`Engine::reject_reset`].
    fn report_failure(
        &mut self,
        attempt: AttemptId,
        source: ResetSource,
        failure: Failure<'_>,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        let owned = source != ResetSource::Manual;
        let kind = failure.kind();
        let cancelled = matches!(failure, Failure::Reported { aborted: true, .. });
        if kind == FailureKind::Benign && (owned || !cancelled) {
            // Nothing was lost: no warning, no retry, no count (a cancelled `/compact` of the
            // user's is still reported to the user).
            if owned {
                self.scheduler.give_up_retry();
            }
            return;
        }
        let failures = if owned {
            self.mirror.current_window().owned_failures_at.len() + 1
        } else {
            0
        };
        // The third failure of Relay's own reset in a window, or a persistent one at once.
        let give_up =
            owned && (failures >= MAX_OWNED_RESET_FAILURES || kind == FailureKind::Persistent);
        if give_up {
            self.scheduler.give_up_retry();
        }
        let retry = self.scheduler.retry_pending();
        reply.effects.push(Effect::Notify {
            text: render_reset_failed_notice(source.as_str()),
            level: NotifyLevel::Warning,
        });
        reply.effects.push(Effect::Send {
            custom_type: RESET_FAILED_TYPE.into(),
            content: render_reset_failed(source.as_str()),
            display: true,
            trigger_turn: false,
            deliver_as: None,
            details: Some(
                crate::records::ResetFailedDetails {
                    v: crate::records::VERSION,
                    attempt,
                    source: Some(source.as_str().into()),
                    retry,
                    failures: failures as u64,
                    failure: Some(kind.as_str().into()),
                    error: match failure {
                        Failure::Reported { message, .. } => message.map(str::to_string),
                        Failure::Rejected => None,
                    },
                }
                .to_value(),
            ),
        });
        if give_up {
            let fx = self.policy_step(PolicyInput::CompactionFailed);
            self.apply_policy(fx, moment, reply);
            self.budget.forced = None;
        }
    }

    /// The current window's `relay/native-fallback` record: armed, or `spent`.
    fn native_fallback_record(&self, spent: bool) -> Marker {
        crate::records::NativeFallbackRecord {
            v: crate::records::VERSION,
            window_id: self.mirror.history.current_window_id().to_string(),
            spent,
        }
        .marker()
    }

    /// Pi's summarizer failed while the guard let it run: arm this window's one mechanical
    /// fallback (unless it was used already) and tell the user what comes next.
    fn arm_native_fallback(
        &mut self,
        reason: Option<&str>,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        if self.mirror.current_window().native_fallback().is_some() {
            return;
        }
        reply.appends.push(self.native_fallback_record(false));
        self.push_telemetry(
            files::TelemetryEvent::NativeCompactionFailed {
                reason: reason.map(str::to_string),
            },
            moment,
            reply,
        );
        reply.effects.push(Effect::Notify {
            text: render_native_fallback_notice(),
            level: NotifyLevel::Warning,
        });
    }

    /// Whether a threshold compaction Pi asks for in this window would be futile, and why. Only a
    /// window a reset opened can be judged so (the root window holds everything the session ever
    /// said). Futile when the window has no usage of its own yet (Pi judged a figure recorded
    /// before the window began), or when it has grown less than the minimum progress since its
    /// first request: its fresh start (system prompt, boot block, continuation) is already over
    /// Pi's threshold, so another reset would open the same window and borrow, steer and reset
    /// again, once per window, until the model stops.
    fn futile_threshold(&self, moment: &Moment) -> Option<Futile> {
        if self.mirror.window_index() == 0 {
            return None;
        }
        let Some(tokens) = self.mirror.usage(moment).and_then(|u| u.tokens) else {
            return Some(Futile::Stale);
        };
        let first = self.mirror.current_window().first_usage()?;
        let min_progress = self.current_params().thresholds.min_progress;
        let grown = tokens.saturating_sub(first);
        (grown < min_progress).then_some(Futile::NoProgress {
            first,
            tokens,
            min_progress,
        })
    }

    /// The window has no room for a note-taking turn: its request so far and
    /// [`note_turn_room`] exceed the context window, so that turn's request would be refused as
    /// too large (one tool result can carry a window from under Pi's threshold to past its end).
    fn no_room_for_notes(&self, moment: &Moment) -> bool {
        self.mirror
            .usage(moment)
            .and_then(|u| {
                let room = note_turn_room(u.context_window);
                Some(u.tokens?.saturating_add(room) > u.context_window)
            })
            .unwrap_or(false)
    }

    /// Tell the user once per window that its fresh start is over Pi's threshold (a stale figure
    /// is cancelled silently: the next answer in the window reports a real one).
    fn warn_futile(&mut self, futile: Futile, reply: &mut HookReply) {
        let Futile::NoProgress { first, .. } = futile else {
            return;
        };
        let window = self.mirror.current_window().start;
        if self.futile_warned == Some(window) {
            return;
        }
        self.futile_warned = Some(window);
        reply.effects.push(Effect::Notify {
            text: render_futile_threshold(first),
            level: NotifyLevel::Warning,
        });
    }

    /// Telemetry and warnings of an overflow hook that was answered: the backstop's reset (with
    /// a handoff or the mechanical summary), or a cancel because recovery is off or spent.
    fn report_overflow(
        &mut self,
        off: Option<&'static str>,
        spent: bool,
        will_retry: bool,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        match &reply.result {
            Some(HookResult::Reset { plan }) => {
                // An explicit `mode: "off"` recovers but writes no telemetry (a guard-off demotion
                // logs as before).
                if self.budget_mode().configured == crate::policy::Mode::Off {
                    return;
                }
                let handoff = plan.details.kind.as_deref() == Some("handoff");
                self.push_telemetry(
                    files::TelemetryEvent::OverflowBackstop {
                        handoff,
                        will_retry,
                        attempt: plan.details.attempt,
                    },
                    moment,
                    reply,
                );
            }
            Some(HookResult::Cancel) => {
                if let Some(why) = off {
                    // An explicit `mode: "off"` writes no telemetry; the warning still says why
                    // the request failed.
                    if self.budget_mode().effective != crate::policy::Mode::Off {
                        self.push_telemetry(
                            files::TelemetryEvent::OverflowRecoveryOff {
                                why: why.to_string(),
                                will_retry,
                            },
                            moment,
                            reply,
                        );
                    }
                    reply.effects.push(Effect::Notify {
                        text: render_overflow_recovery_off(why),
                        level: NotifyLevel::Warning,
                    });
                } else if spent {
                    self.overflow_exhausted("hook_refused", moment, reply);
                }
            }
            _ => {}
        }
    }

    /// A second overflow after the window's one reset-and-retry: one event, one warning, no reset.
    ///
    /// Pi reports its spent attempt after the run and again in the next prompt's pre-prompt check
    /// (before the user's message re-arms it): the window is reported once.
    fn overflow_exhausted(&mut self, via: &str, moment: &Moment, reply: &mut HookReply) {
        let window = self.mirror.history.current_window_id().to_string();
        if self.outstanding.exhausted_reported.as_deref() == Some(window.as_str()) {
            return;
        }
        self.outstanding.exhausted_reported = Some(window);
        if self.budget_mode().effective != crate::policy::Mode::Off {
            self.push_telemetry(
                files::TelemetryEvent::OverflowRecoveryExhausted {
                    via: via.to_string(),
                },
                moment,
                reply,
            );
        }
        reply.effects.push(Effect::Notify {
            text: render_overflow_exhausted(),
            level: NotifyLevel::Warning,
        });
    }

    // ----- observations -----

    /// One observation in, the effects and hook result out.
    pub(crate) fn observe(&mut self, obs: &Observation) -> HookReply {
        let mut moment = obs.moment.clone();
        moment.usage = self.mirror.usage(&obs.moment);
        let moment = &moment;
        self.tz_offset_minutes = moment.tz_offset_minutes;
        self.budget.hosted_subagent = moment.subagent;
        self.observe_guard(moment);
        self.refresh_params(moment);
        let mut reply = HookReply::default();
        let mirrored = std::mem::take(&mut self.budget.pending_fx);
        self.apply_policy(mirrored, moment, &mut reply);
        self.unseen_turn_end(&obs.event, moment, &mut reply);
        self.on_event(&obs.event, moment, &mut reply);
        if matches!(
            obs.event,
            Event::BeforeAgentStart
                | Event::Context
                | Event::ToolCall { .. }
                | Event::ToolResult { .. }
                | Event::TurnStart
                | Event::MessageEnd { .. }
                | Event::TurnEnd { .. }
                | Event::AgentEnd
                | Event::AgentBeforeSettle { .. }
                | Event::AgentSettled { .. }
        ) {
            self.last_activity_ms = Some(moment.now_ms);
        }
        self.log_guard_thresholds(moment, &mut reply);
        self.check_dropped_reset(moment, &mut reply);
        self.log_mode_mismatch(moment, &mut reply);
        if let Some(record) = self.fallback_disarmed_record() {
            reply.appends.push(record);
        }
        if !matches!(
            obs.event,
            Event::SessionStart { .. } | Event::AgentSettled { .. } | Event::SessionShutdown
        ) {
            self.write_status_if_changed(moment, &mut reply);
        }
        reply.continue_run = obs.event.continue_with(reply.result.as_ref());
        let answer = match &obs.event {
            Event::MessageEnd { message } => crate::entry::message_of_value(message),
            _ => None,
        };
        self.boundary = self.boundary_hooks(&obs.event, answer.as_ref(), moment);
        if let Some(message) = &answer {
            self.note_live_answer(message);
        }
        reply
    }
}
