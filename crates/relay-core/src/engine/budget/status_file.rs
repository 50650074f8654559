//! The two files the binding writes for other tools to read, as typed records in their key order:
//! `status/<sessionId>.json` ([`StatusFile`]) and a line of `events.jsonl` ([`TelemetryLine`]).
//! Their shapes are pinned byte for byte by `golden_tests.rs`.

use serde::Serialize;
use serde_json::Value;

use crate::engine::wrapper::OwnershipStatus;
use crate::policy::PolicyStatus;

/// `status/<sessionId>.json` as the engine writes it, in the file's key order: the policy's
/// fields, then the session's (the binding adds `pid` last).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(in crate::engine) struct StatusFile<'a> {
    #[serde(flatten)]
    pub policy: PolicyStatus,
    pub session_id: &'a str,
    pub window_id: &'a str,
    pub window_count: usize,
    pub cwd: &'a str,
    pub model: Option<&'a str>,
    pub role: &'static str,
    pub updated_at: i64,
    pub last_handoff: Option<LastHandoff<'a>>,
    pub window_features: bool,
    pub wrapper: OwnershipStatus<'a>,
    pub last_action: Option<LastAction<'a>>,
}

/// The newest committed handoff: its file and when it was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(in crate::engine) struct LastHandoff<'a> {
    pub path: &'a str,
    pub at: i64,
}

/// The newest policy event and when it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(in crate::engine) struct LastAction<'a> {
    pub event: &'a str,
    pub at: i64,
}

/// One line of `events.jsonl`: the envelope every event has, then its own fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(in crate::engine) struct TelemetryLine<'a> {
    pub ts: i64,
    pub event: &'a str,
    pub session_id: &'a str,
    pub window_id: &'a str,
    pub mode: &'static str,
    #[serde(flatten)]
    pub fields: serde_json::Map<String, Value>,
}

impl TelemetryLine<'_> {
    /// The envelope's keys, which an event's own fields cannot replace.
    pub(in crate::engine) const ENVELOPE: [&'static str; 5] =
        ["ts", "event", "sessionId", "windowId", "mode"];
}
