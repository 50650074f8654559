//! `relay handoffs [list|show H]`: the handoff files Relay writes (relay-io `handoff_files`:
//! `<root>/.ai-work/handoffs/<sessionId>-<n>.md` with its JSON sidecar `.json`, where `<root>` is
//! the repository root of the session's cwd, else the cwd). The folder is `--dir`'s, else the
//! git root of the current directory, else the current directory.
//!
//! `list` (the default): newest first (the sidecar's `timestampMs`, else the file's mtime), with
//! the window it closed and its goal; exit 1 when there is none. `show H`: H is a path, a file
//! name in the folder, `<sessionId>-<n>`, or `latest`; prints the markdown (`--json`: the sidecar
//! with the markdown as `markdown`); exit 1 when no such handoff exists.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::Result;
use relay_io::handoff_files::handoff_dir;
use serde_json::{json, Value};

use super::{cut, fatal, table, Outcome};

struct Handoff {
    name: String,
    markdown: PathBuf,
    sidecar: Option<Value>,
    at_ms: i64,
}

fn folder(dir: Option<PathBuf>) -> Result<PathBuf> {
    let root = match dir {
        Some(d) => d,
        None => {
            let cwd = std::env::current_dir()
                .map_err(|e| fatal(format!("cannot read the current directory: {e}")))?;
            match relay_io::git::git_state(&cwd).repo_root {
                Some(r) => PathBuf::from(r),
                None => cwd,
            }
        }
    };
    // `--dir` may name the handoff folder itself.
    if root.ends_with(Path::new(".ai-work").join("handoffs")) {
        return Ok(root);
    }
    Ok(handoff_dir(&root))
}

fn scan(dir: &Path) -> Result<Vec<Handoff>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(fatal(format!("cannot read {}: {e}", dir.display()))),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| fatal(format!("cannot read {}: {e}", dir.display())))?;
        let path = entry.path();
        if path.extension().is_none_or(|x| x != "md") {
            continue;
        }
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let sidecar = fs::read_to_string(path.with_extension("json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok());
        let mtime = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64);
        let at_ms = sidecar
            .as_ref()
            .and_then(|s| s["timestampMs"].as_i64())
            .unwrap_or(mtime);
        found.push(Handoff {
            name,
            markdown: path,
            sidecar,
            at_ms,
        });
    }
    found.sort_by(|a, b| b.at_ms.cmp(&a.at_ms).then(b.name.cmp(&a.name)));
    Ok(found)
}

pub fn list(dir: Option<PathBuf>, json: bool, out: &mut dyn Write) -> Result<Outcome> {
    let dir = folder(dir)?;
    let found = scan(&dir)?;
    if json {
        let docs: Vec<Value> = found
            .iter()
            .map(|h| {
                let s = h.sidecar.as_ref();
                json!({
                    "name": h.name,
                    "path": h.markdown.display().to_string(),
                    "session_id": s.and_then(|s| s["sessionId"].as_str()),
                    "sequence": s.and_then(|s| s["sequence"].as_u64()),
                    "window_id": s.and_then(|s| s["windowId"].as_str()),
                    "created_at": s.and_then(|s| s["createdAt"].as_str()),
                    "goal": s.and_then(|s| s["goal"].as_str()),
                    "next_step": s.and_then(|s| s["nextStep"].as_str()),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string(&docs)?)?;
    } else if !found.is_empty() {
        let rows: Vec<Vec<String>> = found
            .iter()
            .map(|h| {
                let s = h.sidecar.as_ref();
                let text = |k: &str| s.and_then(|s| s[k].as_str()).unwrap_or("-").to_string();
                vec![
                    text("createdAt"),
                    h.name.clone(),
                    text("windowId"),
                    cut(&text("goal"), 60),
                ]
            })
            .collect();
        out.write_all(table(&["CREATED", "HANDOFF", "CLOSED WINDOW", "GOAL"], &rows).as_bytes())?;
    }
    if found.is_empty() {
        return Ok(Outcome::Nothing(format!(
            "no handoffs in {}",
            dir.display()
        )));
    }
    Ok(Outcome::Done)
}

pub fn show(dir: Option<PathBuf>, which: &str, json: bool, out: &mut dyn Write) -> Result<Outcome> {
    let given = Path::new(which);
    let markdown = if which.ends_with(".md") && given.is_file() {
        given.to_path_buf()
    } else {
        let dir = folder(dir)?;
        let found = scan(&dir)?;
        let stem = which.strip_suffix(".md").unwrap_or(which);
        let hit = if which == "latest" {
            found.first()
        } else {
            found.iter().find(|h| h.name == stem)
        };
        match hit {
            Some(h) => h.markdown.clone(),
            None => {
                return Ok(Outcome::Nothing(format!(
                    "no handoff {which:?} in {} ({} there; see `relay handoffs list`)",
                    dir.display(),
                    found.len()
                )))
            }
        }
    };
    let text = fs::read_to_string(&markdown)
        .map_err(|e| fatal(format!("cannot read {}: {e}", markdown.display())))?;
    if json {
        let mut doc = fs::read_to_string(markdown.with_extension("json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        doc["path"] = markdown.display().to_string().into();
        doc["markdown"] = text.into();
        writeln!(out, "{doc}")?;
    } else {
        out.write_all(text.as_bytes())?;
    }
    Ok(Outcome::Done)
}
