//! Every text the model sees that is not a tool result: the `<context_window>` boot block with
//! its `<context_window_protocol>` teaching text, the `<context_window_guidance>` reminder, the
//! borrowed-turn note-taking steer, the hidden continuation after a reset, and the `/relay`
//! status text.
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
    /// A user request the reset dropped, restated verbatim in `<pending_user_request>`.
    pub dropped_request: Option<&'a str>,
}

/// How many notes the boot block lists.
pub const BOOT_NOTES_SHOWN: usize = 3;
/// A note of at most this many Unicode characters is previewed whole.
pub const PREVIEW_WHOLE_MAX_CHARS: usize = 200;
/// Characters kept from the start of a longer note.
pub const PREVIEW_HEAD_CHARS: usize = 120;
/// Characters kept from the end of a longer note.
pub const PREVIEW_TAIL_CHARS: usize = 80;

/// Relay's own element names; a closing tag for any of them inside verbatim text is neutralised.
const OWN_TAGS: [&str; 7] = [
    "context_window_protocol",
    "context_window_guidance",
    "context_window",
    "recent_notes",
    "note",
    "handoff",
    "pending_user_request",
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

    let shown = &b.notes[..b.notes.len().min(BOOT_NOTES_SHOWN)];
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
                crate::notes::count_lines(n.content),
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

    out.push_str(PROTOCOL_HEAD);
    if b.handoff.is_some() {
        out.push_str(PROTOCOL_HANDOFF);
    }
    if b.dropped_request.is_some() {
        out.push_str(PROTOCOL_PENDING);
    }
    out.push_str("</context_window_protocol>\n");

    if let Some(h) = b.handoff {
        push_element(&mut out, "handoff", h);
    }
    if let Some(r) = b.dropped_request {
        push_element(&mut out, "pending_user_request", r);
    }
    out.push_str("</context_window>");
    out
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

const PROTOCOL_PENDING: &str = "- The <pending_user_request> below arrived as the previous window ran out and has not been answered yet. Handle it.
";

fn push_element(out: &mut String, tag: &str, text: &str) {
    let body = neutralize_closing_tags(text);
    let _ = writeln!(out, "<{tag}>");
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

/// Why a window was reset, for the hidden continuation message that follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContinuationReason {
    /// The model called `new_context`.
    NewContext,
    /// The window filled up (automatic threshold or overflow reset).
    Fallback,
    /// A handoff was committed.
    Handoff,
}

/// The hidden message that resumes work after a reset.
pub fn render_continuation(reason: ContinuationReason) -> String {
    match reason {
        ContinuationReason::NewContext => {
            "This is the fresh context window you asked for. Check your notes, then continue the task from your next step."
        }
        ContinuationReason::Fallback => {
            "The previous context window filled up and was reset. Check your notes (and the history_* tools if something is missing), then continue the task. If a <pending_user_request> is shown, handle it."
        }
        ContinuationReason::Handoff => {
            "Your handoff was committed and this is a fresh context window. Verify the state the <handoff> describes, then continue from its next step."
        }
    }
    .to_string()
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
    out
}

/// Format a Unix timestamp in ms as local ISO 8601 with an explicit offset, to the second:
/// `2026-11-29T23:05:07+01:00`. Never `Z`: offset 0 renders `+00:00`. Sub-second digits are
/// dropped (floored). Offsets beyond ±23:59 are clamped. Years outside 0000–9999 use the ISO
/// expanded form with a sign and six digits (`+275760`).
pub fn format_local_iso(ms: i64, tz_offset_minutes: i32) -> String {
    let off = tz_offset_minutes.clamp(-(23 * 60 + 59), 23 * 60 + 59);
    let local = ms.saturating_add(i64::from(off) * 60_000);
    let days = local.div_euclid(86_400_000);
    let secs_of_day = local.rem_euclid(86_400_000) / 1000;
    let (y, m, d) = civil_from_days(days);
    let year = if (0..=9999).contains(&y) {
        format!("{y:04}")
    } else if y < 0 {
        format!("-{:06}", -y)
    } else {
        format!("+{y:06}")
    };
    let sign = if off < 0 { '-' } else { '+' };
    let abs = off.unsigned_abs();
    format!(
        "{year}-{m:02}-{d:02}T{:02}:{:02}:{:02}{sign}{:02}:{:02}",
        secs_of_day / 3600,
        secs_of_day / 60 % 60,
        secs_of_day % 60,
        abs / 60,
        abs % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A note's inline preview: the whole note when it has at most 200 Unicode characters (scalar
/// values, so a combining mark or each half of an emoji ZWJ sequence counts as one), else its
/// first 120 and last 80 characters joined by `…` (the two ends never overlap).
pub fn note_preview(content: &str) -> String {
    let n = content.chars().count();
    if n <= PREVIEW_WHOLE_MAX_CHARS {
        return content.to_string();
    }
    let head_end = content
        .char_indices()
        .nth(PREVIEW_HEAD_CHARS)
        .map_or(content.len(), |(i, _)| i);
    let tail_start = content
        .char_indices()
        .rev()
        .nth(PREVIEW_TAIL_CHARS - 1)
        .map_or(0, |(i, _)| i);
    let mut out = String::with_capacity(head_end + 3 + content.len() - tail_start);
    out.push_str(&content[..head_end]);
    out.push('…');
    out.push_str(&content[tail_start..]);
    out
}

/// `12345678` → `12,345,678`.
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
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
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let own = OWN_TAGS.iter().any(|t| {
            after.len() >= t.len()
                && after.as_bytes()[..t.len()].eq_ignore_ascii_case(t.as_bytes())
                && after[t.len()..]
                    .chars()
                    .next()
                    .map_or(true, |c| c == '>' || c.is_whitespace())
        });
        out.push_str(if own { "<\\/" } else { "</" });
        rest = after;
    }
    out.push_str(rest);
    out
}
