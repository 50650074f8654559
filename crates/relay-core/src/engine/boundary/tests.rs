//! Which boundary hooks the engine asks for: none in a quiet window, both near a level, after a
//! message that crosses one, in a window that is unknown, while a reset is pending, and the
//! settle point while the window may still be continued; a turn end not sent is counted once.
use serde_json::{json, Value};

use super::super::tests::{moment_with, turn_end, Branch};
use super::super::wire::{ConfigSources, Observation};
use super::*;
use crate::engine::GuardState;

const SID: &str = "01a2-boundary-session";
const WINDOW: u64 = 200_000;

fn engine() -> Engine {
    engine_with(None)
}

/// An engine whose settings hold `relay` (when given).
fn engine_with(relay: Option<Value>) -> Engine {
    let mut e = Engine::new();
    let sources = ConfigSources {
        cwd: Some("/work/project".into()),
        global: relay.map(|r| json!({ "relay": r })),
        ..ConfigSources::default()
    };
    assert!(e.configure(&sources).is_empty());
    let mut b = Branch::new();
    let entries = vec![
        b.entry(json!({"type":"message","message":{"role":"user","content":"Fix the loader."}})),
        b.entry(json!({"type":"message","message":{"role":"assistant",
            "content":[{"type":"text","text":"Looking."}],"stopReason":"stop","usage":{"totalTokens":5000}}})),
    ];
    e.resync(SID, &entries);
    e
}

fn observe(e: &mut Engine, window: u64, event: Event) -> BoundaryHooks {
    e.observe(&Observation {
        moment: moment_with(None, window, GuardState::Unavailable),
        event,
    });
    e.boundary
}

fn answer(tokens: u64) -> Event {
    Event::MessageEnd {
        message: json!({"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read",
            "arguments":{"path":"a.rs"}}],"stopReason":"toolUse","usage":{"totalTokens":tokens}}),
    }
}

fn result(text: &str) -> Event {
    Event::MessageEnd {
        message: json!({"role":"toolResult","toolCallId":"c1","toolName":"read",
            "content":[{"type":"text","text":text}],"isError":false}),
    }
}

const QUIET: BoundaryHooks = BoundaryHooks {
    turn_end: false,
    settle: false,
};
const BOTH: BoundaryHooks = BoundaryHooks {
    turn_end: true,
    settle: true,
};

/// The lowest level a boundary decision reads in this engine's window, margin included.
fn level(e: &Engine) -> u64 {
    e.lowest_level(&moment_with(None, WINDOW, GuardState::Unavailable), false)
        .expect("a known window has a level")
}

#[test]
fn a_fresh_engine_needs_both_hooks() {
    assert_eq!(Engine::new().boundary, BOTH);
}

#[test]
fn a_quiet_window_needs_neither_hook_and_the_level_needs_turn_end() {
    let mut e = engine();
    assert_eq!(observe(&mut e, WINDOW, answer(6_000)), QUIET);
    let level = level(&e);
    assert!(level > 6_000 && level < WINDOW, "{level}");
    // An answer whose usage reaches the level (less the margin): the turn end decides.
    assert_eq!(observe(&mut e, WINDOW, answer(level)), BOTH);
    assert_eq!(observe(&mut e, WINDOW, answer(level - 1)), QUIET);
}

#[test]
fn a_runs_last_answer_is_judged_at_its_turn_end_however_low_its_usage() {
    let mut e = engine();
    assert_eq!(observe(&mut e, WINDOW, answer(6_000)), QUIET);
    let last = Event::MessageEnd {
        message: json!({"role":"assistant","content":[{"type":"text","text":"Done."}],
            "stopReason":"stop","usage":{"totalTokens":6_100}}),
    };
    assert_eq!(
        observe(&mut e, WINDOW, last),
        BoundaryHooks {
            turn_end: true,
            settle: false
        }
    );
}

#[test]
fn the_clearing_trigger_is_a_level_only_while_clearing_is_on() {
    let on = engine_with(Some(json!({"clearToolResults": {"triggerTokens": 30_000}})));
    let off = engine_with(Some(
        json!({"clearToolResults": {"triggerTokens": 30_000, "enabled": false}}),
    ));
    assert_eq!(level(&on), 30_000 - margin_tokens(WINDOW));
    assert!(level(&off) > 30_000, "{}", level(&off));
}

#[test]
fn idle_min_tokens_is_a_level_of_the_settle_point_only() {
    let mut e = engine_with(Some(json!({"budget": {"idleMinTokens": 20_000}})));
    // Below every turn-end level, above the idle request's (less the margin): the settle point
    // may ask for the idle handoff, a turn end has nothing to decide.
    assert_eq!(
        observe(&mut e, WINDOW, answer(30_000)),
        BoundaryHooks {
            turn_end: false,
            settle: true
        }
    );
    assert_eq!(observe(&mut e, WINDOW, answer(6_000)), QUIET);
}

#[test]
fn a_tool_result_that_reaches_the_level_asks_for_the_turn_end_before_pi_appends_it() {
    let mut e = engine();
    let below = level(&e) - 1_000;
    assert_eq!(observe(&mut e, WINDOW, answer(below)), QUIET);
    // Pi appends the answer after its `message_end`; the next hook's feed brings it.
    let mut b = Branch::new();
    let entries = vec![
        b.entry(json!({"type":"message","message":{"role":"user","content":"Fix the loader."}})),
        b.entry(json!({"type":"message","message":{"role":"assistant",
            "content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.rs"}}],
            "stopReason":"toolUse","usage":{"totalTokens":below}}})),
    ];
    e.resync(SID, &entries);
    // 8,000 characters are 2,000 tokens: the result crosses the level, its answer did not.
    assert_eq!(observe(&mut e, WINDOW, result(&"x".repeat(8_000))), BOTH);
    assert_eq!(observe(&mut e, WINDOW, result(&"x".repeat(400))), QUIET);
    // An assistant's usage replaces the figure; an aborted one does not count.
    let aborted: Value = json!({"role":"assistant","content":[],"stopReason":"aborted",
        "usage":{"totalTokens":below + 50_000}});
    let m = crate::entry::message_of_value(&aborted).expect("an aborted answer parses");
    assert_eq!(
        with_message(Some(7_000), &m),
        Some(7_000 + m.estimate_chars.div_ceil(4))
    );
    assert_eq!(with_message(None, &m), None);
}

#[test]
fn an_unknown_window_or_usage_needs_both_hooks() {
    let mut e = engine();
    assert_eq!(observe(&mut e, 0, answer(6_000)), BOTH);
    // A message that is not one (Pi's own roles the mirror does not count still parse).
    assert_eq!(
        observe(
            &mut e,
            WINDOW,
            Event::MessageEnd {
                message: json!("not a message")
            }
        ),
        BOTH
    );
}

#[test]
fn a_pending_reset_needs_both_hooks() {
    let mut e = engine();
    assert_eq!(observe(&mut e, WINDOW, answer(6_000)), QUIET);
    e.scheduler
        .handle(crate::scheduler::SchedInput::NewContextCalled);
    assert_eq!(observe(&mut e, WINDOW, answer(6_000)), BOTH);
}

#[test]
fn a_window_a_reset_opened_needs_its_settle_point_until_it_worked() {
    let mut e = engine();
    let mut b = Branch::new();
    let mut entries = vec![
        b.entry(json!({"type":"message","message":{"role":"user","content":"Fix the loader."}})),
        b.entry(json!({"type":"message","message":{"role":"assistant",
            "content":[{"type":"text","text":"Looking."}],"stopReason":"stop","usage":{"totalTokens":5000}}})),
    ];
    entries.push(b.entry(
        json!({"type":"compaction","summary":"<context_window>…</context_window>",
        "firstKeptEntryId":null,"tokensBefore":1,"details":{"relay":"window",
        "windowId":format!("pcw:{SID}:00000001"),"attempt":1,"source":"threshold"}}),
    ));
    entries.push(b.entry(json!({"type":"message","message":{"role":"assistant",
        "content":[{"type":"text","text":"Done?"}],"stopReason":"stop","usage":{"totalTokens":4000}}})));
    e.resync(SID, &entries);
    let hooks = observe(&mut e, WINDOW, Event::AgentEnd);
    assert_eq!(
        hooks,
        BoundaryHooks {
            turn_end: false,
            settle: true
        }
    );
}

#[test]
fn a_turn_end_not_sent_is_counted_once_at_the_next_turn_start() {
    let mut e = engine();
    let turn = e.budget.policy.turn;
    assert_eq!(observe(&mut e, WINDOW, answer(6_000)), QUIET);
    observe(&mut e, WINDOW, Event::TurnStart);
    assert_eq!(e.budget.policy.turn, turn + 1, "the unseen turn end");
    observe(&mut e, WINDOW, Event::Context);
    observe(&mut e, WINDOW, Event::TurnStart);
    assert_eq!(e.budget.policy.turn, turn + 1, "no answer, no turn");
    // A turn end that was sent counts itself, and nothing after it counts again.
    observe(&mut e, WINDOW, answer(6_000));
    observe(&mut e, WINDOW, turn_end());
    assert_eq!(e.budget.policy.turn, turn + 2);
    observe(&mut e, WINDOW, Event::AgentEnd);
    assert_eq!(e.budget.policy.turn, turn + 2);
    // The run's last turn, unseen: counted at `agent_end`.
    observe(&mut e, WINDOW, answer(6_000));
    observe(&mut e, WINDOW, result("ok"));
    observe(&mut e, WINDOW, Event::AgentEnd);
    assert_eq!(e.budget.policy.turn, turn + 3);
}

#[test]
fn the_margin_is_a_32nd_of_the_window_within_2k_and_16k() {
    assert_eq!(margin_tokens(32_000), 2_048);
    assert_eq!(margin_tokens(200_000), 6_250);
    assert_eq!(margin_tokens(1_000_000), 16_384);
    assert_eq!(margin_tokens(1_000_000_000), 16_384);
}
