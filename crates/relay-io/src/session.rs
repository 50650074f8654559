//! Reading Pi session files from disk.

use std::fs;
use std::path::{Path, PathBuf};

use relay_core::entry::{parse_session, stream_branch, BranchSink, ParsedSession};

/// A session file or folder that could not be read: the path and the operating system's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct SessionReadError {
    pub path: PathBuf,
    pub message: String,
}

impl SessionReadError {
    fn new(path: &Path, err: impl std::fmt::Display) -> Self {
        SessionReadError {
            path: path.to_path_buf(),
            message: err.to_string(),
        }
    }
}

/// Reads and parses a whole session file. Malformed lines are listed in `errors` and skipped.
/// Bytes that are not valid UTF-8 are replaced (U+FFFD) rather than failing the whole file.
pub fn read_session(path: &Path) -> Result<ParsedSession, SessionReadError> {
    let bytes = fs::read(path).map_err(|e| SessionReadError::new(path, e))?;
    let parsed = match std::str::from_utf8(&bytes) {
        Ok(text) => parse_session(text),
        Err(_) => parse_session(&String::from_utf8_lossy(&bytes)),
    };
    Ok(parsed)
}

/// Reads a session file as text, in one read. Bytes that are not valid UTF-8 are replaced
/// (U+FFFD), as [`read_session`] does.
pub fn read_session_text(path: &Path) -> Result<String, SessionReadError> {
    let bytes = fs::read(path).map_err(|e| SessionReadError::new(path, e))?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// Reads a session file and feeds the branch that ends at the entry `leaf_id` to `sink`, root
/// first, one entry at a time (see [`stream_branch`]). `Ok(false)`, with the sink untouched,
/// when the file has no entry `leaf_id`.
pub fn stream_session_branch(
    path: &Path,
    leaf_id: &str,
    sink: &mut impl BranchSink,
) -> Result<bool, SessionReadError> {
    let text = read_session_text(path)?;
    Ok(stream_branch(&text, leaf_id, sink))
}

/// The session files at `path`: a file is returned as is; a directory yields every `*.jsonl`
/// file below it (recursively, symbolic links to directories not followed), sorted by path.
pub fn find_sessions(path: &Path) -> Result<Vec<PathBuf>, SessionReadError> {
    let meta = fs::metadata(path).map_err(|e| SessionReadError::new(path, e))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut found = Vec::new();
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| SessionReadError::new(&dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| SessionReadError::new(&dir, e))?;
            let p = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| SessionReadError::new(&p, e))?;
            if kind.is_dir() {
                pending.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") && (kind.is_file() || p.is_file())
            {
                found.push(p);
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_core::entry::Entry;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "relay-io-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn reads_and_reports_malformed_lines() {
        let dir = temp_dir("read");
        let file = dir.join("s.jsonl");
        fs::write(
            &file,
            "{\"type\":\"session\",\"id\":\"S\"}\n{broken\n{\"type\":\"custom\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"T\",\"customType\":\"k\"}\n",
        )
        .unwrap();
        let parsed = read_session(&file).unwrap();
        assert_eq!(parsed.header.unwrap().id, "S");
        assert_eq!(parsed.entries.len(), 1);
        assert_eq!(parsed.errors[0].line, 2);
        let missing = read_session(&dir.join("nope.jsonl")).unwrap_err();
        assert!(missing.to_string().contains("nope.jsonl"), "{missing}");
        fs::remove_dir_all(dir).unwrap();
    }

    /// Replays a streamed branch into an engine, as the addon does.
    struct Replay<'a>(&'a mut relay_core::engine::Engine, bool);

    impl BranchSink for Replay<'_> {
        fn begin(&mut self) {
            self.0.begin_resync("S");
            self.1 = true;
        }
        fn entry(&mut self, entry: Entry) {
            self.0.push_replayed(&entry);
        }
    }

    fn history_view(engine: &relay_core::engine::Engine) -> Vec<String> {
        use serde_json::json;
        let h = engine.history();
        let mut out = vec![
            format!("{:?} {} {}", h.tip(), h.entry_count(), h.item_count()),
            h.list_windows(&json!({})).text,
        ];
        for w in h.window_ids() {
            out.push(h.list_items(&json!({"window_id": w, "limit": 1000})).text);
        }
        for q in ["body", "7", "summary"] {
            out.push(h.search_contents(&json!({"query": q, "limit": 100})).text);
        }
        out
    }

    #[test]
    fn streamed_load_equals_resync() {
        let dir = temp_dir("stream");
        let msg = |id: &str, parent: &str, role: &str, text: &str| {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"T","message":{{"role":"{role}","content":[{{"type":"text","text":"{text}"}}]}}}}"#
            )
        };
        let mut linear = vec![
            r#"{"type":"session","version":3,"id":"S","timestamp":"T","cwd":"/w"}"#.to_string(),
        ];
        let mut prev = "null".to_string();
        for i in 0..40 {
            let id = format!("m{i}");
            if i % 15 == 14 {
                linear.push(format!(
                    r#"{{"type":"compaction","id":"{id}","parentId":{prev},"timestamp":"T","summary":"summary {i}","firstKeptEntryId":null,"tokensBefore":10}}"#
                ));
            } else {
                let role = ["user", "assistant", "toolResult"][i % 3];
                linear.push(msg(&id, &prev, role, &format!("body {i} line\\nnext")));
            }
            prev = format!("\"{id}\"");
        }
        // A second branch off m20, written after the first one.
        let mut branched = linear.clone();
        branched.push(msg("x1", "\"m20\"", "user", "body x1"));
        branched.push(msg("x2", "\"x1\"", "assistant", "body x2"));
        for (name, lines, leaves) in [
            ("linear", &linear, vec!["m39", "m30"]),
            ("branched", &branched, vec!["x2", "m39", "x1", "m5"]),
        ] {
            let file = dir.join(format!("{name}.jsonl"));
            fs::write(&file, lines.join("\n") + "\n").unwrap();
            for leaf in leaves {
                let parsed = read_session(&file).unwrap();
                let branch: Vec<Entry> =
                    relay_core::entry::branch_indices(&parsed.entries, Some(leaf))
                        .into_iter()
                        .map(|i| parsed.entries[i].clone())
                        .collect();
                let mut expected = relay_core::engine::Engine::new();
                expected.resync("S", &branch);
                let mut got = relay_core::engine::Engine::new();
                let mut replay = Replay(&mut got, false);
                let found = stream_session_branch(&file, leaf, &mut replay).unwrap();
                assert!(found && replay.1, "{name} {leaf}");
                got.end_resync();
                assert_eq!(got.tip(), Some(leaf));
                assert_eq!(history_view(&got), history_view(&expected), "{name} {leaf}");
            }
            let mut untouched = relay_core::engine::Engine::new();
            let mut replay = Replay(&mut untouched, false);
            assert!(!stream_session_branch(&file, "nope", &mut replay).unwrap());
            assert!(!replay.1, "no replay starts for a missing leaf");
        }
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn finds_jsonl_files_recursively() {
        let dir = temp_dir("find");
        fs::create_dir_all(dir.join("b/c")).unwrap();
        for f in ["b/c/2.jsonl", "a.jsonl", "b/1.jsonl", "b/notes.txt"] {
            fs::write(dir.join(f), "").unwrap();
        }
        let found = find_sessions(&dir).unwrap();
        let rel: Vec<_> = found
            .iter()
            .map(|p| p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(rel, ["a.jsonl", "b/1.jsonl", "b/c/2.jsonl"]);
        assert_eq!(
            find_sessions(&dir.join("b/notes.txt")).unwrap(),
            [dir.join("b/notes.txt")]
        );
        assert!(find_sessions(&dir.join("missing")).is_err());
        fs::remove_dir_all(dir).unwrap();
    }
}
