//! The ledger as text (`relay stats`, `/relay stats`): one row per window, the totals, and what
//! the figures are. The same bytes in both places.

use std::fmt::Write as _;

use super::group_digits;
use crate::ledger::{Ledger, WindowCost};

/// A column: its heading and whether its cells are right-aligned (numbers).
const COLUMNS: [(&str, bool); 11] = [
    ("#", true),
    ("window", false),
    ("requests", true),
    ("input", true),
    ("cache read", true),
    ("cache write", true),
    ("output", true),
    ("cost", true),
    ("ended by", false),
    ("clearings (freed)", false),
    ("Pi summary input", true),
];

/// The ledger's text. See the module documentation.
pub fn render_ledger(ledger: &Ledger) -> String {
    let t = &ledger.totals;
    let mut s = format!("relay stats · session {}\n", ledger.session_id);
    let _ = writeln!(
        s,
        "{} · {} · {} Relay {} · {} Pi {} · {}\n",
        count(t.windows as u64, "window", "windows"),
        count(t.requests, "request", "requests"),
        t.relay_resets,
        if t.relay_resets == 1 {
            "reset"
        } else {
            "resets"
        },
        t.pi_compactions,
        if t.pi_compactions == 1 {
            "compaction"
        } else {
            "compactions"
        },
        count(t.clearings, "clearing", "clearings"),
    );
    let mut rows: Vec<Vec<String>> = ledger.windows.iter().map(window_row).collect();
    let tokens = |n: u64| {
        if t.requests_with_usage > 0 {
            group_digits(n)
        } else {
            "—".into()
        }
    };
    rows.push(vec![
        String::new(),
        "total".into(),
        group_digits(t.requests),
        tokens(t.tokens.input),
        tokens(t.tokens.cache_read),
        tokens(t.tokens.cache_write),
        tokens(t.tokens.output),
        cost(t.cost),
        String::new(),
        clearings(t.clearings, t.cleared_tokens),
        if t.pi_summary_requests > 0 {
            group_digits(t.pi_summary_input)
        } else {
            "—".into()
        },
    ]);
    s.push_str(&table(&rows));
    s.push('\n');
    for w in &ledger.windows {
        if w.requests > 0 && w.requests_with_usage < w.requests {
            let missing = w.requests - w.requests_with_usage;
            let _ = writeln!(
                s,
                "Window {} ({}): Pi recorded no usage for {}{}.",
                w.number,
                short_id(&w.window_id),
                if missing == w.requests {
                    "its ".to_string()
                } else {
                    format!("{} of its ", group_digits(missing))
                },
                count(w.requests, "request", "requests")
            );
        }
    }
    if t.requests_with_usage == 0 {
        s.push_str("No request on this branch recorded usage: the provider reported none.\n");
    }
    s.push_str(
        "Tokens and cost are the provider's own counts and Pi's recorded cost of each request \
         (input: neither read from nor written to the prompt cache).\n",
    );
    if t.pi_summary_requests > 0 {
        let _ = writeln!(
            s,
            "Pi summary input: Pi's own estimate of the context at the boundary (tokensBefore). \
             Pi's summary compaction sends that context to the model once more, uncached (less \
             the recent messages it keeps, plus its instructions), to write the summary; \
             Relay's {} sent none of these {} tokens (the total; a Pi compaction's is marked \
             sent).",
            count(t.pi_summary_requests, "reset", "resets"),
            group_digits(t.pi_summary_input)
        );
    }
    s
}

fn window_row(w: &WindowCost) -> Vec<String> {
    let usage = w.requests_with_usage > 0;
    let tokens = |n: u64| {
        if usage {
            group_digits(n)
        } else {
            "—".into()
        }
    };
    vec![
        w.number.to_string(),
        short_id(&w.window_id).to_string(),
        if usage || w.requests == 0 {
            group_digits(w.requests)
        } else {
            format!("{} (no usage)", group_digits(w.requests))
        },
        tokens(w.tokens.input),
        tokens(w.tokens.cache_read),
        tokens(w.tokens.cache_write),
        tokens(w.tokens.output),
        cost(w.cost),
        w.ended.describe(),
        clearings(w.clearings, w.cleared_tokens),
        match (w.pi_summary_input, w.ended.kind.as_str()) {
            (None, _) => "—".into(),
            // Pi's own compaction made that request.
            (Some(t), "compaction") => format!("{} (sent)", group_digits(t)),
            (Some(t), _) => group_digits(t),
        },
    ]
}

/// The last segment of a window id (`pcw:<session>:root` → `root`).
fn short_id(id: &str) -> &str {
    id.rsplit(':').next().unwrap_or(id)
}

fn count(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", group_digits(n), if n == 1 { one } else { many })
}

/// Pi's cost, in the unit Pi records (dollars), to the hundredth of a cent.
fn cost(c: Option<f64>) -> String {
    c.map_or_else(|| "—".into(), |c| format!("${c:.4}"))
}

fn clearings(n: u64, freed: u64) -> String {
    if n == 0 {
        "—".into()
    } else {
        format!("{n} (−{})", group_digits(freed))
    }
}

/// The table: headings, then the rows, each column padded to its widest cell.
fn table(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = COLUMNS.iter().map(|(h, _)| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let head: Vec<String> = COLUMNS.iter().map(|(h, _)| h.to_string()).collect();
    let mut out = String::new();
    for row in std::iter::once(&head).chain(rows) {
        let mut line = String::new();
        for (i, ((cell, width), (_, right))) in row.iter().zip(&widths).zip(COLUMNS).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = " ".repeat(width.saturating_sub(cell.chars().count()));
            if right {
                line.push_str(&pad);
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&pad);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
