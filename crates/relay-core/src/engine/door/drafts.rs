//! The entries a boundary hook's answer adds to Pi's drafts, in Pi's own shapes, so that the
//! host only appends them (and fills in the reset marker's id).

use serde::Serialize;
use serde_json::Value;

use super::super::wire::{Continuation, HookResult};

/// One entry of Pi's boundary drafts (`SessionBoundaryDraft`), as the engine adds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Draft {
    /// A `custom` entry (a clearing's record).
    Custom {
        custom_type: String,
        #[cfg_attr(test, ts(type = "unknown"))]
        data: Value,
    },
    /// A hidden `custom_message` (a continuation).
    CustomMessage {
        custom_type: String,
        content: String,
        display: bool,
        #[cfg_attr(test, ts(type = "unknown"))]
        details: Value,
    },
    /// A reset's compaction: the host appends the plan's marker first, and the marker's entry id
    /// is the compaction's `firstKeptEntryId` (it keeps nothing old).
    Compaction {
        summary: String,
        #[cfg_attr(test, ts(type = "unknown"))]
        details: Box<crate::records::WindowRecord>,
    },
}

impl Draft {
    /// The drafts `result` adds (none for a result that is not a boundary draft).
    pub(in crate::engine) fn of(result: &HookResult) -> Vec<Draft> {
        let hidden = |c: &Continuation| Draft::CustomMessage {
            custom_type: c.custom_type.clone(),
            content: c.content.clone(),
            display: false,
            details: c.details.clone(),
        };
        match result {
            HookResult::Clear { record } => vec![Draft::Custom {
                custom_type: record.custom_type.clone(),
                data: record.data.clone(),
            }],
            HookResult::Continue { continuation } => vec![hidden(continuation)],
            HookResult::Reset { plan } => std::iter::once(Draft::Compaction {
                summary: plan.summary.clone(),
                details: plan.details.clone(),
            })
            .chain(plan.continuation.as_ref().map(hidden))
            .collect(),
            _ => Vec::new(),
        }
    }
}
