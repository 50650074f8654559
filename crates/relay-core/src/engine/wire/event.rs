//! What an [`Event`] says beyond its fields: its hook's name, and what the hook returns as Pi's
//! `continue` beside the engine's result.

use serde::{Deserialize, Serialize};

use super::{Event, HookResult};

impl Event {
    /// What the hook returns as Pi's `continue` beside `result`: a reset whose plan carries a
    /// continuation and a continuation make the run go on; otherwise what the earlier handlers
    /// left (`chained`). `None` for a hook without `continue`, or without a result that carries it.
    pub fn continue_with(&self, result: Option<&HookResult>) -> Option<bool> {
        let (Event::TurnEnd { chained, .. } | Event::AgentBeforeSettle { chained, .. }) = self
        else {
            return None;
        };
        match result? {
            HookResult::Reset { plan } => Some(plan.continuation.is_some() || *chained),
            HookResult::Continue { .. } => Some(true),
            HookResult::Clear { .. } => Some(*chained),
            _ => None,
        }
    }

    /// The `type` tag, as the adapter sends it.
    pub(super) fn tag(&self) -> &'static str {
        match self {
            Event::SessionStart { .. } => "session_start",
            Event::SessionTree => "session_tree",
            Event::SessionShutdown => "session_shutdown",
            Event::Input => "input",
            Event::CompactError { .. } => "compact_error",
            Event::BeforeAgentStart => "before_agent_start",
            Event::Context => "context",
            Event::ToolCall { .. } => "tool_call",
            Event::ToolResult { .. } => "tool_result",
            Event::TurnStart => "turn_start",
            Event::MessageEnd { .. } => "message_end",
            Event::TurnEnd { .. } => "turn_end",
            Event::AgentEnd => "agent_end",
            Event::AgentBeforeSettle { .. } => "agent_before_settle",
            Event::AgentSettled { .. } => "agent_settled",
            Event::SessionCompactFailed { .. } => "session_compact_failed",
            Event::SessionBeforeCompact { .. } => "session_before_compact",
            Event::SessionBeforeTree { .. } => "session_before_tree",
            Event::Command { .. } => "command",
        }
    }
}

/// Pi's `reason` for a compaction (`session_before_compact`, `session_compact_failed`), as the
/// wire carries it: a plain string. A value this Relay does not know is kept as
/// [`PiCompactReason::Other`]; each place that reads the reason says what an unknown one means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum PiCompactReason {
    /// `/compact`.
    Manual,
    /// The window reached Pi's compaction threshold.
    Threshold,
    /// The provider refused the request as too long.
    Overflow,
    /// A reason a later Pi may send.
    Other(String),
}

impl PiCompactReason {
    pub fn as_str(&self) -> &str {
        match self {
            PiCompactReason::Manual => "manual",
            PiCompactReason::Threshold => "threshold",
            PiCompactReason::Overflow => "overflow",
            PiCompactReason::Other(s) => s,
        }
    }
}

impl From<String> for PiCompactReason {
    fn from(s: String) -> Self {
        match s.as_str() {
            "manual" => PiCompactReason::Manual,
            "threshold" => PiCompactReason::Threshold,
            "overflow" => PiCompactReason::Overflow,
            _ => PiCompactReason::Other(s),
        }
    }
}

impl From<&str> for PiCompactReason {
    fn from(s: &str) -> Self {
        PiCompactReason::from(s.to_string())
    }
}

impl From<PiCompactReason> for String {
    fn from(r: PiCompactReason) -> Self {
        match r {
            PiCompactReason::Other(s) => s,
            known => known.as_str().to_string(),
        }
    }
}
