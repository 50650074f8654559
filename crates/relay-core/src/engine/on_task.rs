//! Staying on task after a reset: the one continuation after an early stop.
//!
//! **Contract.** At a completed `agent_before_settle` that installs nothing else (no reset, no
//! policy continuation), the engine continues the run once with a hidden `relay/continue-task`
//! message ([`render_continue_task`]: the user's latest request quoted verbatim, bounded, and
//! "go on, or say plainly that the task is finished") when all of these hold:
//!
//! - Relay is on and `relay.continueAfterReset` is not `false`; no user message is queued;
//! - the current window was opened by one of Relay's automatic or forced resets (threshold
//!   crossing, fallback, overflow, forced budget reset, idle, handoff commit), never by the
//!   model's own `new_context` or the user's `/compact`;
//! - the window holds no user message (the run answered no new prompt), no tool call, and no
//!   `relay/continue-task` yet: this is the end of the window's first run, and never twice in a
//!   window;
//! - the window's latest reply stopped early by [`crate::on_task::early_stop`] (empty, a short
//!   question, a short meta answer).
//!
//! Every condition is a projection of the branch ([`super::mirror::WindowState`]), so a reload
//! decides the same way; the message itself lands on the branch as the boundary draft.

use super::wire::{Continuation, HookReply, HookResult, Moment, CONTINUE_TASK_TYPE};
use super::Engine;
use crate::on_task::early_stop;
use crate::render::render_continue_task;

impl Engine {
    /// See the module documentation. Called at a completed settle point, after the policy and the
    /// scheduler had their say.
    pub(super) fn continue_after_early_stop(&self, moment: &Moment, reply: &mut HookReply) {
        if reply.result.is_some()
            || !self.enabled()
            || !self.settings.config.continue_after_reset
            || moment.has_pending_messages
        {
            return;
        }
        let window = self.mirror.current_window();
        if !window.opened_automatically
            || !window.user_at.is_empty()
            || window.tool_called_at.is_some()
            || window.continued_task_at.is_some()
        {
            return;
        }
        let Some(last) = self.mirror.last_reply_in_window() else {
            return;
        };
        // Whichever kind of early stop it was, one message serves them all.
        let reply_text = self.mirror.history.entry_text(last).unwrap_or_default();
        if early_stop(&reply_text).is_none() {
            return;
        }
        let content = render_continue_task(self.mirror.latest_user_request().as_deref());
        reply.result = Some(HookResult::Continue {
            continuation: Continuation {
                custom_type: CONTINUE_TASK_TYPE.into(),
                content,
                details: crate::records::MessageDetails::current(),
            },
        });
    }
}

#[cfg(test)]
mod tests;
