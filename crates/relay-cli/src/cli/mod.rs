//! The commands of `relay`, one module each, and what they share: the exit outcome, the error
//! type for bad input, where Pi keeps its files, colour, and a parallel map over files.

pub mod config;
pub mod handoffs;
pub mod history;
pub mod notes;
pub mod search;
pub mod sessions;
pub mod stats;
pub mod status;
pub mod timeline;

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::anyhow;

use crate::ColorChoice;

/// How a command that did not fail ended: exit status 0, or 1 with a message on stderr (a
/// well-formed request that found nothing).
#[derive(Debug)]
pub enum Outcome {
    Done,
    Nothing(String),
}

/// An error that ends the program with exit status 2 and a `relay: ...` message.
#[derive(Debug)]
pub struct Fatal(pub String);

impl std::fmt::Display for Fatal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Fatal {}

pub fn fatal(msg: impl Into<String>) -> anyhow::Error {
    anyhow!(Fatal(msg.into()))
}

/// Pi's agent folder, as Pi's `getAgentDir()` resolves it: `$PI_CODING_AGENT_DIR` when set and
/// not empty (`~` and `~/…` expanded to the home folder), else `~/.pi/agent`.
pub fn agent_dir() -> anyhow::Result<PathBuf> {
    let home = || {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| fatal("HOME is not set: cannot find Pi's agent folder"))
    };
    match std::env::var("PI_CODING_AGENT_DIR") {
        Ok(dir) if !dir.is_empty() => {
            if dir == "~" {
                home()
            } else if let Some(rest) = dir.strip_prefix("~/") {
                Ok(home()?.join(rest))
            } else {
                Ok(PathBuf::from(dir))
            }
        }
        _ => Ok(home()?.join(".pi").join("agent")),
    }
}

/// Pi's sessions folder: `<agent dir>/sessions`.
pub fn sessions_dir() -> anyhow::Result<PathBuf> {
    Ok(agent_dir()?.join("sessions"))
}

/// Whether to colour stdout.
pub fn color_enabled(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    }
}

/// `f` over `items` on up to `available_parallelism` threads; the results keep the input order.
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(items.len())
        .max(1);
    if threads == 1 {
        return items.iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                let f = &f;
                scope.spawn(move || part.iter().map(f).collect::<Vec<R>>())
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(v) => v,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// A byte count as people read it: 812 B, 14.2 KiB, 3.1 MiB.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = UNITS[0];
    for u in &UNITS[1..] {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}

/// Text cut to `max` characters on one line, with `…` when anything was left out.
pub fn cut(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut s: String = flat.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// A table: columns padded to their widest cell, the last column unpadded, lines trimmed.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let mut text = String::new();
    for row in std::iter::once(&head).chain(rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < row.len() {
                let w = widths.get(i).copied().unwrap_or(0);
                line.push_str(&" ".repeat(w.saturating_sub(cell.chars().count()) + 2));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}
