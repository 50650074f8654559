//! What the host's jobs give back about the world outside the engine: a `git` job's facts and a
//! `facts` job's (Pi's session name, the integrations' registries, the stores' places).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::wire::GitFacts;
use crate::handoff::GitState;
use crate::integrations::StoreFacts;
use crate::staleness::WorkspaceRecord;

/// The git facts a `git` job gives back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GitWire {
    pub repo_root: Option<String>,
    pub branch: Option<String>,
    pub head: Option<String>,
    pub state: GitState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceRecord>,
}

impl From<GitWire> for GitFacts {
    fn from(g: GitWire) -> Self {
        GitFacts {
            repo_root: g.repo_root,
            branch: g.branch,
            head: g.head,
            state: g.state,
            workspace: g.workspace,
        }
    }
}

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
