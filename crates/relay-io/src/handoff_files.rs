//! Handoff files: `<root>/.ai-work/handoffs/<sessionId>-<n>.md` plus its JSON sidecar `.json`,
//! written atomically, private (files 0600, folders 0700).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::fsx;

/// The handoff folder under a repository root or cwd.
pub fn handoff_dir(root: &Path) -> PathBuf {
    root.join(".ai-work").join("handoffs")
}

/// Markdown path of handoff `n`.
pub fn handoff_path(root: &Path, session_id: &str, n: u32) -> PathBuf {
    handoff_dir(root).join(format!("{session_id}-{n}.md"))
}

fn check_session_id(session_id: &str) -> io::Result<()> {
    if session_id.is_empty()
        || session_id.contains(['/', '\\', '\0'])
        || session_id == "."
        || session_id == ".."
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("session id {session_id:?} cannot be used in a file name"),
        ));
    }
    Ok(())
}

/// The smallest free sequence number for `session_id`: one more than the largest `n` of an
/// existing `<sessionId>-<n>.md` or `.json` (1 when there is none or the folder is missing).
pub fn next_sequence(root: &Path, session_id: &str) -> io::Result<u32> {
    let dir = handoff_dir(root);
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(1),
        Err(e) => return Err(e),
    };
    let prefix = format!("{session_id}-");
    let mut max = 0u32;
    for entry in entries {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let num = rest
            .strip_suffix(".md")
            .or_else(|| rest.strip_suffix(".json"));
        if let Some(n) = num.and_then(|n| n.parse::<u32>().ok()) {
            max = max.max(n);
        }
    }
    Ok(max.saturating_add(1))
}

/// Write handoff `n`: the markdown first (never replacing an existing handoff: an existing
/// `<sessionId>-<n>.md` fails with `AlreadyExists`, and the caller re-renders with
/// [`next_sequence`]), then the sidecar. Returns the markdown path. The sidecar is the engine's
/// `relay_core::engine::files::HandoffSidecar`.
pub fn write_handoff(
    root: &Path,
    session_id: &str,
    n: u32,
    markdown: &str,
    sidecar: &(impl Serialize + ?Sized),
) -> io::Result<PathBuf> {
    check_session_id(session_id)?;
    let md = handoff_path(root, session_id, n);
    let json = md.with_extension("json");
    fsx::write_atomic_new(&md, markdown.as_bytes(), 0o600)?;
    let mut text = serde_json::to_string_pretty(sidecar).map_err(io::Error::other)?;
    text.push('\n');
    if let Err(e) = fsx::write_atomic(&json, text.as_bytes(), 0o600) {
        // Do not leave a markdown without its sidecar.
        let _ = fs::remove_file(&md);
        return Err(e);
    }
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::test_support::{mode, TempDir};
    use serde_json::json;

    #[test]
    fn writes_markdown_and_sidecar_privately_with_increasing_sequence() {
        let t = TempDir::new("handoff");
        assert_eq!(next_sequence(&t.0, "s1").unwrap(), 1);
        let n = next_sequence(&t.0, "s1").unwrap();
        let p = write_handoff(&t.0, "s1", n, "# Handoff s1-1\n", &json!({"a": 1})).unwrap();
        assert_eq!(p, t.0.join(".ai-work/handoffs/s1-1.md"));
        assert_eq!(fs::read_to_string(&p).unwrap(), "# Handoff s1-1\n");
        let side: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(p.with_extension("json")).unwrap()).unwrap();
        assert_eq!(side, json!({"a": 1}));
        assert_eq!(mode(&p), 0o600);
        assert_eq!(mode(&p.with_extension("json")), 0o600);
        assert_eq!(mode(&t.0.join(".ai-work")), 0o700);
        assert_eq!(mode(&t.0.join(".ai-work/handoffs")), 0o700);
        assert_eq!(next_sequence(&t.0, "s1").unwrap(), 2);
        // Other sessions and unrelated names do not interfere.
        assert_eq!(next_sequence(&t.0, "s").unwrap(), 1);
        fs::write(t.0.join(".ai-work/handoffs/s1-9.json"), "{}").unwrap();
        fs::write(t.0.join(".ai-work/handoffs/s1-x.md"), "").unwrap();
        assert_eq!(next_sequence(&t.0, "s1").unwrap(), 10);
    }

    #[test]
    fn an_existing_handoff_is_never_replaced() {
        let t = TempDir::new("handoff-exists");
        write_handoff(&t.0, "s", 1, "first", &json!({})).unwrap();
        let err = write_handoff(&t.0, "s", 1, "second", &json!({})).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(
            fs::read_to_string(handoff_path(&t.0, "s", 1)).unwrap(),
            "first"
        );
    }

    #[test]
    fn unsafe_session_ids_are_rejected() {
        let t = TempDir::new("handoff-id");
        for id in ["", "../x", "a/b", ".."] {
            assert!(write_handoff(&t.0, id, 1, "x", &json!({})).is_err(), "{id}");
        }
    }
}
