//! What `describe` answers: what the host registers (Relay's tools, the Pi hooks it translates,
//! the custom message types Pi's TUI shows, the `/relay` command) and the last-resort answers.

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
    /// The `api` of Pi's router (virtual) models ([`crate::engine::wire::ROUTER_API`]): only
    /// under one does the host look up `answeredWindow` (a registry lookup it spares every other
    /// input).
    pub router_api: &'static str,
    /// The `/relay` command.
    pub command: CommandSpec,
    /// The Pi hooks the host translates alike (see [`HookSpec`]); the session's start and end,
    /// `input` and the command are the host's own.
    pub hooks: Vec<HookSpec>,
    /// What the host answers for a hook or tool when the engine itself cannot (the last resort
    /// after a failure the engine could not answer), by the hook's or tool's name; `""`: any
    /// other. A compaction hook is cancelled (Pi's summarizer never runs behind Relay's back),
    /// a tool fails, and the engine waits for the whole branch.
    pub last_resort: BTreeMap<String, Output>,
}

/// One Pi hook the host subscribes to and translates: the event's fields the engine reads,
/// copied as Pi names them (a field without a value is left out), what the hook waits for, and
/// how the engine's output becomes the hook's return value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct HookSpec {
    /// Pi's event name, which is also the engine's event type.
    pub name: &'static str,
    /// The event's fields the engine reads as they are (the host adds the facts it computes).
    pub fields: Vec<&'static str>,
    /// What the hook waits for before the engine sees it.
    pub waits: HookWaits,
    /// How the engine's output returns to Pi.
    pub answer: HookAnswer,
    /// Served under the run's abort signal (Esc ends the wait for its jobs).
    pub abortable: bool,
    /// Subscribed only while the engine's outputs say it needs it (`boundary`).
    pub boundary: bool,
}

/// What a hook waits for before it is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum HookWaits {
    /// The start-up load's current window.
    Window,
    /// The whole history (what reads earlier windows, such as a navigation).
    History,
}

/// How the engine's output becomes the hook's return value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum HookAnswer {
    /// Nothing: the engine only observes (the hook does not wait for the engine's jobs).
    Observe,
    /// `{cancel: true}` on [`HookResult::Cancel`].
    Cancel,
    /// `{block, reason, terminate}` on [`HookResult::Block`].
    Block,
    /// The request's messages with the window's stubs and the engine's messages in place.
    Request,
    /// Pi's boundary drafts with the engine's appended, and its `continue`.
    Boundary,
    /// Relay's reset as Pi's compaction, or a cancel.
    Compaction,
}

impl HookSpec {
    /// Every hook the host translates alike, in the order it subscribes to them.
    pub fn all() -> Vec<HookSpec> {
        use HookAnswer as A;
        use HookWaits::{History, Window};
        let hook = |name, fields: &[&'static str], waits, answer| HookSpec {
            name,
            fields: fields.to_vec(),
            waits,
            answer,
            abortable: false,
            boundary: false,
        };
        vec![
            hook("session_before_tree", &[], History, A::Cancel),
            hook("session_tree", &[], History, A::Observe),
            hook("before_agent_start", &[], Window, A::Observe),
            HookSpec {
                abortable: true,
                ..hook("context", &[], Window, A::Request)
            },
            hook("tool_call", &["toolName", "toolCallId"], Window, A::Block),
            hook(
                "tool_result",
                &["toolName", "toolCallId", "isError"],
                Window,
                A::Observe,
            ),
            hook("turn_start", &[], Window, A::Observe),
            hook("message_end", &["message"], Window, A::Observe),
            HookSpec {
                boundary: true,
                ..hook("turn_end", &["outcome", "continue"], Window, A::Boundary)
            },
            HookSpec {
                boundary: true,
                ..hook(
                    "agent_before_settle",
                    &["outcome", "continue"],
                    Window,
                    A::Boundary,
                )
            },
            hook("agent_end", &[], Window, A::Observe),
            hook("agent_settled", &["aborted"], Window, A::Observe),
            hook(
                "session_compact_failed",
                &["reason", "aborted", "errorMessage"],
                Window,
                A::Observe,
            ),
            hook(
                "session_before_compact",
                &["reason", "willRetry", "customInstructions"],
                Window,
                A::Compaction,
            ),
        ]
    }
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
