//! Tests of the mirror, the search and the tools (snapshots in `src/snapshots/`).

use super::*;
use crate::entry::{parse_line, Entry, EntryKind, Line, Message};
use crate::text::{byte_at_char, char_count};
use crate::ToolOutput;
use serde_json::{json, Value};

/// Snapshots live in `crates/relay-core/src/snapshots/` (named after `history::tests`).
macro_rules! snap {
    ($e:expr) => {
        insta::with_settings!({snapshot_path => "../snapshots"}, {
            insta::assert_snapshot!($e)
        })
    };
}

const S: &str = "sess1";

/// Search sizes small enough that the tests' histories span many blocks and chunks.
pub(super) const SMALL: super::store::Tuning = super::store::Tuning {
    block: 256,
    first_chunk: 256,
    max_chunk: 1 << 17,
    bulk_scan_min: 1 << 12,
    recent: 600,
};

/// An empty history with [`SMALL`] sizes.
fn small(session_id: &str) -> History {
    History::with_tuning(session_id, SMALL)
}

fn entry(id: &str, kind: EntryKind) -> Entry {
    Entry {
        id: id.into(),
        parent_id: None,
        timestamp: format!("2025-01-01T00:00:{id}Z"),
        kind,
    }
}

fn msg(id: &str, role: &str, text: &str) -> Entry {
    entry(
        id,
        EntryKind::Message(Message {
            role: role.into(),
            text: text.into(),
            ..Default::default()
        }),
    )
}

fn tool(id: &str, name: &str, text: &str) -> Entry {
    entry(
        id,
        EntryKind::Message(Message {
            role: "toolResult".into(),
            text: text.into(),
            tool_name: Some(name.into()),
            ..Default::default()
        }),
    )
}

fn compaction(id: &str, summary: &str, details: Value) -> Entry {
    entry(
        id,
        EntryKind::Compaction {
            summary: summary.into(),
            first_kept_entry_id: None,
            tokens_before: None,
            details,
            from_hook: false,
            system_message: None,
        },
    )
}

fn build(entries: &[Entry]) -> History {
    let mut h = small(S);
    for e in entries {
        h.push(e);
    }
    h
}

fn ok(out: ToolOutput) -> Value {
    assert!(!out.is_error, "unexpected tool error: {}", out.text);
    serde_json::from_str(&out.text).unwrap()
}

fn err(out: ToolOutput) -> String {
    assert!(out.is_error, "expected an error, got {}", out.text);
    out.text
}

fn ids(v: &Value) -> Vec<String> {
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["item_id"].as_str().unwrap().to_string())
        .collect()
}

/// A small session: two windows, every item kind.
fn fixture() -> History {
    build(&[
        msg("01", "system", "system prompt"),
        msg("02", "user", "Please fix the parser bug."),
        msg(
            "03",
            "assistant",
            "Looking.\n[tool_call read] {\"path\":\"src/parser.rs\"}",
        ),
        tool("04", "read", "fn parse() { todo!() }"),
        entry(
            "05",
            EntryKind::Custom {
                custom_type: "relay-reset".into(),
                data: Value::Null,
            },
        ),
        compaction(
            "06",
            "Context window reset.",
            json!({"relay": "window", "windowId": "pcw:sess1:0badcafe"}),
        ),
        entry(
            "07",
            EntryKind::CustomMessage {
                custom_type: "note".into(),
                text: "boot block".into(),
                display: false,
                details: Value::Null,
                estimate_chars: 0,
            },
        ),
        entry(
            "08",
            EntryKind::Message(Message {
                role: "bashExecution".into(),
                text: "$ cargo test\nok".into(),
                ..Default::default()
            }),
        ),
        tool("09", "history_search_contents", "{\"items\":[]}"),
        msg("10", "assistant", "The parser bug is fixed."),
    ])
}

#[test]
fn windows_split_at_compactions() {
    let h = build(&[
        msg("a1", "user", "one"),
        compaction("c1", "s1", Value::Null),
        msg("a2", "user", "two"),
        compaction(
            "c2",
            "s2",
            json!({"relay": "window", "windowId": "pcw:sess1:minted01"}),
        ),
        compaction("c3", "s3", json!({"relay": "other", "windowId": "pcw:x"})),
        compaction("c4", "s4", json!({"relay": "window", "windowId": 7})),
    ]);
    assert_eq!(
        h.window_ids(),
        [
            "pcw:sess1:root",
            "pcw:sess1:c1",
            "pcw:sess1:minted01",
            "pcw:sess1:c3",
            "pcw:sess1:c4"
        ]
    );
    assert_eq!(h.current_window_id(), "pcw:sess1:c4");
    assert_eq!(h.window_count(), 5);
    assert_eq!(h.entry_count(), 6);
    // The compaction summary is the first item of its window.
    let v = ok(h.list_items(&json!({"window_id": "pcw:sess1:minted01", "recent_first": false})));
    assert_eq!(ids(&v), ["c2"]);
    assert_eq!(v["items"][0]["role"], "system");
    assert_eq!(v["items"][0]["content"], "s2");
    let empty = small("x");
    assert_eq!(empty.window_ids(), ["pcw:x:root"]);
    assert_eq!(empty.tip(), None);
}

#[test]
fn role_mapping_and_tools() {
    let h = build(&[
        msg("u", "user", "u"),
        msg("a", "assistant", "a"),
        tool("t", "history_list_items", "t"),
        tool("t2", "bash", "t2"),
        tool("t3", "_private", "t3"),
        entry(
            "b",
            EntryKind::Message(Message {
                role: "bashExecution".into(),
                text: "$ ls\n".into(),
                ..Default::default()
            }),
        ),
        msg("cu", "custom", "cu"),
        msg("cs", "compactionSummary", "cs"),
        msg("bs", "branchSummary", "bs"),
        msg("sy", "system", "sy"),
        msg("zz", "weird", "zz"),
        entry(
            "cm",
            EntryKind::CustomMessage {
                custom_type: "k".into(),
                text: "cm".into(),
                display: true,
                details: Value::Null,
                estimate_chars: 0,
            },
        ),
        entry(
            "br",
            EntryKind::BranchSummary {
                from_id: None,
                summary: "br".into(),
                details: Value::Null,
            },
        ),
        entry(
            "la",
            EntryKind::Label {
                target_id: "u".into(),
                label: None,
            },
        ),
        entry(
            "un",
            EntryKind::Unknown {
                entry_type: "x".into(),
            },
        ),
    ]);
    let v = ok(h.list_items(&json!({"recent_first": false})));
    let got: Vec<(String, String, Value, Value)> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["item_id"].as_str().unwrap().into(),
                i["role"].as_str().unwrap().into(),
                i["tool_name"].clone(),
                i["tool_namespace"].clone(),
            )
        })
        .collect();
    let n = Value::Null;
    let expect = vec![
        ("u", "user", n.clone(), n.clone()),
        ("a", "assistant", n.clone(), n.clone()),
        ("t", "tool", json!("history_list_items"), json!("history")),
        ("t2", "tool", json!("bash"), n.clone()),
        ("t3", "tool", json!("_private"), n.clone()),
        ("b", "tool", json!("bash"), n.clone()),
        ("cu", "user", n.clone(), n.clone()),
        ("cs", "system", n.clone(), n.clone()),
        ("bs", "system", n.clone(), n.clone()),
        ("cm", "user", n.clone(), n.clone()),
        ("br", "system", n.clone(), n.clone()),
    ];
    let expect: Vec<(String, String, Value, Value)> = expect
        .into_iter()
        .map(|(a, b, c, d)| (a.into(), b.into(), c, d))
        .collect();
    assert_eq!(got, expect);
    assert!(h.contains("sy") && h.contains("un") && h.contains("la"));
    assert_eq!(h.tip(), Some("un"));
    // Filters.
    assert_eq!(
        ids(&ok(h.list_items(
            &json!({"tool_name": "bash", "recent_first": false})
        ))),
        ["t2", "b"]
    );
    assert_eq!(
        ids(&ok(h.list_items(&json!({"tool_namespace": "history"})))),
        ["t"]
    );
    assert_eq!(
        ids(&ok(h.list_items(&json!({"role": "system"})))),
        ["br", "bs", "cs"]
    );
    assert_eq!(
        ids(&ok(
            h.list_items(&json!({"role": "tool", "tool_name": "bash"}))
        )),
        ["b", "t2"]
    );
    assert!(ids(&ok(h.list_items(&json!({"tool_name": "nope"})))).is_empty());
    assert!(ids(&ok(
        h.list_items(&json!({"role": "assistant", "tool_name": "bash"}))
    ))
    .is_empty());
}

#[test]
fn every_item_reachable_after_many_compactions() {
    let mut h = small(S);
    let mut expected = Vec::new();
    for w in 0..6 {
        if w > 0 {
            h.push(&compaction(
                &format!("c{w}"),
                &format!("summary {w}"),
                Value::Null,
            ));
            expected.push((format!("pcw:{S}:c{w}"), format!("c{w}")));
        }
        for k in 0..4 {
            let id = format!("m{w}_{k}");
            h.push(&msg(
                &id,
                if k % 2 == 0 { "user" } else { "assistant" },
                &format!("window {w} item {k}"),
            ));
            let wid = if w == 0 {
                format!("pcw:{S}:root")
            } else {
                format!("pcw:{S}:c{w}")
            };
            expected.push((wid, id));
        }
    }
    for (wid, iid) in &expected {
        let v = ok(h.read_item(&json!({"window_id": wid, "item_id": iid})));
        assert_eq!(&v["window_id"], wid);
        assert_eq!(&v["item_id"], iid);
        let found = ok(
            h.search_contents(&json!({"query": v["content"].as_str().unwrap(), "window_id": wid}))
        );
        assert!(
            ids(&found).contains(iid),
            "{iid} not found by its own content"
        );
    }
    let all = ok(h.list_items(&json!({"limit": 1000, "recent_first": false})));
    let all_ids: Vec<String> = expected.iter().map(|(_, i)| i.clone()).collect();
    assert_eq!(ids(&all), all_ids);
    let windows = ok(h.list_windows(&json!({"recent_first": false})));
    assert_eq!(windows["total_windows"], 6);
    assert_eq!(windows["windows"][0]["item_count"], 4);
    assert_eq!(windows["windows"][3]["item_count"], 5);
    assert_eq!(windows["windows"][5]["current"], true);
    assert_eq!(windows["windows"][0]["current"], false);
}

#[test]
fn truncate_after_drops_later_entries() {
    let mut h = fixture();
    let before_items = h.item_count();
    assert!(!h.truncate_after("nope"));
    assert_eq!(h.item_count(), before_items);
    assert!(h.truncate_after("04"));
    assert_eq!(h.tip(), Some("04"));
    assert_eq!(h.entry_count(), 4);
    assert_eq!(h.window_ids(), ["pcw:sess1:root"]);
    assert!(!h.contains("06") && !h.contains("10") && h.contains("04"));
    assert!(ids(&ok(h.search_contents(&json!({"query": "fixed"})))).is_empty());
    assert!(
        err(h.list_items(&json!({"window_id": "pcw:sess1:0badcafe"})))
            .contains(r#"argument "window_id" is not a window of this session"#)
    );
    assert!(ids(&ok(
        h.list_items(&json!({"tool_name": "history_search_contents"}))
    ))
    .is_empty());
    // Another branch grows from there; removed ids can come back.
    h.push(&msg("11", "user", "a different path"));
    h.push(&compaction("06", "again", Value::Null));
    assert_eq!(h.window_ids(), ["pcw:sess1:root", "pcw:sess1:06"]);
    let v = ok(h.list_items(&json!({"recent_first": false})));
    assert_eq!(ids(&v), ["02", "03", "04", "11", "06"]);
    assert_eq!(
        ids(&ok(h.search_contents(&json!({"query": "different"})))),
        ["11"]
    );
    // Truncating to the tip changes nothing.
    assert!(h.truncate_after("06"));
    assert_eq!(h.entry_count(), 6);
    // Pushing an id already present is ignored.
    h.push(&msg("02", "user", "dup"));
    assert_eq!(h.entry_count(), 6);
}

#[test]
fn argument_errors_name_the_argument() {
    let h = fixture();
    // Every error names the tool and the argument, in the one format of `crate::args`.
    let cases: Vec<(ToolOutput, &str)> = vec![
        (
            h.list_windows(&json!({"limitt": 1})),
            r#"history_list_windows: unknown argument "limitt": did you mean "limit"? (accepted: limit, offset, recent_first)"#,
        ),
        (
            h.list_windows(&json!({"limit": 0})),
            r#"history_list_windows: argument "limit" must be a positive integer, got 0"#,
        ),
        (
            h.list_windows(&json!({"limit": -2})),
            r#"history_list_windows: argument "limit" must be a positive integer, got -2"#,
        ),
        (
            h.list_windows(&json!({"limit": 1.5})),
            r#"history_list_windows: argument "limit" must be a positive integer, got 1.5"#,
        ),
        (
            h.list_windows(&json!({"limit": "3"})),
            r#"history_list_windows: argument "limit" must be a positive integer, got "3""#,
        ),
        (
            h.list_windows(&json!({"recent_first": "yes"})),
            r#"history_list_windows: argument "recent_first" must be true or false, got "yes""#,
        ),
        (
            h.list_windows(&json!([1])),
            "history_list_windows: arguments must be an object, got [1]",
        ),
        (
            h.list_items(&json!({"window_id": "pcw:sess1:nope"})),
            r#"history_list_items: argument "window_id" is not a window of this session: "pcw:sess1:nope" (list windows with history_list_windows)"#,
        ),
        (
            h.list_items(&json!({"window_id": 3})),
            r#"history_list_items: argument "window_id" must be a string, got 3"#,
        ),
        (
            h.list_items(&json!({"role": "developer"})),
            r#"history_list_items: argument "role" must be one of "user", "assistant", "tool", "system", got "developer""#,
        ),
        (
            h.list_items(&json!({"tool_name": ["x"]})),
            r#"history_list_items: argument "tool_name" must be a string, got ["x"]"#,
        ),
        (
            h.list_items(&json!({"max_chars_per_item": 0})),
            r#"history_list_items: argument "max_chars_per_item" must be a positive integer, got 0"#,
        ),
        (
            h.read_item(&json!({"item_id": "02"})),
            r#"history_read_item: argument "window_id" is required"#,
        ),
        (
            h.read_item(&json!({"window_id": "pcw:sess1:root"})),
            r#"history_read_item: argument "item_id" is required"#,
        ),
        (
            h.read_item(&json!({"window_id": "pcw:sess1:root", "item_id": null})),
            r#"history_read_item: argument "item_id" is required"#,
        ),
        (
            h.read_item(&json!({"window_id": "pcw:sess1:root", "item_id": "zz"})),
            r#"history_read_item: argument "item_id" is not an item of this session: "zz" (list items with history_list_items)"#,
        ),
        (
            h.read_item(&json!({"window_id": "pcw:sess1:root", "item_id": "05"})),
            r#"history_read_item: argument "item_id" is not an item of this session: "05" (list items with history_list_items)"#,
        ),
        (
            h.read_item(&json!({"window_id": "pcw:sess1:root", "item_id": "10"})),
            r#"history_read_item: argument "item_id" names an item of window "pcw:sess1:0badcafe", not of window_id "pcw:sess1:root""#,
        ),
        (
            h.read_item(&json!({"window_id": "w", "item_id": "02"})),
            r#"history_read_item: argument "window_id" is not a window of this session: "w" (list windows with history_list_windows)"#,
        ),
        (
            h.read_item(
                &json!({"window_id": "pcw:sess1:root", "item_id": "02", "offset_chars": -1}),
            ),
            r#"history_read_item: argument "offset_chars" must be a non-negative integer, got -1"#,
        ),
        (
            h.read_item(
                &json!({"window_id": "pcw:sess1:root", "item_id": "02", "offset_chars": 0.5}),
            ),
            r#"history_read_item: argument "offset_chars" must be a non-negative integer, got 0.5"#,
        ),
        (
            h.read_item(&json!({"window_id": "pcw:sess1:root", "item_id": "02", "limit_chars": 0})),
            r#"history_read_item: argument "limit_chars" must be a positive integer, got 0"#,
        ),
        (
            h.read_item(
                &json!({"window_id": "pcw:sess1:root", "item_id": "02", "offset_chars": 27}),
            ),
            r#"history_read_item: argument "offset_chars" is 27, past the end of the item (total_chars 26)"#,
        ),
        (
            h.search_contents(&json!({})),
            r#"history_search_contents: argument "query" is required"#,
        ),
        (
            h.search_contents(&json!({"query": ""})),
            r#"history_search_contents: argument "query" must not be empty"#,
        ),
        (
            h.search_contents(&json!({"query": 5})),
            r#"history_search_contents: argument "query" must be a string, got 5"#,
        ),
        (
            h.search_contents(&json!({"query": "x", "limit": 0})),
            r#"history_search_contents: argument "limit" must be a positive integer, got 0"#,
        ),
        (
            h.search_contents(&json!({"query": "x", "max_chars_per_item": 5})),
            r#"history_search_contents: unknown argument "max_chars_per_item" (accepted: query, window_id, role, tool_namespace, tool_name, limit, offset, recent_first)"#,
        ),
    ];
    for (out, want) in cases {
        assert_eq!(err(out), want);
    }
    // Null arguments and null-valued optional arguments are accepted.
    ok(h.list_windows(&Value::Null));
    ok(h.list_items(&json!({"window_id": null, "role": null, "limit": null})));
    ok(h.read_item(&json!({"window_id": "pcw:sess1:root", "item_id": "02", "offset_chars": 26})));
    ok(h.read_item(&json!({"window_id": "pcw:sess1:root", "item_id": "02", "offset_chars": 2.0})));
}

#[test]
fn char_safe_offsets() {
    // 2 emoji (4 bytes), CJK (3 bytes), accented (2 bytes), ASCII.
    let text = "😀😀漢字é-abc";
    let h = build(&[msg("u", "user", text), msg("v", "user", "plain ascii")]);
    let root = "pcw:sess1:root";
    let read = |off: usize, lim: usize| {
        ok(h.read_item(
            &json!({"window_id": root, "item_id": "u", "offset_chars": off, "limit_chars": lim}),
        ))
    };
    let v = read(0, 3);
    assert_eq!(v["content"], "😀😀漢");
    assert_eq!(v["total_chars"], 9);
    assert_eq!(v["next_offset_chars"], 3);
    let v = read(3, 3);
    assert_eq!(v["content"], "字é-");
    assert_eq!(v["next_offset_chars"], 6);
    let v = read(6, 100);
    assert_eq!(v["content"], "abc");
    assert_eq!(v["next_offset_chars"], Value::Null);
    let v = read(9, 5);
    assert_eq!(v["content"], "");
    assert_eq!(v["next_offset_chars"], Value::Null);
    let v = ok(h.read_item(
        &json!({"window_id": root, "item_id": "v", "offset_chars": 6, "limit_chars": 2}),
    ));
    assert_eq!(v["content"], "as");
    assert_eq!(v["next_offset_chars"], 8);
    let v = ok(h.list_items(&json!({"max_chars_per_item": 2, "recent_first": false})));
    assert_eq!(v["items"][0]["content"], "😀😀");
    assert_eq!(v["items"][0]["truncated"], true);
    let v = ok(h.list_items(&json!({"max_chars_per_item": 9, "recent_first": false})));
    assert_eq!(v["items"][0]["content"], text);
    assert_eq!(v["items"][0]["truncated"], false);
    let v = ok(h.search_contents(&json!({"query": "é-a"})));
    assert_eq!(v["items"][0]["match_offset_chars"], 4);
    assert_eq!(v["items"][0]["snippet_offset_chars"], 0);
    assert_eq!(v["items"][0]["snippet"], text);
}

#[test]
fn search_snippet_is_bounded() {
    let long = format!("{}NEEDLE{}", "α".repeat(200), "β".repeat(200));
    let h = build(&[msg("u", "user", &long)]);
    let v = ok(h.search_contents(&json!({"query": "NEEDLE"})));
    let hit = &v["items"][0];
    assert_eq!(hit["match_offset_chars"], 200);
    assert_eq!(hit["snippet_offset_chars"], 120);
    assert_eq!(
        hit["snippet"],
        format!("{}NEEDLE{}", "α".repeat(80), "β".repeat(80))
    );
    assert_eq!(hit["total_chars"], 406);
}

#[test]
fn search_order_limits_filters() {
    let h = build(&[
        msg("a", "user", "needle one, needle two"),
        tool("b", "read", "no match here"),
        tool("c", "history_read_item", "a needle in a tool"),
        compaction("d", "summary with needle", Value::Null),
        msg("e", "assistant", "xx needle"),
    ]);
    assert_eq!(
        ids(&ok(h.search_contents(&json!({"query": "needle"})))),
        ["e", "d", "c", "a"]
    );
    assert_eq!(
        ids(&ok(h.search_contents(
            &json!({"query": "needle", "recent_first": false})
        ))),
        ["a", "c", "d", "e"]
    );
    let v = ok(h.search_contents(&json!({"query": "needle", "limit": 2})));
    assert_eq!(ids(&v), ["e", "d"]);
    assert_eq!(v["has_more"], true);
    let v = ok(h.search_contents(&json!({"query": "needle", "limit": 4})));
    assert_eq!(v["has_more"], false);
    // One result per item, with the first match offset even when searching backwards.
    let v = ok(h.search_contents(&json!({"query": "needle", "window_id": "pcw:sess1:root"})));
    assert_eq!(ids(&v), ["c", "a"]);
    assert_eq!(v["items"][1]["match_offset_chars"], 0);
    assert_eq!(
        ids(&ok(h.search_contents(
            &json!({"query": "needle", "role": "tool"})
        ))),
        ["c"]
    );
    assert_eq!(
        ids(&ok(h.search_contents(
            &json!({"query": "needle", "tool_namespace": "history"})
        ))),
        ["c"]
    );
    assert!(ids(&ok(
        h.search_contents(&json!({"query": "needle", "tool_name": "read"}))
    ))
    .is_empty());
    assert_eq!(
        ids(&ok(h.search_contents(
            &json!({"query": "needle", "role": "system"})
        ))),
        ["d"]
    );
    // Case-sensitive, literal.
    assert!(ids(&ok(h.search_contents(&json!({"query": "NEEDLE"})))).is_empty());
    assert!(ids(&ok(h.search_contents(&json!({"query": "need.e"})))).is_empty());
}

#[test]
fn selective_filter_search_path() {
    // Few tool items among many: the search visits only the candidate items.
    let mut entries = Vec::new();
    for i in 0..100 {
        entries.push(msg(&format!("u{i}"), "user", "needle everywhere"));
        if i % 40 == 5 {
            entries.push(tool(&format!("t{i}"), "grep_files", "needle in tool"));
            entries.push(tool(&format!("x{i}"), "grep_files", "nothing"));
        }
    }
    let h = build(&entries);
    assert_eq!(
        ids(&ok(h.search_contents(
            &json!({"query": "needle", "role": "tool"})
        ))),
        ["t85", "t45", "t5"]
    );
    assert_eq!(
        ids(&ok(h.search_contents(
            &json!({"query": "needle", "tool_namespace": "grep", "recent_first": false, "limit": 2})
        ))),
        ["t5", "t45"]
    );
    let v = ok(h.list_items(&json!({"tool_name": "grep_files", "limit": 3})));
    assert_eq!(ids(&v), ["x85", "t85", "x45"]);
    assert_eq!(v["has_more"], true);
}

#[test]
fn large_history_search_matches_naive() {
    // Big items so that the backward scan crosses many chunks and chunk edges.
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut entries = Vec::new();
    let mut texts = Vec::new();
    for i in 0..120 {
        let len = 2_000 + next(12_000) as usize;
        let mut t: String = (0..len)
            .map(|k| if (k + i) % 7 == 0 { 'é' } else { 'x' })
            .collect();
        match next(5) {
            0 => t.insert_str(byte_at_char(&t, next(len as u64) as usize), "needle"),
            1 => t.push_str("nee"),
            2 => t.insert_str(0, "dle"),
            3 => t.push_str("needle"),
            _ => {}
        }
        entries.push(msg(&format!("i{i}"), "user", &t));
        texts.push(t);
    }
    let h = build(&entries);
    for query in ["needle", "x", "éxxxxxxé", "needleneedle"] {
        let expected: Vec<String> = (0..texts.len())
            .filter(|&i| texts[i].contains(query))
            .map(|i| format!("i{i}"))
            .collect();
        let got = ids(&ok(h.search_contents(
            &json!({"query": query, "recent_first": false, "limit": 1000}),
        )));
        assert_eq!(got, expected, "{query} oldest first");
        let mut rev = expected.clone();
        rev.reverse();
        let got = ok(h.search_contents(&json!({"query": query, "limit": 1000})));
        assert_eq!(ids(&got), rev, "{query} recent first");
        for item in got["items"].as_array().unwrap() {
            let i: usize = item["item_id"].as_str().unwrap()[1..].parse().unwrap();
            let want = texts[i][..texts[i].find(query).unwrap()].chars().count();
            assert_eq!(item["match_offset_chars"], want);
        }
    }
}

#[test]
fn matches_never_span_items() {
    let h = build(&[
        msg("a", "user", "xxfoo"),
        msg("b", "user", "barxx"),
        msg("c", "user", "foo"),
        msg("d", "user", "bar"),
    ]);
    for recent_first in [true, false] {
        let v = ok(h.search_contents(&json!({"query": "foobar", "recent_first": recent_first})));
        assert!(ids(&v).is_empty(), "{v}");
    }
    let h = build(&[
        msg("a", "user", "foobar"),
        msg("b", "user", "xxfoo"),
        msg("c", "user", "barfoobar"),
    ]);
    for recent_first in [true, false] {
        let mut got = ids(&ok(h.search_contents(
            &json!({"query": "foobar", "recent_first": recent_first}),
        )));
        got.sort();
        assert_eq!(got, ["a", "c"]);
    }
    let v = ok(h.search_contents(&json!({"query": "foobar"})));
    assert_eq!(v["items"][0]["match_offset_chars"], 3);
}

#[test]
fn list_items_limits_and_order() {
    let h = fixture();
    let v = ok(h.list_items(&json!({"limit": 2})));
    assert_eq!(ids(&v), ["10", "09"]);
    assert_eq!(v["has_more"], true);
    let v = ok(h.list_items(
        &json!({"limit": 2, "recent_first": false, "window_id": "pcw:sess1:0badcafe"}),
    ));
    assert_eq!(ids(&v), ["06", "07"]);
    let v = ok(h.list_items(&json!({"window_id": "pcw:sess1:root"})));
    assert_eq!(ids(&v), ["04", "03", "02"]);
    assert_eq!(v["has_more"], false);
    let many: Vec<Entry> = (0..60)
        .map(|i| msg(&format!("{i:03}"), "user", "x"))
        .collect();
    let v = ok(build(&many).list_items(&json!({})));
    assert_eq!(
        v["items"].as_array().unwrap().len(),
        DEFAULT_LIST_ITEMS_LIMIT
    );
    assert_eq!(v["has_more"], true);
}

#[test]
fn list_windows_limit_and_order() {
    let h = fixture();
    let v = ok(h.list_windows(&json!({"limit": 1})));
    assert_eq!(v["windows"].as_array().unwrap().len(), 1);
    assert_eq!(v["windows"][0]["window_id"], "pcw:sess1:0badcafe");
    let v = ok(h.list_windows(&json!({"recent_first": false})));
    assert_eq!(v["windows"][0]["window_id"], "pcw:sess1:root");
    assert_eq!(v["windows"][0]["created_at"], "2025-01-01T00:00:01Z");
}

#[test]
fn parsed_lines_feed_history() {
    let lines = [
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"T","message":{"role":"user","content":[{"type":"text","text":"find me"}]}}"#,
        r#"{"type":"compaction","id":"c1","parentId":"a1","timestamp":"T","summary":"S","firstKeptEntryId":"a1","tokensBefore":5,"details":{"relay":"window","windowId":"pcw:sess1:12345678"}}"#,
    ];
    let mut h = small(S);
    for l in lines {
        let Line::Entry(e) = parse_line(l).unwrap() else {
            panic!()
        };
        h.push(&e);
    }
    assert_eq!(h.current_window_id(), "pcw:sess1:12345678");
    let v = ok(h.search_contents(&json!({"query": "find"})));
    assert_eq!(v["items"][0]["window_id"], "pcw:sess1:root");
}

#[test]
fn memory_stays_close_to_text_size() {
    let big = "x".repeat(4000);
    let entries: Vec<Entry> = (0..2000)
        .map(|i| msg(&format!("{i:08x}"), "user", &big))
        .collect();
    // The production sizes (the small test blocks cost more bitmap than text).
    let mut h = History::new(S);
    for e in &entries {
        h.push(e);
    }
    h.shrink_to_fit();
    assert_eq!(h.text_bytes(), 8_000_000);
    assert!(
        h.heap_bytes() < h.text_bytes() * 3 / 2,
        "{} vs {}",
        h.heap_bytes(),
        h.text_bytes()
    );
}

#[test]
fn snapshot_list_windows() {
    snap!(fixture().list_windows(&json!({})).text);
}

#[test]
fn snapshot_list_items() {
    snap!(
        fixture()
            .list_items(&json!({"max_chars_per_item": 12}))
            .text
    );
}

#[test]
fn snapshot_read_item() {
    let h = fixture();
    snap!(
        h.read_item(&json!({"window_id": "pcw:sess1:root", "item_id": "03", "offset_chars": 3, "limit_chars": 10})).text
    );
}

#[test]
fn snapshot_search_contents() {
    snap!(fixture().search_contents(&json!({"query": "parser"})).text);
}

#[test]
fn snapshot_error() {
    snap!(
        fixture()
            .read_item(&json!({"window_id": "pcw:sess1:root", "item_id": "06"}))
            .text
    );
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// Search agrees with a naive per-item `contains`, in both orders, with any filter.
        #[test]
        fn search_matches_naive(
            texts in proptest::collection::vec("[ab😀]{0,8}", 1..12),
            query in "[ab😀]{1,3}",
            tools in proptest::collection::vec(0u8..3, 12),
            recent_first in any::<bool>(),
            only_tool in any::<bool>(),
        ) {
            let mut h = small(S);
            let mut expected = Vec::new();
            for (i, t) in texts.iter().enumerate() {
                let id = format!("e{i}");
                let is_tool = tools[i] == 0;
                if is_tool { h.push(&tool(&id, "read", t)); } else { h.push(&msg(&id, "user", t)); }
                if t.contains(query.as_str()) && (!only_tool || is_tool) {
                    expected.push(id);
                }
            }
            if recent_first { expected.reverse(); }
            let mut args = json!({"query": query, "recent_first": recent_first, "limit": 100});
            if only_tool { args["role"] = json!("tool"); }
            let v = ok(h.search_contents(&args));
            prop_assert_eq!(ids(&v), expected);
        }

        /// With the block filter in play (many small blocks in tests) search still agrees with
        /// a naive `contains` in both orders, after appends, a navigation back (a truncation
        /// that cuts a block) and more appends.
        #[test]
        fn block_filtered_search_matches_naive_across_truncation(
            texts in proptest::collection::vec("[a-z0-9]{0,300}", 2..40),
            more in proptest::collection::vec("[a-z0-9]{0,300}", 0..10),
            cut in any::<prop::sample::Index>(),
            query in "[a-z0-9]{3,5}",
            plant in proptest::collection::vec(any::<bool>(), 50),
            recent_first in any::<bool>(),
        ) {
            let mut h = small(S);
            let mut kept: Vec<(String, String)> = Vec::new();
            let with = |i: usize, t: &str| if plant[i % plant.len()] && i.is_multiple_of(3) { format!("{t}{query}{t}") } else { t.to_string() };
            for (i, t) in texts.iter().enumerate() {
                let t = with(i, t);
                h.push(&msg(&format!("e{i}"), "user", &t));
                kept.push((format!("e{i}"), t));
            }
            let keep = cut.index(texts.len()) + 1;
            let last = format!("e{}", keep - 1);
            prop_assert!(h.truncate_after(&last));
            kept.truncate(keep);
            for (j, t) in more.iter().enumerate() {
                let i = 100 + j;
                let t = with(i, t);
                h.push(&msg(&format!("e{i}"), "user", &t));
                kept.push((format!("e{i}"), t));
            }
            let mut expected: Vec<String> = kept.iter().filter(|(_, t)| t.contains(query.as_str())).map(|(id, _)| id.clone()).collect();
            if recent_first { expected.reverse(); }
            let v = ok(h.search_contents(&json!({"query": query, "recent_first": recent_first, "limit": 1000})));
            prop_assert_eq!(ids(&v), expected);
        }

        /// The vectorised counts agree with the standard library on any text.
        #[test]
        fn counts_match_std(text in "(\\PC|😀|é|\n){0,300}", pad in 0usize..200) {
            let text = format!("{}{text}", "x".repeat(pad));
            prop_assert_eq!(char_count(&text), text.chars().count());
            prop_assert_eq!(utf16_len(&text), text.encode_utf16().count());
        }
    }

    /// A rare needle the block filter cannot judge (longer than a block) is searched newest
    /// first by scanning the rest of a large arena on two threads; when the helper thread cannot
    /// be spawned, this thread scans both halves and the answer is the same, item for item.
    #[test]
    fn rare_needle_scan_falls_back_to_one_thread_when_spawning_fails() {
        use crate::history::search::fallback;
        let long = format!("RARE-NEEDLE{}", "#".repeat(SMALL.block));
        let (head, tail) = long.split_at(8);
        let mut h = small(S);
        let mut expected = Vec::new();
        for i in 0..600 {
            let mut t = format!("{i:04} ").repeat(400);
            // Rare and old: the newest-first scan has to go back most of the arena.
            if i % 97 == 3 {
                t.insert_str(1000, &long);
                expected.push(format!("e{i}"));
            }
            // Split over two items: never a match, in either half.
            if i == 301 {
                t.push_str(head);
            }
            if i == 302 {
                t.insert_str(0, tail);
            }
            h.push(&msg(&format!("e{i}"), "user", &t));
        }
        expected.reverse();
        assert!(h.text_bytes() > 1 << 20);
        let args = json!({"query": long, "limit": 100});

        let (scans, fallbacks) = fallback::counts();
        let parallel = ok(h.search_contents(&args));
        let after = fallback::counts();
        assert!(after.0 > scans, "the two-thread scan ran");
        assert_eq!(after.1, fallbacks, "and its helper thread was spawned");
        assert_eq!(ids(&parallel), expected);

        fallback::force(true);
        let sequential = ok(h.search_contents(&args));
        fallback::force(false);
        let forced = fallback::counts();
        assert!(forced.0 > after.0, "the two-thread scan ran again");
        assert_eq!(
            forced.1,
            forced.0 - after.0 + after.1,
            "every spawn failed and fell back"
        );
        assert_eq!(sequential, parallel);
    }

    /// The block filter rules out the blocks a needle cannot start in (so the search skips
    /// them) and never one where it does start.
    #[test]
    fn the_block_filter_skips_blocks_without_the_needle() {
        let block = SMALL.block;
        let mut h = small(S);
        let mut seed = 11u64;
        let mut texts = Vec::new();
        for i in 0..200 {
            let t: String = (0..500)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    char::from(b"abcdefghijklmnopqrstuvwxyz0123456789 "[(seed >> 33) as usize % 37])
                })
                .collect();
            let t = if i == 120 {
                format!("{t}StaleLease 5e1f")
            } else {
                t
            };
            h.push(&msg(&format!("e{i}"), "user", &t));
            texts.push(t);
        }
        let blocks = h.text_bytes().div_ceil(block);
        let want = h.blocks.needle(b"StaleLease 5e1f").unwrap();
        let candidates: Vec<usize> = (0..blocks)
            .filter(|&b| h.blocks.may_start_in(b, &want))
            .collect();
        let at = h.arena.find("StaleLease 5e1f").unwrap();
        assert!(
            candidates.contains(&(at / block)),
            "the block where it starts"
        );
        assert!(
            candidates.len() * 10 < blocks,
            "{} of {blocks} blocks to scan",
            candidates.len()
        );
        assert!(
            h.blocks.needle(b"ab").is_none(),
            "shorter than a trigram: a plain scan"
        );
        let v = ok(h.search_contents(&json!({"query": "StaleLease 5e1f"})));
        assert_eq!(ids(&v), vec!["e120".to_string()]);
    }

    /// Newest-first search over an arena of many chunks (the chunk grows as the scan goes
    /// back) finds the same items as a naive scan, including matches across chunk edges.
    #[test]
    fn newest_first_search_over_a_large_arena() {
        let mut h = small(S);
        let mut texts = Vec::new();
        let mut seed = 7u64;
        for i in 0..3000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = 200 + (seed >> 33) as usize % 5000;
            let mut t = "abcdefgh".repeat(len / 8);
            if (seed >> 20).is_multiple_of(97) || i == 3 {
                let at = (seed >> 40) as usize % t.len();
                t.insert_str(at, "NEEDLE");
            }
            if i % 700 == 5 {
                // A needle split over two items must not match.
                t.push_str("NEED");
            }
            if i % 700 == 6 {
                t.insert_str(0, "LE");
            }
            h.push(&msg(&format!("e{i}"), "user", &t));
            texts.push(t);
        }
        assert!(h.text_bytes() > 6 << 20, "spans several chunk sizes");
        let all: Vec<String> = (0..texts.len())
            .rev()
            .filter(|&i| texts[i].contains("NEEDLE"))
            .map(|i| format!("e{i}"))
            .collect();
        assert!(all.len() > 20);
        for limit in [1, 5, all.len(), all.len() + 10] {
            let v = ok(h.search_contents(&json!({"query": "NEEDLE", "limit": limit})));
            assert_eq!(
                ids(&v),
                all[..limit.min(all.len())].to_vec(),
                "limit {limit}"
            );
        }
        let v = ok(
            h.search_contents(&json!({"query": "NEEDLE", "recent_first": false, "limit": 1000}))
        );
        let mut forward = all.clone();
        forward.reverse();
        assert_eq!(ids(&v), forward);
    }
}

use crate::args::abbreviated;

/// Text with multibyte characters and JSON escapes, `n` characters long.
fn awkward_text(n: usize) -> String {
    "ab\"cé\n漢\\d\u{1}".chars().cycle().take(n).collect()
}

mod capped {
    use super::*;
    use crate::test_support::within_cap;

    #[test]
    fn read_item_with_a_huge_limit_is_capped_and_pages_to_the_end() {
        let text = awkward_text(1_000_000);
        let h = build(&[msg("01", "user", &text)]);
        let w = format!("pcw:{S}:root");
        let first = within_cap(
            &h.read_item(&json!({"window_id": w, "item_id": "01", "limit_chars": 100_000_000u64})),
        );
        assert!(first["capped"].is_string());
        snap!(serde_json::to_string_pretty(&abbreviated(&first)).unwrap());
        // Paging with next_offset_chars gives back exactly the item.
        let mut got = String::new();
        let mut offset = 0u64;
        let mut pages = 0;
        loop {
            let v = within_cap(&h.read_item(&json!({"window_id": w, "item_id": "01", "offset_chars": offset, "limit_chars": 100_000_000u64})));
            assert_eq!(v["offset_chars"], offset);
            got.push_str(v["content"].as_str().unwrap());
            pages += 1;
            match v["next_offset_chars"].as_u64() {
                Some(n) => {
                    assert!(n > offset);
                    assert!(v["capped"].is_string());
                    offset = n;
                }
                None => break,
            }
        }
        assert_eq!(got, text);
        assert!(pages > 10, "{pages} pages");
        // A small limit is not capped and says nothing about it.
        let v = ok(h.read_item(&json!({"window_id": w, "item_id": "01", "limit_chars": 10})));
        assert!(v.get("capped").is_none());
        assert_eq!(v["next_offset_chars"], 10);
    }

    #[test]
    fn list_items_with_a_huge_limit_and_max_chars_is_capped_with_next_offset() {
        let entries: Vec<Entry> = (0..40)
            .map(|i| msg(&format!("{i:02}"), "user", &awkward_text(30_000)))
            .collect();
        let h = build(&entries);
        let first = within_cap(&h.list_items(
            &json!({"limit": 1_000_000, "max_chars_per_item": 1_000_000_000u64, "recent_first": false}),
        ));
        assert_eq!(first["has_more"], true);
        assert!(first["capped"].is_string());
        snap!(serde_json::to_string_pretty(&abbreviated(&first)).unwrap());
        // Paging reaches every item once, in order.
        let mut seen = Vec::new();
        let mut offset = 0u64;
        loop {
            let v = within_cap(&h.list_items(&json!({"limit": 1_000_000, "max_chars_per_item": 1_000_000_000u64, "recent_first": false, "offset": offset})));
            let page = ids(&v);
            assert!(!page.is_empty());
            for id in page {
                if seen.last() != Some(&id) {
                    seen.push(id);
                }
            }
            match v["next_offset"].as_u64() {
                Some(n) => offset = n,
                None => break,
            }
        }
        let want: Vec<String> = (0..40).map(|i| format!("{i:02}")).collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn search_with_a_huge_limit_and_a_huge_query_is_capped() {
        let entries: Vec<Entry> = (0..3000)
            .map(|i| {
                msg(
                    &format!("{i:04}"),
                    "user",
                    &format!("item {i}: NEEDLE here"),
                )
            })
            .collect();
        let h = build(&entries);
        let first = within_cap(&h.search_contents(&json!({"query": "NEEDLE", "limit": 1_000_000})));
        assert_eq!(first["has_more"], true);
        assert!(first["capped"].is_string());
        snap!(serde_json::to_string_pretty(&abbreviated(&first)).unwrap());
        let mut total = 0;
        let mut offset = 0u64;
        loop {
            let v = within_cap(&h.search_contents(
                &json!({"query": "NEEDLE", "limit": 1_000_000, "offset": offset}),
            ));
            total += v["items"].as_array().unwrap().len();
            match v["next_offset"].as_u64() {
                Some(n) => offset = n,
                None => break,
            }
        }
        assert_eq!(total, 3000);
        // A query longer than the cap: its snippet is cut, the reply stays under the cap.
        let big = "Q".repeat(200_000);
        let h = build(&[msg("01", "user", &format!("x{big}y"))]);
        let v = within_cap(&h.search_contents(&json!({"query": big})));
        assert_eq!(v["items"][0]["match_offset_chars"], 1);
    }

    #[test]
    fn list_windows_of_a_long_session_is_capped() {
        let entries: Vec<Entry> = (0..2000)
            .map(|i| {
                compaction(
                    &format!("{i:04}"),
                    "boot",
                    json!({"relay": "window", "windowId": format!("pcw:{S}:{i:08x}"), "kind": "reset"}),
                )
            })
            .collect();
        let h = build(&entries);
        let v = within_cap(&h.list_windows(&json!({})));
        assert!(v["capped"].is_string());
        let next = v["next_offset"].as_u64().unwrap();
        assert_eq!(v["windows"].as_array().unwrap().len() as u64, next);
        let rest = within_cap(&h.list_windows(&json!({"offset": next, "limit": 3})));
        assert_eq!(rest["windows"].as_array().unwrap().len(), 3);
        assert_eq!(rest["next_offset"], next + 3);
        assert!(rest.get("capped").is_none());
    }
}

/// A fork or clone copies the root window's entries into a session of another id: the root
/// window keeps the id those entries name (the boot block's, a record's, the first reset's),
/// a navigation back before the naming entry gives it the session's own id again, and another
/// package's compaction is named after the same session.
#[test]
fn the_root_window_keeps_the_id_its_copied_entries_name() {
    let boot = |id: &str, window: &str| {
        entry(
            id,
            EntryKind::CustomMessage {
                custom_type: "relay/boot".into(),
                text: format!(
                    "<context_window>\nagent: pi\ncurrent_window_id: {window}\n</context_window>"
                ),
                display: true,
                details: Value::Null,
                estimate_chars: 0,
            },
        )
    };
    let reminder = |id: &str, window: &str| {
        entry(
            id,
            EntryKind::CustomMessage {
                custom_type: "relay/reminder".into(),
                text: "low".into(),
                display: true,
                details: json!({ "windowId": window }),
                estimate_chars: 0,
            },
        )
    };
    // The boot block names the parent session's root.
    let mut h = small("child");
    h.push(&msg("01", "user", "hello"));
    assert_eq!(h.window_ids(), ["pcw:child:root"]);
    h.push(&boot("02", "pcw:parent:root"));
    h.push(&reminder("03", "pcw:other:root"));
    assert_eq!(
        h.window_ids(),
        ["pcw:parent:root"],
        "the first naming entry decides"
    );
    h.push(&compaction("04", "foreign summary", json!({})));
    assert_eq!(h.window_ids(), ["pcw:parent:root", "pcw:parent:04"]);
    let listed = h.list_items(&json!({ "window_id": "pcw:parent:root" }));
    assert!(!listed.is_error, "{}", listed.text);
    assert!(
        h.list_items(&json!({ "window_id": "pcw:child:root" }))
            .is_error
    );
    assert!(h.truncate_after("01"));
    assert_eq!(
        h.window_ids(),
        ["pcw:child:root"],
        "the naming entry is gone"
    );
    assert!(
        !h.list_items(&json!({ "window_id": "pcw:child:root" }))
            .is_error
    );

    // A record's windowId counts only when it names a root; the first reset's boot block too.
    let mut h = small("child");
    h.push(&reminder("01", "pcw:parent:1a2b3c4d"));
    h.push(&reminder("02", "pcw::root"));
    assert_eq!(h.window_ids(), ["pcw:child:root"]);
    h.push(&compaction(
        "03",
        "<context_window>\nfirst_window_id: pcw:parent:root\ncurrent_window_id: pcw:parent:5e6f7a8b\n</context_window>",
        json!({ "relay": "window", "windowId": "pcw:parent:5e6f7a8b" }),
    ));
    assert_eq!(h.window_ids(), ["pcw:parent:root", "pcw:parent:5e6f7a8b"]);
}

/// A history loaded from a session file keeps each item's line, not its text, and reads texts
/// back when a tool needs them: every tool answers exactly as with the texts in memory, and a
/// file that changed under it is an error, never another text.
mod file_backed {
    use super::*;
    use crate::entry::{last_entry_of_line, LineAt};
    use crate::history::store::Tuning;
    use crate::history::LineSource;
    use proptest::prelude::*;
    use std::sync::{Arc, RwLock};

    /// A session file in memory, read as the host reads one (bytes at an offset), counting reads
    /// and the bytes they read.
    #[derive(Debug, Default)]
    struct MemFile(
        RwLock<Vec<u8>>,
        std::sync::atomic::AtomicUsize,
        std::sync::atomic::AtomicUsize,
    );

    impl LineSource for MemFile {
        fn read(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> Result<(), String> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let file = self.0.read().unwrap();
            let from = (offset as usize).min(file.len());
            let to = from.saturating_add(len).min(file.len());
            self.2
                .fetch_add(to - from, std::sync::atomic::Ordering::Relaxed);
            out.extend_from_slice(&file[from..to]);
            Ok(())
        }
    }

    impl MemFile {
        /// (reads, bytes read) so far.
        fn counts(&self) -> (usize, usize) {
            use std::sync::atomic::Ordering::Relaxed;
            (self.1.load(Relaxed), self.2.load(Relaxed))
        }

        fn len(&self) -> usize {
            self.0.read().unwrap().len()
        }
    }

    /// One item of a generated session: 0 user, 1 assistant, 2 tool result, 3 compaction.
    type Item = (u8, String);

    fn line(i: usize, (kind, text): &Item) -> String {
        let id = format!("e{i}");
        let parent = if i == 0 {
            Value::Null
        } else {
            Value::from(format!("e{}", i - 1))
        };
        let ts = "2025-01-01T00:00:00.000Z";
        let message = |m: Value| json!({"type": "message", "id": id, "parentId": parent, "timestamp": ts, "message": m});
        match kind % 4 {
            0 => message(json!({"role": "user", "content": text})),
            1 => message(json!({"role": "assistant", "content": [{"type": "text", "text": text}]})),
            2 => message(json!({"role": "toolResult", "toolCallId": "c", "toolName": if i.is_multiple_of(2) { "bash" } else { "mcp_fetch" },
                "content": [{"type": "text", "text": text}], "isError": false})),
            _ => json!({"type": "compaction", "id": id, "parentId": parent, "timestamp": ts, "summary": text,
                "firstKeptEntryId": id, "tokensBefore": 1}),
        }
        .to_string()
    }

    /// The same session mirrored twice: texts in memory, and texts left in the file.
    fn both(items: &[Item]) -> (History, History, Arc<MemFile>) {
        both_with(items, SMALL)
    }

    /// [`both`], the second with `tuning`.
    fn both_with(items: &[Item], tuning: Tuning) -> (History, History, Arc<MemFile>) {
        let file = Arc::new(MemFile::default());
        let (mut held, mut indexed) = (small(S), History::with_tuning(S, tuning));
        indexed.read_texts_from(file.clone());
        let mut bytes = b"{\"type\":\"session\",\"id\":\"sess1\"}\n".to_vec();
        for (i, item) in items.iter().enumerate() {
            let text = line(i, item);
            let entry = last_entry_of_line(&text).unwrap();
            let at = LineAt {
                offset: bytes.len() as u64,
                len: text.len() as u32,
            };
            held.push(&entry);
            indexed.push_at(&entry, Some(at));
            bytes.extend_from_slice(text.as_bytes());
            bytes.push(b'\n');
        }
        *file.0.write().unwrap() = bytes;
        (held, indexed, file)
    }

    /// Every tool's answer to a set of calls.
    fn answers(h: &History, queries: &[String]) -> Vec<String> {
        let mut out = vec![h.list_windows(&json!({})).text];
        for recent in [false, true] {
            out.push(
                h.list_items(
                    &json!({"recent_first": recent, "limit": 500, "max_chars_per_item": 70}),
                )
                .text,
            );
            for q in queries {
                out.push(
                    h.search_contents(&json!({"query": q, "recent_first": recent, "limit": 7}))
                        .text,
                );
                out.push(
                    h.search_contents(&json!({"query": q, "recent_first": recent, "role": "tool"}))
                        .text,
                );
                out.push(
                    h.search_contents(
                        &json!({"query": q, "recent_first": recent, "tool_name": "bash"}),
                    )
                    .text,
                );
            }
        }
        let listed = ok(h.list_items(&json!({"limit": 500, "max_chars_per_item": 1})));
        for item in listed["items"].as_array().unwrap() {
            let args = json!({"window_id": item["window_id"], "item_id": item["item_id"], "offset_chars": 3, "limit_chars": 50});
            out.push(h.read_item(&args).text);
        }
        out
    }

    fn item() -> impl Strategy<Value = Item> {
        (0u8..4, "(needle|abc|é|😀|\"|\\\\| |\n|x{40}|\t){0,120}")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn every_tool_answers_as_with_the_texts_in_memory(
            items in proptest::collection::vec(item(), 1..40),
            picks in proptest::collection::vec((0usize..40, 0usize..200, 1usize..12), 0..4),
        ) {
            let (held, indexed, _file) = both(&items);
            prop_assert_eq!(indexed.held_text_bytes(), 0);
            prop_assert_eq!(indexed.text_bytes(), held.text_bytes());
            let mut queries: Vec<String> = ["needle", "abc", "é😀", "x\n", "\"\\", "nope-nope", "ab"]
                .map(String::from)
                .to_vec();
            for (i, from, len) in picks {
                let text = &items[i % items.len()].1;
                let chars: Vec<char> = text.chars().collect();
                if chars.is_empty() {
                    continue;
                }
                let from = from % chars.len();
                queries.push(chars[from..(from + len).min(chars.len())].iter().collect());
            }
            prop_assert_eq!(answers(&indexed, &queries), answers(&held, &queries));
        }
    }

    /// A history of more than the largest chunk, searched newest first for a rare needle, reads
    /// the rest back chunk by chunk and finds what the in-memory one finds.
    #[test]
    fn a_long_scan_reads_the_file_back_in_chunks() {
        let items: Vec<Item> = (0..700)
            .map(|i| {
                (
                    i as u8 % 3,
                    if i % 211 == 5 {
                        format!("{} ab {}", "y".repeat(300), "z".repeat(300))
                    } else {
                        format!("{i:04} ").repeat(60)
                    },
                )
            })
            .collect();
        let (held, indexed, _file) = both(&items);
        assert!(indexed.text_bytes() > SMALL.bulk_scan_min);
        // "ab" is under a trigram's length: no block filter, a scan of everything.
        let queries = vec!["ab".to_string(), "0650 0650".to_string()];
        assert_eq!(answers(&indexed, &queries), answers(&held, &queries));
        let found = ok(indexed.search_contents(&json!({"query": "ab", "limit": 50})));
        assert_eq!(ids(&found), vec!["e638", "e427", "e216", "e5"]);
    }

    /// An item far longer than a chunk (a huge tool output), scanned chunk by chunk in both
    /// orders: its line is read once per search, not once per chunk (each chunk read the whole
    /// line again before: 60 times the file here, in 61 reads).
    #[test]
    fn a_long_item_is_read_once_per_scan_not_once_per_chunk() {
        let mut items: Vec<Item> = (0..6)
            .map(|i| (i as u8 % 2, format!("small {i}")))
            .collect();
        items.push((2, format!("{}zq{}", "long output ".repeat(20_000), "tail")));
        items.push((1, "done".into()));
        let tuning = Tuning {
            first_chunk: 256,
            max_chunk: 4096,
            bulk_scan_min: 1 << 12,
            recent: 0,
            ..SMALL
        };
        let (held, indexed, file) = both_with(&items, tuning);
        for recent in [false, true] {
            // "zq" is under a trigram's length: no block filter, every chunk is scanned.
            let q = json!({"query": "zq", "recent_first": recent});
            let before = file.counts();
            assert_eq!(
                ok(indexed.search_contents(&q)),
                ok(held.search_contents(&q))
            );
            let (reads, bytes) = file.counts();
            assert!(
                bytes - before.1 <= file.len(),
                "recent_first {recent}: {} bytes read ({} reads) of a {}-byte file",
                bytes - before.1,
                reads - before.0,
                file.len()
            );
        }
    }

    /// A hit on an item read back from the file is read once: for the match and for the snippet
    /// the tool shows (each hit was read again for its snippet before, and a newest-first hit a
    /// third time for its first match).
    #[test]
    fn a_hit_read_back_is_read_once() {
        // Every 20th item a bash result (a selective filter), three of them with the needle.
        let items: Vec<Item> = (0..300)
            .map(|i| {
                if i % 20 == 0 {
                    let text = if i % 100 == 0 {
                        "an ab in it"
                    } else {
                        "nothing"
                    };
                    (2, format!("result {i}: {text}"))
                } else {
                    (0, format!("request {i}"))
                }
            })
            .collect();
        let (held, indexed, file) = both_with(&items, Tuning { recent: 0, ..SMALL });
        let same = |q: Value| {
            let before = file.counts().0;
            assert_eq!(
                ok(indexed.search_contents(&q)),
                ok(held.search_contents(&q))
            );
            file.counts().0 - before
        };
        // The 15 bash results are searched one by one ("ab" is under a trigram's length: none
        // is skipped): one read each, the three hits included.
        for recent in [false, true] {
            let found = ok(indexed.search_contents(
                &json!({"query": "ab", "tool_name": "bash", "recent_first": recent}),
            ));
            assert_eq!(found["items"].as_array().unwrap().len(), 3);
            assert_eq!(
                same(json!({"query": "ab", "tool_name": "bash", "recent_first": recent})),
                15
            );
        }
        // A scan of the whole history: the lines are read in a few reads of neighbouring lines,
        // and no hit is read again after them.
        let spans = |recent: bool| same(json!({"query": "ab", "recent_first": recent}));
        let (oldest, newest) = (spans(false), spans(true));
        assert!(
            oldest <= 2 && newest <= 8,
            "reads: oldest first {oldest}, newest first {newest}"
        );
    }

    /// The newest texts of a loaded history stay in memory (about `Tuning::recent` bytes): a
    /// search that stops among them and a read of one of them read nothing back.
    #[test]
    fn the_newest_texts_are_answered_from_memory() {
        let items: Vec<Item> = (0..300)
            .map(|i| (i as u8 % 3, format!("item {i} {}", "w".repeat(40))))
            .collect();
        let (held, indexed, file) = both(&items);
        let reads = || file.counts().0;
        let recent = indexed.recent.text.len();
        assert!(
            recent > SMALL.recent / 2 && recent <= SMALL.recent + SMALL.recent / 4,
            "{recent}"
        );
        let newest = json!({"query": "item 29", "recent_first": true, "limit": 3});
        assert_eq!(
            ok(indexed.search_contents(&newest)),
            ok(held.search_contents(&newest))
        );
        let read = json!({"window_id": "pcw:sess1:root", "item_id": "e298"});
        assert_eq!(ok(indexed.read_item(&read)), ok(held.read_item(&read)));
        assert_eq!(reads(), 0, "answered from the recent texts");
        let oldest = json!({"window_id": "pcw:sess1:root", "item_id": "e1"});
        assert_eq!(ok(indexed.read_item(&oldest)), ok(held.read_item(&oldest)));
        assert_eq!(reads(), 1, "an old text is read back");
    }

    /// A line rewritten in place (same entry id and length, another text) or a file cut short is
    /// an error naming the entry or the offset; nothing else is read as the item's text.
    #[test]
    fn a_file_that_changed_is_an_error_not_another_text() {
        let items: Vec<Item> = vec![
            (0, "the first request".into()),
            (1, "an answer with needle".into()),
            (2, "tool output".into()),
        ];
        // Nothing held among the recent texts: every text is read back.
        let (_held, indexed, file) = both_with(&items, Tuning { recent: 0, ..SMALL });
        let read =
            |id: &str| indexed.read_item(&json!({"window_id": "pcw:sess1:root", "item_id": id}));
        assert_eq!(ok(read("e1"))["content"], "an answer with needle");
        assert!(!indexed.unreadable());
        {
            let mut bytes = file.0.write().unwrap();
            let text = String::from_utf8(bytes.clone())
                .unwrap()
                .replace("with needle", "with noodle");
            *bytes = text.into_bytes();
        }
        let e = err(read("e1"));
        assert!(e.contains("the line of entry e1 no longer holds it"), "{e}");
        assert!(
            indexed.unreadable(),
            "the host is asked to load the session again"
        );
        let e = err(indexed.search_contents(&json!({"query": "needle"})));
        assert!(
            e.contains("history_search_contents: the history's text could not be read back"),
            "{e}"
        );
        assert_eq!(
            ok(read("e0"))["content"],
            "the first request",
            "the lines that did not change still read"
        );
        file.0.write().unwrap().truncate(40);
        let e = err(read("e2"));
        assert!(e.contains("the session file ends before byte"), "{e}");
    }
}
