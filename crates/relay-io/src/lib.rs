//! Effects Relay performs for both front ends: atomic file writes, the event log, session-file
//! reading, git metadata.

pub mod fsx;
pub mod git;
pub mod handoff_files;
pub mod session;
pub mod telemetry;

pub use session::{find_sessions, read_session, SessionReadError};
