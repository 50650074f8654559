//! The compaction-failure fallback's disarm on the branch: a mode or guard change that disarms it
//! in memory (`Engine::policy_step`) is recorded (`relay/fallback-disarmed`), so the policy state
//! the mirror rebuilds (`Mirror::policy_state`) after /reload, /tree or a resume keeps it
//! disarmed.

use super::super::wire::Marker;
use super::super::Engine;
use crate::policy::{FallbackReason, PolicyState};
use crate::records::{CustomRecord, FallbackDisarmedRecord, VERSION};

impl Engine {
    /// The record that a mode or guard change disarmed the current window's compaction-failure
    /// fallback, when one did since the last hook and the branch still shows it armed.
    pub(in crate::engine) fn fallback_disarmed_record(&mut self) -> Option<Marker> {
        if !std::mem::take(&mut self.budget.fallback_disarmed)
            || !self.mirror.current_window().fallback_armed()
        {
            return None;
        }
        Some(
            FallbackDisarmedRecord {
                v: VERSION,
                window_id: self.mirror.history.current_window_id().to_string(),
            }
            .marker(),
        )
    }
}

/// The policy state holds the fallback a compaction failure armed.
pub(super) fn by_compaction_failure(state: &PolicyState) -> bool {
    state.fallback == Some(FallbackReason::CompactionFailure)
}
