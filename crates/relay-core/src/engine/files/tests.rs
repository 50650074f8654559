//! Each file's shape (snapshots, reviewed: they are what readers of the files see) and its
//! round trip where Relay reads the file back.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use serde_json::json;

use super::*;
use crate::handoff::tests::{args, meta, text_of};
use crate::handoff::HandoffFingerprint;
use crate::policy::{
    CommitKind, FallbackReason, Mode, NotifyLevel, Phase, PolicyEvent, PolicyReset, Threshold,
};

#[test]
fn sidecar_keeps_full_text_and_metadata() {
    let facts = text_of(20_000, "fact");
    let a = args("goal", "next", &facts);
    let sidecar = HandoffSidecar::new(&a, &meta(), "/r/.ai-work/handoffs/s42-3.md");
    let v = serde_json::to_value(&sidecar).unwrap();
    assert_eq!(v["version"], json!(1));
    assert_eq!(v["kind"], json!("handoff"));
    assert_eq!(v["facts"], json!(facts));
    assert_eq!(v["heading"], json!("Handoff s42-3"));
    assert_eq!(v["git"]["state"], json!("repo"));
    assert_eq!(v["createdAt"], json!("2023-11-14T23:13:20+01:00"));
    assert_eq!(v["cutSections"][0]["section"], json!("facts"));
    let fp = HandoffFingerprint::from_value(&v["fingerprint"]).unwrap();
    assert_eq!(
        fp,
        HandoffFingerprint::new(&a, 1_700_000_000_000, meta().git_head.as_deref())
    );
}

#[test]
fn a_sidecar_keeps_its_shape_and_reads_back() {
    let mut a = args("Fix the upload test", "Run the tests", "It fails on main");
    a.decisions = Some("Keep the retry".into());
    a.files_to_read = vec!["/r/src/upload.rs".into()];
    let mut sidecar = HandoffSidecar::new(&a, &meta(), "/r/.ai-work/handoffs/s42-3.md");
    sidecar.integrations =
        crate::integrations::render(&crate::integrations::IntegrationFacts::default(), "s42")
            .sidecar;
    let text = serde_json::to_string_pretty(&sidecar).unwrap();
    insta::assert_snapshot!(text);
    let back: HandoffSidecar = serde_json::from_str(&text).unwrap();
    assert_eq!(back, sidecar);
}

/// One line of every kind of event, as `events.jsonl` has it; each reads back as written.
#[test]
fn every_telemetry_event_keeps_its_shape_and_reads_back() {
    let policy = |event| TelemetryEvent::Policy(event);
    let events = [
        TelemetryEvent::IdleInputSkipped {
            attempt: 3,
            why: Some("Nothing to compact".into()),
        },
        TelemetryEvent::NativeCompactionFailed {
            reason: Some("threshold".into()),
        },
        TelemetryEvent::NativeCompactionFallback {
            reason: "manual".into(),
        },
        TelemetryEvent::OverflowBackstop {
            handoff: false,
            will_retry: true,
            attempt: Some(1),
        },
        TelemetryEvent::OverflowRecoveryOff {
            why: "relay.overflowRecovery is false".into(),
            will_retry: true,
        },
        TelemetryEvent::OverflowRecoveryExhausted {
            via: "hook_refused".into(),
        },
        TelemetryEvent::ToolResultsCleared {
            items: 4,
            tokens_freed: 12_000,
            tokens_before: Some(90_000),
        },
        TelemetryEvent::RelaunchRequested {
            reason: "hard".into(),
            marker: "/agent/relaunch/1-00.json".into(),
            handoff: "/r/h.md".into(),
        },
        TelemetryEvent::RelaunchDropped {
            reason: "hard".into(),
            why: "the run was aborted".into(),
        },
        TelemetryEvent::RelaunchFailed {
            reason: "cap".into(),
            why: "disk full".into(),
        },
        TelemetryEvent::GuardOffThreshold {
            threshold: "hard".into(),
            limit: 75_000,
            tokens: 80_000,
        },
        TelemetryEvent::ModeMismatch {
            configured_mode: Mode::Enforce,
            effective_mode: Mode::Observe,
            reason: Some("Relay is off: /relay off".into()),
        },
        policy(PolicyEvent::FallbackArmed {
            reason: FallbackReason::CompactionFailure.as_str().into(),
            tokens: Some(80_000),
            floor: None,
            handoffs_committed: 2,
            max_handoffs_per_session: 10,
        }),
        policy(PolicyEvent::ThresholdCrossed {
            threshold: Threshold::Handoff,
            tokens: 60_000,
            floor: Some(1_000),
            limit: 56_440,
        }),
        policy(PolicyEvent::HandoffCommitted {
            source: CommitKind::Budget,
            kind: CommitKind::Budget,
            path: "/r/h.md".into(),
            tokens: Some(60_000),
        }),
        policy(PolicyEvent::ForcedReset {
            reason: "hard".into(),
            tokens: None,
            at_turn_end: true,
            continues: true,
        }),
        policy(PolicyEvent::IdleInputReset {
            idle_ms: 3_600_000,
            idle_minutes_ms: 1_800_000,
            tokens: 90_000,
            keep_recent_tokens: 20_000,
            path: "/r/h.md".into(),
        }),
        policy(PolicyEvent::ToolBlocked {
            tool: "bash".into(),
            phase: Phase::HandoffRequired,
            tokens: Some(60_000),
        }),
        policy(PolicyEvent::HandoffIgnored {
            path: "/r/h.md".into(),
            why: "reset already in progress".into(),
        }),
        policy(PolicyEvent::HandoffWritten {
            path: "/r/h.md".into(),
            kind: CommitKind::ForcedHard,
            tokens: Some(60_000),
        }),
        policy(PolicyEvent::HandoffInvalidated {
            path: "/r/h.md".into(),
            tool: "edit".into(),
            kind: CommitKind::Voluntary,
        }),
        policy(PolicyEvent::SettleResetDue {
            tokens: Some(60_000),
            phase: Phase::FallbackArmed,
        }),
        policy(PolicyEvent::SettleContinuation {
            tokens: Some(60_000),
            fallback: None,
        }),
        policy(PolicyEvent::SettleContinuation {
            tokens: Some(80_000),
            fallback: Some("hard".into()),
        }),
        policy(PolicyEvent::FallbackRelaunch {
            reason: "loop".into(),
            tokens: None,
        }),
        policy(PolicyEvent::IdleHandoffRequested {
            tokens: Some(150_000),
            idle_min_tokens: 150_000,
            requires_handoff: true,
        }),
        policy(PolicyEvent::ResetDropped {
            kind: None,
            phase: Phase::Idle,
        }),
        policy(PolicyEvent::ResetApplied {
            handoffs_committed: 1,
        }),
    ];
    let previews = [
        TelemetryEvent::Handoff { goal_chars: 42 },
        policy(PolicyEvent::ToolBlocked {
            tool: "bash".into(),
            phase: Phase::HandoffRequired,
            tokens: Some(60_000),
        }),
        policy(PolicyEvent::Notify {
            level: NotifyLevel::Warning,
            text: "t".into(),
        }),
        policy(PolicyEvent::Block {
            reason: "r".into(),
            terminate: false,
        }),
        policy(PolicyEvent::Reset {
            source: PolicyReset::IdleInput,
            kind: CommitKind::Idle,
            handoff_path: Some("/r/h.md".into()),
            continue_run: false,
            at_turn_end: false,
            note: None,
        }),
        policy(PolicyEvent::Continue { text: "c".into() }),
        policy(PolicyEvent::Relaunch {
            reason: FallbackReason::CompactionFailure,
        }),
    ];
    let line = |event, would| TelemetryLine {
        ts: Some(1_764_450_000_000),
        session_id: "s1".into(),
        window_id: Some("pcw:s1:root".into()),
        mode: Some(if would { Mode::Observe } else { Mode::Enforce }),
        would,
        event,
    };
    let mut lines: Vec<TelemetryLine> = events.into_iter().map(|e| line(e, false)).collect();
    lines.extend(previews.into_iter().map(|e| line(e, true)));
    // Made without a clock (the binding stamps `ts`), and the binding's own.
    lines.push(TelemetryLine {
        ts: None,
        session_id: "s1".into(),
        window_id: None,
        mode: None,
        would: false,
        event: TelemetryEvent::Error {
            kind: "config".into(),
            path: Some("relay.budget.mode".into()),
            message: "must be one of off, observe, enforce".into(),
        },
    });
    lines.push(TelemetryLine {
        ts: Some(5),
        session_id: "s1".into(),
        window_id: None,
        mode: None,
        would: false,
        event: TelemetryEvent::Error {
            kind: "hook".into(),
            path: None,
            message: "boom".into(),
        },
    });
    let mut text = String::new();
    for l in &lines {
        let json = serde_json::to_string(l).unwrap();
        let back: TelemetryLine = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, l, "{json}");
        assert_eq!(serde_json::to_value(l).unwrap()["event"], json!(l.name()));
        text.push_str(&json);
        text.push('\n');
    }
    insta::assert_snapshot!(text);
}

/// A line of a kind this Relay does not know, or of a known kind with fields it does not know,
/// reads back as it is (`Other`) and is written back the same.
#[test]
fn an_unknown_telemetry_line_reads_back_as_it_is() {
    for json in [
        r#"{"ts":1,"event":"from_a_newer_relay","sessionId":"s1","windowId":"w","mode":"enforce","x":[1]}"#,
        r#"{"ts":1,"event":"tool_blocked","sessionId":"s1","windowId":"w","mode":"enforce","tool":"bash","phase":"idle","tokens":1,"newField":2}"#,
        r#"{"ts":1,"event":"would_from_a_newer_relay","sessionId":"s1","windowId":"w","mode":"observe"}"#,
    ] {
        let line: TelemetryLine = serde_json::from_str(json).unwrap();
        assert!(matches!(line.event, TelemetryEvent::Other(_)), "{line:?}");
        assert_eq!(serde_json::to_string(&line).unwrap(), json);
    }
}

#[test]
fn the_status_file_ends_with_the_binding_pid() {
    let status = StatusFile {
        version: STATUS_VERSION,
        policy: crate::policy::status_fields(
            &crate::policy::PolicyState::default(),
            &crate::policy::PolicyParams {
                thresholds: crate::policy::Thresholds {
                    soft: 1,
                    handoff: 2,
                    hard: 3,
                    min_progress: 0,
                },
                max_handoffs_per_session: 10,
                loop_guard: crate::policy::LoopGuard::default(),
                idle_min_tokens: 150_000,
                idle_ms: 50 * 60_000,
                keep_recent_tokens: 20_000,
                relaunch: false,
            },
            &crate::policy::EffectiveMode {
                configured: Mode::Observe,
                effective: Mode::Observe,
                reason: None,
            },
        ),
        session_id: "s1".into(),
        window_id: "pcw:s1:root".into(),
        window_count: 1,
        cwd: "/w".into(),
        model: None,
        role: Role::Subagent,
        updated_at: 5,
        last_handoff: None,
        window_features: false,
        wrapper: WrapperStatus {
            owned: false,
            reason: "r".into(),
        },
        last_action: None,
        pid: None,
    };
    let without = serde_json::to_string(&status).unwrap();
    assert!(
        without.starts_with(r#"{"version":1,"phase":"idle","#),
        "{without}"
    );
    assert!(!without.contains("pid"), "{without}");
    assert!(without.contains(r#""role":"subagent""#), "{without}");
    let with = serde_json::to_string(&StatusFile {
        pid: Some(42),
        ..status
    })
    .unwrap();
    assert!(with.ends_with(r#","pid":42}"#), "{with}");
}

#[test]
fn the_relaunch_marker_has_exactly_its_four_fields() {
    let marker = RelaunchMarker {
        cwd: "/w".into(),
        launch_prompt: None,
        handoff: "/w/h.md".into(),
        session_file: Some("/s.jsonl".into()),
    };
    let text = serde_json::to_string(&marker).unwrap();
    assert_eq!(
        text,
        r#"{"cwd":"/w","launchPrompt":null,"handoff":"/w/h.md","sessionFile":"/s.jsonl"}"#
    );
    assert_eq!(
        serde_json::from_str::<RelaunchMarker>(&text).unwrap(),
        marker
    );
    let extra = r#"{"cwd":"/w","launchPrompt":null,"handoff":"/w/h.md","sessionFile":null,"v":1}"#;
    assert!(serde_json::from_str::<RelaunchMarker>(extra).is_err());
}
