//! `relay notes FILE`: the notes as the session's current branch leaves them, replayed with
//! relay-core's notes projection (the `relay/note` entries of the branch, in order, through
//! [`Notes::apply`]; an invalid operation is reported and changes nothing, as in Pi).
//!
//! - no option: list them (path, lines, bytes, last change); exit 1 when there are none;
//! - `--path P`: print note P; exit 1 when the branch has no such note;
//! - `--export DIR`: write each note to `DIR/<note path>`. A note path must pass the note path
//!   rules (relative, no `.`/`..` segment, no backslash): one that does not is refused by name
//!   and nothing is written. Every file is checked to land inside DIR (folders that are symbolic
//!   links leading out are refused), and an existing file is never replaced without `--force`.
//!   Each file is written atomically (a temp file renamed into place), 0600, in 0700 folders it
//!   creates.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use relay_core::entry::EntryKind;
use relay_core::notes::{validate_path, NoteOp, Notes, NOTE_CUSTOM_TYPE};
use serde_json::{json, Value};

use super::history::load_session;
use super::{fatal, table, Outcome};

pub fn run(
    file: &Path,
    path: Option<&str>,
    export: Option<&Path>,
    force: bool,
    json: bool,
    out: &mut dyn Write,
) -> Result<Outcome> {
    let notes = replay(file)?;
    if let Some(p) = path {
        let Some(note) = notes.get(p) else {
            return Ok(Outcome::Nothing(format!(
                "no note {p:?} in {} ({} note(s) on its branch)",
                file.display(),
                notes.len()
            )));
        };
        if json {
            writeln!(out, "{}", note_json(note, true))?;
        } else {
            out.write_all(note.content.as_bytes())?;
        }
        return Ok(Outcome::Done);
    }
    if let Some(dir) = export {
        return export_all(&notes, dir, force, json, out);
    }
    if json {
        let docs: Vec<Value> = notes.iter().map(|n| note_json(n, false)).collect();
        writeln!(out, "{}", serde_json::to_string(&docs)?)?;
    } else if !notes.is_empty() {
        let rows: Vec<Vec<String>> = notes
            .iter()
            .map(|n| {
                vec![
                    n.path.clone(),
                    n.lines().to_string(),
                    n.bytes().to_string(),
                    iso(n.updated_ms),
                ]
            })
            .collect();
        out.write_all(table(&["PATH", "LINES", "BYTES", "UPDATED"], &rows).as_bytes())?;
    }
    if notes.is_empty() {
        return Ok(Outcome::Nothing(format!("no notes in {}", file.display())));
    }
    Ok(Outcome::Done)
}

/// The notes of `file`'s current branch.
pub fn replay(file: &Path) -> Result<Notes> {
    let loaded = load_session(file)?;
    let mut notes = Notes::new();
    for &i in &loaded.branch {
        let Some(entry) = loaded.parsed.entries.get(i) else {
            continue;
        };
        let EntryKind::Custom { custom_type, data } = &entry.kind else {
            continue;
        };
        if custom_type != NOTE_CUSTOM_TYPE {
            continue;
        }
        let applied = NoteOp::from_data(data).and_then(|op| notes.apply(&op));
        if let Err(e) = applied {
            eprintln!(
                "{}: warning: note entry {} skipped: {e}",
                file.display(),
                entry.id
            );
        }
    }
    Ok(notes)
}

fn note_json(n: &relay_core::notes::Note, content: bool) -> Value {
    let mut v = json!({
        "path": n.path,
        "lines": n.lines(),
        "bytes": n.bytes(),
        "updated_at": iso(n.updated_ms),
        "updated_ms": n.updated_ms,
    });
    if content {
        v["content"] = n.content.clone().into();
    }
    v
}

fn iso(ms: i64) -> String {
    relay_core::time::format_local_iso(ms, 0)
}

/// Writes every note under `dir`, after checking all of them (a refused path writes nothing).
fn export_all(
    notes: &Notes,
    dir: &Path,
    force: bool,
    json: bool,
    out: &mut dyn Write,
) -> Result<Outcome> {
    if notes.is_empty() {
        return Ok(Outcome::Nothing("no notes to export".into()));
    }
    // Check every path before writing anything.
    let mut targets: Vec<(PathBuf, &relay_core::notes::Note)> = Vec::new();
    for note in notes.iter() {
        check_note_path(&note.path)?;
        let target = dir.join(&note.path);
        if !force && fs::symlink_metadata(&target).is_ok() {
            bail!(fatal(format!(
                "{} already exists (note {:?}); pass --force to replace it",
                target.display(),
                note.path
            )));
        }
        targets.push((target, note));
    }
    relay_io::fsx::create_private_dir(dir)
        .map_err(|e| fatal(format!("cannot create {}: {e}", dir.display())))?;
    let root =
        fs::canonicalize(dir).map_err(|e| fatal(format!("cannot read {}: {e}", dir.display())))?;
    let mut written = Vec::new();
    for (target, note) in targets {
        let parent = target.parent().unwrap_or(dir);
        relay_io::fsx::create_private_dir(parent)
            .map_err(|e| fatal(format!("cannot create {}: {e}", parent.display())))?;
        let real_parent = fs::canonicalize(parent)
            .map_err(|e| fatal(format!("cannot read {}: {e}", parent.display())))?;
        if !real_parent.starts_with(&root) {
            bail!(fatal(format!(
                "note {:?} would be written outside {} (through {}): refused",
                note.path,
                dir.display(),
                real_parent.display()
            )));
        }
        if fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_symlink()) {
            bail!(fatal(format!(
                "{} is a symbolic link (note {:?}): refused",
                target.display(),
                note.path
            )));
        }
        // Atomic and private (0600): a crash leaves the old file whole; a link planted meanwhile
        // is replaced (with --force) or refused, never followed.
        let write = if force {
            relay_io::fsx::write_atomic
        } else {
            relay_io::fsx::write_atomic_new
        };
        write(&target, note.content.as_bytes(), 0o600)
            .map_err(|e| fatal(format!("cannot write {}: {e}", target.display())))?;
        written.push(target);
    }
    if json {
        let files: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        writeln!(
            out,
            "{}",
            json!({ "dir": dir.display().to_string(), "written": files })
        )?;
    } else {
        for p in &written {
            writeln!(out, "{}", p.display())?;
        }
    }
    Ok(Outcome::Done)
}

/// A note path as an export target: the note path rules, said in terms of the export.
fn check_note_path(path: &str) -> Result<()> {
    if Path::new(path).is_absolute() || path.starts_with('/') {
        bail!(fatal(format!(
            "note path {path:?} is absolute: refused (an export writes only inside its folder)"
        )));
    }
    if path.split(['/', '\\']).any(|s| s == "..") {
        bail!(fatal(format!(
            "note path {path:?} contains `..`: refused (an export writes only inside its folder)"
        )));
    }
    validate_path(path).map_err(|e| fatal(format!("{e}: refused")))
}
