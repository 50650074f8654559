//! What the crate's unit tests share.

use serde_json::Value;

use crate::args::MAX_RESULT_BYTES;
use crate::ToolOutput;

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
