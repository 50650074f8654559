//! What an [`Event`] says beyond its fields: its hook's name, and what the hook returns as Pi's
//! `continue` beside the engine's result.

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
