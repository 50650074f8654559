//! The fuzz targets' corpus replay, on stable Rust, in `make test`: every committed input of
//! every target (`fuzz/seeds/<target>/` and the minimized corpus `fuzz/minimized/<target>/`) runs
//! through the same property checks as the target (`fuzz/checks/<target>.rs`, included here).
//! A finding of the fuzzer, once fixed, is committed to `fuzz/minimized/<target>/` and stays a
//! regression test here.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};

#[path = "../../../fuzz/checks/config.rs"]
mod config;
#[path = "../../../fuzz/checks/handoff.rs"]
mod handoff;
#[path = "../../../fuzz/checks/note_replay.rs"]
mod note_replay;
#[path = "../../../fuzz/checks/session_line.rs"]
mod session_line;
#[path = "../../../fuzz/checks/tool_args.rs"]
mod tool_args;

/// Every committed input of `target`, with its bytes; fails when there is none.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut out = Vec::new();
    for dir in ["seeds", "minimized"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join(target)) else {
            continue;
        };
        for e in entries {
            let path = e.unwrap().path();
            if path.is_file() {
                let bytes = std::fs::read(&path).unwrap();
                out.push((path, bytes));
            }
        }
    }
    out.sort();
    assert!(
        out.iter().filter(|(_, b)| !b.is_empty()).count() >= 2,
        "{target}: fewer than two committed inputs"
    );
    out
}

fn replay(target: &str, check: fn(&[u8])) {
    for (path, bytes) in inputs(target) {
        if let Err(e) = std::panic::catch_unwind(|| check(&bytes)) {
            let msg = e
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| e.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            panic!("{target}: {} fails: {msg}", path.display());
        }
    }
}

#[test]
fn session_line_corpus() {
    replay("session_line", session_line::check);
}

#[test]
fn note_replay_corpus() {
    replay("note_replay", note_replay::check);
}

#[test]
fn config_corpus() {
    replay("config", config::check);
}

#[test]
fn handoff_corpus() {
    replay("handoff", handoff::check);
}

#[test]
fn tool_args_corpus() {
    replay("tool_args", tool_args::check);
}

/// Finding 4's committed input keeps what made it a regression test: it passes `note_replay`'s
/// gates for big contents and builds its note of 500,001 line breaks (the gates changed twice to
/// make the target faster; neither may turn this input into a small one).
#[test]
fn finding_4_still_builds_its_big_note() {
    let data = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/minimized/note_replay/read-past-64k.bin"
    ))
    .unwrap();
    let (ops, big) = note_replay::decoded(&data);
    assert!(big, "the input no longer passes the hash gate");
    let largest = ops
        .iter()
        .filter_map(|o| o["content"].as_str().map(str::len))
        .max();
    assert_eq!(largest, Some(500_001));
}
