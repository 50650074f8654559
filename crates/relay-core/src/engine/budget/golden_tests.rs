//! The status file and a telemetry line as the binding writes them, byte for byte (snapshots):
//! tools that read `status/<sessionId>.json` and `events.jsonl` rely on their keys and order.

use serde_json::json;

use crate::engine::wire::{Effect, Event, GuardState, Moment, Observation, Usage};
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
            api: None,
            answered_window: None,
            has_pending_messages: false,
            pending_work: 0,
            cwd: "/work/project".into(),
            context_guard: GuardState::Unavailable,
            subagent: false,
        },
        event,
    }
}

/// The first of `effects` that `pick` takes (a panic saying `what` was expected if none).
fn first_effect<'a, T>(
    effects: &'a [Effect],
    what: &str,
    pick: impl FnMut(&'a Effect) -> Option<&'a T>,
) -> &'a T {
    effects.iter().find_map(pick).expect(what)
}

#[test]
fn a_status_file_and_a_telemetry_line_keep_their_shape() {
    let mut e = crate::engine::tests::enforcing_with_state_dir();
    let user = json!({"type": "message", "id": "00000001", "parentId": null,
        "timestamp": "2025-11-29T21:00:00.000Z", "message": {"role": "user", "content": "big"}});
    e.append(&[parse_entry(&user.to_string()).unwrap()]);
    e.observe(&observe(Event::BeforeAgentStart));
    let reply = e.observe(&observe(Event::SessionBeforeCompact {
        reason: "overflow".into(),
        will_retry: true,
        custom_instructions: None,
    }));
    let status = first_effect(&reply.effects, "a status write", |eff| match eff {
        Effect::WriteStatus { status } => Some(status),
        _ => None,
    });
    let event = first_effect(&reply.effects, "a telemetry event", |eff| match eff {
        Effect::Telemetry { event } => Some(event),
        _ => None,
    });
    insta::assert_snapshot!(format!(
        "{}\n---\n{}",
        serde_json::to_string_pretty(&status).unwrap(),
        serde_json::to_string(&event).unwrap()
    ));
}

/// The parts the scenario above leaves null, a policy event's line, and an event field named
/// like the envelope's (only an unknown event read back can have one: it is left out).
#[test]
fn the_last_handoff_and_action_and_an_events_own_fields_keep_their_shape() {
    use crate::engine::files::{LastAction, LastHandoff, TelemetryEvent, TelemetryLine};
    use crate::policy::{Mode, Phase, PolicyEvent};
    let last = serde_json::to_string(&(
        Some(LastHandoff {
            path: "/s/handoffs/s1-1.md".into(),
            at: 5,
        }),
        Some(LastAction {
            event: "tool_blocked".into(),
            at: 6,
        }),
    ))
    .unwrap();
    assert_eq!(
        last,
        r#"[{"path":"/s/handoffs/s1-1.md","at":5},{"event":"tool_blocked","at":6}]"#
    );
    let line = TelemetryLine {
        ts: Some(1),
        session_id: "s1".into(),
        window_id: Some("pcw:s1:root".into()),
        mode: Some(Mode::Enforce),
        would: false,
        event: TelemetryEvent::Policy(PolicyEvent::ToolBlocked {
            tool: "bash".into(),
            phase: Phase::HandoffRequired,
            tokens: Some(7),
        }),
    };
    assert_eq!(
        serde_json::to_string(&line).unwrap(),
        r#"{"ts":1,"event":"tool_blocked","sessionId":"s1","windowId":"pcw:s1:root","mode":"enforce","tool":"bash","phase":"handoff-required","tokens":7}"#
    );
    let mut fields = serde_json::Map::new();
    fields.insert("event".into(), json!("from_a_newer_relay"));
    fields.insert("windowId".into(), json!("not the envelope's"));
    fields.insert("tokens".into(), json!(7));
    let line = TelemetryLine {
        event: TelemetryEvent::Other(fields),
        ..line
    };
    assert_eq!(
        serde_json::to_string(&line).unwrap(),
        r#"{"ts":1,"event":"from_a_newer_relay","sessionId":"s1","windowId":"pcw:s1:root","mode":"enforce","tokens":7}"#
    );
}
