//! The closing window's last actions, for the `<in_progress>` section of the next window's boot
//! block (see `render/in_progress.rs`): each window's tool calls (tool, key argument cut, the
//! file an `edit` / `write` names, when, and its result; not Relay's reset tools) and the positions of the assistant
//! messages that said something besides calling tools.
//!
//! A projection of the branch like the rest of the mirror: a reload replays it, and a
//! navigation drops what lies past the new leaf (`forget_calls_from`), so every window keeps all
//! of its marks (about 250 bytes per tool call, the key argument cut to
//! [`crate::entry::TOOL_CALL_KEY_MAX_CHARS`]), not only the newest eight.

use super::*;
use crate::render::{clip_middle, render_in_progress, CallOutcome, InProgress, InProgressCall};

/// One tool call of a window.
#[derive(Debug, Clone)]
pub(in crate::engine) struct CallMark {
    /// Position of the assistant message that made the call.
    pos: usize,
    at_ms: Option<i64>,
    id: Option<String>,
    tool: String,
    key: String,
    /// The path an `edit` or `write` call names.
    wrote: Option<String>,
    /// The call's result: its position and whether it was an error.
    result: Option<(usize, bool)>,
}

/// A line of an assistant message's text that stands for a tool call (`entry::decode`).
fn is_call_line(line: &str) -> bool {
    line.starts_with("[tool_call ")
}

/// The assistant's words in a message text: its lines other than the tool-call lines.
fn words_of(text: &str) -> String {
    text.lines()
        .filter(|l| !is_call_line(l))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

impl Mirror {
    /// An assistant message at `pos`: its tool calls, and whether it said something.
    /// Relay's two reset tools (`new_context`, `context_handoff`) are not recorded: they are the
    /// reset itself, not work to check.
    pub(super) fn push_calls(&mut self, pos: usize, m: &crate::entry::Message) {
        let work = m.tool_calls.iter().filter(|c| {
            !matches!(
                ToolName::of(&c.name),
                ToolName::NewContext | ToolName::ContextHandoff
            )
        });
        for c in work {
            self.current.calls.push(CallMark {
                pos,
                at_ms: c.at_ms,
                id: c.id.clone(),
                tool: c.name.clone(),
                key: clip_middle(&c.key, crate::entry::TOOL_CALL_KEY_MAX_CHARS),
                wrote: c.wrote.clone(),
                result: None,
            });
        }
        if m.text
            .lines()
            .any(|l| !is_call_line(l) && !l.trim().is_empty())
        {
            self.current.words_at.push(pos);
        }
    }

    /// A tool result at `pos`: the call it answers (by call id, else the oldest unanswered call
    /// of the same tool) gets its outcome.
    pub(super) fn push_call_result(&mut self, pos: usize, m: &crate::entry::Message) {
        let calls = &mut self.current.calls;
        let open = |c: &&mut CallMark| c.result.is_none();
        let by_id = m.tool_call_id.as_deref().and_then(|id| {
            calls
                .iter_mut()
                .rev()
                .filter(open)
                .find(|c| c.id.as_deref() == Some(id))
        });
        let call = match by_id {
            Some(c) => Some(c),
            None => calls
                .iter_mut()
                .filter(open)
                .find(|c| m.tool_name.as_deref() == Some(c.tool.as_str())),
        };
        if let Some(c) = call {
            c.result = Some((pos, m.is_error));
        }
    }

    /// After a truncation to `len` entries: the current window's calls, results and words past
    /// it are forgotten.
    pub(super) fn forget_calls_from(&mut self, len: usize) {
        let w = &mut self.current;
        while w.calls.last().is_some_and(|c| c.pos >= len) {
            w.calls.pop();
        }
        for c in &mut w.calls {
            if c.result.is_some_and(|(p, _)| p >= len) {
                c.result = None;
            }
        }
        while w.words_at.last().is_some_and(|&p| p >= len) {
            w.words_at.pop();
        }
    }

    /// The current window's `<in_progress>` section as the window closes at `now_ms`, or `None`
    /// when it did nothing (no tool call, no words).
    pub(in crate::engine) fn in_progress(&self, now_ms: i64) -> Option<String> {
        let w = &self.current;
        let shown = w
            .calls
            .get(
                w.calls
                    .len()
                    .saturating_sub(crate::render::in_progress::IN_PROGRESS_CALLS)..,
            )
            .unwrap_or_default();
        let calls = shown
            .iter()
            .map(|c| InProgressCall {
                tool: &c.tool,
                key: &c.key,
                outcome: match c.result {
                    Some((_, false)) => CallOutcome::Ok,
                    Some((_, true)) => CallOutcome::Error,
                    None => CallOutcome::NoResult,
                },
                at_ms: c.at_ms,
            })
            .collect();
        // Each written file once, at its latest successful write.
        let mut files: Vec<&str> = Vec::new();
        for path in w
            .calls
            .iter()
            .filter(|c| c.result.is_some_and(|(_, error)| !error))
            .filter_map(|c| c.wrote.as_deref())
        {
            files.retain(|f| *f != path);
            files.push(path);
        }
        let words = w
            .words_at
            .last()
            .and_then(|&p| self.history.entry_text(p))
            .map(|t| words_of(&t))
            .filter(|t| !t.is_empty());
        let p = InProgress {
            calls,
            call_count: w.calls.len(),
            files,
            last_words: words.as_deref(),
            now_ms,
        };
        (!p.is_empty()).then(|| render_in_progress(&p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::parse_entry;
    use serde_json::json;

    const T0: i64 = 1_764_450_000_000;

    /// `n` tool calls (a `write` of `f<i>.rs` every third, the rest `bash`), each with its
    /// result (every fifth an error), then the assistant's words.
    fn branch(n: usize) -> Vec<Entry> {
        let mut bodies = vec![json!({"type":"message","message":{"role":"user","content":"go"}})];
        for i in 1..=n {
            let (name, args) = if i % 3 == 0 {
                ("write", json!({"path": format!("f{i}.rs"), "content": "x"}))
            } else {
                ("bash", json!({"command": format!("echo {i}")}))
            };
            bodies.push(json!({"type":"message","message":{"role":"assistant","stopReason":"toolUse",
                "timestamp": T0 + i as i64 * 1000,
                "content":[{"type":"toolCall","id":format!("c{i}"),"name":name,"arguments":args}]}}));
            bodies.push(
                json!({"type":"message","message":{"role":"toolResult","toolCallId":format!("c{i}"),
                "toolName":name,"isError": i % 5 == 0,"content":[{"type":"text","text":"r"}]}}),
            );
        }
        bodies.push(
            json!({"type":"message","message":{"role":"assistant","stopReason":"stop",
            "content":[{"type":"text","text":"WORDS"}]}}),
        );
        bodies
            .into_iter()
            .enumerate()
            .map(|(i, mut b)| {
                b["id"] = json!(format!("e{i}"));
                b["parentId"] = if i == 0 {
                    json!(null)
                } else {
                    json!(format!("e{}", i - 1))
                };
                b["timestamp"] = json!("2025-11-29T21:00:00.000Z");
                parse_entry(&b.to_string()).unwrap()
            })
            .collect()
    }

    fn mirror_of(entries: &[Entry]) -> Mirror {
        let mut m = Mirror::new("s");
        for e in entries {
            m.push(e);
        }
        m
    }

    #[test]
    fn the_section_names_the_last_eight_calls_and_counts_the_rest() {
        let entries = branch(12);
        let text = mirror_of(&entries).in_progress(T0 + 20_000).unwrap();
        assert!(text.starts_with(
            "<in_progress tool_calls_shown=\"8\" tool_calls_total=\"12\">\n(4 earlier"
        ));
        assert!(!text.contains("echo 4<") && text.contains("<tool_call n=\"5\" tool=\"bash\" result=\"error\" ago=\"15 s\">echo 5</tool_call>"));
        assert!(
            text.contains("<files_written shown=\"4\" total=\"4\">\nf3.rs\nf6.rs\nf9.rs\nf12.rs\n")
        );
        assert!(text.contains("<last_words>\nWORDS\n</last_words>"));
        assert_eq!(
            Mirror::new("s").in_progress(T0),
            None,
            "a window that did nothing"
        );
    }

    /// A navigation back into the window (`/tree`) gives what a reload of the shorter branch
    /// gives: nothing past the new leaf, nothing before it lost.
    #[test]
    fn a_truncation_gives_what_a_replay_of_the_shorter_branch_gives() {
        let entries = branch(12);
        for keep in [1, 2, 3, 10, 17, 18, 24, 25] {
            let mut m = mirror_of(&entries);
            assert!(m.truncate_after(&entries[keep - 1].id));
            let replayed = mirror_of(&entries[..keep]);
            assert_eq!(m.in_progress(T0), replayed.in_progress(T0), "kept {keep}");
        }
        // A call whose result was cut off has none.
        let mut m = mirror_of(&entries);
        assert!(m.truncate_after(&entries[23].id));
        let text = m.in_progress(T0 + 20_000).unwrap();
        assert!(
            text.contains("result=\"none\" ago=\"8 s\">f12.rs</tool_call>"),
            "{text}"
        );
        assert!(!text.contains("last_words") && !text.contains("f12.rs\n"));
    }
}
