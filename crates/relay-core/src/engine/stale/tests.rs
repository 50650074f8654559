//! The stale-handoff check in the engine: recorded by the handoff (sidecar and branch), due once
//! before the first answer of the window it opens, its record read back after a reload, its
//! message placed after the resume and watch checks.
use serde_json::json;

use super::super::wire::{Event, GitFacts, GuardState, Moment, Observation, HANDOFF_TYPE};
use super::*;
use crate::engine::tests::{assert_reload_keeps, engine_configured, moment_with, Branch};
use crate::entry::Entry;
use crate::handoff::GitState;
use crate::staleness::{compare, DirtySet, FileStamp, Stamp, WorkspaceNow};

const SID: &str = "01a2-stale-session";
const WIN2: &str = "pcw:01a2-stale-session:0000cafe";
const PATH: &str = "/work/project/.ai-work/handoffs/01a2-stale-session-1.md";
const HEAD: &str = "0123456789012345678901234567890123456789";

fn moment() -> Moment {
    moment_with(None, 200_000, GuardState::default())
}

fn enforcing() -> Engine {
    engine_configured(
        SID,
        json!({"budget": {"mode": "enforce",
        "main": {"soft": 20000, "handoff": 30000, "hard": 60000, "minProgress": 1000}}}),
    )
}

fn workspace() -> WorkspaceRecord {
    WorkspaceRecord {
        cwd: "/work/project".into(),
        repo_root: Some("/work/project".into()),
        git_state: GitState::Repo,
        branch: Some("trunk".into()),
        head: Some(HEAD.into()),
        dirty: DirtySet::Listed { files: Vec::new() },
        files: vec![FileStamp {
            path: "src/lib.rs".into(),
            stamp: Stamp::File {
                size: 3,
                mtime_ms: 1,
                hash: Some("ab".into()),
            },
        }],
    }
}

/// A window, a handoff record (with `workspace`), the compaction that committed it, the
/// continuation.
fn handoff_branch(b: &mut Branch, workspace: Option<&WorkspaceRecord>) -> Vec<Entry> {
    b.handoff_window(
        PATH,
        WIN2,
        Some(HEAD),
        workspace.map(|w| ("workspace", json!(w))),
    )
}

fn record_entry(b: &mut Branch, m: &Marker) -> Entry {
    b.entry(json!({"type":"custom","customType":m.custom_type,"data":m.data}))
}

/// The workspace now: HEAD moved by one commit, `src/lib.rs` gone.
fn changed_now() -> WorkspaceNow {
    WorkspaceNow {
        repo_root: Some("/work/project".into()),
        git_state: GitState::Repo,
        branch: Some("trunk".into()),
        head: Some("fedcba9876543210fedcba9876543210fedcba98".into()),
        ancestry: Some(crate::staleness::Ancestry::Descendant {
            commits: vec!["fedcba9 Remove lib.rs".into()],
            total: 1,
        }),
        dirty: DirtySet::Listed { files: Vec::new() },
        files: vec![FileStamp {
            path: "src/lib.rs".into(),
            stamp: Stamp::Missing,
        }],
    }
}

#[test]
fn the_handoff_records_the_workspace_in_its_sidecar_and_on_the_branch() {
    let mut e = enforcing();
    let args =
        json!({"goal": "ship", "next_step": "test", "facts": "f", "files_to_read": ["src/lib.rs"]});
    let parsed = e.handoff_begin(&args, &moment()).unwrap();
    let git = GitFacts {
        repo_root: Some("/work/project".into()),
        branch: Some("trunk".into()),
        head: Some(HEAD.into()),
        state: GitState::Repo,
        workspace: Some(workspace()),
    };
    let (md, sidecar, fp) = e
        .handoff_render(&parsed, &git, None, None, PATH, 1, &moment())
        .unwrap();
    assert_eq!(
        serde_json::to_value(&sidecar).unwrap()["workspace"],
        json!(workspace())
    );
    let reply = e.handoff_written(PATH, md, fp, &moment());
    let persist = reply.persist.unwrap();
    assert_eq!(persist.custom_type, HANDOFF_TYPE);
    assert_eq!(persist.data["workspace"], json!(workspace()));
    // Without the facts nothing is recorded (and the window it opens is not checked).
    let mut e = enforcing();
    let parsed = e.handoff_begin(&args, &moment()).unwrap();
    let git = GitFacts {
        workspace: None,
        ..git
    };
    let (md, sidecar, fp) = e
        .handoff_render(&parsed, &git, None, None, PATH, 1, &moment())
        .unwrap();
    assert!(sidecar.workspace.is_none());
    let persist = e.handoff_written(PATH, md, fp, &moment()).persist.unwrap();
    assert!(persist.data.get("workspace").is_none());
}

#[test]
fn due_once_before_the_first_answer_and_the_message_survives_a_reload() {
    let mut b = Branch::new();
    let entries = handoff_branch(&mut b, Some(&workspace()));
    let mut e = enforcing();
    e.resync(SID, &entries);
    assert!(e.stale_check_due());
    let (rec, window) = e.stale_check().unwrap();
    assert_eq!(rec, workspace());
    assert_eq!(window, WIN2);
    assert!(!e.stale_check_due(), "handed out once per window");
    assert_eq!(e.stale_check(), None);
    assert_eq!(
        e.stale_context(),
        None,
        "nothing until the record is on the branch"
    );
    let report = compare(&rec, &changed_now());
    let marker = stale_record(&window, 7, &report, false);
    let record = record_entry(&mut b, &marker);
    e.append(std::slice::from_ref(&record));
    let msg = e.stale_context().unwrap();
    assert_eq!(msg.index, 1, "right after the boot block");
    assert_eq!(msg.timestamp, 7);
    assert_eq!(msg.custom_type, STALE_CHECK_TYPE);
    insta::assert_snapshot!(msg.content);
    let mut all = entries.clone();
    all.push(record);
    let (context, due) = (Engine::stale_context, Engine::stale_check_due);
    assert_reload_keeps(enforcing(), SID, &all, msg, context, due);
}

#[test]
fn a_resumed_session_checks_a_window_that_never_answered_and_not_one_that_did() {
    let mut b = Branch::new();
    let entries = handoff_branch(&mut b, Some(&workspace()));
    // Pi restarted between the reset and the first request: the fresh engine checks.
    let mut resumed = enforcing();
    resumed.resync(SID, &entries);
    assert!(resumed.stale_check_due());
    // The window answered before the process ended: no check on resume.
    let mut answered = entries.clone();
    answered.push(b.entry(json!({"type":"message","message":{"role":"assistant",
        "content":[{"type":"text","text":"on it"}],"stopReason":"stop","usage":{"totalTokens":6000}}})));
    let mut e = enforcing();
    e.resync(SID, &answered);
    assert!(!e.stale_check_due());
}

#[test]
fn nothing_differed_records_the_check_and_shows_nothing() {
    let mut b = Branch::new();
    let entries = handoff_branch(&mut b, Some(&workspace()));
    let mut e = enforcing();
    e.resync(SID, &entries);
    let (rec, window) = e.stale_check().unwrap();
    let same = crate::staleness::tests::same(&rec);
    let marker = stale_record(&window, 7, &compare(&rec, &same), false);
    let mut all = entries.clone();
    all.push(record_entry(&mut b, &marker));
    let mut reloaded = enforcing();
    reloaded.resync(SID, &all);
    assert!(!reloaded.stale_check_due(), "the record says it ran");
    assert_eq!(reloaded.stale_context(), None);
}

#[test]
fn no_check_without_a_recorded_workspace_or_for_another_windows_record() {
    let mut b = Branch::new();
    let mut e = enforcing();
    e.resync(SID, &handoff_branch(&mut b, None));
    assert!(!e.stale_check_due(), "a handoff written without the facts");
    let mut b = Branch::new();
    let mut entries = handoff_branch(&mut b, Some(&workspace()));
    let other = stale_record(
        "pcw:elsewhere:00000000",
        5,
        &compare(&workspace(), &changed_now()),
        false,
    );
    entries.push(record_entry(&mut b, &other));
    let mut e = enforcing();
    e.resync(SID, &entries);
    assert!(
        e.stale_check_due(),
        "another window's record stands for nothing"
    );
    assert_eq!(e.stale_context(), None);
}

#[test]
fn the_message_follows_the_resume_and_watch_checks() {
    let mut b = Branch::new();
    let mut entries = handoff_branch(&mut b, Some(&workspace()));
    let resume = crate::engine::resume_record(
        WIN2,
        6,
        &crate::resume_check::CheckResult {
            command: "true".into(),
            source: "PI_RESUME_CHECK".into(),
            status: crate::resume_check::CheckStatus::Exited { code: 0 },
            output: crate::resume_check::CheckOutput {
                head: "ok\n".into(),
                tail: String::new(),
                skipped_bytes: 0,
                total_bytes: 3,
            },
            output_held_open: false,
        },
    );
    entries.push(record_entry(&mut b, &resume));
    let stale = stale_record(WIN2, 7, &compare(&workspace(), &changed_now()), false);
    entries.push(record_entry(&mut b, &stale));
    let mut e = enforcing();
    e.resync(SID, &entries);
    assert_eq!(e.resume_context().unwrap().index, 1);
    assert_eq!(e.stale_context().unwrap().index, 2);
}

#[test]
fn a_session_start_checks_a_checked_window_again_and_records_only_what_moved() {
    let mut b = Branch::new();
    let entries = handoff_branch(&mut b, Some(&workspace()));
    let mut first = enforcing();
    first.resync(SID, &entries);
    let (rec, window) = first.stale_check().unwrap();
    let then = compare(&rec, &changed_now());
    let mut all = entries.clone();
    all.push(record_entry(
        &mut b,
        &stale_record(&window, 7, &then, false),
    ));
    // The window answered, then the process ended.
    all.push(b.entry(json!({"type":"message","message":{"role":"assistant",
        "content":[{"type":"text","text":"on it"}],"stopReason":"stop","usage":{"totalTokens":6000}}})));
    let start = |e: &mut Engine| {
        e.observe(&Observation {
            moment: moment(),
            event: Event::SessionStart { run_active: false },
        });
    };

    let mut resumed = enforcing();
    resumed.resync(SID, &all);
    assert!(!resumed.stale_check_due(), "not before a session start");
    start(&mut resumed);
    assert!(resumed.stale_check_due(), "a session start checks again");
    let (again, same_window) = resumed.stale_check().unwrap();
    assert_eq!((again, same_window.as_str()), (rec.clone(), WIN2));
    assert!(!resumed.stale_check_due(), "once per session start");
    // What differs is what the last check found: nothing is recorded, the message stays.
    let before = resumed.stale_context();
    assert!(before.is_some());
    assert_eq!(resumed.stale_result(WIN2, 9, &then), None);

    // The workspace moved since: recorded as a re-check, whose message replaces the first.
    let mut moved_now = changed_now();
    moved_now.head = Some("9999999999999999999999999999999999999999".into());
    let moved = compare(&rec, &moved_now);
    assert_ne!(moved, then);
    let marker = resumed.stale_result(WIN2, 9, &moved).unwrap();
    assert_eq!(marker.data["recheck"], json!(true));
    resumed.append(&[record_entry(&mut b, &marker)]);
    let msg = resumed.stale_context().unwrap();
    assert_eq!(
        (msg.index, msg.timestamp),
        (1, 9),
        "same place, the re-check's time"
    );
    assert_ne!(Some(&msg), before.as_ref());
    insta::assert_snapshot!(msg.content);
    // Another session start with nothing moved since the re-check records nothing.
    start(&mut resumed);
    assert!(resumed.stale_check().is_some());
    assert_eq!(resumed.stale_result(WIN2, 11, &moved), None);
}
