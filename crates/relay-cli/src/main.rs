//! `relay`: inspect and search Pi session files with the same history tools the model uses.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use relay_core::entry::branch_indices;
use relay_core::history::History;
use serde_json::{json, Map, Value};

const USAGE: &str = "\
relay: inspect and search Pi session files (*.jsonl)

USAGE:
  relay windows FILE [--limit N] [--oldest-first] [--json]
  relay items FILE [FILTERS] [--limit N] [--oldest-first] [--max-chars N] [--json]
  relay read FILE WINDOW ITEM [--offset N] [--limit N] [--json]
  relay search QUERY PATH... [FILTERS] [--limit N] [--oldest-first] [--json]
  relay session [PI OPTIONS] -- @/abs/launch.md REQUEST   (the pi-session wrapper)
  relay help

FILTERS:
  --window ID            only items of this window (ids as `relay windows` prints them)
  --role R               user | assistant | tool | system
  --tool-namespace NS    tool results whose tool name starts with `NS_`
  --tool-name NAME       tool results of exactly this tool

NOTES:
  The current branch of a session (root to the last entry) is read; windows split at
  every compaction. Newest first unless --oldest-first. `items` shows 50 items by default
  (each cut to --max-chars, default 1200); `search` shows 20 matching items per file.
  Search is a case-sensitive literal substring match. A PATH that is a directory is
  searched recursively for *.jsonl files (for example Pi's sessions folder).
  --json prints the history tool's JSON result; `search --json` prints a JSON array with
  one object per file (`file` plus the tool result).
  Malformed lines are reported on stderr as FILE:LINE and skipped.
  Exit status: 0 on success, 2 on unreadable input or bad arguments.
";

/// An error that ends the program with exit status 2 and a `relay: ...` message.
#[derive(Debug)]
struct Fatal(String);

impl std::fmt::Display for Fatal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Fatal {}

fn fatal(msg: impl Into<String>) -> anyhow::Error {
    anyhow!(Fatal(msg.into()))
}

fn main() -> ExitCode {
    // `relay session …` is the pi-session wrapper (raw arguments: they go to Pi).
    let mut raw = std::env::args_os().skip(1);
    if raw.next().is_some_and(|a| a == "session") {
        return relay_cli::session::run(raw.collect());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = run(&args, &mut out).and_then(|()| out.flush().map_err(Into::into));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if e.downcast_ref::<io::Error>()
                .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            // Dropping `out` could try to flush into a closed pipe; that is ignored by BufWriter.
            eprintln!("relay: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Parsed command line: positional arguments and `--option [value]` pairs.
struct Cli {
    positional: Vec<String>,
    options: Map<String, Value>,
    json: bool,
}

/// Options that take a value, and flags, per command.
fn parse(args: &[String], valued: &[&str], flags: &[&str]) -> Result<Cli> {
    let mut cli = Cli {
        positional: Vec::new(),
        options: Map::new(),
        json: false,
    };
    let mut i = 0;
    let mut only_positional = false;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if only_positional || !arg.starts_with("--") || arg == "-" {
            cli.positional.push(arg.clone());
            continue;
        }
        if arg == "--" {
            only_positional = true;
            continue;
        }
        let (name, inline) = match arg[2..].split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (&arg[2..], None),
        };
        if name == "json" && inline.is_none() {
            cli.json = true;
        } else if flags.contains(&name) {
            if inline.is_some() {
                bail!(fatal(format!("--{name} takes no value")));
            }
            cli.options.insert(name.into(), Value::Bool(true));
        } else if valued.contains(&name) {
            let value = match inline {
                Some(v) => v,
                None => {
                    let v = args
                        .get(i)
                        .ok_or_else(|| fatal(format!("--{name} needs a value")))?;
                    i += 1;
                    v.clone()
                }
            };
            cli.options.insert(name.into(), Value::String(value));
        } else {
            bail!(fatal(format!("unknown option `{arg}` (see `relay help`)")));
        }
    }
    Ok(cli)
}

impl Cli {
    fn text(&self, name: &str) -> Option<&str> {
        self.options.get(name).and_then(Value::as_str)
    }

    fn flag(&self, name: &str) -> bool {
        self.options.contains_key(name)
    }

    fn number(&self, name: &str, min: u64) -> Result<Option<u64>> {
        match self.text(name) {
            None => Ok(None),
            Some(s) => match s.parse::<u64>() {
                Ok(n) if n >= min => Ok(Some(n)),
                _ => Err(fatal(format!(
                    "--{name} must be an integer ≥ {min}, got {s:?}"
                ))),
            },
        }
    }

    /// The tool arguments for the history filters given on the command line.
    fn filters(&self, args: &mut Map<String, Value>) -> Result<()> {
        for (opt, key) in [
            ("window", "window_id"),
            ("role", "role"),
            ("tool-namespace", "tool_namespace"),
            ("tool-name", "tool_name"),
        ] {
            if let Some(v) = self.text(opt) {
                args.insert(key.into(), v.into());
            }
        }
        if let Some(n) = self.number("limit", 1)? {
            args.insert("limit".into(), n.into());
        }
        if self.flag("oldest-first") {
            args.insert("recent_first".into(), false.into());
        }
        Ok(())
    }

    fn positional_count(&self, command: &str, want: std::ops::RangeInclusive<usize>) -> Result<()> {
        let n = self.positional.len();
        if !want.contains(&n) {
            bail!(fatal(format!(
                "`relay {command}` takes {} argument(s), got {n} (see `relay help`)",
                if want.start() == want.end() {
                    want.start().to_string()
                } else if *want.end() == usize::MAX {
                    format!("{} or more", want.start())
                } else {
                    format!("{} to {}", want.start(), want.end())
                }
            )));
        }
        Ok(())
    }
}

const FILTER_OPTS: [&str; 5] = ["window", "role", "tool-namespace", "tool-name", "limit"];

fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let Some(command) = args.first() else {
        eprint!("{USAGE}");
        bail!(fatal("no command given"));
    };
    let rest = &args[1..];
    match command.as_str() {
        "help" | "--help" | "-h" => {
            out.write_all(USAGE.as_bytes())?;
            Ok(())
        }
        "--version" | "-V" | "version" => {
            writeln!(out, "relay {}", env!("CARGO_PKG_VERSION"))?;
            Ok(())
        }
        "windows" => {
            let cli = parse(rest, &["limit"], &["oldest-first"])?;
            cli.positional_count("windows", 1..=1)?;
            let history = load(Path::new(&cli.positional[0]))?;
            let mut a = Map::new();
            cli.filters(&mut a)?;
            let result = paged("windows", &a, None, None, &|v| history.list_windows(v))?;
            if cli.json {
                writeln!(out, "{}", serde_json::to_string(&result)?)?;
            } else {
                print_windows(out, &result)?;
            }
            Ok(())
        }
        "items" => {
            let mut valued = FILTER_OPTS.to_vec();
            valued.push("max-chars");
            let cli = parse(rest, &valued, &["oldest-first"])?;
            cli.positional_count("items", 1..=1)?;
            let history = load(Path::new(&cli.positional[0]))?;
            let mut a = Map::new();
            cli.filters(&mut a)?;
            if let Some(n) = cli.number("max-chars", 1)? {
                a.insert("max_chars_per_item".into(), n.into());
            }
            let max_chars = a
                .get("max_chars_per_item")
                .and_then(Value::as_u64)
                .unwrap_or(relay_core::history::DEFAULT_MAX_CHARS_PER_ITEM as u64);
            let result = paged(
                "items",
                &a,
                Some(relay_core::history::DEFAULT_LIST_ITEMS_LIMIT),
                Some(max_chars),
                &|v| history.list_items(v),
            )?;
            let mut result = result;
            complete_cut_items(&mut result, max_chars, &|v| history.read_item(v))?;
            if cli.json {
                writeln!(out, "{}", serde_json::to_string(&result)?)?;
            } else {
                print_items(out, &result, None, "content")?;
            }
            Ok(())
        }
        "read" => {
            let cli = parse(rest, &["offset", "limit"], &[])?;
            cli.positional_count("read", 3..=3)?;
            let history = load(Path::new(&cli.positional[0]))?;
            let mut a = Map::new();
            a.insert("window_id".into(), cli.positional[1].clone().into());
            a.insert("item_id".into(), cli.positional[2].clone().into());
            if let Some(n) = cli.number("offset", 0)? {
                a.insert("offset_chars".into(), n.into());
            }
            if let Some(n) = cli.number("limit", 1)? {
                a.insert("limit_chars".into(), n.into());
            }
            let result = read_all(&a, &|v| history.read_item(v))?;
            if cli.json {
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
            Ok(())
        }
        "search" => search(rest, out),
        other => {
            bail!(fatal(format!(
                "unknown command `{other}` (commands: windows, items, read, search, help)"
            )))
        }
    }
}

fn search(rest: &[String], out: &mut dyn Write) -> Result<()> {
    let cli = parse(rest, &FILTER_OPTS, &["oldest-first"])?;
    cli.positional_count("search", 2..=usize::MAX)?;
    let query = &cli.positional[0];
    if query.is_empty() {
        bail!(fatal("the search query must not be empty"));
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for p in &cli.positional[1..] {
        let found = relay_io::find_sessions(Path::new(p))
            .map_err(|e| fatal(format!("cannot read {p}: {}", e.message)))?;
        files.extend(found);
    }
    files.sort();
    files.dedup();
    let mut a = Map::new();
    a.insert("query".into(), query.clone().into());
    cli.filters(&mut a)?;
    let args = a;
    let window = cli.text("window");
    let several = files.len() > 1;

    let mut results = Vec::new();
    let mut unreadable = 0;
    let mut window_seen = false;
    for file in &files {
        let history = match load(file) {
            Ok(h) => h,
            Err(e) if several => {
                eprintln!("relay: {e:#}");
                unreadable += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        if let Some(w) = window {
            if several && !history.window_ids().contains(&w) {
                continue;
            }
            window_seen = true;
        }
        let result = paged(
            "items",
            &args,
            Some(relay_core::history::DEFAULT_SEARCH_LIMIT),
            None,
            &|v| history.search_contents(v),
        )?;
        results.push((file, result));
    }
    if let (Some(w), false) = (window, window_seen) {
        if several || files.is_empty() {
            bail!(fatal(format!(
                "unknown window_id {w:?} in every file searched"
            )));
        }
    }

    if cli.json {
        let docs: Vec<Value> = results
            .iter()
            .map(|(file, result)| {
                let mut m = Map::new();
                m.insert("file".into(), file.display().to_string().into());
                if let Value::Object(r) = result {
                    m.extend(r.clone());
                }
                Value::Object(m)
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string(&docs)?)?;
    } else {
        let mut rows = Vec::new();
        let mut more = Vec::new();
        for (file, result) in &results {
            let name = file.display().to_string();
            rows.extend(item_rows(
                result,
                several.then_some(name.as_str()),
                "snippet",
            ));
            if result["has_more"] == json!(true) {
                more.push(name);
            }
        }
        print_rows(out, &rows, several)?;
        for name in more {
            out.flush()?;
            eprintln!("relay: more matches in {name}; raise --limit to see them");
        }
    }
    if unreadable > 0 {
        bail!(fatal(format!("{unreadable} file(s) could not be read")));
    }
    Ok(())
}

/// Reads a session file and mirrors its current branch (root to the last entry).
fn load(path: &Path) -> Result<History> {
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
    for i in branch_indices(&parsed.entries, None) {
        history.push(&parsed.entries[i]);
    }
    Ok(history)
}

/// A listing tool's whole answer for `args`: its replies are capped (64 KiB each), so the pages
/// are fetched with `offset` until `limit` entries (the tool's default when absent) or the end.
/// With `refetch_cut` (the per-item character limit), an item the cap cut short is fetched again
/// at the start of the next page, unless it is alone on its page.
fn paged(
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
fn complete_cut_items(
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
fn read_all(
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

fn tool(output: relay_core::ToolOutput) -> Result<Value> {
    if output.is_error {
        bail!(fatal(output.text));
    }
    serde_json::from_str(&output.text).context("internal error: tool output is not JSON")
}

fn print_windows(out: &mut dyn Write, result: &Value) -> Result<()> {
    let windows = result["windows"].as_array().cloned().unwrap_or_default();
    let width = windows
        .iter()
        .map(|w| w["window_id"].as_str().unwrap_or("").chars().count())
        .max()
        .unwrap_or(0)
        .max("WINDOW".len());
    writeln!(
        out,
        "  {:<width$}  {:>6}  {:<24}  {:<20}",
        "WINDOW", "ITEMS", "CREATED", "OPENED BY"
    )?;
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

fn print_items(out: &mut dyn Write, result: &Value, file: Option<&str>, field: &str) -> Result<()> {
    print_rows(out, &item_rows(result, file, field), file.is_some())?;
    if result["has_more"] == json!(true) {
        out.flush()?;
        eprintln!("relay: more items match; raise --limit to see them");
    }
    Ok(())
}

/// One display row per item: [file,] window, item, role, tool, first line of `field`.
fn item_rows(result: &Value, file: Option<&str>, field: &str) -> Vec<Vec<String>> {
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

fn print_rows(out: &mut dyn Write, rows: &[Vec<String>], with_file: bool) -> Result<()> {
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
fn one_line(text: &str, max: usize) -> String {
    let trimmed = text.trim_start();
    let first = trimmed.lines().next().unwrap_or("");
    let mut s: String = first.chars().take(max).collect();
    if s.len() < trimmed.trim_end().len() {
        s.push('…');
    }
    s
}
