//! Stale handoffs: what a handoff recorded of the workspace (git root, branch, HEAD, uncommitted
//! files, and a stamp of every file it tells the next window to read and of every uncommitted
//! file), what the workspace holds when the window it opened starts, what differs, and the text
//! the model reads about it.
//!
//! Sans-IO: relay-io collects both sides ([`WorkspaceRecord`] at the handoff, [`WorkspaceNow`] at
//! the resume, within one deadline, off Pi's event loop); this module compares them
//! ([`compare`]); [`crate::render::staleness`] renders the window message, at most
//! [`MESSAGE_BUDGET_BYTES`] with every list's omissions counted. Nothing that differs → no message.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::handoff::GitState;

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
pub(crate) mod tests;
