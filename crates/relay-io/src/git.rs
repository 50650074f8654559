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
    /// git ran and exited non-zero.
    Failed,
    /// git is not installed.
    Missing,
    /// The deadline passed, or git could not be started or waited for.
    Broken,
}

/// The program and extra environment to run (tests substitute a fake git).
struct Git {
    program: OsString,
    env: Vec<(OsString, OsString)>,
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

/// Read what the pipe holds now, without waiting for more (the pipe is non-blocking).
fn drain(pipe: &mut impl Read, out: &mut Vec<u8>) {
    let mut buf = [0u8; 4096];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => out.extend_from_slice(buf.get(..n).unwrap_or_default()),
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
                Outcome::Ok(String::from_utf8_lossy(&out).trim().to_string())
            }
            Some(_) => Outcome::Failed,
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
            Outcome::Ok(r) if !r.is_empty() => r,
            Outcome::Ok(_) | Outcome::Failed | Outcome::Missing => return none(GitState::NoGit),
            Outcome::Broken => return none(GitState::Unknown),
        };
        let (head, broken) = match self.run(cwd, &["rev-parse", "--verify", "-q", "HEAD"], deadline)
        {
            Outcome::Ok(h) if !h.is_empty() => (Some(h), false),
            Outcome::Ok(_) | Outcome::Failed => (None, false),
            Outcome::Missing | Outcome::Broken => (None, true),
        };
        let (branch, state) = if broken {
            (None, GitState::Unknown)
        } else {
            match self.run(cwd, &["symbolic-ref", "--short", "-q", "HEAD"], deadline) {
                Outcome::Ok(b) if !b.is_empty() => (Some(b), GitState::Repo),
                Outcome::Ok(_) | Outcome::Failed => (None, GitState::Detached),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::test_support::TempDir;
    use std::os::unix::fs::PermissionsExt;

    /// git as the tests run it: never looking above the test's own folder for a repository, so
    /// that a temp dir inside some checkout cannot change the answer.
    fn git_below(dir: &Path) -> Git {
        let ceiling = dir.parent().unwrap_or(dir).as_os_str().to_owned();
        Git {
            program: "git".into(),
            env: vec![("GIT_CEILING_DIRECTORIES".into(), ceiling)],
        }
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(30)
    }

    fn git(dir: &Path, args: &[&str]) {
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

    /// A fake git: a shell script that records its pid and its background child's pid in
    /// `pids`, then runs `body`.
    fn fake_git(t: &TempDir, body: &str) -> (Git, std::path::PathBuf) {
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

    fn all_dead(pids: &Path) -> Vec<String> {
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
        let lines = std::fs::read_to_string(&pids).unwrap();
        assert_eq!(
            lines.lines().count(),
            2,
            "one git ran, then the deadline stopped the rest"
        );
        assert_eq!(
            all_dead(&pids),
            Vec::<String>::new(),
            "no process outlives the deadline"
        );
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
