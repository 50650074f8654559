//! `relay sessions [DIR]`: every session file below DIR (default: Pi's sessions folder), read in
//! parallel, newest activity first, with its windows (of the current branch), size, last activity
//! (its newest entry) and title: Pi's session name (the last `session_info` entry that sets one),
//! else the first user message of the branch, cut to 60 characters. Exit 1 when no session file
//! is found.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use relay_core::entry::EntryKind;
use serde_json::{json, Value};

use super::history::{load_session, Loaded};
use super::{cut, fatal, human_bytes, par_map, table, Outcome};

const TITLE_CHARS: usize = 60;

struct Row {
    file: PathBuf,
    id: String,
    cwd: Option<String>,
    windows: usize,
    bytes: u64,
    last_activity: Option<String>,
    title: String,
    /// "name" (Pi's session name), "first_message", or "none".
    title_from: &'static str,
}

pub fn run(dir: Option<PathBuf>, json: bool, out: &mut dyn Write) -> Result<Outcome> {
    let dir = match dir {
        Some(d) => d,
        None => {
            let d = super::sessions_dir()?;
            if !d.exists() {
                return Ok(Outcome::Nothing(format!(
                    "no sessions folder at {} (Pi has not saved a session there yet)",
                    d.display()
                )));
            }
            d
        }
    };
    let files = relay_io::find_sessions(&dir)
        .map_err(|e| fatal(format!("cannot read {}: {}", dir.display(), e.message)))?;
    let read: Vec<Result<Row>> = par_map(&files, |f| row(f));
    let mut rows = Vec::new();
    let mut unreadable = 0;
    for r in read {
        match r {
            Ok(row) => rows.push(row),
            Err(e) => {
                eprintln!("relay: {e:#}");
                unreadable += 1;
            }
        }
    }
    rows.sort_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then(a.file.cmp(&b.file))
    });
    if json {
        let docs: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "file": r.file.display().to_string(),
                    "session_id": r.id,
                    "cwd": r.cwd,
                    "windows": r.windows,
                    "bytes": r.bytes,
                    "last_activity": r.last_activity,
                    "title": r.title,
                    "title_from": r.title_from,
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string(&docs)?)?;
    } else if !rows.is_empty() {
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                vec![
                    r.last_activity.clone().unwrap_or_else(|| "-".into()),
                    r.windows.to_string(),
                    human_bytes(r.bytes),
                    if r.title.is_empty() {
                        "-".into()
                    } else {
                        r.title.clone()
                    },
                    r.file.display().to_string(),
                ]
            })
            .collect();
        out.write_all(
            table(
                &["LAST ACTIVITY", "WINDOWS", "SIZE", "TITLE", "FILE"],
                &cells,
            )
            .as_bytes(),
        )?;
    }
    if unreadable > 0 {
        return Err(fatal(format!("{unreadable} file(s) could not be read")));
    }
    if rows.is_empty() {
        return Ok(Outcome::Nothing(format!(
            "no session files (*.jsonl) in {}",
            dir.display()
        )));
    }
    Ok(Outcome::Done)
}

fn row(file: &Path) -> Result<Row> {
    let bytes = std::fs::metadata(file)
        .map_err(|e| fatal(format!("cannot read {}: {e}", file.display())))?
        .len();
    let loaded = load_session(file)?;
    let (title, title_from) = title(&loaded);
    Ok(Row {
        file: file.to_path_buf(),
        id: loaded.history.session_id().to_string(),
        cwd: loaded.parsed.header.as_ref().and_then(|h| h.cwd.clone()),
        windows: loaded.history.window_count(),
        bytes,
        last_activity: loaded.last_activity().map(str::to_string),
        title,
        title_from,
    })
}

/// Pi's session name (the last `session_info` entry of the file decides, as in Pi), else the
/// first user message of the current branch.
fn title(loaded: &Loaded) -> (String, &'static str) {
    let named = loaded
        .parsed
        .entries
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EntryKind::SessionInfo { name } => Some(name.clone()),
            _ => None,
        });
    if let Some(Some(name)) = named {
        let name = name.trim();
        if !name.is_empty() {
            return (cut(name, TITLE_CHARS), "name");
        }
    }
    let first_user =
        loaded
            .branch
            .iter()
            .find_map(|&i| match &loaded.parsed.entries.get(i)?.kind {
                EntryKind::Message(m) if m.role == "user" && !m.text.trim().is_empty() => {
                    Some(m.text.as_str())
                }
                _ => None,
            });
    match first_user {
        Some(text) => (cut(text, TITLE_CHARS), "first_message"),
        None => (String::new(), "none"),
    }
}
