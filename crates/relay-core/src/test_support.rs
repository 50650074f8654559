//! What the crate's unit tests share.

use serde_json::Value;

use crate::args::MAX_RESULT_BYTES;
use crate::ToolOutput;

/// Checks a checked-in generated file (`path` from the crate's manifest folder) against `want`;
/// with `UPDATE_GENERATED=1` writes it instead. `stale` says what changed and how to regenerate.
pub(crate) fn check_generated(path: &str, want: &str, stale: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    if std::env::var_os("UPDATE_GENERATED").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, want).unwrap();
        return;
    }
    let got = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        got == want,
        "{} is stale (or missing): {stale}",
        path.display()
    );
}

/// A tool's successful output, within the result cap, as JSON.
pub(crate) fn within_cap(out: &ToolOutput) -> Value {
    assert!(
        out.text.len() <= MAX_RESULT_BYTES,
        "{} bytes over the cap",
        out.text.len()
    );
    assert!(!out.is_error, "unexpected tool error: {}", out.text);
    serde_json::from_str(&out.text).unwrap()
}
