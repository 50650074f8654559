//! Effects Relay performs for both front ends: atomic file writes, the event log, session-file
//! reading, git metadata, the workspace a handoff records and what it holds at the resume.
//!
//! Nothing here panics on bad input or a failing system call: errors are returned, threads are
//! spawned with fallible builders and a sequential fallback.
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

// Relay runs on Unix only: Linux, and macOS (type-checked, never run there). It uses Unix process
// groups, file modes and O_NOFOLLOW (`std::os::unix`, rustix) with no Windows equivalent.
#[cfg(not(unix))]
compile_error!(
    "Relay does not support Windows (or any non-Unix target): it needs Unix process groups, file modes and O_NOFOLLOW. Build it on Linux or macOS."
);

pub mod boundary;
pub mod effects;
#[cfg(test)]
mod fault_tests;
pub mod fsx;
pub mod git;
pub mod handoff_files;
pub mod integrations;
pub mod jobs;
pub mod relaunch;
pub mod resume_check;
pub mod session;
pub mod telemetry;
pub mod workspace;

pub use session::{find_sessions, read_session, SessionReadError};
