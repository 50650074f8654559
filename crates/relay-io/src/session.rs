//! Reading Pi session files from disk.

use std::fs;
use std::path::{Path, PathBuf};

use relay_core::entry::{parse_session, ParsedSession};

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
