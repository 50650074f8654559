//! The pi-session relaunch marker: what Relay asks the wrapper to relaunch with. The engine
//! makes it ([`super::super::wire::Effect::WriteRelaunchMarker`]); relay-io seals, writes and
//! verifies it (`relay_io::relaunch`, which re-exports this type), and the wrapper reads it.
//!
//! No version field: the marker's version is the MAC's domain (`relay pi-session relaunch marker
//! v1`, in relay-io), and a wrapper refuses a marker with any field it does not know, so a field
//! added here would make an older wrapper refuse every relaunch. A new shape gets a new domain.

use serde::{Deserialize, Serialize};

/// What Relay asks the wrapper to relaunch with (every field required, no other field).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RelaunchMarker {
    pub cwd: String,
    pub launch_prompt: Option<String>,
    pub handoff: String,
    pub session_file: Option<String>,
}
