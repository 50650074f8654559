//! Golden session files: `tests/golden/*.jsonl`, each written by the real `pi` CLI with an
//! earlier Relay (named in `tests/golden/README.md`) through one scenario
//! (`scripts/record-golden.mjs`): notes written and appended, a window the model opened with
//! `new_context`, a committed handoff with its continuation, and an overflow recovered by a
//! mechanical reset. Today's reader must read every one of them as the Relay that wrote it
//! meant: every line parses, the windows and what opened each, the notes, the handoff's record,
//! the user's requests, every record through its typed struct (`relay_core::records`), and the
//! branch invariants the property test holds (`support/branch.rs`).

use std::collections::HashSet;
use std::path::PathBuf;

use relay_core::engine::{Engine, LoadedBranch};
use relay_core::entry::{branch_indices, parse_session, Entry, EntryKind};
use relay_core::records::{
    HandoffRecord, NoteRecord, Record, ResetMarkerRecord, StaleCheckRecord, WindowRecord, VERSION,
};
use serde_json::{json, Value};

#[path = "support/branch.rs"]
mod branch;

fn golden_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

fn tool(engine: &Engine, name: &str, args: Value) -> Value {
    let h = engine.history();
    let out = match name {
        "history_list_windows" => h.list_windows(&args),
        "history_search_contents" => h.search_contents(&args),
        "notes_read_file" => engine.notes().read_file(&args),
        _ => unreachable!("{name}"),
    };
    assert!(!out.is_error, "{name} {args}: {}", out.text);
    serde_json::from_str(&out.text).unwrap()
}

#[test]
fn every_golden_session_reads_as_the_relay_that_wrote_it_meant() {
    let files = golden_files();
    // One per earlier Relay recorded, and today's: a folder that lost its files fails here.
    assert!(files.len() >= 4, "golden files: {files:?}");
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        let parsed = parse_session(&text);
        assert!(parsed.errors.is_empty(), "{name}: {:?}", parsed.errors);
        let session_id = parsed.header.as_ref().map(|h| h.id.clone()).unwrap();
        let branch: Vec<Entry> = branch_indices(&parsed.entries, None)
            .into_iter()
            .map(|i| parsed.entries[i].clone())
            .collect();
        assert_eq!(branch.len(), parsed.entries.len(), "{name}: one branch");

        let engine = Engine::from(LoadedBranch::of(&session_id, &branch));

        // The windows: the root, the one new_context opened, the handoff's, the overflow's.
        let windows = tool(
            &engine,
            "history_list_windows",
            json!({"recent_first": false}),
        );
        let opened: Vec<(&str, Option<&str>)> = windows["windows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| (w["opened_by"].as_str().unwrap(), w["commit"].as_str()))
            .collect();
        assert_eq!(
            opened,
            [
                ("root", None),
                ("reset", None),
                ("handoff", Some("voluntary")),
                ("reset", None)
            ],
            "{name}"
        );
        assert_eq!(engine.history().window_count(), 4, "{name}");

        // The notes: written in the first window, appended in the second.
        let note = tool(&engine, "notes_read_file", json!({"path": "task/plan.md"}));
        let content = note["content"].as_str().unwrap_or_default();
        assert!(
            content.contains("GOLDEN-PLAN") && content.contains("GOLDEN-STEP-2"),
            "{name}: {note}"
        );

        // The handoff's record opened the third window: its goal, next step and the user's rule.
        let third = windows["windows"][2]["window_id"].as_str().unwrap();
        for needle in [
            "GOLDEN-GOAL",
            "GOLDEN-NEXT",
            "GOLDEN-RULE: keep api/ untouched.",
        ] {
            let hits = tool(
                &engine,
                "history_search_contents",
                json!({"query": needle, "window_id": third}),
            );
            assert!(
                !hits["items"].as_array().unwrap().is_empty(),
                "{name}: {needle} in the handoff's window"
            );
        }

        // Both user requests are on the branch once each, in the windows they were made in.
        for (needle, window) in [("GOLDEN-REQ-1", 0), ("GOLDEN-REQ-2", 2)] {
            let hits = tool(
                &engine,
                "history_search_contents",
                json!({"query": needle, "role": "user"}),
            );
            let windows_of: Vec<&str> = hits["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["window_id"].as_str().unwrap())
                .collect();
            let want = windows["windows"][window]["window_id"].as_str().unwrap();
            assert!(
                windows_of.contains(&want),
                "{name}: {needle} in {want}: {hits}"
            );
        }

        // Every record of Relay's reads through its typed struct (`relay_core::records`), as
        // the version that wrote it (no `v`: before records were versioned).
        let mut records = 0;
        for entry in &branch {
            let (kind, value) = match &entry.kind {
                EntryKind::Compaction { details, .. } if details.get("relay").is_some() => {
                    ("window", details)
                }
                EntryKind::Custom { custom_type, data } => (custom_type.as_str(), data),
                _ => continue,
            };
            let version = match kind {
                "window" => WindowRecord::read(value).map(|r| r.v),
                "relay/reset" => ResetMarkerRecord::read(value).map(|r| r.v),
                "relay/note" => NoteRecord::parse(value).ok().map(|r| r.v),
                "relay/handoff" => HandoffRecord::read(value).map(|r| r.v),
                "relay/stale-check" => StaleCheckRecord::read(value)
                    .filter(|r| r.report.is_some())
                    .map(|r| r.v),
                other => panic!("{name}: a record this test does not know: {other}"),
            };
            let version =
                version.unwrap_or_else(|| panic!("{name}: {kind} does not read: {value}"));
            assert!(version <= VERSION, "{name}: {kind} {value}");
            assert_eq!(version, value.get("v").and_then(Value::as_u64).unwrap_or(0));
            records += 1;
        }
        assert!(records >= 9, "{name}: {records} records");

        // The branch invariants of the property test; the overflow reset restates the newest
        // prompt of its window.
        let restating: HashSet<String> = branch
            .iter()
            .filter(|e| {
                matches!(&e.kind, relay_core::entry::EntryKind::Compaction { details, .. }
                    if details.get("source").and_then(Value::as_str) == Some("overflow"))
            })
            .map(|e| e.id.clone())
            .collect();
        assert_eq!(restating.len(), 1, "{name}");
        branch::check_branch(&branch, &restating).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
