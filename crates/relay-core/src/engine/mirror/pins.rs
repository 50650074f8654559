//! The user's pinned instructions as the branch holds them (`relay/pins` records, see
//! [`crate::pins`]): the newest record's list is in force; a navigation drops the records past
//! the new leaf (`truncate.rs`).

use super::*;
use crate::records::PinsRecord;

impl Mirror {
    /// The user's pinned instructions in force: the newest `relay/pins` record's list.
    pub(in crate::engine) fn pins(&self) -> &[String] {
        self.pin_marks
            .last()
            .map(|(_, pins)| pins.as_slice())
            .unwrap_or_default()
    }

    /// A `relay/pins` record at `pos`. One without its list stands for nothing; one past the
    /// limits (written by hand) is cut to them.
    pub(super) fn push_pins(&mut self, pos: usize, data: &Value) {
        if let Some(record) = PinsRecord::read(data) {
            self.pin_marks
                .push((pos, crate::pins::bounded(record.pins)));
        }
    }
}
