//! Relay's decision core. Sans-IO: this crate never touches the filesystem, the clock, the
//! environment, processes or the network. Time arrives as `now_ms` inside inputs, effects leave as
//! data, and every rendered text the model sees is produced here.
//!
//! No panic may reach Pi: non-test code has no `unwrap`, `expect`, `panic!` or panicking
//! indexing: denied here, once, for every module of the crate (the workspace's clippy.toml lets
//! test code use them).
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod args;
mod clearing;
pub mod effective;
pub mod engine;
pub mod entry;
pub mod handoff;
pub mod history;
pub mod host;
pub mod integrations;
pub mod ledger;
mod memory_tool;
pub mod notes;
mod on_task;
pub mod pins;
pub mod policy;
pub mod records;
pub mod render;
pub mod resume_check;
pub mod scheduler;
pub mod settings;
pub mod staleness;
mod text;
pub mod time;
mod tool_name;

#[cfg(test)]
mod test_support;

use serde::Serialize;

/// What a tool call returns to the model: a text (JSON for structured tools) and an error flag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result whose text is the compact JSON encoding of `value`.
    pub fn json(value: &serde_json::Value) -> Self {
        ToolOutput {
            text: serde_json::to_string(value).unwrap_or_else(|_| "null".into()),
            is_error: false,
        }
    }

    /// A tool error with a clear, model-readable message.
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput {
            text: message.into(),
            is_error: true,
        }
    }
}

/// How a JSON value's type reads in an error message ("a string", "an array", ...).
pub(crate) fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One problem found while validating configuration: the offending key path and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigIssue {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}
