//! The `<context_window>` boot block that opens a window: its header (window ids), the recent
//! notes, the `<context_window_protocol>` teaching text (one paragraph per part the block holds),
//! then the handoff, the reset notice, the closing window's last actions (`<in_progress>`), the
//! earlier user input, the `/compact` instructions and the
//! pending user request. See the escaping rules in [`super`].

use std::fmt::Write as _;

use super::{
    clip_middle, escape_attr, format_local_iso, neutralize_closing_tags, note_preview,
    push_clipped, push_element, push_element_open, push_not_shown,
};

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
    /// The user's pinned instructions (`/relay pin`), oldest first, shown verbatim in
    /// `<pinned_instructions>` before the notes index (already within [`crate::pins`]' limits).
    pub pins: &'a [String],
    // --- in_progress (issue 38 item 1) ---
    /// The closing window's last actions, rendered by [`super::render_in_progress`], shown as
    /// is after the handoff and the reset notice (`None`: the first window, a window with no
    /// action, or `relay.inProgress: false`).
    pub in_progress: Option<&'a str>,
    // --- end in_progress ---
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

/// Render the `<context_window>` boot block that opens a window.
pub fn render_boot_block(b: &BootBlock) -> String {
    let mut out = String::with_capacity(2048);
    out.push_str("<context_window>\n");
    push_window_ids(&mut out, b);
    push_pins(&mut out, b);
    push_recent_notes(&mut out, b);
    let earlier = earlier_input(&b.earlier_user_input);
    push_protocol(&mut out, b, &earlier);
    if let Some(h) = b.handoff {
        push_element(&mut out, "handoff", h);
    }
    if let Some(n) = b.reset_notice {
        push_element(&mut out, "reset_notice", n);
    }
    // --- in_progress (issue 38 item 1) ---
    if let Some(p) = b.in_progress {
        out.push_str(p);
    }
    // --- end in_progress ---
    push_earlier_user_input(&mut out, b, &earlier);
    if let Some(c) = b.compact_instructions {
        push_clipped(
            &mut out,
            "compact_instructions",
            c,
            USER_INPUT_MESSAGE_MAX_CHARS,
        );
    }
    if let Some(r) = b.dropped_request {
        push_clipped(
            &mut out,
            "pending_user_request",
            r,
            USER_INPUT_MESSAGE_MAX_CHARS,
        );
    }
    out.push_str("</context_window>");
    out
}

/// The block's header: the agent and the window ids.
fn push_window_ids(out: &mut String, b: &BootBlock) {
    let _ = writeln!(out, "agent: {}", b.agent_name);
    let _ = writeln!(out, "first_window_id: {}", b.first_window_id);
    let _ = writeln!(out, "current_window_id: {}", b.current_window_id);
    match b.previous_window_id {
        Some(prev) => {
            let _ = writeln!(out, "previous_window_id: {prev}");
        }
        None => out.push_str("previous_window_id: none (this is the first window)\n"),
    }
}

/// `<pinned_instructions>` (nothing without pins): each pin verbatim, numbered as `/relay pins`
/// numbers it.
fn push_pins(out: &mut String, b: &BootBlock) {
    if b.pins.is_empty() {
        return;
    }
    let _ = writeln!(out, "<pinned_instructions count=\"{}\">", b.pins.len());
    for (i, pin) in b.pins.iter().enumerate() {
        push_element_open(out, &format!("pin n=\"{}\"", i + 1), "pin", pin);
    }
    out.push_str("</pinned_instructions>\n");
}

/// `<recent_notes>`: the newest [`BOOT_NOTES_SHOWN`] notes previewed, and how many more there are.
fn push_recent_notes(out: &mut String, b: &BootBlock) {
    let shown = b
        .notes
        .get(..b.notes.len().min(BOOT_NOTES_SHOWN))
        .unwrap_or_default();
    let total = b.note_count.max(shown.len());
    if shown.is_empty() {
        out.push_str("<recent_notes>none yet</recent_notes>\n");
        return;
    }
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

/// `<context_window_protocol>`: the head, then one paragraph for each part the block holds.
fn push_protocol(out: &mut String, b: &BootBlock, earlier: &EarlierInput) {
    out.push_str(PROTOCOL_HEAD);
    if !b.pins.is_empty() {
        out.push_str(PROTOCOL_PINS);
    }
    if b.handoff.is_some() {
        out.push_str(PROTOCOL_HANDOFF);
    }
    if b.reset_notice.is_some() {
        out.push_str(PROTOCOL_NOTICE);
    }
    // --- in_progress (issue 38 item 1) ---
    if b.in_progress.is_some() {
        out.push_str(PROTOCOL_IN_PROGRESS);
    }
    // --- end in_progress ---
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
}

/// `<earlier_user_input>` (nothing when no message is shown): how many older messages are left
/// out, then the messages, the newest marked `latest="true"` unless the reset dropped a newer one.
fn push_earlier_user_input(out: &mut String, b: &BootBlock, earlier: &EarlierInput) {
    if earlier.shown.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<earlier_user_input shown=\"{}\" total=\"{}\">",
        earlier.shown.len(),
        earlier.total
    );
    push_not_shown(
        out,
        earlier.total - earlier.shown.len(),
        ["older message", "older messages"],
        "history_search_contents",
    );
    // The newest is the user's latest request, unless the reset dropped a newer one.
    let latest = (b.dropped_request.is_none())
        .then(|| earlier.shown.len().checked_sub(1))
        .flatten();
    for (i, text) in earlier.shown.iter().enumerate() {
        if Some(i) == latest {
            push_element_open(out, "user_message latest=\"true\"", "user_message", text);
        } else {
            push_element(out, "user_message", text);
        }
    }
    out.push_str("</earlier_user_input>\n");
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

const PROTOCOL_HEAD: &str = "<context_window_protocol>
This is one window of a longer task; earlier windows are not shown or summarized.
- Notes carry your state across windows: keep goal, decisions, progress and next step current (notes_write_file, notes_append_to_file); read them with notes_list_files_by_prefix, notes_read_file, notes_search_contents.
- Earlier windows stay stored: find them with history_list_windows, history_list_items, history_search_contents, history_read_item.
- get_context_remaining: the tokens this window has left.
- When the window is cluttered or a phase is done, update your notes, then call new_context alone in its batch; work continues in a fresh window.
";

const PROTOCOL_PINS: &str = "- The <pinned_instructions> above are standing instructions the user pinned (with /relay pin): follow them in this window and every later one, whatever else the window holds, until the user removes them.
";

const PROTOCOL_HANDOFF: &str = "- The <handoff> below records where the previous window stopped. Check that the workspace still matches it, then continue from its next step.
";

const PROTOCOL_NOTICE: &str = "- The <reset_notice> below says why the previous window was reset without a handoff. Rebuild the state it names before acting.
";

// --- in_progress (issue 38 item 1) ---
const PROTOCOL_IN_PROGRESS: &str = "- The <in_progress> below lists your own last actions in the previous window, newest last: your tool calls (result ok, error or none), the files you wrote or edited, and your last words. Check their effect in the workspace before repeating any of them; do not redo work they show finished.
";
// --- end in_progress ---

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
