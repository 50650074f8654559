//! Entries written by the two packages Relay replaces, read as Relay's own.
//!
//! Contract: [`adopt`] runs on every decoded entry (file lines and `getBranch()` objects alike),
//! so the mirror, the history tools, the notes and the `relay` CLI all see one vocabulary. It
//! rewrites only entries whose meaning matches one of Relay's, and leaves every other entry as
//! it was; [`unimported`] names the ones it recognises as theirs but does not import, so the
//! engine can say so once.
//!
//! What is adopted:
//!
//! - **pi-context** note operations (`custom`, `customType: "pi-context/note"`, `data` =
//!   `{op: "write"|"append", path, text, createdAt, updatedAt}`) become Relay note operations
//!   (`relay/note`, a [`crate::records::NoteRecord`] of version 0: `{v: 0, kind, path, content,
//!   atMs: updatedAt}`). An operation without `text` (it
//!   only marks a note stale) has no Relay meaning and stays theirs.
//! - its root boot block (`custom_message` `pi-context/boot`) is Relay's boot block, its
//!   low-budget guidance (`pi-context/guidance`) Relay's reminder, its reset marker
//!   (`pi-context/reset-marker`) Relay's reset marker and its continuation
//!   (`pi-context/continuation`) Relay's continuation.
//! - its reset compactions (`details = {piContext: "reset-v2", windowId}`) are Relay resets
//!   with that window id; a compaction with other `details` keeps Pi's entry id as window id,
//!   which is what pi-context named it too.
//! - **pi-context-budget** committed handoffs (a compaction whose `details.kind` is
//!   `"handoff"`, without Relay's `details.relay`) are Relay handoff windows. The commit type is
//!   read from `details.commit` or `details.trigger`; without one the handoff counts toward the
//!   cap (`budget`), as that package's handoffs do unless they were idle ones. The handoff file
//!   is read from `handoffPath` or `path`, a duplicate back-off fingerprint from `fingerprint`.

use serde_json::{json, Map, Value};

use super::types::EntryKind;
use crate::records::{NoteRecord, Record, WINDOW_TAG};

/// pi-context's `customType` prefix; every entry type it writes starts with it.
pub const PI_CONTEXT_PREFIX: &str = "pi-context/";
/// pi-context-budget's `customType` prefix.
pub const PI_CONTEXT_BUDGET_PREFIX: &str = "pi-context-budget";

/// Commit types Relay knows; another value of the budget package's is kept as it is.
const KNOWN_COMMITS: [&str; 7] = [
    "voluntary",
    "budget",
    "hard",
    "forcedHard",
    "forcedGuard",
    "idle",
    "handoff",
];

/// The entry as Relay reads it: theirs rewritten where the meaning matches, else unchanged.
pub fn adopt(kind: EntryKind) -> EntryKind {
    let mut kind = match kind {
        EntryKind::Custom { custom_type, data } if custom_type == "pi-context/note" => {
            match note_op(&data) {
                Some(op) => EntryKind::Custom {
                    custom_type: crate::records::NOTE_CUSTOM_TYPE.to_string(),
                    data: op,
                },
                None => EntryKind::Custom { custom_type, data },
            }
        }
        EntryKind::Custom { custom_type, data } if custom_type == "pi-context/reset-marker" => {
            EntryKind::Custom {
                custom_type: crate::records::RESET_MARKER_TYPE.to_string(),
                data,
            }
        }
        other => other,
    };
    match &mut kind {
        EntryKind::CustomMessage { custom_type, .. } => {
            let ours = match custom_type.as_str() {
                "pi-context/boot" => crate::records::BOOT_TYPE,
                "pi-context/guidance" => crate::records::REMINDER_TYPE,
                "pi-context/continuation" => crate::records::CONTINUE_TYPE,
                _ => return kind,
            };
            *custom_type = ours.to_string();
        }
        EntryKind::Compaction { details, .. } => *details = window_details(std::mem::take(details)),
        _ => {}
    }
    kind
}

/// A pi-context note operation as Relay's, or `None` when it has no Relay meaning.
fn note_op(data: &Value) -> Option<Value> {
    let op = data.get("op").and_then(Value::as_str)?;
    if op != "write" && op != "append" {
        return None;
    }
    let path = data.get("path").and_then(Value::as_str)?;
    let text = data.get("text").and_then(Value::as_str)?;
    // Relay's replay validates the timestamp (an integer); an invalid one is reported there.
    let at = data
        .get("updatedAt")
        .or_else(|| data.get("createdAt"))
        .cloned()
        .unwrap_or(Value::Null);
    // Relay's note record, of version 0: no Relay wrote it.
    let record = NoteRecord {
        v: 0,
        kind: op.into(),
        path: path.into(),
        content: text.into(),
        at_ms: at,
    };
    Some(record.to_value())
}

/// A reset or handoff compaction of theirs, with Relay's window marker added.
fn window_details(details: Value) -> Value {
    let Value::Object(mut map) = details else {
        return details;
    };
    if map.contains_key("relay") {
        return Value::Object(map);
    }
    let text = |map: &Map<String, Value>, key: &str| {
        map.get(key).and_then(Value::as_str).map(str::to_string)
    };
    if text(&map, "piContext").as_deref() == Some("reset-v2")
        && map.get("windowId").is_some_and(Value::is_string)
    {
        map.insert("relay".into(), json!(WINDOW_TAG));
        map.insert("kind".into(), json!("reset"));
        map.entry("commit").or_insert(Value::Null);
        map.insert("importedFrom".into(), json!("pi-context"));
    } else if text(&map, "kind").as_deref() == Some("handoff") {
        let commit = text(&map, "commit")
            .or_else(|| text(&map, "trigger"))
            .filter(|c| KNOWN_COMMITS.contains(&c.as_str()))
            .map(|c| if c == "handoff" { "budget".into() } else { c })
            .unwrap_or_else(|| "budget".to_string());
        map.insert("relay".into(), json!(WINDOW_TAG));
        map.insert("commit".into(), json!(commit));
        if !map.contains_key("handoffPath") {
            if let Some(path) = text(&map, "path") {
                map.insert("handoffPath".into(), json!(path));
            }
        }
        map.insert("importedFrom".into(), json!("pi-context-budget"));
    }
    Value::Object(map)
}

/// The `customType` of an entry of theirs that [`adopt`] left as it was, if any.
pub fn unimported(kind: &EntryKind) -> Option<&str> {
    let custom_type = match kind {
        EntryKind::Custom { custom_type, .. } | EntryKind::CustomMessage { custom_type, .. } => {
            custom_type.as_str()
        }
        _ => return None,
    };
    (custom_type.starts_with(PI_CONTEXT_PREFIX)
        || custom_type.starts_with(PI_CONTEXT_BUDGET_PREFIX))
    .then_some(custom_type)
}
