//! Git metadata for handoffs, collected independently of the model. Absent git, a folder outside a
//! repository or a detached HEAD are recorded in [`GitInfo::state`], never errors.
//!
//! All commands of one collection share one deadline. Each `git` runs in its own process group;
//! when it exits, or when the deadline passes, the whole group is killed before the process is
//! reaped, so nothing git started outlives the collection and no pipe held open by a leftover
//! child can stall it. Output is read without blocking while git runs.
//!
//! This blocks its thread for up to the deadline: the addon runs it on a worker thread, never on
//! Pi's event loop.

use std::ffi::OsString;
use std::io::{ErrorKind, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, waitid, Pid, Signal, WaitId, WaitIdOptions};

pub use relay_core::handoff::GitState;
use relay_core::staleness::{Ancestry, DirtyFile, DirtySet, Stamp, MAX_COMMITS, MAX_DIRTY};

/// How long one whole collection (up to three `git` commands) may take.
pub const GIT_DEADLINE: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitInfo {
    pub repo_root: Option<String>,
    /// `None` on a detached HEAD or without a repository.
    pub branch: Option<String>,
    pub head: Option<String>,
    pub state: GitState,
}

impl GitInfo {
    /// Nothing known: git could not be queried in time (or at all).
    pub fn unknown() -> Self {
        GitInfo {
            repo_root: None,
            branch: None,
            head: None,
            state: GitState::Unknown,
        }
    }
}

enum Outcome {
    Ok(String),
    /// git ran and exited non-zero (its exit code; `None`: killed by a signal).
    Failed(Option<i32>),
    /// git is not installed.
    Missing,
    /// The deadline passed, or git could not be started or waited for.
    Broken,
}

/// The program and extra environment to run (tests substitute a fake git).
pub(crate) struct Git {
    pub(crate) program: OsString,
    pub(crate) env: Vec<(OsString, OsString)>,
}

impl Default for Git {
    fn default() -> Self {
        Git {
            program: "git".into(),
            env: Vec::new(),
        }
    }
}

/// Pause between polls: short at first (git usually answers in milliseconds), then 10 ms.
fn poll_pause(polls: u32) -> Duration {
    Duration::from_millis(u64::from(polls.clamp(1, 10)))
}

/// Bytes of one command's output kept at most (the rest is read and dropped).
pub const MAX_OUTPUT_BYTES: usize = 1 << 20;

/// Read what the pipe holds now, without waiting for more (the pipe is non-blocking). Past
/// [`MAX_OUTPUT_BYTES`] the bytes are read and dropped.
fn drain(pipe: &mut impl Read, out: &mut Vec<u8>) {
    let mut buf = [0u8; 4096];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let room = (MAX_OUTPUT_BYTES + 1).saturating_sub(out.len());
                out.extend_from_slice(buf.get(..n.min(room)).unwrap_or_default());
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return, // WouldBlock: nothing more for now
        }
    }
}

/// Kill `child`'s process group (git and anything it started), then reap `child`.
fn kill_group_and_reap(child: &mut Child, pid: Pid) -> Option<ExitStatus> {
    // The unreaped leader keeps the group id from being reused, so this can only reach git's group.
    let _ = kill_process_group(pid, Signal::KILL);
    child.wait().ok()
}

impl Git {
    fn run(&self, cwd: &Path, args: &[&str], deadline: Instant) -> Outcome {
        if Instant::now() >= deadline {
            return Outcome::Broken;
        }
        let mut command = Command::new(&self.program);
        command
            .arg("-C")
            .arg(cwd)
            .args(args)
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("GIT_TERMINAL_PROMPT", "0")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0);
        let mut child = match command.spawn() {
            Ok(c) => c,
            Err(e) if e.kind() == ErrorKind::NotFound => return Outcome::Missing,
            Err(_) => return Outcome::Broken,
        };
        let pid = Pid::from_child(&child);
        let mut stdout = child.stdout.take();
        if let Some(pipe) = &stdout {
            if rustix::io::ioctl_fionbio(pipe, true).is_err() {
                kill_group_and_reap(&mut child, pid);
                return Outcome::Broken;
            }
        }
        let mut out = Vec::new();
        let mut polls = 0u32;
        let exited = loop {
            if let Some(pipe) = stdout.as_mut() {
                drain(pipe, &mut out);
            }
            // Observe the exit without reaping, so that the group can still be killed safely.
            match waitid(
                WaitId::Pid(pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
            ) {
                Ok(Some(_)) => break true,
                Ok(None) => {}
                Err(_) => break false,
            }
            let now = Instant::now();
            if now >= deadline {
                break false;
            }
            polls = polls.saturating_add(1);
            std::thread::sleep(poll_pause(polls).min(deadline - now));
        };
        let status = kill_group_and_reap(&mut child, pid);
        if !exited {
            return Outcome::Broken;
        }
        if let Some(pipe) = stdout.as_mut() {
            drain(pipe, &mut out);
        }
        match status {
            Some(status) if status.success() => {
                Outcome::Ok(String::from_utf8_lossy(&out).into_owned())
            }
            Some(status) => Outcome::Failed(status.code()),
            None => Outcome::Broken,
        }
    }

    fn state(&self, cwd: &Path, deadline: Instant) -> GitInfo {
        let none = |state| GitInfo {
            repo_root: None,
            branch: None,
            head: None,
            state,
        };
        let root = match self.run(cwd, &["rev-parse", "--show-toplevel"], deadline) {
            Outcome::Ok(r) if !r.trim().is_empty() => r.trim().to_string(),
            Outcome::Ok(_) | Outcome::Failed(_) | Outcome::Missing => return none(GitState::NoGit),
            Outcome::Broken => return none(GitState::Unknown),
        };
        let (head, broken) = match self.run(cwd, &["rev-parse", "--verify", "-q", "HEAD"], deadline)
        {
            Outcome::Ok(h) if !h.trim().is_empty() => (Some(h.trim().to_string()), false),
            Outcome::Ok(_) | Outcome::Failed(_) => (None, false),
            Outcome::Missing | Outcome::Broken => (None, true),
        };
        let (branch, state) = if broken {
            (None, GitState::Unknown)
        } else {
            match self.run(cwd, &["symbolic-ref", "--short", "-q", "HEAD"], deadline) {
                Outcome::Ok(b) if !b.trim().is_empty() => {
                    (Some(b.trim().to_string()), GitState::Repo)
                }
                Outcome::Ok(_) | Outcome::Failed(_) => (None, GitState::Detached),
                Outcome::Missing | Outcome::Broken => (None, GitState::Unknown),
            }
        };
        GitInfo {
            repo_root: Some(root),
            branch,
            head,
            state,
        }
    }
}

/// Repository root, branch and HEAD for `cwd`, via `git rev-parse --show-toplevel`,
/// `git rev-parse --verify -q HEAD` and `git symbolic-ref --short -q HEAD`, all within
/// [`GIT_DEADLINE`].
pub fn git_state(cwd: &Path) -> GitInfo {
    git_state_until(cwd, Instant::now() + GIT_DEADLINE)
}

/// [`git_state`] with an explicit deadline shared by every command.
///
/// States: `NoGit` (git missing or `cwd` not in a repository), `Detached` (no branch), `Repo`,
/// `Unknown` (the deadline passed or a command failed unexpectedly; a root or HEAD found before
/// that is kept, the branch is not). A fresh repository without commits is `Repo` with its branch
/// and no HEAD.
pub fn git_state_until(cwd: &Path, deadline: Instant) -> GitInfo {
    Git::default().state(cwd, deadline)
}

/// Whether `s` reads as a commit id git printed (hex, 4 to 64 digits): nothing else is passed to
/// git as a revision, so a value read back from a file can never be taken for an option.
fn is_commit_id(s: &str) -> bool {
    (4..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether a `git status` path is Relay's handoff folder (`.ai-work/` untracked as a whole, or
/// `.ai-work/handoffs/…`), which Relay writes itself.
fn is_handoff_folder(path: &str) -> bool {
    path == ".ai-work/" || path.starts_with(".ai-work/handoffs/")
}

/// The entries of `git status --porcelain=v1 -z`: `(XY, path)`; a rename's or copy's original
/// path (the field after it) is skipped. Entries that do not read as `XY path` are passed over.
fn parse_porcelain(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut fields = text.split('\0');
    while let Some(field) = fields.next() {
        let (Some(status), Some(path)) = (field.get(..2), field.get(3..)) else {
            continue;
        };
        if field.get(2..3) != Some(" ") || path.is_empty() {
            continue;
        }
        if status.starts_with(['R', 'C']) {
            fields.next();
        }
        out.push((status.to_string(), path.to_string()));
    }
    out
}

impl Git {
    /// The uncommitted paths of the repository at `root` (relative to it, untracked ones too,
    /// ignored ones not), their stamps left [`Stamp::Unknown`] for the caller.
    fn dirty(&self, root: &Path, deadline: Instant) -> DirtySet {
        let args = [
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=normal",
            "--no-renames",
        ];
        match self.run(root, &args, deadline) {
            Outcome::Ok(text) => {
                // Relay's own handoff files are not the user's changes.
                let entries: Vec<(String, String)> = parse_porcelain(&text)
                    .into_iter()
                    .filter(|(_, path)| !is_handoff_folder(path))
                    .collect();
                if entries.len() > MAX_DIRTY || text.len() > MAX_OUTPUT_BYTES {
                    return DirtySet::TooMany {
                        count: entries.len(),
                    };
                }
                DirtySet::Listed {
                    files: entries
                        .into_iter()
                        .map(|(status, path)| DirtyFile {
                            path,
                            status,
                            stamp: Stamp::Unknown,
                        })
                        .collect(),
                }
            }
            _ => DirtySet::Unavailable,
        }
    }

    /// `git log --oneline` of `range`, at most [`MAX_COMMITS`] lines, and `git rev-list --count`
    /// of it; `None` when either fails.
    fn commits(&self, cwd: &Path, range: &str, deadline: Instant) -> Option<(Vec<String>, u64)> {
        let max = format!("-n{MAX_COMMITS}");
        let log = match self.run(
            cwd,
            &[
                "log",
                "--oneline",
                "--no-decorate",
                "--no-color",
                &max,
                range,
                "--",
            ],
            deadline,
        ) {
            Outcome::Ok(text) => text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string)
                .collect(),
            _ => return None,
        };
        let total = self.count(cwd, range, deadline)?;
        Some((log, total))
    }

    fn count(&self, cwd: &Path, range: &str, deadline: Instant) -> Option<u64> {
        match self.run(cwd, &["rev-list", "--count", range, "--"], deadline) {
            Outcome::Ok(text) => text.trim().parse().ok(),
            _ => None,
        }
    }

    /// How `now` relates to `then` (both commit ids, different).
    fn ancestry(&self, cwd: &Path, then: &str, now: &str, deadline: Instant) -> Ancestry {
        if !is_commit_id(then) || !is_commit_id(now) {
            return Ancestry::UnknownCommit;
        }
        let forward = format!("{then}..{now}");
        match self.run(cwd, &["merge-base", "--is-ancestor", then, now], deadline) {
            Outcome::Ok(_) => match self.commits(cwd, &forward, deadline) {
                Some((commits, total)) => Ancestry::Descendant { commits, total },
                None => Ancestry::Unavailable,
            },
            Outcome::Failed(Some(1)) => {
                let back = format!("{now}..{then}");
                match (
                    self.commits(cwd, &forward, deadline),
                    self.count(cwd, &back, deadline),
                ) {
                    (Some((commits, total)), Some(dropped)) => Ancestry::Diverged {
                        commits,
                        total,
                        dropped,
                    },
                    _ => Ancestry::Unavailable,
                }
            }
            // 128: not a commit of this repository.
            Outcome::Failed(_) => Ancestry::UnknownCommit,
            Outcome::Missing | Outcome::Broken => Ancestry::Unavailable,
        }
    }

    /// The repository facts of a [`WorkspaceRecord`] (root, branch, HEAD, uncommitted paths)
    /// for `cwd`, stamps left to the caller.
    pub(crate) fn record(&self, cwd: &Path, deadline: Instant) -> (GitInfo, DirtySet) {
        let info = self.state(cwd, deadline);
        let dirty = match (&info.repo_root, info.state) {
            (Some(root), GitState::Repo | GitState::Detached) => {
                self.dirty(Path::new(root), deadline)
            }
            _ => DirtySet::Unavailable,
        };
        (info, dirty)
    }

    /// The repository facts of a [`WorkspaceNow`] for a handoff that recorded HEAD `then`.
    pub(crate) fn now(
        &self,
        cwd: &Path,
        then: Option<&str>,
        deadline: Instant,
    ) -> (GitInfo, Option<Ancestry>, DirtySet) {
        let (info, dirty) = self.record(cwd, deadline);
        let ancestry = match (then, info.head.as_deref(), info.state) {
            (Some(then), Some(now), GitState::Repo | GitState::Detached) if then != now => {
                Some(self.ancestry(cwd, then, now, deadline))
            }
            _ => None,
        };
        (info, ancestry, dirty)
    }
}

/// The repository facts a handoff records for `cwd`: [`git_state_until`] and the uncommitted
/// paths (`git status --porcelain=v1 -z`), all within `deadline`. Stamps are left
/// [`Stamp::Unknown`] (see `crate::workspace`).
pub fn record_until(cwd: &Path, deadline: Instant) -> (GitInfo, DirtySet) {
    Git::default().record(cwd, deadline)
}

/// The repository facts now for a handoff that recorded HEAD `then`: [`record_until`] plus, when
/// HEAD moved, how it relates to `then` (`git merge-base --is-ancestor`, `git log --oneline`,
/// `git rev-list --count`), all within `deadline`.
pub fn now_until(
    cwd: &Path,
    then: Option<&str>,
    deadline: Instant,
) -> (GitInfo, Option<Ancestry>, DirtySet) {
    Git::default().now(cwd, then, deadline)
}

/// git as the tests (this module's and the workspace's) run it.
#[cfg(test)]
pub(crate) mod test_support {
    use super::Git;
    use crate::fsx::test_support::TempDir;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::process::Command;
    use std::time::{Duration, Instant};

    /// git that never looks above the test's own folder for a repository, so that a temp dir
    /// inside some checkout cannot change the answer.
    pub(crate) fn git_below(dir: &Path) -> Git {
        let ceiling = dir.parent().unwrap_or(dir).as_os_str().to_owned();
        Git {
            program: "git".into(),
            env: vec![("GIT_CEILING_DIRECTORIES".into(), ceiling)],
        }
    }

    pub(crate) fn soon() -> Instant {
        Instant::now() + Duration::from_secs(30)
    }

    /// A fake git: a shell script that records its pid and its background child's pid in
    /// `pids`, then runs `body`.
    pub(crate) fn fake_git(t: &TempDir, body: &str) -> (Git, std::path::PathBuf) {
        let pids = t.0.join("pids");
        let script = t.0.join("git");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho $$ >> '{}'\nsleep 30 &\necho $! >> '{}'\n{body}\n",
                pids.display(),
                pids.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        (
            Git {
                program: script.into_os_string(),
                env: Vec::new(),
            },
            pids,
        )
    }

    /// Whether `pid` is gone (or a zombie waiting for init to reap it).
    fn dead(pid: &str) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    /// The processes listed in `pids` still alive after a bounded wait (none, when all died).
    pub(crate) fn all_dead(pids: &Path) -> Vec<String> {
        let text = std::fs::read_to_string(pids).unwrap();
        let pids: Vec<String> = text.lines().map(str::to_string).collect();
        assert!(!pids.is_empty(), "the fake git ran");
        // SIGKILL is delivered asynchronously: give the kernel a bounded moment.
        let until = Instant::now() + Duration::from_secs(5);
        while pids.iter().any(|p| !dead(p)) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        pids.into_iter().filter(|p| !dead(p)).collect()
    }

    /// The fake git of [`fake_git`] ran once (it and its child wrote their pids), the deadline
    /// stopped the rest, and neither process outlived it.
    pub(crate) fn one_git_ran_and_died(pids: &Path) {
        let lines = std::fs::read_to_string(pids).unwrap();
        assert_eq!(
            lines.lines().count(),
            2,
            "one git ran, then the deadline stopped the rest"
        );
        assert_eq!(
            all_dead(pids),
            Vec::<String>::new(),
            "no process outlives the deadline"
        );
    }

    /// `git -C dir args…` with a test identity and no signing; it must succeed.
    pub(crate) fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.invalid",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .output()
            .expect("git is installed on every machine that runs these tests");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{all_dead, fake_git, git, git_below, one_git_ran_and_died, soon};
    use super::*;
    use crate::fsx::test_support::TempDir;

    #[test]
    fn outside_a_repository_is_no_git() {
        let t = TempDir::new("nogit");
        let info = git_below(&t.0).state(&t.0, soon());
        assert_eq!(
            info,
            GitInfo {
                repo_root: None,
                branch: None,
                head: None,
                state: GitState::NoGit
            }
        );
    }

    #[test]
    fn missing_git_is_no_git_and_a_missing_folder_is_not_an_error() {
        let t = TempDir::new("nogit-program");
        let absent = Git {
            program: t.0.join("no-such-git").into_os_string(),
            env: Vec::new(),
        };
        assert_eq!(absent.state(&t.0, soon()).state, GitState::NoGit);
        let info = git_below(&t.0).state(&t.0.join("missing/folder"), soon());
        assert_eq!(info.state, GitState::NoGit, "{info:?}");
    }

    #[test]
    fn real_repository_branch_head_and_detached() {
        let t = TempDir::new("repo");
        let g = git_below(&t.0);
        git(&t.0, &["init", "-q", "-b", "trunk"]);
        let info = g.state(&t.0, soon());
        assert_eq!(info.state, GitState::Repo);
        assert_eq!(info.branch.as_deref(), Some("trunk"));
        assert_eq!(info.head, None, "no commit yet");
        std::fs::write(t.0.join("f.txt"), "x").unwrap();
        git(&t.0, &["add", "f.txt"]);
        git(&t.0, &["commit", "-q", "-m", "one"]);
        let sub = t.0.join("sub");
        std::fs::create_dir(&sub).unwrap();
        let info = g.state(&sub, soon());
        assert_eq!(info.state, GitState::Repo);
        let root = std::fs::canonicalize(&t.0).unwrap();
        assert_eq!(info.repo_root.as_deref(), Some(root.to_str().unwrap()));
        let head = info.head.clone().unwrap();
        assert_eq!(head.len(), 40);
        git(&t.0, &["checkout", "-q", "--detach"]);
        let info = g.state(&t.0, soon());
        assert_eq!(info.state, GitState::Detached);
        assert_eq!(info.branch, None);
        assert_eq!(info.head.as_deref(), Some(head.as_str()));
    }

    #[test]
    fn a_hanging_git_is_killed_with_its_children_at_the_deadline() {
        let t = TempDir::new("hang");
        let (fake, pids) = fake_git(&t, "wait");
        let info = fake.state(&t.0, Instant::now() + Duration::from_millis(300));
        assert_eq!(
            info,
            GitInfo::unknown(),
            "the deadline marks the metadata unknown"
        );
        one_git_ran_and_died(&pids);
    }

    #[test]
    fn a_child_left_holding_the_pipe_neither_stalls_nor_survives() {
        let t = TempDir::new("lingering");
        let (fake, pids) = fake_git(
            &t,
            r#"case "$*" in
  *show-toplevel*) echo /fake/root ;;
  *rev-parse*) echo 0123456789012345678901234567890123456789 ;;
  *symbolic-ref*) echo trunk ;;
esac
exit 0"#,
        );
        // The background `sleep` keeps stdout open for 30 s: reading to EOF would hit the deadline.
        let info = fake.state(&t.0, Instant::now() + Duration::from_secs(20));
        assert_eq!(
            info,
            GitInfo {
                repo_root: Some("/fake/root".into()),
                branch: Some("trunk".into()),
                head: Some("0123456789012345678901234567890123456789".into()),
                state: GitState::Repo,
            }
        );
        assert_eq!(std::fs::read_to_string(&pids).unwrap().lines().count(), 6);
        assert_eq!(all_dead(&pids), Vec::<String>::new());
    }

    #[test]
    fn a_deadline_passing_after_the_root_keeps_the_root_and_marks_the_state_unknown() {
        let t = TempDir::new("slow-head");
        let (fake, pids) = fake_git(
            &t,
            r#"case "$*" in
  *show-toplevel*) echo /fake/root; exit 0 ;;
esac
wait"#,
        );
        let info = fake.state(&t.0, Instant::now() + Duration::from_millis(300));
        assert_eq!(
            info,
            GitInfo {
                repo_root: Some("/fake/root".into()),
                branch: None,
                head: None,
                state: GitState::Unknown,
            }
        );
        assert_eq!(all_dead(&pids), Vec::<String>::new());
    }

    #[test]
    fn a_passed_deadline_runs_nothing() {
        let t = TempDir::new("late");
        let (fake, pids) = fake_git(&t, "exit 0");
        let info = fake.state(&t.0, Instant::now());
        assert_eq!(info, GitInfo::unknown());
        assert!(!pids.exists());
    }
}
