//! The session-file checker: every invariant of the property test (`engine_props/`), checked on
//! a session file the real Pi wrote with Relay loaded — the soak run's (`tests/soak/`).
//!
//! ```sh
//! cargo test -p relay-core --test session_check -- --session FILE.jsonl --prompts N
//! ```
//!
//! checks `FILE.jsonl`, whose user messages carry the markers `«user-1»` … `«user-N»`. Without
//! `--session` (as in `cargo test`) it runs its self-test: a valid session passes and each
//! violation below, planted in a copy of it, is rejected.
//!
//! What it checks on the branch (root → the last entry):
//!
//! - every line parses (the file is whole);
//! - the branch invariants of [`branch::check_branch`]: one borrowed turn per window, one hidden
//!   continuation per reset (right after its compaction), no user prompt replayed, compaction
//!   summaries carrying only what they may;
//! - **no user prompt dropped**: each of the `N` markers is on the branch as a user message
//!   exactly once, and no other;
//! - **one reset per settle point**: every compaction is Relay's (`details.relay == "window"`;
//!   Pi's own summarizer never ran), right after its `relay/reset` marker, with a fresh attempt
//!   number and a window id never used before on the branch, and the model answered at least
//!   once between two resets;
//! - **the mirror equals a fresh resync**: every answer of a read-only Relay tool on the branch
//!   (history and notes reads, listings and searches) equals the answer of a fresh engine
//!   resynced from the branch up to that tool result (a call the budget policy blocked never
//!   ran: its result is the block reason);
//! - **notes replay equals what the tools reported**: the notes a fresh engine replays from the
//!   whole branch equal the notes the successful `notes_write_file`/`notes_append_to_file` calls
//!   wrote, applied in branch order.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::process::ExitCode;

use relay_core::engine::{Engine, LoadedBranch, Moment, CONTINUE_TYPE, RESET_MARKER_TYPE};
use relay_core::entry::{branch_indices, parse_session, Entry, EntryKind};
use serde_json::{json, Value};

#[path = "support/branch.rs"]
mod branch;

macro_rules! check {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// The read-only tools whose answers are a function of the branch (and their arguments).
const READ_TOOLS: [&str; 7] = [
    "history_list_windows",
    "history_list_items",
    "history_read_item",
    "history_search_contents",
    "notes_list_files_by_prefix",
    "notes_read_file",
    "notes_search_contents",
];

/// What a checked session held (printed as one JSON line).
#[derive(Debug, Default, serde::Serialize)]
struct Report {
    entries: usize,
    windows: usize,
    resets_by_source: BTreeMap<String, usize>,
    continuations: usize,
    borrowed_turns: usize,
    prompts: usize,
    tool_answers_compared: usize,
    blocked_calls: usize,
    notes: usize,
}

/// The tool calls of the assistant messages: id → (name, arguments), read from the raw lines
/// (the decoded [`Entry`] keeps a message's text, not its arguments).
fn tool_calls(text: &str) -> HashMap<String, (String, Value)> {
    let mut calls = HashMap::new();
    for line in text.lines() {
        if !line.contains("\"toolCall\"") {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let blocks = value["message"]["content"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for b in blocks {
            if b["type"] == "toolCall" {
                if let (Some(id), Some(name)) = (b["id"].as_str(), b["name"].as_str()) {
                    calls.insert(id.to_string(), (name.to_string(), b["arguments"].clone()));
                }
            }
        }
    }
    calls
}

fn moment(cwd: &str) -> Result<Moment, String> {
    serde_json::from_value(json!({
        "nowMs": 1_800_000_000_000_i64,
        "tzOffsetMinutes": 0,
        "usage": null,
        "model": "faux/faux-1",
        "contextWindow": null,
        "hasPendingMessages": false,
        "cwd": cwd,
        "subagent": false,
    }))
    .map_err(|e| format!("moment: {e}"))
}

fn check_session(text: &str, prompts: u32) -> Result<Report, String> {
    let parsed = parse_session(text);
    check!(
        parsed.errors.is_empty(),
        "the session file has malformed lines: {:?}",
        parsed.errors
    );
    let header = parsed
        .header
        .as_ref()
        .ok_or_else(|| "the session file has no header".to_string())?;
    let session_id = header.id.clone();
    let cwd = header.cwd.clone().unwrap_or_default();
    let branch: Vec<Entry> = branch_indices(&parsed.entries, None)
        .into_iter()
        .filter_map(|i| parsed.entries.get(i).cloned())
        .collect();
    check!(!branch.is_empty(), "the session file has no entries");
    let mut report = Report {
        entries: branch.len(),
        ..Report::default()
    };

    // Overflow resets Pi retries: Pi omitted the failed attempt (a context_edit) just before the
    // reset's marker.
    let mut restating = HashSet::new();
    for (i, e) in branch.iter().enumerate() {
        if let EntryKind::Compaction { details, .. } = &e.kind {
            let overflow = details.get("source").and_then(Value::as_str) == Some("overflow");
            let edited = i >= 2
                && matches!(
                    branch.get(i - 2).map(|e| &e.kind),
                    Some(EntryKind::ContextEdit { .. })
                );
            if overflow && edited {
                restating.insert(e.id.clone());
            }
        }
    }
    branch::check_branch(&branch, &restating)?;

    // No user prompt dropped: every marker the soak sent, once, and no other.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for e in &branch {
        if let EntryKind::Message(m) = &e.kind {
            if m.role == "user" {
                for p in branch::prompts_in(&m.text) {
                    *seen.entry(p).or_default() += 1;
                }
            }
        }
    }
    for n in 1..=prompts {
        let p = branch::marker(n);
        check!(
            seen.get(&p) == Some(&1),
            "user prompt {p} is on the branch {} times",
            seen.get(&p).copied().unwrap_or(0)
        );
    }
    check!(
        seen.len() == prompts as usize,
        "the branch holds {} user prompts, {prompts} were sent",
        seen.len()
    );
    report.prompts = seen.len();

    // One reset per settle point.
    let mut attempt = 0;
    let mut window_ids: HashSet<String> = HashSet::new();
    let mut answered_since_reset = true;
    for (i, e) in branch.iter().enumerate() {
        match &e.kind {
            EntryKind::Message(m) if m.role == "assistant" => answered_since_reset = true,
            EntryKind::CustomMessage { custom_type, .. } if custom_type == CONTINUE_TYPE => {
                report.continuations += 1;
            }
            EntryKind::CustomMessage { custom_type, .. }
                if custom_type == relay_core::engine::STEER_TYPE =>
            {
                report.borrowed_turns += 1;
            }
            EntryKind::Compaction { details, .. } => {
                check!(
                    details.get("relay").and_then(Value::as_str) == Some("window"),
                    "compaction {} is not Relay's: {details}",
                    e.id
                );
                let before = i.checked_sub(1).and_then(|j| branch.get(j));
                check!(
                    matches!(before.map(|b| &b.kind), Some(EntryKind::Custom { custom_type, .. }) if custom_type == RESET_MARKER_TYPE),
                    "compaction {} does not follow its reset marker",
                    e.id
                );
                check!(
                    answered_since_reset,
                    "compaction {} follows the previous reset without a model answer between them",
                    e.id
                );
                answered_since_reset = false;
                let n = details.get("attempt").and_then(Value::as_u64).unwrap_or(0);
                check!(
                    n > attempt,
                    "compaction {}: attempt {n} is not fresh (after {attempt})",
                    e.id
                );
                attempt = n;
                let id = details
                    .get("windowId")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                check!(
                    id.starts_with(&format!("pcw:{session_id}:")),
                    "compaction {}: window id {id:?}",
                    e.id
                );
                check!(
                    window_ids.insert(id.clone()),
                    "window id {id} is used twice"
                );
                let source = details.get("source").and_then(Value::as_str).unwrap_or("?");
                *report
                    .resets_by_source
                    .entry(source.to_string())
                    .or_default() += 1;
            }
            _ => {}
        }
    }
    report.windows = 1 + window_ids.len();

    // The mirror equals a fresh resync wherever a read-only tool answered.
    let calls = tool_calls(text);
    let moment = moment(&cwd)?;
    let mut wrote: BTreeMap<String, String> = BTreeMap::new();
    for (i, e) in branch.iter().enumerate() {
        let EntryKind::Message(m) = &e.kind else {
            continue;
        };
        if m.role != "toolResult" {
            continue;
        }
        let Some((name, args)) = m.tool_call_id.as_ref().and_then(|id| calls.get(id)) else {
            continue;
        };
        // A call the budget policy blocked never ran: Pi recorded the reason as its error.
        let blocked = m.is_error && m.text.starts_with("Blocked");
        if blocked {
            report.blocked_calls += 1;
        }
        if READ_TOOLS.contains(&name.as_str()) && !blocked {
            let mut fresh = Engine::from(LoadedBranch::of(&session_id, &branch[..i]));
            let theirs = branch::tool_reply(&mut fresh, name, args, &moment);
            check!(
                theirs.text == m.text && theirs.is_error == m.is_error,
                "{name} {args} (result {}) differs from a fresh resync of the branch up to it:\n{}\n---\n{}",
                e.id,
                m.text,
                theirs.text
            );
            report.tool_answers_compared += 1;
        }
        // What the note tools reported writing.
        if !m.is_error {
            let path = args["path"].as_str().unwrap_or_default().to_string();
            let content = args["content"].as_str().unwrap_or_default();
            match name.as_str() {
                "notes_write_file" if content.is_empty() => {
                    wrote.remove(&path);
                }
                "notes_write_file" => {
                    wrote.insert(path, content.to_string());
                }
                "notes_append_to_file" => wrote.entry(path).or_default().push_str(content),
                _ => {}
            }
        }
    }
    let fresh = Engine::from(LoadedBranch::of(&session_id, &branch));
    let replayed = branch::notes_of(&fresh);
    check!(
        replayed == wrote,
        "the notes replayed from the branch ({:?}) differ from what the note tools reported writing ({:?})",
        replayed.keys().collect::<Vec<_>>(),
        wrote.keys().collect::<Vec<_>>()
    );
    report.notes = replayed.len();
    check!(
        fresh.history().window_count() == report.windows,
        "a fresh resync sees {} windows, the branch has {}",
        fresh.history().window_count(),
        report.windows
    );
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// The self-test: the checker accepts a valid session and rejects each planted violation.
// ---------------------------------------------------------------------------------------------

struct Sample {
    lines: Vec<Value>,
}

impl Sample {
    fn push(&mut self, mut body: Value) -> String {
        let id = format!("{:08x}", self.lines.len());
        body["id"] = json!(id);
        body["parentId"] = json!(self
            .lines
            .last()
            .and_then(|l| l["id"].as_str().map(str::to_string)));
        body["timestamp"] = json!("2026-12-02T01:00:00.000Z");
        self.lines.push(body);
        id
    }
    fn user(&mut self, n: u32) -> String {
        self.push(json!({"type":"message","message":{"role":"user","content":[{"type":"text","text":format!("{} do it", branch::marker(n))}]}}))
    }
    fn assistant_text(&mut self, text: &str) -> String {
        self.push(json!({"type":"message","message":{"role":"assistant","content":[{"type":"text","text":text}],"stopReason":"stop","usage":{"input":10,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":11}}}))
    }
    fn call(&mut self, id: &str, name: &str, args: Value, result: &str, is_error: bool) {
        self.push(json!({"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":id,"name":name,"arguments":args}],"stopReason":"toolUse","usage":{"input":10,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":11}}}));
        self.push(json!({"type":"message","message":{"role":"toolResult","toolCallId":id,"toolName":name,"content":[{"type":"text","text":result}],"isError":is_error}}));
    }
    fn note(&mut self, kind: &str, path: &str, content: &str) {
        self.push(json!({"type":"custom","customType":relay_core::notes::NOTE_CUSTOM_TYPE,"data":{"kind":kind,"path":path,"content":content,"atMs":1_800_000_000_000_i64}}));
    }
    fn reset(&mut self, attempt: u64, window: &str, source: &str, continuation: bool) {
        self.push(json!({"type":"custom","customType":RESET_MARKER_TYPE,"data":{}}));
        self.push(json!({"type":"compaction","summary":"<context_window>","firstKeptEntryId":null,"tokensBefore":100,"fromHook":true,
            "details":{"relay":"window","source":source,"attempt":attempt,"windowId":format!("pcw:{SAMPLE_SID}:{window}")}}));
        if continuation {
            self.push(json!({"type":"custom_message","customType":CONTINUE_TYPE,"content":"Continue.","display":false}));
        }
    }
    fn text(&self) -> String {
        let mut out = json!({"type":"session","version":3,"id":SAMPLE_SID,"timestamp":"2026-12-02T01:00:00.000Z","cwd":"/work"}).to_string();
        for l in &self.lines {
            out.push('\n');
            out.push_str(&l.to_string());
        }
        out.push('\n');
        out
    }
}

const SAMPLE_SID: &str = "0190a1b2-soak-sample";

/// A valid session of three prompts and two resets, built by `tamper` as it goes.
fn sample(tamper: &str) -> String {
    let mut s = Sample { lines: Vec::new() };
    s.user(1);
    s.assistant_text("ok");
    s.call(
        "c1",
        "notes_write_file",
        json!({"path":"a.md","content":"one\n"}),
        "{\"written\":true}",
        false,
    );
    s.note("write", "a.md", "one\n");
    s.call("c2", "new_context", json!({}), "scheduled", false);
    s.reset(1, "0000000a", "new_context", true);
    if tamper == "second continuation" {
        s.push(json!({"type":"custom_message","customType":CONTINUE_TYPE,"content":"Continue.","display":false}));
    }
    if tamper == "reset without an answer" {
        s.reset(2, "0000000c", "manual", false);
    }
    s.assistant_text("resumed");
    s.user(2);
    if tamper == "replayed prompt" {
        s.user(2);
    }
    s.call(
        "c3",
        "notes_append_to_file",
        json!({"path":"a.md","content":"two\n"}),
        "{\"appended\":true}",
        false,
    );
    if tamper != "note lost" {
        s.note("append", "a.md", "two\n");
    }
    s.assistant_text("done");
    if tamper != "dropped prompt" {
        s.user(3);
    }
    let attempt = if tamper == "stale attempt" { 1 } else { 3 };
    let window = if tamper == "window id reused" {
        "0000000a"
    } else {
        "0000000b"
    };
    s.reset(attempt, window, "manual", false);
    if tamper == "pi summarizer" {
        s.assistant_text("between");
        s.push(json!({"type":"compaction","summary":"a summary","firstKeptEntryId":null,"tokensBefore":100,"details":{}}));
    }
    s.assistant_text("after the reset");
    let blocked = if tamper == "error instead of the answer" {
        "notes_read_file: something went wrong"
    } else {
        "Blocked by the context budget: only context_handoff is allowed now."
    };
    s.call(
        "c5",
        "notes_read_file",
        json!({"path":"a.md"}),
        blocked,
        true,
    );
    let listing = if tamper == "stale listing" {
        "{\"files\":[]}".to_string()
    } else {
        let parsed = parse_session(&s.text());
        let mut fresh = Engine::from(LoadedBranch::of(SAMPLE_SID, &parsed.entries));
        branch::tool_text(
            &mut fresh,
            "notes_list_files_by_prefix",
            &json!({"prefix":""}),
            &moment("/work").unwrap_or_else(|e| panic!("{e}")),
        )
    };
    s.call(
        "c4",
        "notes_list_files_by_prefix",
        json!({"prefix":""}),
        &listing,
        false,
    );
    let mut text = s.text();
    if tamper == "torn line" {
        text.push_str("{\"type\":\"message\",\"id\":\"torn\"");
    }
    text
}

fn self_test() -> Result<(), String> {
    let report =
        check_session(&sample(""), 3).map_err(|e| format!("the valid sample is rejected: {e}"))?;
    check!(
        report.tool_answers_compared == 1
            && report.windows == 3
            && report.notes == 1
            && report.continuations == 1,
        "the valid sample was not fully checked: {report:?}"
    );
    for (tamper, expect) in [
        ("second continuation", "hidden continuations"),
        ("replayed prompt", "on the branch 2 times"),
        ("dropped prompt", "«user-3» is on the branch 0 times"),
        ("reset without an answer", "without a model answer"),
        ("note lost", "differ from what the note tools reported"),
        ("stale attempt", "is not fresh"),
        ("window id reused", "is used twice"),
        ("pi summarizer", "is not Relay's"),
        ("stale listing", "differs from a fresh resync"),
        ("error instead of the answer", "differs from a fresh resync"),
        ("torn line", "malformed lines"),
    ] {
        match check_session(&sample(tamper), 3) {
            Ok(_) => return Err(format!("the checker accepts a session with a {tamper}")),
            Err(e) => check!(
                e.contains(expect),
                "a session with a {tamper} is rejected for the wrong reason: {e}"
            ),
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let outcome = match value("--session") {
        None => self_test().map(|()| "session_check self-test: the valid sample passes, 11 planted violations are rejected".to_string()),
        Some(path) => {
            let prompts = value("--prompts").and_then(|p| p.parse::<u32>().ok());
            match (std::fs::read_to_string(&path), prompts) {
                (Err(e), _) => Err(format!("--session {path}: {e}")),
                (_, None) => Err("--prompts N (the number of user messages sent) is required".into()),
                (Ok(text), Some(n)) => check_session(&text, n).map(|r| {
                    format!("session_check: every invariant holds: {}", json!(r))
                }),
            }
        }
    };
    match outcome {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("session_check: {e}");
            ExitCode::FAILURE
        }
    }
}
