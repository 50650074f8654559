//! Faults in Relay's file writes, against real processes and real files.
//!
//! Crash tests: a child process (this test binary running the ignored `crash_child` test) performs
//! one real write of a file kind and kills itself with `SIGKILL` at a named step of the write
//! (`RELAY_TEST_CRASH`, [`fsx::Step`]); the parent checks that the child really died there and
//! what is left on disk: the old file whole, the new one absent or whole, never a half file in
//! its place. Symlink tests: a link planted at the final path of each file kind, pointing at a
//! file outside, leaves that file unchanged.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::fsx::test_support::TempDir;
use crate::fsx::{self, Step};
use crate::{handoff_files, telemetry};

/// The file kinds Relay writes. The pi-session relaunch marker and the notes export are
/// `fsx::write_atomic` calls in relay-node and relay-cli; the marker is written here the same way
/// (relay-cli's own test kills the real `relay notes --export`).
const KINDS: [&str; 5] = ["status", "events", "handoff", "sidecar", "marker"];

const MARKER: &str = "4242-0123456789abcdef.json";

fn markdown(version: &str) -> String {
    format!(
        "# Handoff s-{version}\n\n## Goal\n\n{}\n",
        "goal text ".repeat(400)
    )
}

fn sidecar(version: &str) -> Value {
    json!({"version": version, "facts": "fact ".repeat(400)})
}

fn status(version: &str) -> Value {
    json!({"version": version, "phase": "idle", "padding": "p".repeat(4000)})
}

fn event(version: &str) -> Value {
    json!({"event": version, "padding": "e".repeat(2000)})
}

fn marker(version: &str) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"version": version, "sessionFile": "/x/s.jsonl", "padding": "m".repeat(3000)}),
    )
    .unwrap()
}

/// Handoff `n` of version "old" is 1, of "new" 2.
fn seq(version: &str) -> u32 {
    if version == "old" {
        1
    } else {
        2
    }
}

/// One real write of `kind` in `dir`.
fn perform(kind: &str, dir: &Path, version: &str) -> std::io::Result<()> {
    match kind {
        "status" => telemetry::write_status(dir, "s1", &status(version)).map(|_| ()),
        "events" => telemetry::append_event(dir, &event(version)),
        "handoff" | "sidecar" => handoff_files::write_handoff(
            dir,
            "s",
            seq(version),
            &markdown(version),
            &sidecar(version),
        )
        .map(|_| ()),
        "marker" => fsx::write_atomic(&dir.join(MARKER), &marker(version), 0o600),
        other => panic!("unknown kind {other}"),
    }
}

/// The child: performs the write named by the environment (and is expected to die in it).
#[test]
#[ignore = "the child process of the crash tests (run by them with RELAY_CRASH_KIND)"]
fn crash_child() {
    let kind = std::env::var("RELAY_CRASH_KIND").expect("RELAY_CRASH_KIND");
    let dir = PathBuf::from(std::env::var("RELAY_CRASH_DIR").expect("RELAY_CRASH_DIR"));
    perform(&kind, &dir, "new").expect("the write");
}

/// Run the child for `kind` with `RELAY_TEST_CRASH=<step>:<part>` and require that it was killed
/// by `SIGKILL` (the step was reached).
fn crash(kind: &str, dir: &Path, step: Step, part: &str) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "fault_tests::crash_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RELAY_CRASH_KIND", kind)
        .env("RELAY_CRASH_DIR", dir)
        .env("RELAY_TEST_CRASH", format!("{}:{part}", step.name()))
        .output()
        .unwrap();
    assert_eq!(
        out.status.signal(),
        Some(9),
        "{kind} at {}: the child must die by SIGKILL at the step, got {:?}\n{}{}",
        step.name(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The names in `dir` that are not hidden temp files (`.<name>.tmp.…`).
fn visible(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !(n.starts_with('.') && n.contains(".tmp.")))
        .collect();
    names.sort();
    names
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap()
}

const WRITE_STEPS: [Step; 5] = [
    Step::TempCreated,
    Step::TempWritten,
    Step::TempSynced,
    Step::BeforeRename,
    Step::AfterRename,
];

#[test]
fn a_crash_at_any_step_of_a_replacement_leaves_the_old_file_or_the_new_one_whole() {
    let mut tried = 0;
    for kind in ["status", "marker"] {
        for step in WRITE_STEPS {
            let t = TempDir::new("crash-replace");
            perform(kind, &t.0, "old").unwrap();
            let (target, part) = match kind {
                "status" => (telemetry::status_path(&t.0, "s1"), "s1.json"),
                _ => (t.0.join(MARKER), MARKER),
            };
            crash(kind, &t.0, step, part);
            tried += 1;
            let expected = if step == Step::AfterRename {
                "new"
            } else {
                "old"
            };
            let text = fs::read(&target).unwrap();
            match kind {
                "status" => assert_eq!(
                    serde_json::from_slice::<Value>(&text).unwrap(),
                    status(expected),
                    "{kind} at {}",
                    step.name()
                ),
                _ => assert_eq!(text, marker(expected), "{kind} at {}", step.name()),
            }
            let folder = target.parent().unwrap();
            assert_eq!(visible(folder), [part], "{kind} at {}", step.name());
            // The next write works and replaces it.
            perform(kind, &t.0, "new").unwrap();
            assert_eq!(
                fs::read(&target).unwrap().len(),
                if kind == "status" {
                    serde_json::to_string_pretty(&status("new")).unwrap().len() + 1
                } else {
                    marker("new").len()
                }
            );
        }
    }
    assert_eq!(tried, 10);
}

#[test]
fn a_crash_at_any_step_of_a_handoff_keeps_earlier_handoffs_and_never_leaves_a_half_file() {
    for kind in ["handoff", "sidecar"] {
        for step in WRITE_STEPS {
            let t = TempDir::new("crash-handoff");
            perform(kind, &t.0, "old").unwrap();
            let dir = handoff_files::handoff_dir(&t.0);
            let part = if kind == "handoff" {
                "s-2.md"
            } else {
                "s-2.json"
            };
            crash(kind, &t.0, step, part);
            let at = format!("{kind} at {}", step.name());
            // The earlier handoff is whole.
            assert_eq!(
                fs::read_to_string(dir.join("s-1.md")).unwrap(),
                markdown("old"),
                "{at}"
            );
            assert_eq!(read_json(&dir.join("s-1.json")), sidecar("old"), "{at}");
            // The new markdown is absent or whole; so is its sidecar.
            let md_published = kind == "sidecar" || step == Step::AfterRename;
            let json_published = kind == "sidecar" && step == Step::AfterRename;
            let mut want = vec!["s-1.json".to_string(), "s-1.md".to_string()];
            if json_published {
                want.push("s-2.json".into());
            }
            if md_published {
                want.push("s-2.md".into());
            }
            assert_eq!(visible(&dir), want, "{at}");
            if md_published {
                assert_eq!(
                    fs::read_to_string(dir.join("s-2.md")).unwrap(),
                    markdown("new"),
                    "{at}"
                );
            }
            if json_published {
                assert_eq!(read_json(&dir.join("s-2.json")), sidecar("new"), "{at}");
            }
            // The next handoff takes a free number and is written whole.
            let n = handoff_files::next_sequence(&t.0, "s").unwrap();
            assert_eq!(n, if md_published { 3 } else { 2 }, "{at}");
            handoff_files::write_handoff(&t.0, "s", n, &markdown("next"), &sidecar("next"))
                .unwrap();
        }
    }
}

#[test]
fn a_crash_mid_append_keeps_every_earlier_event_and_the_reader_skips_the_torn_line() {
    let t = TempDir::new("crash-append");
    for i in 0..3 {
        perform("events", &t.0, &format!("old{i}")).unwrap();
    }
    let path = telemetry::events_path(&t.0);
    let before = fs::read(&path).unwrap();
    crash("events", &t.0, Step::AppendTorn, "events.jsonl");
    let after = fs::read(&path).unwrap();
    assert!(after.starts_with(&before), "earlier lines untouched");
    assert!(
        after.len() > before.len() && !after.ends_with(b"\n"),
        "a torn line was left"
    );
    let (events, warnings) = telemetry::read_events(&t.0).unwrap();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["old0", "old1", "old2"]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("events.jsonl line 4") && warnings[0].contains("torn"),
        "{warnings:?}"
    );
    // The next append starts on a line of its own: it is whole, the torn one stays skipped.
    perform("events", &t.0, "new").unwrap();
    let (events, warnings) = telemetry::read_events(&t.0).unwrap();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["old0", "old1", "old2", "new"]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("line 4"), "{warnings:?}");
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

/// The final path of each kind's new file.
fn final_path(kind: &str, dir: &Path) -> PathBuf {
    match kind {
        "status" => telemetry::status_path(dir, "s1"),
        "events" => telemetry::events_path(dir),
        "handoff" => handoff_files::handoff_path(dir, "s", 2),
        "sidecar" => handoff_files::handoff_path(dir, "s", 2).with_extension("json"),
        _ => dir.join(MARKER),
    }
}

#[test]
fn a_link_planted_at_the_final_path_is_never_followed() {
    for kind in KINDS {
        let t = TempDir::new("link");
        let outside = t.0.join("outside.txt");
        fs::write(&outside, "the user's file").unwrap();
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o644)).unwrap();
        let state = t.0.join("state");
        let target = final_path(kind, &state);
        fsx::create_private_dir(target.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside, &target).unwrap();
        let result = perform(kind, &state, "new");
        assert_eq!(
            fs::read_to_string(&outside).unwrap(),
            "the user's file",
            "{kind}: the link's target is unchanged"
        );
        assert_eq!(
            mode(&outside),
            0o644,
            "{kind}: the target's mode is unchanged"
        );
        match kind {
            // Replacements put a private file where the link was.
            "status" | "sidecar" | "marker" => {
                result.unwrap_or_else(|e| panic!("{kind}: {e}"));
                let meta = fs::symlink_metadata(&target).unwrap();
                assert!(meta.file_type().is_file(), "{kind}: the link was replaced");
                assert_eq!(mode(&target), 0o600, "{kind}");
            }
            // A handoff never replaces anything; the log is never appended through a link.
            _ => {
                let e = result.expect_err(kind);
                if kind == "events" {
                    assert!(e.to_string().contains("symbolic link"), "{e}");
                } else {
                    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
                }
                assert!(fs::symlink_metadata(&target)
                    .unwrap()
                    .file_type()
                    .is_symlink());
            }
        }
    }
}

#[test]
fn every_file_is_0600_in_0700_folders_and_existing_folders_keep_their_mode() {
    for kind in KINDS {
        let t = TempDir::new("modes");
        let state = t.0.join("fresh");
        perform(kind, &state, "new").unwrap();
        let target = final_path(kind, &state);
        assert_eq!(mode(&target), 0o600, "{kind}");
        let mut folder = target.parent().unwrap();
        while folder != t.0 {
            assert_eq!(mode(folder), 0o700, "{kind}: {}", folder.display());
            folder = folder.parent().unwrap();
        }
        // A folder that exists with wider modes is the user's: left as it is; the file is 0600.
        let shared = t.0.join("shared");
        fs::create_dir_all(final_path(kind, &shared).parent().unwrap()).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o755)).unwrap();
        perform(kind, &shared, "new").unwrap();
        assert_eq!(mode(&final_path(kind, &shared)), 0o600, "{kind}");
        assert_eq!(mode(&shared), 0o755, "{kind}");
    }
    // An existing event log with wider modes is narrowed on the next append.
    let t = TempDir::new("modes-log");
    let log = telemetry::events_path(&t.0);
    fs::write(&log, "{}\n").unwrap();
    fs::set_permissions(&log, fs::Permissions::from_mode(0o644)).unwrap();
    perform("events", &t.0, "new").unwrap();
    assert_eq!(mode(&log), 0o600);
}
