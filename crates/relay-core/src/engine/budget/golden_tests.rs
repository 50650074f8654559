//! The status file and a telemetry line as the binding writes them, byte for byte (snapshots):
//! tools that read `status/<sessionId>.json` and `events.jsonl` rely on their keys and order.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use serde_json::json;

use crate::engine::wire::{ConfigSources, Effect, Event, GuardState, Moment, Observation, Usage};
use crate::engine::Engine;
use crate::entry::parse_entry;

fn observe(event: Event) -> Observation {
    Observation {
        moment: Moment {
            now_ms: 1_764_450_000_000,
            tz_offset_minutes: 60,
            usage: Some(Usage {
                tokens: None,
                context_window: 100_000,
            }),
            model: Some("faux/faux-1".into()),
            context_window: Some(100_000),
            has_pending_messages: false,
            pending_work: 0,
            cwd: "/work/project".into(),
            context_guard: GuardState::Unavailable,
            subagent: false,
        },
        event,
    }
}

#[test]
fn a_status_file_and_a_telemetry_line_keep_their_shape() {
    let mut e = Engine::new();
    e.resync("01a2-test-session", &[]);
    let sources = ConfigSources {
        global: Some(json!({ "relay": { "budget": { "mode": "enforce" } } })),
        cwd: Some("/work/project".into()),
        state_dir: Some("/tmp/relay-state".into()),
        ..ConfigSources::default()
    };
    assert!(e.configure(&sources).is_empty());
    let user = json!({"type": "message", "id": "00000001", "parentId": null,
        "timestamp": "2025-11-29T21:00:00.000Z", "message": {"role": "user", "content": "big"}});
    e.append(&[parse_entry(&user.to_string()).unwrap()]);
    e.handle(&observe(Event::BeforeAgentStart));
    let reply = e.handle(&observe(Event::SessionBeforeCompact {
        reason: "overflow".into(),
        will_retry: true,
        custom_instructions: None,
    }));
    let status = reply
        .effects
        .iter()
        .find_map(|eff| match eff {
            Effect::WriteStatus { status } => Some(status.clone()),
            _ => None,
        })
        .expect("a status write");
    let event = reply
        .effects
        .iter()
        .find_map(|eff| match eff {
            Effect::Telemetry { event } => Some(event.clone()),
            _ => None,
        })
        .expect("a telemetry event");
    insta::assert_snapshot!(format!(
        "{}\n---\n{}",
        serde_json::to_string_pretty(&status).unwrap(),
        serde_json::to_string(&event).unwrap()
    ));
}
