//! The running total behind tool-result clearing: what clearing the current window's old tool
//! results would free, kept as the window grows, so that a turn end past the clearing trigger
//! that does not clear (the old results free less than `clearAtLeast`) costs O(keep + excluded
//! tools), not a walk of the window's results.
//!
//! Each tool result of the window is measured once, when it is first seen: what replacing it by
//! its stub frees (0 when an edit replaced it already, when Relay never clears its tool, or when
//! the stub is not smaller), exactly as [`crate::clearing::decide`] measures it. The totals
//! start again with a new window (or window id), after a navigation's truncation or a reload (a
//! new mirror), and after a context edit (which changes an earlier result: the edits of a
//! clearing, so one walk per clearing).

use std::collections::HashMap;

use super::usage::{Editable, Mark};
use super::Mirror;
use crate::clearing::{estimate_tokens, never_cleared};
use crate::render::clearing::render_stub;

/// See the module documentation.
#[derive(Debug, Default)]
pub(in crate::engine) struct Clearable {
    /// The window the totals are for: its start and id.
    window: Option<(usize, String)>,
    /// How many of the mirror's usage marks were taken in.
    seen: usize,
    /// The window's tool results, oldest first: the tool and what clearing it frees.
    results: Vec<(String, u64)>,
    /// The sum of `results`, and per tool.
    total: u64,
    by_tool: HashMap<String, u64>,
}

/// A tool-result clearing on the branch: its position, window, the tokens it freed and the stubs
/// it put in place of the results (none for a clearing of an earlier Relay, whose stubs are
/// `context_edit` entries Pi applies).
#[derive(Debug, Clone)]
pub(in crate::engine) struct ClearingMark {
    pub(in crate::engine) pos: usize,
    pub(in crate::engine) window_id: String,
    pub(in crate::engine) freed: u64,
    pub(in crate::engine) stubs: Vec<crate::records::ClearedStub>,
}

impl Mirror {
    /// The stubs of the current window's clearings, oldest first: what its requests carry in
    /// place of the cleared results. Borrowed; O(clearings of the window) to start.
    pub(in crate::engine) fn window_stub_iter(
        &self,
    ) -> impl Iterator<Item = &crate::records::ClearedStub> {
        let start = self.current.start;
        let from = self.clearings.partition_point(|c| c.pos < start);
        self.clearings
            .get(from..)
            .unwrap_or_default()
            .iter()
            .flat_map(|c| &c.stubs)
    }

    /// What a clearing of the current window would free with `exclude` (tool names never
    /// cleared) and `keep` (the newest results kept): the sum [`crate::clearing::decide`] would
    /// find, without walking the window.
    pub(in crate::engine) fn clearable_tokens(&self, exclude: &[String], keep: usize) -> u64 {
        let mut c = self.clearable.borrow_mut();
        self.catch_up(&mut c);
        let mut total = c.total;
        for (i, tool) in exclude.iter().enumerate() {
            if !exclude.get(..i).unwrap_or_default().contains(tool) {
                total -= c.by_tool.get(tool).copied().unwrap_or(0);
            }
        }
        let older = c.results.len().saturating_sub(keep);
        for (tool, freed) in c.results.get(older..).unwrap_or_default() {
            if !exclude.contains(tool) {
                total -= freed;
            }
        }
        total
    }

    /// Takes in the usage marks added since the last call (all of the window's when the totals
    /// are for another window, or a context edit came in).
    fn catch_up(&self, c: &mut Clearable) {
        let start = self.current.start;
        let window_id = self.history.current_window_id();
        let fresh = |c: &mut Clearable| {
            *c = Clearable {
                window: Some((start, window_id.to_string())),
                seen: self.usage_marks.partition_point(|m| m.pos < start),
                ..Clearable::default()
            };
        };
        let same_window = c
            .window
            .as_ref()
            .is_some_and(|(s, id)| *s == start && id == window_id);
        let new = self.usage_marks.get(c.seen..);
        let edited = new.is_some_and(|n| {
            n.iter()
                .any(|m| matches!(m.mark, Mark::Edit { .. } | Mark::Cleared { .. }))
        });
        if !same_window || new.is_none() || edited {
            fresh(c);
        }
        let marks = self.usage_marks.get(c.seen..).unwrap_or_default();
        for m in marks {
            let Mark::Message {
                current,
                edited,
                editable: Editable::Content,
                system: None,
                call,
                ..
            } = &m.mark
            else {
                continue;
            };
            let Some((tool, chars)) = self.history.tool_result_at(m.pos) else {
                continue;
            };
            let freed = if *edited || call.is_none() || never_cleared(tool) {
                0
            } else {
                let id = self.history.entry_id_at(m.pos);
                let stub = render_stub(tool, chars, *current, window_id, id);
                current.saturating_sub(estimate_tokens(&stub))
            };
            c.total += freed;
            *c.by_tool.entry(tool.to_string()).or_insert(0) += freed;
            c.results.push((tool.to_string(), freed));
        }
        c.seen = self.usage_marks.len();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::clearing::decide;
    use crate::entry::{parse_entry, Entry};
    use crate::settings::ClearToolResults;

    /// One step of a generated branch.
    #[derive(Debug, Clone)]
    enum Step {
        /// A tool result of tool `tool % TOOLS.len()` with `len` characters.
        Result {
            tool: usize,
            len: usize,
        },
        User,
        /// A context edit of the `k`-th tool result so far (mod their count), replaced by a
        /// short text or removed.
        Edit {
            k: usize,
            remove: bool,
        },
        /// A compaction: a new window.
        Compact,
        /// A navigation back `back` entries (mod the branch's length).
        Truncate {
            back: usize,
        },
    }

    const TOOLS: [&str; 5] = [
        "bash",
        "read",
        "notes_read_file",
        "history_read_item",
        "fetch",
    ];

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            6 => (0..TOOLS.len(), 0usize..4_000).prop_map(|(tool, len)| Step::Result { tool, len }),
            2 => Just(Step::User),
            2 => (0usize..50, any::<bool>()).prop_map(|(k, remove)| Step::Edit { k, remove }),
            1 => Just(Step::Compact),
            1 => (1usize..6).prop_map(|back| Step::Truncate { back }),
        ]
    }

    struct Branch {
        n: u32,
        entries: Vec<Entry>,
    }

    impl Branch {
        fn entry(&mut self, mut body: serde_json::Value) -> Entry {
            self.n += 1;
            body["id"] = json!(format!("{:08x}", self.n));
            body["parentId"] = json!(self.entries.last().map(|e| e.id.clone()));
            body["timestamp"] = json!("2025-11-29T21:00:00.000Z");
            let e = parse_entry(&body.to_string()).unwrap();
            self.entries.push(e.clone());
            e
        }
    }

    /// The sum `decide` finds by walking the window (no `clearAtLeast`).
    fn walked(m: &Mirror, exclude: &[String], keep: u64) -> u64 {
        let cfg = ClearToolResults {
            enabled: true,
            keep,
            clear_at_least: 0,
            exclude_tools: exclude.to_vec(),
            ..ClearToolResults::default()
        };
        let results = m.window_tool_results();
        decide(
            &cfg,
            Some(0),
            Some(0),
            m.history.current_window_id(),
            &results,
        )
        .map_or(0, |c| c.tokens_freed)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Whenever it is asked, the running total equals the walk, for several settings.
        #[test]
        fn the_running_total_always_equals_the_walk(
            steps in proptest::collection::vec((step(), any::<bool>()), 1..60),
        ) {
            let mut m = Mirror::new("s");
            let mut b = Branch { n: 0, entries: Vec::new() };
            let mut results: Vec<String> = Vec::new();
            let settings: [(Vec<String>, u64); 4] = [
                (vec![], 3),
                (vec![], 0),
                (vec!["fetch".into(), "bash".into(), "fetch".into()], 1),
                (vec!["read".into()], 100),
            ];
            // Checked after some steps only: the engine asks at turn ends, not after every entry.
            for (s, check) in steps {
                match s {
                    Step::Result { tool, len } => {
                        let e = b.entry(json!({"type": "message", "message": {"role": "toolResult",
                            "toolCallId": "c", "toolName": TOOLS[tool],
                            "content": [{"type": "text", "text": "x".repeat(len)}], "isError": false}}));
                        results.push(e.id.clone());
                        m.push(&e);
                    }
                    Step::User => {
                        let e = b.entry(json!({"type": "message", "message": {"role": "user", "content": "go on"}}));
                        m.push(&e);
                    }
                    Step::Edit { k, remove } => {
                        if results.is_empty() {
                            continue;
                        }
                        let target = results[k % results.len()].clone();
                        let replacement = if remove {
                            serde_json::Value::Null
                        } else {
                            json!({"content": [{"type": "text", "text": "short"}]})
                        };
                        let e = b.entry(json!({"type": "context_edit", "targetId": target, "replacement": replacement}));
                        m.push(&e);
                    }
                    Step::Compact => {
                        let first = b.entries.last().map(|e| e.id.clone());
                        let e = b.entry(json!({"type": "compaction", "summary": "s",
                            "firstKeptEntryId": first, "tokensBefore": 1}));
                        m.push(&e);
                    }
                    Step::Truncate { back } => {
                        if b.entries.len() < 2 {
                            continue;
                        }
                        let keep_to = b.entries.len() - 1 - back % (b.entries.len() - 1);
                        b.entries.truncate(keep_to);
                        let last = b.entries.last().unwrap().id.clone();
                        prop_assert!(m.truncate_after(&last));
                        results.retain(|id| b.entries.iter().any(|e| &e.id == id));
                    }
                }
                if !check {
                    continue;
                }
                for (exclude, keep) in &settings {
                    prop_assert_eq!(
                        m.clearable_tokens(exclude, *keep as usize),
                        walked(&m, exclude, *keep),
                        "exclude {:?} keep {}", exclude, keep
                    );
                }
            }
        }
    }
}
