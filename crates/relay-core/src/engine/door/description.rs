//! What `describe` answers: the host facts Relay needs to register itself (its tools, the
//! custom message types Pi's TUI shows, the `/relay` command) and the last-resort answers.

use std::collections::BTreeMap;

use serde::Serialize;

use super::super::wire::{CommandSpec, HookResult, ToolReply, ToolSpec};
use super::Output;

/// What `describe` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Description {
    /// Why this Pi cannot run Relay (`null`: it can).
    pub refusal: Option<String>,
    pub tools: Vec<ToolSpec>,
    /// The custom message types Pi's TUI shows with Relay's one line.
    pub rendered_types: Vec<String>,
    /// The `/relay` command.
    pub command: CommandSpec,
    /// What the host answers for a hook or tool when the engine itself cannot (the last resort
    /// after a failure the engine could not answer), by the hook's or tool's name; `""`: any
    /// other. A compaction hook is cancelled (Pi's summarizer never runs behind Relay's back),
    /// a tool fails, and the engine waits for the whole branch.
    pub last_resort: BTreeMap<String, Output>,
}

impl Description {
    /// [`Description::last_resort`] for these tools.
    pub(in crate::engine) fn last_resorts(tools: &[ToolSpec]) -> BTreeMap<String, Output> {
        let fallback = |result: Option<HookResult>, reply: Option<ToolReply>| Output {
            result,
            reply,
            needs_branch: true,
            history_complete: true,
            ..Output::default()
        };
        let mut map = BTreeMap::from([
            (String::new(), fallback(None, None)),
            (
                "session_before_compact".to_string(),
                fallback(Some(HookResult::Cancel), None),
            ),
        ]);
        for tool in tools {
            let reply = ToolReply {
                text: format!("{} failed inside Relay", tool.name),
                is_error: true,
                ..ToolReply::default()
            };
            map.insert(tool.name.to_string(), fallback(None, Some(reply)));
        }
        map
    }
}
