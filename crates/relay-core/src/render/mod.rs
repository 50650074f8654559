//! Every text the model reads is built here, each with its snapshot test (in `render/snapshots/`).
//! The decisions stay in their modules; these functions take plain data and return the text.
//!
//! - this module: the `<context_window_guidance>` reminder, the borrowed-turn steers, the hidden
//!   continuations after a reset and after an early stop (quoting the user's latest request), the
//!   reset-failed and overflow notices, the user's warnings, and the `/relay` status text;
//! - [`boot`]: the `<context_window>` boot block with its `<context_window_protocol>`;
//! - [`clearing`]: the stub that replaces a cleared tool result;
//! - [`handoff`]: the handoff markdown and the note on shortened sections;
//! - [`in_progress`]: the boot block's `<in_progress>` section (the closing window's last actions);
//! - [`integrations`]: the handoff's integration sections and the `<watch_check>`;
//! - [`ledger`]: the ledger of a branch's windows (`relay stats`, `/relay stats`);
//! - [`memory_tool`]: the `memory` tool's errors;
//! - [`resume_check`]: the resume check's handoff section and `<resume_check>` message;
//! - [`staleness`]: the `<stale_handoff>` message;
//! - [`policy`]: the budget policy's advisories, block reasons, continuations and mode footer
//!   (snapshot-tested in policy/tests.rs, beside the transitions that choose them).
//!
//! Texts that live elsewhere, and why: the notes tools' and the history tools' results
//! (`notes/tools.rs`, `history/tools.rs`) are built from their stores' own records and paging, and
//! are snapshot-tested there; the argument errors are `args.rs` (one format for every tool), the host refusals
//! `host.rs`, and `/relay config` is `effective.rs`'s `render_effective_config`.
//!
//! All functions are pure: the same input renders the same bytes. The boot block contains no
//! "now" (only note timestamps, which are part of the window-open snapshot), so the head of a
//! window is cache-stable.
//!
//! # Escaping
//!
//! The tags are XML-like markers for the model, not a document for an XML parser.
//! - **Attribute values** (a note path) escape `&`, `"`, `<` and `>` as `&amp;`, `&quot;`, `&lt;`,
//!   `&gt;`.
//! - **Text** (previews, the handoff, the pending user request) is verbatim: `<`, `>` and `&` are
//!   kept as written so code and markdown read naturally. The one change: a closing tag of one
//!   of Relay's own elements inside the text (`</note`, `</handoff`, `</context_window`, … in any
//!   ASCII case) is written `<\/name`, so verbatim text can never end its element early.

pub mod boot;
pub mod clearing;
pub mod handoff;
pub mod in_progress;
pub mod integrations;
pub mod ledger;
pub mod memory_tool;
pub mod pins;
pub mod policy;
pub mod resume_check;
pub mod staleness;
pub use boot::{
    render_boot_block, BootBlock, NoteIndexEntry, BOOT_NOTES_SHOWN,
    CONTINUE_TASK_REQUEST_MAX_CHARS, PREVIEW_HEAD_CHARS, PREVIEW_TAIL_CHARS,
    PREVIEW_WHOLE_MAX_CHARS, USER_INPUT_BLOCK_MAX_CHARS, USER_INPUT_MESSAGES,
    USER_INPUT_MESSAGE_MAX_CHARS,
};
pub use in_progress::{render_in_progress, CallOutcome, InProgress, InProgressCall};
pub use ledger::render_ledger;
pub use pins::{render_pin_refusal, render_pinned, render_pins, render_unpinned};

use std::fmt::Write as _;

/// Relay's own element names; a closing tag for any of them inside verbatim text is neutralised.
const OWN_TAGS: [&str; 18] = [
    "pinned_instructions",
    "pin",
    "context_window_protocol",
    "context_window_guidance",
    "context_window",
    "recent_notes",
    "note",
    "handoff",
    "pending_user_request",
    "reset_notice",
    "earlier_user_input",
    "user_message",
    "compact_instructions",
    "latest_user_request",
    "in_progress",
    "tool_call",
    "files_written",
    "last_words",
];

/// `text` whole when it has at most `max_chars` characters; else its start and end with a
/// visible marker in the middle that says how many characters were cut, the whole within
/// `max_chars` characters.
pub fn clip_middle(text: &str, max_chars: usize) -> String {
    let total = crate::text::char_count(text);
    if total <= max_chars {
        return text.to_string();
    }
    // The marker's length depends on the count it names; reserve room for the longest one.
    let reserve = format!(
        "\n[… {} characters cut here …]\n",
        group_digits(total as u64)
    )
    .chars()
    .count();
    let keep = max_chars.saturating_sub(reserve);
    let head = keep / 2;
    let tail = keep - head;
    let head_end = crate::text::byte_at_char(text, head);
    let tail_start = crate::text::byte_before_chars(text, tail).max(head_end);
    let (first, last) = (
        text.get(..head_end).unwrap_or_default(),
        text.get(tail_start..).unwrap_or_default(),
    );
    let cut = total - head - crate::text::char_count(last);
    format!(
        "{first}\n[… {} characters cut here …]\n{last}",
        group_digits(cut as u64)
    )
}

pub(crate) fn push_element(out: &mut String, tag: &str, text: &str) {
    push_element_open(out, tag, tag, text);
}

/// The line that says how many `things` (singular, plural) of the closing window the block
/// leaves out (nothing when none): `(3 older messages of that window not shown: … finds them.)`.
pub(crate) fn push_not_shown(out: &mut String, left_out: usize, things: [&str; 2], finder: &str) {
    if left_out > 0 {
        let _ = writeln!(
            out,
            "({left_out} {} of that window not shown: {finder} finds {}.)",
            if left_out == 1 { things[0] } else { things[1] },
            if left_out == 1 { "it" } else { "them" }
        );
    }
}

/// [`push_element`] with `text` cut in the middle past `max_chars` ([`clip_middle`]).
pub(crate) fn push_clipped(out: &mut String, tag: &str, text: &str, max_chars: usize) {
    push_element(out, tag, &clip_middle(text, max_chars));
}

/// [`push_element`] with attributes: `open` is the opening tag's inside, `tag` its name.
pub(crate) fn push_element_open(out: &mut String, open: &str, tag: &str, text: &str) {
    let body = neutralize_closing_tags(text);
    let _ = writeln!(out, "<{open}>");
    out.push_str(&body);
    if !body.ends_with('\n') {
        out.push('\n');
    }
    let _ = writeln!(out, "</{tag}>");
}

/// The `<context_window_guidance>` reminder persisted once per window when the budget runs low.
/// `remaining_tokens` is the reserve-adjusted figure at the crossing, frozen into the text.
pub fn render_reminder(remaining_tokens: u64) -> String {
    format!(
        "<context_window_guidance>
This context window is running low: about {} tokens remain before it resets (measured when this message was written; get_context_remaining gives the current figure). Bring your notes up to date now (goal, progress, decisions, next step) so the next window can continue. At a good stopping point, call new_context alone in a tool batch; otherwise the window resets automatically when it is full.
</context_window_guidance>",
        group_digits(remaining_tokens)
    )
}

/// The instruction for the borrowed turn: the window is full, write notes now, a reset follows.
pub fn render_notes_steer() -> String {
    "<context_window_guidance>
This context window is full and will be reset as soon as you finish this turn. Use it only to update your notes with notes_write_file or notes_append_to_file: the goal, what is done, what is in progress, facts you will need, and the exact next step. Do not start new work now. The next window opens with your recent notes; earlier messages stay searchable with the history_* tools.
</context_window_guidance>"
        .to_string()
}

/// Which tools the context budget leaves the model in a borrowed note-taking turn (the policy's
/// blocks, see `policy::notes_access`): the steer asks only for what can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetSteer {
    /// Every tool but `context_handoff` is blocked: the turn is for the handoff.
    HandoffOnly,
    /// A handoff is written and commits at this turn's end: nothing else to do.
    HandoffWritten,
    /// Every tool is blocked and a handoff cannot help (a reset is under way, or the cap, the
    /// loop guard or a compaction failure armed the fallback).
    Closed,
}

/// The borrowed turn's steer while the context budget blocks the notes tools: the same promise
/// as [`render_notes_steer`] (the reset follows this turn), asking only for what the budget allows.
pub fn render_budget_steer(steer: BudgetSteer) -> String {
    let ask = match steer {
        BudgetSteer::HandoffOnly => "The context budget allows no tool but context_handoff right now, so the notes tools are blocked: spend this turn on one context_handoff call (goal, next_step, facts, and the user's constraints word for word). The next window starts from that handoff. Do not start new work now.",
        BudgetSteer::HandoffWritten => "Your handoff is written and the next window starts from it. The context budget blocks every other tool, the notes tools included: end this turn without calling tools.",
        BudgetSteer::Closed => "The context budget blocks every tool right now, the notes tools and context_handoff included: end this turn without calling tools. The next window opens with the notes you already have; earlier messages stay searchable with the history_* tools.",
    };
    format!(
        "<context_window_guidance>
This context window is full and will be reset as soon as you finish this turn. {ask}
</context_window_guidance>"
    )
}

/// What the model reads when a reset it was promised (or that Relay started) did not happen.
/// `source` is the reset's source name (`new_context`, `fallback`, `manual`, …).
pub fn render_reset_failed(source: &str) -> String {
    let next = match source {
        "new_context" => "If you still want a fresh window, update your notes and call new_context again.",
        "manual" => "The user may run /compact again.",
        "handoff" => "Your handoff file is written, but this window continues: keep working from it here, or call context_handoff again when the policy asks.",
        _ => "Relay resets it at the next opportunity (at the latest when the next prompt finds the window over Pi's threshold), without another note-taking turn. Keep your notes current.",
    };
    format!(
        "<context_window_guidance>
The context window was NOT reset: Pi did not apply Relay's {source} reset. Nothing was lost; this window and its history are intact, and you are still in it. {next}
</context_window_guidance>"
    )
}

/// The warning the user gets when a reset did not happen.
pub fn render_reset_failed_notice(source: &str) -> String {
    let next = match source {
        "manual" => "run /compact again to retry",
        "new_context" | "handoff" => "the model was told and may ask again",
        _ => "Relay tries again at the next reset point, without another note-taking turn",
    };
    format!(
        "relay: the context window was not reset (Pi did not apply Relay's {source} reset, e.g. another extension changed or cancelled it). History is intact; {next}."
    )
}

/// The boot block's `<reset_notice>` after an overflow reset without a stored handoff: the
/// mechanical summary is the `<earlier_user_input>` (and the `<pending_user_request>`) beside it.
pub fn render_overflow_notice() -> String {
    "The previous context window overflowed: its last request did not fit the model's context \
     window, and no valid handoff was stored, so Relay reset the window mechanically. Only the user's recent requests are repeated below; everything else from that \
     window is gone from this one but remains in the history tools. Re-establish the state from \
     your notes, the workspace files and git (status, log, diff) before acting, keep what you \
     read small, and do not ask the user to restate the task unless it cannot be recovered."
        .to_string()
}

/// The user's warning, once per session start, naming the entries pi-context or
/// pi-context-budget wrote that Relay does not read as its own (type and count).
pub fn render_unimported(types: &[(String, u32)]) -> String {
    let total: u32 = types.iter().map(|(_, n)| n).sum();
    let list = types
        .iter()
        .map(|(t, n)| format!("{t} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let entries = if total == 1 { "entry" } else { "entries" };
    format!(
        "relay: this session has {total} {entries} from pi-context or pi-context-budget that \
         Relay does not import ({list}). They stay in the session file, unchanged; Relay's \
         tools and boot block do not use them."
    )
}

/// The user's warning when a second overflow follows Relay's one reset-and-retry.
pub fn render_overflow_exhausted() -> String {
    "relay: the context overflowed again right after Relay's overflow reset and retry, so Relay \
     stops here instead of looping. The request itself is too large for this model's window: \
     shrink the context (a shorter prompt, fewer or smaller attached files or tool outputs) and \
     send it again, or switch to a model with a larger context window (/model)."
        .to_string()
}

/// The user's warning when Relay cancels Pi's overflow compaction because recovery is off.
pub fn render_overflow_recovery_off(why: &str) -> String {
    format!(
        "relay: the provider reported a context overflow. Overflow recovery is off ({why}), so \
         Relay cancelled Pi's overflow compaction (Pi's summarizer never runs while Relay's \
         windows are on) and the request failed. Run /compact or new_context to reset the window, \
         shrink the request, or set overflowRecovery: true in the budget configuration."
    )
}

/// The warning shown when Relay cancels a `/tree` navigation whose summary would cross resets.
pub fn render_tree_summary_refused(resets: u32) -> String {
    format!(
        "relay: navigation cancelled. Summarizing that branch would send Pi's summarizer over {resets} context {} that a reset already ended. Navigate again without a summary: the branch you leave stays in the session file, and its notes and windows stay on the branches that contain them.",
        if resets == 1 { "window" } else { "windows" }
    )
}

/// The warning the user gets when Pi's own summarizer failed while the shared context guard is
/// off (it was let through): the window's one mechanical fallback comes at its next compaction.
pub fn render_native_fallback_notice() -> String {
    "relay: Pi's summarizer failed to compact this context window (the context guard is off, so \
     Relay let it run). The next compaction in this window, /compact or Pi's own threshold, is \
     done once by Relay instead, mechanically: the new window keeps your recent requests and \
     notes, not a summary."
        .to_string()
}

/// The warning shown (once per window) when Relay skips Pi's threshold compaction because the
/// window's fresh start is already past it: a reset would open the same window again.
pub fn render_futile_threshold(first_tokens: u64) -> String {
    format!(
        "relay: this context window began at {first_tokens} tokens, already past Pi's compaction threshold (the context window minus compaction.reserveTokens). Another reset would start the same way, so Relay does not reset until the window has grown. To get room: switch to a model with a larger context window, lower compaction.reserveTokens, or shorten the notes the boot block lists."
    )
}

/// Why a window was reset, for the hidden continuation message that follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContinuationReason {
    /// The model called `new_context`.
    NewContext,
    /// The window filled up (automatic threshold or overflow reset).
    Fallback,
    /// A handoff was committed.
    Handoff,
    /// The budget policy reset the window mechanically: no handoff was written.
    Mechanical,
}

/// The hidden message that resumes work after a reset.
pub fn render_continuation(reason: ContinuationReason) -> String {
    match reason {
        ContinuationReason::NewContext => {
            "This is the fresh context window you asked for. Check your notes, then continue the task from your next step."
        }
        ContinuationReason::Fallback => {
            "The previous context window filled up and was reset. The task is the user's latest request: the <pending_user_request> when one is shown, else the <user_message latest=\"true\"> in <earlier_user_input>. Check your notes (and the history_* tools if something is missing), then continue it."
        }
        ContinuationReason::Handoff => {
            "Your handoff was committed and this is a fresh context window. Read the <handoff>, then check it against the real state before you rely on it: confirm git HEAD and any external state it mentions (CI runs, issues, jobs). Then continue from its next step. The task is already known, so do not ask the user to repeat it."
        }
        ContinuationReason::Mechanical => {
            "The previous context window was reset mechanically and no handoff was written (see the <reset_notice>). The task is the user's latest request, the <user_message latest=\"true\"> in <earlier_user_input>. Rebuild the state from your notes, the history_* tools, the workspace files and git before acting, then continue it."
        }
    }
    .to_string()
}

/// The one hidden message that continues a window's first run after it stopped early (a question
/// back to the user, an empty or meta reply; see [`crate::on_task`]) following an automatic or
/// forced reset. `request` is the user's latest request, quoted verbatim (cut in the middle past
/// [`CONTINUE_TASK_REQUEST_MAX_CHARS`]); `None` when its text is not at hand, and the boot block's
/// copy is named instead.
pub fn render_continue_task(request: Option<&str>) -> String {
    let mut out = String::from("<context_window_guidance>\n");
    out.push_str("Your reply ended the run, but nothing says the task is finished. The context window was reset while you worked on it; the user is not waiting to give you a new one.\n");
    match request {
        Some(r) => {
            out.push_str("The user's latest request, quoted verbatim, is the task; earlier requests are history:\n");
            push_clipped(&mut out, "latest_user_request", r, CONTINUE_TASK_REQUEST_MAX_CHARS);
        }
        None => out.push_str("The task is the user's latest request, the one the boot block shows as latest; earlier requests are history.\n"),
    }
    out.push_str("Do not ask the user what to do next. Continue the task from your notes, the workspace and the history_* tools. If it is already finished, say so plainly and state the result in a few lines.\n");
    out.push_str("</context_window_guidance>");
    out
}

/// What the `/relay` command reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusInfo<'a> {
    /// Window features on.
    pub enabled: bool,
    pub current_window_id: &'a str,
    /// Number of windows on the current branch (1 before the first reset).
    pub window_count: usize,
    pub note_count: usize,
    /// The user's pinned instructions (`/relay pins`); the line is left out without any.
    pub pin_count: usize,
    /// Reserve-adjusted remaining tokens; `None` when Pi cannot estimate.
    pub remaining_tokens: Option<u64>,
    pub reserve_tokens: u64,
    /// Physical remaining capacity at which the reminder fires (reserve + margin).
    /// `None` while the window is unknown (a router model before its first answer).
    pub reminder_threshold: Option<u64>,
    /// Whether this window already received its reminder.
    pub reminder_sent: bool,
    /// The source of a pending reset (`new_context`, `fallback`, `handoff`, ...).
    pub pending_reset: Option<&'a str>,
    /// The budget policy's mode: effective, and configured with the reason when they differ.
    pub budget_mode: &'a str,
    pub budget_configured: &'a str,
    pub budget_reason: Option<&'a str>,
    /// `relay.clearToolResults.enabled`.
    pub clearing_enabled: bool,
    /// Tool-result clearing: its settings in this window, `None` when it is off or the window is
    /// too small for the default trigger.
    pub clearing: Option<ClearingStatus>,
    /// Clearings (count, tokens freed) in this window and on the whole branch.
    pub cleared_window: (u32, u64),
    pub cleared_branch: (u32, u64),
}

/// `relay.clearToolResults` as it applies in the current window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClearingStatus {
    pub trigger_tokens: u64,
    pub keep: u64,
    pub clear_at_least: u64,
}

/// The `/relay` status text shown to the user.
pub fn render_status(s: &StatusInfo) -> String {
    let mut out = String::new();
    if s.enabled {
        out.push_str("Relay: on\n");
    } else {
        out.push_str("Relay: off (no boot block, reminder or reset-style windows; Pi's own compaction applies)\n");
    }
    let _ = writeln!(
        out,
        "window: {} (window {} on this branch)",
        s.current_window_id,
        s.window_count.max(1)
    );
    let _ = writeln!(out, "notes: {}", s.note_count);
    if s.pin_count > 0 {
        let _ = writeln!(
            out,
            "pins: {} (every new window's boot block repeats them; /relay pins lists them)",
            s.pin_count
        );
    }
    match s.remaining_tokens {
        Some(r) => {
            let _ = writeln!(
                out,
                "remaining: {} tokens before the {}-token reserve",
                group_digits(r),
                group_digits(s.reserve_tokens)
            );
        }
        None => out.push_str("remaining: unknown until the next model response\n"),
    }
    let sent = if s.reminder_sent {
        "already sent in this window"
    } else {
        "not sent in this window"
    };
    let _ = match s.reminder_threshold {
        Some(t) => write!(
            out,
            "reminder: when {} tokens or fewer are left; {sent}",
            group_digits(t)
        ),
        None => write!(
            out,
            "reminder: none until the model's context window is known (after its first answer); {sent}"
        ),
    };
    match s.pending_reset {
        Some(source) => {
            let _ = write!(out, "\nreset: pending ({source}), at the next settle point");
        }
        None => out.push_str("\nreset: none pending"),
    }
    match s.clearing {
        Some(c) => {
            let _ = write!(
                out,
                "\ntool-result clearing: from {} tokens, the newest {} kept, at least {} tokens at a time",
                group_digits(c.trigger_tokens),
                c.keep,
                group_digits(c.clear_at_least)
            );
        }
        None if s.clearing_enabled => out.push_str(
            "\ntool-result clearing: on, but this window is too small for the default trigger (relay.clearToolResults.triggerTokens sets one)",
        ),
        None => out.push_str("\ntool-result clearing: off"),
    }
    let plural = |n: u32| if n == 1 { "clearing" } else { "clearings" };
    let _ = write!(
        out,
        "; {} {} in this window freed {} tokens ({} on this branch, {} tokens)",
        s.cleared_window.0,
        plural(s.cleared_window.0),
        group_digits(s.cleared_window.1),
        s.cleared_branch.0,
        group_digits(s.cleared_branch.1)
    );
    if s.budget_mode == s.budget_configured {
        let _ = write!(out, "\nbudget policy: {}", s.budget_mode);
    } else {
        let _ = write!(
            out,
            "\nbudget policy: configured {}, effective {}{}",
            s.budget_configured,
            s.budget_mode,
            s.budget_reason
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        );
    }
    out
}

/// Format a Unix timestamp in ms as local ISO 8601 with an explicit offset, to the second:
/// `2026-11-29T23:05:07+01:00` (the one formatter, see [`crate::time`]).
pub use crate::time::format_local_iso;

/// A note's inline preview: the whole note when it has at most 200 Unicode characters (scalar
/// values, so a combining mark or each half of an emoji ZWJ sequence counts as one), else its
/// first 120 and last 80 characters joined by `…` (the two ends never overlap).
pub fn note_preview(content: &str) -> String {
    crate::text::head_tail_preview(
        content,
        PREVIEW_WHOLE_MAX_CHARS,
        PREVIEW_HEAD_CHARS,
        PREVIEW_TAIL_CHARS,
    )
}

/// `12345678` → `12,345,678`.
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let lead = (digits.len() - 1) % 3 + 1;
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    out.push_str(digits.get(..lead).unwrap_or_default());
    for chunk in digits.as_bytes().get(lead..).unwrap_or_default().chunks(3) {
        out.push(',');
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
    }
    out
}

/// Escape an attribute value (see the module doc).
pub fn escape_attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Rewrite `</tag` as `<\/tag` for Relay's own tags (ASCII case-insensitive, tag name followed by
/// `>`, whitespace or the end of the text); everything else stays verbatim.
pub fn neutralize_closing_tags(text: &str) -> String {
    if !text.contains("</") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(i) = rest.find("</") {
        out.push_str(rest.get(..i).unwrap_or_default());
        let after = rest.get(i + 2..).unwrap_or_default();
        let own = OWN_TAGS.iter().any(|t| {
            after
                .as_bytes()
                .get(..t.len())
                .is_some_and(|name| name.eq_ignore_ascii_case(t.as_bytes()))
                // The name is ASCII, so the text after it starts at a character boundary.
                && !matches!(
                    after.get(t.len()..).and_then(|r| r.chars().next()),
                    Some(c) if c != '>' && !c.is_whitespace()
                )
        });
        out.push_str(if own { "<\\/" } else { "</" });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;
