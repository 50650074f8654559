//! Git metadata for handoffs, collected independently of the model. Absent git, a folder outside a
//! repository or a detached HEAD are recorded in [`GitInfo::state`], never errors.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub use relay_core::handoff::GitState;

/// How long one git command may run.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitInfo {
    pub repo_root: Option<String>,
    /// `None` on a detached HEAD or without a repository.
    pub branch: Option<String>,
    pub head: Option<String>,
    pub state: GitState,
}

enum Outcome {
    Ok(String),
    /// git ran and exited non-zero.
    Failed,
    /// git is not installed.
    Missing,
    /// Timed out or could not be waited for.
    Broken,
}

fn run_git(cwd: &Path, args: &[&str]) -> Outcome {
    let child = Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Outcome::Missing,
        Err(_) => return Outcome::Broken,
    };
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() < GIT_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Outcome::Broken;
            }
        }
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    if status.success() {
        Outcome::Ok(out.trim().to_string())
    } else {
        Outcome::Failed
    }
}

/// Repository root, branch and HEAD for `cwd`, via `git rev-parse --show-toplevel`,
/// `git symbolic-ref --short -q HEAD` and `git rev-parse HEAD`, each bounded by [`GIT_TIMEOUT`].
///
/// States: `NoGit` (git missing or `cwd` not in a repository), `Detached` (no branch), `Repo`,
/// `Unknown` (a command timed out or failed unexpectedly). A fresh repository without commits is
/// `Repo` with its branch and no HEAD.
pub fn git_state(cwd: &Path) -> GitInfo {
    let none = |state| GitInfo {
        repo_root: None,
        branch: None,
        head: None,
        state,
    };
    let root = match run_git(cwd, &["rev-parse", "--show-toplevel"]) {
        Outcome::Ok(r) if !r.is_empty() => r,
        Outcome::Ok(_) | Outcome::Failed | Outcome::Missing => return none(GitState::NoGit),
        Outcome::Broken => return none(GitState::Unknown),
    };
    let head = match run_git(cwd, &["rev-parse", "--verify", "-q", "HEAD"]) {
        Outcome::Ok(h) if !h.is_empty() => Some(h),
        _ => None,
    };
    let (branch, state) = match run_git(cwd, &["symbolic-ref", "--short", "-q", "HEAD"]) {
        Outcome::Ok(b) if !b.is_empty() => (Some(b), GitState::Repo),
        Outcome::Ok(_) | Outcome::Failed => (None, GitState::Detached),
        Outcome::Missing | Outcome::Broken => (None, GitState::Unknown),
    };
    GitInfo {
        repo_root: Some(root),
        branch,
        head,
        state,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::test_support::TempDir;

    fn git_available() -> bool {
        Command::new("git")
            .arg("--version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    }

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
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
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn outside_a_repository_is_no_git() {
        let t = TempDir::new("nogit");
        // GIT_CEILING_DIRECTORIES is not set here; the temp dir is normally not inside a repo.
        let info = git_state(&t.0);
        if info.state != GitState::NoGit {
            eprintln!("note: temp dir is inside a git repository ({info:?}); skipping");
            return;
        }
        assert_eq!((info.repo_root, info.branch, info.head), (None, None, None));
    }

    #[test]
    fn missing_folder_is_recorded_not_an_error() {
        let info = git_state(Path::new("/nonexistent/relay/for/sure"));
        assert!(matches!(info.state, GitState::NoGit | GitState::Unknown));
    }

    #[test]
    fn real_repository_branch_head_and_detached() {
        if !git_available() {
            eprintln!("note: git is not installed; skipping git assertions");
            return;
        }
        let t = TempDir::new("repo");
        git(&t.0, &["init", "-q", "-b", "trunk"]);
        let info = git_state(&t.0);
        assert_eq!(info.state, GitState::Repo);
        assert_eq!(info.branch.as_deref(), Some("trunk"));
        assert_eq!(info.head, None, "no commit yet");
        std::fs::write(t.0.join("f.txt"), "x").unwrap();
        git(&t.0, &["add", "f.txt"]);
        git(&t.0, &["commit", "-q", "-m", "one"]);
        let sub = t.0.join("sub");
        std::fs::create_dir(&sub).unwrap();
        let info = git_state(&sub);
        assert_eq!(info.state, GitState::Repo);
        let root = std::fs::canonicalize(&t.0).unwrap();
        assert_eq!(info.repo_root.as_deref(), Some(root.to_str().unwrap()));
        let head = info.head.clone().unwrap();
        assert_eq!(head.len(), 40);
        git(&t.0, &["checkout", "-q", "--detach"]);
        let info = git_state(&t.0);
        assert_eq!(info.state, GitState::Detached);
        assert_eq!(info.branch, None);
        assert_eq!(info.head.as_deref(), Some(head.as_str()));
    }
}
