//! Every text the model sees that is not a tool result: the `<context_window>` boot block with
//! its `<context_window_protocol>` teaching text, the `<context_window_guidance>` reminder, the
//! borrowed-turn note-taking steer, the hidden continuation after a reset, the one continuation
//! after an early stop in a window's first run (quoting the user's latest request), and the
//! `/relay` status text.
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

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::fmt::Write as _;

/// One note in the boot block's recent-notes index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoteIndexEntry<'a> {
    pub path: &'a str,
    pub content: &'a str,
    pub updated_ms: i64,
}

/// Everything the boot block of one window shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootBlock<'a> {
    /// The agent's name, e.g. `pi`.
    pub agent_name: &'a str,
    pub first_window_id: &'a str,
    pub current_window_id: &'a str,
    /// `None` for the first window of a session.
    pub previous_window_id: Option<&'a str>,
    /// Up to [`BOOT_NOTES_SHOWN`] most recent notes, most recent first. Extra entries are ignored.
    pub notes: Vec<NoteIndexEntry<'a>>,
    /// Total number of notes, so the block can say how many are not shown.
    pub note_count: usize,
    /// Local offset east of UTC in minutes (+60 for CET, -300 for EST).
    pub tz_offset_minutes: i32,
    /// A rendered handoff (markdown), included verbatim in `<handoff>`.
    pub handoff: Option<&'a str>,
    /// A user request the reset dropped, restated in `<pending_user_request>` (cut in the middle
    /// past [`USER_INPUT_MESSAGE_MAX_CHARS`]).
    pub dropped_request: Option<&'a str>,
    /// The model had already worked on the `dropped_request` in the ended window (an overflow in
    /// the middle of a run): the protocol says it is in progress, not unanswered.
    pub dropped_request_in_progress: bool,
    /// Why a mechanical reset (no handoff) happened and how to recover, in `<reset_notice>`.
    pub reset_notice: Option<&'a str>,
    /// The user's most recent messages, oldest first, shown in `<earlier_user_input>` (automatic
    /// and manual resets): the ended window's, or when it received none, those of the newest
    /// window before it that did. At most [`USER_INPUT_MESSAGES`] are read; each is cut in the
    /// middle past [`USER_INPUT_MESSAGE_MAX_CHARS`], and the oldest are left out when the block
    /// would pass [`USER_INPUT_BLOCK_MAX_CHARS`]. Without a `dropped_request`, the newest is the
    /// user's latest request and is marked `latest="true"`: the one to work on.
    pub earlier_user_input: Vec<&'a str>,
    /// The instructions the user gave with `/compact`, shown in `<compact_instructions>` (cut in
    /// the middle past [`USER_INPUT_MESSAGE_MAX_CHARS`]).
    pub compact_instructions: Option<&'a str>,
}

/// How many of the ended window's most recent user messages the boot block shows at most.
pub const USER_INPUT_MESSAGES: usize = 8;
/// One user message in the boot block is cut in the middle past this many characters
/// (about 2,000 tokens at Pi's four characters a token).
pub const USER_INPUT_MESSAGE_MAX_CHARS: usize = 8_000;
/// All user messages of `<earlier_user_input>` together stay within this many characters
/// (about 8,000 tokens); the oldest are left out first.
pub const USER_INPUT_BLOCK_MAX_CHARS: usize = 32_000;

/// The user's latest request is quoted in the continuation after an early stop up to this many
/// characters (cut in the middle past it); the boot block holds the longer cut.
pub const CONTINUE_TASK_REQUEST_MAX_CHARS: usize = 2_000;

/// How many notes the boot block lists.
pub const BOOT_NOTES_SHOWN: usize = 3;
/// A note of at most this many Unicode characters is previewed whole.
pub const PREVIEW_WHOLE_MAX_CHARS: usize = 200;
/// Characters kept from the start of a longer note.
pub const PREVIEW_HEAD_CHARS: usize = 120;
/// Characters kept from the end of a longer note.
pub const PREVIEW_TAIL_CHARS: usize = 80;

/// Relay's own element names; a closing tag for any of them inside verbatim text is neutralised.
const OWN_TAGS: [&str; 12] = [
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
];

/// Render the `<context_window>` boot block that opens a window.
pub fn render_boot_block(b: &BootBlock) -> String {
    let mut out = String::with_capacity(2048);
    out.push_str("<context_window>\n");
    let _ = writeln!(out, "agent: {}", b.agent_name);
    let _ = writeln!(out, "first_window_id: {}", b.first_window_id);
    let _ = writeln!(out, "current_window_id: {}", b.current_window_id);
    match b.previous_window_id {
        Some(prev) => {
            let _ = writeln!(out, "previous_window_id: {prev}");
        }
        None => out.push_str("previous_window_id: none (this is the first window)\n"),
    }

    let shown = b
        .notes
        .get(..b.notes.len().min(BOOT_NOTES_SHOWN))
        .unwrap_or_default();
    let total = b.note_count.max(shown.len());
    if shown.is_empty() {
        out.push_str("<recent_notes>none yet</recent_notes>\n");
    } else {
        let _ = writeln!(
            out,
            "<recent_notes shown=\"{}\" total=\"{total}\">",
            shown.len()
        );
        for n in shown {
            let _ = writeln!(
                out,
                "<note path=\"{}\">{} lines, {} UTF-8 bytes, updated {}",
                escape_attr(n.path),
                crate::text::count_lines(n.content),
                n.content.len(),
                format_local_iso(n.updated_ms, b.tz_offset_minutes)
            );
            let preview = neutralize_closing_tags(&note_preview(n.content));
            out.push_str(&preview);
            if !preview.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("</note>\n");
        }
        let more = total - shown.len();
        if more > 0 {
            let _ = writeln!(
                out,
                "{more} more {}: see notes_list_files_by_prefix.",
                if more == 1 { "note" } else { "notes" }
            );
        }
        out.push_str("</recent_notes>\n");
    }

    let earlier = earlier_input(&b.earlier_user_input);
    out.push_str(PROTOCOL_HEAD);
    if b.handoff.is_some() {
        out.push_str(PROTOCOL_HANDOFF);
    }
    if b.reset_notice.is_some() {
        out.push_str(PROTOCOL_NOTICE);
    }
    if !earlier.shown.is_empty() {
        out.push_str(PROTOCOL_EARLIER);
        out.push_str(if b.dropped_request.is_some() {
            PROTOCOL_EARLIER_ALL_HISTORY
        } else {
            PROTOCOL_EARLIER_LATEST
        });
    }
    if b.compact_instructions.is_some() {
        out.push_str(PROTOCOL_COMPACT);
    }
    if b.dropped_request.is_some() {
        out.push_str(if b.dropped_request_in_progress {
            PROTOCOL_PENDING_IN_PROGRESS
        } else {
            PROTOCOL_PENDING
        });
    }
    out.push_str("</context_window_protocol>\n");

    if let Some(h) = b.handoff {
        push_element(&mut out, "handoff", h);
    }
    if let Some(n) = b.reset_notice {
        push_element(&mut out, "reset_notice", n);
    }
    if !earlier.shown.is_empty() {
        let _ = writeln!(
            out,
            "<earlier_user_input shown=\"{}\" total=\"{}\">",
            earlier.shown.len(),
            earlier.total
        );
        let left_out = earlier.total - earlier.shown.len();
        if left_out > 0 {
            let _ = writeln!(
                out,
                "({left_out} older {} of that window not shown: history_search_contents finds {}.)",
                if left_out == 1 { "message" } else { "messages" },
                if left_out == 1 { "it" } else { "them" }
            );
        }
        // The newest is the user's latest request, unless the reset dropped a newer one.
        let latest = (b.dropped_request.is_none())
            .then(|| earlier.shown.len().checked_sub(1))
            .flatten();
        for (i, text) in earlier.shown.iter().enumerate() {
            if Some(i) == latest {
                push_element_open(
                    &mut out,
                    "user_message latest=\"true\"",
                    "user_message",
                    text,
                );
            } else {
                push_element(&mut out, "user_message", text);
            }
        }
        out.push_str("</earlier_user_input>\n");
    }
    if let Some(c) = b.compact_instructions {
        push_element(
            &mut out,
            "compact_instructions",
            &clip_middle(c, USER_INPUT_MESSAGE_MAX_CHARS),
        );
    }
    if let Some(r) = b.dropped_request {
        push_element(
            &mut out,
            "pending_user_request",
            &clip_middle(r, USER_INPUT_MESSAGE_MAX_CHARS),
        );
    }
    out.push_str("</context_window>");
    out
}

/// The messages `<earlier_user_input>` shows (oldest first, each cut) and how many it was given.
struct EarlierInput {
    shown: Vec<String>,
    total: usize,
}

/// Bound the ended window's user messages: the newest [`USER_INPUT_MESSAGES`], each cut in the
/// middle, and only as many (newest first) as fit in [`USER_INPUT_BLOCK_MAX_CHARS`].
fn earlier_input(messages: &[&str]) -> EarlierInput {
    let mut shown = Vec::new();
    let mut used = 0;
    for text in messages.iter().rev().take(USER_INPUT_MESSAGES) {
        let clipped = clip_middle(text, USER_INPUT_MESSAGE_MAX_CHARS);
        let chars = crate::text::char_count(&clipped);
        if used + chars > USER_INPUT_BLOCK_MAX_CHARS {
            break;
        }
        used += chars;
        shown.push(clipped);
    }
    shown.reverse();
    EarlierInput {
        shown,
        total: messages.len(),
    }
}

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

const PROTOCOL_HEAD: &str = "<context_window_protocol>
You are working in one context window of a longer task. Earlier windows are not shown here and were not summarized.
- Notes carry your state from one window to the next. Keep them current as you work with notes_write_file and notes_append_to_file (goal, decisions, progress, next step); read them with notes_list_files_by_prefix, notes_read_file and notes_search_contents.
- Everything from earlier windows is still stored. Find it with history_list_windows, history_list_items, history_search_contents and history_read_item, using the window ids above.
- get_context_remaining reports how many tokens this window has left.
- When this window is cluttered or a phase of the task is done, update your notes, then call new_context as the only tool call in its batch; work continues in a fresh window.
";

const PROTOCOL_HANDOFF: &str = "- The <handoff> below records where the previous window stopped. Check that the workspace still matches it, then continue from its next step.
";

const PROTOCOL_NOTICE: &str = "- The <reset_notice> below says why the previous window was reset without a handoff. Rebuild the state it names before acting.
";

const PROTOCOL_EARLIER: &str = "- The <earlier_user_input> below repeats what the user wrote most recently, oldest first, so that their requests and constraints are not lost. It is earlier input, not a new instruction: keep to its constraints, and check your notes and the workspace for what is already done before acting on it.
";

const PROTOCOL_EARLIER_LATEST: &str = "- The <user_message latest=\"true\"> is the user's latest request as this window opens: the task to continue, unless the user writes to you in this window. Do not ask the user what to do next. The messages before it are history: answered or overtaken, never to be answered again.
";

const PROTOCOL_EARLIER_ALL_HISTORY: &str = "- Every <user_message> there is history: answered or overtaken, never to be answered again. The user's latest request is the <pending_user_request>.
";

const PROTOCOL_COMPACT: &str = "- The user asked for this reset with /compact and gave the <compact_instructions> below, meant for a summary of the previous window. Relay writes no summary: apply them to what you carry over (find what they ask to keep in your notes and with the history_* tools) and follow them as you continue.
";

const PROTOCOL_PENDING: &str = "- The <pending_user_request> below is the user's latest request: it arrived as the previous window ran out and has not been answered yet. Handle it.
";

const PROTOCOL_PENDING_IN_PROGRESS: &str = "- The <pending_user_request> below is the user's latest request: you were already working on it when the previous window ran out, and it is not finished. Check your notes and the workspace for what is already done, then continue it; do not start it over.
";

fn push_element(out: &mut String, tag: &str, text: &str) {
    push_element_open(out, tag, tag, text);
}

/// [`push_element`] with attributes: `open` is the opening tag's inside, `tag` its name.
fn push_element_open(out: &mut String, open: &str, tag: &str, text: &str) {
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
            push_element(
                &mut out,
                "latest_user_request",
                &clip_middle(r, CONTINUE_TASK_REQUEST_MAX_CHARS),
            );
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
    /// Reserve-adjusted remaining tokens; `None` when Pi cannot estimate.
    pub remaining_tokens: Option<u64>,
    pub reserve_tokens: u64,
    /// Physical remaining capacity at which the reminder fires (reserve + margin).
    pub reminder_threshold: u64,
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
    let _ = write!(
        out,
        "reminder: when {} tokens or fewer are left; {}",
        group_digits(s.reminder_threshold),
        if s.reminder_sent {
            "already sent in this window"
        } else {
            "not sent in this window"
        }
    );
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
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )]

    use super::*;

    /// 2026-11-29T22:05:07Z
    const T: i64 = 1_795_989_907_000;

    fn note<'a>(path: &'a str, content: &'a str, updated_ms: i64) -> NoteIndexEntry<'a> {
        NoteIndexEntry {
            path,
            content,
            updated_ms,
        }
    }

    fn block<'a>(notes: Vec<NoteIndexEntry<'a>>, note_count: usize) -> BootBlock<'a> {
        BootBlock {
            agent_name: "pi",
            first_window_id: "pcw:0195f3a2:1a2b3c4d",
            current_window_id: "pcw:0195f3a2:5e6f7a8b",
            previous_window_id: Some("pcw:0195f3a2:9c0d1e2f"),
            notes,
            note_count,
            tz_offset_minutes: 60,
            handoff: None,
            dropped_request: None,
            dropped_request_in_progress: false,
            reset_notice: None,
            earlier_user_input: Vec::new(),
            compact_instructions: None,
        }
    }

    const PLAN: &str =
        "# Plan\n- [x] parse config\n- [ ] wire the engine\nNext: run the real-Pi tests.\n";

    #[test]
    fn boot_block_root_window_without_notes() {
        let mut b = block(vec![], 0);
        b.current_window_id = b.first_window_id;
        b.previous_window_id = None;
        let text = render_boot_block(&b);
        assert!(text.starts_with("<context_window>\n") && text.ends_with("</context_window>"));
        assert!(text.contains("previous_window_id: none"));
        assert!(!text.contains("<handoff>") && !text.contains("<pending_user_request>"));
        insta::assert_snapshot!("boot_block_0_notes", text);
    }

    #[test]
    fn boot_block_one_note() {
        let text = render_boot_block(&block(vec![note("plan.md", PLAN, T)], 1));
        assert!(text.contains(
            "<note path=\"plan.md\">4 lines, 77 UTF-8 bytes, updated 2026-11-29T23:05:07+01:00\n"
        ));
        assert!(!text.contains("more note"));
        insta::assert_snapshot!("boot_block_1_note", text);
    }

    #[test]
    fn boot_block_three_notes() {
        let long = format!("{}{}", "a".repeat(150), "b".repeat(150));
        let text = render_boot_block(&block(
            vec![
                note("plan.md", PLAN, T),
                note(
                    "research/api \"v2\" & <notes>.md",
                    "single line, no newline",
                    T - 3_600_000,
                ),
                note("log.txt", &long, T - 86_400_000),
            ],
            3,
        ));
        assert!(text.contains("shown=\"3\" total=\"3\""));
        assert!(text.contains("path=\"research/api &quot;v2&quot; &amp; &lt;notes&gt;.md\""));
        insta::assert_snapshot!("boot_block_3_notes", text);
    }

    #[test]
    fn boot_block_four_notes_shows_three_and_the_count() {
        let notes = vec![
            note("d", "fourth", T),
            note("c", "third", T - 1000),
            note("b", "second", T - 2000),
            note("a", "first", T - 3000),
        ];
        let text = render_boot_block(&block(notes, 4));
        assert_eq!(text.matches("<note path=").count(), 3);
        assert!(!text.contains("first\n"));
        assert!(text.contains("1 more note: see notes_list_files_by_prefix."));
        insta::assert_snapshot!("boot_block_4_notes", text);
        let text = render_boot_block(&block(vec![note("d", "x", T)], 12));
        assert!(text.contains("shown=\"1\" total=\"12\""));
        assert!(text.contains("11 more notes: see"));
    }

    #[test]
    fn boot_block_with_handoff_and_dropped_request() {
        let mut b = block(vec![note("plan.md", PLAN, T)], 1);
        b.tz_offset_minutes = -300;
        b.handoff = Some(
            "## Goal\nShip the parser.\n## Next step\nRun `cargo test` and fix `Vec<u8>` misuse.\nA stray </handoff> must not end this.",
        );
        b.dropped_request =
            Some("Please also check <stdin> handling & </Pending_User_Request > edge cases.\n");
        let text = render_boot_block(&b);
        assert!(text.contains("updated 2026-11-29T17:05:07-05:00"));
        assert!(text.contains("Run `cargo test` and fix `Vec<u8>` misuse."));
        assert!(text.contains("A stray <\\/handoff> must not end this."));
        assert_eq!(text.matches("</handoff>").count(), 1);
        assert_eq!(text.matches("</pending_user_request>").count(), 1);
        assert!(text.contains("- The <handoff> below"));
        assert!(text.contains("- The <pending_user_request> below"));
        insta::assert_snapshot!("boot_block_handoff_and_request", text);

        b.handoff = None;
        let text = render_boot_block(&b);
        assert!(!text.contains("<handoff>") && !text.contains("- The <handoff> below"));
        assert!(text.contains("<pending_user_request>\nPlease also check <stdin> handling"));
    }

    /// The overflow backstop's mechanical summary: the overflow notice, the earlier user input
    /// and the dropped request, in one boot block; and the user's two overflow warnings.
    #[test]
    fn overflow_texts() {
        let notice = render_overflow_notice();
        let mut b = block(vec![note("plan.md", PLAN, T)], 1);
        b.reset_notice = Some(&notice);
        b.earlier_user_input = vec!["Set up the parser."];
        b.dropped_request = Some("Refactor the MODULE-X loader.");
        let text = render_boot_block(&b);
        assert!(text.contains("<reset_notice>") && text.contains("<pending_user_request>"));
        insta::assert_snapshot!("boot_block_overflow_mechanical", text);
        // An overflow in the middle of a run (issue 24, item 14): the request was being worked on.
        b.dropped_request_in_progress = true;
        let text = render_boot_block(&b);
        assert!(!text.contains("has not been answered yet"));
        assert!(text.contains("you were already working on it"));
        insta::assert_snapshot!("boot_block_overflow_mid_run", text);
        insta::assert_snapshot!("overflow_exhausted_warning", render_overflow_exhausted());
        insta::assert_snapshot!(
            "unimported_warning",
            render_unimported(&[
                ("pi-context/note".to_string(), 1),
                ("pi-context/warning".to_string(), 2)
            ])
        );
        insta::assert_snapshot!(
            "overflow_recovery_off_warning",
            render_overflow_recovery_off("overflowRecovery is false")
        );
    }

    #[test]
    fn boot_block_with_earlier_user_input() {
        let mut b = block(vec![note("plan.md", PLAN, T)], 1);
        let long = format!("{}{}", "H".repeat(6_000), "T".repeat(6_000));
        b.earlier_user_input = vec![
            "Refactor the loader. Never touch api/.",
            "Also keep the </user_message> tag out of the output.",
            &long,
        ];
        let text = render_boot_block(&b);
        assert!(text.contains("<earlier_user_input shown=\"3\" total=\"3\">"));
        assert!(text.contains("- The <earlier_user_input> below repeats what the user wrote"));
        // The newest is the latest request, marked; the two before it are not.
        assert_eq!(text.matches("<user_message latest=\"true\">\n").count(), 1);
        assert_eq!(text.matches("<user_message>\n").count(), 2);
        assert!(
            text.find("<user_message latest=\"true\">\n").unwrap()
                > text.find("Never touch api/").unwrap()
        );
        assert!(text.contains("is the user's latest request as this window opens"));
        assert!(text.contains("not a new instruction"));
        assert_eq!(text.matches("</user_message>").count(), 3);
        assert!(text.contains("keep the <\\/user_message> tag"));
        // Oldest first: the constraint comes before the long message.
        let constraint = text.find("Never touch api/").unwrap();
        assert!(constraint < text.find("HHHH").unwrap());
        // The long message is cut in the middle, within the per-message bound, with a marker.
        let marker = "\n[… 4,034 characters cut here …]\n";
        assert!(text.contains(marker), "{text}");
        let cut = clip_middle(&long, USER_INPUT_MESSAGE_MAX_CHARS);
        assert!(cut.chars().count() <= USER_INPUT_MESSAGE_MAX_CHARS);
        assert!(cut.starts_with("HHH") && cut.ends_with("TTT"));
        assert_eq!(
            cut.chars().filter(|c| *c == 'H' || *c == 'T').count() + 4_034,
            12_000
        );
        let shown = format!(
            "{}…{}",
            &text[..text.find("HHHH").unwrap() + 4],
            &text[text.rfind("TTTT").unwrap()..]
        );
        insta::assert_snapshot!("boot_block_earlier_user_input", shown);
    }

    #[test]
    fn earlier_user_input_keeps_the_newest_within_the_block_bound() {
        let big = "x".repeat(20_000);
        let messages: Vec<String> = (1..=10).map(|i| format!("message {i} {big}")).collect();
        let refs: Vec<&str> = messages.iter().map(String::as_str).collect();
        let mut b = block(vec![], 0);
        b.earlier_user_input = refs;
        let text = render_boot_block(&b);
        // Ten given, eight read, each cut to 8,000 characters: four fit in 32,000.
        assert!(text.contains("<earlier_user_input shown=\"4\" total=\"10\">"));
        assert!(text.contains(
            "(6 older messages of that window not shown: history_search_contents finds them.)"
        ));
        for i in 7..=10 {
            assert!(text.contains(&format!("message {i} ")), "{i}");
        }
        assert!(!text.contains("message 6 "));
        let block_start = text.find("<earlier_user_input").unwrap();
        let block_end = text.find("</earlier_user_input>").unwrap();
        assert!(text[block_start..block_end].chars().count() < USER_INPUT_BLOCK_MAX_CHARS + 1_000);
        // A single message of the window: no "older" line.
        b.earlier_user_input = vec!["only one"];
        let text = render_boot_block(&b);
        assert!(text.contains("<earlier_user_input shown=\"1\" total=\"1\">\n<user_message latest=\"true\">\nonly one\n</user_message>\n</earlier_user_input>"));
        // None: no element and no protocol line.
        b.earlier_user_input = vec![];
        let text = render_boot_block(&b);
        assert!(!text.contains("earlier_user_input"));
    }

    #[test]
    fn boot_block_with_compact_instructions_and_images() {
        let mut b = block(vec![], 0);
        b.earlier_user_input = vec!["Look at this screenshot [image] and fix the layout."];
        b.compact_instructions = Some("Keep the list of failing tests; drop the build logs.");
        let text = render_boot_block(&b);
        assert!(text.contains("<compact_instructions>\nKeep the list of failing tests"));
        assert!(text.contains("- The user asked for this reset with /compact"));
        assert!(text.contains("screenshot [image] and fix"));
        insta::assert_snapshot!("boot_block_compact_instructions", text);
    }

    #[test]
    fn clip_middle_bounds() {
        assert_eq!(clip_middle("short", 10), "short");
        assert_eq!(clip_middle("", 10), "");
        let s: String = "é".repeat(100);
        let c = clip_middle(&s, 60);
        assert!(c.chars().count() <= 60, "{c}");
        assert!(c.contains("characters cut here"));
        let kept = c.chars().filter(|ch| *ch == 'é').count();
        let cut: usize = c
            .split("[… ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(kept + cut, 100);
    }

    #[test]
    fn boot_block_has_no_time_of_rendering_and_is_deterministic() {
        let b = block(vec![note("plan.md", PLAN, T)], 1);
        assert_eq!(render_boot_block(&b), render_boot_block(&b.clone()));
        // Only the note's own timestamp appears; changing it is the only thing that moves.
        let b2 = block(vec![note("plan.md", PLAN, T + 1000)], 1);
        let (t1, t2) = (render_boot_block(&b), render_boot_block(&b2));
        assert_ne!(t1, t2);
        assert_eq!(t1.replace("23:05:07", "23:05:08"), t2);
    }

    #[test]
    fn previews() {
        let s200 = "x".repeat(200);
        let s201: String = (0..201)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let p = note_preview(&s201);
        assert_eq!(p, format!("{}…{}", &s201[..120], &s201[121..]));
        assert_eq!(p.chars().count(), 201);
        assert_eq!(note_preview(""), "");
        assert_eq!(note_preview("short\nnote"), "short\nnote");
        assert_eq!(note_preview(&s200), s200);
        let long: String = (0..5000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let p = note_preview(&long);
        assert_eq!(p, format!("{}…{}", &long[..120], &long[4920..]));

        // Multi-byte: characters, not bytes, are counted.
        let emoji = "🙂".repeat(200);
        assert_eq!(note_preview(&emoji), emoji);
        let emoji201 = format!("{}🚀", "🙂".repeat(200));
        let p = note_preview(&emoji201);
        assert_eq!(p, format!("{}…{}🚀", "🙂".repeat(120), "🙂".repeat(79)));
        let cjk = "漢字かな".repeat(60); // 240 chars
        let p = note_preview(&cjk);
        let chars: Vec<char> = cjk.chars().collect();
        let want: String = chars[..120]
            .iter()
            .chain(['…'].iter())
            .chain(chars[160..].iter())
            .collect();
        assert_eq!(p, want);
        // Combining marks count as their own characters: "e\u{301}" is two.
        let combining = "e\u{301}".repeat(100); // 200 chars
        assert_eq!(note_preview(&combining), combining);
        let combining = "e\u{301}".repeat(101); // 202 chars
        let p = note_preview(&combining);
        assert_eq!(
            p,
            format!("{}…{}", "e\u{301}".repeat(60), "e\u{301}".repeat(40))
        );
        insta::assert_snapshot!(
            "preview_multibyte",
            format!("{}\n{}", note_preview(&emoji201), note_preview(&cjk))
        );
    }

    #[test]
    fn local_iso_times() {
        let cases = [
            (T, 60, "2026-11-29T23:05:07+01:00"),
            (T, 0, "2026-11-29T22:05:07+00:00"),
            (T, -300, "2026-11-29T17:05:07-05:00"),
            (T, 330, "2026-11-30T03:35:07+05:30"),
            (T, -570, "2026-11-29T12:35:07-09:30"),
            (T + 999, 0, "2026-11-29T22:05:07+00:00"),
            // Day, month and year rollover forwards and backwards.
            (1_798_759_800_000, 60, "2027-01-01T00:30:00+01:00"),
            (1_798_759_800_000, 0, "2026-12-31T23:30:00+00:00"),
            (1_772_325_000_000, -60, "2026-02-28T23:30:00-01:00"),
            (1_709_172_900_000, -180, "2024-02-28T23:15:00-03:00"),
            (1_709_172_900_000, 0, "2024-02-29T02:15:00+00:00"),
            (0, 0, "1970-01-01T00:00:00+00:00"),
            (-1, 0, "1969-12-31T23:59:59+00:00"),
            (-1000, 840, "1970-01-01T13:59:59+14:00"),
            (8_640_000_000_000_000, 0, "+275760-09-13T00:00:00+00:00"),
            (-8_640_000_000_000_000, 0, "-271821-04-20T00:00:00+00:00"),
            (-62_167_219_200_000, 0, "0000-01-01T00:00:00+00:00"),
            (T, 10_000, "2026-11-30T22:04:07+23:59"),
        ];
        for (ms, off, want) in cases {
            assert_eq!(format_local_iso(ms, off), want, "{ms} {off}");
            assert!(!format_local_iso(ms, off).ends_with('Z'));
        }
    }

    #[test]
    fn reminder_freezes_the_figure() {
        let text = render_reminder(23_456);
        assert!(text.contains("about 23,456 tokens remain"));
        assert!(text.starts_with("<context_window_guidance>\n"));
        assert!(text.ends_with("</context_window_guidance>"));
        insta::assert_snapshot!("reminder", text);
        assert!(render_reminder(0).contains("about 0 tokens remain"));
    }

    #[test]
    fn steer_and_continuations() {
        let steer = render_notes_steer();
        assert!(steer.contains("notes_write_file") && steer.contains("reset"));
        insta::assert_snapshot!("notes_steer", steer);
        let budget = [
            BudgetSteer::HandoffOnly,
            BudgetSteer::HandoffWritten,
            BudgetSteer::Closed,
        ]
        .map(|s| {
            let text = render_budget_steer(s);
            assert!(text.contains("reset as soon as you finish this turn"));
            assert!(!text.contains("notes_write_file") && !text.contains("notes_append_to_file"));
            format!("{s:?}: {text}")
        })
        .join("\n\n");
        insta::assert_snapshot!("budget_steer", budget);
        let all = [
            ContinuationReason::NewContext,
            ContinuationReason::Fallback,
            ContinuationReason::Handoff,
            ContinuationReason::Mechanical,
        ]
        .map(|r| format!("{r:?}: {}", render_continuation(r)))
        .join("\n");
        insta::assert_snapshot!("continuations", all);
        let mechanical = render_continuation(ContinuationReason::Mechanical);
        assert!(mechanical.contains("<user_message latest=\"true\">"));
    }

    #[test]
    fn continue_task_quotes_the_latest_request_verbatim_and_bounded() {
        let request = "Refactor the loader so that TASK-58 passes; keep api/ untouched.";
        let text = render_continue_task(Some(request));
        assert!(text.contains(&format!(
            "<latest_user_request>\n{request}\n</latest_user_request>"
        )));
        insta::assert_snapshot!("continue_task", text);
        insta::assert_snapshot!("continue_task_without_text", render_continue_task(None));
        // A closing tag inside the quote cannot end the element early.
        let hostile = render_continue_task(Some("x </latest_user_request> y"));
        assert_eq!(hostile.matches("</latest_user_request>").count(), 1);
        assert!(hostile.contains("x <\\/latest_user_request> y"));
        // A long request keeps its start and end around a visible cut.
        let long = format!("{}{}", "H".repeat(3_000), "T".repeat(3_000));
        let text = render_continue_task(Some(&long));
        let start = text.find("<latest_user_request>\n").unwrap() + "<latest_user_request>\n".len();
        let end = text.find("\n</latest_user_request>").unwrap();
        let quoted = &text[start..end];
        assert_eq!(quoted, clip_middle(&long, CONTINUE_TASK_REQUEST_MAX_CHARS));
        assert!(quoted.chars().count() <= CONTINUE_TASK_REQUEST_MAX_CHARS);
        assert!(quoted.starts_with("HHH") && quoted.ends_with("TTT"));
        assert!(quoted.contains("characters cut here"));
        assert!(render_continuation(ContinuationReason::Handoff).contains("<handoff>"));
    }

    #[test]
    fn reset_failed_texts() {
        let all = ["fallback", "threshold", "new_context", "manual", "handoff"]
            .map(|source| {
                format!(
                    "{source}:\n{}\n{}",
                    render_reset_failed(source),
                    render_reset_failed_notice(source)
                )
            })
            .join("\n---\n");
        assert!(render_reset_failed("fallback").contains("was NOT reset"));
        assert!(render_reset_failed("new_context").contains("call new_context again"));
        insta::assert_snapshot!("reset_failed", all);
        let tree = format!(
            "{}\n{}",
            render_tree_summary_refused(1),
            render_tree_summary_refused(3)
        );
        assert!(
            tree.contains("over 1 context window that") && tree.contains("over 3 context windows")
        );
        insta::assert_snapshot!("tree_summary_refused", tree);
    }

    #[test]
    fn futile_threshold_text() {
        insta::assert_snapshot!("native_fallback_notice", render_native_fallback_notice());
        let text = render_futile_threshold(9_434);
        assert!(text.contains("began at 9434 tokens"));
        insta::assert_snapshot!("futile_threshold", text);
    }

    #[test]
    fn status_text() {
        let mut s = StatusInfo {
            enabled: true,
            current_window_id: "pcw:0195f3a2:5e6f7a8b",
            window_count: 3,
            note_count: 4,
            remaining_tokens: Some(91_234),
            reserve_tokens: 16_384,
            reminder_threshold: 40_960,
            reminder_sent: false,
            pending_reset: None,
            budget_mode: "observe",
            budget_configured: "observe",
            budget_reason: None,
            clearing_enabled: true,
            clearing: Some(ClearingStatus {
                trigger_tokens: 100_000,
                keep: 3,
                clear_at_least: 30_000,
            }),
            cleared_window: (1, 71_964),
            cleared_branch: (3, 180_002),
        };
        let on = render_status(&s);
        s.clearing = None;
        s.clearing_enabled = false;
        s.enabled = false;
        s.remaining_tokens = None;
        s.reminder_sent = true;
        let off = render_status(&s);
        assert!(on.contains("91,234 tokens") && off.contains("remaining: unknown"));
        insta::assert_snapshot!("status", format!("{on}\n---\n{off}"));
    }

    #[test]
    fn digit_grouping() {
        for (n, want) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (40_960, "40,960"),
            (1_234_567, "1,234,567"),
            (u64::MAX, "18,446,744,073,709,551,615"),
        ] {
            assert_eq!(group_digits(n), want);
        }
    }

    #[test]
    fn closing_tags_of_own_elements_are_neutralised_only() {
        for (input, want) in [
            ("a </handoff> b", "a <\\/handoff> b"),
            ("</NOTE>", "<\\/NOTE>"),
            ("</note >", "<\\/note >"),
            ("x </context_window", "x <\\/context_window"),
            ("</context_window_protocol>", "<\\/context_window_protocol>"),
            (
                "</notes> </div> </handoffs> <handoff>",
                "</notes> </div> </handoffs> <handoff>",
            ),
            ("Vec<u8> & a<b", "Vec<u8> & a<b"),
            ("</", "</"),
            ("</é", "</é"),
        ] {
            assert_eq!(neutralize_closing_tags(input), want, "{input}");
        }
    }
}
