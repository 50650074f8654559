//! Resume checks in the engine: whether the operator's command runs, which command, and what the
//! model is shown of its result. The binding runs the command (relay-io, off Pi's event loop).
//!
//! **Contract.**
//! - The command comes only from the operator: `PI_RESUME_CHECK` when it is non-empty, else
//!   `resumeChecks[<exact session name>]` of the budget configuration; with neither, the feature
//!   is off. The extension passes those facts ([`ResumeFacts`]); no tool argument, note or
//!   handoff is ever read for it.
//! - It runs only while the budget policy enforces (the effective mode, so `enforceCwds`, an
//!   invalid configuration and `/relay off` all turn it off) and never in a subagent session.
//! - Two boundaries, once each: right before a handoff is written
//!   ([`Engine::handoff_resume_command`]; the result goes into the handoff's `## Resume check`),
//!   and after a committed handoff reset, before the window's first request
//!   ([`Engine::resume_check_due`], [`Engine::reset_resume_command`]); that result is recorded on
//!   the branch (`relay/resume-check`) and every request of the window carries it at the same
//!   place ([`Engine::resume_context`]) until the next reset.

use serde_json::Value;

use super::wire::{ContextMessage, Marker, Moment, ResumeFacts, RESUME_CHECK_TYPE};
use super::Engine;
use crate::handoff::{duplicate_check, HandoffArgs, MAX_MARKDOWN_BYTES};
use crate::policy::{handoff_is_forced, Mode};
use crate::records::{CustomRecord, Record, ResumeCheckRecord};
use crate::render::resume_check::{render_handoff_section, render_window_message};
use crate::resume_check::CheckResult;

/// The operator's command and where it came from (the label the model reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeCommand {
    pub command: String,
    pub source: String,
}

/// The heading of the handoff's resume-check section.
const SECTION: &str = "## Resume check";

/// Bytes a handoff keeps free for its resume-check section (the 4 KiB result and its frame).
pub(super) const RESUME_RESERVE_BYTES: usize =
    crate::render::resume_check::RESULT_BUDGET_BYTES + SECTION.len() + 5;

impl Engine {
    /// The command the operator configured for this session, if any.
    pub(crate) fn resume_command(&self, facts: &ResumeFacts) -> Option<ResumeCommand> {
        if let Some(env) = facts.env.as_deref().filter(|e| !e.trim().is_empty()) {
            return Some(ResumeCommand {
                command: env.to_string(),
                source: "PI_RESUME_CHECK".into(),
            });
        }
        let name = facts.session_name.as_deref()?;
        let command = self.budget.resume_checks().get(name)?;
        Some(ResumeCommand {
            command: command.clone(),
            source: format!("resumeChecks[{}]", Value::from(name)),
        })
    }

    /// Resume checks apply: the policy enforces and this is not a subagent session.
    fn resume_active(&self, subagent: bool) -> bool {
        self.budget_mode().effective == Mode::Enforce && !subagent
    }

    /// The command to run right before the handoff `args` is written, or `None` when none runs:
    /// no command configured, not enforcing, a subagent, or a handoff that would not be written
    /// (invalid arguments, a duplicate the back-off refuses).
    pub(crate) fn handoff_resume_command(
        &mut self,
        args: &Value,
        moment: &Moment,
        git_head: Option<&str>,
        facts: &ResumeFacts,
    ) -> Option<ResumeCommand> {
        self.observe_guard(moment);
        self.refresh_params(moment);
        if !self.resume_active(self.is_subagent(moment)) {
            return None;
        }
        let parsed = HandoffArgs::parse(args).ok()?;
        if !handoff_is_forced(&self.budget.policy)
            && duplicate_check(
                self.mirror.last_fingerprint(),
                moment.now_ms,
                git_head,
                &parsed,
            )
            .is_err()
        {
            return None;
        }
        self.resume_command(facts)
    }

    /// Whether the window's after-reset check is still to run: the window was opened by a
    /// committed handoff, its first request is not answered yet, it has no check on the branch
    /// and none was handed out for it. Cheap (the `context` hook asks before every request;
    /// only a `true` makes the extension collect the facts).
    pub(crate) fn resume_check_due(&self) -> bool {
        let w = self.mirror.current_window();
        w.opened_by_handoff
            && w.resume_check.is_none()
            && !self.mirror.window_answered()
            && self.budget.resume_started.as_deref()
                != Some(self.mirror.history.current_window_id())
            && self.resume_active(self.budget.subagent())
    }

    /// The after-reset check to run now, with the window it belongs to; marks it handed out, so
    /// it runs once for the window.
    pub(crate) fn reset_resume_command(
        &mut self,
        moment: &Moment,
        facts: &ResumeFacts,
    ) -> Option<(ResumeCommand, String)> {
        self.observe_guard(moment);
        self.refresh_params(moment);
        if !self.resume_check_due() || self.is_subagent(moment) {
            return None;
        }
        let command = self.resume_command(facts)?;
        let window = self.mirror.history.current_window_id().to_string();
        self.budget.resume_started = Some(window.clone());
        Some((command, window))
    }

    /// The message the current window's requests carry: right after the boot block (the
    /// compaction summary, the first visible message), the same text every time.
    pub(crate) fn resume_context(&self) -> Option<ContextMessage> {
        let (_, content, at_ms) = self.mirror.current_window().resume_check.as_ref()?;
        Some(ContextMessage {
            index: 1,
            custom_type: RESUME_CHECK_TYPE.into(),
            content: content.clone(),
            timestamp: *at_ms,
        })
    }
}

/// The branch record of an after-reset check for `window_id`.
pub fn resume_record(window_id: &str, at_ms: i64, result: &CheckResult) -> Marker {
    ResumeCheckRecord {
        v: crate::records::VERSION,
        window_id: window_id.into(),
        at_ms,
        result: result.clone(),
    }
    .marker()
}

/// A `relay/resume-check` record read back: the window message and its time, when it belongs to
/// `window_id` (a record of another window, or one that does not parse, stands for nothing).
pub(super) fn window_check(data: &Value, window_id: &str) -> Option<(String, i64)> {
    let record = ResumeCheckRecord::read(data).filter(|r| r.window_id == window_id)?;
    Some((render_window_message(&record.result), record.at_ms))
}

/// `markdown` with its `## Resume check` section, within the handoff's 48 KiB (the section takes
/// at most 4 KiB, less when the handoff has less room left).
pub(super) fn with_resume_section(markdown: String, result: &CheckResult) -> String {
    let frame = SECTION.len() + 5;
    if markdown.len() + frame >= MAX_MARKDOWN_BYTES {
        return markdown;
    }
    let room = MAX_MARKDOWN_BYTES - markdown.len() - frame;
    let body = render_handoff_section(result, room);
    format!("{}\n\n{SECTION}\n\n{body}\n", markdown.trim_end())
}

#[cfg(test)]
mod tests;
