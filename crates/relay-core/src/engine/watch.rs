//! The watch check: on the first request of a window opened by a committed handoff, the jobs and
//! watches that handoff recorded are compared with the live pi-jobs registry, and the model is
//! shown the recorded work that is no longer live (`id | label | command`), so that it can re-arm
//! what the task still needs. An observation, never an automatic restart.
//!
//! **Contract.**
//! - It runs once per window, before the window's first request is answered, and only when the
//!   handoff recorded some work (the registry was present then). Nothing is shown when all of it
//!   is still live or the registry is absent now.
//! - Its result is recorded on the branch (`relay/watch-check` for the window), and every request
//!   of the window carries the same message at the same place (after the boot block and the resume
//!   check), so a reload shows the model the same text and the prompt cache holds.

use serde_json::Value;

use super::wire::{ContextMessage, Marker, WATCH_CHECK_TYPE};
use super::Engine;
use crate::integrations::missing_work;
use crate::records::{CustomRecord, Record, WatchCheckRecord};
use crate::render::integrations::render_watch_check;

#[cfg(test)]
mod tests;

impl Engine {
    /// Whether the window's watch check is still to run. Cheap: the `context` hook asks before
    /// every request and reads the registry only on `true`.
    pub(crate) fn watch_check_due(&self) -> bool {
        let w = self.mirror.current_window();
        w.opened_by_handoff
            && w.recorded_jobs.as_ref().is_some_and(|j| !j.is_empty())
            && w.watch_check.is_none()
            && !self.mirror.window_answered()
            && self.budget.watch_started.as_deref() != Some(self.mirror.history.current_window_id())
    }

    /// Compare the recorded work with `live` (the registry's records; `None`: no registry) and
    /// hand out the branch record to append when something is missing. Runs once per window.
    pub(crate) fn watch_check(&mut self, live: Option<&[Value]>, now_ms: i64) -> Option<Marker> {
        if !self.watch_check_due() {
            return None;
        }
        let window = self.mirror.history.current_window_id().to_string();
        self.budget.watch_started = Some(window.clone());
        let recorded = self.mirror.current_window().recorded_jobs.as_deref()?;
        let missing = missing_work(recorded, live, self.mirror.history.session_id())?;
        Some(
            WatchCheckRecord {
                v: crate::records::VERSION,
                window_id: window,
                at_ms: now_ms,
                missing,
            }
            .marker(),
        )
    }

    /// The message the current window's requests carry, after the boot block and the resume
    /// check, the same text every time.
    pub(crate) fn watch_context(&self) -> Option<ContextMessage> {
        let (_, content, at_ms) = self.mirror.current_window().watch_check.as_ref()?;
        let index = 1 + u32::from(self.resume_context().is_some());
        Some(ContextMessage {
            index,
            custom_type: WATCH_CHECK_TYPE.into(),
            content: content.clone(),
            timestamp: *at_ms,
        })
    }
}

/// A `relay/watch-check` record read back: the window message and its time, when it belongs to
/// `window_id` and lists something (a record of another window, or one that does not parse,
/// stands for nothing).
pub(super) fn window_check(data: &Value, window_id: &str) -> Option<(String, i64)> {
    let record = WatchCheckRecord::read(data).filter(|r| r.window_id == window_id)?;
    if record.missing.is_empty() {
        return None;
    }
    Some((render_watch_check(&record.missing), record.at_ms))
}
