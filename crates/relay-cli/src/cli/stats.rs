//! `relay stats FILE`: the ledger of a session's current branch (what each context window cost,
//! how it ended, its clearings, and what Pi's summary compaction would have sent at the same
//! boundaries), as `/relay stats` shows it in Pi. The figures are relay-core's
//! ([`relay_core::ledger`]); `--json` prints its [`Ledger`](relay_core::ledger::Ledger).

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use relay_core::ledger::{Ledger, LedgerBuilder, LedgerMark};
use relay_core::render::render_ledger;

use super::history::load_session;
use super::Outcome;

/// `relay stats FILE`: exit 1 when the branch holds no request (nothing to count).
pub fn run(file: &Path, json: bool, out: &mut dyn Write) -> Result<Outcome> {
    let ledger = collect(file)?;
    if json {
        writeln!(out, "{}", serde_json::to_string(&ledger)?)?;
    } else {
        out.write_all(render_ledger(&ledger).as_bytes())?;
    }
    if ledger.totals.requests == 0 {
        return Ok(Outcome::Nothing(format!(
            "{} has no request on its current branch",
            file.display()
        )));
    }
    Ok(Outcome::Done)
}

/// The ledger of `file`'s current branch (root to its last entry).
pub fn collect(file: &Path) -> Result<Ledger> {
    let loaded = load_session(file)?;
    let mut builder = LedgerBuilder::new();
    for mark in loaded
        .branch
        .iter()
        .filter_map(|&i| loaded.parsed.entries.get(i))
        .filter_map(LedgerMark::of_entry)
    {
        builder.push(&mark);
    }
    Ok(builder.finish(loaded.history.session_id(), &loaded.history.window_ids()))
}
