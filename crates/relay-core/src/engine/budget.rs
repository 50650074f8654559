//! The budget policy (seed 004) inside the engine: its configuration, thresholds per model, the
//! pure transition run under the effective mode, and its effects turned into replies.
//!
//! **Contract.**
//! - Every policy step goes through [`Engine::policy_step`]: observe runs the transition on a
//!   projection (its effects are `would_*` events), and enforce is demoted to observe while the
//!   window features are off, because no reset could commit then.
//! - The policy never resets by itself: its reset requests go into the one scheduler
//!   ([`Engine::apply_policy`]), and when the scheduler drops such a request (an abort, a
//!   navigation, `/relay off`) the policy is told, so enforcement goes on
//!   ([`Engine::check_dropped_reset`]).
//! - Telemetry events and the status file are data ([`Effect::Telemetry`],
//!   [`Effect::WriteStatus`]); the binding writes them.

use serde_json::Value;

use super::wire::{
    ConfigSources, Continuation, Effect, Event, GuardState, HookReply, HookResult, Moment,
    NotifyLevel, Observation, HANDOFF_REQUEST_TYPE,
};

/// Why the budget policy is effectively off while the shared context guard is off (the footer
/// reads `configured enforce, effective off (context guard off)`).
pub(super) const GUARD_OFF_REASON: &str = "context guard off";
use super::files::{RelaunchMarker, TelemetryEvent};
use super::Engine;
use crate::policy::{
    self, effective_mode, invalid_file_config, parse_budget_config, step_mode, BudgetConfig,
    EffectiveMode, Floor, Mode, PolicyEffect, PolicyInput, PolicyParams, PolicyState,
};
use crate::scheduler::{ResetSource, SchedInput};
use crate::ConfigIssue;

mod disarm;
mod writes;

/// Thresholds resolved for one (model key, context window, reserve, role).
struct ResolvedParams {
    model: String,
    context_window: u64,
    reserve: u64,
    subagent: bool,
    params: PolicyParams,
}

/// A handoff written in this window and not yet committed.
#[derive(Clone)]
pub(super) struct ReadyHandoff {
    pub(super) path: String,
    pub(super) markdown: String,
    /// The handoff's `launch_prompt` (an absolute prompt file for a relaunch).
    pub(super) launch_prompt: Option<String>,
}

/// A relaunch the armed fallback asked for: its marker is written at the settle point that chose
/// it, and Pi is asked to shut down at `agent_settled`.
#[derive(Debug, Clone)]
pub(super) struct RelaunchRequest {
    reason: policy::FallbackReason,
    /// The marker written for it.
    path: String,
}

/// The warning when a relaunch the fallback chose cannot happen (snapshot-tested).
pub fn render_relaunch_fallback(why: &str) -> String {
    format!(
        "relay: Pi is not relaunched in a fresh process: {why}. The window is reset in-process \
         instead, as without pi-session."
    )
}

/// A forced reset the policy asked for: the boot block's note and whether the run goes on.
pub(super) struct ForcedReset {
    pub(super) note: String,
    pub(super) continue_run: bool,
}

/// The budget policy's state in the engine.
pub(super) struct Budget {
    config: BudgetConfig,
    pub(super) mode: EffectiveMode,
    pub(super) policy: PolicyState,
    params: Option<ResolvedParams>,
    pub(super) handoff_ready: Option<ReadyHandoff>,
    /// The newest handoff written in this window by this process, committing or not (a cap or
    /// loop-guard fallback ignores it), while still valid: the overflow backstop carries it into
    /// the next window. Cleared by a later tool that really ran (a blocked call does not count),
    /// by a new external run and by any new window. Only this process knows its markdown (no file
    /// is read back), so after a reload an overflow falls back to the mechanical summary.
    pub(super) stored_handoff: Option<ReadyHandoff>,
    pub(super) forced: Option<ForcedReset>,
    /// Policy effects produced while mirroring (a reset applied), delivered with the next reply.
    pub(super) pending_fx: Vec<PolicyEffect>,
    /// The binding writes status and events (a state directory is configured).
    pub(super) state_dir_known: bool,
    /// The configured/effective mismatch last logged (`mode_mismatch`), so each is logged once.
    logged_mismatch: Option<EffectiveMode>,
    /// The policy's latest telemetry event and its time (`lastAction` in the status file).
    last_action: Option<(String, i64)>,
    /// What the status file last showed of the policy; it is rewritten when this changes.
    written: Option<StatusKey>,
    /// The window whose after-reset resume check was handed out (it runs once, even when its
    /// record never reaches the branch).
    pub(super) resume_started: Option<String>,
    /// The wrapper facts of the latest configuration (`ConfigSources::wrapper`).
    pub(super) wrapper_facts: Option<super::wire::WrapperFacts>,
    /// The hosting rule's answer of the latest observation (`Moment::subagent`).
    pub(super) hosted_subagent: bool,
    /// The relaunch the fallback asked for, until `agent_settled` carries it out.
    pub(super) relaunch: Option<RelaunchRequest>,
    /// Why the binding could not write the last relaunch marker: no relaunch is tried again in
    /// this window (the fallback resets in-process, as without the wrapper).
    pub(super) relaunch_failed: Option<String>,
    /// The shared guard library said `isGuardOff("context")` at the latest moment (a fact,
    /// consulted live): the policy is effectively off and Pi's own compaction passes through.
    pub(super) guard_off: bool,
    /// `guard_off_threshold` was logged for the handoff / hard threshold since the context was
    /// last below it (once per crossing, re-armed below it).
    guard_logged: [bool; 2],
    /// The window whose watch check was handed out (it runs once per window).
    pub(super) watch_started: Option<String>,
    /// The jobs the handoff being written records for the next window's watch check.
    pub(super) recorded_jobs: Option<Vec<crate::integrations::RecordedJob>>,
    /// The window whose stale-handoff check was handed out (it runs once per window, and once
    /// more per session start into a window that was checked before).
    pub(super) stale_started: Option<String>,
    /// A session started since the window's stale-handoff check ran: check it again (recorded
    /// only when the workspace moved since that check).
    pub(super) stale_recheck: bool,
    /// A mode or guard change disarmed the compaction-failure fallback in memory: the branch is
    /// told (`relay/fallback-disarmed`) by the hook's reply.
    pub(super) fallback_disarmed: bool,
    /// The workspace the handoff being written records for the next window's stale check.
    pub(super) recorded_workspace: Option<crate::staleness::WorkspaceRecord>,
}

/// The parts of the status file that change at a policy transition (not per request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StatusKey {
    phase: policy::Phase,
    fallback: Option<policy::FallbackReason>,
    projected: bool,
    handoffs: u32,
    mode: EffectiveMode,
    /// A reset is in flight (an overflow reset answered from Pi's hook, until it is appended).
    resetting: bool,
}

impl Budget {
    pub(super) fn new() -> Self {
        let config = BudgetConfig::default();
        Budget {
            mode: effective_mode(&config, ""),
            config,
            policy: PolicyState::default(),
            params: None,
            handoff_ready: None,
            stored_handoff: None,
            forced: None,
            pending_fx: Vec::new(),
            state_dir_known: false,
            logged_mismatch: None,
            last_action: None,
            written: None,
            resume_started: None,
            wrapper_facts: None,
            hosted_subagent: false,
            relaunch: None,
            relaunch_failed: None,
            guard_off: false,
            guard_logged: [false; 2],
            watch_started: None,
            recorded_jobs: None,
            stale_started: None,
            stale_recheck: false,
            fallback_disarmed: false,
            recorded_workspace: None,
        }
    }

    /// Apply a (re)loaded configuration.
    pub(super) fn configure(&mut self, config: BudgetConfig, cwd: &str, state_dir_known: bool) {
        if config != self.config {
            self.params = None;
        }
        self.config = config;
        self.mode = effective_mode(&self.config, cwd);
        self.state_dir_known = state_dir_known;
    }

    /// The operator's resume checks by exact session name (`resumeChecks`).
    pub(super) fn resume_checks(&self) -> &std::collections::BTreeMap<String, String> {
        &self.config.resume_checks
    }

    /// Why overflow recovery is off, or `None` when it is on (the default): only
    /// `overflowRecovery: false`. The reset-and-retry is seed 000's, not the budget policy's, so
    /// every mode recovers, `mode: "off"` included (`/relay off` hands the overflow to Pi before
    /// this is asked).
    pub(super) fn overflow_recovery_off(&self) -> Option<&'static str> {
        (!self.config.overflow_recovery).then_some("overflowRecovery is false")
    }

    /// Whether the resolved thresholds are the subagent role's.
    pub(super) fn subagent(&self) -> bool {
        self.params.as_ref().is_some_and(|p| p.subagent)
    }
}

/// The budget policy configuration: the file when there is one (an unusable file selects safe
/// observe mode and says why), else the `budget` object of Relay's settings, else the defaults.
/// A file named by `PI_CONTEXT_BUDGET_CONFIG` that does not exist gives the defaults (observe) and
/// a warning naming it, never the settings' `budget` object; a missing default file
/// (`<agent dir>/context-budget.json`) is normal and silent. Issues in the settings object carry
/// the key path `relay.budget…`.
pub(crate) fn select_budget(
    sources: &ConfigSources,
    from_settings: Option<&Value>,
) -> (BudgetConfig, Vec<ConfigIssue>) {
    let file = sources.budget_file_path();
    let file_path = file
        .as_ref()
        .map(|f| f.path.clone())
        .unwrap_or_else(|| "context-budget.json".into());
    let explicit = file.as_ref().is_some_and(|f| f.explicit);
    if explicit && sources.budget_file.is_none() && sources.budget_file_error.is_none() {
        let issue = ConfigIssue {
            path: file_path,
            message: "PI_CONTEXT_BUDGET_CONFIG names this file, which does not exist; using the \
                      default budget configuration (observe mode), not relay.budget"
                .into(),
        };
        return (invalid_file_config(issue.clone()), vec![issue]);
    }
    if let Some(error) = &sources.budget_file_error {
        let issue = ConfigIssue {
            path: file_path,
            message: format!(
                "cannot read the budget configuration ({error}); using safe observe mode"
            ),
        };
        return (invalid_file_config(issue.clone()), vec![issue]);
    }
    if let Some(text) = &sources.budget_file {
        return match serde_json::from_str::<Value>(text) {
            Ok(v) if v.is_object() => {
                // Key paths inside the file, after the file's name: `/a/context-budget.json: main.soft`.
                let (cfg, issues) = parse_budget_config(&v, "");
                let issues = issues
                    .into_iter()
                    .map(|i| ConfigIssue {
                        path: format!("{file_path}: {}", i.path),
                        message: i.message,
                    })
                    .collect();
                (cfg, issues)
            }
            Ok(_) => {
                let issue = ConfigIssue {
                    path: file_path,
                    message: "expected a JSON object; using safe observe mode".into(),
                };
                (invalid_file_config(issue.clone()), vec![issue])
            }
            Err(e) => {
                let issue = ConfigIssue {
                    path: file_path,
                    message: format!("not valid JSON ({e}); using safe observe mode"),
                };
                (invalid_file_config(issue.clone()), vec![issue])
            }
        };
    }
    match from_settings {
        Some(v) => parse_budget_config(v, "relay.budget"),
        None => (BudgetConfig::default(), Vec::new()),
    }
}

impl Engine {
    /// Resolve the thresholds for the moment's model, window, Pi's reserve for that model and the
    /// role (`relay.role`, else the hosting rule); cached per combination, so a model switch or a
    /// changed reserve resolves them again.
    pub(super) fn refresh_params(&mut self, moment: &Moment) {
        let model = moment.model.clone().unwrap_or_default();
        let context_window = moment
            .usage
            .map(|u| u.context_window)
            .or(moment.window())
            .unwrap_or(0);
        let reserve = self.reserve_for(moment);
        let subagent = self.is_subagent(moment);
        let fresh = match &self.budget.params {
            Some(p) => {
                p.model != model
                    || p.context_window != context_window
                    || p.reserve != reserve
                    || p.subagent != subagent
            }
            None => true,
        };
        if fresh {
            let params = PolicyParams::resolve(
                &self.budget.config,
                &model,
                context_window,
                reserve,
                subagent,
            );
            self.budget.params = Some(ResolvedParams {
                model,
                context_window,
                reserve,
                subagent,
                params,
            });
        }
    }

    pub(super) fn current_params(&self) -> PolicyParams {
        let mut params = match &self.budget.params {
            Some(p) => p.params,
            None => PolicyParams::resolve(
                &self.budget.config,
                "",
                0,
                self.settings.reserve.default,
                self.settings.config.role == Some(crate::settings::Role::Subagent),
            ),
        };
        params.relaunch = self.relaunch_handoff().is_some();
        params
    }

    /// Whether this runtime owns the pi-session wrapper ([`super::wrapper`]).
    pub(super) fn wrapper_ownership(&self) -> super::wrapper::Ownership {
        super::wrapper::ownership(
            self.budget.wrapper_facts.as_ref(),
            self.budget.hosted_subagent,
        )
    }

    /// The handoff a relaunch would continue from, when this runtime owns the wrapper: the
    /// newest one this process wrote in this window (even one a cap or loop-guard fallback
    /// ignored), else the newest committed one on the branch. `None`: no relaunch possible, the
    /// fallback stays in-process.
    fn relaunch_handoff(&self) -> Option<(String, Option<String>)> {
        if self.budget.relaunch_failed.is_some() || !self.wrapper_ownership().owned {
            return None;
        }
        if let Some(h) = &self.budget.stored_handoff {
            return Some((h.path.clone(), h.launch_prompt.clone()));
        }
        self.mirror
            .last_handoff_for_relaunch()
            .map(|(path, lp)| (path.to_string(), lp.map(str::to_string)))
    }

    /// The relaunch the fallback chose at this settle point: the signed marker (the binding
    /// checks the handoff and launch prompt files, then writes it), then `agent_settled` asks Pi
    /// to shut down. `None` when no relaunch is possible after all.
    fn request_relaunch(
        &mut self,
        reason: policy::FallbackReason,
        moment: &Moment,
        reply: &mut HookReply,
    ) -> Option<RelaunchRequest> {
        // `params.relaunch` was only set with a known handoff and an owned wrapper.
        let (handoff, launch_prompt) = self.relaunch_handoff()?;
        let ownership = self.wrapper_ownership();
        let (path, key) = (ownership.marker?, ownership.key?);
        let session_file = self
            .budget
            .wrapper_facts
            .as_ref()
            .and_then(|f| f.session_file.clone());
        let event = self.telemetry_event(
            TelemetryEvent::RelaunchRequested {
                reason: reason.as_str().into(),
                marker: path.clone(),
                handoff: handoff.clone(),
            },
            moment,
        );
        let marker = RelaunchMarker {
            cwd: moment.cwd.clone(),
            launch_prompt,
            handoff,
            session_file,
        };
        reply.effects.push(Effect::Telemetry {
            event: Box::new(event),
        });
        reply.effects.push(Effect::WriteRelaunchMarker {
            path: path.clone(),
            marker,
            key,
        });
        Some(RelaunchRequest { reason, path })
    }

    /// At `agent_settled`: the relaunch whose marker was written asks Pi to shut down. An aborted
    /// run (the user interrupted) drops it, and its marker is removed.
    pub(super) fn settle_relaunch(
        &mut self,
        aborted: bool,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        let Some(req) = self.budget.relaunch.take() else {
            return;
        };
        if aborted {
            self.push_telemetry(
                TelemetryEvent::RelaunchDropped {
                    reason: req.reason.as_str().into(),
                    why: "the run was aborted".into(),
                },
                moment,
                reply,
            );
            reply
                .effects
                .push(Effect::RemoveRelaunchMarker { path: req.path });
            return;
        }
        reply.effects.push(Effect::Shutdown);
    }

    /// The binding could not write the marker this observation asked for (`why`: a handoff or
    /// launch prompt file is missing, the disk is full, …). No relaunch: the user is told, and at
    /// the settle point that chose the relaunch the window is reset in-process instead, the
    /// mechanical reset Relay does without the wrapper. No relaunch is tried again in this window.
    pub(crate) fn relaunch_unwritten(&mut self, obs: &Observation, why: &str) -> HookReply {
        let mut reply = HookReply::default();
        let Some(req) = self.budget.relaunch.take() else {
            return reply;
        };
        let mut moment = obs.moment.clone();
        moment.usage = self.mirror.usage(&obs.moment);
        let moment = &moment;
        self.budget.relaunch_failed = Some(why.to_string());
        self.push_telemetry(
            TelemetryEvent::RelaunchFailed {
                reason: req.reason.as_str().into(),
                why: why.to_string(),
            },
            moment,
            &mut reply,
        );
        reply.effects.push(Effect::Notify {
            text: render_relaunch_fallback(why),
            level: NotifyLevel::Warning,
        });
        if let Event::AgentBeforeSettle { .. } = &obs.event {
            // The fallback is still armed; without a relaunch its settle point resets.
            let fx = self.policy_step(PolicyInput::BeforeSettle {
                pending_work: moment.has_pending_messages || moment.pending_work > 0,
                reset_due: self.scheduler.settle_reset_due(),
                stored_handoff: self.budget.stored_handoff.is_some(),
            });
            self.apply_policy(fx, moment, &mut reply);
            let outs = self.scheduler.handle(SchedInput::BeforeSettle {
                outcome: crate::scheduler::Outcome::Completed,
                has_queued_user_messages: moment.has_pending_messages,
            });
            self.apply_sched(outs, moment, &mut reply);
        }
        self.write_status_if_changed(moment, &mut reply);
        reply.continue_run = obs.event.continue_with(reply.result.as_ref());
        reply
    }

    /// The policy's usage input at this moment: the figure the moment carries (Pi's or the
    /// estimate) and the floor as the branch holds it.
    /// An observe preview keeps its own floor once a would-be reset moved it (the preview
    /// restarts its window there); otherwise the floor is the branch's.
    pub(super) fn usage_input(&self, moment: &Moment) -> PolicyInput {
        let preview = self.budget.policy.preview_window && self.policy_mode() == Mode::Observe;
        PolicyInput::Usage {
            tokens: moment.usage.and_then(|u| u.tokens),
            floor: if preview {
                Floor::Unknown
            } else {
                Floor::Branch(self.mirror.current_window().first_usage())
            },
        }
    }

    /// The mode the policy transition runs under: the effective mode, with enforce demoted to
    /// observe while the window features are off (no reset could commit then).
    pub(super) fn policy_mode(&self) -> Mode {
        self.budget_mode().effective
    }

    /// The budget mode as it applies now: configured, effective and why they differ. Enforce
    /// cannot act while Relay's window features are off (every reset goes through them), so it is
    /// reported as observe with that reason.
    ///
    /// The shared context guard turned off (`/guards off context`) makes a configured observe or
    /// enforce effectively off, with the reason `context guard off`; it wins over the other
    /// demotions (an explicit `mode: "off"` stays off without a reason).
    pub(crate) fn budget_mode(&self) -> EffectiveMode {
        let mode = &self.budget.mode;
        if self.budget.guard_off && mode.configured != Mode::Off {
            return EffectiveMode {
                configured: mode.configured,
                effective: Mode::Off,
                reason: Some(GUARD_OFF_REASON.into()),
            };
        }
        if mode.effective == Mode::Enforce && !self.enabled() {
            let why = if self.settings.toggle == Some(false) {
                "Relay is off: /relay off"
            } else {
                "Relay is off: relay.enabled is false"
            };
            return EffectiveMode {
                configured: mode.configured,
                effective: Mode::Observe,
                reason: Some(why.into()),
            };
        }
        mode.clone()
    }

    /// Take the moment's guard fact (consulted live by the extension).
    pub(super) fn observe_guard(&mut self, moment: &Moment) {
        self.budget.guard_off = moment.context_guard == GuardState::Off;
    }

    /// While the context guard is off: log `guard_off_threshold` once when the context reaches
    /// the handoff or the hard threshold, re-armed once it is below that threshold again. Log
    /// only (no notification, no enforcement); an explicit `mode: "off"` stays silent.
    pub(super) fn log_guard_thresholds(&mut self, moment: &Moment, reply: &mut HookReply) {
        if !self.budget.guard_off || self.budget.mode.configured == Mode::Off {
            return;
        }
        let tokens = moment.usage.and_then(|u| u.tokens);
        let t = self.current_params().thresholds;
        let mut crossed = Vec::new();
        for (logged, (name, limit)) in self
            .budget
            .guard_logged
            .iter_mut()
            .zip([("handoff", t.handoff), ("hard", t.hard)])
        {
            match tokens {
                Some(n) if n >= limit => {
                    if !*logged {
                        *logged = true;
                        crossed.push((name, limit, n));
                    }
                }
                _ => *logged = false,
            }
        }
        for (name, limit, n) in crossed {
            self.push_telemetry(
                TelemetryEvent::GuardOffThreshold {
                    threshold: name.to_string(),
                    limit,
                    tokens: n,
                },
                moment,
                reply,
            );
        }
    }

    /// Log a configured/effective mismatch once per transition (`mode_mismatch`).
    pub(super) fn log_mode_mismatch(&mut self, moment: &Moment, reply: &mut HookReply) {
        let mode = self.budget_mode();
        if mode.configured == mode.effective {
            self.budget.logged_mismatch = None;
            return;
        }
        if self.budget.logged_mismatch.as_ref() == Some(&mode) {
            return;
        }
        self.push_telemetry(
            TelemetryEvent::ModeMismatch {
                configured_mode: mode.configured,
                effective_mode: mode.effective,
                reason: mode.reason.clone(),
            },
            moment,
            reply,
        );
        self.budget.logged_mismatch = Some(mode);
    }

    /// Run the policy transition under the effective mode (observe runs it on a projection).
    pub(super) fn policy_step(&mut self, input: PolicyInput) -> Vec<PolicyEffect> {
        let params = self.current_params();
        let mode = self.policy_mode();
        let armed_before = disarm::by_compaction_failure(&self.budget.policy);
        if self.budget.policy.projected && mode != Mode::Observe {
            // An observe preview ends: its latches and preview-only commits (and the floor its
            // would-be resets moved) are dropped; the branch says what actually happened.
            // Leaving observe is a mode change: it disarms a compaction failure the branch shows.
            let tokens = self.budget.policy.tokens;
            self.budget.policy = policy::disarm_compaction_failure(PolicyState {
                tokens,
                ..self.mirror.policy_state()
            });
        }
        let (state, fx) = step_mode(mode, &self.budget.policy, &params, &input);
        // Disarmed by this step's mode (off, or entering observe), not by a reset: a new window.
        if armed_before
            && !disarm::by_compaction_failure(&state)
            && !matches!(input, PolicyInput::ResetApplied)
        {
            self.budget.fallback_disarmed = true;
        }
        self.budget.policy = state;
        fx
    }

    /// Carry out the policy's effects into `reply` (reset requests go to the scheduler).
    pub(super) fn apply_policy(
        &mut self,
        fx: Vec<PolicyEffect>,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        for effect in fx {
            match effect {
                PolicyEffect::Notify { level, text } => reply.effects.push(Effect::Notify {
                    text,
                    level: match level {
                        policy::NotifyLevel::Info => NotifyLevel::Info,
                        policy::NotifyLevel::Warning => NotifyLevel::Warning,
                    },
                }),
                PolicyEffect::Block { reason, terminate } => {
                    reply.result = Some(HookResult::Block { reason, terminate })
                }
                PolicyEffect::RequestReset {
                    source,
                    continue_run,
                    at_turn_end,
                    note,
                    ..
                } => {
                    let input = match source {
                        policy::PolicyReset::Handoff => SchedInput::HandoffCommitReady,
                        // An idle handoff commits as the scheduler's idle reset at this boundary
                        // (the boot block carries the written handoff).
                        policy::PolicyReset::Idle => SchedInput::ForcedResetRequested {
                            source: ResetSource::Idle,
                            at_turn_end,
                        },
                        // Idle-input recovery: Pi's compaction is started from `input`, and its
                        // hook is answered with the idle reset carrying the stored handoff.
                        policy::PolicyReset::IdleInput => SchedInput::InputResetRequested,
                        policy::PolicyReset::Forced => {
                            self.budget.forced = Some(ForcedReset {
                                note: note.unwrap_or_default(),
                                continue_run,
                            });
                            SchedInput::ForcedResetRequested {
                                source: ResetSource::Forced,
                                at_turn_end,
                            }
                        }
                    };
                    let outs = self.scheduler.handle(input);
                    self.apply_sched(outs, moment, reply);
                }
                PolicyEffect::Relaunch { reason } => {
                    self.budget.relaunch = self.request_relaunch(reason, moment, reply);
                }
                PolicyEffect::Continue { text, idle } => {
                    if reply.result.is_none() {
                        reply.result = Some(HookResult::Continue {
                            continuation: Continuation {
                                custom_type: HANDOFF_REQUEST_TYPE.into(),
                                content: text,
                                details: match idle {
                                    true => crate::records::MessageDetails::idle_request(),
                                    false => crate::records::MessageDetails::current(),
                                },
                            },
                        });
                    }
                }
                PolicyEffect::Event { event, would } => {
                    let mut event = self.telemetry_event(TelemetryEvent::Policy(event), moment);
                    event.would = would;
                    self.budget.last_action = Some((event.name(), moment.now_ms));
                    reply.effects.push(Effect::Telemetry {
                        event: Box::new(event),
                    });
                }
            }
        }
    }

    /// The policy waits in `Compacting` for the reset it asked for. When the scheduler no longer
    /// holds that request (an abort, a navigation, `/relay off`, a rejected draft), tell the policy,
    /// so that enforcement goes on instead of stopping for the rest of the window.
    pub(super) fn check_dropped_reset(&mut self, moment: &Moment, reply: &mut HookReply) {
        if self.budget.policy.phase() == policy::Phase::Compacting
            && self.scheduler.pending().is_none()
            && self.scheduler.in_flight().is_none()
        {
            let fx = self.policy_step(PolicyInput::ResetDropped);
            self.apply_policy(fx, moment, reply);
            self.budget.forced = None;
        }
    }

    /// The budget policy state a fresh look at the branch gives: nothing pending; floor, turn
    /// clock, commits and loop guard from the branch.
    pub(super) fn restart_policy(&mut self) {
        self.budget.policy = self.mirror.policy_state();
        self.budget.handoff_ready = None;
        self.budget.stored_handoff = None;
        self.budget.forced = None;
        self.budget.relaunch = None;
        self.budget.relaunch_failed = None;
    }
}

#[cfg(test)]
mod golden_tests;
