//! The window under a router model: the answered model's, else the declared one; failed and
//! aborted answers do not count; a `message_end` names its model at once; a reload finds the
//! latest answer on the branch (skimmed too); a navigation drops the answers past the new leaf;
//! the host's `answeredWindow` counts only while it describes the latest answer.
use serde_json::{json, Value};

use super::super::boundary::margin_tokens;
use super::super::door::{BoundaryHooks, Input, Output};
use super::super::tests::{moment_with, Branch};
use super::super::wire::{ConfigSources, Event, Feed, Observation};
use super::*;
use crate::engine::GuardState;

const SID: &str = "01a2-router-session";

fn model(provider: &str, model: &str) -> Option<ModelRef> {
    Some(ModelRef {
        provider: provider.into(),
        model: model.into(),
    })
}

/// A message entry's JSON: an assistant answer by `provider/model` that stopped for `stop`.
fn answer_by(provider: &str, model: &str, stop: &str) -> Value {
    json!({"role":"assistant","content":[{"type":"text","text":"Done."}],"provider":provider,
        "model":model,"stopReason":stop,"usage":{"totalTokens":5000}})
}

fn user(text: &str) -> Value {
    json!({"role":"user","content":text})
}

/// Entry JSON for each message, chained.
fn branch(messages: &[Value]) -> Vec<Value> {
    let mut b = Branch::new();
    messages
        .iter()
        .map(|m| {
            let e = b.entry(json!({"type":"message","message":m}));
            json!({"type":"message","id":e.id,"parentId":e.parent_id,
                "timestamp":"2025-11-29T21:00:00.000Z","message":m})
        })
        .collect()
}

/// An engine that mirrors `messages` (through the door, as a host's resync).
fn engine(messages: &[Value]) -> (Engine, Output) {
    let mut e = Engine::new();
    assert!(e
        .configure(&ConfigSources {
            cwd: Some("/work/project".into()),
            ..ConfigSources::default()
        })
        .is_empty());
    let out = e.handle(Input::Resync {
        session_id: SID.into(),
        entries: branch(messages),
    });
    (e, out)
}

/// A moment of a router model that declares `declared`, the host's `answeredWindow` beside it.
fn routed(declared: u64, answered: Option<u64>) -> Moment {
    Moment {
        api: Some(super::super::wire::ROUTER_API.into()),
        answered_window: answered,
        ..moment_with(None, declared, GuardState::Unavailable)
    }
}

fn hook(e: &mut Engine, moment: Moment, event: Event) -> Output {
    e.handle(Input::Hook {
        observation: Observation { moment, event },
    })
}

#[test]
fn the_answered_models_window_applies_else_the_declared_one() {
    let (e, out) = engine(&[user("Hi."), answer_by("prov", "big", "stop")]);
    assert_eq!(out.answered_model, model("prov", "big"));
    assert_eq!(e.limits_window(&routed(0, Some(100_000))), Some(100_000));
    // Not found in the registry (null) or declaring none (0): the router's declared window.
    assert_eq!(e.limits_window(&routed(64_000, None)), Some(64_000));
    assert_eq!(e.limits_window(&routed(64_000, Some(0))), Some(64_000));
    // Neither: unknown, never a window of 0 tokens.
    let unknown = Moment {
        context_window: e.limits_window(&routed(0, None)),
        ..routed(0, None)
    };
    assert_eq!(unknown.window(), None);
    // Not a router: the current model's own window, whatever answered.
    let own = Moment {
        api: None,
        ..routed(32_000, Some(100_000))
    };
    assert_eq!(e.limits_window(&own), Some(32_000));
}

#[test]
fn before_any_answer_none_is_named_and_the_declared_window_applies() {
    let (e, out) = engine(&[user("Hi.")]);
    assert_eq!(out.answered_model, None);
    assert_eq!(e.limits_window(&routed(64_000, None)), Some(64_000));
}

#[test]
fn failed_aborted_and_unnamed_answers_do_not_count() {
    let (mut e, out) = engine(&[
        user("Hi."),
        answer_by("prov", "big", "stop"),
        answer_by("prov", "small", "error"),
        answer_by("prov", "small", "aborted"),
        json!({"role":"assistant","content":"No model.","stopReason":"stop"}),
    ]);
    assert_eq!(out.answered_model, model("prov", "big"));
    let failed = Event::MessageEnd {
        message: answer_by("other", "tiny", "error"),
    };
    let out = hook(&mut e, routed(0, Some(100_000)), failed);
    assert_eq!(out.answered_model, model("prov", "big"));
}

#[test]
fn a_message_end_names_its_model_at_once_and_the_mirror_keeps_it() {
    let (mut e, _) = engine(&[user("Hi."), answer_by("prov", "big", "stop")]);
    let routed_answer = Event::MessageEnd {
        message: answer_by("prov", "small", "toolUse"),
    };
    let out = hook(&mut e, routed(0, Some(100_000)), routed_answer);
    assert_eq!(out.answered_model, model("prov", "small"));
    // The next input carries the new model's window: it applies.
    assert_eq!(e.limits_window(&routed(0, Some(32_000))), Some(32_000));
    // Pi appends the message; the feed brings it in and the mirror has it.
    let tip = e.tip().map(str::to_string);
    let entry = json!({"type":"message","id":"m9","parentId":tip,
        "timestamp":"2025-11-29T21:00:01.000Z","message":answer_by("prov", "small", "toolUse")});
    let feed: Feed = serde_json::from_str(&json!({ "append": [entry] }).to_string()).unwrap();
    let out = e.handle(Input::Feed(feed));
    assert_eq!(out.answered_model, model("prov", "small"));
    assert_eq!(e.mirror.latest_answer(), model("prov", "small").as_ref());
}

#[test]
fn a_navigation_drops_the_answers_past_the_new_leaf() {
    let entries = branch(&[
        user("One."),
        answer_by("prov", "big", "stop"),
        user("Two."),
        answer_by("prov", "small", "stop"),
        answer_by("prov", "small", "stop"),
        user("Three."),
    ]);
    let (mut e, out) = engine(&[]);
    assert_eq!(out.answered_model, None);
    let out = e.handle(Input::Resync {
        session_id: SID.into(),
        entries: entries.clone(),
    });
    assert_eq!(out.answered_model, model("prov", "small"));
    let back_to = |e: &mut Engine, at: usize| {
        let feed = json!({"truncate": true, "after": entries[at]["id"]}).to_string();
        e.handle(Input::Feed(serde_json::from_str(&feed).unwrap()))
    };
    // Back to the second answer of the small model: still it.
    assert_eq!(back_to(&mut e, 3).answered_model, model("prov", "small"));
    // Back before the small model's answers: the big model's again.
    assert_eq!(back_to(&mut e, 2).answered_model, model("prov", "big"));
    // The host's figure still describes the small model (a feed's output is not the host's
    // answer): it is not read until an output names the big one.
    let stale = routed(64_000, Some(32_000));
    assert_eq!(e.limits_window(&stale), Some(64_000));
    let out = hook(&mut e, stale, Event::TurnStart);
    assert_eq!(out.answered_model, model("prov", "big"));
    assert_eq!(
        e.limits_window(&routed(64_000, Some(100_000))),
        Some(100_000)
    );
    // Before every answer: none.
    assert_eq!(back_to(&mut e, 0).answered_model, None);
}

#[test]
fn a_reload_finds_the_latest_answer_however_far_back_and_skimmed() {
    // Far more entries after the answer than the host's old walk (1,024) looked back over.
    let mut messages = vec![user("Hi."), answer_by("prov", "big", "stop")];
    messages.extend((0..1_500).map(|i| user(&format!("note {i}"))));
    let (_, out) = engine(&messages);
    assert_eq!(out.answered_model, model("prov", "big"));
    // A skimmed line (an earlier window of a large session) keeps the answer's model.
    let line = branch(&[answer_by("prov", "big", "stop")])[0].to_string();
    let skimmed = crate::entry::skim_entry_of_line(&line).expect("an answer line skims");
    match skimmed.kind {
        crate::entry::EntryKind::Message(m) => {
            assert_eq!(m.answered_by(), model("prov", "big").as_ref());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_switched_routers_answer_is_judged_with_an_unknown_window() {
    const WINDOW: u64 = 200_000;
    let (mut e, _) = engine(&[user("Hi."), answer_by("prov", "big", "stop")]);
    // The host's figure describes the big model once an output named it.
    hook(&mut e, routed(0, None), Event::TurnStart);
    let tool_answer = |model: &str| Event::MessageEnd {
        message: json!({"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read",
            "arguments":{"path":"a.rs"}}],"provider":"prov","model":model,"stopReason":"toolUse",
            "usage":{"totalTokens":6_000}}),
    };
    let quiet = BoundaryHooks {
        turn_end: false,
        settle: false,
    };
    assert!(6_000 + margin_tokens(WINDOW) < WINDOW / 2);
    let out = hook(&mut e, routed(0, Some(WINDOW)), tool_answer("big"));
    assert_eq!(out.boundary, quiet, "the big model's window is known");
    // Without its window (unknown), the same answer needs both boundaries.
    let (mut unknown, _) = engine(&[user("Hi."), answer_by("prov", "big", "stop")]);
    hook(&mut unknown, routed(0, None), Event::TurnStart);
    let out = hook(&mut unknown, routed(0, None), tool_answer("big"));
    assert_eq!(out.boundary, BoundaryHooks::default());
    // The router switched to the small model: its window is not known at this answer.
    let out = hook(&mut e, routed(0, Some(WINDOW)), tool_answer("small"));
    assert_eq!(out.boundary, BoundaryHooks::default());
    assert_eq!(out.answered_model, model("prov", "small"));
}
