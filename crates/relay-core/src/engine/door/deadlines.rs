//! How long the host gives each kind of job (milliseconds from the input's `nowMs`). The runner
//! in Rust has its own bounds as well (git's deadline, the resume check's timeout); the host's
//! deadline is the last word: a job still running then counts as failed.

/// Git metadata and the handoff's workspace record.
pub const GIT_MS: i64 = 3_000;
/// The integration stores on disk (regular files only).
pub const STORES_MS: i64 = 2_000;
/// The operator's resume check (30 s timeout, 1 s drain).
pub const RESUME_MS: i64 = 32_000;
/// The stale-handoff check (git and the file stamps).
pub const STALE_MS: i64 = 5_000;
/// Facts only the host has (the session's name, the in-process registries).
pub const FACTS_MS: i64 = 1_000;
/// Choosing a handoff file's number and writing it.
pub const FILE_MS: i64 = 5_000;
