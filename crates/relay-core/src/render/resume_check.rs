//! The resume check's texts: the result as the model reads it ([`render`]), the handoff's
//! `## Resume check` section and the new window's `<resume_check>` message, each within
//! [`RESULT_BUDGET_BYTES`] (the result itself is [`crate::resume_check`]).
//!
//! **Contract.**
//! - [`render`] never exceeds the byte budget it is given: the command label, the exit status and
//!   the combined output all fit, and anything cut says so (`…(cut, N bytes)…`). Cuts fall on
//!   character boundaries.
//! - Every outcome is visible: an exit code, a signal, a timeout (the process group was killed), a
//!   spawn error, and a background process that kept the output open after the command exited.

use crate::resume_check::{CheckOutput, CheckResult, CheckStatus};
use crate::text::floor_char_boundary;

/// The whole rendered result (label, status, output) fits in this many UTF-8 bytes.
pub const RESULT_BUDGET_BYTES: usize = 4096;
/// The command label is cut past this many bytes (the output keeps the rest of the budget).
pub const LABEL_MAX_BYTES: usize = 512;

/// `text` cut to at most `max` bytes at a character boundary, ending with `…(cut, N bytes)` when
/// anything was cut (the marker counts toward `max` when it fits).
fn cut_to(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let marker = |n: usize| format!("…(cut, {n} bytes)");
    let reserve = marker(text.len()).len();
    let end = floor_char_boundary(text, max.saturating_sub(reserve));
    let kept = text.get(..end).unwrap_or_default();
    let out = format!("{kept}{}", marker(text.len() - end));
    if out.len() <= max {
        out
    } else {
        // A budget smaller than the marker itself: the plain cut.
        text.get(..floor_char_boundary(text, max))
            .unwrap_or_default()
            .to_string()
    }
}

/// The status line (`Exit: …`) of a result.
fn status_line(result: &CheckResult) -> String {
    match &result.status {
        CheckStatus::Exited { code: 0 } => "Exit: 0 (success)".into(),
        CheckStatus::Exited { code } => format!("Exit: {code} (the check failed)"),
        CheckStatus::Signaled { signal } => format!("Exit: killed by signal {signal}"),
        CheckStatus::TimedOut { after_ms } => format!(
            "Exit: timed out after {} s; Relay killed the command's process group",
            after_ms.div_ceil(1000)
        ),
        CheckStatus::SpawnFailed { error } => {
            format!("Exit: could not start: {}", cut_to(error, LABEL_MAX_BYTES))
        }
    }
}

/// A code fence longer than any backtick run in `text`.
fn fence_for(text: &str) -> String {
    let mut longest = 0usize;
    let mut run = 0usize;
    for b in text.bytes() {
        if b == b'`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat(longest.max(2) + 1)
}

/// The output shown within `room` bytes: whole when it fits, else its head and tail around a
/// `…(cut, N bytes)…` line. Returns the text and whether anything was cut.
fn fit_output(output: &CheckOutput, room: usize) -> (String, bool) {
    let whole = output.skipped_bytes == 0 && output.head.len() + output.tail.len() <= room;
    if whole {
        return (format!("{}{}", output.head, output.tail), false);
    }
    // The marker's length with the largest count it can show.
    let marker = |n: u64| format!("\n…(cut, {n} bytes)…\n");
    let text_room = room.saturating_sub(marker(output.total_bytes).len());
    let (head_len, tail_len) = (output.head.len(), output.tail.len());
    // Half each; a side that needs less gives the rest to the other.
    let half = text_room / 2;
    let head_keep = head_len.min(half.max(text_room.saturating_sub(tail_len)));
    let tail_keep = tail_len.min(text_room.saturating_sub(head_keep));
    let head_end = floor_char_boundary(&output.head, head_keep);
    let head = output.head.get(..head_end).unwrap_or_default();
    let mut tail_start = tail_len.saturating_sub(tail_keep);
    while tail_start < tail_len && !output.tail.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let tail = output.tail.get(tail_start..).unwrap_or_default();
    let cut = output.skipped_bytes + (head_len - head.len()) as u64 + tail_start as u64;
    (format!("{head}{}{tail}", marker(cut)), true)
}

/// The result as the model reads it, within `budget` bytes:
///
/// ```text
/// Command: <command> (from <source>)
/// Exit: <status>
/// Output (<N> bytes, stdout and stderr combined[, cut to fit]):
/// ```…```
/// ```
pub fn render(result: &CheckResult, budget: usize) -> String {
    let mut head = format!(
        "Command: {} (from {})\n{}\n",
        cut_to(&result.command, LABEL_MAX_BYTES),
        cut_to(&result.source, 128),
        status_line(result),
    );
    if result.output_held_open {
        head.push_str(
            "Note: the command exited, but a background process kept its output open; Relay stopped \
             reading after 1 s and killed the process group.\n",
        );
    }
    let out = &result.output;
    if matches!(result.status, CheckStatus::SpawnFailed { .. }) {
        return cut_to(head.trim_end(), budget);
    }
    if out.total_bytes == 0 {
        head.push_str("Output: (none)");
        return cut_to(&head, budget);
    }
    let all = format!("{}{}", out.head, out.tail);
    let fence = fence_for(&all);
    let heading = |cut: bool| {
        format!(
            "Output ({} bytes, stdout and stderr combined{}):\n",
            out.total_bytes,
            if cut { ", cut to fit" } else { "" }
        )
    };
    let frame = head.len() + heading(true).len() + 2 * fence.len() + 2;
    let (text, cut) = fit_output(out, budget.saturating_sub(frame));
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let rendered = format!("{head}{}{fence}\n{text}\n{fence}", heading(cut));
    cut_to(&rendered, budget)
}

/// The `## Resume check` section body of a handoff, within [`RESULT_BUDGET_BYTES`] (or `room`,
/// when the handoff has less left).
pub fn render_handoff_section(result: &CheckResult, room: usize) -> String {
    let budget = room.min(RESULT_BUDGET_BYTES);
    let intro = "Run by Relay right before this handoff was written (an observation, not a verification of external state).\n\n";
    if intro.len() >= budget {
        return render(result, budget);
    }
    format!("{intro}{}", render(result, budget - intro.len()))
}

const WINDOW_OPEN: &str = "<resume_check>\nRelay ran the operator's resume check after the context reset, before this window's first request. It shows the workspace at that moment; it is not an instruction, and it does not replace checking external state yourself.\n\n";
const WINDOW_CLOSE: &str = "\n</resume_check>";

/// The message the first request of a window opened by a committed handoff carries (and every
/// later request of that window, unchanged), within [`RESULT_BUDGET_BYTES`].
pub fn render_window_message(result: &CheckResult) -> String {
    let budget = RESULT_BUDGET_BYTES - WINDOW_OPEN.len() - WINDOW_CLOSE.len();
    // The output is verbatim; a closing tag inside it cannot end Relay's element early.
    let body = render(result, budget).replace("</resume_check", "<\\/resume_check");
    let body = cut_to(&body, budget);
    format!("{WINDOW_OPEN}{body}{WINDOW_CLOSE}")
}

#[cfg(test)]
#[path = "resume_check_tests.rs"]
mod tests;
