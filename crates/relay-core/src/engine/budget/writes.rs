//! The two files the budget policy has the binding write: a line of `events.jsonl`
//! ([`TelemetryLine`]) and `status/<sessionId>.json` ([`StatusFile`]), made at this moment.

use super::super::files::{
    LastAction, LastHandoff, Role, StatusFile, TelemetryEvent, TelemetryLine, WrapperStatus,
    STATUS_VERSION,
};
use super::super::wire::{Effect, HookReply, Moment};
use super::super::Engine;
use super::StatusKey;
use crate::policy;

impl Engine {
    /// One line of `events.jsonl`: the envelope (this moment's time, the session, the window,
    /// the effective mode), then the event.
    pub(in crate::engine) fn telemetry_event(
        &self,
        event: TelemetryEvent,
        moment: &Moment,
    ) -> TelemetryLine {
        let history = &self.mirror.history;
        TelemetryLine {
            ts: Some(moment.now_ms),
            session_id: history.session_id().to_string(),
            window_id: Some(history.current_window_id().to_string()),
            mode: Some(self.budget_mode().effective),
            would: false,
            event,
        }
    }

    /// [`Engine::telemetry_event`], as an effect of `reply`.
    pub(in crate::engine) fn push_telemetry(
        &self,
        event: TelemetryEvent,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        let line = self.telemetry_event(event, moment);
        reply.effects.push(Effect::Telemetry {
            event: Box::new(line),
        });
    }

    fn status_key(&self) -> StatusKey {
        let p = &self.budget.policy;
        StatusKey {
            phase: p.phase(),
            fallback: p.fallback,
            projected: p.projected,
            handoffs: p.handoffs_committed,
            mode: self.budget_mode(),
            resetting: self.scheduler.in_flight().is_some(),
        }
    }

    /// Rewrite the status file when the policy changed since it was last written: at most once
    /// per observation, and only at a transition, never per request.
    pub(in crate::engine) fn write_status_if_changed(
        &mut self,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        if self.budget.written.as_ref() != Some(&self.status_key()) {
            self.write_status(moment, reply);
        }
    }

    /// The status file of seed 004: policy fields plus the session facts.
    pub(in crate::engine) fn write_status(&mut self, moment: &Moment, reply: &mut HookReply) {
        self.budget.written = Some(self.status_key());
        let history = &self.mirror.history;
        if !self.budget.state_dir_known || history.session_id().is_empty() {
            return;
        }
        let params = self.current_params();
        let mut policy = policy::status_fields(&self.budget.policy, &params, &self.budget_mode());
        if self.scheduler.in_flight().is_some() {
            // A reset the policy did not ask for (Pi's overflow or threshold hook, /compact)
            // is being installed: the window is compacting until it lands.
            policy.phase = policy::Phase::Compacting.as_str();
        }
        let ownership = self.wrapper_ownership();
        let status = StatusFile {
            version: STATUS_VERSION,
            policy,
            session_id: history.session_id().to_string(),
            window_id: history.current_window_id().to_string(),
            window_count: self.window_count(),
            cwd: moment.cwd.clone(),
            model: moment.model.clone(),
            role: if self.budget.subagent() {
                Role::Subagent
            } else {
                Role::Main
            },
            updated_at: moment.now_ms,
            last_handoff: self.mirror.last_handoff().map(|(path, at)| LastHandoff {
                path: path.to_string(),
                at,
            }),
            window_features: self.enabled(),
            wrapper: WrapperStatus {
                owned: ownership.owned,
                reason: ownership.reason.clone(),
            },
            last_action: self
                .budget
                .last_action
                .as_ref()
                .map(|(event, at)| LastAction {
                    event: event.clone(),
                    at: *at,
                }),
            pid: None,
        };
        reply.effects.push(Effect::WriteStatus {
            status: Box::new(status),
        });
    }
}
