//! The continuation after an early stop: which windows, which replies, once per window.
use serde_json::{json, Value};

use super::super::wire::{ConfigSources, Event, Observation, CONTINUE_TYPE};
use super::*;
use crate::engine::tests::{moment_with, Branch};
use crate::entry::Entry;

const SID: &str = "01a2-on-task-session";
const REQUEST: &str = "Refactor the loader so that TASK-58 passes; keep api/ untouched.";
const QUESTION: &str = "What would you like me to do next?";

fn moment(pending: bool) -> Moment {
    Moment {
        has_pending_messages: pending,
        ..moment_with(None, 24_000, crate::engine::GuardState::Unavailable)
    }
}

fn engine(entries: &[Entry], relay: Value) -> Engine {
    let mut e = Engine::new();
    let sources = ConfigSources {
        global: Some(json!({ "relay": relay })),
        cwd: Some("/work/project".into()),
        ..ConfigSources::default()
    };
    assert!(e.configure(&sources).is_empty());
    e.resync(SID, entries);
    e
}

fn settle(e: &mut Engine, pending: bool) -> HookReply {
    e.observe(&Observation {
        moment: moment(pending),
        event: Event::AgentBeforeSettle {
            chained: false,
            outcome: Some("completed".into()),
            jobs: None,
        },
    })
}

fn user(b: &mut Branch, text: &str) -> Entry {
    b.entry(json!({"type":"message","message":{"role":"user","content":text}}))
}

fn answer(b: &mut Branch, text: &str) -> Entry {
    b.entry(json!({"type":"message","message":{"role":"assistant",
        "content":[{"type":"text","text":text}],"stopReason":"stop","usage":{"totalTokens":5000}}}))
}

fn tool_call(b: &mut Branch) -> Vec<Entry> {
    vec![
        b.entry(json!({"type":"message","message":{"role":"assistant",
            "content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.rs"}}],
            "stopReason":"toolUse","usage":{"totalTokens":6000}}})),
        b.entry(
            json!({"type":"message","message":{"role":"toolResult","toolCallId":"c1",
            "toolName":"read","content":[{"type":"text","text":"fn main() {}"}],"isError":false}}),
        ),
    ]
}

/// A reset of Relay's with `source` (`None`: a compaction that is not Relay's), then its
/// hidden continuation.
fn reset(b: &mut Branch, source: Option<&str>, window: u32) -> Vec<Entry> {
    let details = match source {
        Some(s) => json!({"relay":"window","windowId":format!("pcw:{SID}:{window:08x}"),
            "attempt":window,"source":s}),
        None => json!({}),
    };
    vec![
        b.entry(json!({"type":"compaction","summary":"<context_window>…</context_window>",
            "firstKeptEntryId":null,"tokensBefore":1,"details":details})),
        b.entry(json!({"type":"custom_message","customType":CONTINUE_TYPE,"content":"Continue.","display":false})),
    ]
}

/// The user's request, work, a reset from `source`, and the first reply of the new window.
fn session(source: Option<&str>, first_reply: &str) -> (Branch, Vec<Entry>) {
    let mut b = Branch::new();
    let mut entries = vec![user(&mut b, REQUEST)];
    entries.extend(tool_call(&mut b));
    entries.extend(reset(&mut b, source, 1));
    entries.push(answer(&mut b, first_reply));
    (b, entries)
}

fn continued(reply: &HookReply) -> Option<&str> {
    match &reply.result {
        Some(HookResult::Continue { continuation }) => {
            assert_eq!(continuation.custom_type, CONTINUE_TASK_TYPE);
            Some(continuation.content.as_str())
        }
        _ => None,
    }
}

#[test]
fn automatic_and_forced_resets_are_continued_but_not_the_models_or_the_users_own() {
    for (source, want) in [
        (Some("fallback"), true),
        (Some("threshold"), true),
        (Some("overflow"), true),
        (Some("forced"), true),
        (Some("idle"), true),
        (Some("handoff"), true),
        (Some("new_context"), false),
        (Some("manual"), false),
        (None, false),
    ] {
        let (_, entries) = session(source, QUESTION);
        let mut e = engine(&entries, json!({}));
        let reply = settle(&mut e, false);
        assert_eq!(continued(&reply).is_some(), want, "{source:?}");
    }
}

#[test]
fn the_continuation_quotes_the_latest_request_verbatim() {
    let (_, entries) = session(Some("fallback"), QUESTION);
    let mut e = engine(&entries, json!({}));
    let reply = settle(&mut e, false);
    let text = continued(&reply).unwrap();
    assert!(text.contains(&format!(
        "<latest_user_request>\n{REQUEST}\n</latest_user_request>"
    )));
    assert_eq!(text, crate::render::render_continue_task(Some(REQUEST)));
}

#[test]
fn only_an_early_stop_of_the_windows_first_run_is_continued() {
    // Stated results are the answer.
    let (_, entries) = session(Some("fallback"), "Done: TASK-58 passes; api/ untouched.");
    assert_eq!(
        continued(&settle(&mut engine(&entries, json!({})), false)),
        None
    );
    // Empty and meta replies are early stops.
    for reply in ["", "I don't have enough context to continue this."] {
        let (_, entries) = session(Some("fallback"), reply);
        assert!(continued(&settle(&mut engine(&entries, json!({})), false)).is_some());
    }
    // A tool call in the window: the model worked, then asked.
    let mut b = Branch::new();
    let mut entries = vec![user(&mut b, REQUEST)];
    entries.extend(reset(&mut b, Some("fallback"), 1));
    entries.extend(tool_call(&mut b));
    entries.push(answer(&mut b, QUESTION));
    assert_eq!(
        continued(&settle(&mut engine(&entries, json!({})), false)),
        None
    );
    // A new user prompt in the window: the run answered it.
    let mut b = Branch::new();
    let mut entries = vec![user(&mut b, REQUEST)];
    entries.extend(reset(&mut b, Some("threshold"), 1));
    entries.push(user(&mut b, "Now what?"));
    entries.push(answer(&mut b, QUESTION));
    assert_eq!(
        continued(&settle(&mut engine(&entries, json!({})), false)),
        None
    );
    // A queued user message goes first.
    let (_, entries) = session(Some("fallback"), QUESTION);
    assert_eq!(
        continued(&settle(&mut engine(&entries, json!({})), true)),
        None
    );
    // An aborted or failed run is not continued.
    let mut e = engine(&entries, json!({}));
    let reply = e.observe(&Observation {
        moment: moment(false),
        event: Event::AgentBeforeSettle {
            chained: false,
            outcome: Some("error".into()),
            jobs: None,
        },
    });
    assert_eq!(continued(&reply), None);
}

#[test]
fn never_twice_in_a_window_also_after_a_reload() {
    let (mut b, mut entries) = session(Some("fallback"), QUESTION);
    let mut e = engine(&entries, json!({}));
    let first = settle(&mut e, false);
    let text = continued(&first).unwrap().to_string();
    // Pi appends the draft, the model asks again.
    let more = [
        b.entry(json!({"type":"custom_message","customType":CONTINUE_TASK_TYPE,"content":text,"display":false})),
        answer(&mut b, "Which file should I start with?"),
    ];
    e.append(&more);
    assert_eq!(continued(&settle(&mut e, false)), None);
    entries.extend(more);
    let mut reloaded = engine(&entries, json!({}));
    assert_eq!(continued(&settle(&mut reloaded, false)), None);
    // The next automatic reset opens a window that may be continued again.
    let mut next = reset(&mut b, Some("fallback"), 2);
    next.push(answer(&mut b, QUESTION));
    e.append(&next);
    assert!(continued(&settle(&mut e, false)).is_some());
}

#[test]
fn the_setting_off_disables_it_and_relay_off_too() {
    let (_, entries) = session(Some("fallback"), QUESTION);
    let mut e = engine(&entries, json!({"continueAfterReset": false}));
    assert_eq!(continued(&settle(&mut e, false)), None);
    let mut e = engine(&entries, json!({"enabled": false}));
    assert_eq!(continued(&settle(&mut e, false)), None);
}

/// An earlier request answered, then [`REQUEST`] and a tool call.
fn two_requests_then_a_tool_call(b: &mut Branch) -> Vec<Entry> {
    let mut entries = vec![
        user(b, "Write the CHANGELOG entry."),
        answer(b, "Written."),
        user(b, REQUEST),
    ];
    entries.extend(tool_call(b));
    entries
}

#[test]
fn the_latest_of_two_requests_is_quoted_also_across_a_window_without_input() {
    let mut b = Branch::new();
    let mut entries = two_requests_then_a_tool_call(&mut b);
    entries.extend(reset(&mut b, Some("fallback"), 1));
    // The second window works and fills up without the user writing anything.
    entries.extend(tool_call(&mut b));
    entries.extend(reset(&mut b, Some("fallback"), 2));
    entries.push(answer(&mut b, QUESTION));
    let mut e = engine(&entries, json!({}));
    let text = continued(&settle(&mut e, false)).unwrap().to_string();
    assert!(text.contains(&format!("<latest_user_request>\n{REQUEST}\n")));
    assert!(!text.contains("CHANGELOG"));
}

fn manual_reset_summary(e: &mut Engine) -> String {
    let reply = e.observe(&Observation {
        moment: moment(false),
        event: Event::SessionBeforeCompact {
            reason: "manual".into(),
            will_retry: false,
            custom_instructions: None,
        },
    });
    match reply.result {
        Some(HookResult::Reset { plan }) => plan.summary,
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_boot_block_marks_the_latest_request_also_after_a_window_without_input() {
    let mut b = Branch::new();
    let mut entries = two_requests_then_a_tool_call(&mut b);
    let block = format!(
        "<earlier_user_input shown=\"2\" total=\"2\">\n<user_message>\nWrite the CHANGELOG entry.\n</user_message>\n<user_message latest=\"true\">\n{REQUEST}\n</user_message>\n</earlier_user_input>"
    );
    let summary = manual_reset_summary(&mut engine(&entries, json!({})));
    assert!(summary.contains(&block), "{summary}");
    // A window that received no user input repeats the newest window's that did.
    entries.extend(reset(&mut b, Some("fallback"), 1));
    entries.extend(tool_call(&mut b));
    let summary = manual_reset_summary(&mut engine(&entries, json!({})));
    assert!(summary.contains(&block), "{summary}");
}
