//! The record and the comparison on real temporary git repositories (and a missing and a hanging
//! git), through relay-core's `compare`.

use super::*;
use crate::fsx::test_support::TempDir;
use crate::git::test_support::{fake_git, git, git_below, one_git_ran_and_died, soon};
use relay_core::handoff::GitState;
use relay_core::render::staleness::render_window_message;
use relay_core::staleness::{compare, Ancestry, GitDrift, StaleReport};
use std::process::Command;

/// A repository on branch `trunk` with two committed files and one commit, `b.txt` modified and
/// `new.txt` untracked.
fn repo(tag: &str) -> TempDir {
    let t = TempDir::new(tag);
    git(&t.0, &["init", "-q", "-b", "trunk"]);
    std::fs::write(t.0.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(t.0.join("b.txt"), "beta\n").unwrap();
    git(&t.0, &["add", "a.txt", "b.txt"]);
    git(&t.0, &["commit", "-q", "-m", "first"]);
    std::fs::write(t.0.join("b.txt"), "beta, edited\n").unwrap();
    std::fs::write(t.0.join("new.txt"), "untracked\n").unwrap();
    t
}

fn commit(dir: &Path, file: &str, text: &str, message: &str) {
    std::fs::write(dir.join(file), text).unwrap();
    git(dir, &["add", file]);
    git(dir, &["commit", "-q", "-m", message]);
}

fn files() -> Vec<String> {
    vec!["a.txt".into(), "b.txt".into(), "docs/missing.md".into()]
}

fn report(g: &Git, rec: &WorkspaceRecord) -> StaleReport {
    compare(rec, &g.workspace_now(rec, soon()))
}

#[test]
fn the_record_holds_head_branch_dirty_files_and_stamps() {
    let t = repo("ws-record");
    let g = git_below(&t.0);
    let (info, rec) = g.workspace_record(&t.0, &files(), soon());
    assert_eq!(info.state, GitState::Repo);
    assert_eq!(rec.branch.as_deref(), Some("trunk"));
    assert_eq!(rec.head, info.head);
    let DirtySet::Listed { files: dirty } = &rec.dirty else {
        panic!("{:?}", rec.dirty)
    };
    let listed: Vec<(&str, &str)> = dirty
        .iter()
        .map(|f| (f.status.as_str(), f.path.as_str()))
        .collect();
    assert_eq!(listed, vec![(" M", "b.txt"), ("??", "new.txt")]);
    assert!(dirty
        .iter()
        .all(|f| matches!(f.stamp, Stamp::File { hash: Some(_), .. })));
    assert!(matches!(
        rec.files[0].stamp,
        Stamp::File {
            size: 6,
            hash: Some(_),
            ..
        }
    ));
    assert_eq!(rec.files[2].stamp, Stamp::Missing);
    // Unchanged: nothing to say. Relay's own handoff files appearing are not a change.
    std::fs::create_dir_all(t.0.join(".ai-work/handoffs")).unwrap();
    std::fs::write(t.0.join(".ai-work/handoffs/s-1.md"), "# Handoff\n").unwrap();
    let r = report(&g, &rec);
    assert!(!r.says_something(), "{r:?}");
    assert_eq!(render_window_message(&r), None);
}

#[test]
fn commits_landed_a_file_changed_and_one_vanished() {
    let t = repo("ws-landed");
    let g = git_below(&t.0);
    let (_, rec) = g.workspace_record(&t.0, &files(), soon());
    commit(&t.0, "b.txt", "beta, committed\n", "second: b");
    commit(&t.0, "c.txt", "gamma\n", "third: c");
    std::fs::remove_file(t.0.join("a.txt")).unwrap();
    let r = report(&g, &rec);
    let GitDrift::Compared {
        root: None,
        branch: None,
        head: Some(head),
    } = &r.git
    else {
        panic!("{:?}", r.git)
    };
    let Some(Ancestry::Descendant { commits, total: 2 }) = &head.ancestry else {
        panic!("{head:?}")
    };
    assert!(commits[0].ends_with(" third: c"), "{commits:?}");
    assert!(commits[1].ends_with(" second: b"), "{commits:?}");
    assert_eq!(r.changed.items, vec!["b.txt".to_string()]);
    assert_eq!(r.vanished.items, vec!["a.txt".to_string()]);
    // b.txt was committed (clean now); a.txt's deletion is a new uncommitted change.
    assert_eq!(r.dirty.cleaned.items, vec!["b.txt".to_string()]);
    assert_eq!(r.dirty.added.items, vec!["a.txt".to_string()]);
    let text = render_window_message(&r).unwrap();
    assert!(
        text.contains("2 commit(s) landed since the handoff"),
        "{text}"
    );
}

#[test]
fn a_dirty_file_edited_further_and_a_touch_that_changes_nothing() {
    let t = repo("ws-further");
    let g = git_below(&t.0);
    let (_, rec) = g.workspace_record(&t.0, &files(), soon());
    // Rewriting a file with the same content (a new mtime) is no change: the hash decides.
    std::fs::write(t.0.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(t.0.join("b.txt"), "beta, edited twice\n").unwrap();
    let r = report(&g, &rec);
    assert_eq!(r.changed.items, vec!["b.txt".to_string()]);
    assert_eq!(r.dirty.changed.items, vec!["b.txt".to_string()]);
    assert!(
        r.dirty.cleaned.is_empty() && r.dirty.added.is_empty(),
        "{r:?}"
    );
    assert!(matches!(
        r.git,
        GitDrift::Compared {
            head: None,
            branch: None,
            ..
        }
    ));
}

#[test]
fn a_switched_branch_is_said() {
    let t = repo("ws-branch");
    let g = git_below(&t.0);
    let (_, rec) = g.workspace_record(&t.0, &[], soon());
    git(&t.0, &["checkout", "-q", "-b", "other"]);
    let r = report(&g, &rec);
    let GitDrift::Compared { branch, head, .. } = &r.git else {
        panic!("{:?}", r.git)
    };
    assert_eq!(
        branch,
        &Some((Some("trunk".to_string()), Some("other".to_string())))
    );
    assert_eq!(head, &None);
}

#[test]
fn a_rewritten_history_is_not_a_descendant() {
    let t = repo("ws-rewrite");
    let g = git_below(&t.0);
    commit(&t.0, "c.txt", "gamma\n", "second: c");
    let (_, rec) = g.workspace_record(&t.0, &[], soon());
    // Drop "second: c" and commit something else instead.
    git(&t.0, &["reset", "-q", "--hard", "HEAD~1"]);
    commit(&t.0, "d.txt", "delta\n", "replacement: d");
    let r = report(&g, &rec);
    let GitDrift::Compared {
        head: Some(head), ..
    } = &r.git
    else {
        panic!("{:?}", r.git)
    };
    let Some(Ancestry::Diverged {
        commits,
        total: 1,
        dropped: 1,
    }) = &head.ancestry
    else {
        panic!("{head:?}")
    };
    assert!(commits[0].ends_with(" replacement: d"), "{commits:?}");
    let text = render_window_message(&r).unwrap();
    assert!(text.contains("is not a descendant"), "{text}");
}

#[test]
fn a_recorded_head_the_repository_does_not_have() {
    let t = repo("ws-unknown");
    let g = git_below(&t.0);
    let (_, mut rec) = g.workspace_record(&t.0, &[], soon());
    let ancestry = |rec: &WorkspaceRecord| {
        let r = report(&g, rec);
        let GitDrift::Compared {
            head: Some(head), ..
        } = &r.git
        else {
            panic!("{:?}", r.git)
        };
        head.ancestry.clone()
    };
    rec.head = Some("0123456789abcdef0123456789abcdef01234567".into());
    assert_eq!(ancestry(&rec), Some(Ancestry::UnknownCommit));
    // A recorded value that is not a commit id never reaches git as an argument.
    rec.head = Some("--output=/tmp/x".into());
    assert_eq!(ancestry(&rec), Some(Ancestry::UnknownCommit));
}

#[test]
fn no_git_on_path_is_unavailable_and_the_files_are_still_compared() {
    let t = repo("ws-nogit");
    let (_, rec) = git_below(&t.0).workspace_record(&t.0, &files(), soon());
    std::fs::write(t.0.join("a.txt"), "alpha, changed\n").unwrap();
    let absent = Git {
        program: t.0.join("no-such-git").into_os_string(),
        env: Vec::new(),
    };
    let now = absent.workspace_now(&rec, soon());
    assert_eq!(now.git_state, GitState::NoGit);
    assert_eq!(now.dirty, DirtySet::Unavailable);
    let r = compare(&rec, &now);
    assert_eq!(r.git, GitDrift::Unavailable);
    assert_eq!(r.changed.items, vec!["a.txt".to_string()]);
    assert_eq!(r.dirty.not_compared.as_deref(), Some("unavailable"));
    let text = render_window_message(&r).unwrap();
    assert!(text.contains("git cannot tell now"), "{text}");
    // The handoff's folder outside any repository: git is unavailable the same way.
    let plain = TempDir::new("ws-plain");
    let (info, rec) = git_below(&plain.0).workspace_record(&plain.0, &[], soon());
    assert_eq!(info.state, GitState::NoGit);
    assert_eq!(rec.dirty, DirtySet::Unavailable);
    assert!(!report(&git_below(&plain.0), &rec).says_something());
}

#[test]
fn a_hanging_git_is_killed_at_the_one_deadline_and_the_result_is_unavailable() {
    let t = repo("ws-hang");
    let (_, rec) = git_below(&t.0).workspace_record(&t.0, &files(), soon());
    let (hanging, pids) = fake_git(&t, "wait");
    // A handoff that recorded no repository runs no git at the resume (its files are compared).
    let mut no_repo = rec.clone();
    no_repo.git_state = GitState::Unknown;
    let now = hanging.workspace_now(&no_repo, soon());
    assert!(!pids.exists(), "no git ran");
    assert_eq!(compare(&no_repo, &now).git, GitDrift::NotRecorded);
    let started = Instant::now();
    let now = hanging.workspace_now(&rec, started + Duration::from_millis(400));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(now.git_state, GitState::Unknown);
    let r = compare(&rec, &now);
    assert_eq!(r.git, GitDrift::Unavailable);
    // The files were stamped before git ran: unchanged, so only git is said.
    assert!(r.changed.is_empty() && r.vanished.is_empty(), "{r:?}");
    one_git_ran_and_died(&pids);
}

#[test]
fn a_fifo_is_stamped_without_being_opened_and_a_passed_deadline_stamps_unknown() {
    let t = TempDir::new("ws-fifo");
    let fifo = t.0.join("pipe");
    let ok = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(ok.success());
    assert!(matches!(
        stamp(&fifo, soon()),
        Stamp::File { hash: None, .. }
    ));
    std::fs::write(t.0.join("f"), "x").unwrap();
    assert_eq!(stamp(&t.0.join("f"), Instant::now()), Stamp::Unknown);
    assert_eq!(stamp(&t.0.join("f/under-a-file"), soon()), Stamp::Missing);
    assert_eq!(stamp(&t.0, soon()), Stamp::Dir);
}
