//! History benchmark: parse a generated session, mirror it, measure per-request cost and search
//! against the straightforward approach (rebuild every item, then `contains` on each).
//!
//! Run: `cargo bench -p relay-core --bench history` (env `RELAY_BENCH_ENTRIES`, default 20000).

use std::hint::black_box;
use std::time::{Duration, Instant};

use relay_core::engine::{Engine, LoadedBranch};
use relay_core::entry::{
    branch_indices, parse_line, parse_session, stream_branch, BranchSink, Entry, EntryKind, Line,
};
use relay_core::history::History;
use serde_json::json;

const RARE: &str = "ZQXJ-rare-needle-7781";
const COMMON: &str = "error";

/// xorshift64*: a small deterministic PRNG.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "fn",
    "let",
    "mut",
    "self",
    "parser",
    "token",
    "window",
    "history",
    "the",
    "a",
    "of",
    "to",
    "compile",
    "error",
    "warning",
    "struct",
    "impl",
    "return",
    "match",
    "Some",
    "None",
    "Ok",
    "value",
    "index",
    "buffer",
    "string",
    "session",
    "entry",
    "context",
    "model",
    "tool",
    "read",
    "write",
    "file",
    "path",
    "src/lib.rs",
    "test",
    "assert_eq!",
    "{",
    "}",
    "(",
    ");",
    "=>",
    "//",
    "über",
    "naïve",
    "日本語",
    "😀",
    "cargo",
    "build",
    "release",
    "offset",
    "chars",
    "limit",
];

fn text(rng: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 16);
    while s.len() < bytes {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        s.push(if rng.below(12) == 0 { '\n' } else { ' ' });
    }
    s
}

fn size(rng: &mut Rng) -> usize {
    match rng.below(100) {
        0..=59 => 100 + rng.below(900) as usize,
        60..=89 => 1_000 + rng.below(4_000) as usize,
        90..=98 => 5_000 + rng.below(15_000) as usize,
        _ => 20_000 + rng.below(60_000) as usize,
    }
}

fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// One JSONL entry line. `k` chooses the kind deterministically from the PRNG.
fn entry_line(rng: &mut Rng, i: usize, parent: &str, ts: &str, extra: Option<&str>) -> String {
    let id = format!("{i:08x}");
    let base = format!(r#""id":"{id}","parentId":{parent},"timestamp":"{ts}""#);
    let len = size(rng);
    let mut body = text(rng, len);
    if let Some(e) = extra {
        body.push_str(e);
    }
    match rng.below(100) {
        0..=9 => format!(
            r#"{{"type":"message",{base},"message":{{"role":"user","content":{},"timestamp":1}}}}"#,
            q(&body)
        ),
        10..=44 => format!(
            r#"{{"type":"message",{base},"message":{{"role":"assistant","content":[{{"type":"thinking","thinking":{}}},{{"type":"text","text":{}}},{{"type":"toolCall","id":"c{i}","name":"read","arguments":{{"path":"src/f{i}.rs"}}}}],"api":"x","provider":"p","model":"m","usage":{{"input":100,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":120,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"toolUse","timestamp":1}}}}"#,
            q("thinking about it"),
            q(&body)
        ),
        45..=92 => {
            let tool = ["read", "bash", "history_search_contents", "edit"][rng.below(4) as usize];
            format!(
                r#"{{"type":"message",{base},"message":{{"role":"toolResult","toolCallId":"c{i}","toolName":"{tool}","content":[{{"type":"text","text":{}}}],"isError":false,"timestamp":1}}}}"#,
                q(&body)
            )
        }
        93..=95 => format!(
            r#"{{"type":"custom_message",{base},"customType":"note","content":{},"display":true}}"#,
            q(&body)
        ),
        96..=97 => {
            format!(r#"{{"type":"custom",{base},"customType":"relay-state","data":{{"n":{i}}}}}"#)
        }
        _ => format!(
            r#"{{"type":"model_change",{base},"provider":"p","modelId":"m{}"}}"#,
            rng.below(3)
        ),
    }
}

fn generate(n: usize) -> String {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = String::new();
    out.push_str(r#"{"type":"session","version":3,"id":"bench-session","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#);
    out.push('\n');
    let mut parent = "null".to_string();
    for i in 0..n {
        let ts = format!("2025-01-01T00:{:02}:{:02}.000Z", (i / 60) % 60, i % 60);
        let line = if i > 0 && i % 2500 == 0 {
            format!(
                r#"{{"type":"compaction","id":"{i:08x}","parentId":{parent},"timestamp":"{ts}","summary":"Context window reset {i}.","firstKeptEntryId":"{i:08x}","tokensBefore":150000,"details":{{"relay":"window","windowId":"pcw:bench-session:{i:08x}"}},"fromHook":true}}"#
            )
        } else {
            let extra = (i == n / 10).then_some(RARE);
            entry_line(&mut rng, i, &parent, &ts, extra)
        };
        out.push_str(&line);
        out.push('\n');
        parent = format!("\"{i:08x}\"");
    }
    out
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                black_box(f());
                t.elapsed()
            })
            .collect(),
    )
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1_000.0 {
        format!("{us:.2} µs")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// The straightforward approach: rebuild every item's text from the branch, then `contains`.
fn baseline_search(entries: &[&Entry], needle: &str, limit: usize) -> usize {
    let items: Vec<String> = entries
        .iter()
        .filter_map(|e| match &e.kind {
            EntryKind::Message(m) if m.role != "system" => Some(m.text.clone()),
            EntryKind::CustomMessage { text, .. } => Some(text.clone()),
            EntryKind::Compaction { summary, .. } | EntryKind::BranchSummary { summary, .. } => {
                Some(summary.clone())
            }
            _ => None,
        })
        .collect();
    let hits: Vec<&String> = items.iter().rev().filter(|t| t.contains(needle)).collect();
    hits.len().min(limit)
}

fn new_entries(start: usize, count: usize, parent: &str) -> Vec<Entry> {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let mut parent = parent.to_string();
    (0..count)
        .map(|k| {
            let i = start + k;
            let line = entry_line(
                &mut rng,
                i,
                &format!("\"{parent}\""),
                "2025-01-02T00:00:00.000Z",
                None,
            );
            parent = format!("{i:08x}");
            match parse_line(&line).unwrap() {
                Line::Entry(e) => e,
                Line::Header(_) => unreachable!(),
            }
        })
        .collect()
}

/// Median cost of one request's mirror work: `contains` (is it new?) + `push`.
fn per_request(history: &History, extra: &[Entry]) -> Duration {
    let mut h = history.clone();
    let mut samples = Vec::with_capacity(extra.len());
    for e in extra {
        let t = Instant::now();
        if !h.contains(&e.id) {
            h.push(e);
        }
        black_box(h.tip());
        samples.push(t.elapsed());
    }
    median(samples)
}

fn main() {
    let n: usize = std::env::var("RELAY_BENCH_ENTRIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    println!("relay-core history benchmark: {n} generated entries");
    let t = Instant::now();
    let text = generate(n);
    let mb = text.len() as f64 / 1e6;
    println!("generated {mb:.1} MB of JSONL in {}", fmt(t.elapsed()));
    println!();

    let mut parsed = None;
    let parse = time(3, || {
        parsed = Some(parse_session(&text));
    });
    let parsed = parsed.unwrap();
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors.first());
    let branch_idx = branch_indices(&parsed.entries, None);
    let branch: Vec<&Entry> = branch_idx.iter().map(|&i| &parsed.entries[i]).collect();

    let build = |entries: &[&Entry]| {
        let mut h = History::new("bench-session");
        for e in entries {
            h.push(e);
        }
        h
    };
    let push_all = time(3, || build(&branch));

    // Start-up: whole-file parse + branch + resync, against the streaming load the addon uses.
    let leaf = branch.last().map(|e| e.id.clone()).unwrap_or_default();
    let load_whole = time(3, || {
        let parsed = parse_session(&text);
        let branch: Vec<Entry> = branch_indices(&parsed.entries, Some(&leaf))
            .into_iter()
            .map(|i| parsed.entries[i].clone())
            .collect();
        Engine::from(LoadedBranch::of("bench-session", &branch))
    });
    struct Replay(LoadedBranch);
    impl BranchSink for Replay {
        fn begin(&mut self) {}
        fn entry(&mut self, entry: Entry) {
            self.0.push(&entry);
        }
    }
    let load_stream = time(3, || {
        let mut replay = Replay(LoadedBranch::new("bench-session"));
        assert!(stream_branch(&text, &leaf, &mut replay));
        Engine::from(replay.0)
    });
    let mut history = build(&branch);
    let heap_grown = history.heap_bytes();
    history.shrink_to_fit();

    let small = build(&branch[..1000.min(branch.len())]);
    let extra_small = new_entries(10_000_000, 1000, small.tip().unwrap());
    let extra_large = new_entries(20_000_000, 1000, history.tip().unwrap());
    let req_small = per_request(&small, &extra_small);
    let req_large = per_request(&history, &extra_large);

    println!("{:<46} {:>14} {:>14}", "operation", "time", "note");
    println!("{}", "-".repeat(76));
    println!(
        "{:<46} {:>14} {:>14}",
        "parse_session (whole file)",
        fmt(parse),
        format!("{:.0} MB/s", mb / parse.as_secs_f64())
    );
    println!(
        "{:<46} {:>14} {:>14}",
        format!("History::push x{} (branch)", branch.len()),
        fmt(push_all),
        format!("{:.0} MB/s", mb / push_all.as_secs_f64())
    );
    println!(
        "{:<46} {:>14} {:>14}",
        "load: parse_session + branch + Engine::resync",
        fmt(load_whole),
        format!("{:.0} MB/s", mb / load_whole.as_secs_f64())
    );
    println!(
        "{:<46} {:>14} {:>14}",
        "load: stream_branch into Engine (addon path)",
        fmt(load_stream),
        format!(
            "{:.2}x faster",
            load_whole.as_secs_f64() / load_stream.as_secs_f64()
        )
    );
    println!(
        "{:<46} {:>14} {:>14}",
        "per request: contains()+push() @ 1k entries",
        fmt(req_small),
        "median"
    );
    println!(
        "{:<46} {:>14} {:>14}",
        format!("per request: contains()+push() @ {} entries", branch.len()),
        fmt(req_large),
        format!(
            "ratio {:.2}x",
            req_large.as_secs_f64() / req_small.as_secs_f64()
        )
    );

    println!();
    println!(
        "{:<34} {:>12} {:>12} {:>12} {:>8}",
        "search (limit 20)", "relay", "baseline", "ratio", "hits"
    );
    println!("{}", "-".repeat(82));
    for (label, needle, recent_first) in [
        ("rare needle, recent first", RARE, true),
        ("rare needle, oldest first", RARE, false),
        ("common needle, recent first", COMMON, true),
        ("common needle, oldest first", COMMON, false),
    ] {
        let args = json!({"query": needle, "recent_first": recent_first, "limit": 20});
        let out = history.search_contents(&args);
        assert!(!out.is_error, "{}", out.text);
        let v: serde_json::Value = serde_json::from_str(&out.text).unwrap();
        let hits = v["items"].as_array().unwrap().len();
        let relay = time(7, || history.search_contents(&args));
        let base = time(3, || baseline_search(&branch, needle, 20));
        println!(
            "{:<34} {:>12} {:>12} {:>11.1}x {:>8}",
            label,
            fmt(relay),
            fmt(base),
            base.as_secs_f64() / relay.as_secs_f64(),
            hits
        );
    }
    let filtered = json!({"query": COMMON, "role": "user", "limit": 20});
    println!(
        "{:<34} {:>12}",
        "common needle, role=user",
        fmt(time(7, || history.search_contents(&filtered)))
    );
    let list = json!({"limit": 50});
    println!(
        "{:<34} {:>12}",
        "list_items (limit 50)",
        fmt(time(7, || history.list_items(&list)))
    );
    let wid = history.window_ids()[1].to_string();
    let read = json!({"window_id": wid, "item_id": format!("{:08x}", 2500), "limit_chars": 20000});
    println!(
        "{:<34} {:>12}",
        "read_item",
        fmt(time(7, || history.read_item(&read)))
    );

    println!();
    let text_bytes = history.text_bytes();
    println!(
        "memory: item text {:.1} MB; History heap {:.1} MB after load ({:.2}x), {:.1} MB after shrink_to_fit ({:.2}x)",
        text_bytes as f64 / 1e6,
        heap_grown as f64 / 1e6,
        heap_grown as f64 / text_bytes as f64,
        history.heap_bytes() as f64 / 1e6,
        history.heap_bytes() as f64 / text_bytes as f64
    );
    println!(
        "entries {}, items {}, windows {}",
        history.entry_count(),
        history.item_count(),
        history.window_count()
    );
}
