//! The optional integrations in the engine: the watch check of a window opened by a handoff, and
//! the shared context guard (effective off, Pi's compaction passed through, the threshold log).
use serde_json::json;

use super::super::wire::{
    Effect, Event, GuardState, HookReply, HookResult, Moment, Observation, Usage,
};
use super::*;
use crate::engine::tests::{
    assert_reload_keeps, engine_configured, events_named, moment_with, turn_end, Branch,
};
use crate::entry::Entry;

const SID: &str = "01a2-watch-session";
const WIN2: &str = "pcw:01a2-watch-session:0000beef";
const PATH: &str = "/work/project/.ai-work/handoffs/01a2-watch-session-1.md";

fn moment(tokens: Option<u64>, guard: GuardState) -> Moment {
    let usage = tokens.map(|t| Usage {
        tokens: Some(t),
        context_window: 200_000,
    });
    moment_with(usage, 200_000, guard)
}

fn engine_with(budget: Value) -> Engine {
    engine_configured(SID, json!({ "budget": budget }))
}

fn enforcing() -> Engine {
    engine_with(json!({"mode": "enforce",
        "main": {"soft": 20000, "handoff": 30000, "hard": 60000, "minProgress": 1000}}))
}

/// A window, a handoff record listing `jobs`, the compaction that committed it, the continuation.
fn handoff_branch(jobs: Option<Value>) -> Vec<Entry> {
    Branch::new().handoff_window(PATH, WIN2, None, jobs.map(|j| ("jobs", j)))
}

fn recorded() -> Value {
    json!([{"id": "w1", "label": "ci", "command": "gh run watch 77"},
           {"id": "j1", "command": "cargo build"}])
}

fn marker_entry(m: &super::super::wire::Marker) -> Entry {
    let v = json!({"type":"custom","customType":m.custom_type,"data":m.data,
        "id":"ffff0001","parentId":"00000004","timestamp":"2025-11-29T21:00:01.000Z"});
    crate::entry::parse_entry(&v.to_string()).unwrap()
}

#[test]
fn a_gone_watch_is_listed_on_every_request_of_the_new_window_and_survives_a_reload() {
    let mut e = enforcing();
    e.resync(SID, &handoff_branch(Some(recorded())));
    assert!(e.watch_check_due());
    let live = vec![json!({"id": "j1", "status": "running"})];
    let marker = e.watch_check(Some(&live), 5).unwrap();
    assert_eq!(marker.custom_type, WATCH_CHECK_TYPE);
    assert!(!e.watch_check_due(), "once per window");
    assert_eq!(
        e.watch_context(),
        None,
        "nothing until the record is on the branch"
    );
    let mut entries = handoff_branch(Some(recorded()));
    entries.push(marker_entry(&marker));
    e.resync(SID, &entries);
    let msg = e.watch_context().unwrap();
    assert_eq!(msg.index, 1, "right after the boot block");
    assert_eq!(msg.timestamp, 5);
    insta::assert_snapshot!(msg.content);
    let (context, due) = (Engine::watch_context, Engine::watch_check_due);
    assert_reload_keeps(enforcing(), SID, &entries, msg, context, due);
}

#[test]
fn nothing_is_shown_when_all_recorded_work_is_live_or_the_registry_is_absent() {
    for live in [
        Some(vec![
            json!({"id": "j1"}),
            json!({"id": "w1", "status": "waiting"}),
        ]),
        None,
    ] {
        let mut e = enforcing();
        e.resync(SID, &handoff_branch(Some(recorded())));
        assert_eq!(e.watch_check(live.as_deref(), 5), None);
        assert!(
            !e.watch_check_due(),
            "checked: not asked again in this window"
        );
        assert_eq!(e.watch_context(), None);
    }
    // A handoff written without a registry records nothing to check.
    let mut e = enforcing();
    e.resync(SID, &handoff_branch(None));
    assert!(!e.watch_check_due());
}

fn handle(e: &mut Engine, event: Event, tokens: Option<u64>, guard: GuardState) -> HookReply {
    e.observe(&Observation {
        moment: moment(tokens, guard),
        event,
    })
}

/// Pi's compaction hook (`reason`, retried or not) at 10k tokens with the guard `guard`.
fn compact_at_10k(e: &mut Engine, reason: &str, will_retry: bool, guard: GuardState) -> HookReply {
    let event = Event::SessionBeforeCompact {
        reason: reason.into(),
        will_retry,
        custom_instructions: None,
    };
    handle(e, event, Some(10_000), guard)
}

fn status_text(reply: &HookReply) -> String {
    reply
        .effects
        .iter()
        .find_map(|fx| match fx {
            Effect::Status { text } => text.clone(),
            _ => None,
        })
        .unwrap()
}

#[test]
fn the_context_guard_off_makes_enforce_effectively_off_and_the_footer_says_why() {
    let mut e = enforcing();
    let on = handle(&mut e, Event::Context, None, GuardState::On);
    assert!(
        !status_text(&on).contains("effective"),
        "{}",
        status_text(&on)
    );
    let off = handle(&mut e, Event::Context, None, GuardState::Off);
    let footer = status_text(&off);
    assert!(
        footer.ends_with("configured enforce, effective off (context guard off)"),
        "{footer}"
    );
    assert_eq!(e.budget_mode().effective, crate::policy::Mode::Off);
    // Past the thresholds the policy does nothing while the guard is off...
    let call = Event::ToolCall {
        tool_name: "bash".into(),
        tool_call_id: "c1".into(),
    };
    let reply = handle(&mut e, call.clone(), Some(40_000), GuardState::Off);
    assert_eq!(reply.result, None);
    assert!(
        events_named(&reply, "threshold_crossed").is_empty(),
        "{reply:?}"
    );
    // ...and, consulted live, enforces again once the guard is back on.
    let reply = handle(&mut e, call, Some(40_000), GuardState::On);
    assert_eq!(
        events_named(&reply, "threshold_crossed").len(),
        1,
        "{reply:?}"
    );
    assert_eq!(e.budget_mode().effective, crate::policy::Mode::Enforce);
}

#[test]
fn guard_off_passes_pis_compaction_through_but_keeps_overflow_recovery() {
    for reason in ["manual", "threshold"] {
        let mut e = enforcing();
        let reply = compact_at_10k(&mut e, reason, false, GuardState::Off);
        assert_eq!(reply.result, None, "{reason}: Pi's own compaction runs");
    }
    let mut e = enforcing();
    let reply = compact_at_10k(&mut e, "overflow", true, GuardState::Off);
    assert!(
        matches!(reply.result, Some(HookResult::Reset { .. })),
        "overflow recovery stays: {reply:?}"
    );
    // With the guard on, a threshold compaction is Relay's reset as before.
    let mut e = enforcing();
    let reply = compact_at_10k(&mut e, "manual", false, GuardState::On);
    assert!(matches!(reply.result, Some(HookResult::Reset { .. })));
}

#[test]
fn guard_off_threshold_is_logged_once_per_crossing_and_re_armed_below() {
    let mut e = enforcing();
    let call = |id: &str| Event::ToolCall {
        tool_name: "bash".into(),
        tool_call_id: id.into(),
    };
    let mut seen = Vec::new();
    for (i, tokens) in [10_000, 35_000, 36_000, 70_000, 71_000, 20_000, 31_000]
        .into_iter()
        .enumerate()
    {
        let reply = handle(
            &mut e,
            call(&format!("c{i}")),
            Some(tokens),
            GuardState::Off,
        );
        for ev in events_named(&reply, "guard_off_threshold") {
            seen.push((tokens, ev["threshold"].as_str().unwrap().to_string()));
        }
    }
    assert_eq!(
        seen,
        [
            (35_000, "handoff".to_string()),
            (70_000, "hard".to_string()),
            (31_000, "handoff".to_string())
        ]
    );
    // An explicit mode "off" stays silent.
    let mut e = engine_with(json!({"mode": "off"}));
    let reply = handle(&mut e, call("x"), Some(90_000), GuardState::Off);
    assert!(events_named(&reply, "guard_off_threshold").is_empty());
}

#[test]
fn guard_off_skips_the_resume_checks() {
    let mut e = engine_with(json!({"mode": "enforce", "resumeChecks": {"c": "true"}}));
    let facts = super::super::wire::ResumeFacts {
        env: Some("echo hi".into()),
        session_name: None,
    };
    let args = json!({"goal": "g", "next_step": "n", "facts": "f"});
    let on = moment(None, GuardState::On);
    assert!(e.handoff_resume_command(&args, &on, None, &facts).is_some());
    let off = moment(None, GuardState::Off);
    assert!(e
        .handoff_resume_command(&args, &off, None, &facts)
        .is_none());
}

/// This session's pending pi-jobs work at the settle point of a large context asks for the idle
/// handoff, as the host's pending-work count does; finished jobs and other sessions' do not.
#[test]
fn pending_jobs_ask_for_the_idle_handoff() {
    let settle = |jobs: Option<Vec<Value>>| {
        let mut e = engine_with(json!({"mode": "enforce", "idleMinTokens": 10000,
            "main": {"soft": 20000, "handoff": 30000, "hard": 60000, "minProgress": 1000}}));
        let mut b = Branch::new();
        e.append(&[b.entry(json!({"type":"message","message":{"role":"user","content":"go"}}))]);
        handle(
            &mut e,
            Event::BeforeAgentStart,
            None,
            GuardState::Unavailable,
        );
        e.append(&[b.entry(json!({"type":"message","message":{"role":"assistant",
            "content":[{"type":"text","text":"waiting"}],"stopReason":"stop","usage":{"totalTokens":15000}}}))]);
        handle(&mut e, turn_end(), Some(15_000), GuardState::Unavailable);
        handle(
            &mut e,
            Event::AgentBeforeSettle {
                chained: false,
                outcome: None,
                jobs,
            },
            Some(15_000),
            GuardState::Unavailable,
        )
        .result
    };
    let running = json!({"id": "w1", "kind": "watch", "status": "waiting"});
    assert!(
        matches!(
            settle(Some(vec![running])),
            Some(HookResult::Continue { .. })
        ),
        "a pending watch is pending work"
    );
    let done = json!({"id": "j1", "status": "completed"});
    let other = json!({"id": "j2", "status": "running", "sessionId": "someone-else"});
    assert_eq!(settle(Some(vec![done, other])), None);
    assert_eq!(settle(None), None, "no registry: no pending jobs");
}
