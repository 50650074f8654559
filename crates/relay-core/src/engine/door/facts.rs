//! What the host's jobs give back about the world outside the engine: a `git` job's facts and a
//! `facts` job's (Pi's session name, the integrations' registries); the stores' places, which the
//! engine names from the configuration's facts.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::wire::{GitFacts, Moment};
use super::super::Engine;
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
}

impl Engine {
    /// Where the integrations' stores are for this session at `moment`: the process's facts from
    /// the configuration (agent directory, `PI_QUESTIONS_HOME`, temp directory, user id), this
    /// session's id and the moment's cwd.
    pub(in crate::engine) fn store_facts(&self, moment: &Moment) -> StoreFacts {
        let sources = self.last_sources.as_ref();
        StoreFacts {
            agent_dir: sources.and_then(|s| s.agent_dir.clone()),
            questions_home: sources.and_then(|s| s.questions_home.clone()),
            tmp_dir: sources.and_then(|s| s.tmp_dir.clone()),
            uid: sources.and_then(|s| s.uid),
            session_id: self.session_id().to_string(),
            cwd: moment.cwd.clone(),
        }
    }
}
