//! Telemetry files under the state folder (`PI_CONTEXT_BUDGET_STATE_DIR` or
//! `<agentDir>/context-budget`, resolved by the caller): `status/<sessionId>.json` replaced
//! atomically and the append-only `events.jsonl`. Private (0600/0700). Errors are returned, never
//! panics; callers must not let a telemetry failure stop a handoff commit.

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::fsx;

/// Path of a session's status file.
pub fn status_path(state_dir: &Path, session_id: &str) -> PathBuf {
    state_dir.join("status").join(format!("{session_id}.json"))
}

/// Path of the event log.
pub fn events_path(state_dir: &Path) -> PathBuf {
    state_dir.join("events.jsonl")
}

/// Replace `status/<sessionId>.json` atomically with `status` (pretty JSON; the engine's
/// `relay_core::engine::files::StatusFile`).
pub fn write_status<T: Serialize + ?Sized>(
    state_dir: &Path,
    session_id: &str,
    status: &T,
) -> io::Result<PathBuf> {
    if session_id.is_empty()
        || session_id.contains(['/', '\\', '\0'])
        || session_id.starts_with('.')
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("session id {session_id:?} cannot be used in a file name"),
        ));
    }
    let path = status_path(state_dir, session_id);
    let mut text = serde_json::to_string_pretty(status).map_err(io::Error::other)?;
    text.push('\n');
    fsx::write_atomic(&path, text.as_bytes(), 0o600)?;
    Ok(path)
}

/// Append `event` as one compact JSON line to `events.jsonl` (the engine's
/// `relay_core::engine::files::TelemetryLine`).
pub fn append_event<T: Serialize + ?Sized>(state_dir: &Path, event: &T) -> io::Result<()> {
    let line = serde_json::to_string(event).map_err(io::Error::other)?;
    fsx::append_line(&events_path(state_dir), &line)
}

/// The events of `events.jsonl`, oldest first, and a warning for each line that is not a JSON
/// object (a line torn by a crash, or garbage), which is skipped. A missing log has no events.
pub fn read_events(state_dir: &Path) -> io::Result<(Vec<Value>, Vec<String>)> {
    fsx::read_lines(&events_path(state_dir), |line| {
        serde_json::from_str::<Value>(line)
            .ok()
            .filter(Value::is_object)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::test_support::{mode, TempDir};
    use serde_json::json;

    #[test]
    fn status_is_replaced_and_events_append_as_parseable_lines() {
        let t = TempDir::new("telemetry");
        let dir = t.0.join("context-budget");
        let p = write_status(&dir, "s1", &json!({"phase": "idle"})).unwrap();
        write_status(
            &dir,
            "s1",
            &json!({"phase": "handoff-required", "tokens": 5}),
        )
        .unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(v, json!({"phase": "handoff-required", "tokens": 5}));
        assert_eq!(mode(&p), 0o600);
        append_event(
            &dir,
            &json!({"name": "tool_blocked", "text": "multi\nline"}),
        )
        .unwrap();
        append_event(&dir, &json!({"name": "would_block"})).unwrap();
        let log = std::fs::read_to_string(events_path(&dir)).unwrap();
        let names: Vec<String> = log
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["name"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(names, ["tool_blocked", "would_block"]);
    }

    #[test]
    fn failures_are_errors() {
        let t = TempDir::new("telemetry-err");
        let file = t.0.join("not-a-dir");
        std::fs::write(&file, "x").unwrap();
        assert!(write_status(&file, "s1", &json!({})).is_err());
        assert!(append_event(&file, &json!({})).is_err());
        assert!(write_status(&t.0, "../escape", &json!({})).is_err());
    }
}
