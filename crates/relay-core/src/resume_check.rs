//! Resume checks: the operator's command Relay runs at a handoff boundary and its result
//! ([`CheckResult`]). Pure: relay-io runs the command and fills a [`CheckResult`]; the texts the
//! model reads of it are in [`crate::render::resume_check`].
//!
//! The command is never chosen here and never by the model: the engine takes it from the
//! operator (`PI_RESUME_CHECK`, else `resumeChecks[<session name>]`, see `engine::resume`).

use serde::{Deserialize, Serialize};

/// How the command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum CheckStatus {
    /// The command exited with this code.
    Exited { code: i32 },
    /// The command was ended by this signal (not Relay's timeout).
    Signaled { signal: i32 },
    /// The timeout passed: Relay killed the whole process group.
    TimedOut { after_ms: u64 },
    /// `bash` could not be started (missing, or the cwd does not exist).
    SpawnFailed { error: String },
}

/// The combined stdout and stderr as read: the first and the last bytes, and how many lay between
/// them unread into memory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckOutput {
    /// The first bytes of the output (invalid UTF-8 replaced).
    pub head: String,
    /// The last bytes after `head`, not overlapping it.
    pub tail: String,
    /// Bytes between `head` and `tail` that were counted and dropped.
    pub skipped_bytes: u64,
    /// All bytes the command wrote (to the point the pipe was closed).
    pub total_bytes: u64,
}

/// One run of the operator's command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    /// The command as configured (`bash -c <command>`).
    pub command: String,
    /// Where the command came from: `PI_RESUME_CHECK` or `resumeChecks["<session name>"]`.
    pub source: String,
    pub status: CheckStatus,
    pub output: CheckOutput,
    /// The command exited, but a background process kept the output open past the drain limit:
    /// the rest was not read, and the process group was killed.
    #[serde(default)]
    pub output_held_open: bool,
}

#[cfg(test)]
pub(crate) mod tests;
