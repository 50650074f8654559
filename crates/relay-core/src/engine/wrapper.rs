//! Whether this runtime owns the pi-session wrapper, decided from the facts the extension
//! collects ([`WrapperFacts`]: the wrapper's variables as Pi started with them, the relaunch key
//! read from `PI_RELAUNCH_KEY_FILE`, `process.pid`, `process.ppid`) and the hosting rule
//! (`Moment::subagent`).
//!
//! **Owned only when all hold:**
//! 1. `PI_RELAUNCH_MARKER` is an absolute path whose file name is exactly
//!    `<pid>-<32 lowercase hex digits>.json`;
//! 2. its pid part equals `PI_SESSION_WRAPPER_PID`, and that pid is this process's parent
//!    (`process.ppid`): Pi is the wrapper's own child (a Pi started by a command Pi runs would
//!    not be, and inherits none of the variables anyway: the extension removes them from
//!    `process.env` when it loads);
//! 3. its nonce equals `PI_SESSION_LAUNCH_ID` (the wrapper gives both for one launch);
//! 4. the launch's relaunch key was read from `PI_RELAUNCH_KEY_FILE` (64 hex digits): the
//!    wrapper relaunches only for a marker signed with it, so without it no marker could count;
//! 5. this runtime is the primary one: an SDK child session (a subagent bound while the primary
//!    runtime is alive in the same process) never owns it, never writes the marker and never
//!    shuts Pi down.
//!
//! Otherwise the reason says which check failed, and the fallback stays in-process.

use serde::Serialize;

use super::wire::{RelaunchKey, WrapperFacts};

/// The answer, as the status file shows it (`wrapper: {owned, reason}`; never the key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    pub owned: bool,
    pub reason: String,
    /// The marker path to write, when owned.
    pub marker: Option<String>,
    /// The key that signs the marker, when owned.
    pub key: Option<RelaunchKey>,
}

impl Ownership {
    fn not(reason: impl Into<String>) -> Self {
        Ownership {
            owned: false,
            reason: reason.into(),
            marker: None,
            key: None,
        }
    }

    /// What the status file shows of it (never the marker or the key).
    #[cfg(test)]
    pub(crate) fn status(&self) -> OwnershipStatus<'_> {
        OwnershipStatus {
            owned: self.owned,
            reason: &self.reason,
        }
    }
}

/// The status file's `wrapper`: whether this runtime owns the wrapper, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OwnershipStatus<'a> {
    pub owned: bool,
    pub reason: &'a str,
}

/// `(pid, nonce)` of a marker file name `<pid>-<32 hex>.json` (the pi-session wrapper reads its
/// markers' names with it too).
pub fn parse_marker_name(name: &str) -> Option<(u32, &str)> {
    let stem = name.strip_suffix(".json")?;
    let (pid, nonce) = stem.split_once('-')?;
    if pid.is_empty() || pid.starts_with('0') || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if nonce.len() != 32
        || !nonce
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    Some((pid.parse().ok()?, nonce))
}

/// Decide ownership. `subagent`: the hosting rule's answer for this runtime.
pub fn ownership(facts: Option<&WrapperFacts>, subagent: bool) -> Ownership {
    let Some(f) = facts else {
        return Ownership::not("no wrapper facts were collected");
    };
    let Some(marker) = f.relaunch_marker.as_deref().filter(|m| !m.is_empty()) else {
        return Ownership::not("not started by pi-session (PI_RELAUNCH_MARKER is unset)");
    };
    if subagent {
        return Ownership::not("an SDK child session (subagent) never owns the parent's wrapper");
    }
    if !marker.starts_with('/') {
        return Ownership::not(format!(
            "PI_RELAUNCH_MARKER {marker} is not an absolute path"
        ));
    }
    let name = marker.rsplit('/').next().unwrap_or_default();
    let Some((pid, nonce)) = parse_marker_name(name) else {
        return Ownership::not(format!(
            "PI_RELAUNCH_MARKER's file name {name} is not <pid>-<nonce>.json"
        ));
    };
    let wrapper_pid = f
        .wrapper_pid
        .as_deref()
        .and_then(|p| p.trim().parse::<u32>().ok());
    if wrapper_pid != Some(pid) {
        return Ownership::not(format!(
            "the marker's pid {pid} is not PI_SESSION_WRAPPER_PID ({})",
            f.wrapper_pid.as_deref().unwrap_or("unset")
        ));
    }
    if f.ppid != pid {
        return Ownership::not(format!(
            "this process (pid {}) is not the wrapper's child: its parent is {}, the wrapper is {pid}",
            f.pid, f.ppid
        ));
    }
    if f.launch_id.as_deref() != Some(nonce) {
        return Ownership::not("the marker's nonce is not PI_SESSION_LAUNCH_ID");
    }
    let Some(key_file) = f.relaunch_key_file.as_deref().filter(|k| !k.is_empty()) else {
        return Ownership::not(
            "PI_RELAUNCH_KEY_FILE is unset: without the launch's key no marker would be accepted",
        );
    };
    if let Some(error) = &f.relaunch_key_error {
        return Ownership::not(format!(
            "the relaunch key file {key_file} could not be read: {error}"
        ));
    }
    let Some(key) = f.relaunch_key.as_ref().filter(|k| k.is_well_formed()) else {
        return Ownership::not(format!(
            "the relaunch key file {key_file} did not hold a key (64 hex digits)"
        ));
    };
    Ownership {
        owned: true,
        reason: format!("started by pi-session (pid {pid})"),
        marker: Some(marker.to_string()),
        key: Some(key.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NONCE: &str = "0123456789abcdef0123456789abcdef";

    fn facts() -> WrapperFacts {
        WrapperFacts {
            relaunch_marker: Some(format!("/m/relaunch/700-{NONCE}.json")),
            wrapper: Some("pi-session 0.1.0".into()),
            wrapper_pid: Some("700".into()),
            launch_id: Some(NONCE.into()),
            pid: 701,
            ppid: 700,
            session_file: None,
            relaunch_key_file: Some(format!("/m/relaunch/700-{NONCE}.key")),
            relaunch_key: Some(RelaunchKey::new("ab".repeat(32))),
            relaunch_key_error: None,
        }
    }

    #[test]
    fn ownership_table() {
        let owned = ownership(Some(&facts()), false);
        assert!(owned.owned, "{owned:?}");
        assert_eq!(
            owned.marker.as_deref(),
            Some("/m/relaunch/700-0123456789abcdef0123456789abcdef.json")
        );
        assert_eq!(owned.key, Some(RelaunchKey::new("ab".repeat(32))));
        // The key is never shown, not even by Debug.
        assert!(!format!("{owned:?}").contains(&"ab".repeat(32)));
        assert_eq!(
            json!(owned.status()),
            json!({"owned": true, "reason": "started by pi-session (pid 700)"})
        );
        let cases: Vec<(&str, WrapperFacts, bool, &str)> = vec![
            (
                "subagent",
                facts(),
                true,
                "an SDK child session (subagent) never owns",
            ),
            (
                "no marker",
                WrapperFacts {
                    relaunch_marker: None,
                    ..facts()
                },
                false,
                "PI_RELAUNCH_MARKER is unset",
            ),
            (
                "descendant",
                WrapperFacts {
                    pid: 900,
                    ppid: 701,
                    ..facts()
                },
                false,
                "its parent is 701, the wrapper is 700",
            ),
            (
                "pid var differs",
                WrapperFacts {
                    wrapper_pid: Some("701".into()),
                    ..facts()
                },
                false,
                "is not PI_SESSION_WRAPPER_PID (701)",
            ),
            (
                "pid var unset",
                WrapperFacts {
                    wrapper_pid: None,
                    ..facts()
                },
                false,
                "(unset)",
            ),
            (
                "nonce differs",
                WrapperFacts {
                    launch_id: Some("f".repeat(32)),
                    ..facts()
                },
                false,
                "nonce is not PI_SESSION_LAUNCH_ID",
            ),
            (
                "short nonce",
                WrapperFacts {
                    relaunch_marker: Some("/m/700-abc.json".into()),
                    ..facts()
                },
                false,
                "is not <pid>-<nonce>.json",
            ),
            (
                "relative",
                WrapperFacts {
                    relaunch_marker: Some(format!("700-{NONCE}.json")),
                    ..facts()
                },
                false,
                "not an absolute path",
            ),
            (
                "no key file",
                WrapperFacts {
                    relaunch_key_file: None,
                    relaunch_key: None,
                    ..facts()
                },
                false,
                "PI_RELAUNCH_KEY_FILE is unset: without the launch's key no marker would be accepted",
            ),
            (
                "key file unreadable",
                WrapperFacts {
                    relaunch_key: None,
                    relaunch_key_error: Some("ENOENT: no such file or directory".into()),
                    ..facts()
                },
                false,
                "the relaunch key file /m/relaunch/700-0123456789abcdef0123456789abcdef.key could not be read: ENOENT: no such file or directory",
            ),
            (
                "no key in it",
                WrapperFacts {
                    relaunch_key: Some(RelaunchKey::new("AB".repeat(32))),
                    ..facts()
                },
                false,
                "the relaunch key file /m/relaunch/700-0123456789abcdef0123456789abcdef.key did not hold a key (64 hex digits)",
            ),
        ];
        for (name, f, subagent, why) in cases {
            let o = ownership(Some(&f), subagent);
            assert!(!o.owned, "{name}");
            assert!(o.reason.contains(why), "{name}: {}", o.reason);
            assert_eq!(o.marker, None, "{name}");
            assert_eq!(o.key, None, "{name}");
        }
        assert!(!ownership(None, false).owned);
    }
}
