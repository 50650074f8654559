//! Reading the optional integrations' stores on disk for a handoff (read-only, never written):
//! the pending-questions store, the issue-claim registry and this session's subagent task
//! directory. Blocking file IO: the addon runs it on a worker thread, never on Pi's event loop.
//! What the records mean (whose, open, pending) is decided in `relay_core::integrations`.
//!
//! Every reader answers `None` when its store is absent or unreadable ("unavailable"), and leaves
//! out (and counts) what it cannot parse; nothing here fails a handoff.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::SystemTime;

use relay_core::integrations::{StoreContents, StorePaths, QUESTION_ITEMS_SCANNED};
use serde_json::Value;

/// A revision file larger than this is treated as corrupt.
const MAX_REVISION_BYTES: u64 = 256 * 1024;
/// Only the last this many bytes of the claim registry are read (it is append-only).
const MAX_REGISTRY_BYTES: u64 = 4 * 1024 * 1024;
/// At most this many task ids are taken from the task directory.
const MAX_TASK_IDS: usize = 200;

/// Read every store named in `paths`.
pub fn read_stores(paths: &StorePaths) -> StoreContents {
    let (questions, questions_corrupt) = match paths.questions_home.as_deref() {
        Some(home) => match read_questions(Path::new(home)) {
            Some((items, corrupt)) => (Some(items), corrupt),
            None => (None, 0),
        },
        None => (None, 0),
    };
    let (claims, claims_corrupt) = match paths.claims_file.as_deref() {
        Some(file) => match read_claims(Path::new(file)) {
            Some((lines, corrupt)) => (Some(lines), corrupt),
            None => (None, 0),
        },
        None => (None, 0),
    };
    StoreContents {
        questions,
        questions_corrupt,
        claims,
        claims_corrupt,
        task_ids: paths
            .task_dir
            .as_deref()
            .and_then(|d| read_task_ids(Path::new(d))),
    }
}

/// The latest revision (the `*.json` file with the greatest name) of each of the newest
/// [`QUESTION_ITEMS_SCANNED`] item directories under `home`, by modification time, newest first;
/// and how many of those items could not be read or parsed. `None` when `home` cannot be listed.
pub fn read_questions(home: &Path) -> Option<(Vec<Value>, u32)> {
    let mut items: Vec<(SystemTime, std::path::PathBuf)> = fs::read_dir(home)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            meta.is_dir()
                .then(|| (meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), e.path()))
        })
        .collect();
    items.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    items.truncate(QUESTION_ITEMS_SCANNED);
    let mut out = Vec::new();
    let mut corrupt = 0u32;
    for (_, dir) in items {
        match latest_revision(&dir) {
            Some(v) => out.push(v),
            None => corrupt = corrupt.saturating_add(1),
        }
    }
    Some((out, corrupt))
}

/// `path` opened for reading when it is a regular file (symbolic links followed), else `None`.
/// Opened without blocking, so that a FIFO or a device put in a store's place can never hang
/// the reader (a FIFO opened this way returns at once, and is then refused).
fn open_regular(path: &Path) -> Option<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

fn latest_revision(dir: &Path) -> Option<Value> {
    let latest = fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .max()?;
    let file = open_regular(&latest)?;
    let mut text = String::new();
    file.take(MAX_REVISION_BYTES + 1)
        .read_to_string(&mut text)
        .ok()?;
    if text.len() as u64 > MAX_REVISION_BYTES {
        return None;
    }
    let v: Value = serde_json::from_str(&text).ok()?;
    v.is_object().then_some(v)
}

/// The claim registry's JSON object lines (the last [`MAX_REGISTRY_BYTES`] of it), and how many
/// lines were not JSON objects. `None` when the file cannot be read.
pub fn read_claims(file: &Path) -> Option<(Vec<Value>, u32)> {
    let mut f = open_regular(file)?;
    let len = f.metadata().ok()?.len();
    let skip = len.saturating_sub(MAX_REGISTRY_BYTES);
    f.seek(SeekFrom::Start(skip)).ok()?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = text.lines();
    if skip > 0 {
        // The first line was cut by the seek.
        lines.next();
    }
    let mut out = Vec::new();
    let mut corrupt = 0u32;
    for line in lines.filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Value>(line) {
            Ok(v) if v.is_object() => out.push(v),
            _ => corrupt = corrupt.saturating_add(1),
        }
    }
    Some((out, corrupt))
}

/// The ids of `<id>.output` files in a subagent task directory, sorted. `None` when it cannot be
/// listed.
pub fn read_task_ids(dir: &Path) -> Option<Vec<String>> {
    let mut ids: Vec<String> = fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let id = name.strip_suffix(".output")?;
            (!id.is_empty()).then(|| id.to_string())
        })
        .collect();
    ids.sort();
    ids.truncate(MAX_TASK_IDS);
    Some(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::test_support::TempDir;
    use std::time::Duration;

    #[test]
    fn a_fifo_in_the_claims_registry_place_is_unavailable_at_once() {
        let dir = TempDir::new("fifo-claims");
        let fifo = dir.join("registry.jsonl");
        crate::fsx::test_support::make_fifo(&fifo);
        // No writer ever opens it: a blocking open or read would hang here.
        assert_eq!(read_claims(&fifo), None);
    }

    fn set_mtime(path: &Path, secs: u64) {
        let f = fs::File::open(path).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    }

    #[test]
    fn questions_read_the_latest_revision_of_the_newest_items_and_count_corrupt_ones() {
        let home = TempDir::new("questions");
        let item = |name: &str, revs: &[(&str, &str)], mtime: u64| {
            let dir = home.join(name);
            fs::create_dir_all(&dir).unwrap();
            for (file, text) in revs {
                fs::write(dir.join(file), text).unwrap();
            }
            set_mtime(&dir, mtime);
        };
        item(
            "q-old",
            &[("0001.json", r#"{"id":"q-old","status":"open"}"#)],
            1_000,
        );
        item(
            "q-new",
            &[
                (
                    "0001.json",
                    r#"{"id":"q-new","status":"open","title":"first"}"#,
                ),
                (
                    "0002.json",
                    r#"{"id":"q-new","status":"answered","title":"second"}"#,
                ),
                ("notes.txt", "not a revision"),
            ],
            3_000,
        );
        item("q-broken", &[("0001.json", "{not json")], 2_000);
        item("q-empty", &[], 500);
        fs::write(home.join("stray.json"), "{}").unwrap();

        let (items, corrupt) = read_questions(&home).unwrap();
        let ids: Vec<&str> = items.iter().map(|v| v["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            ["q-new", "q-old"],
            "newest first; files beside items are no items"
        );
        assert_eq!(items[0]["status"], "answered", "the latest revision wins");
        assert_eq!(corrupt, 2, "the unparsable and the empty item");
        assert!(read_questions(&home.join("missing")).is_none());
    }

    #[test]
    fn only_the_newest_200_question_items_are_read() {
        let home = TempDir::new("questions-200");
        for i in 0..205u64 {
            let dir = home.join(format!("item-{i:03}"));
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("1.json"), format!(r#"{{"id":"item-{i:03}"}}"#)).unwrap();
            set_mtime(&dir, 10_000 + i);
        }
        let (items, corrupt) = read_questions(&home).unwrap();
        assert_eq!(items.len(), 200);
        assert_eq!(corrupt, 0);
        assert_eq!(items[0]["id"], "item-204");
        assert_eq!(
            items[199]["id"], "item-005",
            "the five oldest are never read"
        );
    }

    #[test]
    fn claims_keep_object_lines_and_count_the_rest() {
        let dir = TempDir::new("claims");
        let file = dir.join("registry.jsonl");
        fs::write(
            &file,
            "{\"sessionId\":\"S\",\"issue\":\"12\"}\nnot json\n[1]\n\n{\"sessionId\":\"T\",\"issue\":\"3\"}\n",
        )
        .unwrap();
        let (lines, corrupt) = read_claims(&file).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["issue"], "12");
        assert_eq!(corrupt, 2);
        assert!(read_claims(&dir.join("none.jsonl")).is_none());
    }

    #[test]
    fn task_ids_are_the_output_files_of_the_directory() {
        let dir = TempDir::new("tasks");
        for name in ["b.output", "a.output", "c.log", ".output"] {
            fs::write(dir.join(name), "").unwrap();
        }
        assert_eq!(read_task_ids(&dir).unwrap(), ["a", "b"]);
        assert!(read_task_ids(&dir.join("missing")).is_none());
    }

    #[test]
    fn read_stores_labels_each_missing_store_unavailable() {
        let dir = TempDir::new("stores");
        let paths = StorePaths {
            questions_home: Some(dir.join("nope").display().to_string()),
            claims_file: None,
            task_dir: Some(dir.display().to_string()),
        };
        let got = read_stores(&paths);
        assert_eq!(got.questions, None);
        assert_eq!(got.claims, None);
        assert_eq!(
            got.task_ids,
            Some(vec![]),
            "an empty directory is an empty inventory"
        );
    }

    /// Fixture stores on disk, read and rendered as the handoff shows them: a corrupt and an
    /// oversized revision, an item without revisions, another session's and a closed question,
    /// corrupt registry lines, a released claim; and a missing store.
    #[test]
    fn sections_rendered_from_fixture_directories() {
        let root = TempDir::new("rendered");
        let home = root.join("user-questions");
        let item = |name: &str, file: &str, text: &str, mtime: u64| {
            let dir = home.join(name);
            fs::create_dir_all(&dir).unwrap();
            if !file.is_empty() {
                fs::write(dir.join(file), text).unwrap();
            }
            set_mtime(&dir, mtime);
        };
        item(
            "a",
            "0001.json",
            r#"{"id":"q-a","sessionId":"S","status":"open","title":"Keep the old CLI flags?"}"#,
            5_000,
        );
        item(
            "b",
            "0001.json",
            r#"{"id":"q-b","sessionId":"S","status":"answered","title":"done"}"#,
            4_000,
        );
        item(
            "c",
            "0001.json",
            r#"{"id":"q-c","sessionId":"T","status":"open","title":"not this session"}"#,
            3_000,
        );
        item("d", "0001.json", "{corrupt", 2_000);
        item(
            "e",
            "0001.json",
            &format!(r#"{{"id":"q-e","title":"{}"}}"#, "x".repeat(300 * 1024)),
            1_500,
        );
        item("f", "", "", 1_000);
        let agent = root.join("agent");
        fs::create_dir_all(agent.join("issue-work")).unwrap();
        fs::write(
            agent.join("issue-work/registry.jsonl"),
            concat!(
                "{\"sessionId\":\"S\",\"repo\":\"acme/relay\",\"issue\":11,\"title\":\"integrations\"}\n",
                "{\"sessionId\":\"S\",\"repo\":\"acme/relay\",\"issue\":9,\"title\":\"old\"}\n",
                "garbage line\n",
                "{\"sessionId\":\"S\",\"repo\":\"acme/relay\",\"issue\":9,\"status\":\"released\"}\n",
            ),
        )
        .unwrap();
        let facts = relay_core::integrations::StoreFacts {
            agent_dir: Some(agent.display().to_string()),
            questions_home: Some(home.display().to_string()),
            tmp_dir: Some(root.join("no-tmp").display().to_string()),
            uid: Some(1),
            session_id: "S".into(),
            cwd: "/w".into(),
        };
        let stores = read_stores(&facts.paths());
        assert_eq!(
            stores.questions_corrupt, 3,
            "corrupt, oversized, no revision"
        );
        assert_eq!(stores.claims_corrupt, 1);
        assert_eq!(stores.task_ids, None, "no task directory");
        let rendered = relay_core::integrations::render(
            &relay_core::integrations::IntegrationFacts {
                jobs: None,
                subagents: None,
                stores: Some(stores),
            },
            "S",
        );
        insta::assert_snapshot!(rendered.markdown());
    }
}
