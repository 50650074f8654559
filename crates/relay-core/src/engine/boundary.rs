//! Which of Pi's boundary hooks the engine needs ([`BoundaryHooks`], in every output).
//!
//! Pi builds a preview of the whole branch for every `turn_end` and `agent_before_settle` that has
//! a subscriber, before the first handler and after each handler's drafts: O(branch) per turn
//! (docs/performance.md). The host subscribes to them only while the engine says it needs them.
//!
//! **Quiet.** A boundary is not needed when the engine's answer there is known to be nothing, and
//! what it would record there is recorded elsewhere. That is the case when all of these hold:
//!
//! - the budget policy is `Idle` or `SoftNotified`, with no pending or committing handoff, no
//!   fallback and no blocked call; the engine holds no ready, forced or relaunch request and no
//!   mirrored policy effect;
//! - the scheduler has no reset pending (no handoff, `new_context`, idle, forced, overdue, retry,
//!   borrowed or ready turn) and none in flight, and no reset was handed out;
//! - the window's usage at the coming boundary is known and, with a margin
//!   ([`margin_tokens`]), below every level a decision there reads: the policy's soft, handoff
//!   and hard thresholds, the clearing trigger and the reminder's level (and, for
//!   `agent_before_settle` only, `idleMinTokens`: the idle handoff request is a settle decision). The
//!   usage is the engine's estimate plus the message a `message_end` carries (Pi appends it after
//!   its handlers): an assistant's valid usage replaces the figure, any other message adds its
//!   `ceil(chars / 4)`, as Pi counts. Unknown usage or an unknown window is never quiet (under a
//!   router model, an answer by another model than the last one: `engine/router.rs`).
//!
//! `turn_end` is needed besides after an answer without a tool call (a run's last turn): another
//! extension's `message_end` handler may rewrite the answer's usage after Relay's has run, so the
//! last turn of a run is judged at `turn_end` as before; it costs one preview per prompt, not per
//! turn.
//!
//! `agent_before_settle` is needed besides while the window could still get its one
//! `relay/continue-task` (opened by an automatic or forced reset, no user message, no tool call
//! and no continuation yet: `engine/on_task.rs`).
//!
//! **Nothing lost.** In a quiet state `turn_end` changes nothing but the policy's measurements
//! (the usage figure, the turn clock): a turn end the host did not send is counted by
//! [`Engine::unseen_turn_end`] at the next hook that follows a turn's end (`turn_start`,
//! `agent_end`, a compaction hook, the next answer, …), as `turn_end` would have counted it. In a
//! quiet state `agent_before_settle` changes nothing at all. Every fact a decision reads arrives
//! on hooks that are always subscribed: the answer and its usage (`message_end`), the tool results
//! (`tool_result`, `message_end`), the run's end (`agent_end`), the compaction hooks. Pi awaits
//! every one of them before it dispatches the boundary that follows, and snapshots the boundary's
//! subscribers only then, so a subscription made from them counts for that boundary.

use serde_json::Value;

use super::door::BoundaryHooks;
use super::wire::{Event, HookReply, Moment};
use super::Engine;
use crate::entry::Message;
use crate::policy::{Phase, PolicyInput};
use crate::settings::reminder_threshold;

/// The margin below every level: 1/32 of the window, at least 2,048 and at most 16,384 tokens
/// (what Pi might append between the engine's last look and the boundary without a hook of its
/// own: a steer, another extension's message; the answer and the tool results the engine sees at
/// their `message_end`, so the margin does not grow with the window past that).
pub(super) fn margin_tokens(window: u64) -> u64 {
    (window / 32).clamp(2_048, 16_384)
}

/// The usage after `message` joins a window whose usage is `tokens` (Pi's estimate: a valid
/// assistant usage replaces the figure, any other message adds `ceil(chars / 4)`).
fn with_message(tokens: Option<u64>, message: &Message) -> Option<u64> {
    let valid = message.role == "assistant"
        && !message.stop().is_some_and(|r| r.aborted_or_failed())
        && message.usage_total.unwrap_or(0) > 0;
    if valid {
        return message.usage_total;
    }
    tokens.map(|t| t.saturating_add(message.estimate_chars.div_ceil(4)))
}

impl Engine {
    /// See the module documentation: the hooks needed after `event`, whose moment carries the
    /// engine's usage estimate; `answer` is the message a `message_end` carries, read as the
    /// mirror reads a message entry.
    pub(super) fn boundary_hooks(
        &self,
        event: &Event,
        answer: Option<&Message>,
        moment: &Moment,
    ) -> BoundaryHooks {
        let tokens = moment.usage.and_then(|u| u.tokens);
        // A run's last answer (no tool call) is judged at its `turn_end` as always: another
        // extension's `message_end` handler may still rewrite its usage after Relay's, and a run
        // ends there once, so the preview it costs is per prompt, not per turn.
        let last_answer = answer.is_some_and(|m| m.role == "assistant" && m.tool_calls.is_empty());
        // Under a router, an answer by another model than the one whose window the moment holds:
        // the window at this boundary is not known yet (the next input carries it).
        let switched = answer.is_some_and(|m| self.answer_switched_window(moment, m));
        let tokens = match (event, answer) {
            (_, Some(m)) => with_message(tokens, m),
            // A `message_end` whose message cannot be read: its size is unknown.
            (Event::MessageEnd { .. }, None) => None,
            _ => tokens,
        };
        let quiet_state = self.quiet_state();
        let below = |at_settle: bool| {
            quiet_state
                && !switched
                && tokens
                    .zip(self.lowest_level(moment, at_settle))
                    .is_some_and(|(t, level)| t < level)
        };
        BoundaryHooks {
            turn_end: last_answer || !below(false),
            settle: !below(true) || self.may_continue_task(),
        }
    }

    /// Nothing is pending, requested or in flight (see the module documentation).
    fn quiet_state(&self) -> bool {
        let p = &self.budget.policy;
        matches!(p.phase(), Phase::Idle | Phase::SoftNotified)
            && p.pending.is_none()
            && p.committing.is_none()
            && p.fallback.is_none()
            && p.blocked_calls.is_empty()
            && self.budget.handoff_ready.is_none()
            && self.budget.forced.is_none()
            && self.budget.relaunch.is_none()
            && self.budget.pending_fx.is_empty()
            && self.scheduler.pending().is_none()
            && self.scheduler.in_flight().is_none()
            && self.outstanding.reset.is_none()
            && self.outstanding.hook_reset.is_none()
    }

    /// The lowest usage at which a boundary decision could act, less the margin (`None`: the
    /// window is unknown). `idleMinTokens` is a level only at the settle point (the idle handoff
    /// request is asked for there, never at a turn end).
    fn lowest_level(&self, moment: &Moment, at_settle: bool) -> Option<u64> {
        let window = moment.usage.map(|u| u.context_window).or(moment.window())?;
        if window == 0 {
            return None;
        }
        let params = self.current_params();
        let t = params.thresholds;
        let reminder = reminder_threshold(
            window,
            self.reserve_for(moment),
            self.settings.config.reminder_margin_tokens,
        );
        let level = [t.soft, t.handoff, t.hard, window.saturating_sub(reminder)]
            .into_iter()
            .chain(at_settle.then_some(params.idle_min_tokens))
            .chain(
                self.clear_trigger(moment)
                    .filter(|_| self.settings.config.clear_tool_results.enabled),
            )
            .min()?;
        Some(level.saturating_sub(margin_tokens(window)))
    }

    /// The current window could still get its one `relay/continue-task` at a settle point.
    fn may_continue_task(&self) -> bool {
        let window = self.mirror.current_window();
        self.enabled()
            && self.settings.config.continue_after_reset
            && window.opened_automatically
            && window.user_at.is_empty()
            && window.tool_called_at.is_none()
            && window.continued_task_at.is_none()
    }

    /// A turn end the host did not send (the engine said it need not): counted before the hook
    /// that shows the turn is over, as `turn_end` counts a quiet turn (the usage figure, the turn
    /// clock; nothing else happens at a quiet turn end). An observed `turn_end` closes the turn;
    /// a session's start, a navigation or its end rebuild the policy from the branch.
    pub(super) fn unseen_turn_end(
        &mut self,
        event: &Event,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
        let after_turn = match event {
            Event::TurnEnd { .. }
            | Event::SessionStart { .. }
            | Event::SessionTree
            | Event::SessionShutdown => {
                self.turn_open = false;
                return;
            }
            Event::MessageEnd { message } => {
                message.get("role").and_then(Value::as_str) == Some("assistant")
            }
            Event::TurnStart
            | Event::AgentEnd
            | Event::AgentBeforeSettle { .. }
            | Event::AgentSettled { .. }
            | Event::BeforeAgentStart
            | Event::SessionBeforeCompact { .. }
            | Event::SessionCompactFailed { .. } => true,
            _ => false,
        };
        if !after_turn {
            return;
        }
        if std::mem::take(&mut self.turn_open) {
            let mut fx = self.policy_step(self.usage_input(moment));
            fx.extend(self.policy_step(PolicyInput::TurnEnd { continues: true }));
            self.apply_policy(fx, moment, reply);
        }
        if let Event::MessageEnd { .. } = event {
            self.turn_open = true;
        }
    }
}

#[cfg(test)]
mod tests;
