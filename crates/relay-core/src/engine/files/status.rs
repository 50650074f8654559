//! `status/<sessionId>.json`: the session's budget policy and facts, rewritten at transitions, for
//! other tools to read (`relay status`, scripts). Its shape is pinned byte for byte by
//! `engine/budget/golden_tests.rs`.

use serde::Serialize;

use crate::policy::PolicyStatus;

/// The status file's version: 1 added `version` itself (before, the file had no version; its
/// fields are the same).
pub const STATUS_VERSION: u32 = 1;

/// `status/<sessionId>.json` in the file's key order: the version, the policy's fields, then the
/// session's, then the writing process's `pid` (the binding sets it; `None` leaves it out).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusFile {
    pub version: u32,
    #[serde(flatten)]
    pub policy: PolicyStatus,
    pub session_id: String,
    pub window_id: String,
    pub window_count: usize,
    pub cwd: String,
    pub model: Option<String>,
    pub role: Role,
    pub updated_at: i64,
    pub last_handoff: Option<LastHandoff>,
    pub window_features: bool,
    pub wrapper: WrapperStatus,
    pub last_action: Option<LastAction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// The session's role (`relay.role`, else the hosting rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Main,
    Subagent,
}

/// The newest committed handoff: its file and when it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LastHandoff {
    pub path: String,
    pub at: i64,
}

/// The newest policy event and when it happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LastAction {
    pub event: String,
    pub at: i64,
}

/// Whether this runtime owns the pi-session wrapper, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WrapperStatus {
    pub owned: bool,
    pub reason: String,
}
