//! Effects Relay performs for both front ends: atomic file writes, the event log, session-file
//! reading, git metadata.

pub mod session;

pub use session::{find_sessions, read_session, SessionReadError};
