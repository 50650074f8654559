//! One line of `events.jsonl`: [`TelemetryLine`] (the envelope) around a [`TelemetryEvent`] (the
//! event's kind and fields), in the key order readers have always seen:
//! `ts`, `event`, `sessionId`, `windowId`, `mode`, then the event's own fields.
//!
//! No version field: the lines carry none today, and a reader of `events.jsonl` (`relay
//! timeline`, `relay status`, the extension's tests, scripts people wrote) matches on `event`;
//! a new key on every line would change every line's bytes for nothing they can use. An event
//! whose fields change shape gets a new event name instead.

use serde::de::Error as _;
use serde::ser::{Error as _, SerializeMap};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::policy::{Mode, PolicyEvent};

/// The envelope's keys, which an event's own fields never repeat.
const ENVELOPE: [&str; 5] = ["ts", "event", "sessionId", "windowId", "mode"];

/// A line of `events.jsonl`. `ts` is `None` for an event made without a clock (a configuration
/// problem): the binding stamps it when it writes the line. `window_id` and `mode` are absent from
/// an `error` line only.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryLine {
    pub ts: Option<i64>,
    pub session_id: String,
    pub window_id: Option<String>,
    pub mode: Option<Mode>,
    /// The observe mode's preview of the event: its name is `would_<kind>`.
    pub would: bool,
    pub event: TelemetryEvent,
}

/// What happened, one variant per kind of event the engine writes (the budget policy's own are
/// [`PolicyEvent`]); field names as in the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "event",
    rename_all = "snake_case",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum TelemetryEvent {
    /// The idle-input compaction ended benignly before Relay's reset (`why`: Pi's text).
    IdleInputSkipped { attempt: u64, why: Option<String> },
    /// Pi's own summarizer failed while the context guard was off (`reason`: the compaction's).
    NativeCompactionFailed { reason: Option<String> },
    /// The window's next compaction is Relay's mechanical reset (the guard-off fallback).
    NativeCompactionFallback { reason: String },
    /// An overflow was answered with the backstop reset.
    OverflowBackstop {
        handoff: bool,
        will_retry: bool,
        attempt: Option<u64>,
    },
    /// An overflow was not recovered: recovery is off (`why`).
    OverflowRecoveryOff { why: String, will_retry: bool },
    /// An overflow was not recovered: recovery is spent (`via`: where that was seen).
    OverflowRecoveryExhausted { via: String },
    /// The observe preview of a `context_handoff` call (only as `would_handoff`).
    Handoff {
        #[serde(rename = "goal_chars")]
        goal_chars: usize,
    },
    /// Old tool results of the window were cleared.
    ToolResultsCleared {
        items: u64,
        tokens_freed: u64,
        tokens_before: Option<u64>,
    },
    /// The fallback relaunches Pi: the marker is written.
    RelaunchRequested {
        reason: String,
        marker: String,
        handoff: String,
    },
    /// The relaunch was dropped (the run was aborted).
    RelaunchDropped { reason: String, why: String },
    /// The marker could not be written: the window is reset in-process instead.
    RelaunchFailed { reason: String, why: String },
    /// The context guard is off and a threshold (`handoff`, `hard`) was reached.
    GuardOffThreshold {
        threshold: String,
        limit: u64,
        tokens: u64,
    },
    /// The effective budget mode differs from the configured one.
    ModeMismatch {
        configured_mode: Mode,
        effective_mode: Mode,
        reason: Option<String>,
    },
    /// Something failed (`kind`: `config`, `hook`, `telemetry`); `path`: the configuration key.
    Error {
        kind: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        message: String,
    },
    /// The budget policy's events.
    #[serde(untagged)]
    Policy(PolicyEvent),
    /// An event this Relay does not know (read from a newer one's file): its name and fields as
    /// they are.
    #[serde(untagged)]
    Other(Map<String, Value>),
}

impl TelemetryLine {
    /// Mark the line as the observe mode's preview (`would_<kind>`).
    pub fn would(mut self) -> TelemetryLine {
        self.would = true;
        self
    }

    /// The event's name as the file has it (with `would_` for a preview).
    pub fn name(&self) -> String {
        if self.would {
            format!("would_{}", self.event.name())
        } else {
            self.event.name().to_string()
        }
    }
}

impl TelemetryEvent {
    /// The event's name (`event` in the file; a preview's without `would_`).
    pub fn name(&self) -> &str {
        match self {
            TelemetryEvent::IdleInputSkipped { .. } => "idle_input_skipped",
            TelemetryEvent::NativeCompactionFailed { .. } => "native_compaction_failed",
            TelemetryEvent::NativeCompactionFallback { .. } => "native_compaction_fallback",
            TelemetryEvent::OverflowBackstop { .. } => "overflow_backstop",
            TelemetryEvent::OverflowRecoveryOff { .. } => "overflow_recovery_off",
            TelemetryEvent::OverflowRecoveryExhausted { .. } => "overflow_recovery_exhausted",
            TelemetryEvent::Handoff { .. } => "handoff",
            TelemetryEvent::ToolResultsCleared { .. } => "tool_results_cleared",
            TelemetryEvent::RelaunchRequested { .. } => "relaunch_requested",
            TelemetryEvent::RelaunchDropped { .. } => "relaunch_dropped",
            TelemetryEvent::RelaunchFailed { .. } => "relaunch_failed",
            TelemetryEvent::GuardOffThreshold { .. } => "guard_off_threshold",
            TelemetryEvent::ModeMismatch { .. } => "mode_mismatch",
            TelemetryEvent::Error { .. } => "error",
            TelemetryEvent::Policy(event) => event.name(),
            TelemetryEvent::Other(fields) => {
                fields.get("event").and_then(Value::as_str).unwrap_or("")
            }
        }
    }
}

impl Serialize for TelemetryLine {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(fields) = serde_json::to_value(&self.event).map_err(S::Error::custom)?
        else {
            return Err(S::Error::custom("a telemetry event is not an object"));
        };
        let mut map = serializer.serialize_map(None)?;
        if let Some(ts) = self.ts {
            map.serialize_entry("ts", &ts)?;
        }
        map.serialize_entry("event", &self.name())?;
        map.serialize_entry("sessionId", &self.session_id)?;
        if let Some(window) = &self.window_id {
            map.serialize_entry("windowId", window)?;
        }
        if let Some(mode) = &self.mode {
            map.serialize_entry("mode", mode)?;
        }
        for (key, value) in &fields {
            if !ENVELOPE.contains(&key.as_str()) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for TelemetryLine {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = Map::<String, Value>::deserialize(deserializer)?;
        let mut take = |key: &str| map.shift_remove(key).filter(|v| !v.is_null());
        let ts = take("ts").and_then(|v| v.as_i64());
        let session_id = take("sessionId")
            .and_then(|v| v.as_str().map(str::to_string))
            .ok_or_else(|| D::Error::missing_field("sessionId"))?;
        let window_id = take("windowId").and_then(|v| v.as_str().map(str::to_string));
        let mode = take("mode")
            .map(serde_json::from_value::<Mode>)
            .transpose()
            .map_err(D::Error::custom)?;
        let name = take("event")
            .and_then(|v| v.as_str().map(str::to_string))
            .ok_or_else(|| D::Error::missing_field("event"))?;
        let (would, name) = match name.strip_prefix("would_") {
            Some(kind) => (true, kind.to_string()),
            None => (false, name),
        };
        let mut fields = Map::new();
        fields.insert("event".into(), Value::String(name));
        fields.extend(map);
        let event = serde_json::from_value(Value::Object(fields)).map_err(D::Error::custom)?;
        Ok(TelemetryLine {
            ts,
            session_id,
            window_id,
            mode,
            would,
            event,
        })
    }
}
