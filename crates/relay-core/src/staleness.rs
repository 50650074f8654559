//! Stale handoffs: what a handoff recorded of the workspace (git root, branch, HEAD, uncommitted
//! files, and a stamp of every file it tells the next window to read and of every uncommitted
//! file), what the workspace holds when the window it opened starts, what differs, and the text
//! the model reads about it.
//!
//! Sans-IO: relay-io collects both sides ([`WorkspaceRecord`] at the handoff, [`WorkspaceNow`] at
//! the resume, within one deadline, off Pi's event loop); this module compares them
//! ([`compare`]) and renders the window message ([`render_window_message`]), at most
//! [`MESSAGE_BUDGET_BYTES`] with every list's omissions counted. Nothing that differs → no message.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::handoff::GitState;
use crate::text::{floor_char_boundary, head_tail_preview};

/// The window message is at most 4 KiB of UTF-8, like the resume check's.
pub const MESSAGE_BUDGET_BYTES: usize = 4096;
/// Uncommitted paths recorded at most (more: the dirty set is marked incomplete and not compared).
pub const MAX_DIRTY: usize = 200;
/// Commits listed at most (the count says how many landed in all).
pub const MAX_COMMITS: usize = 20;
/// Paths one list of a report keeps (the count says how many there are in all).
pub const MAX_LISTED: usize = 200;
/// Files larger than this are stamped by size and modification time only, not hashed.
pub const MAX_HASHED_BYTES: u64 = 16 * 1024 * 1024;

/// What one file was when stamped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Stamp {
    /// A regular file: its size, modification time and, up to [`MAX_HASHED_BYTES`], a 128-bit
    /// content hash (hex).
    #[serde(rename_all = "camelCase")]
    File {
        size: u64,
        mtime_ms: i64,
        hash: Option<String>,
    },
    /// A directory (its contents are not compared).
    Dir,
    /// Nothing at that path.
    Missing,
    /// It could not be read (permissions, the deadline).
    Unknown,
}

/// A path and its stamp. Files to read keep the path as the handoff wrote it (relative paths
/// resolve against the handoff's cwd); uncommitted files are relative to the repository root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    pub path: String,
    pub stamp: Stamp,
}

/// One uncommitted path as `git status --porcelain` names it: its two status letters and stamp.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirtyFile {
    pub path: String,
    pub status: String,
    pub stamp: Stamp,
}

/// The uncommitted paths of a repository, or why they are not known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum DirtySet {
    Listed {
        files: Vec<DirtyFile>,
    },
    /// More than [`MAX_DIRTY`] paths: not recorded one by one.
    TooMany {
        count: usize,
    },
    /// No repository, or git did not answer in time.
    Unavailable,
}

/// What the workspace held when the handoff was written (in the sidecar and on the branch, in
/// the `relay/handoff` entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceRecord {
    pub cwd: String,
    pub repo_root: Option<String>,
    pub git_state: GitState,
    pub branch: Option<String>,
    pub head: Option<String>,
    pub dirty: DirtySet,
    /// The handoff's `files_to_read`, in its order.
    pub files: Vec<FileStamp>,
}

/// How HEAD now relates to the HEAD the handoff recorded (collected only when both are known
/// and differ).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Ancestry {
    /// HEAD descends from the recorded HEAD: `commits` (newest first, `hash subject`, at most
    /// [`MAX_COMMITS`]) of `total` landed since.
    Descendant { commits: Vec<String>, total: u64 },
    /// HEAD does not descend from it (rebased, reset, amended): `commits` of `total` are on HEAD
    /// and not on the recorded HEAD; `dropped` commits of the recorded HEAD are not on HEAD.
    Diverged {
        commits: Vec<String>,
        total: u64,
        dropped: u64,
    },
    /// The repository does not have the recorded commit (gone after a rewrite, or another
    /// repository).
    UnknownCommit,
    /// git did not answer in time.
    Unavailable,
}

/// What the workspace holds now, collected for a [`WorkspaceRecord`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceNow {
    pub repo_root: Option<String>,
    pub git_state: GitState,
    pub branch: Option<String>,
    pub head: Option<String>,
    /// `None` when HEAD is unchanged or one of the two is unknown.
    pub ancestry: Option<Ancestry>,
    pub dirty: DirtySet,
    /// The recorded files to read, stamped again, in the record's order.
    pub files: Vec<FileStamp>,
}

/// Paths of one kind, at most [`MAX_LISTED`] of them, and how many there are in all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listed {
    pub items: Vec<String>,
    pub total: usize,
}

impl Listed {
    fn push(&mut self, item: &str) {
        self.total += 1;
        if self.items.len() < MAX_LISTED {
            self.items.push(item.to_string());
        }
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

/// Git as compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum GitDrift {
    /// The handoff recorded no repository (or git could not be queried then): nothing to compare.
    NotRecorded,
    /// The handoff recorded a repository and git cannot tell now (not a repository any more, git
    /// missing, or it did not answer in time).
    Unavailable,
    #[serde(rename_all = "camelCase")]
    Compared {
        /// `(then, now)` when the repository root differs.
        root: Option<(String, String)>,
        /// `(then, now)` when the branch differs (`None`: detached HEAD).
        branch: Option<(Option<String>, Option<String>)>,
        /// `(then, now)` when HEAD differs, with how they relate.
        head: Option<HeadDrift>,
    },
}

/// HEAD then and now, and how they relate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadDrift {
    pub then: Option<String>,
    pub now: Option<String>,
    pub ancestry: Option<Ancestry>,
}

/// The uncommitted files as compared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirtyDrift {
    /// Uncommitted at the handoff, clean now (committed, reverted or stashed).
    pub cleaned: Listed,
    /// Uncommitted now, not at the handoff.
    pub added: Listed,
    /// Uncommitted then and now, and changed since the handoff.
    pub changed: Listed,
    /// The sets could not be compared: `"unavailable"` (no git now) or `"tooMany"`.
    pub not_compared: Option<String>,
}

/// What differs between a [`WorkspaceRecord`] and a [`WorkspaceNow`] (recorded on the branch as
/// `relay/stale-check`; the window message is rendered from it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StaleReport {
    pub git: GitDrift,
    /// Files to read whose content changed since the handoff.
    pub changed: Listed,
    /// Files to read that existed at the handoff and do not now.
    pub vanished: Listed,
    /// Files to read that did not exist at the handoff and do now.
    pub appeared: Listed,
    /// Files to read that could not be compared (unreadable then or now).
    pub unchecked: Listed,
    pub dirty: DirtyDrift,
}

impl StaleReport {
    /// Whether anything differs (or could not be checked where the handoff recorded something).
    pub fn says_something(&self) -> bool {
        let git = match &self.git {
            GitDrift::NotRecorded => false,
            GitDrift::Unavailable => true,
            GitDrift::Compared { root, branch, head } => {
                root.is_some() || branch.is_some() || head.is_some()
            }
        };
        git || !self.changed.is_empty()
            || !self.vanished.is_empty()
            || !self.appeared.is_empty()
            || !self.unchecked.is_empty()
            || !self.dirty.cleaned.is_empty()
            || !self.dirty.added.is_empty()
            || !self.dirty.changed.is_empty()
            || (self.dirty.not_compared.is_some() && matches!(self.git, GitDrift::Compared { .. }))
    }
}

/// How two stamps of one path compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Same,
    Changed,
    Vanished,
    Appeared,
    Unknown,
}

fn change(then: &Stamp, now: &Stamp) -> Change {
    match (then, now) {
        (Stamp::Unknown, _) | (_, Stamp::Unknown) => Change::Unknown,
        (Stamp::Missing, Stamp::Missing) | (Stamp::Dir, Stamp::Dir) => Change::Same,
        (Stamp::Missing, _) => Change::Appeared,
        (_, Stamp::Missing) => Change::Vanished,
        (
            Stamp::File {
                size: s1,
                mtime_ms: m1,
                hash: h1,
            },
            Stamp::File {
                size: s2,
                mtime_ms: m2,
                hash: h2,
            },
        ) => {
            let same = match (h1, h2) {
                // Both hashed: the content decides (a touch alone changes nothing).
                (Some(a), Some(b)) => s1 == s2 && a == b,
                _ => s1 == s2 && m1 == m2,
            };
            if same {
                Change::Same
            } else {
                Change::Changed
            }
        }
        (Stamp::Dir, Stamp::File { .. }) | (Stamp::File { .. }, Stamp::Dir) => Change::Changed,
    }
}

fn has_repo(state: GitState) -> bool {
    matches!(state, GitState::Repo | GitState::Detached)
}

fn compare_git(rec: &WorkspaceRecord, now: &WorkspaceNow) -> GitDrift {
    if !has_repo(rec.git_state) {
        return GitDrift::NotRecorded;
    }
    if !has_repo(now.git_state) {
        return GitDrift::Unavailable;
    }
    let root = match (&rec.repo_root, &now.repo_root) {
        (Some(a), Some(b)) if a != b => Some((a.clone(), b.clone())),
        _ => None,
    };
    let branch = (rec.branch != now.branch).then(|| (rec.branch.clone(), now.branch.clone()));
    let head = (rec.head != now.head).then(|| HeadDrift {
        then: rec.head.clone(),
        now: now.head.clone(),
        ancestry: now.ancestry.clone(),
    });
    GitDrift::Compared { root, branch, head }
}

fn compare_dirty(rec: &DirtySet, now: &DirtySet) -> DirtyDrift {
    let (then, current) = match (rec, now) {
        (DirtySet::Listed { files: a }, DirtySet::Listed { files: b }) => (a, b),
        (DirtySet::Unavailable, _) => return DirtyDrift::default(),
        (_, DirtySet::Unavailable) => {
            return DirtyDrift {
                not_compared: Some("unavailable".into()),
                ..DirtyDrift::default()
            }
        }
        _ => {
            return DirtyDrift {
                not_compared: Some("tooMany".into()),
                ..DirtyDrift::default()
            }
        }
    };
    let then: BTreeMap<&str, &DirtyFile> = then.iter().map(|f| (f.path.as_str(), f)).collect();
    let current: BTreeMap<&str, &DirtyFile> =
        current.iter().map(|f| (f.path.as_str(), f)).collect();
    let mut out = DirtyDrift::default();
    for (path, was) in &then {
        match current.get(path) {
            None => out.cleaned.push(path),
            Some(is) => {
                if is.status != was.status || change(&was.stamp, &is.stamp) != Change::Same {
                    out.changed.push(path);
                }
            }
        }
    }
    for path in current.keys().filter(|p| !then.contains_key(*p)) {
        out.added.push(path);
    }
    out
}

/// What differs between the workspace the handoff recorded and the workspace now.
pub fn compare(rec: &WorkspaceRecord, now: &WorkspaceNow) -> StaleReport {
    let mut report = StaleReport {
        git: compare_git(rec, now),
        changed: Listed::default(),
        vanished: Listed::default(),
        appeared: Listed::default(),
        unchecked: Listed::default(),
        dirty: if has_repo(rec.git_state) {
            compare_dirty(&rec.dirty, &now.dirty)
        } else {
            DirtyDrift::default()
        },
    };
    let mut seen = BTreeSet::new();
    for (i, then) in rec.files.iter().enumerate() {
        if !seen.insert(then.path.as_str()) {
            continue;
        }
        let now_stamp = now
            .files
            .get(i)
            .filter(|f| f.path == then.path)
            .map_or(&Stamp::Unknown, |f| &f.stamp);
        match change(&then.stamp, now_stamp) {
            Change::Same => {}
            Change::Changed => report.changed.push(&then.path),
            Change::Vanished => report.vanished.push(&then.path),
            Change::Appeared => report.appeared.push(&then.path),
            Change::Unknown => report.unchecked.push(&then.path),
        }
    }
    report
}

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

/// The paths a handoff stamps: its `files_to_read`, once each, in order.
pub fn files_to_stamp(files_to_read: &[String]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    files_to_read
        .iter()
        .filter(|f| seen.insert(f.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests;
