//! Tests of decoding and branch walking.

use super::*;
use serde_json::{json, Value};

fn entry(line: &str) -> Entry {
    match parse_line(line) {
        Ok(Line::Entry(e)) => e,
        other => panic!("expected an entry, got {other:?}"),
    }
}

fn message(line: &str) -> Message {
    match entry(line).kind {
        EntryKind::Message(m) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

/// The text of a message whose one text block is the JSON string literal `"{body}"`, as
/// the parser decodes it (an error when the literal is not valid JSON).
fn unescaped(body: &str) -> Result<String, ParseError> {
    let line = format!(
        r#"{{"type":"message","id":"a","message":{{"role":"user","content":[{{"type":"text","text":"{body}"}}]}}}}"#
    );
    parse_line(&line).map(|l| match l {
        Line::Entry(Entry {
            kind: EntryKind::Message(m),
            ..
        }) => m.text,
        other => panic!("expected a message, got {other:?}"),
    })
}

#[test]
fn unescape_json_strings() {
    assert_eq!(
        unescaped(r#"a\"b\\c\/d\be\ff\ng\rh\ti"#).unwrap(),
        "a\"b\\c/d\u{8}e\u{c}f\ng\rh\ti"
    );
    assert_eq!(unescaped(r"\u00e9\u4E2D \ud83d\ude00!").unwrap(), "é中 😀!");
    assert_eq!(unescaped("plain é 😀").unwrap(), "plain é 😀");
    for bad in [
        r"\x",
        r"\",
        r"\u12",
        r"\u12g4",
        r"\ud83d",
        r"\ud83dx",
        r"\ud83d\n",
        r"\ud83d\u0041",
        r"\ude00",
        "\\é",
    ] {
        assert!(unescaped(bad).is_err(), "{bad:?} must be rejected");
        let json = format!("\"{bad}\"");
        assert!(serde_json::from_str::<String>(&json).is_err(), "{bad:?}");
    }
}

proptest::proptest! {
    /// Any text survives serde_json's encoding and our decoding.
    #[test]
    fn unescape_round_trips(text in "\\PC*|[\\x00-\\x1f\"\\\\/\u{80}-\u{10ffff}a]*") {
        let json = serde_json::to_string(&text).unwrap();
        proptest::prop_assert_eq!(unescaped(&json[1..json.len() - 1]).unwrap(), text);
    }

    /// On arbitrary escape soup, we accept exactly what serde_json accepts for a string,
    /// with the same text.
    #[test]
    fn unescape_agrees_with_serde(
        pieces in proptest::collection::vec(
            proptest::prop_oneof![
                "[a-z\u{e9}\u{1F600}]{0,3}",
                "\\\\[\"\\\\/bfnrtux0]",
                "\\\\u[0-9a-fA-F]{4}",
                "\\\\u[dD][89abAB][0-9a-f]{2}",
                "\\\\u[dD][c-fC-F][0-9a-f]{2}",
                "\\\\u[0-9a-g]{0,3}",
            ],
            0..8,
        )
    ) {
        let body: String = pieces.concat();
        let ours = unescaped(&body).ok();
        let theirs = serde_json::from_str::<String>(&format!("\"{body}\"")).ok();
        proptest::prop_assert_eq!(ours, theirs, "{:?}", body);
    }
}

#[test]
fn text_blocks_decode_like_serde() {
    let m = message(
        r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"user","content":[{"type":"text","text":"x\u00e9\ud83d\ude00\"\\y"},{"type":"text","text":null},{"type":"text","text":"z"}]}}"#,
    );
    assert_eq!(m.text, "xé😀\"\\y\nz");
    for bad in [
        r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"user","content":[{"type":"text","text":5}]}}"#,
        r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"user","content":[{"type":"text","text":"\ud800"}]}}"#,
        r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"user","content":[{"type":"text","text":"\q"}]}}"#,
    ] {
        let err = parse_line(bad).unwrap_err();
        assert!(err.message.starts_with("invalid JSON"), "{bad}: {err}");
    }
}

#[test]
fn header_line() {
    let line = r#"{"type":"session","version":3,"id":"0199-abc","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w","parentSession":"/s/p.jsonl","extra":1}"#;
    assert_eq!(
        parse_line(line).unwrap(),
        Line::Header(Header {
            id: "0199-abc".into(),
            version: Some(3),
            cwd: Some("/w".into()),
            timestamp: Some("2025-01-01T00:00:00.000Z".into()),
            parent_session: Some("/s/p.jsonl".into()),
        })
    );
}

#[test]
fn base_fields() {
    let e = entry(
        r#"{"type":"model_change","id":"aa11","parentId":"bb22","timestamp":"T1","provider":"faux","modelId":"faux-1"}"#,
    );
    assert_eq!(e.id, "aa11");
    assert_eq!(e.parent_id.as_deref(), Some("bb22"));
    assert_eq!(e.timestamp, "T1");
    assert_eq!(
        e.kind,
        EntryKind::ModelChange {
            provider: "faux".into(),
            model_id: "faux-1".into()
        }
    );
    let root =
        entry(r#"{"type":"session_info","id":"r","parentId":null,"timestamp":"T","name":"demo"}"#);
    assert_eq!(root.parent_id, None);
    assert_eq!(
        root.kind,
        EntryKind::SessionInfo {
            name: Some("demo".into())
        }
    );
}

#[test]
fn user_message_string_and_blocks() {
    let m = message(
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"T","message":{"role":"user","content":"hello \"there\"\nsecond","timestamp":1}}"#,
    );
    assert_eq!(m.role, "user");
    assert_eq!(m.text, "hello \"there\"\nsecond");
    let m = message(
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"T","message":{"role":"user","content":[{"type":"text","text":"one"},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"two"}]}}"#,
    );
    assert_eq!(m.text, "one\n[image]\ntwo");
}

#[test]
fn assistant_message() {
    let m = message(
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"T","message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret plan"},{"type":"text","text":"Let me look."},{"type":"toolCall","id":"c1","name":"history_search_contents","arguments":{"query":"foo","limit":3}}],"api":"x","provider":"faux","model":"m","usage":{"input":10,"output":5,"cacheRead":1,"cacheWrite":0,"totalTokens":16,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1}}"#,
    );
    assert_eq!(m.role, "assistant");
    assert_eq!(
        m.text,
        "Let me look.\n[tool_call history_search_contents] {\"query\":\"foo\",\"limit\":3}"
    );
    assert!(!m.text.contains("secret"));
    assert_eq!(m.usage_total, Some(16));
    assert_eq!(m.stop_reason.as_deref(), Some("toolUse"));
}

#[test]
fn usage_total_falls_back_to_sum() {
    let m = message(
        r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"assistant","content":[],"usage":{"input":10,"output":5,"cacheRead":3,"cacheWrite":2,"totalTokens":0}}}"#,
    );
    assert_eq!(m.usage_total, Some(20));
    let m = message(
        r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"assistant","content":[]}}"#,
    );
    assert_eq!(m.usage_total, None);
}

#[test]
fn tool_result_message() {
    let m = message(
        r#"{"type":"message","id":"a","parentId":"p","timestamp":"T","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"file body"}],"isError":true,"timestamp":1}}"#,
    );
    assert_eq!(m.role, "toolResult");
    assert_eq!(m.text, "file body");
    assert_eq!(m.tool_name.as_deref(), Some("read"));
    assert_eq!(m.tool_call_id.as_deref(), Some("c1"));
    assert!(m.is_error);
}

#[test]
fn custom_bash_and_summary_messages() {
    let m = message(
        r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"custom","customType":"relay-note","content":"note text","display":true}}"#,
    );
    assert_eq!((m.role.as_str(), m.text.as_str()), ("custom", "note text"));
    assert_eq!(m.custom_type.as_deref(), Some("relay-note"));
    let m = message(
        r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"bashExecution","command":"ls -a","output":"x\ny","exitCode":0,"cancelled":false,"truncated":false}}"#,
    );
    assert_eq!(m.text, "$ ls -a\nx\ny");
    let m = message(
        r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"compactionSummary","summary":"sum","tokensBefore":5}}"#,
    );
    assert_eq!(m.text, "sum");
    let m = message(
        r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"branchSummary","summary":"bs","fromId":null}}"#,
    );
    assert_eq!(m.text, "bs");
    let m = message(
        r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"system","content":[{"type":"text","text":"sys"}],"sections":{"a":"b"},"toolsAdded":[]}}"#,
    );
    assert_eq!((m.role.as_str(), m.text.as_str()), ("system", "sys"));
    let m = message(
        r#"{"type":"message","id":"a","timestamp":"T","message":{"role":"mystery","content":"?"}}"#,
    );
    assert_eq!((m.role.as_str(), m.text.as_str()), ("mystery", "?"));
}

#[test]
fn compaction_and_branch_summary() {
    let e = entry(
        r#"{"type":"compaction","id":"c","parentId":"p","timestamp":"T","summary":"S","firstKeptEntryId":"k","tokensBefore":1234,"details":{"relay":"window","windowId":"pcw:s:abcd0123"},"fromHook":true,"usage":{"input":1},"systemMessage":{"role":"system","content":"x"}}"#,
    );
    assert_eq!(
        e.kind,
        EntryKind::Compaction {
            summary: "S".into(),
            first_kept_entry_id: Some("k".into()),
            tokens_before: Some(1234),
            details: json!({"relay":"window","windowId":"pcw:s:abcd0123"}),
            from_hook: true,
            system_message: Some(Box::new(SystemDelta {
                content_chars: 1,
                ..SystemDelta::default()
            })),
        }
    );
    let e = entry(
        r#"{"type":"compaction","id":"c","parentId":"p","timestamp":"T","summary":"S","firstKeptEntryId":null,"tokensBefore":0}"#,
    );
    assert!(matches!(
        e.kind,
        EntryKind::Compaction {
            first_kept_entry_id: None,
            from_hook: false,
            details: Value::Null,
            ..
        }
    ));
    let e = entry(
        r#"{"type":"branch_summary","id":"b","parentId":"p","timestamp":"T","fromId":"f","summary":"went elsewhere","details":[1]}"#,
    );
    assert_eq!(
        e.kind,
        EntryKind::BranchSummary {
            from_id: Some("f".into()),
            summary: "went elsewhere".into(),
            details: json!([1])
        }
    );
}

#[test]
fn custom_and_custom_message() {
    let e = entry(
        r#"{"type":"custom","id":"c","parentId":"p","timestamp":"T","customType":"relay-reset","data":{"n":1}}"#,
    );
    assert_eq!(
        e.kind,
        EntryKind::Custom {
            custom_type: "relay-reset".into(),
            data: json!({"n":1})
        }
    );
    let e =
        entry(r#"{"type":"custom","id":"c","parentId":"p","timestamp":"T","customType":"bare"}"#);
    assert_eq!(
        e.kind,
        EntryKind::Custom {
            custom_type: "bare".into(),
            data: Value::Null
        }
    );
    let e = entry(
        r#"{"type":"custom_message","id":"c","parentId":"p","timestamp":"T","customType":"reminder","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"display":true,"details":{"k":2}}"#,
    );
    assert_eq!(
        e.kind,
        EntryKind::CustomMessage {
            custom_type: "reminder".into(),
            text: "a\nb".into(),
            display: true,
            details: json!({"k":2}),
            estimate_chars: 2,
        }
    );
}

#[test]
fn small_entry_types() {
    assert_eq!(
        entry(r#"{"type":"label","id":"l","parentId":"p","timestamp":"T","targetId":"x","label":"bookmark"}"#).kind,
        EntryKind::Label { target_id: "x".into(), label: Some("bookmark".into()) }
    );
    assert_eq!(
        entry(r#"{"type":"label","id":"l","parentId":"p","timestamp":"T","targetId":"x"}"#).kind,
        EntryKind::Label {
            target_id: "x".into(),
            label: None
        }
    );
    assert_eq!(
        entry(r#"{"type":"thinking_level_change","id":"t","parentId":"p","timestamp":"T","thinkingLevel":"high"}"#).kind,
        EntryKind::ThinkingLevelChange { thinking_level: "high".into() }
    );
    assert_eq!(
        entry(r#"{"type":"context_edit","id":"e","parentId":"p","timestamp":"T","targetId":"x","replacement":null}"#).kind,
        EntryKind::ContextEdit { target_id: "x".into(), replacement: None }
    );
    assert_eq!(
        entry(r#"{"type":"context_edit","id":"e","parentId":"p","timestamp":"T","targetId":"x","replacement":{"content":[{"type":"text","text":"r"}]}}"#).kind,
        EntryKind::ContextEdit { target_id: "x".into(), replacement: Some(Replacement { content_chars: 1, assistant_chars: 1 }) }
    );
    assert_eq!(
        entry(r#"{"type":"usage","id":"u","parentId":"p","timestamp":"T","kind":"cache_warm","provider":"a","model":"b","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3}}"#).kind,
        EntryKind::Usage
    );
    assert_eq!(
        entry(r#"{"type":"session_info","id":"s","parentId":"p","timestamp":"T"}"#).kind,
        EntryKind::SessionInfo { name: None }
    );
}

#[test]
fn unknown_types_and_fields_are_kept() {
    let e = entry(
        r#"{"type":"future_thing","id":"f","parentId":"p","timestamp":"T","payload":{"deep":[1,2,{"x":null}]}}"#,
    );
    assert_eq!(
        e.kind,
        EntryKind::Unknown {
            entry_type: "future_thing".into()
        }
    );
    assert_eq!(e.parent_id.as_deref(), Some("p"));
    let m = message(
        r#"{"type":"message","id":"a","timestamp":"T","novel":true,"message":{"role":"user","content":[{"type":"text","text":"x","newField":[1]},{"type":"audio","data":"..."}],"brandNew":{"a":1}}}"#,
    );
    assert_eq!(m.text, "x");
}

#[test]
fn structural_errors_are_clear() {
    assert!(parse_line("{not json")
        .unwrap_err()
        .message
        .contains("invalid JSON"));
    assert!(parse_line(r#"{"id":"x"}"#)
        .unwrap_err()
        .message
        .contains("`type`"));
    assert!(parse_line(r#"{"type":"message","timestamp":"T"}"#)
        .unwrap_err()
        .message
        .contains("`id`"));
    assert!(parse_line(r#"{"type":"message","id":"a"}"#)
        .unwrap_err()
        .message
        .contains("`message`"));
    assert!(parse_line(r#"{"type":"label","id":"a"}"#)
        .unwrap_err()
        .message
        .contains("`targetId`"));
    assert!(parse_line(
        r#"{"type":"message","id":"a","message":{"role":"user","content":{"oops":1}}}"#
    )
    .is_err());
    assert!(parse_entry(r#"{"type":"session","id":"s"}"#).is_err());
}

#[test]
fn malformed_lines_are_reported_and_skipped() {
    let text = concat!(
        r#"{"type":"session","version":3,"id":"S","timestamp":"T","cwd":"/w"}"#,
        "\n",
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"T","message":{"role":"user","content":"hi"}}"#,
        "\r\n",
        "\n",
        "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",trunc\n",
        r#"{"type":"custom","id":"c","parentId":"a","timestamp":"T","customType":"x"}"#,
        "\n",
        r#"{"type":"session","id":"S2"}"#,
        "\n",
    );
    let parsed = parse_session(text);
    assert_eq!(parsed.header.as_ref().map(|h| h.id.as_str()), Some("S"));
    let ids: Vec<_> = parsed.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["a", "c"]);
    assert_eq!(parsed.errors.len(), 2);
    assert_eq!(parsed.errors[0].line, 4);
    assert!(
        parsed.errors[0].message.contains("invalid JSON"),
        "{}",
        parsed.errors[0]
    );
    assert_eq!(parsed.errors[1].line, 6);
    assert_eq!(
        parsed.errors[0].to_string(),
        format!("line 4: {}", parsed.errors[0].message)
    );
}

#[test]
fn entries_array() {
    let json = r#"[{"type":"message","id":"a","parentId":null,"timestamp":"T","message":{"role":"user","content":"x"}},{"type":"custom","id":"b","parentId":"a","timestamp":"T","customType":"k"}]"#;
    let entries = parse_entries(json).unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1].id, "b");
    assert_eq!(parse_entries("[]").unwrap(), vec![]);
    let bad =
        r#"[{"type":"custom","id":"a","customType":"k"},{"type":"custom"},{"type":"x","id":"c"}]"#;
    let err = parse_entries(bad).unwrap_err();
    assert!(err.message.contains("element 1"), "{err}");
    let bad = r#"[{"type":"custom","id":"a"},{"type":"message","id":"b","message":{"content":5}}]"#;
    assert!(parse_entries(bad)
        .unwrap_err()
        .message
        .contains("element 1"));
    assert!(parse_entries("{}").is_err());
    assert!(parse_entries("[] x").is_err());
}

#[test]
fn entry_matches_line_parse() {
    let json = r#"{"type":"compaction","id":"c","parentId":"p","timestamp":"T","summary":"S","firstKeptEntryId":"k","tokensBefore":3}"#;
    assert_eq!(
        Line::Entry(parse_entry(json).unwrap()),
        parse_line(json).unwrap()
    );
}

fn e(id: &str, parent: Option<&str>) -> Entry {
    Entry {
        id: id.into(),
        parent_id: parent.map(Into::into),
        timestamp: String::new(),
        kind: EntryKind::Usage,
    }
}

#[test]
fn branch_follows_parents() {
    // a - b - c
    //      \- d
    let entries = vec![
        e("a", None),
        e("b", Some("a")),
        e("c", Some("b")),
        e("d", Some("b")),
    ];
    assert_eq!(branch_indices(&entries, None), vec![0, 1, 3]);
    assert_eq!(branch_indices(&entries, Some("c")), vec![0, 1, 2]);
    assert_eq!(branch_indices(&entries, Some("zz")), Vec::<usize>::new());
    assert_eq!(branch_indices(&[], None), Vec::<usize>::new());
    let cyclic = vec![e("a", Some("b")), e("b", Some("a"))];
    assert_eq!(branch_indices(&cyclic, None), vec![0, 1]);
    let orphan = vec![e("x", Some("missing")), e("y", Some("x"))];
    assert_eq!(branch_indices(&orphan, None), vec![0, 1]);
}

/// Records what `stream_branch` hands over; `begin` forgets earlier entries.
#[derive(Default)]
struct Recorder {
    begins: usize,
    entries: Vec<Entry>,
}

impl BranchSink for Recorder {
    fn begin(&mut self) {
        self.begins += 1;
        self.entries.clear();
    }
    fn entry(&mut self, entry: Entry) {
        self.entries.push(entry);
    }
}

/// `stream_branch` must give exactly the branch `parse_session` + `branch_indices` give.
fn assert_stream_matches(text: &str, leaf: &str) -> Recorder {
    let parsed = parse_session(text);
    let expected: Vec<Entry> = branch_indices(&parsed.entries, Some(leaf))
        .into_iter()
        .map(|i| parsed.entries[i].clone())
        .collect();
    let mut rec = Recorder::default();
    let found = stream_branch(text, leaf, &mut rec);
    assert_eq!(found, !expected.is_empty(), "leaf {leaf} in {text}");
    if found {
        assert!(rec.begins >= 1);
        assert_eq!(rec.entries, expected, "leaf {leaf} in {text}");
    } else {
        assert_eq!(
            rec.begins, 0,
            "the sink is untouched when the leaf is missing"
        );
        assert!(rec.entries.is_empty());
    }
    rec
}

fn line(id: &str, parent: Option<&str>, text: &str) -> String {
    serde_json::to_string(&json!({
        "type": "message", "id": id, "parentId": parent, "timestamp": "T",
        "message": {"role": "user", "content": [{"type": "text", "text": text}]}
    }))
    .unwrap()
}

#[test]
fn stream_branch_linear_file_is_read_once() {
    let text = [
        r#"{"type":"session","version":3,"id":"S","timestamp":"T","cwd":"/w"}"#.to_string(),
        line("a", None, "first \"quoted\"\nline"),
        "{broken".to_string(),
        line("b", Some("a"), "second"),
        String::new(),
        line("c", Some("b"), "third"),
    ]
    .join("\r\n");
    let rec = assert_stream_matches(&text, "c");
    assert_eq!(rec.begins, 1, "a linear file takes the one-pass path");
    assert_eq!(rec.entries.len(), 3);
    assert_stream_matches(&text, "b");
    assert_stream_matches(&text, "a");
    assert_stream_matches(&text, "missing");
    assert_stream_matches("", "a");
}

#[test]
fn stream_branch_branched_files() {
    // a - b - c - d
    //      \- e - f     (the file ends on the abandoned branch or on the live one)
    let lines = [
        line("a", None, "A"),
        line("b", Some("a"), "B"),
        line("c", Some("b"), "C"),
        line("d", Some("c"), "D"),
        line("e", Some("b"), "E"),
        line("f", Some("e"), "F"),
    ];
    let text = lines.join("\n");
    for leaf in ["a", "b", "c", "d", "e", "f", "zz"] {
        assert_stream_matches(&text, leaf);
    }
    // Repeated ids in an otherwise linear chain resolve as `branch_indices` resolves them.
    let text = [
        line("a", None, "1"),
        line("b", Some("a"), "2"),
        line("a", Some("b"), "3"),
        line("c", Some("a"), "4"),
    ]
    .join("\n");
    for leaf in ["a", "b", "c"] {
        assert_stream_matches(&text, leaf);
    }
    // A cycle and a dangling parent.
    let text = [line("x", Some("y"), "1"), line("y", Some("x"), "2")].join("\n");
    assert_stream_matches(&text, "y");
    let text = [line("x", Some("gone"), "1"), line("y", Some("x"), "2")].join("\n\n");
    assert_eq!(assert_stream_matches(&text, "y").begins, 1);
}

proptest::proptest! {
    /// Decoding many lines at once gives exactly the entries of decoding each line alone,
    /// whatever blank, malformed, split or padded lines come between.
    #[test]
    fn lines_decode_together_as_alone(
        pieces in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just(r#"{"type":"message","id":"m1","parentId":null,"timestamp":"T","message":{"role":"user","content":"a\"b\\n"}}"#),
                proptest::strategy::Just(r#"{"type":"message","id":"m2","parentId":"m1","message":{"role":"assistant","content":[{"type":"text","text":"x\ty"},{"type":"toolCall","name":"f","arguments":{"a":[1]}}]}}"#),
                proptest::strategy::Just(r#"{"type":"custom","id":"c","customType":"k","data":{"n":1}}"#),
                proptest::strategy::Just(r#"{"type":"session","id":"S"}"#),
                proptest::strategy::Just(r#"{"type":"label","id":"l"}"#),
                proptest::strategy::Just(r#"{"type":"compaction","#),
                proptest::strategy::Just(r#""id":"z","summary":"s"}"#),
                proptest::strategy::Just("{broken"),
                proptest::strategy::Just("}"),
                proptest::strategy::Just("5"),
                proptest::strategy::Just("[]"),
                proptest::strategy::Just("\u{a0}"),
                proptest::strategy::Just("\u{feff}{}"),
                proptest::strategy::Just(""),
                proptest::strategy::Just(" \t"),
                proptest::strategy::Just("x"),
            ],
            0..12,
        ),
        seps in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just("\n"),
                proptest::strategy::Just("\r\n"),
                proptest::strategy::Just(" \n"),
                proptest::strategy::Just("\n\n"),
                proptest::strategy::Just(" "),
                proptest::strategy::Just("\r"),
                proptest::strategy::Just(""),
            ],
            12,
        ),
        lead in proptest::prop_oneof![proptest::strategy::Just(""), proptest::strategy::Just("  "), proptest::strategy::Just("\n")],
    ) {
        let mut text = lead.to_string();
        for (piece, sep) in pieces.iter().zip(&seps) {
            text.push_str(piece);
            text.push_str(sep);
        }
        let alone: Vec<Entry> = text.split('\n').filter_map(last_entry_of_line).collect();
        let mut together = Vec::new();
        push_entries_of_lines(&text, &mut together);
        proptest::prop_assert_eq!(together, alone, "{:?}", text);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    #[test]
    fn stream_branch_agrees_with_branch_indices(
        parents in proptest::collection::vec(proptest::option::of(0usize..12), 0..12),
        ids in proptest::collection::vec(0usize..14, 12),
        bad in proptest::collection::vec(proptest::prelude::any::<bool>(), 12),
        leaf in 0usize..14,
    ) {
        let mut lines = Vec::new();
        for (i, parent) in parents.iter().enumerate() {
            if bad[i] && i % 3 == 0 {
                lines.push("{\"type\":\"message\",\"id\":".to_string());
                continue;
            }
            let id = format!("e{}", ids[i]);
            // Mostly linear: the parent is the line before, sometimes any other id.
            let parent = match parent {
                Some(p) if *p < 9 && i > 0 => Some(format!("e{}", ids[i - 1])),
                Some(p) => Some(format!("e{p}")),
                None => None,
            };
            lines.push(line(&id, parent.as_deref(), &format!("text {i}")));
        }
        assert_stream_matches(&lines.join("\n"), &format!("e{leaf}"));
    }
}

mod empty_id_tests {
    use super::*;

    #[test]
    fn an_empty_id_is_a_clear_parse_error_and_the_rest_loads() {
        let err = parse_line(r#"{"type":"thinking_level_change","id":""}"#).unwrap_err();
        assert!(err.to_string().contains("empty `id`"), "{err}");
        assert!(parse_line(r#"{"type":"session","version":3,"id":""}"#).is_err());
        let text = "{\"type\":\"message\",\"id\":\"\",\"timestamp\":\"T\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n{\"type\":\"message\",\"id\":\"b\",\"timestamp\":\"T\",\"message\":{\"role\":\"user\",\"content\":\"y\"}}\n";
        let parsed = parse_session(text);
        assert_eq!(parsed.entries.len(), 1);
        assert_eq!(parsed.errors.len(), 1);
        assert_eq!(parsed.errors[0].line, 1);
    }
}

/// The characters Pi's `estimateTokens` counts, kind by kind (JavaScript `length`, UTF-16).
#[test]
fn estimate_chars_follow_pi_for_every_content_kind() {
    let image = r#"{"type":"image","data":"AAAA","mimeType":"image/png"}"#;
    let cases: Vec<(String, u64)> = vec![
        (r#"{"role":"user","content":"héllo 😀"}"#.into(), 8),
        (format!(r#"{{"role":"user","content":[{{"type":"text","text":"look"}},{image}]}}"#), 4 + 4_800),
        (format!(r#"{{"role":"user","content":[{image},{image}]}}"#), 9_600),
        (r#"{"role":"user","content":[{"type":"text","text":""}]}"#.into(), 0),
        (format!(r#"{{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{{"type":"text","text":"ok"}},{image}],"isError":false}}"#), 2 + 4_800),
        (format!(r#"{{"role":"custom","customType":"x","content":[{image}],"display":true}}"#), 4_800),
        // Assistant: text, thinking, tool call name + JSON of the arguments; images are not counted.
        (r#"{"role":"assistant","content":[{"type":"text","text":"abc"},{"type":"thinking","thinking":"hmm…"},{"type":"toolCall","id":"t","name":"read","arguments":{"path":"a.rs","n":2}}]}"#.into(), 3 + 4 + 4 + r#"{"path":"a.rs","n":2}"#.len() as u64),
        (r#"{"role":"assistant","content":[{"type":"toolCall","id":"t","name":"x","arguments":{"q":"漢\"\n"}}]}"#.into(), 1 + r#"{"q":"漢\"\n"}"#.chars().count() as u64),
        (r#"{"role":"assistant","content":"plain string"}"#.into(), 0),
        (r#"{"role":"bashExecution","command":"ls -la","output":"a\nb","exitCode":0}"#.into(), 6 + 3),
        (r#"{"role":"compactionSummary","summary":"the summary","tokensBefore":1}"#.into(), 11),
        (r#"{"role":"branchSummary","summary":"elsewhere","fromId":"f"}"#.into(), 9),
        // System: content, section texts, JSON of the tools added.
        (r#"{"role":"system","content":"You are Pi.","sections":{"a":"xx","b":null},"toolsAdded":[{"name":"t","description":"d","parameters":{}}]}"#.into(), 11 + 2 + r#"[{"name":"t","description":"d","parameters":{}}]"#.len() as u64),
        (r#"{"role":"system","content":"","toolsAdded":[]}"#.into(), 2),
        (r#"{"role":"mystery","content":"x"}"#.into(), 0),
    ];
    for (json, want) in cases {
        let m = message(&format!(
            r#"{{"type":"message","id":"m","parentId":null,"timestamp":"T","message":{json}}}"#
        ));
        assert_eq!(m.estimate_chars, want, "{json}");
    }
    // A custom_message entry counts like a custom message; a context edit's replacement both ways.
    let e = entry(&format!(
        r#"{{"type":"custom_message","id":"c","parentId":"p","timestamp":"T","customType":"x","content":[{{"type":"text","text":"ab"}},{image}],"display":false}}"#
    ));
    assert!(matches!(
        e.kind,
        EntryKind::CustomMessage {
            estimate_chars: 4_802,
            ..
        }
    ));
    let e = entry(&format!(
        r#"{{"type":"context_edit","id":"e","parentId":"p","timestamp":"T","targetId":"x","replacement":{{"content":[{{"type":"thinking","thinking":"tt"}},{image}]}}}}"#
    ));
    assert_eq!(
        e.kind,
        EntryKind::ContextEdit {
            target_id: "x".into(),
            replacement: Some(Replacement {
                content_chars: 4_800,
                assistant_chars: 2
            })
        }
    );
}

// ----- the replaced packages' entries (foreign.rs) -----

fn custom_of(line: &str) -> (String, Value) {
    match entry(line).kind {
        EntryKind::Custom { custom_type, data } => (custom_type, data),
        other => panic!("expected a custom entry, got {other:?}"),
    }
}

#[test]
fn pi_context_note_operations_become_relay_notes() {
    let cases = [
        (
            r#"{"op":"write","path":"plan.md","text":"a\n","createdAt":1000,"updatedAt":2000}"#,
            Some(json!({"v":0,"kind":"write","path":"plan.md","content":"a\n","atMs":2000})),
        ),
        (
            r#"{"op":"append","path":"plan.md","text":"b","createdAt":1000,"updatedAt":3000}"#,
            Some(json!({"v":0,"kind":"append","path":"plan.md","content":"b","atMs":3000})),
        ),
        // Mark-only (no text): no Relay meaning, stays theirs.
        (
            r#"{"op":"write","path":"plan.md","stale":true,"createdAt":1,"updatedAt":2}"#,
            None,
        ),
        (r#"{"op":"delete","path":"plan.md","text":"x"}"#, None),
    ];
    for (data, want) in cases {
        let line =
            format!(r#"{{"type":"custom","id":"n","customType":"pi-context/note","data":{data}}}"#);
        let (custom_type, got) = custom_of(&line);
        match want {
            Some(want) => {
                assert_eq!(custom_type, crate::notes::NOTE_CUSTOM_TYPE, "{data}");
                assert_eq!(got, want, "{data}");
                assert!(crate::notes::NoteOp::from_data(&got).is_ok(), "{data}");
                assert_eq!(unimported(&entry(&line).kind), None);
            }
            None => {
                assert_eq!(custom_type, "pi-context/note", "{data}");
                assert_eq!(unimported(&entry(&line).kind), Some("pi-context/note"));
            }
        }
    }
}

#[test]
fn pi_context_messages_become_relay_messages() {
    let cases = [
        ("pi-context/boot", crate::engine::BOOT_TYPE),
        ("pi-context/guidance", crate::engine::REMINDER_TYPE),
        ("pi-context/continuation", crate::engine::CONTINUE_TYPE),
        ("pi-context/warning", "pi-context/warning"),
        ("other/thing", "other/thing"),
    ];
    for (theirs, ours) in cases {
        let line = format!(
            r#"{{"type":"custom_message","id":"m","customType":"{theirs}","content":"x","display":true}}"#
        );
        let kind = entry(&line).kind;
        match &kind {
            EntryKind::CustomMessage { custom_type, .. } => assert_eq!(custom_type, ours),
            other => panic!("expected a custom message, got {other:?}"),
        }
        let left = theirs == ours && theirs.starts_with("pi-context/");
        assert_eq!(unimported(&kind).is_some(), left, "{theirs}");
    }
    let (marker, _) =
        custom_of(r#"{"type":"custom","id":"r","customType":"pi-context/reset-marker","data":{}}"#);
    assert_eq!(marker, crate::engine::RESET_MARKER_TYPE);
}

fn details_of(details: &str) -> Value {
    let line = format!(
        r#"{{"type":"compaction","id":"c","summary":"s","firstKeptEntryId":"a","tokensBefore":1,"details":{details}}}"#
    );
    match entry(&line).kind {
        EntryKind::Compaction { details, .. } => details,
        other => panic!("expected a compaction, got {other:?}"),
    }
}

#[test]
fn replaced_packages_compactions_read_as_relay_windows() {
    // (details, marker kind, commit, counts toward the cap, window id Relay shows)
    type Case<'a> = (&'a str, &'a str, Option<&'a str>, bool, Option<&'a str>);
    let cases: [Case; 8] = [
        (
            r#"{"piContext":"reset-v2","windowId":"pcw:s:0badcafe"}"#,
            "reset",
            None,
            false,
            Some("pcw:s:0badcafe"),
        ),
        // Another pi-context version: Pi's compaction, window id from the entry id (theirs too).
        (
            r#"{"piContext":"reset-v1","windowId":"x"}"#,
            "compaction",
            None,
            false,
            None,
        ),
        (
            r#"{"piContext":"reset-v2"}"#,
            "compaction",
            None,
            false,
            None,
        ),
        (
            r#"{"kind":"handoff","path":"/h/1.md"}"#,
            "handoff",
            Some("budget"),
            true,
            None,
        ),
        (
            r#"{"kind":"handoff","trigger":"hard","handoffPath":"/h/2.md"}"#,
            "handoff",
            Some("hard"),
            true,
            None,
        ),
        (
            r#"{"kind":"handoff","commit":"idle"}"#,
            "handoff",
            Some("idle"),
            false,
            None,
        ),
        (
            r#"{"kind":"handoff","commit":"voluntary"}"#,
            "handoff",
            Some("voluntary"),
            false,
            None,
        ),
        // Relay's own marker is left as it is.
        (
            r#"{"relay":"window","kind":"reset","commit":"forcedGuard","windowId":"pcw:s:1"}"#,
            "reset",
            Some("forcedGuard"),
            false,
            Some("pcw:s:1"),
        ),
    ];
    for (details, kind, commit, counts, window) in cases {
        let d = details_of(details);
        let marker = WindowMarker::of(&d);
        assert_eq!(marker.kind, kind, "{details}");
        assert_eq!(marker.commit.as_deref(), commit, "{details}");
        assert_eq!(marker.counts(), counts, "{details}");
        let relay_id = (d.get("relay") == Some(&json!("window")))
            .then(|| d.get("windowId").and_then(Value::as_str))
            .flatten();
        assert_eq!(relay_id, window, "{details}");
    }
    assert_eq!(
        details_of(r#"{"kind":"handoff","path":"/h/1.md"}"#)["handoffPath"],
        json!("/h/1.md")
    );
}
