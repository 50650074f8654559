//! What Relay writes into a Pi session: one typed, versioned serde struct per record.
//!
//! Every record Relay puts on the branch is built here and serialized, and every reader
//! deserializes it back through the same struct:
//!
//! | Record | Where in the session | Struct |
//! | --- | --- | --- |
//! | window marker | a reset's `compaction` entry, `details` | [`WindowRecord`] |
//! | reset marker | `custom` `relay/reset`, `data` | [`ResetMarkerRecord`] |
//! | note operation | `custom` `relay/note`, `data` | [`NoteRecord`] |
//! | written handoff | `custom` `relay/handoff`, `data` | [`HandoffRecord`] |
//! | resume check | `custom` `relay/resume-check`, `data` | [`ResumeCheckRecord`] |
//! | watch check | `custom` `relay/watch-check`, `data` | [`WatchCheckRecord`] |
//! | stale-handoff check | `custom` `relay/stale-check`, `data` | [`StaleCheckRecord`] |
//! | tool-result clearing | `custom` `relay/clear-tool-results`, `data` | [`ClearingRecord`] |
//! | guard-off native fallback | `custom` `relay/native-fallback`, `data` | [`NativeFallbackRecord`] |
//! | compaction-failure fallback disarmed | `custom` `relay/fallback-disarmed`, `data` | [`FallbackDisarmedRecord`] |
//! | the user's pinned instructions | `custom` `relay/pins`, `data` | [`PinsRecord`] |
//! | low-budget reminder | `custom_message` `relay/reminder`, `details` | [`ReminderDetails`] |
//! | reset failed | `custom_message` `relay/reset-failed`, `details` | [`ResetFailedDetails`] |
//! | boot block, notes steer, continuation, continue-task, handoff request | `custom_message` `relay/boot`, `relay/notes-steer`, `relay/continue`, `relay/continue-task`, `relay/handoff-request`, `details` (their text is the content) | [`MessageDetails`] |
//!
//! The relaunch marker, the status file, telemetry events and the handoff sidecar are files, not
//! session records: they are [`crate::engine::files`].
//!
//! # Versions
//!
//! Each record carries `"v": VERSION` ([`VERSION`], today 1). A record without `v` was written by
//! an earlier Relay (version 0, every shape before this module; `entry::WindowMarker` documents
//! the earlier window-marker shape). The rules that keep old and new sessions readable:
//!
//! - **Writing**: what a record holds is byte-for-byte what earlier Relays wrote, plus `v`
//!   (fields written as `null` before are still written as `null`; absent ones stay absent).
//! - **Reading**: a reader takes what it understands. The fields a record cannot mean anything
//!   without (a handoff's path and fingerprint, a check's window id and result) are required:
//!   without them the record stands for nothing, as before. Every other field is read leniently:
//!   absent or of another type, it is its default (`None`, `0`, `false`), never an error.
//! - **A newer version** (`v` above [`VERSION`]) is read the same way: versions only add fields
//!   within a record. A change of what an existing field means takes a new field name, and a
//!   change of what the record means takes a new `customType` (or, for the window marker, a new
//!   `relay` tag), which this version then treats as not Relay's. So an unknown version never
//!   crashes and never means something else.
//! - Note operations are the exception that was always strict: a note that does not parse is
//!   skipped and reported by name ([`NoteRecord::op`]), never applied half-read.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::handoff::HandoffFingerprint;
use crate::integrations::RecordedJob;
use crate::resume_check::CheckResult;
use crate::staleness::{StaleReport, WorkspaceRecord};

/// customType of the visible boot block of the root window.
pub const BOOT_TYPE: &str = "relay/boot";
/// customType of the once-per-window low-budget reminder.
pub const REMINDER_TYPE: &str = "relay/reminder";
/// customType of the marker entry appended just before a reset's compaction entry.
pub const RESET_MARKER_TYPE: &str = "relay/reset";
/// customType of the hidden continuation after a reset.
pub const CONTINUE_TYPE: &str = "relay/continue";
/// customType of the hidden message that continues a window's first run once when it stopped
/// early after an automatic or forced reset (a question, an empty or meta reply): it quotes the
/// user's latest request. At most one per window, counted on the branch.
pub const CONTINUE_TASK_TYPE: &str = "relay/continue-task";
/// customType of the borrowed turn's note-taking steer.
pub const STEER_TYPE: &str = "relay/notes-steer";
/// The visible message that tells the model a reset did not happen.
pub const RESET_FAILED_TYPE: &str = "relay/reset-failed";
/// customType of the record of a written handoff (path and duplicate fingerprint).
pub const HANDOFF_TYPE: &str = "relay/handoff";
/// customType of the policy's settle continuation asking for a handoff.
pub const HANDOFF_REQUEST_TYPE: &str = "relay/handoff-request";
/// customType of the record of a resume check run after a committed handoff reset (its result,
/// for the window it belongs to).
pub const RESUME_CHECK_TYPE: &str = "relay/resume-check";
/// customType of the record of a new window's watch check (the recorded jobs and watches the
/// pi-jobs registry no longer lists), for the window it belongs to.
pub const WATCH_CHECK_TYPE: &str = "relay/watch-check";
/// customType of the record of a tool-result clearing (`{windowId, items, tokensFreed,
/// tokensBefore, stubs}`): the stubs every later request of the window carries instead of the
/// results (applied in the `context` hook); the status line, `/relay` and `relay timeline` count
/// clearings from it. An earlier Relay appended one `context_edit` entry per result with it.
pub const CLEARING_TYPE: &str = "relay/clear-tool-results";
/// customType of the record of a new window's stale-handoff check (what differs between the
/// workspace its handoff recorded and the workspace when the window started), for its window.
pub const STALE_CHECK_TYPE: &str = "relay/stale-check";
/// customType of the record that Pi's own summarizer (let through while the context guard is
/// off) failed in a window, and of the record that the window's one mechanical fallback was
/// used (`spent`): the fallback's state is a projection of the branch, so /reload and `pi -c`
/// keep it.
pub const NATIVE_FALLBACK_TYPE: &str = "relay/native-fallback";
/// customType of the record that a mode or guard change disarmed the compaction-failure fallback
/// of a window (Relay gave up resetting it): the disarm is a projection of the branch, so
/// /reload, /tree and `pi -c` do not arm it again.
pub const FALLBACK_DISARMED_TYPE: &str = "relay/fallback-disarmed";
/// customType of the record of the user's pinned instructions (`/relay pin`, `/relay unpin`):
/// each record holds the whole list after the change, so the newest on the branch is in force.
pub const PINS_TYPE: &str = "relay/pins";
/// The `customType` of the custom session entry carrying one note operation in its `data`.
pub const NOTE_CUSTOM_TYPE: &str = "relay/note";

/// A `custom` entry for `pi.appendEntry(customType, data)`; `data` is one of the typed records
/// of [`crate::records`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Marker {
    pub custom_type: String,
    #[cfg_attr(test, ts(type = "unknown"))]
    pub data: Value,
}

/// The version of every record this Relay writes.
pub const VERSION: u64 = 1;

/// The `relay` tag of a compaction's `details` that marks one of Relay's windows.
pub const WINDOW_TAG: &str = "window";

/// A record: serialized with [`Record::to_value`], read back with [`Record::read`].
pub trait Record: Serialize + DeserializeOwned {
    /// The record as JSON (what the session holds).
    fn to_value(&self) -> Value {
        // Serializing these structs cannot fail: every map key is a string.
        serde_json::to_value(self).unwrap_or_default()
    }

    /// The record read back from what a session holds, or `None` when it does not have the
    /// record's required fields (see the module documentation).
    fn read(value: &Value) -> Option<Self> {
        Self::deserialize(value).ok()
    }
}

/// A record written as a `custom` entry (`pi.appendEntry(customType, data)`).
pub trait CustomRecord: Record {
    /// Its `customType`.
    const CUSTOM_TYPE: &'static str;

    /// The entry to append.
    fn marker(&self) -> Marker {
        Marker {
            custom_type: Self::CUSTOM_TYPE.into(),
            data: self.to_value(),
        }
    }
}

/// A field read leniently: absent, `null` or of another type, it is its default.
fn lenient<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let value = Value::deserialize(d)?;
    Ok(serde_json::from_value(value).unwrap_or_default())
}

/// Whether a flag is unset (left out when written).
fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A record struct whose lenient fields say so with one word instead of a serde attribute block
/// each: `lenient` (absent, `null` or of another type, it reads as its default: [`lenient`]),
/// `lenient skip("Option::is_none")` (also left out when written as `None`; any predicate, such
/// as `"is_false"`, `"is_zero"`, `"Vec::is_empty"`). An unmarked field keeps its own attributes:
/// the required fields.
macro_rules! record_struct {
    ($(#[$m:meta])* pub struct $name:ident { $($body:tt)* }) => {
        record_struct!(@fields [$(#[$m])* pub struct $name] [] $($body)*);
    };
    (@fields $head:tt [$($done:tt)*]
        $(#[$fm:meta])* lenient skip($skip:literal) pub $f:ident : $t:ty, $($rest:tt)*) => {
        record_struct!(@fields $head [$($done)* $(#[$fm])*
            #[serde(default, deserialize_with = "lenient", skip_serializing_if = $skip)]
            pub $f: $t,] $($rest)*);
    };
    (@fields $head:tt [$($done:tt)*]
        $(#[$fm:meta])* lenient pub $f:ident : $t:ty, $($rest:tt)*) => {
        record_struct!(@fields $head [$($done)* $(#[$fm])*
            #[serde(default, deserialize_with = "lenient")]
            pub $f: $t,] $($rest)*);
    };
    (@fields $head:tt [$($done:tt)*]
        $(#[$fm:meta])* pub $f:ident : $t:ty, $($rest:tt)*) => {
        record_struct!(@fields $head [$($done)* $(#[$fm])* pub $f: $t,] $($rest)*);
    };
    (@fields [$($head:tt)*] [$($done:tt)*]) => {
        $($head)* { $($done)* }
    };
}

record_struct! {
    /// The window marker: a reset's compaction `details`, `{relay: "window", v, windowId,
    /// previousWindowId, attempt, source, kind, commit, handoffPath}`.
    ///
    /// `kind` is `"handoff"` or `"reset"` since seed 004; before, it held the commit type (and
    /// there was no `commit`): [`crate::entry::WindowMarker::of`] reads both. `importedFrom` and
    /// `fingerprint` appear only on another package's compaction that `entry::adopt` read as
    /// Relay's.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct WindowRecord {
        /// Always [`WINDOW_TAG`]; a compaction with another tag (or none) is not Relay's.
        pub relay: String,
        lenient pub v: u64,
        lenient skip("Option::is_none") pub window_id: Option<String>,
        lenient skip("Option::is_none") pub previous_window_id: Option<String>,
        lenient skip("Option::is_none") pub attempt: Option<u64>,
        /// The reset's source (`new_context`, `handoff`, `overflow`, …).
        lenient skip("Option::is_none") pub source: Option<String>,
        /// `"handoff"` or `"reset"` (earlier: the commit type, or `null`).
        lenient pub kind: Option<String>,
        /// The budget commit the reset stands for, or `null`.
        lenient pub commit: Option<String>,
        /// The handoff file the window opens with, or `null`.
        lenient pub handoff_path: Option<String>,
        /// The package whose compaction this was read from (never written by Relay).
        lenient skip("Option::is_none") pub imported_from: Option<String>,
        /// pi-context-budget's duplicate back-off fingerprint (never written by Relay).
        lenient skip("Option::is_none") pub fingerprint: Option<HandoffFingerprint>,
    }
}

impl Record for WindowRecord {
    fn read(value: &Value) -> Option<Self> {
        Self::deserialize(value)
            .ok()
            .filter(|r| r.relay == WINDOW_TAG)
    }
}

impl WindowRecord {
    /// The marker of a reset Relay installs now.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        window_id: &str,
        previous_window_id: &str,
        attempt: u64,
        source: &str,
        kind: &str,
        commit: Option<&str>,
        handoff_path: Option<&str>,
    ) -> Self {
        WindowRecord {
            relay: WINDOW_TAG.into(),
            v: VERSION,
            window_id: Some(window_id.into()),
            previous_window_id: Some(previous_window_id.into()),
            attempt: Some(attempt),
            source: Some(source.into()),
            kind: Some(kind.into()),
            commit: commit.map(str::to_string),
            handoff_path: handoff_path.map(str::to_string),
            imported_from: None,
            fingerprint: None,
        }
    }
}

/// Whether a compaction's `details` is Relay's window marker (`relay: "window"`).
pub fn is_relay_window(details: &Value) -> bool {
    #[derive(Deserialize)]
    struct Tag<'a> {
        #[serde(borrow)]
        relay: &'a str,
    }
    Tag::deserialize(details).is_ok_and(|t| t.relay == WINDOW_TAG)
}

/// The window id a compaction's `details` names when it is Relay's window marker.
pub fn relay_window_id(details: &Value) -> Option<String> {
    WindowRecord::read(details)?.window_id
}

/// The window id a record of Relay's names (`windowId` of a `relay/*` entry's `data` or
/// message's `details`), borrowed from it.
pub fn named_window_id(fields: &Value) -> Option<&str> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Named<'a> {
        #[serde(borrow, default)]
        window_id: Option<&'a str>,
    }
    Named::deserialize(fields).ok()?.window_id
}

record_struct! {
    /// The entry appended just before a reset's compaction (`relay/reset`): its id is the
    /// compaction's `firstKeptEntryId`.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ResetMarkerRecord {
        lenient pub v: u64,
        pub window_id: String,
        lenient pub attempt: u64,
        lenient pub source: String,
    }
}

impl Record for ResetMarkerRecord {}
impl CustomRecord for ResetMarkerRecord {
    const CUSTOM_TYPE: &'static str = RESET_MARKER_TYPE;
}

impl ResetMarkerRecord {
    pub fn new(window_id: &str, attempt: u64, source: &str) -> Self {
        ResetMarkerRecord {
            v: VERSION,
            window_id: window_id.into(),
            attempt,
            source: source.into(),
        }
    }
}

record_struct! {
    /// One note operation (`relay/note`): `{v, kind: "write"|"append", path, content, atMs}`.
    /// Validated into a [`crate::notes::NoteOp`] by [`crate::notes::NoteOp::from_data`].
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct NoteRecord {
        lenient pub v: u64,
        pub kind: String,
        pub path: String,
        pub content: String,
        /// Milliseconds since the epoch; kept as written, so that a bad timestamp is reported as one.
        pub at_ms: Value,
    }
}

impl Record for NoteRecord {}
impl CustomRecord for NoteRecord {
    const CUSTOM_TYPE: &'static str = NOTE_CUSTOM_TYPE;
}

impl NoteRecord {
    /// The strict reading of a note operation's `data`: a missing or mistyped field is an error
    /// naming it (`path: invalid type: …`).
    pub fn parse(data: &Value) -> Result<NoteRecord, String> {
        serde_path_to_error::deserialize(data).map_err(|e| e.to_string())
    }
}

record_struct! {
    /// The record of a written handoff (`relay/handoff`): `{v, path, fingerprint, launchPrompt,
    /// jobs?, workspace?}`. A committed handoff's window marker names the same `path`.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct HandoffRecord {
        lenient pub v: u64,
        pub path: String,
        pub fingerprint: HandoffFingerprint,
        /// The handoff's launch prompt for a relaunch, or `null`.
        lenient pub launch_prompt: Option<String>,
        /// The jobs and watches recorded for the next window's watch check (absent: no registry).
        lenient skip("Option::is_none") pub jobs: Option<Vec<RecordedJob>>,
        /// The workspace recorded for the next window's stale-handoff check (absent: not collected).
        lenient skip("Option::is_none") pub workspace: Option<WorkspaceRecord>,
    }
}

impl Record for HandoffRecord {}
impl CustomRecord for HandoffRecord {
    const CUSTOM_TYPE: &'static str = HANDOFF_TYPE;
}

record_struct! {
    /// The result of the resume check run for a window (`relay/resume-check`): `{v, windowId, atMs,
    /// result}`.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ResumeCheckRecord {
        lenient pub v: u64,
        pub window_id: String,
        lenient pub at_ms: i64,
        pub result: CheckResult,
    }
}

impl Record for ResumeCheckRecord {}
impl CustomRecord for ResumeCheckRecord {
    const CUSTOM_TYPE: &'static str = RESUME_CHECK_TYPE;
}

record_struct! {
    /// A window's watch check (`relay/watch-check`): `{v, windowId, atMs, missing}`, the recorded
    /// jobs and watches the live registry no longer listed.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct WatchCheckRecord {
        lenient pub v: u64,
        pub window_id: String,
        lenient pub at_ms: i64,
        pub missing: Vec<RecordedJob>,
    }
}

impl Record for WatchCheckRecord {}
impl CustomRecord for WatchCheckRecord {
    const CUSTOM_TYPE: &'static str = WATCH_CHECK_TYPE;
}

record_struct! {
    /// A window's stale-handoff check (`relay/stale-check`): `{v, windowId, atMs, report,
    /// recheck?}`. A report that does not parse still counts as a check that ran.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct StaleCheckRecord {
        lenient pub v: u64,
        pub window_id: String,
        lenient pub at_ms: i64,
        lenient skip("Option::is_none") pub report: Option<StaleReport>,
        /// Run again at a session start (the workspace moved since the window's last check).
        lenient skip("is_false") pub recheck: bool,
    }
}

impl Record for StaleCheckRecord {}
impl CustomRecord for StaleCheckRecord {
    const CUSTOM_TYPE: &'static str = STALE_CHECK_TYPE;
}

record_struct! {
    /// A tool-result clearing (`relay/clear-tool-results`): `{v, windowId, items, tokensFreed,
    /// tokensBefore, stubs}`. `stubs` (absent before it was added; such a clearing's stubs are
    /// the `context_edit` entries appended with it) are what replaces each result in the
    /// window's later requests.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ClearingRecord {
        lenient pub v: u64,
        lenient pub window_id: String,
        lenient pub items: u64,
        lenient pub tokens_freed: u64,
        lenient pub tokens_before: Option<u64>,
        lenient skip("Vec::is_empty") pub stubs: Vec<ClearedStub>,
    }
}

record_struct! {
    /// One result a clearing replaced: its entry (`id`), the tool call it answers (`call`, with
    /// `nth` counting the earlier results of the window that answer a call of the same id, so
    /// that a provider reusing call ids cannot make one stub replace two results) and its stub.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ClearedStub {
        lenient pub id: String,
        lenient pub call: String,
        lenient skip("is_zero") pub nth: u32,
        lenient pub text: String,
    }
}

impl Record for ClearingRecord {}
impl CustomRecord for ClearingRecord {
    const CUSTOM_TYPE: &'static str = CLEARING_TYPE;
}

record_struct! {
    /// The guard-off native fallback of a window (`relay/native-fallback`): `{v, windowId}` when
    /// Pi's own summarizer failed in it (the window's next manual or threshold compaction is
    /// Relay's mechanical reset), `{v, windowId, spent: true}` when that reset was chosen.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct NativeFallbackRecord {
        lenient pub v: u64,
        pub window_id: String,
        lenient skip("is_false") pub spent: bool,
    }
}

impl Record for NativeFallbackRecord {}
impl CustomRecord for NativeFallbackRecord {
    const CUSTOM_TYPE: &'static str = NATIVE_FALLBACK_TYPE;
}

record_struct! {
    /// The user's pinned instructions after a `/relay pin` or `/relay unpin` (`relay/pins`):
    /// `{v, pins: [text, …]}`, the whole list in force from this entry on (the newest record on
    /// the branch wins). `pins` is required: a record without it stands for nothing.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct PinsRecord {
        lenient pub v: u64,
        pub pins: Vec<String>,
    }
}

impl Record for PinsRecord {}
impl CustomRecord for PinsRecord {
    const CUSTOM_TYPE: &'static str = PINS_TYPE;
}

record_struct! {
    /// A mode or guard change disarmed the compaction-failure fallback of a window
    /// (`relay/fallback-disarmed`): `{v, windowId}`. The window's later give-up arms it again.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct FallbackDisarmedRecord {
        lenient pub v: u64,
        pub window_id: String,
    }
}

impl Record for FallbackDisarmedRecord {}
impl CustomRecord for FallbackDisarmedRecord {
    const CUSTOM_TYPE: &'static str = FALLBACK_DISARMED_TYPE;
}

record_struct! {
    /// The `details` of a low-budget reminder (`relay/reminder`): `{v, windowId}`, the window it
    /// was written for (absent in pi-context's guidance, which stands for the window it is in).
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ReminderDetails {
        lenient pub v: u64,
        lenient skip("Option::is_none") pub window_id: Option<String>,
    }
}

impl Record for ReminderDetails {}

record_struct! {
    /// The `details` of a reset-failed notice (`relay/reset-failed`): `{v, attempt, source, retry,
    /// failures, failure, error}`.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ResetFailedDetails {
        lenient pub v: u64,
        lenient pub attempt: u64,
        /// The failed reset's source (`manual`: the user's `/compact`, not Relay's own).
        lenient pub source: Option<String>,
        /// Relay retries the reset.
        lenient pub retry: bool,
        /// Relay's own failures in the window so far (0 for the user's).
        lenient pub failures: u64,
        /// `benign`, `transient` or `persistent`.
        lenient pub failure: Option<String>,
        /// Pi's error text, or `null`.
        lenient pub error: Option<String>,
    }
}

impl Record for ResetFailedDetails {}

impl ResetFailedDetails {
    /// The failure was Relay's own reset (not the user's `/compact`).
    pub fn owned(&self) -> bool {
        self.source.as_deref() != Some("manual")
    }

    /// The failure will not go away by retrying.
    pub fn persistent(&self) -> bool {
        self.failure.as_deref() == Some("persistent")
    }
}

record_struct! {
    /// The `details` of a custom message whose text is its content (`relay/boot`,
    /// `relay/notes-steer`, `relay/continue`, `relay/continue-task`, `relay/handoff-request`):
    /// `{v}`, and `idle: true` on the budget policy's idle handoff request (absent on every other
    /// message, and on an idle request an earlier Relay wrote). Earlier Relays wrote none.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    pub struct MessageDetails {
        lenient pub v: u64,
        lenient skip("is_false") pub idle: bool,
    }
}

impl Record for MessageDetails {}

impl MessageDetails {
    /// Today's details, as JSON.
    pub fn current() -> Value {
        MessageDetails::of(false)
    }

    /// The details of the idle handoff request (`relay/handoff-request`): `{v, idle: true}`.
    pub fn idle_request() -> Value {
        MessageDetails::of(true)
    }

    fn of(idle: bool) -> Value {
        MessageDetails { v: VERSION, idle }.to_value()
    }
}

#[cfg(test)]
mod tests;
