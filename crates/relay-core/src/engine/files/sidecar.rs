//! The JSON sidecar written next to a handoff's markdown (`<sessionId>-<n>.json`): every argument
//! in full (the markdown may cut narrative sections; the sidecar loses nothing), the automatic
//! metadata, the duplicate fingerprint, and what Relay recorded beside them (the integrations'
//! records, the workspace, the resume check). `relay handoffs --json` prints it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::handoff::{
    format_timestamp, GitState, HandoffArgs, HandoffFingerprint, HandoffMeta, SectionCut,
};
use crate::handoff::{heading, narrative_cuts};
use crate::resume_check::CheckResult;
use crate::staleness::WorkspaceRecord;

/// The sidecar's version (`version` in the file; 1 since the first sidecar).
pub const SIDECAR_VERSION: u32 = 1;

/// The handoff sidecar, in the file's key order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandoffSidecar {
    pub version: u32,
    pub kind: SidecarKind,
    pub heading: String,
    pub markdown_path: String,
    pub session_id: String,
    pub sequence: u32,
    pub window_id: String,
    /// ISO 8601 local time with offset.
    pub created_at: String,
    pub timestamp_ms: i64,
    pub tz_offset_minutes: i32,
    pub cwd: String,
    pub repo_root: Option<String>,
    pub git: SidecarGit,
    pub goal: String,
    pub next_step: String,
    pub facts: String,
    pub decisions: Option<String>,
    pub user_constraints: Option<String>,
    pub open_items: Option<String>,
    pub hypotheses: Option<String>,
    pub files_to_read: Vec<String>,
    pub launch_prompt: Option<String>,
    /// The narrative sections the markdown shortened (the sidecar keeps them whole).
    pub cut_sections: Vec<SectionCut>,
    pub fingerprint: HandoffFingerprint,
    /// The integrations' records (`jobs`, `subagents`, `questions`, `claims`), each
    /// `{available: false}` or the records of the other tool's store as they were read
    /// (`integrations::render`); other tools' shapes, so kept as JSON.
    #[serde(default)]
    pub integrations: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_check: Option<CheckResult>,
}

/// The sidecar's `kind`: always `handoff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SidecarKind {
    Handoff,
}

/// The git facts Relay collected when the handoff was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SidecarGit {
    pub state: GitState,
    pub branch: Option<String>,
    pub head: Option<String>,
}

impl HandoffSidecar {
    /// The sidecar of a handoff with these arguments and metadata, its markdown at
    /// `markdown_path`; nothing recorded beside them yet.
    pub fn new(args: &HandoffArgs, meta: &HandoffMeta, markdown_path: &str) -> Self {
        let fingerprint =
            HandoffFingerprint::new(args, meta.timestamp_ms, meta.git_head.as_deref());
        HandoffSidecar {
            version: SIDECAR_VERSION,
            kind: SidecarKind::Handoff,
            heading: heading(meta),
            markdown_path: markdown_path.to_string(),
            session_id: meta.session_id.clone(),
            sequence: meta.sequence,
            window_id: meta.window_id.clone(),
            created_at: format_timestamp(meta.timestamp_ms, meta.tz_offset_minutes),
            timestamp_ms: meta.timestamp_ms,
            tz_offset_minutes: meta.tz_offset_minutes,
            cwd: meta.cwd.clone(),
            repo_root: meta.repo_root.clone(),
            git: SidecarGit {
                state: meta.git_state,
                branch: meta.git_branch.clone(),
                head: meta.git_head.clone(),
            },
            goal: args.goal.clone(),
            next_step: args.next_step.clone(),
            facts: args.facts.clone(),
            decisions: args.decisions.clone(),
            user_constraints: args.user_constraints.clone(),
            open_items: args.open_items.clone(),
            hypotheses: args.hypotheses.clone(),
            files_to_read: args.files_to_read.clone(),
            launch_prompt: args.launch_prompt.clone(),
            cut_sections: narrative_cuts(args),
            fingerprint,
            integrations: Value::Object(serde_json::Map::new()),
            workspace: None,
            resume_check: None,
        }
    }
}
