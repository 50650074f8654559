//! Resume checks in the engine: where the command comes from, when it runs, what the model sees.
use serde_json::json;

use super::super::wire::{Event, GitFacts, Observation, ResumeFacts, CONTINUE_TYPE, HANDOFF_TYPE};
use super::*;
use crate::entry::Entry;
use crate::handoff::{GitState, HandoffFingerprint};
use crate::notes::NOTE_CUSTOM_TYPE;
use crate::resume_check::{CheckOutput, CheckStatus};

const SID: &str = "01a2-resume-session";
const WIN2: &str = "pcw:01a2-resume-session:0000beef";
const PATH: &str = "/work/project/.ai-work/handoffs/01a2-resume-session-1.md";

fn moment() -> Moment {
    moment_with(None, 100_000, crate::engine::GuardState::Unavailable)
}

fn engine_with(budget: Value) -> Engine {
    engine_configured(SID, json!({ "budget": budget }))
}

fn enforcing() -> Engine {
    engine_with(json!({"mode": "enforce", "resumeChecks": {"coordinator": "bash /opt/check.sh"}}))
}

fn facts(env: Option<&str>, name: Option<&str>) -> ResumeFacts {
    ResumeFacts {
        env: env.map(str::to_string),
        session_name: name.map(str::to_string),
    }
}

fn args() -> Value {
    json!({"goal": "ship it", "next_step": "run the tests", "facts": "tests pass at HEAD"})
}

use crate::engine::tests::{assert_reload_keeps, engine_configured, moment_with, Branch};

fn result(code: i32, out: &str) -> CheckResult {
    CheckResult {
        command: "bash /opt/check.sh".into(),
        source: "resumeChecks[\"coordinator\"]".into(),
        status: CheckStatus::Exited { code },
        output: CheckOutput {
            head: out.into(),
            tail: String::new(),
            skipped_bytes: 0,
            total_bytes: out.len() as u64,
        },
        output_held_open: false,
    }
}

/// A window, a written handoff, and the compaction that committed it (`handoff: true`), or a
/// plain `new_context` reset; then the hidden continuation.
fn reset_branch(handoff: bool) -> (Branch, Vec<Entry>) {
    let mut b = Branch::new();
    let fp = HandoffFingerprint {
        at_ms: 1,
        head: None,
        text: "x".into(),
    };
    let mut entries = vec![
        b.entry(json!({"type":"message","message":{"role":"user","content":"go"}})),
        b.entry(json!({"type":"message","message":{"role":"assistant",
            "content":[{"type":"text","text":"working"}],"stopReason":"stop","usage":{"totalTokens":5000}}})),
    ];
    if handoff {
        entries.push(b.entry(json!({"type":"custom","customType":HANDOFF_TYPE,
            "data":{"path":PATH,"fingerprint":fp.to_value()}})));
    }
    entries.push(b.entry(json!({"type":"compaction","summary":"<context_window>…</context_window>",
        "firstKeptEntryId":null,"tokensBefore":1,
        "details":{"relay":"window","windowId":WIN2,"attempt":1,"source":if handoff {"handoff"} else {"new_context"},
            "handoffPath": if handoff { json!(PATH) } else { Value::Null }}})));
    entries.push(b.entry(json!({"type":"custom_message","customType":CONTINUE_TYPE,"content":"Continue.","display":false})));
    (b, entries)
}

#[test]
fn the_env_value_wins_then_the_exact_session_name_else_off() {
    let e = enforcing();
    let c = e
        .resume_command(&facts(Some("echo env"), Some("coordinator")))
        .unwrap();
    assert_eq!(
        (c.command.as_str(), c.source.as_str()),
        ("echo env", "PI_RESUME_CHECK")
    );
    for empty in ["", "   "] {
        let c = e
            .resume_command(&facts(Some(empty), Some("coordinator")))
            .unwrap();
        assert_eq!(
            (c.command.as_str(), c.source.as_str()),
            ("bash /opt/check.sh", "resumeChecks[\"coordinator\"]"),
            "an empty env value does not count"
        );
    }
    assert_eq!(
        e.resume_command(&facts(None, Some("Coordinator"))),
        None,
        "exact name"
    );
    assert_eq!(e.resume_command(&facts(None, Some("other"))), None);
    assert_eq!(e.resume_command(&facts(None, None)), None);
}

#[test]
fn only_an_enforcing_main_session_runs_the_check_before_a_handoff() {
    let f = facts(None, Some("coordinator"));
    let m = moment();
    let mut e = enforcing();
    assert_eq!(
        e.handoff_resume_command(&args(), &m, None, &f)
            .map(|c| c.command),
        Some("bash /opt/check.sh".into())
    );
    let sub = Moment {
        subagent: true,
        ..moment()
    };
    assert_eq!(
        e.handoff_resume_command(&args(), &sub, None, &f),
        None,
        "subagent"
    );
    let mut observe = engine_with(
        json!({"mode": "observe", "resumeChecks": {"coordinator": "bash /opt/check.sh"}}),
    );
    assert_eq!(
        observe.handoff_resume_command(&args(), &m, None, &f),
        None,
        "observe"
    );
    let mut elsewhere = engine_with(
        json!({"mode": "enforce", "enforceCwds": ["/somewhere/else"],
        "resumeChecks": {"coordinator": "bash /opt/check.sh"}}),
    );
    assert_eq!(
        elsewhere.handoff_resume_command(&args(), &m, None, &f),
        None,
        "enforceCwds"
    );
    e.observe(&Observation {
        moment: moment(),
        event: Event::Command { args: "off".into() },
    });
    assert_eq!(
        e.handoff_resume_command(&args(), &m, None, &f),
        None,
        "/relay off"
    );
}

#[test]
fn no_tool_argument_note_or_handoff_sets_the_command() {
    // Nothing configured: a note and handoff arguments named like the setting change nothing.
    let mut e = engine_with(json!({"mode": "enforce"}));
    let mut b = Branch::new();
    for (path, content) in [
        ("PI_RESUME_CHECK", "touch /tmp/pwned"),
        ("resumeChecks", "touch /tmp/pwned"),
    ] {
        let reply = e.tool(
            "notes_write_file",
            &json!({"path": path, "content": content}),
            &moment(),
        );
        let op = reply.persist.unwrap();
        assert_eq!(op.custom_type, NOTE_CUSTOM_TYPE);
        e.append(&[b.entry(json!({"type":"custom","customType":op.custom_type,"data":op.data}))]);
    }
    assert_eq!(e.notes().len(), 2, "the notes exist");
    let f = facts(None, Some("coordinator"));
    let m = moment();
    assert_eq!(e.handoff_resume_command(&args(), &m, None, &f), None);
    let mut sneaky = args();
    sneaky["PI_RESUME_CHECK"] = json!("touch /tmp/pwned");
    assert_eq!(e.handoff_resume_command(&sneaky, &m, None, &f), None);
    let mut sneaky = args();
    sneaky["facts"] = json!("resumeChecks: {\"coordinator\": \"touch /tmp/pwned\"}");
    assert_eq!(e.handoff_resume_command(&sneaky, &m, None, &f), None);
    // Configured: such an argument makes the handoff invalid (nothing is written, nothing runs),
    // and a valid handoff runs the operator's command, whatever it says.
    let mut e = enforcing();
    let mut sneaky = args();
    sneaky["resume_check"] = json!("touch /tmp/pwned");
    assert_eq!(e.handoff_resume_command(&sneaky, &m, None, &f), None);
    let mut said = args();
    said["next_step"] = json!("PI_RESUME_CHECK='touch /tmp/pwned'");
    assert_eq!(
        e.handoff_resume_command(&said, &m, None, &f)
            .map(|c| c.command),
        Some("bash /opt/check.sh".into())
    );
}

#[test]
fn after_a_committed_handoff_the_check_is_due_once_and_its_result_stays_with_the_window() {
    let mut e = enforcing();
    let (mut b, entries) = reset_branch(true);
    e.append(&entries);
    assert_eq!(e.history().current_window_id(), WIN2);
    let f = facts(None, Some("coordinator"));
    assert!(e.resume_check_due());
    assert_eq!(e.resume_context(), None, "nothing before it ran");
    let (cmd, window) = e.reset_resume_command(&moment(), &f).unwrap();
    assert_eq!(
        (cmd.command.as_str(), window.as_str()),
        ("bash /opt/check.sh", WIN2)
    );
    assert!(!e.resume_check_due(), "handed out once");
    assert_eq!(e.reset_resume_command(&moment(), &f), None);
    let record = resume_record(
        &window,
        1_764_450_001_000,
        &result(2, "2 uncommitted files\n"),
    );
    let record_entry =
        b.entry(json!({"type":"custom","customType":record.custom_type,"data":record.data}));
    e.append(std::slice::from_ref(&record_entry));
    let ctx = e.resume_context().unwrap();
    assert_eq!((ctx.index, ctx.timestamp), (1, 1_764_450_001_000));
    assert_eq!(ctx.custom_type, RESUME_CHECK_TYPE);
    insta::assert_snapshot!(ctx.content);
    // Every request of the window carries the same message; a reload rebuilds it.
    let answer = b.entry(json!({"type":"message","message":{"role":"assistant",
        "content":[{"type":"text","text":"resumed"}],"stopReason":"stop","usage":{"totalTokens":6000}}}));
    e.append(std::slice::from_ref(&answer));
    assert_eq!(e.resume_context().as_ref(), Some(&ctx));
    let mut all = entries.clone();
    all.extend([record_entry, answer]);
    let (context, due) = (Engine::resume_context, Engine::resume_check_due);
    assert_reload_keeps(enforcing(), SID, &all, ctx, context, due);
    // The next reset ends it.
    let next = b.entry(json!({"type":"compaction","summary":"s","firstKeptEntryId":null,"tokensBefore":1,
        "details":{"relay":"window","windowId":"pcw:01a2-resume-session:0000c0de","attempt":2,"source":"new_context"}}));
    e.append(&[next]);
    assert_eq!(e.resume_context(), None);
    assert!(!e.resume_check_due(), "a new_context window has no check");
}

#[test]
fn no_check_after_a_plain_reset_once_answered_or_when_not_enforcing() {
    let (mut b, entries) = reset_branch(false);
    let mut e = enforcing();
    e.append(&entries);
    assert!(!e.resume_check_due(), "new_context is not a handoff");
    let (mut b2, entries) = reset_branch(true);
    let mut observe = engine_with(
        json!({"mode": "observe", "resumeChecks": {"coordinator": "bash /opt/check.sh"}}),
    );
    observe.append(&entries);
    assert!(!observe.resume_check_due(), "observe");
    let mut e = enforcing();
    e.append(&entries);
    assert!(e.resume_check_due());
    let sub = Moment {
        subagent: true,
        ..moment()
    };
    assert_eq!(
        e.reset_resume_command(&sub, &facts(Some("x"), None)),
        None,
        "subagent"
    );
    assert_eq!(
        e.reset_resume_command(&moment(), &facts(None, None)),
        None,
        "no command configured for this session"
    );
    e.append(&[b2.entry(json!({"type":"message","message":{"role":"assistant",
        "content":[{"type":"text","text":"resumed"}],"stopReason":"stop","usage":{"totalTokens":6000}}}))]);
    assert!(
        !e.resume_check_due(),
        "only before the window's first reply"
    );
    // A record of another window stands for nothing.
    let record = resume_record("pcw:elsewhere:00000000", 5, &result(0, "ok\n"));
    let mut e = enforcing();
    let (_, entries) = reset_branch(true);
    e.append(&entries);
    e.append(&[
        b.entry(json!({"type":"custom","customType":record.custom_type,"data":record.data}))
    ]);
    assert_eq!(e.resume_context(), None);
}

#[test]
fn the_handoff_carries_its_resume_check_section() {
    let mut e = enforcing();
    let parsed = e.handoff_begin(&args(), &moment()).unwrap();
    let git = GitFacts {
        repo_root: Some("/work/project".into()),
        branch: Some("trunk".into()),
        head: Some("0123456789012345678901234567890123456789".into()),
        state: GitState::Repo,
        workspace: None,
    };
    let check = result(1, "tests: 1 failed\n");
    let (md, sidecar, _) = e
        .handoff_render(&parsed, &git, Some(&check), None, PATH, 1, &moment())
        .unwrap();
    let section = md.split("## Resume check").nth(1).unwrap();
    insta::assert_snapshot!(section);
    assert_eq!(
        serde_json::to_value(&sidecar).unwrap()["resumeCheck"],
        json!(check)
    );
    let (plain, sidecar, _) = e
        .handoff_render(&parsed, &git, None, None, PATH, 1, &moment())
        .unwrap();
    assert!(!plain.contains("## Resume check") && sidecar.resume_check.is_none());
    // A failing, flooding check still fits the handoff's budget, and the handoff is written.
    let mut big = result(0, &"x".repeat(4096));
    big.output.tail = "y".repeat(4096);
    big.output.skipped_bytes = 10_000_000;
    big.output.total_bytes = 10_008_192;
    let (md, _, _) = e
        .handoff_render(&parsed, &git, Some(&big), None, PATH, 1, &moment())
        .unwrap();
    let section = md.split("## Resume check\n\n").nth(1).unwrap();
    assert!(section.trim_end().len() <= 4096, "{}", section.len());
    assert!(section.contains("cut to fit"));
}

#[test]
fn no_check_for_a_handoff_the_duplicate_back_off_refuses() {
    // The committed handoff's fingerprint: same HEAD, same text, a minute ago.
    let mut b = Branch::new();
    let parsed = HandoffArgs::parse(&args()).unwrap();
    let fp = HandoffFingerprint::new(&parsed, moment().now_ms - 60_000, Some("abc"));
    let entries = vec![
        b.entry(json!({"type":"message","message":{"role":"user","content":"go"}})),
        b.entry(json!({"type":"custom","customType":HANDOFF_TYPE,"data":{"path":PATH,"fingerprint":fp.to_value()}})),
        b.entry(json!({"type":"compaction","summary":"s","firstKeptEntryId":null,"tokensBefore":1,
            "details":{"relay":"window","windowId":WIN2,"attempt":1,"source":"handoff","handoffPath":PATH}})),
    ];
    let mut e = enforcing();
    e.append(&entries);
    let f = facts(Some("echo check"), None);
    assert_eq!(
        e.handoff_resume_command(&args(), &moment(), Some("abc"), &f),
        None,
        "refused: nothing runs"
    );
    assert!(
        e.handoff_resume_command(&args(), &moment(), Some("def"), &f)
            .is_some(),
        "HEAD moved: the handoff is written, the check runs"
    );
}
