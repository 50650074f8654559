//! The stale-handoff check in the engine: before the first request of a window opened by a
//! committed handoff, what that handoff recorded of the workspace (git root, branch, HEAD,
//! uncommitted files, stamps of the files it tells the model to read) is compared with the
//! workspace then, and the model is told plainly what changed, so that it checks again instead of
//! trusting stale claims. The binding collects the facts (relay-io, off Pi's event loop, one
//! deadline) and relay-core's [`crate::staleness`] compares and renders.
//!
//! **Contract.**
//! - It runs once per window opened by a committed handoff that recorded the workspace, before
//!   the window's first request is answered: right after the reset, and equally when the session
//!   is resumed (Pi restarted, `/resume`, a reload) into such a window whose first request was
//!   never answered. A resumed window that already has its check keeps it: the branch is the
//!   source of truth, and once the window has answered, the model has been working with the
//!   workspace itself, so the handoff is no longer what it relies on.
//! - A session start (a new process resuming the session, `/resume`, `/fork`, `/reload`) into a
//!   window that was checked before runs the check once more, before the next request. When what
//!   differs from the handoff is what the last check found, nothing is recorded or shown; when
//!   the workspace moved since that check, the re-check is recorded (`recheck: true`) and its
//!   message, which says it was checked again and that the window's own work may be part of it,
//!   takes the place of the earlier one.
//! - Its result is recorded on the branch (`relay/stale-check` for the window, also when nothing
//!   differs, so a reload does not run it again); when something differs every request of the
//!   window carries the same message at the same place (after the boot block, the resume check
//!   and the watch check), so a reload shows the model the same text and the prompt cache holds.
//!   When nothing differs, nothing is shown.

use serde_json::Value;

use super::wire::{ContextMessage, Marker, STALE_CHECK_TYPE};
use super::Engine;
use crate::records::{CustomRecord, Record, StaleCheckRecord};
use crate::render::staleness::render_window_message_with;
use crate::staleness::{StaleReport, WorkspaceRecord};

/// A `relay/stale-check` record of the current window, read back from the branch.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct WindowCheck {
    /// Its position on the branch.
    pub(super) pos: usize,
    /// The message every request of the window carries (`None`: nothing differed).
    pub(super) content: Option<String>,
    /// When it ran.
    pub(super) at_ms: i64,
    /// What it found (`None`: a record that does not parse).
    pub(super) report: Option<StaleReport>,
}

impl Engine {
    /// Whether the window's stale-handoff check is still to run. Cheap: the `context` hook asks
    /// before every request and collects facts only on `true`.
    pub(crate) fn stale_check_due(&self) -> bool {
        let w = self.mirror.current_window();
        let first_or_again = match &w.stale_check {
            None => !self.mirror.window_answered(),
            Some(_) => self.budget.stale_recheck,
        };
        w.opened_by_handoff
            && w.recorded_workspace.is_some()
            && first_or_again
            && self.budget.stale_started.as_deref() != Some(self.mirror.history.current_window_id())
    }

    /// The check to run now: what the handoff recorded and the window its record belongs to.
    /// Marks it handed out, so it runs once for the window.
    pub(crate) fn stale_check(&mut self) -> Option<(WorkspaceRecord, String)> {
        if !self.stale_check_due() {
            return None;
        }
        let window = self.mirror.history.current_window_id().to_string();
        self.budget.stale_started = Some(window.clone());
        self.budget.stale_recheck = false;
        let record = self.mirror.current_window().recorded_workspace.as_deref()?;
        Some((record.clone(), window))
    }

    /// The message the current window's requests carry (after the boot block, the resume check
    /// and the watch check), the same text every time; `None` when nothing differed.
    pub(crate) fn stale_context(&self) -> Option<ContextMessage> {
        let check = self.mirror.current_window().stale_check.as_ref()?;
        let index = 1
            + u32::from(self.resume_context().is_some())
            + u32::from(self.watch_context().is_some());
        Some(ContextMessage {
            index,
            custom_type: STALE_CHECK_TYPE.into(),
            content: check.content.clone()?,
            timestamp: check.at_ms,
        })
    }

    /// The record of a finished check of `window_id`, or `None` when it is a re-check that found
    /// what the window's last check found (the workspace did not move since).
    pub(super) fn stale_result(
        &self,
        window_id: &str,
        at_ms: i64,
        report: &StaleReport,
    ) -> Option<Marker> {
        let last = self
            .mirror
            .current_window()
            .stale_check
            .as_ref()
            .filter(|_| self.mirror.history.current_window_id() == window_id);
        match last {
            None => Some(stale_record(window_id, at_ms, report, false)),
            Some(last) if last.report.as_ref() == Some(report) => None,
            Some(_) => Some(stale_record(window_id, at_ms, report, true)),
        }
    }
}

/// The branch record of a stale-handoff check for `window_id` (`recheck`: run again at a session
/// start, see the module documentation).
pub fn stale_record(window_id: &str, at_ms: i64, report: &StaleReport, recheck: bool) -> Marker {
    StaleCheckRecord {
        v: crate::records::VERSION,
        window_id: window_id.into(),
        at_ms,
        report: Some(report.clone()),
        recheck,
    }
    .marker()
}

/// A `relay/stale-check` record read back: the window message (`None`: nothing differed) and its
/// time, when it belongs to `window_id` (a record of another window stands for nothing; one whose
/// report does not parse counts as run, showing nothing).
pub(super) fn window_check(data: &Value, window_id: &str) -> Option<WindowCheck> {
    let record = StaleCheckRecord::read(data).filter(|r| r.window_id == window_id)?;
    Some(WindowCheck {
        pos: 0,
        content: record
            .report
            .as_ref()
            .and_then(|r| render_window_message_with(r, record.recheck)),
        at_ms: record.at_ms,
        report: record.report,
    })
}

impl WindowCheck {
    /// The same check, at position `pos` of the branch.
    pub(super) fn at(self, pos: usize) -> WindowCheck {
        WindowCheck { pos, ..self }
    }
}

#[cfg(test)]
mod tests;
