use serde_json::{json, Value};

use super::*;
use crate::handoff::GitState;
use crate::resume_check::{CheckOutput, CheckStatus};
use crate::staleness::DirtySet;

const TODAY: &str = include_str!("../../../../tests/golden/relay-2026-12-03.jsonl");
const EARLIER: [&str; 3] = [
    include_str!("../../../../tests/golden/relay-2026-11-29-2ef654d.jsonl"),
    include_str!("../../../../tests/golden/relay-2026-11-30-560bded.jsonl"),
    include_str!("../../../../tests/golden/relay-2026-12-01-d8da4ff.jsonl"),
];

fn fingerprint() -> HandoffFingerprint {
    HandoffFingerprint {
        at_ms: 1_796_266_325_782,
        head: Some("abc123".into()),
        text: "goal\nfacts\nnext".into(),
    }
}

fn check_result() -> CheckResult {
    CheckResult {
        command: "cargo test".into(),
        source: "PI_RESUME_CHECK".into(),
        status: CheckStatus::Exited { code: 0 },
        output: CheckOutput {
            head: "ok".into(),
            tail: String::new(),
            skipped_bytes: 0,
            total_bytes: 2,
        },
        output_held_open: false,
    }
}

fn workspace() -> WorkspaceRecord {
    WorkspaceRecord {
        cwd: "/w".into(),
        repo_root: None,
        git_state: GitState::NoGit,
        branch: None,
        head: None,
        dirty: DirtySet::Unavailable,
        files: Vec::new(),
    }
}

fn job() -> RecordedJob {
    RecordedJob {
        id: "j1".into(),
        label: Some("build".into()),
        command: None,
    }
}

/// Serializes, reads back and compares; also checks that `v` is today's version.
fn round_trip<T: Record + PartialEq + std::fmt::Debug>(record: T) -> Value {
    let value = record.to_value();
    assert_eq!(value["v"], VERSION, "{value}");
    assert_eq!(T::read(&value).as_ref(), Some(&record), "{value}");
    value
}

#[test]
fn every_record_round_trips_with_todays_version() {
    let window = round_trip(WindowRecord::new(
        "pcw:s:1",
        "pcw:s:root",
        2,
        "handoff",
        "handoff",
        Some("voluntary"),
        Some("/h/1.md"),
    ));
    assert_eq!(window["relay"], "window");
    round_trip(WindowRecord::new(
        "pcw:s:1",
        "pcw:s:root",
        1,
        "new_context",
        "reset",
        None,
        None,
    ));
    round_trip(ResetMarkerRecord::new("pcw:s:1", 3, "overflow"));
    round_trip(NoteRecord {
        v: VERSION,
        kind: "append".into(),
        path: "a/b.md".into(),
        content: "ü🙂\n".into(),
        at_ms: json!(-5),
    });
    round_trip(HandoffRecord {
        v: VERSION,
        path: "/h/1.md".into(),
        fingerprint: fingerprint(),
        launch_prompt: None,
        jobs: None,
        workspace: None,
    });
    round_trip(HandoffRecord {
        v: VERSION,
        path: "/h/1.md".into(),
        fingerprint: fingerprint(),
        launch_prompt: Some("go on".into()),
        jobs: Some(vec![job()]),
        workspace: Some(workspace()),
    });
    round_trip(ResumeCheckRecord {
        v: VERSION,
        window_id: "pcw:s:1".into(),
        at_ms: 7,
        result: check_result(),
    });
    round_trip(WatchCheckRecord {
        v: VERSION,
        window_id: "pcw:s:1".into(),
        at_ms: 7,
        missing: vec![job()],
    });
    let stale: Value = serde_json::from_str(
        TODAY
            .lines()
            .find(|l| l.contains("relay/stale-check"))
            .unwrap(),
    )
    .unwrap();
    let report: StaleReport = serde_json::from_value(stale["data"]["report"].clone()).unwrap();
    for recheck in [false, true] {
        round_trip(StaleCheckRecord {
            v: VERSION,
            window_id: "pcw:s:1".into(),
            at_ms: 7,
            report: Some(report.clone()),
            recheck,
        });
    }
    round_trip(ClearingRecord {
        v: VERSION,
        window_id: "pcw:s:1".into(),
        items: 4,
        tokens_freed: 5_000,
        tokens_before: Some(120_000),
        stubs: vec![ClearedStub {
            id: "e1".into(),
            call: "toolu_1".into(),
            nth: 1,
            text: "[stub]".into(),
        }],
    });
    for spent in [false, true] {
        let native = round_trip(NativeFallbackRecord {
            v: VERSION,
            window_id: "pcw:s:1".into(),
            spent,
        });
        assert_eq!(native.get("spent").is_some(), spent, "{native}");
    }
    round_trip(FallbackDisarmedRecord {
        v: VERSION,
        window_id: "pcw:s:1".into(),
    });
    round_trip(ReminderDetails {
        v: VERSION,
        window_id: Some("pcw:s:1".into()),
    });
    round_trip(ResetFailedDetails {
        v: VERSION,
        attempt: 2,
        source: Some("fallback".into()),
        retry: true,
        failures: 1,
        failure: Some("transient".into()),
        error: None,
    });
    assert_eq!(MessageDetails::current(), json!({"v": VERSION}));
    assert_eq!(
        MessageDetails::idle_request(),
        json!({"v": VERSION, "idle": true})
    );
    round_trip(MessageDetails {
        v: VERSION,
        idle: true,
    });
}

#[test]
fn todays_writers_are_byte_compatible_apart_from_the_version() {
    let written = [
        (
            WindowRecord::new("w1", "w0", 1, "new_context", "reset", None, None).to_value(),
            r#"{"relay":"window","v":1,"windowId":"w1","previousWindowId":"w0","attempt":1,"source":"new_context","kind":"reset","commit":null,"handoffPath":null}"#,
        ),
        (
            ResetMarkerRecord::new("w1", 1, "new_context").to_value(),
            r#"{"v":1,"windowId":"w1","attempt":1,"source":"new_context"}"#,
        ),
        (
            HandoffRecord {
                v: VERSION,
                path: "/h.md".into(),
                fingerprint: HandoffFingerprint {
                    at_ms: 5,
                    head: None,
                    text: "t".into(),
                },
                launch_prompt: None,
                jobs: None,
                workspace: None,
            }
            .to_value(),
            r#"{"v":1,"path":"/h.md","fingerprint":{"atMs":5,"head":null,"text":"t"},"launchPrompt":null}"#,
        ),
        (
            ClearingRecord {
                v: VERSION,
                window_id: "w1".into(),
                items: 2,
                tokens_freed: 9,
                tokens_before: Some(10),
                stubs: Vec::new(),
            }
            .to_value(),
            r#"{"v":1,"windowId":"w1","items":2,"tokensFreed":9,"tokensBefore":10}"#,
        ),
        (
            ResetFailedDetails {
                v: VERSION,
                attempt: 3,
                source: Some("manual".into()),
                retry: false,
                failures: 0,
                failure: Some("benign".into()),
                error: Some("aborted".into()),
            }
            .to_value(),
            r#"{"v":1,"attempt":3,"source":"manual","retry":false,"failures":0,"failure":"benign","error":"aborted"}"#,
        ),
        (
            ReminderDetails {
                v: VERSION,
                window_id: Some("w1".into()),
            }
            .to_value(),
            r#"{"v":1,"windowId":"w1"}"#,
        ),
    ];
    for (value, want) in written {
        assert_eq!(value.to_string(), want);
    }
}

/// Every Relay record of a session file, as (customType or "compaction", the record).
fn relay_records(file: &str) -> Vec<(String, Value)> {
    file.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|e| match e["type"].as_str() {
            Some("compaction") if e["details"]["relay"] == "window" => {
                Some(("compaction".to_string(), e["details"].clone()))
            }
            Some("custom") => Some((e["customType"].as_str()?.into(), e["data"].clone())),
            Some("custom_message") => {
                Some((e["customType"].as_str()?.into(), e["details"].clone()))
            }
            _ => None,
        })
        .filter(|(t, _)| t == "compaction" || t.starts_with("relay/"))
        .collect()
}

/// The record read through its struct and written again, or `None` for a message whose
/// details are empty (`null` before this version).
fn reread(custom_type: &str, value: &Value) -> Option<Value> {
    fn again<T: Record>(value: &Value) -> Value {
        T::read(value)
            .unwrap_or_else(|| panic!("does not read: {value}"))
            .to_value()
    }
    Some(match custom_type {
        "compaction" => again::<WindowRecord>(value),
        "relay/reset" => again::<ResetMarkerRecord>(value),
        "relay/note" => again::<NoteRecord>(value),
        "relay/handoff" => again::<HandoffRecord>(value),
        "relay/stale-check" => again::<StaleCheckRecord>(value),
        "relay/boot" | "relay/continue" if value.is_null() => return None,
        other => panic!("a record type this test does not know: {other}"),
    })
}

#[test]
fn todays_golden_records_read_and_write_back_unchanged_apart_from_the_version() {
    let records = relay_records(TODAY);
    assert!(records.len() >= 10, "{records:?}");
    for (custom_type, value) in records {
        let Some(mut again) = reread(&custom_type, &value) else {
            continue;
        };
        assert_eq!(again["v"], 0, "recorded before records had a version");
        again.as_object_mut().unwrap().shift_remove("v");
        assert_eq!(again.to_string(), value.to_string(), "{custom_type}");
    }
}

#[test]
fn earlier_relays_records_read_as_version_zero() {
    for file in EARLIER {
        let records = relay_records(file);
        assert!(records.len() >= 9);
        for (custom_type, value) in records {
            if let Some(again) = reread(&custom_type, &value) {
                assert_eq!(value.get("v"), None);
                assert_eq!(again["v"], 0, "read as version 0");
            }
        }
        // The earlier window marker: `kind` held the commit type, there was no `commit`.
        let marker = relay_records(file)
            .into_iter()
            .find(|(t, v)| t == "compaction" && v["source"] == "handoff")
            .map(|(_, v)| WindowRecord::read(&v).unwrap())
            .unwrap();
        assert_eq!(marker.v, 0);
        assert!(marker.handoff_path.is_some());
    }
}

#[test]
fn a_newer_version_is_read_for_what_this_version_understands() {
    let future = json!({
        "relay": "window", "v": 99, "windowId": "w2", "previousWindowId": "w1", "attempt": 4,
        "source": "handoff", "kind": "handoff", "commit": "budget", "handoffPath": "/h.md",
        "somethingNew": {"a": 1},
    });
    let record = WindowRecord::read(&future).unwrap();
    assert_eq!(record.v, 99);
    assert_eq!(record.window_id.as_deref(), Some("w2"));
    assert_eq!(record.commit.as_deref(), Some("budget"));
    let check =
        json!({"v": 7, "windowId": "w", "atMs": 3, "missing": [{"id": "j"}], "extra": true});
    assert_eq!(WatchCheckRecord::read(&check).unwrap().missing.len(), 1);
    let note = json!({"v": 2, "kind": "write", "path": "p", "content": "x", "atMs": 1, "tags": []});
    assert_eq!(NoteRecord::parse(&note).unwrap().content, "x");
}

#[test]
fn optional_fields_of_another_type_read_as_absent_and_required_ones_reject() {
    // A mistyped optional field is its default, never an error.
    let marker = json!({"relay": "window", "v": "one", "windowId": 5, "attempt": "2",
                        "kind": "handoff", "commit": 3, "handoffPath": ["x"]});
    let record = WindowRecord::read(&marker).unwrap();
    assert_eq!(
        (
            record.v,
            record.window_id,
            record.attempt,
            record.commit,
            record.handoff_path
        ),
        (0, None, None, None, None)
    );
    assert_eq!(record.kind.as_deref(), Some("handoff"));
    let notice = ResetFailedDetails::read(&json!({"retry": "yes", "source": "manual"})).unwrap();
    assert!(!notice.retry && !notice.owned());
    let stale = json!({"windowId": "w", "report": "garbled"});
    let stale = StaleCheckRecord::read(&stale).unwrap();
    assert_eq!((stale.report, stale.at_ms, stale.recheck), (None, 0, false));
    // Without what it is about, a record stands for nothing.
    assert_eq!(
        WindowRecord::read(&json!({"relay": "other", "windowId": "w"})),
        None
    );
    assert_eq!(WindowRecord::read(&json!({"windowId": "w"})), None);
    assert_eq!(WindowRecord::read(&Value::Null), None);
    assert_eq!(HandoffRecord::read(&json!({"path": "/h.md"})), None);
    assert_eq!(
        HandoffRecord::read(&json!({"path": "/h.md", "fingerprint": {"atMs": "x", "text": "t"}})),
        None
    );
    assert_eq!(
        ResumeCheckRecord::read(&json!({"windowId": "w", "atMs": 1, "result": {}})),
        None
    );
    assert_eq!(WatchCheckRecord::read(&json!({"windowId": "w"})), None);
}

#[test]
fn a_malformed_note_names_the_offending_key() {
    let cases = [
        (
            json!({"kind": 1, "path": "p", "content": "x", "atMs": 1}),
            "kind",
        ),
        (
            json!({"kind": "write", "path": ["p"], "content": "x", "atMs": 1}),
            "path",
        ),
        (
            json!({"kind": "write", "path": "p", "content": null, "atMs": 1}),
            "content",
        ),
        (
            json!({"kind": "write", "path": "p", "atMs": 1}),
            "`content`",
        ),
        (
            json!({"kind": "write", "path": "p", "content": "x"}),
            "`atMs`",
        ),
    ];
    for (data, key) in cases {
        let err = NoteRecord::parse(&data).unwrap_err();
        assert!(err.contains(key), "{err} should name {key}");
    }
}

#[test]
fn window_ids_named_by_records() {
    assert_eq!(
        named_window_id(&json!({"v": 1, "windowId": "pcw:s:root"})),
        Some("pcw:s:root")
    );
    assert_eq!(named_window_id(&json!({"windowId": 3})), None);
    assert_eq!(named_window_id(&json!({"v": 1})), None);
    assert_eq!(named_window_id(&Value::Null), None);
    assert!(is_relay_window(&json!({"relay": "window"})));
    assert!(!is_relay_window(&json!({"relay": 1})));
    assert!(!is_relay_window(&json!({})));
    assert_eq!(
        relay_window_id(&json!({"relay": "window", "windowId": "w"})).as_deref(),
        Some("w")
    );
    assert_eq!(
        relay_window_id(&json!({"piContext": "reset-v2", "windowId": "w"})),
        None
    );
}
