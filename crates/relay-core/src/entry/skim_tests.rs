//! The skim's fast path against its oracle, serde's reading of the same line: the same entry (or
//! the same refusal) on generated lines, on damaged ones, and on every line of the golden session
//! files; and the fast path does take Pi's message lines.

use std::path::PathBuf;

use proptest::prelude::*;

use super::decode::skim_entry_of_line_by_serde;
use super::skim::message_line;
use super::skim_entry_of_line;

/// JSON text for a string body: plain, escaped, non-ASCII, surrogate escapes (paired and lone),
/// and a few things JSON refuses (a raw control character, a bad escape).
fn string_body(bad: bool) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            6 => "[a-zA-Z0-9 _.:/-]{0,12}",
            2 => "[\u{e9}\u{4e2d}\u{1F600}\u{a0}]{1,3}",
            3 => prop_oneof![
                Just(r"\n"), Just(r"\t"), Just(r#"\""#), Just(r"\\"), Just(r"\/"), Just(r"\b"),
                Just(r"\f"), Just(r"\r"), Just(r"\u00e9"), Just(r"\u001b"), Just(r"\u0000"),
                Just(r"\uD83D\uDE00"),
            ]
            .prop_map(str::to_string),
            u32::from(bad) => prop_oneof![
                Just(r"\ud800"), Just(r"\udc00x"), Just(r"\uD83Dx"), Just("\u{1}"), Just("\t"), Just(r"\x"), Just(r"\u12"), Just(r"\u12g4"), Just("\u{7f}"),
            ]
            .prop_map(str::to_string),
        ],
        0..6,
    )
    .prop_map(|p| p.concat())
}

fn json_string(bad: bool) -> impl Strategy<Value = String> {
    string_body(bad).prop_map(|b| format!("\"{b}\""))
}

fn number(bad: bool) -> impl Strategy<Value = String> {
    let bad = u32::from(bad);
    prop_oneof![
        4 => "-?(0|[1-9][0-9]{0,17})",
        2 => "-?(0|[1-9][0-9]{0,2})\\.[0-9]{1,3}",
        bad => "-?[1-9][0-9]{0,2}[eE][+-]?[0-9]{1,3}",
        bad => "-?[0-9]{1,3}\\.[0-9]{0,3}",
        bad => Just("1e400".to_string()),
        bad => Just(format!("1{}", "0".repeat(320))),
        bad => Just("007".to_string()),
        bad => Just("-".to_string()),
        bad => Just("1.".to_string()),
    ]
}

/// `Some` of `strategy` with probability `p` when `bad`, else always `None`.
fn sometimes<S: Strategy + 'static>(
    bad: bool,
    p: f64,
    strategy: S,
) -> BoxedStrategy<Option<S::Value>>
where
    S::Value: Clone + std::fmt::Debug,
{
    if bad {
        proptest::option::weighted(p, strategy).boxed()
    } else {
        Just(None).boxed()
    }
}

/// Blanks between tokens (JSON's four, sometimes none).
fn ws() -> impl Strategy<Value = &'static str> {
    prop_oneof![8 => Just(""), 1 => Just(" "), 1 => Just("\t \r\n")]
}

/// Any JSON value (and a few non-values), nested.
fn value(bad: bool) -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        3 => json_string(bad),
        2 => number(bad),
        1 => Just("true".to_string()),
        1 => Just("false".to_string()),
        1 => Just("null".to_string()),
        u32::from(bad) => Just("nul".to_string()),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4)
                .prop_map(|v| format!("[{}]", v.join(","))),
            proptest::collection::vec(("[a-z]{1,3}|text|type|name", inner), 0..4).prop_map(|v| {
                let fields: Vec<String> = v.iter().map(|(k, x)| format!("\"{k}\":{x}")).collect();
                format!("{{{}}}", fields.join(","))
            }),
        ]
    })
}

/// An object of the given fields, in the given order, with blanks around the tokens.
fn object(fields: Vec<(String, String)>, blanks: Vec<&'static str>) -> String {
    let mut out = String::from("{");
    let mut b = blanks.into_iter().cycle();
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(b.next().unwrap_or(""));
        out.push_str(&format!("\"{k}\""));
        out.push_str(b.next().unwrap_or(""));
        out.push(':');
        out.push_str(b.next().unwrap_or(""));
        out.push_str(v);
        out.push_str(b.next().unwrap_or(""));
    }
    out.push('}');
    out
}

/// Picks some of `fields` (each key's value from its strategy), shuffled, with an occasional
/// duplicate.
fn fields(
    bad: bool,
    choices: Vec<(&'static str, BoxedStrategy<String>)>,
) -> impl Strategy<Value = Vec<(String, String)>> {
    let n = choices.len();
    let picked: Vec<BoxedStrategy<Option<(String, String)>>> = choices
        .into_iter()
        .map(|(k, s)| {
            proptest::option::weighted(0.7, s.prop_map(move |v| (k.to_string(), v))).boxed()
        })
        .collect();
    (picked, sometimes(bad, 0.1, 0..n.max(1)))
        .prop_map(|(chosen, dup)| {
            let mut out: Vec<(String, String)> = chosen.into_iter().flatten().collect();
            if let Some(i) = dup {
                if let Some(f) = out.get(i % out.len().max(1)).cloned() {
                    out.push(f);
                }
            }
            out
        })
        .prop_shuffle()
}

/// A kept string: usually a plain one, sometimes with escapes, another type or null.
fn kept(bad: bool, plain: &'static str) -> BoxedStrategy<String> {
    prop_oneof![
        6 => Just(format!("\"{plain}\"")),
        u32::from(bad) => json_string(bad),
        1 => Just("null".to_string()),
        u32::from(bad) => value(bad),
    ]
    .boxed()
}

fn count(bad: bool) -> BoxedStrategy<String> {
    let bad = u32::from(bad);
    prop_oneof![5 => "0|[1-9][0-9]{0,14}".boxed(), bad => number(true).boxed(), 1 => Just("null".to_string()).boxed(), bad => value(true).boxed()].boxed()
}

/// Pi's `usage.cost`: its parts and total, numbers as Pi writes them (or anything, when bad).
fn cost(bad: bool) -> BoxedStrategy<String> {
    let part = || {
        prop_oneof![4 => number(bad).boxed(), 1 => Just("null".to_string()).boxed(), u32::from(bad) => value(bad).boxed()].boxed()
    };
    (
        fields(
            bad,
            vec![("input", part()), ("output", part()), ("total", part())],
        ),
        proptest::collection::vec(ws(), 1..4),
    )
        .prop_map(|(f, b)| object(f, b))
        .boxed()
}

fn usage(bad: bool) -> BoxedStrategy<String> {
    (
        fields(
            bad,
            vec![
                ("input", count(bad)),
                ("output", count(bad)),
                ("cacheRead", count(bad)),
                ("cacheWrite", count(bad)),
                ("totalTokens", count(bad)),
                (
                    "cost",
                    prop_oneof![4 => cost(bad), 1 => value(bad).boxed()].boxed(),
                ),
            ],
        ),
        proptest::collection::vec(ws(), 1..4),
    )
        .prop_map(|(f, b)| object(f, b))
        .boxed()
}

fn block(bad: bool) -> BoxedStrategy<String> {
    (
        fields(bad, vec![
            ("type", prop_oneof![1 => Just("\"text\"".to_string()), 1 => Just("\"toolCall\"".to_string()), 1 => Just("\"image\"".to_string()), u32::from(bad) => value(bad)].boxed()),
            ("text", prop_oneof![4 => json_string(bad), u32::from(bad) => value(bad)].boxed()),
            ("name", kept(bad, "read")),
            ("arguments", value(bad).boxed()),
            ("thinking", json_string(bad).boxed()),
            ("id", value(bad).boxed()),
        ]),
        proptest::collection::vec(ws(), 1..4),
    )
        .prop_map(|(f, b)| object(f, b))
        .boxed()
}

fn content(bad: bool) -> BoxedStrategy<String> {
    prop_oneof![
        4 => proptest::collection::vec(block(bad), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
        2 => json_string(bad),
        u32::from(bad) => value(bad),
        1 => Just("null".to_string()),
        u32::from(bad) => Just("[[\"text\",\"x\"]]".to_string()),
    ]
    .boxed()
}

fn message(bad: bool) -> BoxedStrategy<String> {
    (
        fields(bad, vec![
            ("role", prop_oneof![Just("\"assistant\"".to_string()), Just("\"toolResult\"".to_string()), Just("\"user\"".to_string()), kept(bad, "custom")].boxed()),
            ("content", content(bad)),
            ("toolName", kept(bad, "bash")),
            ("toolCallId", kept(bad, "toolu_1")),
            ("isError", prop_oneof![1 => Just("true".to_string()), 1 => Just("false".to_string()), u32::from(bad) => value(bad)].boxed()),
            ("usage", prop_oneof![4 => usage(bad), u32::from(bad) => value(bad).boxed()].boxed()),
            ("stopReason", kept(bad, "stop")),
            ("customType", kept(bad, "relay/boot")),
            ("command", json_string(bad).boxed()),
            ("output", prop_oneof![1 => json_string(bad), u32::from(bad) => value(bad)].boxed()),
            ("summary", json_string(bad).boxed()),
            ("sections", value(bad).boxed()),
            ("toolsAdded", prop_oneof![1 => Just("[{\"name\":\"t\",\"parameters\":{}}]".to_string()), u32::from(bad) => value(bad)].boxed()),
            ("toolsRemoved", prop_oneof![1 => Just("[{\"name\":\"x\"}]".to_string()), u32::from(bad) => value(bad)].boxed()),
            ("timestamp", number(bad).boxed()),
            ("details", value(bad).boxed()),
        ]),
        proptest::collection::vec(ws(), 1..4),
    )
        .prop_map(|(f, b)| object(f, b))
        .boxed()
}

/// A line: clean (`bad` false: only what the fast path should read, in any order and spacing) or
/// hostile; mostly a message line in Pi's shape, its fields in any order, sometimes with another
/// entry type, a field of another entry type, an unknown field, or damaged.
fn line_of(bad: bool) -> impl Strategy<Value = String> {
    (
        fields(bad, vec![
            ("type", prop_oneof![8 => Just("\"message\"".to_string()), u32::from(bad) => Just("\"custom\"".to_string()), 1 => kept(bad, "message")].boxed()),
            ("id", prop_oneof![6 => "\"[0-9a-f]{8}\"".boxed(), 1 => Just("\"\"".to_string()).boxed(), 1 => kept(bad, "e1")].boxed()),
            ("parentId", kept(bad, "e0")),
            ("timestamp", kept(bad, "2026-12-03T02:52:05.655Z")),
            ("message", prop_oneof![8 => message(bad), u32::from(bad) => value(bad).boxed()].boxed()),
            ("extra", value(bad).boxed()),
        ]),
        sometimes(bad, 0.1, prop_oneof![Just("summary"), Just("customType"), Just("cwd"), Just("details")]),
        proptest::collection::vec(ws(), 1..4),
        ws(),
        ws(),
    )
        .prop_map(|(mut f, other, b, lead, trail)| {
            if let Some(k) = other {
                f.push((k.to_string(), "\"s\"".to_string()));
            }
            format!("{lead}{}{trail}", object(f, b))
        })
}

/// `line` with one defect: a character inserted (one that ends, escapes, opens or separates
/// something, a control character, an exponent) or the line cut short.
fn damaged(line: String) -> impl Strategy<Value = String> {
    const INSERTS: [&str; 11] = [
        "\"", "\\", "{", "}", ",", ":", "\u{1}", "\t", "e5", "0", "\\u",
    ];
    (any::<proptest::sample::Index>(), 0..=INSERTS.len()).prop_map(move |(at, how)| {
        let cuts: Vec<usize> = line
            .char_indices()
            .map(|(i, _)| i)
            .chain([line.len()])
            .collect();
        let (a, b) = line.split_at(*at.get(&cuts));
        match INSERTS.get(how) {
            Some(insert) => format!("{a}{insert}{b}"),
            None => a.to_string(),
        }
    })
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => line_of(false),
        2 => line_of(false).prop_flat_map(damaged),
        1 => line_of(true),
        1 => line_of(true).prop_flat_map(damaged),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// The skim gives serde's entry, or serde's refusal, whichever path reads the line.
    #[test]
    fn the_fast_path_reads_a_line_as_serde_does(line in line()) {
        let ours = skim_entry_of_line(&line);
        let oracle = skim_entry_of_line_by_serde(&line);
        prop_assert_eq!(ours, oracle, "{}", line);
    }
}

/// The skim gives serde's entry for `line`, and the fast path takes the line when `fast`
/// (else it is unsure of it and serde reads it).
fn agrees_with_serde(line: &str, fast: bool) {
    if fast {
        assert!(message_line(line).is_some(), "the fast path takes {line}");
    } else {
        assert!(message_line(line).is_none(), "unsure of {line}");
    }
    assert_eq!(
        skim_entry_of_line(line),
        skim_entry_of_line_by_serde(line),
        "{line}"
    );
}

/// Message lines as Pi writes them, some with what makes the fast path unsure.
#[test]
fn typical_lines_agree_and_the_fast_path_takes_pis_shape() {
    let pis = [
        r#"{"type":"message","id":"a1","parentId":"a0","timestamp":"2026-12-03T02:52:05.655Z","message":{"role":"user","content":[{"type":"text","text":"fix \"it\"\n\u00e9 \uD83D\uDE00"}],"timestamp":1764730325655}}"#,
        r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"T","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm","thinkingSignature":"x"},{"type":"text","text":"ok"},{"type":"toolCall","id":"toolu_1","name":"bash","arguments":{"command":"ls -la","timeout":1.5,"flags":[true,null,{"a":-3}]}}],"api":"anthropic-messages","provider":"anthropic","model":"claude","usage":{"input":3,"output":120,"cacheRead":15000,"cacheWrite":0,"totalTokens":15123,"cost":{"input":0.000009,"output":0.0018,"total":0.00181}},"stopReason":"toolUse","timestamp":1764730325700}}"#,
        r#"{"type":"message","id":"a3","parentId":"a2","timestamp":"T","message":{"role":"toolResult","toolCallId":"toolu_1","toolName":"bash","content":[{"type":"text","text":"\u001b[31mred\u001b[0m\ttab"}],"details":{"exitCode":0,"truncation":null},"isError":false,"timestamp":1764730325800}}"#,
        r#"{"type":"message","id":"a4","parentId":"a3","timestamp":"T","message":{"role":"custom","customType":"relay/boot","content":"<context_window>","display":false,"timestamp":1}}"#,
        r#"  {"type":"message","id":"a5","parentId":null,"timestamp":"T","message":{"role":"bashExecution","command":"ls","output":"a\nb","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1}}  "#,
    ];
    for line in pis {
        agrees_with_serde(line, true);
        assert!(skim_entry_of_line(line).is_some(), "{line}");
    }
    let unsure = [
        // A kept string with an escape: serde decodes it.
        r#"{"type":"message","id":"a\u0031","parentId":null,"timestamp":"T","message":{"role":"user","content":"x"}}"#,
        // Usage in a form whose f64 only serde_json's parser gives.
        r#"{"type":"message","id":"a1","timestamp":"T","message":{"role":"assistant","usage":{"totalTokens":1.5e3}}}"#,
        // A lone surrogate in a text.
        r#"{"type":"message","id":"a1","timestamp":"T","message":{"role":"user","content":"\ud800"}}"#,
        // A duplicate field.
        r#"{"type":"message","id":"a1","id":"a2","timestamp":"T","message":{"role":"user"}}"#,
        // Another entry type.
        r#"{"type":"custom","id":"c1","customType":"k","data":{}}"#,
        // A block as an array (serde reads a struct from a sequence too).
        r#"{"type":"message","id":"a1","message":{"role":"user","content":[["text","x"]]}}"#,
    ];
    for line in unsure {
        agrees_with_serde(line, false);
    }
    // A raw control character in a text: refused by both.
    let bad = "{\"type\":\"message\",\"id\":\"a1\",\"message\":{\"role\":\"user\",\"content\":\"a\u{1}b\"}}";
    assert_eq!(skim_entry_of_line(bad), None);
    assert_eq!(skim_entry_of_line_by_serde(bad), None);
}

/// Every line of the golden session files (written by the real `pi`): the same entry either way,
/// and the fast path reads their message lines.
#[test]
fn golden_session_lines_agree() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    let (mut messages, mut fast) = (0, 0);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines() {
            assert_eq!(
                skim_entry_of_line(line),
                skim_entry_of_line_by_serde(line),
                "{}: {line}",
                file.display()
            );
            if line.starts_with(r#"{"type":"message""#) {
                messages += 1;
                fast += usize::from(message_line(line).is_some());
            }
        }
    }
    assert!(messages > 50, "{messages} message lines");
    assert_eq!(
        fast, messages,
        "the fast path read every golden message line"
    );
}

/// The generated lines exercise both paths: the fast path reads a good share of them (so the
/// oracle test compares its results, not only serde's with itself), and serde the rest.
#[test]
fn the_generated_lines_take_both_paths() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = line();
    let (mut fast, mut kept) = (0, 0);
    for _ in 0..2000 {
        let line = strategy.new_tree(&mut runner).unwrap().current();
        if message_line(&line).is_some() {
            fast += 1;
            kept += usize::from(skim_entry_of_line(&line).is_some());
        }
    }
    assert!(
        (200..1800).contains(&fast),
        "{fast} of 2000 lines by the fast path"
    );
    assert!(kept >= 100, "{kept} of them kept an entry");
}
