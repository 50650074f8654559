//! What the host's jobs give back about the world outside the engine: a `git` job's facts and a
//! `facts` job's (Pi's session name, the integrations' registries, the stores' places).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::wire::GitFacts;
use crate::integrations::StoreFacts;

/// The git facts a `git` job gives back: the handoff's [`GitFacts`] as the job writes them.
pub type GitWire = GitFacts;

/// What a `facts` job gives back (each field only when asked for).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct HostFacts {
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub session_name: Option<String>,
    #[serde(default)]
    #[cfg_attr(test, ts(optional, type = "unknown[] | null"))]
    pub jobs: Option<Vec<Value>>,
    #[serde(default)]
    #[cfg_attr(test, ts(optional, type = "unknown[] | null"))]
    pub subagents: Option<Vec<Value>>,
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub store: Option<StoreFacts>,
}
