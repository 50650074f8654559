//! The ledger from session lines as Pi writes them, and its text (snapshots).

use serde_json::json;

use super::*;
use crate::entry::parse_entry;
use crate::render::render_ledger;

/// An assistant message with the provider's usage and Pi's cost (`None`: no `cost` object).
fn request(id: &str, input: u64, read: u64, write: u64, output: u64, cost: Option<f64>) -> String {
    let mut usage = json!({
        "input": input, "output": output, "cacheRead": read, "cacheWrite": write,
        "totalTokens": input + output + read + write,
    });
    if let Some(c) = cost {
        usage["cost"] =
            json!({"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": c});
    }
    json!({"type": "message", "id": id, "parentId": null, "timestamp": "2026-12-04T07:00:00.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "usage": usage, "stopReason": "stop"}})
    .to_string()
}

/// An assistant message without usage (a provider that reports none).
fn bare_request(id: &str) -> String {
    json!({"type": "message", "id": id, "parentId": null, "timestamp": "T",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "stopReason": "stop"}})
    .to_string()
}

fn user(id: &str) -> String {
    json!({"type": "message", "id": id, "parentId": null, "timestamp": "T",
        "message": {"role": "user", "content": "go on"}})
    .to_string()
}

/// Relay's reset: a compaction with its window marker.
fn relay_reset(
    id: &str,
    window: &str,
    kind: &str,
    source: &str,
    commit: Option<&str>,
    before: u64,
) -> String {
    json!({"type": "compaction", "id": id, "parentId": null, "timestamp": "2026-12-04T07:10:00.000Z",
        "summary": "<context_window>", "firstKeptEntryId": id, "tokensBefore": before,
        "details": {"relay": "window", "v": 1, "windowId": window, "source": source, "kind": kind,
            "commit": commit, "handoffPath": null}})
    .to_string()
}

/// Pi's own compaction (no window marker).
fn pi_compaction(id: &str, before: u64) -> String {
    json!({"type": "compaction", "id": id, "parentId": null, "timestamp": "2026-12-04T07:20:00.000Z",
        "summary": "## Goal", "firstKeptEntryId": id, "tokensBefore": before})
    .to_string()
}

fn clearing(id: &str, window: &str, items: u64, freed: u64) -> String {
    json!({"type": "custom", "id": id, "parentId": null, "timestamp": "T",
        "customType": CLEARING_TYPE, "data": {"v": 1, "windowId": window, "items": items, "tokensFreed": freed}})
    .to_string()
}

fn ledger_of_lines(lines: &[String], ids: &[&str]) -> Ledger {
    let marks: Vec<LedgerMark> = lines
        .iter()
        .map(|l| parse_entry(l).expect("a valid entry"))
        .filter_map(|e| LedgerMark::of_entry(&e))
        .collect();
    ledger_of("s-1", ids, &marks)
}

/// Four windows: a reset, a handoff, Pi's own compaction, and the open one; a clearing; a
/// window whose provider recorded no usage.
fn four_windows() -> Ledger {
    let lines = [
        user("u1"),
        request("a1", 1200, 0, 3000, 120, Some(0.0152)),
        request("a2", 40, 4100, 300, 80, Some(0.0031)),
        clearing("c1", "pcw:s-1:root", 3, 4210),
        request("a3", 25, 4300, 90, 60, Some(0.0024)),
        relay_reset("k1", "pcw:s-1:5e1a9f02", "reset", "new_context", None, 9031),
        bare_request("a4"),
        bare_request("a5"),
        relay_reset(
            "k2",
            "pcw:s-1:77c0d1e4",
            "handoff",
            "handoff",
            Some("budget"),
            41250,
        ),
        request("a6", 3300, 0, 0, 200, None),
        pi_compaction("k3", 60400),
        user("u2"),
        request("a7", 10, 2900, 500, 45, Some(0.0019)),
    ];
    ledger_of_lines(
        &lines,
        &[
            "pcw:s-1:root",
            "pcw:s-1:5e1a9f02",
            "pcw:s-1:77c0d1e4",
            "pcw:s-1:k3",
        ],
    )
}

#[test]
fn each_window_counts_its_own_requests_usage_cost_and_clearings() {
    let l = four_windows();
    assert_eq!(l.windows.len(), 4);
    let root = &l.windows[0];
    assert_eq!((root.requests, root.requests_with_usage), (3, 3));
    assert_eq!(
        root.tokens,
        Tokens {
            input: 1265,
            cache_read: 8400,
            cache_write: 3390,
            output: 260
        }
    );
    assert!((root.cost.unwrap() - 0.0207).abs() < 1e-12);
    assert_eq!(
        (root.clearings, root.cleared_results, root.cleared_tokens),
        (1, 3, 4210)
    );
    assert_eq!(root.ended.describe(), "reset (new_context)");
    assert_eq!(root.pi_summary_input, Some(9031));
    // A provider without usage: counted requests, no tokens, no cost.
    let bare = &l.windows[1];
    assert_eq!(
        (bare.requests, bare.requests_with_usage, bare.cost),
        (2, 0, None)
    );
    assert_eq!(bare.ended.describe(), "handoff (budget)");
    // Usage without Pi's cost: tokens, no cost.
    let third = &l.windows[2];
    assert_eq!((third.tokens.input, third.cost), (3300, None));
    assert_eq!(third.ended.kind, "compaction");
    assert_eq!(third.ended.describe(), "Pi compaction");
    let open = &l.windows[3];
    assert_eq!(
        (open.ended.kind.as_str(), open.pi_summary_input),
        ("open", None)
    );
    assert_eq!(open.window_id, "pcw:s-1:k3");
}

#[test]
fn the_totals_are_the_sums_of_the_windows() {
    let l = four_windows();
    let t = &l.totals;
    assert_eq!((t.windows, t.requests, t.requests_with_usage), (4, 7, 5));
    let sum = |f: fn(&WindowCost) -> u64| l.windows.iter().map(f).sum::<u64>();
    assert_eq!(t.tokens.input, sum(|w| w.tokens.input));
    assert_eq!(t.tokens.cache_read, sum(|w| w.tokens.cache_read));
    assert_eq!(t.tokens.cache_write, sum(|w| w.tokens.cache_write));
    assert_eq!(t.tokens.output, sum(|w| w.tokens.output));
    assert!((t.cost.unwrap() - (0.0207 + 0.0019)).abs() < 1e-12);
    assert_eq!((t.relay_resets, t.pi_compactions), (2, 1));
    // Pi's summary input counts at Relay's boundaries only (Pi's own compaction did send it).
    assert_eq!(
        (t.pi_summary_input, t.pi_summary_requests),
        (9031 + 41250, 2)
    );
    assert_eq!((t.clearings, t.cleared_tokens), (1, 4210));
}

#[test]
fn a_branch_without_usage_says_so() {
    let l = ledger_of_lines(&[user("u1"), bare_request("a1")], &["pcw:s-1:root"]);
    assert_eq!((l.totals.requests, l.totals.requests_with_usage), (1, 0));
    assert_eq!(l.totals.cost, None);
    insta::assert_snapshot!("ledger_without_usage", render_ledger(&l));
}

#[test]
fn a_malformed_cost_is_no_cost_and_the_line_still_loads() {
    let line = json!({"type": "message", "id": "a1", "parentId": null, "timestamp": "T",
        "message": {"role": "assistant", "usage": {"input": 5, "output": 1, "cost": "free"}}})
    .to_string();
    let e = parse_entry(&line).expect("the line loads");
    let Some(LedgerMark::Request(Some(u))) = LedgerMark::of_entry(&e) else {
        panic!("a request with usage");
    };
    assert_eq!((u.input, u.output, u.total, u.cost), (5, 1, 6, None));
}

#[test]
fn the_ledger_text() {
    insta::assert_snapshot!("ledger_four_windows", render_ledger(&four_windows()));
}

#[test]
fn the_json_form_is_the_ledger_struct() {
    let v = serde_json::to_value(four_windows()).unwrap();
    insta::assert_json_snapshot!("ledger_json", v);
}
