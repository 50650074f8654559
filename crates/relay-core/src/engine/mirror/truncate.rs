//! A navigation's truncation of the mirror: what the branch no longer holds is dropped (windows,
//! the current window's positions, branch-wide marks), and what is derived from the entries that
//! stay (the window's usage estimate, the notes) is replayed.

use super::*;

impl Mirror {
    /// Drop every entry after `id`. False when `id` is not mirrored (nothing changes).
    pub(in crate::engine) fn truncate_after(&mut self, id: &str) -> bool {
        if !self.history.truncate_after(id) {
            return false;
        }
        *self.clearable.get_mut() = Default::default();
        let len = self.history.entry_count();
        self.drop_windows_from(len);
        self.forget_window_positions_from(len);
        self.forget_calls_from(len);
        self.drop_branch_marks_from(len);
        self.replay_window_estimate();
        self.replay_note_ops_before(len);
        true
    }

    /// After a truncation to `len` entries: the windows that started at or past it are gone (the
    /// current one is the window the branch now ends in), and so are the subagent ids past it.
    fn drop_windows_from(&mut self, len: usize) {
        while self.current.start >= len {
            match self.earlier.pop() {
                Some(w) => self.current = w,
                None => break,
            }
        }
        while self.subagent_ids.last().is_some_and(|&(p, _)| p >= len) {
            self.subagent_ids.pop();
        }
    }

    /// After a truncation to `len` entries: what the current window saw at or past it (boot
    /// block, reminder, steer, failures, work, checks, user messages) is forgotten.
    fn forget_window_positions_from(&mut self, len: usize) {
        let w = &mut self.current;
        if w.boot_at.is_some_and(|p| p >= len) {
            w.boot_at = None;
        }
        if w.reminder_at.is_some_and(|p| p >= len) {
            w.reminder_at = None;
        }
        if w.steer_at.is_some_and(|p| p >= len) {
            w.steer_at = None;
        }
        if w.reset_failed_at.is_some_and(|p| p >= len) {
            w.reset_failed_at = None;
        }
        if w.worked_at.is_some_and(|p| p >= len) {
            w.worked_at = None;
        }
        if w.rearmed_at.is_some_and(|p| p >= len) {
            w.rearmed_at = None;
        }
        if w.tool_called_at.is_some_and(|p| p >= len) {
            w.tool_called_at = None;
        }
        if w.answered_at.is_some_and(|p| p >= len) {
            w.answered_at = None;
        }
        if w.continued_task_at.is_some_and(|p| p >= len) {
            w.continued_task_at = None;
        }
        while w.owned_failures_at.last().is_some_and(|&p| p >= len) {
            w.owned_failures_at.pop();
        }
        if w.gave_up_at.is_some_and(|p| p >= len) {
            w.gave_up_at = None;
        }
        if w.disarmed_at.is_some_and(|p| p >= len) {
            w.disarmed_at = None;
        }
        if w.native_failed_at.is_some_and(|p| p >= len) {
            w.native_failed_at = None;
        }
        if w.native_spent_at.is_some_and(|p| p >= len) {
            w.native_spent_at = None;
        }
        while w.user_at.last().is_some_and(|&p| p >= len) {
            w.user_at.pop();
        }
        if w.resume_check.as_ref().is_some_and(|(p, _, _)| *p >= len) {
            w.resume_check = None;
        }
        if w.watch_check.as_ref().is_some_and(|(p, _, _)| *p >= len) {
            w.watch_check = None;
        }
        if w.stale_check.as_ref().is_some_and(|c| c.pos >= len) {
            w.stale_check = None;
        }
    }

    /// After a truncation to `len` entries: the branch-wide records at or past it (the written
    /// and committed handoffs, clearings, pins, commit/turn/progress, usage and answer marks) are
    /// dropped.
    fn drop_branch_marks_from(&mut self, len: usize) {
        if self
            .written_handoff
            .as_ref()
            .is_some_and(|(p, _, _, _)| *p >= len)
        {
            self.written_handoff = None;
            self.written_jobs = None;
            self.written_workspace = None;
        }
        while self.clearings.last().is_some_and(|c| c.pos >= len) {
            self.clearings.pop();
        }
        while self.ledger_marks.last().is_some_and(|(p, _)| *p >= len) {
            self.ledger_marks.pop();
        }
        while self.pin_marks.last().is_some_and(|(p, _)| *p >= len) {
            self.pin_marks.pop();
        }
        while self
            .committed_handoffs
            .last()
            .is_some_and(|(p, _, _, _)| *p >= len)
        {
            self.committed_handoffs.pop();
        }
        for marks in [
            &mut self.commit_marks,
            &mut self.turn_marks,
            &mut self.progress_marks,
            &mut self.request_marks,
            &mut self.idle_request_marks,
        ] {
            while marks.last().is_some_and(|&p| p >= len) {
                marks.pop();
            }
        }
        while self.usage_marks.last().is_some_and(|m| m.pos >= len) {
            self.usage_marks.pop();
        }
        while self.answer_marks.last().is_some_and(|(p, _)| *p >= len) {
            self.answer_marks.pop();
        }
    }

    /// The current window's usage estimate, replayed from its usage marks with every context
    /// edit undone first (a truncation may have dropped the entries that made them).
    fn replay_window_estimate(&mut self) {
        // Replay the marks of the window it lands in, edits undone first.
        let start = self.current.start;
        let from = self.usage_marks.partition_point(|m| m.pos < start);
        let mut estimate = Estimate::default();
        for i in from..self.usage_marks.len() {
            if let Some(UsageMark {
                mark:
                    Mark::Message {
                        original,
                        current,
                        removed,
                        edited,
                        ..
                    },
                ..
            }) = self.usage_marks.get_mut(i)
            {
                *current = *original;
                *removed = false;
                *edited = false;
            }
            apply_mark(&mut estimate, &mut self.usage_marks, from, i);
        }
        self.current.estimate = estimate;
    }

    /// After a truncation to `len` entries: the notes are rebuilt from the operations before it
    /// when any operation was dropped.
    fn replay_note_ops_before(&mut self, len: usize) {
        let before = self.note_ops.len();
        self.note_ops.retain(|(p, _)| *p < len);
        if self.note_ops.len() != before {
            self.notes = Notes::new();
            for (_, op) in &self.note_ops {
                let _ = self.notes.apply(op);
            }
        }
    }
}
