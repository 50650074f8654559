//! What Pi's interactive TUI shows for Relay's own messages: one line each, the full text one
//! expand key away. The model always receives the full text; these lines are only for the chat.
//! (Pi renders compactions itself, so a later window's boot block is shown as Pi's summary.)

use super::wire::{
    BOOT_TYPE, CONTINUE_TASK_TYPE, CONTINUE_TYPE, HANDOFF_REQUEST_TYPE, REMINDER_TYPE,
    RESET_FAILED_TYPE, RESUME_CHECK_TYPE, STEER_TYPE,
};

/// The message types the extension registers a TUI renderer for.
pub const RENDERED_TYPES: [&str; 8] = [
    BOOT_TYPE,
    REMINDER_TYPE,
    STEER_TYPE,
    CONTINUE_TYPE,
    CONTINUE_TASK_TYPE,
    RESET_FAILED_TYPE,
    HANDOFF_REQUEST_TYPE,
    RESUME_CHECK_TYPE,
];

/// The one line for a Relay message of `custom_type` with text `content`; `None` for a type that
/// is not Relay's. Figures are read from the text Relay wrote (window id, note count, tokens
/// left); a text that lacks one still gets its line.
pub fn message_line(custom_type: &str, content: &str) -> Option<String> {
    let line = match custom_type {
        t if t == BOOT_TYPE => {
            let window = field(content, "current_window_id: ").unwrap_or("?");
            let notes = attribute(content, "<recent_notes", "total=")
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            let noun = if notes == 1 { "note" } else { "notes" };
            format!("Relay · window {window} · {notes} {noun} · the model has the protocol")
        }
        t if t == REMINDER_TYPE => match tokens_left(content) {
            Some(n) => {
                format!("Relay · context running low: about {n} tokens left · notes asked for")
            }
            None => "Relay · context running low · notes asked for".into(),
        },
        t if t == STEER_TYPE && content.contains("spend this turn on one context_handoff") => {
            "Relay · window full: one turn to write the handoff, then a fresh window".into()
        }
        t if t == STEER_TYPE && content.contains("end this turn without calling tools") => {
            "Relay · window full: tools are blocked, a fresh window follows this turn".into()
        }
        t if t == STEER_TYPE => {
            "Relay · window full: one turn to update the notes, then a fresh window".into()
        }
        t if t == CONTINUE_TYPE => "Relay · continuing in the fresh window".into(),
        t if t == CONTINUE_TASK_TYPE => {
            "Relay · the reply stopped early after a reset: back to the user's latest request"
                .into()
        }
        t if t == RESET_FAILED_TYPE => {
            "Relay · the window was NOT reset · history intact, still in this window".into()
        }
        t if t == HANDOFF_REQUEST_TYPE => {
            "Relay · handoff asked for before the window resets".into()
        }
        t if t == RESUME_CHECK_TYPE => "Relay · resume check result for this window".into(),
        _ => return None,
    };
    Some(line)
}

/// The rest of the first line starting with `key`.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The quoted value of `attr` in the first tag starting with `tag`.
fn attribute<'a>(text: &'a str, tag: &str, attr: &str) -> Option<&'a str> {
    let start = text.find(tag)?;
    let rest = text.get(start..)?;
    let end = rest.find('>')?;
    let head = rest.get(..end)?;
    let at = head.find(attr)?;
    let value = head.get(at + attr.len()..)?.strip_prefix('"')?;
    value.split('"').next()
}

/// The figure in the reminder's "about N tokens remain".
fn tokens_left(text: &str) -> Option<&str> {
    let at = text.find("about ")?;
    let rest = text.get(at + "about ".len()..)?;
    let n = rest.split(' ').next()?;
    (!n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == ',')).then_some(n)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::render::{
        render_budget_steer, render_continue_task, render_notes_steer, render_reminder,
        render_reset_failed, BudgetSteer,
    };

    #[test]
    fn every_relay_message_gets_one_line() {
        let boot = "<context_window>\nagent: pi\nfirst_window_id: pcw:s:root\ncurrent_window_id: pcw:s:5e6f7a8b\n<recent_notes shown=\"3\" total=\"4\">\n</recent_notes>\n</context_window>";
        let cases = [
            (BOOT_TYPE, boot.to_string()),
            (
                BOOT_TYPE,
                "<context_window>\ncurrent_window_id: pcw:s:root\n</context_window>".to_string(),
            ),
            (REMINDER_TYPE, render_reminder(24_576)),
            (STEER_TYPE, render_notes_steer()),
            (STEER_TYPE, render_budget_steer(BudgetSteer::HandoffOnly)),
            (STEER_TYPE, render_budget_steer(BudgetSteer::Closed)),
            (CONTINUE_TYPE, "continue".to_string()),
            (CONTINUE_TASK_TYPE, render_continue_task(Some("Fix it."))),
            (RESET_FAILED_TYPE, render_reset_failed("fallback")),
            (HANDOFF_REQUEST_TYPE, "write a handoff".to_string()),
            (
                RESUME_CHECK_TYPE,
                "<resume_check>…</resume_check>".to_string(),
            ),
        ];
        let lines = cases
            .iter()
            .map(|(t, c)| message_line(t, c).expect("a Relay type"))
            .collect::<Vec<_>>();
        assert!(lines
            .iter()
            .all(|l| !l.contains('\n') && l.starts_with("Relay · ")));
        assert_eq!(message_line("someone/else", "x"), None);
        assert!(RENDERED_TYPES.iter().all(|t| message_line(t, "").is_some()));
        insta::assert_snapshot!("tui_message_lines", lines.join("\n"));
    }
}
