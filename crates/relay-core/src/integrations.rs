//! The optional state integrations of a handoff (seed 004): background jobs and watches, subagents,
//! pending questions and issue claims, each rendered as a bounded section of the handoff, and the
//! `Watch check` the next window's first request carries. Pure: the extension copies what the
//! in-process registries list (`pi-jobs.liveManagers`, `pi-subagents:manager`), relay-io reads the
//! stores on disk (off Pi's event loop), and this module decides what is pending and what the
//! model reads.
//!
//! **Contract.**
//! - Every integration that is absent (no registry in the process, no store on disk, an
//!   unreadable file) renders as `unavailable`, never as a failed handoff; an empty inventory is
//!   `none`.
//! - Each section has its own allowance, which no other section can use: jobs and watches
//!   [`JOBS_BUDGET_BYTES`], subagents [`SUBAGENTS_BUDGET_BYTES`], pending questions
//!   [`QUESTIONS_MAX_LINES`] lines of [`QUESTION_LINE_MAX_CHARS`] characters within
//!   [`QUESTIONS_BUDGET_BYTES`], issue claims [`CLAIMS_BUDGET_BYTES`] plus the omission marker.
//!   Records that do not fit are counted in an explicit omission line; the JSON sidecar keeps
//!   every record whole (full job commands included).
//! - A corrupt record (not an object, no id) is left out and counted.

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod sections;

pub use sections::{render, Rendered};

/// The jobs-and-watches section's allowance inside the 48 KiB handoff.
pub const JOBS_BUDGET_BYTES: usize = 16_384;
/// The subagents section's allowance.
pub const SUBAGENTS_BUDGET_BYTES: usize = 4_096;
/// The issue claims' allowance (the omission marker comes on top).
pub const CLAIMS_BUDGET_BYTES: usize = 768;
/// The pending questions' allowance (20 lines of 200 characters, at most this many bytes).
pub const QUESTIONS_BUDGET_BYTES: usize = 5_120;
/// At most this many pending questions are listed.
pub const QUESTIONS_MAX_LINES: usize = 20;
/// A pending-question line is cut to this many characters.
pub const QUESTION_LINE_MAX_CHARS: usize = 200;
/// A job line longer than this many characters is cut and ends `…(cut, N chars)`.
pub const JOB_LINE_MAX_CHARS: usize = 600;
/// A watch-check line keeps its command whole up to this many characters (the model re-arms the
/// work from it); only a longer line is cut (`…(cut, N chars)`), its record whole in the sidecar.
pub const WATCH_LINE_MAX_CHARS: usize = 4_000;
/// The watch check's allowance in the new window's requests.
pub const WATCH_CHECK_BUDGET_BYTES: usize = 16_384;
/// Only the newest this many question item directories (by modification time) are read.
pub const QUESTION_ITEMS_SCANNED: usize = 200;
/// At most this many recorded jobs travel in the handoff record on the branch (for the watch
/// check); the sidecar keeps every one.
pub const RECORDED_JOBS_MAX: usize = 500;

/// Job states that are over: such a record is no longer pending work.
const JOB_DONE: &[&str] = &[
    "done",
    "completed",
    "complete",
    "succeeded",
    "success",
    "finished",
    "failed",
    "error",
    "exited",
    "cancelled",
    "canceled",
    "killed",
    "stopped",
    "expired",
];
/// The pi-subagents tools whose results name a subagent id (`Agent ID: <id>` lines): the
/// `Agent` tool that starts one, and the tools that reach one by id.
pub const SUBAGENT_TOOLS: &[&str] = &["Agent", "get_subagent_result", "steer_subagent"];

/// The most subagent ids taken from tool results that a handoff asks the live registry about
/// (the newest ones).
pub const MAX_KNOWN_SUBAGENT_IDS: usize = 64;

/// The subagent ids a pi-subagents tool result names: each line `Agent ID: <id>` whose id is 1 to
/// 64 characters of ASCII letters, digits, `-` and `_` (anything else is not taken for an id).
pub fn subagent_ids_in(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("Agent ID:"))
        .map(str::trim)
        .filter(|id| {
            (1..=64).contains(&id.len())
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
        .map(str::to_string)
        .collect()
}

/// The ids to ask the live registry's `getRecord` about: the task directory's (`None` when it
/// could not be read) and those tool results named, each once. `None` when the two together name
/// no id: a registry that cannot list its agents is then never asked, so whether work is pending
/// is unknown and the section says `unavailable` (seed 004: pending work whose ids cannot be
/// discovered is unavailable), whether the task directory was unreadable or readable and empty.
/// Only a registry that answered (its list, or its records for the ids asked) makes `none`.
pub fn subagent_lookup_ids(task_ids: Option<&[String]>, known: &[String]) -> Option<Vec<String>> {
    let mut ids: Vec<String> = Vec::new();
    for id in task_ids.unwrap_or_default().iter().chain(known) {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    (!ids.is_empty()).then_some(ids)
}

/// Subagent states that are authoritative pending work.
const SUBAGENT_PENDING: &[&str] = &["running", "queued"];
/// Question states that are no longer open.
const QUESTION_CLOSED: &[&str] = &[
    "answered",
    "closed",
    "resolved",
    "cancelled",
    "canceled",
    "dismissed",
    "expired",
    "withdrawn",
];
/// Claim states that no longer hold the issue.
const CLAIM_RELEASED: &[&str] = &[
    "released",
    "done",
    "closed",
    "abandoned",
    "merged",
    "finished",
];

/// Where the on-disk stores are, as the binding reads them (decided here from the facts the
/// extension passes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StorePaths {
    /// `$PI_QUESTIONS_HOME`, else `<agent dir>/user-questions`.
    pub questions_home: Option<String>,
    /// `<agent dir>/issue-work/registry.jsonl`.
    pub claims_file: Option<String>,
    /// `<tmp>/pi-subagents-<uid>/<cwd slug>/<session id>/tasks`.
    pub task_dir: Option<String>,
}

/// What the extension knows of the stores' places (facts only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StoreFacts {
    /// Pi's agent directory (`getAgentDir()`).
    pub agent_dir: Option<String>,
    /// `PI_QUESTIONS_HOME` as the process has it.
    pub questions_home: Option<String>,
    /// The OS temporary directory (`os.tmpdir()`).
    pub tmp_dir: Option<String>,
    /// The process's user id (`process.getuid()`), `null` where there is none.
    pub uid: Option<u32>,
    pub session_id: String,
    pub cwd: String,
}

fn join(dir: &str, rest: &str) -> String {
    format!("{}/{rest}", dir.trim_end_matches('/'))
}

/// The cwd as pi-subagents names its folder: every character that is not ASCII alphanumeric,
/// `.`, `_` or `-` becomes `-`.
pub fn cwd_slug(cwd: &str) -> String {
    cwd.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

impl StoreFacts {
    pub fn paths(&self) -> StorePaths {
        let agent = self.agent_dir.as_deref().filter(|d| !d.is_empty());
        let questions_home = self
            .questions_home
            .as_deref()
            .filter(|h| !h.is_empty())
            .map(str::to_string)
            .or_else(|| agent.map(|a| join(a, "user-questions")));
        let claims_file = agent.map(|a| join(a, "issue-work/registry.jsonl"));
        let task_dir = match (self.tmp_dir.as_deref(), self.uid) {
            (Some(tmp), Some(uid)) if !tmp.is_empty() && !self.session_id.is_empty() => Some(join(
                tmp,
                &format!(
                    "pi-subagents-{uid}/{}/{}/tasks",
                    cwd_slug(&self.cwd),
                    self.session_id
                ),
            )),
            _ => None,
        };
        StorePaths {
            questions_home,
            claims_file,
            task_dir,
        }
    }
}

/// What relay-io read from the stores on disk (`null` = the store is absent or unreadable).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StoreContents {
    /// The latest revision of each of the newest item directories, newest first.
    #[cfg_attr(test, ts(type = "unknown[] | null"))]
    pub questions: Option<Vec<Value>>,
    /// Question items that could not be read or parsed.
    #[serde(default)]
    pub questions_corrupt: u32,
    /// The claim registry's lines, in file order.
    #[cfg_attr(test, ts(type = "unknown[] | null"))]
    pub claims: Option<Vec<Value>>,
    /// Registry lines that are not JSON objects.
    #[serde(default)]
    pub claims_corrupt: u32,
    /// Subagent ids found as `<id>.output` in this session's task directory.
    pub task_ids: Option<Vec<String>>,
}

/// Everything a handoff's integration sections are made from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct IntegrationFacts {
    /// The records the `pi-jobs.liveManagers` managers list, copied as JSON; `null` when the
    /// process has no such registry (or it could not be read).
    #[cfg_attr(test, ts(type = "unknown[] | null"))]
    pub jobs: Option<Vec<Value>>,
    /// The `pi-subagents:manager` records (`listAgents()`, else `getRecord` of the task
    /// directory's ids); `null` when neither is available.
    #[cfg_attr(test, ts(type = "unknown[] | null"))]
    pub subagents: Option<Vec<Value>>,
    /// What relay-io read from disk; `null` when it was not collected.
    pub stores: Option<StoreContents>,
}

fn field(v: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match v.get(*k)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    })
}

fn status_in(status: Option<&str>, set: &[&str]) -> bool {
    status.is_some_and(|s| set.iter().any(|x| x.eq_ignore_ascii_case(s.trim())))
}

/// One job or watch as a registry lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRecord {
    pub id: String,
    pub label: Option<String>,
    pub kind: Option<String>,
    pub until: Option<String>,
    pub interval_seconds: Option<String>,
    pub command: Option<String>,
    pub cwd: Option<String>,
    pub log_path: Option<String>,
    pub status: Option<String>,
    pub session_id: Option<String>,
}

impl JobRecord {
    /// `None` for a record that is not an object or has no id.
    pub fn parse(v: &Value) -> Option<JobRecord> {
        if !v.is_object() {
            return None;
        }
        Some(JobRecord {
            id: field(v, &["id", "jobId"])?,
            label: field(v, &["label", "name"]),
            kind: field(v, &["kind", "type"]),
            until: field(v, &["until"]),
            interval_seconds: field(v, &["intervalSeconds"]),
            command: field(v, &["command", "cmd"]),
            cwd: field(v, &["cwd"]),
            log_path: field(v, &["logPath", "log"]),
            status: field(v, &["status", "state"]),
            session_id: field(v, &["sessionId"]),
        })
    }

    /// Still pending (not in a final state) and not another session's.
    pub fn pending_for(&self, session_id: &str) -> bool {
        !status_in(self.status.as_deref(), JOB_DONE)
            && self.session_id.as_deref().is_none_or(|s| s == session_id)
    }
}

/// A job as the handoff records it for the next window's watch check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedJob {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// One rendered integration section and its sidecar record.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub title: &'static str,
    pub body: String,
}

/// How many jobs and watches in `jobs` are this session's pending work (`None`: no registry).
pub fn pending_jobs(jobs: Option<&[Value]>, session_id: &str) -> u32 {
    let n = jobs.map_or(0, |list| {
        list.iter()
            .filter_map(JobRecord::parse)
            .filter(|j| j.pending_for(session_id))
            .count()
    });
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The recorded work that the live registry no longer lists as pending, in recorded order.
/// `None` when there is nothing to report: the registry is absent or everything is still live.
pub fn missing_work(
    recorded: &[RecordedJob],
    live: Option<&[Value]>,
    session_id: &str,
) -> Option<Vec<RecordedJob>> {
    let live = live?;
    let live_ids: Vec<String> = live
        .iter()
        .filter_map(JobRecord::parse)
        .filter(|j| j.pending_for(session_id))
        .map(|j| j.id)
        .collect();
    let missing: Vec<RecordedJob> = recorded
        .iter()
        .filter(|r| !live_ids.contains(&r.id))
        .cloned()
        .collect();
    (!missing.is_empty()).then_some(missing)
}

#[cfg(test)]
pub(crate) mod tests;
