//! What the CLI's integration tests share (each test file has `mod common;`).

use std::path::PathBuf;

/// A fresh folder under the system's temporary folder: `<prefix>-<pid>-<nanoseconds>`.
pub fn fresh_dir(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "{prefix}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
