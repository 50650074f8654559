//! cargo-fuzz target; the properties are in `checks/note_replay.rs` (shared with relay-core's
//! `fuzz_replay` test, which replays the seeds and the minimized corpus on stable Rust).
#![no_main]

#[path = "../checks/note_replay.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check(data));
