//! The wire contract: every type that crosses the boundary between the extension and the engine
//! (JSON text, camelCase), and the `customType`s Relay writes to the branch.
//!
//! **Contract.**
//! - *Inputs* ([`Observation`], [`Moment`], [`Event`], [`Usage`], [`ConfigSources`]) reject every
//!   field they do not know, naming it (`unknown field `x`, expected …`): a field the adapter sends
//!   is either read by the engine or an error, never silently dropped.
//! - *Outputs* ([`HookReply`], [`HookResult`], [`Effect`], [`ToolReply`], [`ResetPlan`],
//!   [`Marker`], [`Continuation`], [`ToolSpec`]) are what the adapter executes; optional fields are
//!   left out rather than sent as `null`, except where the adapter tests for `null`.
//! - These Rust types are the one definition. `extension/src/generated/wire.ts` is generated from
//!   them (by the `generated_wire` test, with `ts-rs`); the extension imports its types from there.
//!   After changing a type here, regenerate it with
//!   `UPDATE_GENERATED=1 cargo test -p relay-core generated_wire` (the test fails while the
//!   checked-in file is stale).
//!
//! [`GitFacts`] crosses a Rust-to-Rust boundary only (the binding collects it) and has no JSON form.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::handoff::GitState;
use crate::ToolOutput;

mod config;
mod event;

pub use config::*;
pub use event::PiCompactReason;

/// Pi's `outcome` of a turn or a run (`turn_end`, `agent_end`), as the wire carries it: a plain
/// string. A value this Relay does not know is kept as [`PiOutcome::Other`] and counts as not
/// completed (nothing is continued or asked for, as after an error).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum PiOutcome {
    Completed,
    Aborted,
    Error,
    /// An outcome a later Pi may send.
    Other(String),
}

impl PiOutcome {
    pub fn as_str(&self) -> &str {
        match self {
            PiOutcome::Completed => "completed",
            PiOutcome::Aborted => "aborted",
            PiOutcome::Error => "error",
            PiOutcome::Other(s) => s,
        }
    }

    /// Whether an outcome as a hook carries it (absent means completed) is a completed one.
    pub fn completed(outcome: Option<&PiOutcome>) -> bool {
        matches!(outcome, None | Some(PiOutcome::Completed))
    }
}

impl From<String> for PiOutcome {
    fn from(s: String) -> Self {
        match s.as_str() {
            "completed" => PiOutcome::Completed,
            "aborted" => PiOutcome::Aborted,
            "error" => PiOutcome::Error,
            _ => PiOutcome::Other(s),
        }
    }
}

impl From<&str> for PiOutcome {
    fn from(s: &str) -> Self {
        PiOutcome::from(s.to_string())
    }
}

impl From<PiOutcome> for String {
    fn from(o: PiOutcome) -> Self {
        match o {
            PiOutcome::Other(s) => s,
            known => known.as_str().to_string(),
        }
    }
}

// The `customType`s Relay writes to the branch, and the entry that carries a record, live in
// `records` (below the engine, which the records' readers and writers share); named here too.
pub use crate::records::{
    Marker, BOOT_TYPE, CLEARING_TYPE, CONTINUE_TASK_TYPE, CONTINUE_TYPE, FALLBACK_DISARMED_TYPE,
    HANDOFF_REQUEST_TYPE, HANDOFF_TYPE, NATIVE_FALLBACK_TYPE, PINS_TYPE, REMINDER_TYPE,
    RESET_FAILED_TYPE, RESET_MARKER_TYPE, RESUME_CHECK_TYPE, STALE_CHECK_TYPE, STEER_TYPE,
    WATCH_CHECK_TYPE,
};

// ---------------------------------------------------------------------------------------------
// Inputs

/// What Pi appended since the engine's tip, as the host walks it from Pi's leaf: `truncate` drops
/// every entry after `after` first (a navigation; `after: null` drops all), `append` are the new
/// entries, root first. Each entry is parsed on its own, so one that does not parse keeps its
/// place as an unknown entry with a warning.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Feed {
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub truncate: Option<bool>,
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub after: Option<String>,
    #[serde(default)]
    #[cfg_attr(test, ts(optional, type = "unknown[]"))]
    pub append: Option<Vec<Box<serde_json::value::RawValue>>>,
}

/// Pi's context usage as `ctx.getContextUsage()` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Usage {
    /// `null` while Pi cannot estimate it (right after a reset, before the next reply with usage).
    pub tokens: Option<u64>,
    pub context_window: u64,
}

/// Facts every observation carries (and, alone, every tool call). Pi computes them; the engine
/// judges them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Moment {
    /// `Date.now()`: the engine has no clock of its own.
    pub now_ms: i64,
    /// The local time zone's offset from UTC, for the timestamps the model reads.
    pub tz_offset_minutes: i32,
    /// Pi's own usage figure. Only tools send it (`getContextUsage()` walks the branch); hooks send
    /// `null` and the engine uses its incremental estimate.
    pub usage: Option<Usage>,
    /// `provider/modelId` of the current model.
    pub model: Option<String>,
    /// The current model's declared context window (`ctx.model.contextWindow`). The engine's
    /// door replaces it by the window whose limits apply (`Engine::limits_window`): under a
    /// router, the answered model's. `null` or 0: unknown (read through [`Moment::window`]).
    pub context_window: Option<u64>,
    /// The current model's `api` (`ctx.model.api`). Pi's router (virtual) models have the tag
    /// [`ROUTER_API`]: for them Pi reads the window of the physical model that answered last.
    #[serde(default)]
    pub api: Option<String>,
    /// The declared context window of the model the engine's last output named
    /// (`Output::answeredModel`, `ctx.modelRegistry.find(provider, model)`): `null` when it named
    /// none or the registry has no such model.
    #[serde(default)]
    pub answered_window: Option<u64>,
    /// `ctx.hasPendingMessages()`: the user has a prompt queued.
    pub has_pending_messages: bool,
    /// Background work the session still waits for (jobs, watches, subagents), as a host
    /// integration reports it: the extension reads the process-wide
    /// `globalThis[Symbol.for("relay.pending-work")]` function (a count; absent = 0), whatever
    /// number it returned: anything but a positive integer counts as none ([`count_of`]). With a
    /// large context, pending work at the settle point asks for an idle handoff.
    #[serde(default, deserialize_with = "count_of")]
    #[cfg_attr(test, ts(type = "number"))]
    pub pending_work: u32,
    pub cwd: String,
    /// The shared guard library's `isGuardOff("context")` at this moment (`<agent dir>/lib/guards.ts`,
    /// consulted live): `off` turns the budget policy effectively off. `unavailable` when the
    /// library is absent or cannot answer.
    #[serde(default)]
    pub context_guard: GuardState,
    /// This runtime was bound while another Relay runtime was already bound in the same process
    /// (an SDK child session): the hosting rule's answer. The budget policy then uses the
    /// `subagent` thresholds, unless `relay.role` declares the session's role.
    pub subagent: bool,
}

/// A count a host integration reported, as JSON gave it: a positive integer (at most
/// `u32::MAX`), anything else none.
fn count_of<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let n = match Value::deserialize(d)? {
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        _ => 0.0,
    };
    Ok(match n.is_finite() && n.fract() == 0.0 && n > 0.0 {
        true => n.min(f64::from(u32::MAX)) as u32,
        false => 0,
    })
}

/// The `api` of Pi's router (virtual) models (`VIRTUAL_MODEL_API` in Pi's virtual-models module).
pub const ROUTER_API: &str = "pi-virtual";

impl Moment {
    /// The current model is a router (virtual) model ([`ROUTER_API`]).
    pub fn router(&self) -> bool {
        self.api.as_deref() == Some(ROUTER_API)
    }

    /// The context window, `None` while unknown: a model that declares none (a router model before
    /// its first answer) reports 0, which is no window at all, never a full one. Past the door,
    /// the window whose limits apply (`Engine::limits_window`).
    pub fn window(&self) -> Option<u64> {
        self.context_window.filter(|w| *w > 0)
    }
}

/// The answer of the shared guard library for the `context` guard.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum GuardState {
    /// No guard library, or it did not answer with a boolean.
    #[default]
    Unavailable,
    /// The guard is on (enforcement as configured).
    On,
    /// `/guards off context`: the operator turned the context guard off for the session.
    Off,
}

/// The Pi event an observation reports, tagged by `type` (the Pi hook's name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Event {
    /// Pi's `session_start`. `run_active` is `!ctx.isIdle()`: Pi 1.3 lets a `/reload` through in
    /// the middle of a run, and the engine it re-creates starts inside that run (absent: idle).
    SessionStart {
        #[serde(default)]
        run_active: bool,
    },
    SessionTree,
    SessionShutdown,
    /// Pi's `input`: new user or extension input, before Pi starts (or queues) the run for it.
    /// The engine may answer [`HookResult::Compact`]: reset the window before the input goes on.
    Input,
    /// The compaction job of [`HookResult::Compact`] (`attempt`) failed with Pi's error (the
    /// engine's own event, from the job's result): Pi reports the same failure to
    /// `session_compact_failed` first, so the attempt id makes the second report a no-op.
    CompactError {
        attempt: u64,
        error_message: String,
    },
    BeforeAgentStart,
    Context,
    ToolCall {
        tool_name: String,
        tool_call_id: String,
    },
    ToolResult {
        tool_name: String,
        tool_call_id: String,
        is_error: bool,
    },
    /// Pi's `turn_start`: the turn before it has ended, seen or not (a turn end the engine did
    /// not subscribe to is counted here, [`super::door::BoundaryHooks`]).
    TurnStart,
    /// Pi's `message_end`: the message as Pi hands it to extensions, before Pi appends it to the
    /// branch. The engine reads the window's usage at the coming boundary from it (an
    /// assistant's usage, the size of a tool result) to say which boundary hooks it needs.
    MessageEnd {
        #[cfg_attr(test, ts(type = "unknown"))]
        message: Value,
    },
    TurnEnd {
        /// How many tool results the turn produced (blocked calls included): a turn with none is
        /// the model trying to stop; with some, the run goes on to another request.
        tool_results: u32,
        /// Pi's `outcome` of the turn (`completed`, `aborted` or `error`); absent means completed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(optional, type = "string"))]
        outcome: Option<PiOutcome>,
        /// Pi's `continue` as the hook's earlier handlers left it (another extension asked the
        /// run to go on): the engine's answer keeps it ([`HookReply::continue_run`]).
        #[serde(default, rename = "continue")]
        chained: bool,
        /// The run's abort signal fired (`ctx.signal.aborted`): a turn the user aborted while a
        /// tool ran still reports `completed`, and the engine reads it as aborted.
        #[serde(default)]
        aborted: bool,
    },
    AgentEnd,
    AgentBeforeSettle {
        /// Pi's `outcome` of the run: `completed`, `aborted` or `error`.
        #[cfg_attr(test, ts(type = "string | null"))]
        outcome: Option<PiOutcome>,
        /// The records the `pi-jobs.liveManagers` registry lists (absent: no registry). The
        /// engine counts this session's pending ones as pending work for the idle handoff.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(optional, type = "unknown[]"))]
        jobs: Option<Vec<Value>>,
        /// Pi's `continue` as the hook's earlier handlers left it (another extension asked the
        /// run to go on): the engine's answer keeps it ([`HookReply::continue_run`]).
        #[serde(default, rename = "continue")]
        chained: bool,
    },
    AgentSettled {
        aborted: bool,
    },
    /// `session_compact_failed`: a compaction (possibly the reset Relay returned from
    /// `session_before_compact`) was not appended. `reason` and `aborted` are Pi's: an overflow
    /// failure that was not aborted and answers no reset of Relay's is Pi giving up after its one
    /// compact-and-retry attempt (it calls no hook then).
    SessionCompactFailed {
        /// `manual`, `threshold` or `overflow`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(optional, type = "string"))]
        reason: Option<PiCompactReason>,
        #[serde(default)]
        aborted: bool,
        /// Pi's `errorMessage` (e.g. "Compaction failed: Nothing to compact (session too small)");
        /// absent for a cancellation. Relay classifies it (benign, transient or persistent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(optional))]
        error_message: Option<String>,
    },
    SessionBeforeCompact {
        /// `manual`, `threshold` or `overflow`.
        #[cfg_attr(test, ts(type = "string"))]
        reason: PiCompactReason,
        will_retry: bool,
        /// The user's `/compact <instructions>`, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(optional))]
        custom_instructions: Option<String>,
    },
    /// `session_before_tree`: a `/tree` navigation is about to happen.
    SessionBeforeTree {
        /// The user chose to summarize the branch being left.
        user_wants_summary: bool,
        /// The `type` of each entry Pi would summarize (`preparation.entriesToSummarize`): its
        /// compaction entries are window resets.
        summarizing: Vec<String>,
    },
    /// `/relay <args>`.
    Command {
        args: String,
    },
}

/// One Pi hook as the engine sees it: `{moment: {…}, event: {type, …}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ObservationJson")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Observation {
    pub moment: Moment,
    pub event: Event,
}

/// The JSON form of [`Observation`] before its event is checked. serde's `deny_unknown_fields`
/// does not reach the variants without fields of an internally tagged enum, so the event's keys
/// are compared with what the parsed event holds.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ObservationJson {
    moment: Moment,
    event: Map<String, Value>,
}

impl TryFrom<ObservationJson> for Observation {
    type Error = String;

    fn try_from(json: ObservationJson) -> Result<Self, String> {
        let event: Event = serde_json::from_value(Value::Object(json.event.clone()))
            .map_err(|e| format!("event: {e}"))?;
        let known = serde_json::to_value(&event).map_err(|e| format!("event: {e}"))?;
        if let Some(key) = json.event.keys().find(|k| known.get(k.as_str()).is_none()) {
            return Err(format!(
                "event: unknown field `{key}` in a `{}` event",
                event.tag()
            ));
        }
        Ok(Observation {
            moment: json.moment,
            event,
        })
    }
}

/// What the extension knows of the operator's resume check: facts only, never a decision. The
/// engine picks the command (`env` when non-empty, else `resumeChecks[sessionName]`) and whether
/// it runs at all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ResumeFacts {
    /// `PI_RESUME_CHECK` as the process has it (`null` when unset).
    pub env: Option<String>,
    /// `ctx.sessionManager.getSessionName()` (`null` when the session has no name).
    pub session_name: Option<String>,
}

/// Git facts a `git` job collects for a handoff (independently of the model). Rust to Rust only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GitFacts {
    pub repo_root: Option<String>,
    pub branch: Option<String>,
    pub head: Option<String>,
    pub state: GitState,
    /// What the handoff records of the workspace for the stale-handoff check of the window it
    /// opens (`None`: not collected; the window is then not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<crate::staleness::WorkspaceRecord>,
}

// ---------------------------------------------------------------------------------------------
// Outputs

/// `ctx.ui.notify` level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum NotifyLevel {
    Info,
    Warning,
}

/// `deliverAs` of `pi.sendMessage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum DeliverAs {
    /// Into the next request of the running turn.
    Steer,
}

/// Something the adapter must do through Pi's API, in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Effect {
    /// `pi.sendMessage({customType, content, display, details}, {triggerTurn, deliverAs})`.
    Send {
        custom_type: String,
        content: String,
        display: bool,
        trigger_turn: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(optional))]
        deliver_as: Option<DeliverAs>,
        /// `details` of the persisted custom message.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(optional, type = "unknown"))]
        details: Option<Value>,
    },
    /// `ctx.ui.notify(text, level)` (stderr without a UI).
    Notify { text: String, level: NotifyLevel },
    /// `ctx.ui.setStatus("relay", text)`.
    Status { text: Option<String> },
    /// A line on stderr.
    Log { text: String },
    /// `ctx.shutdown()`: the session ends so that the pi-session wrapper relaunches Pi (only
    /// after the relaunch marker was written, at `agent_settled`).
    Shutdown,
    /// Write the pi-session relaunch marker at `path`, signed with `key` (executed by the
    /// binding: the handoff and launch prompt files checked first, then written atomically, mode
    /// 0600; never reaches the extension). A failure is fed back
    /// ([`super::Engine::relaunch_unwritten`]) and the window is reset in-process instead.
    WriteRelaunchMarker {
        path: String,
        #[cfg_attr(test, ts(type = "unknown"))]
        marker: super::files::RelaunchMarker,
        #[serde(skip_serializing)]
        #[cfg_attr(test, ts(skip))]
        key: RelaunchKey,
    },
    /// Remove the relaunch marker written at this settle point: the run was aborted before Pi
    /// could be shut down (executed by the binding, never reaches the extension).
    RemoveRelaunchMarker { path: String },
    /// An event for `events.jsonl` (executed by the binding, never reaches the extension).
    Telemetry {
        #[cfg_attr(test, ts(type = "unknown"))]
        event: Box<super::files::TelemetryLine>,
    },
    /// The session's `status/<sessionId>.json` (executed by the binding, never reaches the
    /// extension).
    WriteStatus {
        #[cfg_attr(test, ts(type = "unknown"))]
        status: Box<super::files::StatusFile>,
    },
    /// Which of Relay's registered tools are declared to the model: `pi.setActiveTools` with Pi's
    /// active tools less `withhold`, plus each of `restore` not active yet (left as they are
    /// when that changes nothing). A withheld tool stays registered; the model does not know it.
    ActiveTools {
        withhold: Vec<String>,
        restore: Vec<String>,
    },
}

/// A reset as the adapter installs it: marker entry, compaction entry, optional hidden continuation.
/// On the wire only the marker: the compaction and the continuation go as the output's `drafts`
/// ([`super::door::Draft::of`]), so the next boot block crosses once.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ResetPlan {
    /// Appended first; its entry id is the compaction's `firstKeptEntryId` (retains nothing old).
    pub marker: Marker,
    /// The compaction's summary: the next window's boot block.
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub summary: String,
    /// The compaction's `details`: the window marker (`{relay: "window", v, windowId, attempt,
    /// source, …}`, [`crate::records::WindowRecord`]).
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub details: Box<crate::records::WindowRecord>,
    /// The hidden message that keeps the run going, or none.
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub continuation: Option<Continuation>,
}

/// A hidden `custom_message` boundary draft (`display: false`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Continuation {
    pub custom_type: String,
    pub content: String,
    /// The message's `details` (`{v}`, [`crate::records::MessageDetails`]).
    #[cfg_attr(test, ts(type = "unknown"))]
    pub details: Value,
}

/// A cleared tool result's stub in a request: the `toolResult` message answering `call` (the
/// `nth` such message of the request, counted from 0) gets `[{type: "text", text}]` as its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ToolStub {
    pub call: String,
    pub nth: u32,
    pub text: String,
}

impl From<&crate::records::ClearedStub> for ToolStub {
    fn from(s: &crate::records::ClearedStub) -> Self {
        ToolStub {
            call: s.call.clone(),
            nth: s.nth,
            text: s.text.clone(),
        }
    }
}

/// What the current hook must return to Pi.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum HookResult {
    /// `{cancel: true}` from `session_before_compact` or `session_before_tree`.
    Cancel,
    /// `{block: true, reason, terminate}` from `tool_call`. `terminate`: Pi ends the run after
    /// the batch when every call in it was answered so.
    Block { reason: String, terminate: bool },
    /// Install a reset (boundary drafts, or a compaction result from `session_before_compact`).
    Reset { plan: ResetPlan },
    /// Keep the run going with one hidden message (boundary draft + `continue: true`).
    Continue { continuation: Continuation },
    /// From `turn_end`: replace old tool results in future requests (one boundary draft:
    /// `record` as a `custom` entry, holding the stubs every later `context` hook of the window
    /// puts in place; the run's `continue` unchanged).
    Clear { record: Marker },
    /// From `input`: Pi's compaction before the input goes on unchanged; its `manual` hook is
    /// answered with the reset of `attempt`. The door makes it a [`super::door::Work::Compact`]
    /// job of the input's operation (the host never sees this result), whose failure is
    /// [`Event::CompactError`] with the same `attempt`.
    Compact { attempt: u64 },
}

/// The engine's answer to an observation (and to `configure`).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct HookReply {
    pub effects: Vec<Effect>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub result: Option<HookResult>,
    /// What a boundary hook (`turn_end`, `agent_before_settle`) returns as Pi's `continue` beside
    /// its `result` ([`Event::continue_with`]).
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub continue_run: Option<bool>,
    /// Entries to append before the effects (carried into the door's `Output::appends`).
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub appends: Vec<Marker>,
    /// The engine wants the whole history read now (a skimmed history, at the first settle):
    /// the host starts its load in the background (the binding's `historyLoad`).
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub load_history: bool,
}

/// A message the `context` hook inserts into the request it is building, at `index` of the
/// visible messages (`{role: "custom", customType, content, display: false, timestamp}`). The
/// same message at the same place in every request of the window keeps the prompt cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ContextMessage {
    pub index: u32,
    pub custom_type: String,
    pub content: String,
    pub timestamp: i64,
}

/// A tool's answer: the text the model reads, plus what the adapter must persist first.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ToolReply {
    pub text: String,
    pub is_error: bool,
    /// End the model's turn after this tool batch (Pi's `terminate`).
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub terminate: bool,
    /// An entry to append before the result returns (a note operation, a handoff record).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub persist: Option<Marker>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub effects: Vec<Effect>,
}

impl From<ToolOutput> for ToolReply {
    fn from(out: ToolOutput) -> Self {
        ToolReply {
            text: out.text,
            is_error: out.is_error,
            ..ToolReply::default()
        }
    }
}

/// A command the host registers: its name, description and argument completions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CommandSpec {
    pub name: String,
    pub description: String,
    /// The arguments offered for completion (those starting with what the user typed).
    pub completions: Vec<String>,
}

/// One tool as the extension registers it: name, label, description and the JSON Schema of its
/// parameters (derived from the argument structs in [`crate::args`], the one source).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ToolSpec {
    pub name: &'static str,
    pub label: &'static str,
    pub description: &'static str,
    #[cfg_attr(test, ts(type = "object"))]
    pub parameters: Value,
    /// The tool asks for the handoff's git metadata (a `git` job) before it answers.
    pub collects_git: bool,
    /// The tool's moment carries Pi's own usage (`getContextUsage()`, which walks the branch):
    /// only the tools that report the exact figure. Every other tool is judged by the engine's
    /// incremental estimate.
    pub uses_pi_usage: bool,
    /// The tool reads the texts of earlier windows (the history tools): called while a large
    /// session's earlier windows still load (`historyComplete()` false), it waits for them.
    pub needs_history: bool,
}
