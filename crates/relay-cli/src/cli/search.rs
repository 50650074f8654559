//! `relay search QUERY [PATH...]`: every session file searched in parallel with the model's
//! `history_search_contents`, the files ranked, the matches highlighted.
//!
//! **Ranking:** the session with the newest activity (its newest entry's timestamp) first; at
//! equal activity the one with more matching items; then by path. Within a session the items
//! come in the tool's order (newest first unless `--oldest-first`), at most `--limit` (default
//! 20) per session. Exit 1 when nothing matches.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde_json::{json, Map, Value};

use super::history::{item_rows, load_session, paged};
use super::{fatal, par_map, Outcome};

/// Start and end of a highlighted match on a terminal.
const HL_ON: &str = "\x1b[1;31m";
const HL_OFF: &str = "\x1b[0m";

pub struct Request {
    pub query: String,
    pub paths: Vec<PathBuf>,
    /// The history filters (window, role, tool, limit, order) as tool arguments.
    pub args: Map<String, Value>,
    pub window: Option<String>,
    pub color: bool,
    pub json: bool,
}

/// One searched file.
struct Hit {
    file: PathBuf,
    last_activity: Option<String>,
    matches: usize,
    result: Value,
}

pub fn run(req: &Request, out: &mut dyn Write) -> Result<Outcome> {
    if req.query.is_empty() {
        bail!(fatal("the search query must not be empty"));
    }
    let mut files: Vec<PathBuf> = Vec::new();
    if req.paths.is_empty() {
        let dir = super::sessions_dir()?;
        if !dir.exists() {
            return Ok(Outcome::Nothing(format!(
                "no sessions folder at {} (pass a PATH)",
                dir.display()
            )));
        }
        files = find(&dir)?;
    } else {
        for p in &req.paths {
            files.extend(find(p)?);
        }
    }
    files.sort();
    files.dedup();
    let several = files.len() > 1;
    let mut args = req.args.clone();
    args.insert("query".into(), req.query.clone().into());

    // Each file: Ok(None) when it lacks the --window asked for (several files), Err when unreadable.
    let searched: Vec<Result<Option<Hit>>> = par_map(&files, |file| {
        search_file(file, &args, req.window.as_deref(), several)
    });
    let mut hits = Vec::new();
    let mut unreadable = 0;
    for r in searched {
        match r {
            Ok(Some(hit)) => hits.push(hit),
            Ok(None) => {}
            Err(e) if several => {
                eprintln!("relay: {e:#}");
                unreadable += 1;
            }
            Err(e) => return Err(e),
        }
    }
    if let Some(w) = &req.window {
        if hits.is_empty() && (several || files.is_empty()) && unreadable == 0 {
            bail!(fatal(format!(
                "unknown window_id {w:?} in every file searched"
            )));
        }
    }
    hits.sort_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then(b.matches.cmp(&a.matches))
            .then(a.file.cmp(&b.file))
    });

    if req.json {
        write_json(out, &hits)?;
    } else {
        write_table(out, req, &hits, several)?;
    }
    if unreadable > 0 {
        bail!(fatal(format!("{unreadable} file(s) could not be read")));
    }
    if hits.iter().all(|h| h.matches == 0) {
        return Ok(Outcome::Nothing(format!(
            "no match for {:?} in {} file(s)",
            req.query,
            files.len()
        )));
    }
    Ok(Outcome::Done)
}

/// The hits as one JSON array (`--json`): each file's result with its file, last activity and
/// match count.
fn write_json(out: &mut dyn Write, hits: &[Hit]) -> Result<()> {
    let docs: Vec<Value> = hits
        .iter()
        .map(|hit| {
            let mut m = Map::new();
            m.insert("file".into(), hit.file.display().to_string().into());
            m.insert("last_activity".into(), json!(hit.last_activity));
            m.insert("matches".into(), hit.matches.into());
            if let Value::Object(r) = &hit.result {
                m.extend(r.clone());
            }
            Value::Object(m)
        })
        .collect();
    writeln!(out, "{}", serde_json::to_string(&docs)?)?;
    Ok(())
}

/// The hits as a table, the query highlighted with `--color`; a file with more matches than
/// shown is said on stderr.
fn write_table(out: &mut dyn Write, req: &Request, hits: &[Hit], several: bool) -> Result<()> {
    let mut rows = Vec::new();
    let mut more = Vec::new();
    for hit in hits.iter().filter(|h| h.matches > 0) {
        let name = hit.file.display().to_string();
        let items = hit.result["items"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let file_rows = item_rows(&hit.result, several.then_some(name.as_str()), "snippet");
        for (mut row, item) in file_rows.into_iter().zip(items) {
            if let Some(cell) = row.last_mut() {
                *cell = match_line(item, req.query.chars().count());
            }
            rows.push(row);
        }
        if hit.result["has_more"] == json!(true) {
            more.push(name);
        }
    }
    let mut header = vec!["WINDOW", "ITEM", "ROLE", "TOOL", "CONTENT"];
    if several {
        header.insert(0, "FILE");
    }
    let text = if rows.is_empty() {
        String::new()
    } else {
        super::table(&header, &rows)
    };
    if req.color {
        // Only the content column (the last one) can hold the query; highlight there.
        for (n, line) in text.lines().enumerate() {
            if n == 0 {
                writeln!(out, "{line}")?;
                continue;
            }
            writeln!(out, "{}", highlight_last_column(line, &rows, n, &req.query))?;
        }
    } else {
        out.write_all(text.as_bytes())?;
    }
    for name in more {
        out.flush()?;
        eprintln!("relay: more matches in {name}; raise --limit to see them");
    }
    Ok(())
}

fn find(p: &Path) -> Result<Vec<PathBuf>> {
    relay_io::find_sessions(p)
        .map_err(|e| fatal(format!("cannot read {}: {}", p.display(), e.message)))
}

/// Searches one file; with several files, one without the `window` asked for is skipped (a
/// single file reports the unknown window as an error).
fn search_file(
    file: &Path,
    args: &Map<String, Value>,
    window: Option<&str>,
    several: bool,
) -> Result<Option<Hit>> {
    let loaded = load_session(file)?;
    if let (Some(w), true) = (window, several) {
        if !loaded.history.window_ids().contains(&w) {
            return Ok(None);
        }
    }
    let result = paged(
        "items",
        args,
        Some(relay_core::history::DEFAULT_SEARCH_LIMIT),
        None,
        &|v| loaded.history.search_contents(v),
    )?;
    let matches = result["items"].as_array().map_or(0, Vec::len);
    Ok(Some(Hit {
        file: file.to_path_buf(),
        last_activity: loaded.last_activity().map(str::to_string),
        matches,
        result,
    }))
}

/// The display line `n` (1-based after the header) with every occurrence of `query` in its last
/// column wrapped in the highlight codes.
fn highlight_last_column(line: &str, rows: &[Vec<String>], n: usize, query: &str) -> String {
    let Some(content) = rows.get(n - 1).and_then(|r| r.last()) else {
        return line.to_string();
    };
    let Some(start) = line.len().checked_sub(content.trim_end().len()) else {
        return line.to_string();
    };
    let (head, tail) = line.split_at(start);
    format!(
        "{head}{}",
        tail.replace(query, &format!("{HL_ON}{query}{HL_OFF}"))
    )
}

/// Characters of a search result line, and of context kept before the match in a long line.
const LINE_CHARS: usize = 120;
const LEAD_CHARS: usize = 40;

/// The line of a hit's snippet that holds its first match, at most [`LINE_CHARS`] characters
/// around it; `…` marks text left out on either side.
fn match_line(item: &Value, query_chars: usize) -> String {
    let snippet = item["snippet"].as_str().unwrap_or("");
    let chars: Vec<char> = snippet.chars().collect();
    let offset = item["snippet_offset_chars"].as_u64().unwrap_or(0) as usize;
    let at = (item["match_offset_chars"].as_u64().unwrap_or(0) as usize)
        .saturating_sub(offset)
        .min(chars.len());
    let line_start = chars[..at]
        .iter()
        .rposition(|c| *c == '\n')
        .map_or(0, |p| p + 1);
    let line_end = chars[at..]
        .iter()
        .position(|c| *c == '\n')
        .map_or(chars.len(), |p| at + p);
    let mut from = line_start;
    if at + query_chars > from + LINE_CHARS {
        from = at.saturating_sub(LEAD_CHARS).max(line_start);
    }
    let to = line_end.min(from + LINE_CHARS.max(query_chars));
    let mut text: String = chars[from..to].iter().collect();
    text = text.replace(['\r', '\t'], " ");
    let cut_before = from > 0 || offset > 0;
    let total = item["total_chars"].as_u64().unwrap_or(0) as usize;
    let cut_after = to < chars.len() || offset + chars.len() < total;
    if cut_before {
        text.insert(0, '…');
    }
    if cut_after {
        text.push('…');
    }
    text
}
