//! The workspace a handoff records ([`record_until`]) and what it holds when the window that
//! handoff opened starts ([`now_until`]): git's facts (see [`crate::git`]) and a stamp of every
//! file the handoff tells the model to read and of every uncommitted file (size, modification
//! time and, up to 16 MiB, a 128-bit SipHash-1-3 of the content). relay-core compares the two
//! ([`relay_core::staleness::compare`]).
//!
//! A handoff that recorded no repository (no git, or git did not answer in time then) runs no git
//! at the resume: there is nothing of git's to compare. Everything of one collection shares one
//! deadline: a file still unread when it passes is
//! stamped `unknown`, a git command still running is killed. Only regular files are opened (a
//! FIFO or a device is stamped by its metadata, never read). Blocking: the addon runs this on a
//! worker thread, never on Pi's event loop.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, UNIX_EPOCH};

use relay_core::staleness::{
    files_to_stamp, DirtySet, FileStamp, Stamp, WorkspaceNow, WorkspaceRecord, MAX_HASHED_BYTES,
};
use siphasher::sip128::{Hasher128, SipHasher13};

use crate::git::{Git, GitInfo, GitState};

/// How long the comparison at the resume may take in all (git and the files).
pub const RESUME_DEADLINE: Duration = Duration::from_secs(5);

/// Bytes read per step of a hash (the deadline is checked between steps).
const CHUNK: usize = 256 * 1024;

/// `path` as the handoff meant it: relative paths resolve against `base`.
fn resolve(base: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

fn hash_file(path: &Path, deadline: Instant) -> Option<String> {
    let mut file = File::open(path).ok()?;
    let mut hasher = SipHasher13::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        if Instant::now() >= deadline {
            return None;
        }
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => std::hash::Hasher::write(&mut hasher, buf.get(..n).unwrap_or_default()),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
    Some(format!("{:032x}", hasher.finish128().as_u128()))
}

/// What `path` is now, within `deadline`.
pub fn stamp(path: &Path, deadline: Instant) -> Stamp {
    if Instant::now() >= deadline {
        return Stamp::Unknown;
    }
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound || e.kind() == ErrorKind::NotADirectory => {
            return Stamp::Missing
        }
        Err(_) => return Stamp::Unknown,
    };
    if meta.is_dir() {
        return Stamp::Dir;
    }
    let mtime_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let size = meta.len();
    let hash = if meta.is_file() && size <= MAX_HASHED_BYTES {
        match hash_file(path, deadline) {
            Some(h) => Some(h),
            None => return Stamp::Unknown,
        }
    } else {
        None
    };
    Stamp::File {
        size,
        mtime_ms,
        hash,
    }
}

fn stamp_files(base: &Path, paths: &[String], deadline: Instant) -> Vec<FileStamp> {
    paths
        .iter()
        .map(|p| FileStamp {
            path: p.clone(),
            stamp: stamp(&resolve(base, p), deadline),
        })
        .collect()
}

fn stamp_dirty(root: Option<&str>, dirty: &mut DirtySet, deadline: Instant) {
    if let (Some(root), DirtySet::Listed { files }) = (root, dirty) {
        for f in files {
            f.stamp = stamp(&resolve(Path::new(root), &f.path), deadline);
        }
    }
}

impl Git {
    fn workspace_record(
        &self,
        cwd: &Path,
        files_to_read: &[String],
        deadline: Instant,
    ) -> (GitInfo, WorkspaceRecord) {
        // The listed files first: they need no git, so a hanging git cannot cost their stamps.
        let files = stamp_files(cwd, &files_to_stamp(files_to_read), deadline);
        let (info, mut dirty) = self.record(cwd, deadline);
        stamp_dirty(info.repo_root.as_deref(), &mut dirty, deadline);
        let record = WorkspaceRecord {
            cwd: cwd.display().to_string(),
            repo_root: info.repo_root.clone(),
            git_state: info.state,
            branch: info.branch.clone(),
            head: info.head.clone(),
            dirty,
            files,
        };
        (info, record)
    }

    fn workspace_now(&self, rec: &WorkspaceRecord, deadline: Instant) -> WorkspaceNow {
        let cwd = Path::new(&rec.cwd);
        let paths: Vec<String> = rec.files.iter().map(|f| f.path.clone()).collect();
        let files = stamp_files(cwd, &paths, deadline);
        // A handoff that recorded no repository has nothing of git's to compare: git is not run.
        let (info, ancestry, mut dirty) =
            if matches!(rec.git_state, GitState::Repo | GitState::Detached) {
                self.now(cwd, rec.head.as_deref(), deadline)
            } else {
                let none = GitInfo {
                    state: rec.git_state,
                    ..GitInfo::unknown()
                };
                (none, None, DirtySet::Unavailable)
            };
        stamp_dirty(info.repo_root.as_deref(), &mut dirty, deadline);
        WorkspaceNow {
            repo_root: info.repo_root,
            git_state: info.state,
            branch: info.branch,
            head: info.head,
            ancestry,
            dirty,
            files,
        }
    }
}

/// What a handoff written now in `cwd` records: git's facts (also returned, for the handoff's
/// metadata), the uncommitted paths and the stamps of `files_to_read` and of those paths, all
/// within `deadline`.
pub fn record_until(
    cwd: &Path,
    files_to_read: &[String],
    deadline: Instant,
) -> (GitInfo, WorkspaceRecord) {
    Git::default().workspace_record(cwd, files_to_read, deadline)
}

/// What the workspace of `rec` holds now, within `deadline` (in the record's cwd).
pub fn now_until(rec: &WorkspaceRecord, deadline: Instant) -> WorkspaceNow {
    Git::default().workspace_now(rec, deadline)
}

#[cfg(test)]
mod tests;
