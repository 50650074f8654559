//! How a compaction entry says what opened its window: Relay's window marker in `details`
//! ([`crate::records::WindowRecord`], read here in every shape it has had).
//!
//! Contract: one reader for every shape Relay has written, so commit counting, the history
//! tools' window listing and `relay windows` agree about old and new sessions.
//!
//! - **Current shape** (written since the handoff markers follow seed 004): `details.relay ==
//!   "window"`, `details.kind` is `"handoff"` (the window opens with a handoff the agent wrote)
//!   or `"reset"` (any other reset, a mechanical forced reset included), and `details.commit` is
//!   the budget commit the reset stands for (`voluntary`, `budget`, `hard`, `forcedHard`,
//!   `forcedGuard`, later `idle`) or `null`.
//! - **Earlier shape**: `details.kind` held the commit type itself (or `null`), there was no
//!   `commit`; a handoff is recognised by its commit type or its `handoffPath`.
//! - A compaction without `details.relay == "window"` is Pi's own (or another extension's).
//!
//! Only `budget`, `hard` and `forcedHard` commits count toward `maxHandoffsPerSession`; every
//! other commit type, including ones this version does not know (such as `idle`), never does.

use serde_json::Value;

use crate::records::{Record, WindowRecord};

/// What opened a window, read from its compaction's `details`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowMarker {
    /// `"handoff"`, `"reset"` (Relay's) or `"compaction"` (not Relay's).
    pub kind: &'static str,
    /// The budget commit type, when the reset stood for one.
    pub commit: Option<String>,
}

/// Commit types that count toward the handoff cap.
pub const COUNTED_COMMITS: [&str; 3] = ["budget", "hard", "forcedHard"];

/// Commit types that mean the agent wrote a handoff (earlier shape).
const HANDOFF_COMMITS: [&str; 3] = ["voluntary", "budget", "hard"];

impl WindowMarker {
    /// Reads a compaction's `details` in either shape (see the module documentation).
    pub fn of(details: &Value) -> WindowMarker {
        Self::read(details).1
    }

    /// Reads a compaction's `details`: the window record (`None`: the compaction is not Relay's)
    /// and the marker it makes.
    pub fn read(details: &Value) -> (Option<WindowRecord>, WindowMarker) {
        let record = WindowRecord::read(details);
        let marker = Self::of_record(record.as_ref());
        (record, marker)
    }

    /// Reads a window marker already deserialized (`None`: the compaction is not Relay's).
    pub fn of_record(record: Option<&WindowRecord>) -> WindowMarker {
        let Some(record) = record else {
            return WindowMarker {
                kind: "compaction",
                commit: None,
            };
        };
        match record.kind.as_deref() {
            Some("handoff") => WindowMarker {
                kind: "handoff",
                commit: record.commit.clone(),
            },
            Some("reset") => WindowMarker {
                kind: "reset",
                commit: record.commit.clone(),
            },
            // Earlier shape: `kind` was the commit type.
            old => {
                let has_path = record.handoff_path.is_some();
                let handoff = old.is_some_and(|k| HANDOFF_COMMITS.contains(&k)) || has_path;
                WindowMarker {
                    kind: if handoff { "handoff" } else { "reset" },
                    commit: old.map(str::to_string),
                }
            }
        }
    }

    /// Whether this window's reset counts toward the handoff cap.
    pub fn counts(&self) -> bool {
        self.commit
            .as_deref()
            .is_some_and(|c| COUNTED_COMMITS.contains(&c))
    }
}
