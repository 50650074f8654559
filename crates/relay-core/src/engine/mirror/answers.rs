//! The model of the branch's latest successful answer (Pi's `findLatestResponse`): under a router
//! (virtual) model, the window whose limits apply is that physical model's (`Engine::limits_window`).
//!
//! Kept as the marks where that model changed, each with its model: O(1) per mirrored entry, a few
//! marks per session, and a truncation drops the marks past it like every other branch mark
//! (between two marks every answer has the earlier mark's model, so the last mark left names the
//! latest answer left).

use super::*;
use crate::entry::{Message, ModelRef};

impl Mirror {
    /// Mirror an assistant message at `pos`: a successful answer of another model than the latest
    /// one's is a new mark.
    pub(super) fn note_answer(&mut self, pos: usize, message: &Message) {
        let Some(model) = message.answered_by() else {
            return;
        };
        if self.latest_answer() != Some(model) {
            self.answer_marks.push((pos, model.clone()));
        }
    }

    /// The model of the latest successful answer on the branch (`None`: none names its model).
    pub(in crate::engine) fn latest_answer(&self) -> Option<&ModelRef> {
        self.answer_marks.last().map(|(_, m)| m)
    }
}
