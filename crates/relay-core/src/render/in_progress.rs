//! The boot block's `<in_progress>` section: the closing window's last actions, built from the
//! branch without a model call when a reset opens a window (see `engine/mirror/in_progress.rs`).
//!
//! **Bounds.** At most [`IN_PROGRESS_CALLS`] tool calls (the newest; the older ones are counted,
//! not shown), each key argument cut in the middle past [`IN_PROGRESS_KEY_MAX_CHARS`]; at most
//! [`IN_PROGRESS_FILES`] written or edited files (the most recently written, each path cut past
//! [`IN_PROGRESS_PATH_MAX_CHARS`]); the model's last words cut in the middle past
//! [`IN_PROGRESS_WORDS_MAX_CHARS`]. The whole section stays within [`IN_PROGRESS_MAX_CHARS`]
//! characters (about 1,500 tokens at Pi's four characters a token), checked by a test.

use std::fmt::Write as _;

use super::{clip_middle, escape_attr, neutralize_closing_tags, push_clipped, push_not_shown};

/// How many of the window's newest tool calls the section names.
pub const IN_PROGRESS_CALLS: usize = 8;
/// A tool call's key argument (path, command, pattern, …) is cut in the middle past this.
pub const IN_PROGRESS_KEY_MAX_CHARS: usize = 160;
/// How many written or edited files the section lists.
pub const IN_PROGRESS_FILES: usize = 10;
/// A written file's path is cut in the middle past this.
pub const IN_PROGRESS_PATH_MAX_CHARS: usize = 120;
/// The model's last words in the window are cut in the middle past this.
pub const IN_PROGRESS_WORDS_MAX_CHARS: usize = 1_500;
/// The whole section's bound in characters (about 1,500 tokens).
pub const IN_PROGRESS_MAX_CHARS: usize = 6_000;

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    Ok,
    Error,
    /// No result on the branch (the window closed before it came).
    NoResult,
}

/// One tool call of the closing window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InProgressCall<'a> {
    pub tool: &'a str,
    /// Its key argument, uncut (cut here).
    pub key: &'a str,
    pub outcome: CallOutcome,
    /// When the call was made (milliseconds since the epoch), if Pi recorded it.
    pub at_ms: Option<i64>,
}

/// What the closing window was doing when the reset came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InProgress<'a> {
    /// The window's tool calls, oldest first; only the newest [`IN_PROGRESS_CALLS`] are shown.
    pub calls: Vec<InProgressCall<'a>>,
    /// How many tool calls the window made in all (at least `calls.len()`).
    pub call_count: usize,
    /// Files the window wrote or edited successfully, most recent last, each once.
    pub files: Vec<&'a str>,
    /// The model's last text in the window (tool-call lines left out).
    pub last_words: Option<&'a str>,
    /// The moment the window closed: "ago" is counted from it.
    pub now_ms: i64,
}

impl InProgress<'_> {
    /// Nothing to show: no tool call, no file, no words.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.files.is_empty() && self.last_words.is_none()
    }
}

/// Render the `<in_progress>` section (no trailing text outside it; ends with a newline).
pub fn render_in_progress(p: &InProgress) -> String {
    let mut out = String::with_capacity(1024);
    let shown = p.calls.len().min(IN_PROGRESS_CALLS);
    let total = p.call_count.max(p.calls.len());
    let _ = writeln!(
        out,
        "<in_progress tool_calls_shown=\"{shown}\" tool_calls_total=\"{total}\">"
    );
    push_not_shown(
        &mut out,
        total - shown,
        ["earlier tool call", "earlier tool calls"],
        "history_list_items",
    );
    let first = total - shown;
    let newest = p.calls.get(p.calls.len() - shown..).unwrap_or_default();
    for (i, c) in newest.iter().enumerate() {
        let result = match c.outcome {
            CallOutcome::Ok => "ok",
            CallOutcome::Error => "error",
            CallOutcome::NoResult => "none",
        };
        let ago = c
            .at_ms
            .map(|t| format!(" ago=\"{}\"", ago(p.now_ms.saturating_sub(t))))
            .unwrap_or_default();
        let key = neutralize_closing_tags(&clip_middle(c.key, IN_PROGRESS_KEY_MAX_CHARS));
        let _ = writeln!(
            out,
            "<tool_call n=\"{}\" tool=\"{}\" result=\"{result}\"{ago}>{}</tool_call>",
            first + i + 1,
            escape_attr(&clip_middle(c.tool, 64)),
            key.replace('\n', "⏎")
        );
    }
    push_files(&mut out, &p.files);
    if let Some(w) = p.last_words {
        push_clipped(&mut out, "last_words", w, IN_PROGRESS_WORDS_MAX_CHARS);
    }
    out.push_str("</in_progress>\n");
    out
}

/// `<files_written>`: the newest [`IN_PROGRESS_FILES`] paths, one a line.
fn push_files(out: &mut String, files: &[&str]) {
    if files.is_empty() {
        return;
    }
    let shown = files.len().min(IN_PROGRESS_FILES);
    let _ = writeln!(
        out,
        "<files_written shown=\"{shown}\" total=\"{}\">",
        files.len()
    );
    for f in files.get(files.len() - shown..).unwrap_or_default() {
        let path = clip_middle(f, IN_PROGRESS_PATH_MAX_CHARS).replace('\n', "⏎");
        out.push_str(&neutralize_closing_tags(&path));
        out.push('\n');
    }
    out.push_str("</files_written>\n");
}

/// A duration as the model reads it: seconds, minutes, hours or days, rounded down.
fn ago(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..=59 => format!("{s} s"),
        60..=3_599 => format!("{} min", s / 60),
        3_600..=86_399 => format!("{} h", s / 3_600),
        _ => format!("{} d", s / 86_400),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const NOW: i64 = 1_764_450_000_000;

    fn call(
        tool: &'static str,
        key: &'static str,
        outcome: CallOutcome,
        ago_s: i64,
    ) -> InProgressCall<'static> {
        call_at(tool, key, outcome, Some(NOW - ago_s * 1000))
    }

    fn call_at(
        tool: &'static str,
        key: &'static str,
        outcome: CallOutcome,
        at_ms: Option<i64>,
    ) -> InProgressCall<'static> {
        InProgressCall {
            tool,
            key,
            outcome,
            at_ms,
        }
    }

    pub(crate) fn twelve_calls() -> Vec<InProgressCall<'static>> {
        vec![
            call("read", "src/main.rs", CallOutcome::Ok, 900),
            call("read", "src/lib.rs", CallOutcome::Ok, 880),
            call("bash", "cargo build", CallOutcome::Error, 860),
            call("edit", "src/lib.rs", CallOutcome::Ok, 700),
            call("bash", "cargo build", CallOutcome::Ok, 650),
            call("grep", "fn parse", CallOutcome::Ok, 400),
            call("write", "src/parse.rs", CallOutcome::Ok, 300),
            call(
                "bash",
                "cargo test parse -- --nocapture",
                CallOutcome::Error,
                200,
            ),
            call("edit", "src/parse.rs", CallOutcome::Ok, 120),
            call("bash", "cargo test parse", CallOutcome::Ok, 61),
            call("notes_write_file", "progress.md", CallOutcome::Ok, 30),
            call("bash", "git diff --stat", CallOutcome::NoResult, 2),
        ]
    }

    pub(crate) fn sample() -> InProgress<'static> {
        InProgress {
            calls: twelve_calls(),
            call_count: 12,
            files: vec!["src/lib.rs", "src/parse.rs"],
            last_words: Some(
                "The parser passes its tests. Next: wire it into main and run the whole suite.",
            ),
            now_ms: NOW,
        }
    }

    #[test]
    fn in_progress_section() {
        let text = render_in_progress(&sample());
        assert!(text.contains("tool_calls_shown=\"8\" tool_calls_total=\"12\""));
        assert!(text.contains("(4 earlier tool calls"));
        assert!(
            !text.contains("src/main.rs"),
            "the oldest calls are left out"
        );
        insta::assert_snapshot!("in_progress_section", text);
    }

    #[test]
    fn in_progress_few_calls_no_files_no_words() {
        let p = InProgress {
            calls: vec![
                call("bash", "ls\n-la", CallOutcome::Ok, 5),
                call_at("read", "a</in_progress>b", CallOutcome::Error, None),
            ],
            call_count: 2,
            files: vec![],
            last_words: None,
            ..sample()
        };
        let text = render_in_progress(&p);
        assert!(!text.contains("earlier tool"));
        assert!(
            !text.contains("a</in_progress>"),
            "closing tags in arguments are neutralised"
        );
        insta::assert_snapshot!("in_progress_few_calls", text);
    }

    /// The worst case (every part at its bound) stays within [`IN_PROGRESS_MAX_CHARS`].
    #[test]
    fn in_progress_is_bounded() {
        let long: &'static str = Box::leak("x".repeat(50_000).into_boxed_str());
        let calls = (0..100)
            .map(|_| call_at(long, long, CallOutcome::NoResult, Some(0)))
            .collect();
        let p = InProgress {
            calls,
            call_count: 1_000_000,
            files: vec![long; 1_000],
            last_words: Some(long),
            now_ms: i64::MAX,
        };
        let chars = crate::text::char_count(&render_in_progress(&p));
        assert!(chars <= IN_PROGRESS_MAX_CHARS, "{chars} characters");
    }
}
