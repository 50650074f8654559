//! What the engine says outside tool results: the status line, the `/relay` command and its
//! toggle, the once-per-window low-budget reminder, and warnings about skipped note operations.
//!
//! **Contract.**
//! - The reminder is sent at most once per window: it is outstanding from the reply that sends it
//!   until the mirror sees it, and a window that is about to end (a reset pending or in flight,
//!   or the enforced policy demanding a handoff) gets none.
//! - `/relay on|off` lasts for this runtime and wins over the `enabled` setting.
//! - All texts come from `crate::render` and `crate::policy` (snapshot-tested there).

use crate::records::Record;

use super::wire::{Effect, HookReply, Moment, NotifyLevel, REMINDER_TYPE};
use super::Engine;
use crate::effective::{effective_config, render_effective_config, ConfigQuery};
use crate::policy::{self, Mode};
use crate::render::{group_digits, render_reminder, render_status, ClearingStatus, StatusInfo};
use crate::scheduler::{ResetSource, SchedInput};
use crate::settings::{remaining_tokens, reminder_threshold};

impl Engine {
    /// The footer: `relay w<n> · <left> · reset pending (…) · <budget mode>`.
    fn status_text(&self, moment: &Moment) -> String {
        let mode = self.budget_mode();
        if !self.enabled() {
            return match crate::render::policy::render_mode_footer(&mode) {
                Some(footer) => format!("relay off · {footer}"),
                None => "relay off".into(),
            };
        }
        let mut s = format!("relay w{}", self.window_count());
        if let Some(u) = moment.usage {
            match remaining_tokens(u.context_window, u.tokens, self.reserve_for(moment)) {
                Some(r) => s.push_str(&format!(" · {} left", group_digits(r))),
                None => s.push_str(" · fresh"),
            }
        }
        let ((n, freed), _) = self.clearing_totals();
        if n > 0 {
            let what = if n == 1 { "clearing" } else { "clearings" };
            s.push_str(&format!(" · {n} {what} freed {}", group_digits(freed)));
        }
        if let Some(p) = self.scheduler.pending() {
            s.push_str(&format!(" · reset pending ({})", p.as_str()));
        }
        if let Some(footer) = crate::render::policy::render_mode_footer(&mode) {
            s.push_str(" · ");
            s.push_str(&footer);
        }
        s
    }

    pub(super) fn status_effect(&self, moment: &Moment) -> Effect {
        Effect::Status {
            text: Some(self.status_text(moment)),
        }
    }

    /// `/relay`, `/relay status`, `/relay config`, `/relay stats` (the branch's ledger, from the
    /// mirror), `/relay pins`, `/relay pin <text>`, `/relay unpin <n>` (the user's pinned
    /// instructions, [`crate::pins`]), `/relay on`, `/relay off`.
    pub(super) fn command(&mut self, args: &str, moment: &Moment, reply: &mut HookReply) {
        let text = match args {
            "on" => {
                self.settings.toggle = Some(true);
                self.scheduler.handle(SchedInput::SetEnabled(true));
                self.restore_allowance();
                "relay: on — context windows, notes index, reminder and reset-style compaction are active".to_string()
            }
            "off" => {
                self.settings.toggle = Some(false);
                self.scheduler.handle(SchedInput::SetEnabled(false));
                "relay: off — Pi's default compaction applies again; history and notes tools stay available".to_string()
            }
            "" | "status" => {
                let reserve = self.reserve_for(moment);
                let mode = self.budget_mode();
                let window = moment.usage.map(|u| u.context_window).or(moment.window());
                render_status(&StatusInfo {
                    enabled: self.enabled(),
                    current_window_id: self.mirror.history.current_window_id(),
                    window_count: self.window_count(),
                    note_count: self.mirror.notes.len(),
                    pin_count: self.pins().in_force().len(),
                    remaining_tokens: moment
                        .usage
                        .and_then(|u| remaining_tokens(u.context_window, u.tokens, reserve)),
                    reserve_tokens: reserve,
                    reminder_threshold: window.map(|w| {
                        reminder_threshold(w, reserve, self.settings.config.reminder_margin_tokens)
                    }),
                    reminder_sent: self.mirror.current_window().reminder_at.is_some(),
                    pending_reset: self.scheduler.pending().map(ResetSource::as_str),
                    budget_mode: mode.effective.as_str(),
                    budget_configured: mode.configured.as_str(),
                    budget_reason: mode.reason.as_deref(),
                    clearing_enabled: self.settings.config.clear_tool_results.enabled,
                    clearing: self
                        .clear_trigger(moment)
                        .filter(|_| self.settings.config.clear_tool_results.enabled)
                        .map(|trigger_tokens| ClearingStatus {
                            trigger_tokens,
                            keep: self.settings.config.clear_tool_results.keep,
                            clear_at_least: self.settings.config.clear_tool_results.clear_at_least,
                        }),
                    cleared_window: self.clearing_totals().0,
                    cleared_branch: self.clearing_totals().1,
                })
            }
            "config" => {
                let sources = self.settings.sources.clone().unwrap_or_default();
                let window = moment.usage.map(|u| u.context_window).or(moment.window());
                render_effective_config(&effective_config(
                    &sources,
                    &ConfigQuery {
                        model: moment.model.as_deref(),
                        context_window: window,
                        model_origin: "Pi (the current model)",
                        window_origin: "Pi (the current model)",
                        hosted_subagent: moment.subagent,
                        role_origin: "the hosting rule (a nested Relay runtime is a subagent)",
                        toggle: self.settings.toggle,
                        mode: Some(self.budget_mode()),
                        session_pins: self.mirror.pins(),
                    },
                ))
            }
            "stats" => crate::render::render_ledger(&self.mirror.ledger()),
            "pins" => crate::render::render_pins(
                &self.pins().in_force(),
                self.pins().defaults.len(),
                &self.pins_origin(),
            ),
            other => match other.split_once(char::is_whitespace).unwrap_or((other, "")) {
                ("pin", text) => self.pin(text, reply),
                ("unpin", n) => self.unpin(n, reply),
                _ => format!("relay: unknown argument {other:?}; use /relay, /relay config, /relay stats, /relay pins, /relay pin <text>, /relay unpin <n>, /relay on or /relay off"),
            },
        };
        reply.effects.push(Effect::Notify {
            text,
            level: NotifyLevel::Info,
        });
        reply.effects.push(self.status_effect(moment));
    }

    /// `/relay pin <text>`: the list with the pin added, appended to the branch (the mirror takes
    /// it in when Pi feeds the entry back), or the refusal naming the limit.
    fn pin(&self, text: &str, reply: &mut HookReply) -> String {
        match self.pins().add(text) {
            Ok(pins) => {
                let said = crate::render::render_pinned(
                    &crate::pins::Pins {
                        defaults: self.pins().defaults,
                        session: &pins,
                    }
                    .in_force(),
                );
                reply.appends.push(pins_record(pins));
                said
            }
            Err(refusal) => crate::render::render_pin_refusal(&refusal, &self.pins_origin()),
        }
    }

    /// `/relay unpin <n>`: the list without pin `n`, appended to the branch, or the refusal.
    fn unpin(&self, n: &str, reply: &mut HookReply) -> String {
        match self.pins().remove(n) {
            Ok((pins, removed)) => {
                let said = crate::render::render_unpinned(
                    n.trim().parse().unwrap_or_default(),
                    &removed,
                    pins.len() + self.pins().defaults.len(),
                );
                reply.appends.push(pins_record(pins));
                said
            }
            Err(refusal) => crate::render::render_pin_refusal(&refusal, &self.pins_origin()),
        }
    }

    /// The low-budget reminder, once per window, when the physical remaining capacity drops to
    /// reserve + margin, both capped to the window ([`reminder_threshold`]).
    pub(super) fn maybe_remind(&mut self, moment: &Moment, reply: &mut HookReply) {
        if !self.enabled() {
            return;
        }
        let Some(usage) = moment.usage else { return };
        let Some(tokens) = usage.tokens else { return };
        let reserve = self.reserve_for(moment);
        let physical = usage.context_window.saturating_sub(tokens);
        let threshold = reminder_threshold(
            usage.context_window,
            reserve,
            self.settings.config.reminder_margin_tokens,
        );
        if physical > threshold {
            return;
        }
        let window = self.mirror.history.current_window_id().to_string();
        if self.mirror.current_window().reminder_at.is_some()
            || self.outstanding.reminder.as_deref() == Some(window.as_str())
        {
            return;
        }
        // No reminder when this window is about to end anyway: a reset is pending or in flight,
        // or the budget policy already demands a handoff (a message queued now would only reach
        // the history after the reset, in the next window).
        let ending = self.scheduler.pending().is_some()
            || self.scheduler.in_flight().is_some()
            || (self.policy_mode() == Mode::Enforce
                && matches!(
                    self.budget.policy.phase(),
                    policy::Phase::HandoffRequired
                        | policy::Phase::HandoffPendingCommit
                        | policy::Phase::Compacting
                        | policy::Phase::FallbackArmed
                ));
        if ending {
            return;
        }
        self.outstanding.reminder = Some(window.clone());
        let remaining = remaining_tokens(usage.context_window, Some(tokens), reserve).unwrap_or(0);
        reply.effects.push(Effect::Send {
            custom_type: REMINDER_TYPE.into(),
            content: render_reminder(remaining),
            display: true,
            trigger_turn: false,
            deliver_as: None,
            details: Some(
                crate::records::ReminderDetails {
                    v: crate::records::VERSION,
                    window_id: Some(window),
                }
                .to_value(),
            ),
        });
    }

    /// One warning naming the replaced packages' entries Relay did not import, if any.
    pub(super) fn report_unimported(&mut self, reply: &mut HookReply) {
        let unimported = self.mirror.take_unimported();
        if !unimported.is_empty() {
            reply.effects.push(Effect::Notify {
                text: crate::render::render_unimported(&unimported),
                level: NotifyLevel::Warning,
            });
        }
    }

    /// One warning per note operation on the branch that could not be replayed.
    pub(super) fn report_skipped_notes(&mut self, reply: &mut HookReply) {
        for skipped in self.mirror.take_skipped_notes() {
            reply.effects.push(Effect::Notify {
                text: format!("relay: skipped an invalid note operation ({skipped})"),
                level: NotifyLevel::Warning,
            });
        }
    }
}

/// The branch record of the pinned instructions after a change.
fn pins_record(pins: Vec<String>) -> crate::records::Marker {
    use crate::records::CustomRecord;
    crate::records::PinsRecord {
        v: crate::records::VERSION,
        pins,
    }
    .marker()
}

impl Engine {
    /// The pins in force: `relay.pins` from the settings, then the session's own (`crate::pins`).
    pub(super) fn pins(&self) -> crate::pins::Pins<'_> {
        crate::pins::Pins {
            defaults: &self.settings.config.pins,
            session: self.mirror.pins(),
        }
    }

    /// The settings file that holds `relay.pins`, as `/relay pins` names it.
    fn pins_origin(&self) -> String {
        self.settings
            .sources
            .as_ref()
            .and_then(|s| s.settings_layers().source_of("relay.pins"))
            .unwrap_or_else(|| "the settings".into())
    }
}
