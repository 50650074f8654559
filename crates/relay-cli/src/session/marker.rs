//! The relaunch marker: its path (`<marker dir>/<wrapper pid>-<nonce>.json`), the fresh nonce of
//! each launch, and the checks that make a marker valid for exactly the launch it was given to.
//!
//! **The pid part is the wrapper's own pid.** The wrapper names the marker before Pi starts, so
//! the only pid it can name is its own; Pi's extension checks that its parent process is that
//! pid (`process.ppid == PI_SESSION_WRAPPER_PID`, and the file name's pid part equal to both).
//! A process Pi starts inherits the environment, but its parent is Pi, not the wrapper, so it
//! cannot claim the marker. The nonce (128 random bits, new for every launch) keeps a marker
//! left over from an earlier launch, or from a dead wrapper whose pid was reused, from passing
//! for the current one.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Deserialize;

/// A marker larger than this is not one Relay wrote.
const MAX_MARKER_BYTES: u64 = 64 * 1024;

/// What Relay writes into the marker (every field required, no other field).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Marker {
    pub cwd: String,
    pub launch_prompt: Option<String>,
    pub handoff: String,
    pub session_file: Option<String>,
}

/// One launch's identity.
#[derive(Debug, Clone)]
pub struct Launch {
    pub nonce: String,
    pub path: PathBuf,
    pub started: SystemTime,
}

/// A fresh 128-bit nonce as 32 lowercase hex digits.
pub fn fresh_nonce() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| format!("no random source for the launch nonce: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The marker file name of a launch.
pub fn file_name(pid: u32, nonce: &str) -> String {
    format!("{pid}-{nonce}.json")
}

/// `(pid, nonce)` of a marker file name, when it has the marker's shape.
pub fn parse_name(name: &OsStr) -> Option<(u32, String)> {
    let name = name.to_str()?;
    let stem = name.strip_suffix(".json")?;
    let (pid, nonce) = stem.split_once('-')?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) || pid.starts_with('0') {
        return None;
    }
    if nonce.len() != 32
        || !nonce
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    Some((pid.parse().ok()?, nonce.to_string()))
}

/// A new launch of this wrapper: a nonce never used before (none of this invocation's, and no
/// file of that name in the marker directory).
pub fn new_launch(dir: &Path, pid: u32, used: &HashSet<String>) -> Result<Launch, String> {
    loop {
        let nonce = fresh_nonce()?;
        let path = dir.join(file_name(pid, &nonce));
        if used.contains(&nonce) || path.symlink_metadata().is_ok() {
            continue;
        }
        return Ok(Launch {
            nonce,
            path,
            started: SystemTime::now(),
        });
    }
}

/// Why there is no valid marker for this launch although something marker-like was left.
/// `None`: the launch left no marker at all (an ordinary exit).
pub fn explain_missing(
    dir: &Path,
    pid: u32,
    launch: &Launch,
    used: &HashSet<String>,
) -> Option<String> {
    let entries = fs::read_dir(dir).ok()?;
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((other_pid, nonce)) = parse_name(&name) else {
            continue;
        };
        // Only files written during this launch can be meant for it. File times come from a
        // coarser clock than `SystemTime::now()`, hence the second of slack.
        let since = launch
            .started
            .checked_sub(std::time::Duration::from_secs(1))
            .unwrap_or(launch.started);
        let fresh = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|m| m >= since);
        if !fresh {
            continue;
        }
        let path = entry.path();
        let why = if nonce == launch.nonce && other_pid != pid {
            format!(
                "{} names pid {other_pid}, not this wrapper's pid {pid} (stale pid)",
                path.display()
            )
        } else if other_pid == pid && used.contains(&nonce) {
            format!(
                "{} carries the nonce of an earlier launch (reused nonce)",
                path.display()
            )
        } else if other_pid == pid {
            format!(
                "{} carries a nonce this wrapper never issued (forged nonce)",
                path.display()
            )
        } else {
            continue;
        };
        found.push(why);
    }
    found.sort();
    if found.is_empty() {
        None
    } else {
        Some(format!(
            "no marker at {}, but {}",
            launch.path.display(),
            found.join("; ")
        ))
    }
}

/// Read and check the marker of this launch: a regular file (not a link), small, exactly the
/// four fields, written for this working directory, naming a handoff file that exists and, when
/// given, a launch prompt file that exists (both absolute).
pub fn read_valid(path: &Path, cwd: &Path) -> Result<Marker, String> {
    let meta = path
        .symlink_metadata()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.file_type().is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if meta.len() > MAX_MARKER_BYTES {
        return Err(format!(
            "{} is larger than {MAX_MARKER_BYTES} bytes",
            path.display()
        ));
    }
    let mut text = String::new();
    fs::File::open(path)
        .and_then(|f| f.take(MAX_MARKER_BYTES).read_to_string(&mut text))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let marker: Marker = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a relaunch marker: {e}", path.display()))?;
    if Path::new(&marker.cwd) != cwd {
        return Err(format!(
            "{}: cwd {} is not the wrapper's working directory {}",
            path.display(),
            marker.cwd,
            cwd.display()
        ));
    }
    check_file(path, "handoff", &marker.handoff)?;
    if let Some(lp) = &marker.launch_prompt {
        check_file(path, "launchPrompt", lp)?;
    }
    Ok(marker)
}

fn check_file(marker: &Path, key: &str, value: &str) -> Result<(), String> {
    let p = Path::new(value);
    if !p.is_absolute() {
        return Err(format!(
            "{}: {key} {value} is not an absolute path",
            marker.display()
        ));
    }
    if !p.is_file() {
        return Err(format!(
            "{}: {key} {value} is not an existing file",
            marker.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_odd_names_are_refused() {
        let n = fresh_nonce().unwrap();
        assert_eq!(n.len(), 32);
        assert_ne!(n, fresh_nonce().unwrap());
        assert_eq!(
            parse_name(OsStr::new(&file_name(42, &n))),
            Some((42, n.clone()))
        );
        for bad in [
            format!("042-{n}.json"),
            format!("x-{n}.json"),
            format!("42-{}.json", &n[..31]),
            format!("42-{}.json", n.to_uppercase()),
            format!("42-{n}.jsonl"),
            format!("-{n}.json"),
        ] {
            assert_eq!(parse_name(OsStr::new(&bad)), None, "{bad}");
        }
    }
}
