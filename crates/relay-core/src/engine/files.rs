//! Every file Relay writes outside the session, one serde type each (the session's own records
//! are [`crate::records`]):
//!
//! - `status/<sessionId>.json`: [`StatusFile`] (with `version`);
//! - a line of `events.jsonl`: [`TelemetryLine`] around a [`TelemetryEvent`] (no version: see
//!   `telemetry.rs`);
//! - a handoff's JSON sidecar: [`HandoffSidecar`] (with `version`);
//! - the pi-session relaunch marker: [`RelaunchMarker`] (versioned by its seal's domain: see
//!   `relaunch.rs`), the one type relay-io seals and the wrapper reads.
//!
//! The engine makes them as data (effects and jobs); the binding and relay-io write them.

mod relaunch;
mod sidecar;
mod status;
mod telemetry;

pub use relaunch::RelaunchMarker;
pub use sidecar::{HandoffSidecar, SidecarGit, SidecarKind, SIDECAR_VERSION};
pub use status::{LastAction, LastHandoff, Role, StatusFile, WrapperStatus, STATUS_VERSION};
pub use telemetry::{TelemetryEvent, TelemetryLine};

#[cfg(test)]
mod tests;
