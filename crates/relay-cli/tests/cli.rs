//! Runs the built `relay` binary on session files written to a temporary folder.

mod common;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"S1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;

fn session_lines() -> Vec<String> {
    vec![
        HEADER.to_string(),
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"Find the bug in parser.rs\nsecond line"}}"#.into(),
        r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Reading it."},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"parser.rs"}}]}}"#.into(),
        r#"{"type":"message","id":"a3","parentId":"a2","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"fn parse() { 漢字 }"}],"isError":false}}"#.into(),
        "{this line is broken".into(),
        r#"{"type":"compaction","id":"c1","parentId":"a3","timestamp":"2025-01-01T00:00:04.000Z","summary":"window reset","firstKeptEntryId":"a3","tokensBefore":100,"details":{"relay":"window","windowId":"pcw:S1:deadbeef"}}"#.into(),
        r#"{"type":"message","id":"a4","parentId":"c1","timestamp":"2025-01-01T00:00:05.000Z","message":{"role":"user","content":"what was the parser bug?"}}"#.into(),
        // A sibling branch that is not the current one (the last entry is the leaf).
        r#"{"type":"message","id":"b1","parentId":"a1","timestamp":"2025-01-01T00:00:06.000Z","message":{"role":"user","content":"abandoned parser branch"}}"#.into(),
        r#"{"type":"message","id":"a5","parentId":"a4","timestamp":"2025-01-01T00:00:07.000Z","message":{"role":"assistant","content":[{"type":"text","text":"It was an off-by-one."}]}}"#.into(),
    ]
}

struct Temp(PathBuf);

impl Temp {
    fn new(name: &str) -> Temp {
        Temp(common::fresh_dir(&format!("relay-cli-{name}")))
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.0.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn relay(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relay"))
        .args(args)
        .output()
        .expect("run relay")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn session(t: &Temp) -> PathBuf {
    t.write("s.jsonl", &(session_lines().join("\n") + "\n"))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn windows_human_and_json() {
    let t = Temp::new("windows");
    let file = session(&t);
    let o = relay(&["windows", p(&file)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].contains("WINDOW") && lines[0].contains("ITEMS"));
    assert!(lines[1].starts_with("* pcw:S1:deadbeef"), "{out}");
    assert!(lines[1].contains(" 3 "), "{out}");
    assert!(lines[2].starts_with("  pcw:S1:root"), "{out}");
    // The malformed line is reported with file and line number; the rest loaded.
    assert!(
        stderr(&o).contains(&format!(
            "{}:5: warning: skipped malformed line",
            file.display()
        )),
        "{}",
        stderr(&o)
    );
    let o = relay(&["windows", p(&file), "--json", "--oldest-first"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["windows"][0]["window_id"], "pcw:S1:root");
    assert_eq!(v["windows"][0]["item_count"], 3);
    assert_eq!(v["current_window_id"], "pcw:S1:deadbeef");
}

/// Window markers in both shapes Relay has written: the commit type in `details.commit` with
/// `details.kind` "handoff"/"reset" (current), and the commit type in `details.kind` (earlier).
#[test]
fn windows_show_what_opened_them_in_old_and_new_marker_shapes() {
    let t = Temp::new("markers");
    let compaction = |id: &str, parent: &str, details: &str| {
        format!(
            r#"{{"type":"compaction","id":"{id}","parentId":"{parent}","timestamp":"2025-01-01T00:00:0{}.000Z","summary":"boot","firstKeptEntryId":"{parent}","tokensBefore":1,"details":{details}}}"#,
            id.len()
        )
    };
    let lines = [
        HEADER.to_string(),
        r#"{"type":"message","id":"m1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}"#.to_string(),
        compaction("k1", "m1", r#"{"relay":"window","windowId":"pcw:S1:00000001","kind":"budget","handoffPath":"/h/1.md"}"#),
        compaction("k22", "k1", r#"{"relay":"window","windowId":"pcw:S1:00000002","kind":"forcedHard","handoffPath":null}"#),
        compaction("k333", "k22", r#"{"relay":"window","windowId":"pcw:S1:00000003","kind":"handoff","commit":"hard","handoffPath":"/h/2.md"}"#),
        compaction("k4444", "k333", r#"{"relay":"window","windowId":"pcw:S1:00000004","kind":"reset","commit":null}"#),
        compaction("k55555", "k4444", r#"{"summary":"pi's own"}"#),
    ];
    let file = t.write("markers.jsonl", &(lines.join("\n") + "\n"));
    let o = relay(&["windows", p(&file), "--json", "--oldest-first"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let got: Vec<(String, Value)> = v["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["opened_by"].as_str().unwrap().to_string(),
                w["commit"].clone(),
            )
        })
        .collect();
    let want = [
        ("root", Value::Null),
        ("handoff", "budget".into()),
        ("reset", "forcedHard".into()),
        ("handoff", "hard".into()),
        ("reset", Value::Null),
        ("compaction", Value::Null),
    ];
    let want: Vec<(String, Value)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.clone()))
        .collect();
    assert_eq!(got, want);
    let o = relay(&["windows", p(&file), "--oldest-first"]);
    let out = stdout(&o);
    let rows: Vec<&str> = out.lines().collect();
    assert!(rows[0].contains("OPENED BY"), "{out}");
    assert!(rows[1].ends_with("root"), "{out}");
    assert!(rows[2].ends_with("handoff (budget)"), "{out}");
    assert!(rows[3].ends_with("reset (forcedHard)"), "{out}");
    assert!(rows[4].ends_with("handoff (hard)"), "{out}");
}

#[test]
fn items_follow_the_current_branch_and_filters() {
    let t = Temp::new("items");
    let file = session(&t);
    let o = relay(&["items", p(&file), "--oldest-first", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let ids: Vec<&str> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["item_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a1", "a2", "a3", "c1", "a4", "a5"]);
    let o = relay(&["items", p(&file), "--role", "tool"]);
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 2, "{out}");
    let row = out.lines().nth(1).unwrap();
    for cell in ["pcw:S1:root", "a3", "tool", "read", "fn parse() { 漢字 }"] {
        assert!(row.contains(cell), "{row}");
    }
    let o = relay(&[
        "items",
        p(&file),
        "--window",
        "pcw:S1:root",
        "--limit",
        "1",
        "--max-chars",
        "4",
    ]);
    let out = stdout(&o);
    assert!(out.lines().nth(1).unwrap().ends_with("fn p…"), "{out}");
    assert!(stderr(&o).contains("more items match"));
}

#[test]
fn read_an_item_range() {
    let t = Temp::new("read");
    let file = session(&t);
    let o = relay(&[
        "read",
        p(&file),
        "pcw:S1:root",
        "a3",
        "--offset",
        "13",
        "--limit",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "漢字\n");
    assert!(
        stderr(&o).contains("continue with --offset 15"),
        "{}",
        stderr(&o)
    );
    let o = relay(&["read", p(&file), "pcw:S1:root", "a1", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["content"], "Find the bug in parser.rs\nsecond line");
    assert_eq!(v["next_offset_chars"], Value::Null);
    let o = relay(&["read", p(&file), "pcw:S1:root", "a4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "relay: history_read_item: argument \"item_id\" names an item of window \"pcw:S1:deadbeef\", not of window_id \"pcw:S1:root\""
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn search_files_and_directories() {
    let t = Temp::new("search");
    let file = session(&t);
    let other = t.write(
        "nested/deeper/other.jsonl",
        &format!(
            "{}\n{}\n",
            r#"{"type":"session","version":3,"id":"S2","timestamp":"T","cwd":"/w"}"#,
            r#"{"type":"message","id":"z1","parentId":null,"timestamp":"T","message":{"role":"user","content":"the parser again"}}"#
        ),
    );
    t.write("nested/ignored.txt", "parser");
    let o = relay(&["search", "parser", p(&file)]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    let ids: Vec<&str> = out
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(ids, ["a4", "a2", "a1"], "{out}");
    assert!(!out.contains("abandoned"), "another branch leaked: {out}");

    let o = relay(&[
        "search",
        "parser",
        p(&t.0),
        "--json",
        "--role",
        "user",
        "--oldest-first",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let docs = v.as_array().unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["file"], other.display().to_string());
    assert_eq!(docs[0]["items"][0]["item_id"], "z1");
    assert_eq!(docs[1]["file"], file.display().to_string());
    assert_eq!(docs[1]["items"][0]["item_id"], "a1");
    assert_eq!(docs[1]["items"][0]["match_offset_chars"], 16);

    let o = relay(&["search", "parser", p(&t.0), "--window", "pcw:S2:root"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("z1") && !stdout(&o).contains("a1"));
    let o = relay(&["search", "parser", p(&t.0), "--window", "pcw:none:root"]);
    assert_eq!(o.status.code(), Some(2));
    let o = relay(&["search", "", p(&file)]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bad_input_exits_2() {
    let t = Temp::new("bad");
    let file = session(&t);
    let missing = t.0.join("missing.jsonl");
    let o = relay(&["windows", p(&missing)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with(&format!("relay: cannot read {}:", missing.display())),
        "{}",
        stderr(&o)
    );
    let o = relay(&["search", "x", p(&missing)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read"), "{}", stderr(&o));
    // Each bad argument is named in the message (clap's for the command line, relay's for
    // what only the session file can tell).
    for (args, named) in [
        (vec!["items", p(&file), "--limit", "0"], "--limit"),
        (vec!["items", p(&file), "--bogus"], "--bogus"),
        (vec!["items", p(&file), "--window", "nope"], "\"nope\""),
        (vec!["items"], "<FILE>"),
        (vec!["read", p(&file), "pcw:S1:root"], "<ITEM>"),
        (vec!["frobnicate"], "frobnicate"),
        (vec![], "Usage: relay"),
    ] {
        let o = relay(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(named), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn help_is_available() {
    for args in [["help"], ["--help"]] {
        let o = relay(&args);
        assert_eq!(o.status.code(), Some(0));
        let out = stdout(&o);
        assert!(out.contains("Usage: relay [OPTIONS] <COMMAND>"), "{out}");
        for command in ["windows", "items", "read", "search", "sessions", "timeline"] {
            assert!(out.contains(&format!("\n  {command} ")), "{command}: {out}");
        }
    }
}

#[test]
fn broken_pipe_exits_quietly() {
    let t = Temp::new("pipe");
    let mut lines = vec![HEADER.to_string()];
    let mut parent = "null".to_string();
    let padding = "x".repeat(200);
    for i in 0..20000 {
        let id = format!("m{i:05}");
        lines.push(format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"T","message":{{"role":"user","content":"item number {i} with some padding text {padding}"}}}}"#
        ));
        parent = format!("\"{id}\"");
    }
    let file = t.write("big.jsonl", &lines.join("\n"));
    // The pipe can only break if the whole listing does not fit in it: make sure it is larger than
    // the largest pipe buffer Linux allows by default (1 MiB), or the test proves nothing.
    let full = relay(&["items", p(&file), "--limit", "20000"]);
    assert_eq!(full.status.code(), Some(0), "{}", stderr(&full));
    assert!(
        full.stdout.len() > 1 << 20,
        "the listing ({} bytes) fits in a pipe",
        full.stdout.len()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_relay"))
        .args(["items", p(&file), "--limit", "20000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "stderr: {err}");
    assert!(err.is_empty(), "{err}");
}

/// The history tools cap each reply at 64 KiB; the CLI pages through them, so a large item or
/// listing comes out whole.
#[test]
fn large_items_and_listings_come_out_whole_across_capped_pages() {
    let t = Temp::new("paging");
    let big: String = "ab\"cé漢\\d".chars().cycle().take(200_000).collect();
    let mut lines = vec![HEADER.to_string()];
    let mut parent = "null".to_string();
    for i in 0..10 {
        let id = format!("p{i}");
        let text = serde_json::to_string(&format!("{i}:{big}")).unwrap();
        lines.push(format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"T","message":{{"role":"user","content":{text}}}}}"#
        ));
        parent = format!("\"{id}\"");
    }
    let file = t.write("paging.jsonl", &lines.join("\n"));
    let o = relay(&[
        "read",
        p(&file),
        "pcw:S1:root",
        "p3",
        "--limit",
        "1000000",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["content"].as_str().unwrap(), format!("3:{big}"));
    assert_eq!(v["next_offset_chars"], Value::Null);
    let o = relay(&[
        "items",
        p(&file),
        "--max-chars",
        "100000",
        "--limit",
        "10",
        "--oldest-first",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let items = v["items"].as_array().unwrap();
    assert_eq!(items.len(), 10);
    for (i, item) in items.iter().enumerate() {
        assert_eq!(item["item_id"], format!("p{i}"));
        assert_eq!(
            item["content"].as_str().unwrap().chars().count(),
            100_000,
            "item {i}"
        );
    }
}
