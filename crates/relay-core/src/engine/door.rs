//! The one door: every input the host hands the engine is an [`Input`], every answer an
//! [`Output`] (str0m-style). Slow or fallible work (git, the integration stores, a resume or
//! stale-handoff check, a handoff file, a session load) is a [`Job`] the output asks for: the
//! host runs it off Pi's event loop, within the job's deadline and under Pi's abort signal, and
//! hands the result back as [`Input::Done`]. The engine decides which jobs run, in which order,
//! what a failure means and when to retry.
//!
//! An output whose `op` is set belongs to an operation that waits: the host executes the
//! output's effects and appends, runs its jobs (none: it only waits for the appends to be fed),
//! and answers with `Done { op, results }`; the next output continues that operation. Two
//! operations wait in the engine:
//! - the `context` hook's checks ([`ContextOp`]): the after-reset resume check, the watch check,
//!   the stale-handoff check, each once per window, then the messages the request carries;
//! - `context_handoff` ([`HandoffOp`]): git and the stores, then the resume check, then the live
//!   registries, then (when a sibling tool finished meanwhile) git once more, then the file.
//!
//! A session load is an operation of the engine as well ([`session`]): [`Input::Open`] answers
//! with a load job (the file's size, which the host reports, decides its passes); the branch it
//! reads has no JSON form, so the host hands it back in process with the job's `Done`.
//!
//! **Adding a job kind:** a [`Work`] variant here, its step in the operation that asks for it,
//! and its runner (relay-io's `jobs.rs` for work in Rust, the extension's `adapter.ts` for facts
//! only the host has). Nothing else changes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::wire::{
    ConfigSources, ContextMessage, Effect, GitFacts, HookReply, HookResult, Marker, Moment,
    NotifyLevel, Observation, ToolReply, ToolStub,
};
use super::Engine;
use crate::handoff::{GitState, HandoffArgs, HandoffFingerprint};
use crate::integrations::{StoreContents, StorePaths};
use crate::resume_check::CheckResult;
use crate::staleness::WorkspaceRecord;

mod context;
mod description;
mod dispatch;
mod drafts;
mod handoff;
pub mod session;

pub use description::{Description, HookAnswer, HookSpec, HookWaits};
#[cfg(test)]
pub(super) use dispatch::{pi_error_head, PI_ERROR_HEAD};
pub use drafts::Draft;
pub use session::{BACKGROUND_LOAD_BYTES, WAITING};

pub mod deadlines;
mod facts;

pub use facts::{GitWire, HostFacts};

/// The deadline of a job that has none (a session load is bounded by the file's size, not by a
/// clock): JavaScript's largest exact integer, which the host reads as "no deadline".
pub const NO_DEADLINE_MS: i64 = 9_007_199_254_740_991;

/// At most this many tries to find a free handoff file number (another writer may take one).
const HANDOFF_FILE_TRIES: u8 = 5;

// ---------------------------------------------------------------------------------------------
// The contract

/// Everything the host hands the engine, tagged by `type`.
#[derive(Debug, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Input {
    /// What the host registers: the tools, the message types with a TUI line, and whether this
    /// host is supported (`value`: [`Description`]; [`crate::host::host_refusal`] decides).
    Describe {
        /// The host package's `VERSION`.
        pi_version: String,
        /// The host package's `CONFIG_DIR_NAME` (Pi: `.pi`; the oh-my-pi fork: `.omp`).
        config_dir: String,
        /// The JavaScript runtime and its version (`node 22.19.0`, `bun 1.4.5`).
        runtime: String,
        /// `PI_RELAUNCH_KEY_FILE`: the host takes the launch's key from it (once per process,
        /// the file removed); the key reaches the engine in [`Input::Configure`].
        #[serde(default)]
        #[cfg_attr(test, ts(optional))]
        relaunch_key_file: Option<String>,
    },
    /// May the host import the guard library of `agentDir` (`<agentDir>/lib/guards.ts`)? The
    /// output asks for a [`Work::Vet`] of it to run at once; `value` is [`Answer::Guards`].
    Guards { agent_dir: String },
    /// The raw configuration sources; warnings come back as effects.
    Configure { sources: Box<ConfigSources> },
    /// A session starts: load the branch that ends at `leaf` from `file`. A large file becomes a
    /// load job; a small one loads at once; without a file (or one that does not hold the leaf)
    /// the output asks for the branch (`needsBranch`), which the host sends as [`Input::Resync`].
    Open {
        session_id: String,
        file: Option<String>,
        /// The file's size in bytes as the host found it (`null`: no regular file there).
        #[serde(default)]
        size: Option<u64>,
        leaf: Option<String>,
        /// A large file may load on the pool (its current window first); false: at once (a
        /// reload after a failure).
        background: bool,
        /// The tip of this file's read ahead ([`Input::Prefetch`]) when Pi's leaf descends from
        /// it (the host walked back from the leaf along Pi's branch and met it: Pi appended entries at start-up,
        /// such as a thinking level): what was read is installed, and the entries after it come
        /// with the next feed as usual.
        #[serde(default)]
        #[cfg_attr(test, ts(optional))]
        read_ahead: Option<String>,
    },
    /// Read a large session file ahead of Pi's `session_start`, while Pi is still starting (the
    /// host knows the file from Pi's command line): the output is a load job of its current
    /// window at the file's last entry (where Pi opens it), to run in the background and answer
    /// with `done`, whose `value` is `{tip}` (the entry it read up to; `null` when it read
    /// nothing). An [`Input::Open`] of that file at that leaf (or naming that tip as
    /// `readAhead`) then installs what it read without a second job; anything else drops it. A
    /// small file, or one that is not there, gives no job.
    Prefetch {
        file: String,
        /// The file's size in bytes as the host found it.
        size: u64,
    },
    /// The session ends (Pi shuts down, reloads or switches) before its start-up load is done:
    /// every load in flight stops and nothing else happens (the engine never started the
    /// session, so it has nothing to end).
    Close,
    /// Something waits for the earlier windows' texts (a history tool, a navigation): the
    /// output's `historyLoad` is the whole history's load when it has not started yet (a large
    /// session's first pass leaves it until it is needed or the first run settles).
    History,
    /// The whole branch as Pi's `getBranch()` gives it (root first).
    Resync {
        session_id: String,
        #[cfg_attr(test, ts(type = "unknown[]"))]
        entries: Vec<Value>,
    },
    /// Ids from Pi's leaf back towards the root: `value` is the index of the first one the
    /// mirror holds (`null`: none), for a navigation.
    Known { ids: Vec<String> },
    /// A Pi hook.
    Hook { observation: Observation },
    /// A tool call of the model (`callId`: Pi's tool call id).
    Tool {
        call_id: String,
        name: String,
        #[cfg_attr(test, ts(type = "unknown"))]
        args: Value,
        moment: Moment,
    },
    /// The model's arguments for `tool`, before Pi's schema check: `value` is `{args}` (aliases
    /// renamed) or `{error}`.
    Prepare {
        tool: String,
        #[cfg_attr(test, ts(type = "unknown"))]
        args: Value,
    },
    /// Pi's schema check refused the prepared arguments of `tool` with `message` (Pi's error, as
    /// Pi gave it; the engine reads its first 64 Ki UTF-16 units):
    /// `value` is `{error}` when it is Pi's refusal (the tool error to give instead, without
    /// Pi's copy of every argument), `{}` when the message is not Pi's refusal.
    SchemaRefused { tool: String, message: String },
    /// The results of the jobs operation `op` asked for (after its appends were made).
    Done {
        op: u64,
        results: Vec<JobResult>,
        moment: Moment,
        /// The branches load jobs read, handed over in process (they have no JSON form).
        #[serde(skip)]
        #[cfg_attr(test, ts(skip))]
        loaded: Loaded,
    },
    /// Something failed in the host while it served `hook` (a Pi call threw, the addon failed):
    /// the output says what the hook answers (a compaction hook is cancelled while Relay's
    /// windows are on) and tells the user once.
    Failed { hook: String, message: String },
    /// What Pi appended since the engine's tip (the host's second argument, parsed apart: its
    /// entries are read one by one from the raw JSON).
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    Feed(super::wire::Feed),
    /// The host could not write one of Relay's files (events, status): `text` says which and
    /// why. The user is told once per engine, with every other failed write.
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    WriteFailed { text: String },
    /// The relaunch marker `observation`'s output asked for could not be written (`why`): the
    /// engine resets in-process instead.
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    RelaunchUnwritten {
        why: String,
        observation: Observation,
    },
}

/// Branches read by load jobs, by job id: the in-process half of a load's `Done`.
#[derive(Default)]
pub struct Loaded(pub Vec<(u64, super::LoadedBranch)>);

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Loaded({} branches)", self.0.len())
    }
}

/// The answer of a query input.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Answer {
    /// `describe`.
    Description(Description),
    /// `prepare`: the arguments with aliases renamed.
    Prepared {
        #[cfg_attr(test, ts(type = "unknown"))]
        args: Value,
    },
    /// `prepare` refused, or `schema_refused` recognised Pi's refusal: the tool error to give
    /// (`schema_refused` of a message that is not Pi's refusal: none).
    Refused {
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(optional))]
        error: Option<String>,
    },
    /// `known`: the index of the first id the mirror holds (`null`: none).
    Known(Option<usize>),
    /// A read ahead came back: the entry it read up to (`null`: nothing to install).
    ReadAhead { tip: Option<String> },
    /// `guards`: the guard library to import (`file`; `null`: there is none), or why it is
    /// refused (`error`: not a regular file, larger than [`super::wire::MAX_GUARDS_BYTES`]).
    Guards {
        file: Option<String>,
        error: Option<String>,
    },
}

/// Everything the engine answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Output {
    /// Effects to execute in order.
    pub effects: Vec<Effect>,
    /// What the hook returns to Pi.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub result: Option<HookResult>,
    /// What a boundary hook returns as Pi's `continue` beside `result`.
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub continue_run: Option<bool>,
    /// A tool's answer (the tool is done).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub reply: Option<ToolReply>,
    /// Custom messages to insert into the request of a `context` hook, each at its index.
    pub messages: Vec<ContextMessage>,
    /// The stubs that replace the current window's cleared tool results in the requests of a
    /// `context` hook (each the result answering its call; empty: none), sent when they differ
    /// from the set the host last received, which holds while this is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub stubs: Option<Vec<ToolStub>>,
    /// Entries to append to the session (`pi.appendEntry`), in order, before anything else.
    pub appends: Vec<Marker>,
    /// The entries a `clear`, `continue` or `reset` result adds to Pi's boundary drafts, as Pi's
    /// drafts (a reset's compaction keeps from its marker: see [`Draft::Compaction`]).
    pub drafts: Vec<Draft>,
    /// Work to run off Pi's event loop.
    pub jobs: Vec<Job>,
    /// The operation that waits for `Done` (its jobs' results, or only its appends).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub op: Option<u64>,
    /// The newest entry the mirror holds.
    pub tip: Option<String>,
    /// The physical model whose window the engine needs in the next inputs' `answeredWindow`:
    /// the branch's latest successful answer's (`null`: none). Only read under a router model.
    pub answered_model: Option<crate::entry::ModelRef>,
    /// The host must send the whole branch ([`Input::Resync`]) before anything else.
    pub needs_branch: bool,
    /// The mirror holds every window's texts (false while a large session's earlier windows are
    /// skimmed: the history tools and a navigation wait for the whole history).
    pub history_complete: bool,
    /// The boundary hooks the engine needs until an output says otherwise: the host subscribes to
    /// Pi's `turn_end` / `agent_before_settle` only while their flag is set (Pi builds a preview
    /// of the whole branch for every boundary that has a subscriber).
    pub boundary: BoundaryHooks,
    /// The whole history's load, to run in the background: the hook does not wait for it, only
    /// what reads earlier windows does; its result comes back as `Done` with the job's id as `op`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub history_load: Option<Job>,
    /// The answer of a query input (`describe`, `prepare`, `schema_refused`, `known`, a read
    /// ahead's `done`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub value: Option<Answer>,
    /// Jobs nobody waits for any more (a superseded load): the runner stops them.
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub cancel: Vec<u64>,
    /// A job to run before the host's call returns (a session reloaded at once after a
    /// failure): its `Done` goes straight back in, with what it loaded.
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub run_now: Option<Job>,
    /// The input was refused (it does not fit the engine's state, such as a hook while the
    /// engine waits for the whole branch): the host's call fails with this text.
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub refused: Option<String>,
}

/// Which of Pi's boundary hooks the engine has something to decide at, as its state stands
/// (`engine/boundary.rs`). Both are needed unless the engine knows the window is quiet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BoundaryHooks {
    /// `turn_end`.
    pub turn_end: bool,
    /// `agent_before_settle`.
    pub settle: bool,
}

impl Default for BoundaryHooks {
    fn default() -> Self {
        BoundaryHooks {
            turn_end: true,
            settle: true,
        }
    }
}

impl Output {
    pub(crate) fn from_hook(reply: HookReply) -> Self {
        Output {
            effects: reply.effects,
            result: reply.result,
            continue_run: reply.continue_run,
            appends: reply.appends,
            ..Output::default()
        }
    }
}

/// One piece of work for the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Job {
    pub id: u64,
    /// When the host stops waiting (milliseconds since the epoch): the job then failed.
    pub deadline_ms: i64,
    pub work: Work,
}

/// What a job does. `facts` is the host's own (in-process registries, Pi's session name); every
/// other kind runs in the addon on the libuv pool, reads only regular files and never blocks
/// Pi's event loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Work {
    /// Git metadata for `cwd`; with `files`, also what a handoff records of the workspace.
    Git {
        cwd: String,
        #[cfg_attr(test, ts(optional))]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        files: Option<Vec<String>>,
    },
    /// The integration stores on disk ([`StoreContents`]).
    Stores {
        questions_home: Option<String>,
        claims_file: Option<String>,
        task_dir: Option<String>,
    },
    /// Facts the host holds: `sessionName`, the live `registries`.
    Facts {
        session_name: bool,
        registries: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(optional))]
        task_ids: Option<Vec<String>>,
    },
    /// The operator's resume check ([`CheckResult`]).
    ResumeCheck {
        command: String,
        source: String,
        cwd: String,
    },
    /// The stale-handoff check: the workspace now against `record` ([`StaleReport`]).
    StaleCheck {
        #[cfg_attr(test, ts(type = "unknown"))]
        record: WorkspaceRecord,
    },
    /// The next free handoff number under `root` for the session (a number).
    HandoffNumber { root: String, session_id: String },
    /// Write handoff number `sequence` (never replacing one): `{path}`, or failed with
    /// `exists: true` when another writer took the number.
    WriteHandoff {
        root: String,
        session_id: String,
        sequence: u32,
        markdown: String,
        #[cfg_attr(test, ts(type = "unknown"))]
        sidecar: Box<super::files::HandoffSidecar>,
    },
    /// Read the branch of session `file` that ends at `leaf` (`null`: the file's last entry) on
    /// the pool; the branch goes back in process, `value` says whether the file held it.
    Load {
        file: String,
        /// The session's id (`null`: read from the file's header).
        session_id: Option<String>,
        leaf: Option<String>,
        pass: LoadPass,
    },
    /// Pi's compaction (`ctx.compact()`), which the host runs and reports done when Pi completes
    /// it, failed with Pi's error otherwise: the idle-input recovery's reset before the input
    /// goes on (its `manual` hook is answered with Relay's reset).
    Compact,
    /// Check `path` as a small file that cannot block (opened without blocking, judged on the
    /// open descriptor): `value` is [`super::wire::Vetted`]. Runs at once (`run_now`): a few system calls.
    Vet { path: String, cap: u64 },
}

impl Work {
    /// The kind's name, as the `kind` tag of its JSON says it.
    pub fn kind(&self) -> &'static str {
        match self {
            Work::Git { .. } => "git",
            Work::Stores { .. } => "stores",
            Work::Facts { .. } => "facts",
            Work::ResumeCheck { .. } => "resumeCheck",
            Work::StaleCheck { .. } => "staleCheck",
            Work::HandoffNumber { .. } => "handoffNumber",
            Work::WriteHandoff { .. } => "writeHandoff",
            Work::Load { .. } => "load",
            Work::Vet { .. } => "vet",
            Work::Compact => "compact",
        }
    }
}

/// Which part of a session a load job reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum LoadPass {
    /// The current window in full, the earlier windows skimmed (their texts load later).
    Current,
    /// The whole branch of a skimmed mirror; the texts stay in the file and are read back.
    Rest,
    /// The whole branch at once, its texts held (a small file, or a reload after a failure).
    All,
}

/// A job's result, as the host hands it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct JobResult {
    pub id: u64,
    pub outcome: JobOutcome,
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum JobOutcome {
    /// Done; `value` is the kind's result, `atMs` when it finished.
    Done {
        #[cfg_attr(test, ts(type = "unknown"))]
        value: Value,
        at_ms: i64,
    },
    /// The job failed (its deadline passed, a panic, an IO error). `exists`: a handoff number
    /// another writer took.
    Failed {
        error: String,
        #[serde(default)]
        exists: bool,
    },
    /// Pi's abort signal fired (Esc) before the job finished.
    Aborted,
}

// ---------------------------------------------------------------------------------------------
// Operations that wait for jobs

/// An operation the engine runs across several inputs.
#[derive(Debug)]
pub(super) enum Op {
    Context(ContextOp),
    Handoff(Box<HandoffOp>),
    /// A `guards` query's vet of `file`.
    Guards {
        file: String,
    },
    /// The idle-input recovery's compaction of reset `attempt` (Pi's `ctx.compact()`).
    Compact {
        attempt: u64,
    },
}

/// Where the `context` hook's checks stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ContextStage {
    /// The session's name was asked for, to pick the resume command.
    ResumeName,
    /// The resume check runs (or its record is being appended).
    Resume,
    /// The live registries were asked for.
    Watch,
    /// The stale-handoff check runs.
    Stale,
    /// A record was appended; go on with the next check once it is fed.
    Appended,
}

#[derive(Debug)]
pub(super) struct ContextOp {
    stage: ContextStage,
    /// The window whose check runs (for its record).
    window: String,
    jobs: Vec<u64>,
}

/// Where a `context_handoff` stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HandoffStage {
    /// Git (with the workspace record), the stores' places and the session's name.
    Collect,
    /// The stores on disk.
    Stores,
    /// The operator's resume check.
    Resume,
    /// The live registries, right before rendering.
    Registries,
    /// Git once more: a sibling tool finished while the first collection ran.
    Recollect,
    /// The next free file number.
    Number,
    /// The file is being written.
    Write,
}

#[derive(Debug)]
pub(super) struct HandoffOp {
    stage: HandoffStage,
    jobs: Vec<u64>,
    args: HandoffArgs,
    raw_args: Value,
    git: Option<GitFacts>,
    store_paths: Option<StorePaths>,
    stores: Option<StoreContents>,
    session_name: Option<String>,
    resume: Option<CheckResult>,
    registries: Option<HostFacts>,
    /// Tool results the engine had seen when the handoff started.
    results_at_start: u64,
    recollected: bool,
    tries: u8,
    rendered: Option<Rendered>,
}

#[derive(Debug)]
struct Rendered {
    path: String,
    markdown: String,
    fingerprint: HandoffFingerprint,
}

/// The operations waiting and the id counter for operations and jobs.
#[derive(Debug, Default)]
pub(super) struct Ops {
    waiting: BTreeMap<u64, Op>,
    next_id: u64,
    /// Job failures the user was told about.
    reported: Vec<String>,
    /// Jobs whose failure the operation reports itself (the handoff file's number and write).
    quiet: std::collections::BTreeSet<u64>,
}

impl Ops {
    pub(super) fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub(super) fn start_after(&mut self, first: u64) {
        self.next_id = first;
    }

    pub(super) fn continue_from(&mut self, other: &Ops) {
        self.next_id = other.next_id;
    }

    /// Forget every waiting operation (a new session).
    pub(super) fn clear(&mut self) {
        self.waiting.clear();
    }
}

pub(super) fn git_unknown() -> GitFacts {
    GitFacts {
        repo_root: None,
        branch: None,
        head: None,
        state: GitState::Unknown,
        workspace: None,
    }
}

/// The value of the result for `id`, decoded as `T`; `None` when the job failed, was aborted,
/// is missing or gave something else.
pub(super) fn value_of<T: serde::de::DeserializeOwned>(
    results: &[JobResult],
    id: u64,
) -> Option<T> {
    results
        .iter()
        .find(|r| r.id == id)
        .and_then(|r| match &r.outcome {
            JobOutcome::Done { value, .. } => serde_json::from_value(value.clone()).ok(),
            _ => None,
        })
}

pub(super) fn finished_at(results: &[JobResult], id: u64, otherwise: i64) -> i64 {
    results
        .iter()
        .find(|r| r.id == id)
        .and_then(|r| match r.outcome {
            JobOutcome::Done { at_ms, .. } => Some(at_ms),
            _ => None,
        })
        .unwrap_or(otherwise)
}

pub(super) fn aborted(results: &[JobResult]) -> bool {
    results.iter().any(|r| r.outcome == JobOutcome::Aborted)
}

pub(super) fn failure_of(results: &[JobResult], id: u64) -> Option<(String, bool)> {
    results
        .iter()
        .find(|r| r.id == id)
        .and_then(|r| match &r.outcome {
            JobOutcome::Failed { error, exists } => Some((error.clone(), *exists)),
            _ => None,
        })
}

/// The tool reply of a handoff the user aborted: nothing written, no reset.
pub(super) fn aborted_reply() -> ToolReply {
    ToolReply {
        text: "context_handoff was aborted before its handoff was written: nothing was written and the context stays as it is.".into(),
        is_error: true,
        ..ToolReply::default()
    }
}

impl Engine {
    pub(super) fn job(&mut self, now_ms: i64, budget_ms: i64, work: Work) -> Job {
        Job {
            id: self.ops.id(),
            deadline_ms: now_ms.saturating_add(budget_ms),
            work,
        }
    }

    /// A job whose failure the operation reports itself (not told to the user as a failure).
    pub(super) fn quiet_job(&mut self, now_ms: i64, budget_ms: i64, work: Work) -> Job {
        let job = self.job(now_ms, budget_ms, work);
        self.ops.quiet.insert(job.id);
        job
    }

    pub(super) fn wait(&mut self, op: Op, mut out: Output) -> Output {
        let id = self.ops.id();
        self.ops.waiting.insert(id, op);
        out.op = Some(id);
        out
    }

    // ----- results and failures -----

    /// The results of operation `op`'s jobs (its appends already fed).
    pub(crate) fn done(&mut self, op: u64, results: &[JobResult], moment: &Moment) -> Output {
        let mut out = match self.ops.waiting.remove(&op) {
            Some(Op::Context(c)) => self.context_done(c, results, moment),
            Some(Op::Handoff(h)) => self.handoff_done(h, results, moment),
            // Answered before the branch's state is asked (`guards_done`).
            Some(Op::Guards { .. }) => return Output::default(),
            Some(Op::Compact { attempt }) => self.compacted(attempt, results, moment),
            // Superseded (a new session) or answered already: nothing waits for it.
            None => return Output::default(),
        };
        // A job that failed (a deadline, a panic on its worker, an IO error) is told to the user
        // once; what it means for the operation was decided above. A handoff number another
        // writer took is no failure.
        for result in results {
            if self.ops.quiet.remove(&result.id) {
                continue;
            }
            if let JobOutcome::Failed {
                error,
                exists: false,
            } = &result.outcome
            {
                let text = if error.starts_with("relay: ") {
                    error.clone()
                } else {
                    format!("relay: {error}")
                };
                if !self.ops.reported.contains(&text) {
                    self.ops.reported.push(text.clone());
                    out.effects.insert(
                        0,
                        Effect::Notify {
                            text,
                            level: NotifyLevel::Warning,
                        },
                    );
                }
            }
        }
        out
    }

    /// The host failed while serving `hook`: a compaction hook is cancelled while Relay's
    /// windows are on (Pi would otherwise run its own summarizer), every other hook answers
    /// nothing. The user is told once per distinct message.
    pub(super) fn failed(&mut self, hook: &str, message: &str) -> Output {
        let mut out = Output::default();
        let text = format!("relay: {hook} failed: {message}");
        if !self.told.contains(&text) {
            self.told.push(text.clone());
            out.effects.push(Effect::Notify {
                text,
                level: NotifyLevel::Warning,
            });
        }
        if hook == "session_before_compact" && self.enabled() {
            out.result = Some(HookResult::Cancel);
        }
        if super::specs::tool_specs().iter().any(|s| s.name == hook) {
            // A tool's failure is its error result.
            out.reply = Some(ToolReply {
                text: format!("{hook} failed inside Relay: {message}"),
                is_error: true,
                ..ToolReply::default()
            });
        }
        out
    }
}
