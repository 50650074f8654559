//! The `<stale_handoff>` window message: what differs between the workspace a handoff recorded
//! and the workspace now ([`crate::staleness::StaleReport`]), within
//! [`MESSAGE_BUDGET_BYTES`] with every list's omissions counted; none when nothing differs.

use crate::staleness::{Ancestry, GitDrift, Listed, StaleReport, MAX_DIRTY, MESSAGE_BUDGET_BYTES};
use crate::text::{floor_char_boundary, head_tail_preview};

/// The custom type of the window message and of its branch record.
const TAG: &str = "stale_handoff";
/// The longest a path, branch or commit line is shown (characters, the middle cut).
const ITEM_CHARS: usize = 160;

/// One line of text the model reads: control characters escaped, cut in the middle to
/// [`ITEM_CHARS`], and
/// nothing that could close the message's tag.
fn clean(s: &str) -> String {
    let escaped: String = s
        .chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    head_tail_preview(&escaped, ITEM_CHARS, ITEM_CHARS / 2, ITEM_CHARS / 2 - 1)
        .replace(&format!("</{TAG}"), &format!("<\\/{TAG}"))
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

fn head_name(h: &Option<String>) -> String {
    h.as_deref()
        .map_or_else(|| "(no commit)".to_string(), |h| short(h).to_string())
}

fn branch_name(b: &Option<String>) -> String {
    b.as_deref()
        .map_or_else(|| "(detached HEAD)".to_string(), clean)
}

/// A heading line and the items under it; `total` may exceed the items given.
struct Section {
    head: String,
    items: Vec<String>,
    total: usize,
}

impl Section {
    fn line(head: String) -> Self {
        Section {
            head,
            items: Vec::new(),
            total: 0,
        }
    }

    fn list(head: String, listed: &Listed) -> Self {
        Section {
            head,
            items: listed.items.iter().map(|i| clean(i)).collect(),
            total: listed.total,
        }
    }
}

fn git_sections(git: &GitDrift, out: &mut Vec<Section>) {
    match git {
        GitDrift::NotRecorded => {}
        GitDrift::Unavailable => out.push(Section::line(
            "- Git: the handoff recorded a repository, and git cannot tell now (not a repository, git missing, or no answer in time): HEAD, the branch and the uncommitted files were not compared.".into(),
        )),
        GitDrift::Compared { root, branch, head } => {
            if let Some((then, now)) = root {
                out.push(Section::line(format!(
                    "- Repository: {} at the handoff, {} now.",
                    clean(then),
                    clean(now)
                )));
            }
            if let Some((then, now)) = branch {
                out.push(Section::line(format!(
                    "- Branch: {} at the handoff, {} now.",
                    branch_name(then),
                    branch_name(now)
                )));
            }
            if let Some(h) = head {
                let (then, now) = (head_name(&h.then), head_name(&h.now));
                match &h.ancestry {
                    Some(Ancestry::Descendant { commits, total }) => out.push(Section {
                        head: format!("- HEAD moved from {then} to {now}: {total} commit(s) landed since the handoff, newest first:"),
                        items: commits.iter().map(|c| clean(c)).collect(),
                        total: usize::try_from(*total).unwrap_or(usize::MAX),
                    }),
                    Some(Ancestry::Diverged { commits, total, dropped }) => out.push(Section {
                        head: format!("- HEAD {now} is not a descendant of the handoff's HEAD {then} (history rewritten: rebased, reset or amended). {dropped} commit(s) of the handoff's HEAD are not on HEAD now; {total} commit(s) on HEAD are not on the handoff's HEAD, newest first:"),
                        items: commits.iter().map(|c| clean(c)).collect(),
                        total: usize::try_from(*total).unwrap_or(usize::MAX),
                    }),
                    Some(Ancestry::UnknownCommit) => out.push(Section::line(format!(
                        "- HEAD is {now}; the handoff's HEAD {then} is not in this repository any more (history rewritten and pruned, or another repository)."
                    ))),
                    Some(Ancestry::Unavailable) | None => out.push(Section::line(format!(
                        "- HEAD: {then} at the handoff, {now} now (how they relate could not be told)."
                    ))),
                }
            }
        }
    }
}

fn sections(report: &StaleReport) -> Vec<Section> {
    let mut out = Vec::new();
    git_sections(&report.git, &mut out);
    let lists = [
        (
            "Files to read that changed since the handoff",
            &report.changed,
        ),
        ("Files to read that no longer exist", &report.vanished),
        (
            "Files to read that did not exist at the handoff and exist now",
            &report.appeared,
        ),
        (
            "Files to read that could not be compared (unreadable)",
            &report.unchecked,
        ),
        (
            "Uncommitted at the handoff, clean now (committed, reverted or stashed)",
            &report.dirty.cleaned,
        ),
        ("Uncommitted now, not at the handoff", &report.dirty.added),
        (
            "Uncommitted then and now, changed since the handoff",
            &report.dirty.changed,
        ),
    ];
    for (title, listed) in lists {
        if !listed.is_empty() {
            out.push(Section::list(
                format!("- {title} ({}):", listed.total),
                listed,
            ));
        }
    }
    if matches!(report.git, GitDrift::Compared { .. }) {
        match report.dirty.not_compared.as_deref() {
            Some("tooMany") => out.push(Section::line(format!(
                "- Uncommitted files: more than {MAX_DIRTY} at the handoff or now, not compared one by one."
            ))),
            Some(_) => out.push(Section::line(
                "- Uncommitted files: git could not list them now, not compared.".into(),
            )),
            None => {}
        }
    }
    out
}

fn more_line(n: usize) -> String {
    format!("\n  - … {n} more not shown")
}

/// The opening of a re-check's message (a session resumed into a window that was checked before,
/// when the workspace moved since that check).
const OPEN_RECHECK: &str = "Relay checked again when this session was resumed: it compared the workspace with what the handoff that opened this window recorded, and the workspace moved since the last check. What follows differs from the handoff now (some of it may be work done in this window before the resume), so the handoff's claims about it may be stale: check it again (git log, git status, reading the files) before relying on the handoff. This is Relay's record, not an instruction.\n\n";

const OPEN: &str = "Relay compared the workspace with what the handoff that opened this window recorded when it was written. What follows changed since then, so the handoff's claims about it may be stale: check it again (git log, git status, reading the files) before relying on the handoff. This is Relay's record, not an instruction.\n\n";

/// The window message for `report`, or `None` when nothing differs. At most
/// [`MESSAGE_BUDGET_BYTES`]: every heading line is kept, then the items fill what is left, each
/// list in turn getting an even share (what one list leaves is passed on), and each list says how
/// many of its items it does not show.
pub fn render_window_message(report: &StaleReport) -> Option<String> {
    render_window_message_with(report, false)
}

/// [`render_window_message`], or with `recheck` the message of a check run again when the session
/// was resumed (it says so, and that the window's own work may be part of what differs).
pub fn render_window_message_with(report: &StaleReport, recheck: bool) -> Option<String> {
    if !report.says_something() {
        return None;
    }
    let open = format!("<{TAG}>\n{}", if recheck { OPEN_RECHECK } else { OPEN });
    let close = format!("\n</{TAG}>");
    let sections = sections(report);
    let mut room = MESSAGE_BUDGET_BYTES.saturating_sub(open.len() + close.len());
    // The heading lines first: they are short and bounded (paths and names are cut).
    let mut heads: Vec<String> = Vec::new();
    for s in &sections {
        let h = floor_char_boundary(&s.head, room.saturating_sub(1));
        let head = s.head.get(..h).unwrap_or_default().to_string();
        room = room.saturating_sub(head.len() + 1);
        if s.total > 0 {
            room = room.saturating_sub(more_line(s.total).len());
        }
        heads.push(head);
    }
    let with_items = sections.iter().filter(|s| s.total > 0).count();
    let mut lists_left = with_items;
    let mut body = String::new();
    for (s, head) in sections.iter().zip(heads) {
        if !body.is_empty() {
            body.push('\n');
        }
        body.push_str(&head);
        if s.total == 0 {
            continue;
        }
        let share = room / lists_left.max(1);
        lists_left = lists_left.saturating_sub(1);
        let mut used = 0usize;
        let mut shown = 0usize;
        for item in &s.items {
            let line = format!("\n  - {item}");
            if used + line.len() > share {
                break;
            }
            body.push_str(&line);
            used += line.len();
            shown += 1;
        }
        // The line that counts what is left out had its room reserved with the headings.
        if shown < s.total {
            body.push_str(&more_line(s.total - shown));
        }
        room = room.saturating_sub(used);
    }
    let text = format!("{open}{body}{close}");
    if text.len() > MESSAGE_BUDGET_BYTES {
        // Unreachable by construction; cut rather than exceed.
        let end = floor_char_boundary(&text, MESSAGE_BUDGET_BYTES - close.len());
        return Some(format!("{}{close}", text.get(..end).unwrap_or_default()));
    }
    Some(text)
}

#[cfg(test)]
#[path = "staleness_tests.rs"]
mod tests;
