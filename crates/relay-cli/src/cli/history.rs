//! The history commands (`windows`, `items`, `read`) and the paging helpers every command that
//! calls a history tool shares: the tools' replies are capped at 64 KiB, the CLI fetches the rest.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use relay_core::entry::branch_indices;
use relay_core::history::History;
use serde_json::{json, Map, Value};

use super::{fatal, Outcome};

/// `relay windows FILE`.
pub fn windows(
    file: &Path,
    limit: Option<u64>,
    oldest_first: bool,
    json: bool,
    out: &mut dyn Write,
) -> Result<Outcome> {
    let history = load(file)?;
    let mut a = Map::new();
    if let Some(n) = limit {
        a.insert("limit".into(), n.into());
    }
    if oldest_first {
        a.insert("recent_first".into(), false.into());
    }
    let result = paged("windows", &a, None, None, &|v| history.list_windows(v))?;
    if json {
        writeln!(out, "{}", serde_json::to_string(&result)?)?;
    } else {
        print_windows(out, &result)?;
    }
    Ok(Outcome::Done)
}

/// `relay items FILE`: exit 1 when no item matches the filters.
pub fn items(
    file: &Path,
    filters: &Map<String, Value>,
    max_chars: Option<u64>,
    json: bool,
    out: &mut dyn Write,
) -> Result<Outcome> {
    let history = load(file)?;
    let mut a = filters.clone();
    let max_chars = max_chars.unwrap_or(relay_core::history::DEFAULT_MAX_CHARS_PER_ITEM as u64);
    a.insert("max_chars_per_item".into(), max_chars.into());
    let mut result = paged(
        "items",
        &a,
        Some(relay_core::history::DEFAULT_LIST_ITEMS_LIMIT),
        Some(max_chars),
        &|v| history.list_items(v),
    )?;
    complete_cut_items(&mut result, max_chars, &|v| history.read_item(v))?;
    if json {
        writeln!(out, "{}", serde_json::to_string(&result)?)?;
    } else {
        print_items(out, &result, None, "content")?;
    }
    if result["items"].as_array().is_none_or(Vec::is_empty) {
        return Ok(Outcome::Nothing("no item matches".into()));
    }
    Ok(Outcome::Done)
}

/// `relay read FILE WINDOW ITEM`.
pub fn read(
    file: &Path,
    window: &str,
    item: &str,
    offset: Option<u64>,
    limit: Option<u64>,
    json: bool,
    out: &mut dyn Write,
) -> Result<Outcome> {
    let history = load(file)?;
    let mut a = Map::new();
    a.insert("window_id".into(), window.into());
    a.insert("item_id".into(), item.into());
    if let Some(n) = offset {
        a.insert("offset_chars".into(), n.into());
    }
    if let Some(n) = limit {
        a.insert("limit_chars".into(), n.into());
    }
    let result = read_all(&a, &|v| history.read_item(v))?;
    if json {
        writeln!(out, "{}", serde_json::to_string(&result)?)?;
    } else {
        let content = result["content"].as_str().unwrap_or("");
        out.write_all(content.as_bytes())?;
        if !content.ends_with('\n') {
            out.write_all(b"\n")?;
        }
        if let Some(next) = result["next_offset_chars"].as_u64() {
            out.flush()?;
            eprintln!(
                "relay: {} of {} characters shown; continue with --offset {next}",
                next - result["offset_chars"].as_u64().unwrap_or(0),
                result["total_chars"]
            );
        }
    }
    Ok(Outcome::Done)
}

/// Reads a session file and mirrors its current branch (root to the last entry).
pub(crate) fn load(path: &Path) -> Result<History> {
    Ok(load_session(path)?.history)
}

/// A session file read for the commands: its branch mirrored, and what the listings show.
pub(crate) struct Loaded {
    pub history: History,
    pub parsed: relay_core::entry::ParsedSession,
    /// Indices into `parsed.entries` of the current branch, root first.
    pub branch: Vec<usize>,
}

impl Loaded {
    /// The newest entry timestamp of the file (any branch), or the header's.
    pub fn last_activity(&self) -> Option<&str> {
        self.parsed
            .entries
            .iter()
            .map(|e| e.timestamp.as_str())
            .filter(|t| !t.is_empty())
            .max()
            .or(self
                .parsed
                .header
                .as_ref()
                .and_then(|h| h.timestamp.as_deref()))
    }
}

/// Reads a session file (malformed lines reported on stderr as FILE:LINE) and mirrors its
/// current branch.
pub(crate) fn load_session(path: &Path) -> Result<Loaded> {
    let parsed = relay_io::read_session(path)
        .map_err(|e| fatal(format!("cannot read {}: {}", path.display(), e.message)))?;
    for err in &parsed.errors {
        eprintln!(
            "{}:{}: warning: skipped malformed line: {}",
            path.display(),
            err.line,
            err.message
        );
    }
    let session_id = match &parsed.header {
        Some(h) => h.id.clone(),
        None => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let mut history = History::new(&session_id);
    let branch = branch_indices(&parsed.entries, None);
    for &i in &branch {
        history.push(&parsed.entries[i]);
    }
    Ok(Loaded {
        history,
        parsed,
        branch,
    })
}

/// A listing tool's whole answer for `args`: its replies are capped (64 KiB each), so the pages
/// are fetched with `offset` until `limit` entries (the tool's default when absent) or the end.
/// With `refetch_cut` (the per-item character limit), an item the cap cut short is fetched again
/// at the start of the next page, unless it is alone on its page.
pub(crate) fn paged(
    key: &str,
    args: &Map<String, Value>,
    default_limit: Option<usize>,
    refetch_cut: Option<u64>,
    call: &dyn Fn(&Value) -> relay_core::ToolOutput,
) -> Result<Value> {
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .or(default_limit.map(|l| l as u64));
    let mut entries: Vec<Value> = Vec::new();
    let mut offset = 0u64;
    loop {
        let mut page_args = args.clone();
        page_args.insert("offset".into(), offset.into());
        if let Some(l) = limit {
            page_args.insert("limit".into(), (l - entries.len() as u64).into());
        }
        let mut page = tool(call(&Value::Object(page_args)))?;
        let mut list = match page.get_mut(key).map(Value::take) {
            Some(Value::Array(list)) => list,
            _ => Vec::new(),
        };
        let capped = page.get("capped").is_some();
        let mut next = page.get("next_offset").and_then(Value::as_u64);
        if let (true, Some(max), Some(n)) = (capped, refetch_cut, next) {
            let cut = list.last().is_some_and(|item| {
                let shown = item["content"]
                    .as_str()
                    .map_or(0, |c| c.chars().count() as u64);
                shown < item["total_chars"].as_u64().unwrap_or(0).min(max)
            });
            if cut && list.len() > 1 {
                list.pop();
                next = Some(n - 1);
            }
        }
        entries.extend(list);
        let done = limit.is_some_and(|l| entries.len() as u64 >= l);
        match next {
            Some(n) if capped && !done && n > offset => offset = n,
            _ => {
                if let Value::Object(m) = &mut page {
                    m.remove("capped");
                    m.insert(key.into(), Value::Array(entries));
                    if let Some(n) = next {
                        m.insert("next_offset".into(), n.into());
                    }
                }
                return Ok(page);
            }
        }
    }
}

/// Items whose content the reply cap cut below `max_chars` (an item too large for one reply)
/// are completed with `history_read_item`.
pub(crate) fn complete_cut_items(
    result: &mut Value,
    max_chars: u64,
    read: &dyn Fn(&Value) -> relay_core::ToolOutput,
) -> Result<()> {
    let Some(items) = result.get_mut("items").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    for item in items {
        let shown = item["content"].as_str().unwrap_or("").to_string();
        let shown_chars = shown.chars().count() as u64;
        let wanted = item["total_chars"].as_u64().unwrap_or(0).min(max_chars);
        if shown_chars >= wanted {
            continue;
        }
        let mut a = Map::new();
        a.insert("window_id".into(), item["window_id"].clone());
        a.insert("item_id".into(), item["item_id"].clone());
        a.insert("offset_chars".into(), shown_chars.into());
        a.insert("limit_chars".into(), (wanted - shown_chars).into());
        let rest = read_all(&a, read)?;
        item["content"] = format!("{shown}{}", rest["content"].as_str().unwrap_or("")).into();
        item["truncated"] = (wanted < item["total_chars"].as_u64().unwrap_or(0)).into();
    }
    Ok(())
}

/// `history_read_item` over as many capped replies as the requested range needs.
pub(crate) fn read_all(
    args: &Map<String, Value>,
    call: &dyn Fn(&Value) -> relay_core::ToolOutput,
) -> Result<Value> {
    let start = args
        .get("offset_chars")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let limit = args
        .get("limit_chars")
        .and_then(Value::as_u64)
        .unwrap_or(relay_core::history::DEFAULT_READ_LIMIT_CHARS as u64);
    let mut content = String::new();
    let mut taken = 0u64;
    let mut offset = start;
    loop {
        let mut page_args = args.clone();
        page_args.insert("offset_chars".into(), offset.into());
        page_args.insert("limit_chars".into(), (limit - taken).into());
        let mut page = tool(call(&Value::Object(page_args)))?;
        let part = page["content"].as_str().unwrap_or("").to_string();
        taken += part.chars().count() as u64;
        content.push_str(&part);
        let next = page["next_offset_chars"].as_u64();
        match next {
            Some(n) if taken < limit && n > offset => offset = n,
            _ => {
                if let Value::Object(m) = &mut page {
                    m.remove("capped");
                    m.insert("offset_chars".into(), start.into());
                    m.insert("content".into(), content.into());
                }
                return Ok(page);
            }
        }
    }
}

pub(crate) fn tool(output: relay_core::ToolOutput) -> Result<Value> {
    if output.is_error {
        bail!(fatal(output.text));
    }
    serde_json::from_str(&output.text).context("internal error: tool output is not JSON")
}

pub(crate) fn print_windows(out: &mut dyn Write, result: &Value) -> Result<()> {
    let windows = result["windows"].as_array().cloned().unwrap_or_default();
    let width = windows
        .iter()
        .map(|w| w["window_id"].as_str().unwrap_or("").chars().count())
        .max()
        .unwrap_or(0)
        .max("WINDOW".len());
    let header = format!(
        "  {:<width$}  {:>6}  {:<24}  {}",
        "WINDOW", "ITEMS", "CREATED", "OPENED BY"
    );
    writeln!(out, "{}", header.trim_end())?;
    for w in &windows {
        // "handoff (budget)", "reset (forcedHard)", "reset", "root", "compaction".
        let opened_by = match (w["opened_by"].as_str(), w["commit"].as_str()) {
            (Some(by), Some(commit)) => format!("{by} ({commit})"),
            (Some(by), None) => by.to_string(),
            (None, _) => "-".to_string(),
        };
        let line = format!(
            "{} {:<width$}  {:>6}  {:<24}  {}",
            if w["current"] == json!(true) {
                "*"
            } else {
                " "
            },
            w["window_id"].as_str().unwrap_or(""),
            w["item_count"].as_u64().unwrap_or(0),
            w["created_at"].as_str().unwrap_or("-"),
            opened_by,
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

pub(crate) fn print_items(
    out: &mut dyn Write,
    result: &Value,
    file: Option<&str>,
    field: &str,
) -> Result<()> {
    let rows = item_rows(result, file, field);
    if !rows.is_empty() {
        print_rows(out, &rows, file.is_some())?;
    }
    if result["has_more"] == json!(true) {
        out.flush()?;
        eprintln!("relay: more items match; raise --limit to see them");
    }
    Ok(())
}

/// One display row per item: [file,] window, item, role, tool, first line of `field`.
pub(crate) fn item_rows(result: &Value, file: Option<&str>, field: &str) -> Vec<Vec<String>> {
    let items = result["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    items
        .iter()
        .map(|item| {
            let s = |k: &str| item[k].as_str().unwrap_or("-").to_string();
            let mut row = Vec::new();
            if let Some(f) = file {
                row.push(f.to_string());
            }
            row.extend([s("window_id"), s("item_id"), s("role"), s("tool_name")]);
            let mut content = one_line(item[field].as_str().unwrap_or(""), 120);
            // A snippet that starts inside the item says so.
            if item["snippet_offset_chars"].as_u64().is_some_and(|o| o > 0) {
                content.insert(0, '…');
            }
            if item["truncated"] == json!(true) && !content.ends_with('…') {
                content.push('…');
            }
            row.push(content);
            row
        })
        .collect()
}

pub(crate) fn print_rows(out: &mut dyn Write, rows: &[Vec<String>], with_file: bool) -> Result<()> {
    let mut header: Vec<String> = ["WINDOW", "ITEM", "ROLE", "TOOL", "CONTENT"]
        .map(String::from)
        .to_vec();
    if with_file {
        header.insert(0, "FILE".into());
    }
    let columns = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == columns {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                let pad = widths[i] - cell.chars().count() + 2;
                line.push_str(&" ".repeat(pad));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// The first non-empty line of `text`, at most `max` characters; `…` marks anything left out.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let trimmed = text.trim_start();
    let first = trimmed.lines().next().unwrap_or("");
    let mut s: String = first.chars().take(max).collect();
    if s.len() < trimmed.trim_end().len() {
        s.push('…');
    }
    s
}
