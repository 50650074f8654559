//! The relaunch marker: its path (`<marker dir>/<wrapper pid>-<nonce>.json`), the fresh nonce and
//! key of each launch, and the checks that make a marker valid for exactly the launch it was
//! given to.
//!
//! **Only Relay inside this Pi can write a valid marker.** Every launch gets a fresh 32-byte key,
//! written to `<wrapper pid>-<nonce>.key` (mode 0600, in the 0700 marker directory); Pi gets only
//! that file's path (`PI_RELAUNCH_KEY_FILE`). When Relay loads, before any tool can run, its
//! extension removes the wrapper's variables from Pi's environment and its core reads the key
//! and removes the file ([`relay_io::relaunch::take_key`]), and signs the marker it writes (HMAC-SHA256, [`relay_io::relaunch`]). A command
//! the model runs inherits none of the variables and finds no key file, so whatever it writes at
//! the marker path is refused. The wrapper removes the key file itself once Pi has exited.
//!
//! The pid part is the wrapper's own pid (the wrapper names the marker before Pi starts); the
//! nonce (128 random bits, new for every launch) keeps a marker left over from an earlier launch,
//! or from a dead wrapper whose pid was reused, from passing for the current one.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use relay_io::relaunch::{Key, MAX_MARKER_BYTES};

pub use relay_io::relaunch::RelaunchMarker;

/// One launch's identity.
#[derive(Debug, Clone)]
pub struct Launch {
    pub nonce: String,
    pub path: PathBuf,
    pub started: SystemTime,
    /// The launch's relaunch key, and the file Pi is told to take it from.
    pub key: Key,
    pub key_path: PathBuf,
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
    let (pid, nonce) = relay_core::engine::wrapper::parse_marker_name(name.to_str()?)?;
    Some((pid, nonce.to_string()))
}

/// The key file name of a launch.
pub fn key_file_name(pid: u32, nonce: &str) -> String {
    format!("{pid}-{nonce}.key")
}

/// A new launch of this wrapper: a nonce never used before (none of this invocation's, and no
/// marker or key file of that name in the marker directory), and a fresh key written to its key
/// file.
pub fn new_launch(dir: &Path, pid: u32, used: &HashSet<String>) -> Result<Launch, String> {
    loop {
        let nonce = fresh_nonce()?;
        let path = dir.join(file_name(pid, &nonce));
        let key_path = dir.join(key_file_name(pid, &nonce));
        if used.contains(&nonce)
            || path.symlink_metadata().is_ok()
            || key_path.symlink_metadata().is_ok()
        {
            continue;
        }
        let key = Key::fresh()?;
        relay_io::relaunch::write_key_file(&key_path, &key).map_err(|e| {
            format!(
                "cannot write the relaunch key file {}: {e}",
                key_path.display()
            )
        })?;
        return Ok(Launch {
            nonce,
            path,
            started: SystemTime::now(),
            key,
            key_path,
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

/// Read and check the marker of this launch: a regular file (not a link), small, signed with this
/// launch's key, exactly the four fields, written for this working directory, naming a handoff
/// file that exists and, when given, a launch prompt file that exists (both absolute).
///
/// The marker is opened once, without blocking and without following a link, and judged by the
/// opened file itself (`relay_io::fsx::read_small_file`): a FIFO or a device put at the path at
/// any moment, even right after a look at it, is refused at once instead of blocking the wrapper.
pub fn read_valid(path: &Path, cwd: &Path, key: &Key) -> Result<RelaunchMarker, String> {
    use relay_io::fsx::SmallFileError;
    let bytes = match relay_io::fsx::read_small_file(path, MAX_MARKER_BYTES, false) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(format!("cannot read {}: no such file", path.display())),
        Err(SmallFileError::NotRegular { .. } | SmallFileError::Link) => {
            return Err(format!("{} is not a regular file", path.display()))
        }
        Err(SmallFileError::TooLarge { .. }) => {
            return Err(format!(
                "{} is larger than {MAX_MARKER_BYTES} bytes",
                path.display()
            ))
        }
        Err(SmallFileError::Io(e)) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let marker = relay_io::relaunch::open(key, &bytes)
        .map_err(|why| format!("{}: {why}", path.display()))?;
    if Path::new(&marker.cwd) != cwd {
        return Err(format!(
            "{}: cwd {} is not the wrapper's working directory {}",
            path.display(),
            marker.cwd,
            cwd.display()
        ));
    }
    relay_io::relaunch::check_files(&marker)
        .map_err(|problem| format!("{}: {problem}", path.display()))?;
    Ok(marker)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 34: the marker was looked at, then opened again blocking; a FIFO put in its place
    /// between the two blocked the wrapper (which ignores SIGINT) for good. Here a FIFO and a
    /// regular file take turns at the marker path while the wrapper reads it many times: no
    /// read may block.
    #[test]
    fn a_fifo_swapped_in_for_the_marker_never_blocks_the_read() {
        use std::os::unix::fs::OpenOptionsExt;
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{mpsc, Arc};
        let dir = std::env::temp_dir().join(format!("relay-marker-swap-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("marker.json");
        let regular = dir.join("regular");
        fs::write(&regular, b"{}").unwrap();
        let fifo = dir.join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, dir, path, regular, fifo) = (
                stop.clone(),
                dir.clone(),
                path.clone(),
                regular.clone(),
                fifo.clone(),
            );
            std::thread::spawn(move || {
                let tmp = dir.join("next");
                while !stop.load(Ordering::Relaxed) {
                    for source in [&regular, &fifo] {
                        let _ = fs::remove_file(&tmp);
                        fs::hard_link(source, &tmp).unwrap();
                        fs::rename(&tmp, &path).unwrap();
                    }
                }
            })
        };
        let (tx, rx) = mpsc::channel();
        {
            let (path, dir) = (path.clone(), dir.clone());
            std::thread::spawn(move || {
                let key = Key::fresh().unwrap();
                for _ in 0..20_000 {
                    let _ = read_valid(&path, &dir, &key);
                }
                tx.send(()).unwrap();
            });
        }
        let done = rx.recv_timeout(std::time::Duration::from_secs(10));
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        if done.is_err() {
            // A read is blocked in the FIFO: a writer that comes and goes lets it return, so
            // that the test fails instead of hanging.
            let _ = fs::OpenOptions::new()
                .write(true)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                .open(&fifo);
            let _ = rx.recv_timeout(std::time::Duration::from_secs(5));
        }
        let _ = fs::remove_dir_all(&dir);
        assert!(
            done.is_ok(),
            "reading the marker blocked on a FIFO swapped in at its path"
        );
    }

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
