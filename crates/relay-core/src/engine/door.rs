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
//! The session load is the binding's (it produces a branch, not JSON): [`Input::Open`] answers
//! with a load job, and the binding installs what it read when its `Done` comes back.
//!
//! **Adding a job kind:** a [`Work`] variant here, its step in the operation that asks for it,
//! and its runner (relay-node's `jobs.rs` for work in Rust, the extension's `driver.ts` for facts
//! only the host has). Nothing else changes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::wire::{
    ConfigSources, ContextMessage, Effect, GitFacts, HookReply, HookResult, Marker, Moment,
    NotifyLevel, Observation, ResumeFacts, ToolReply,
};
use super::Engine;
use crate::handoff::{GitState, HandoffArgs, HandoffFingerprint};
use crate::integrations::{IntegrationFacts, StoreContents, StoreFacts, StorePaths};
use crate::resume_check::CheckResult;
use crate::staleness::{StaleReport, WorkspaceRecord};

/// How long the host gives each kind of job (milliseconds from the input's `nowMs`). The runner
/// in Rust has its own bounds as well (git's deadline, the resume check's timeout); the host's
/// deadline is the last word: a job still running then counts as failed.
pub mod deadlines {
    /// Git metadata and the handoff's workspace record.
    pub const GIT_MS: i64 = 3_000;
    /// The integration stores on disk (regular files only).
    pub const STORES_MS: i64 = 2_000;
    /// The operator's resume check (30 s timeout, 1 s drain).
    pub const RESUME_MS: i64 = 32_000;
    /// The stale-handoff check (git and the file stamps).
    pub const STALE_MS: i64 = 5_000;
    /// Facts only the host has (the session's name, the in-process registries).
    pub const FACTS_MS: i64 = 1_000;
    /// Choosing a handoff file's number and writing it.
    pub const FILE_MS: i64 = 5_000;
}

/// The deadline of a job that has none (a session load is bounded by the file's size, not by a
/// clock): JavaScript's largest exact integer, which the host reads as "no deadline".
pub const NO_DEADLINE_MS: i64 = 9_007_199_254_740_991;

/// At most this many tries to find a free handoff file number (another writer may take one).
const HANDOFF_FILE_TRIES: u8 = 5;

// ---------------------------------------------------------------------------------------------
// The contract

/// Everything the host hands the engine, tagged by `type`.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Input {
    /// What the host registers: the tools, the message types with a TUI line, and whether this
    /// Pi is supported (`value`: [`Description`]).
    Describe { pi_version: String },
    /// The raw configuration sources; warnings come back as effects.
    Configure { sources: Box<ConfigSources> },
    /// A session starts: load the branch that ends at `leaf` from `file`. A large file becomes a
    /// load job; a small one loads at once; without a file (or one that does not hold the leaf)
    /// the output asks for the branch (`needsBranch`), which the host sends as [`Input::Resync`].
    Open {
        session_id: String,
        file: Option<String>,
        leaf: Option<String>,
        /// A large file may load on the pool (its current window first); false: at once (a
        /// reload after a failure).
        background: bool,
    },
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
    /// Pi's schema check refused the prepared arguments of `tool` with `message` (Pi's error):
    /// `value` is `{error}` when it is Pi's refusal (the tool error to give instead, without
    /// Pi's copy of every argument), `{}` when the message is not Pi's refusal.
    SchemaRefused { tool: String, message: String },
    /// The results of the jobs operation `op` asked for (after its appends were made).
    Done {
        op: u64,
        results: Vec<JobResult>,
        moment: Moment,
    },
    /// Something failed in the host while it served `hook` (a Pi call threw, the addon failed):
    /// the output says what the hook answers (a compaction hook is cancelled while Relay's
    /// windows are on) and tells the user once.
    Failed { hook: String, message: String },
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
    /// A tool's answer (the tool is done).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub reply: Option<ToolReply>,
    /// Custom messages to insert into the request of a `context` hook, each at its index.
    pub messages: Vec<ContextMessage>,
    /// Entries to append to the session (`pi.appendEntry`), in order, before anything else.
    pub appends: Vec<Marker>,
    /// Work to run off Pi's event loop.
    pub jobs: Vec<Job>,
    /// The operation that waits for `Done` (its jobs' results, or only its appends).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub op: Option<u64>,
    /// The newest entry the mirror holds.
    pub tip: Option<String>,
    /// The host must send the whole branch ([`Input::Resync`]) before anything else.
    pub needs_branch: bool,
    /// The mirror holds every window's texts (false while a large session's earlier windows are
    /// still loading: the history tools and a navigation wait).
    pub history_complete: bool,
    /// The answer of a query input (`describe`, `prepare`, `schema_refused`, `known`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional, type = "unknown"))]
    pub value: Option<Value>,
}

impl Output {
    pub fn from_hook(reply: HookReply) -> Self {
        Output {
            effects: reply.effects,
            result: reply.result,
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
    /// Facts the host holds: `sessionName`, the live `registries`, the `store` places.
    Facts {
        session_name: bool,
        registries: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(optional))]
        task_ids: Option<Vec<String>>,
        store: bool,
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
        sidecar: Value,
    },
    /// Read a session file on the pool (the binding's; `value`: whether it holds the leaf).
    Load { whole: bool },
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

/// What `describe` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Description {
    /// Why this Pi cannot run Relay (`null`: it can).
    pub refusal: Option<String>,
    pub tools: Vec<super::wire::ToolSpec>,
    /// The custom message types Pi's TUI shows with Relay's one line.
    pub rendered_types: Vec<String>,
}

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

// ---------------------------------------------------------------------------------------------
// Operations that wait for jobs

/// An operation the engine runs across several inputs.
#[derive(Debug)]
pub(super) enum Op {
    Context(ContextOp),
    Handoff(Box<HandoffOp>),
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

    /// Forget every waiting operation (a new session).
    pub(super) fn clear(&mut self) {
        self.waiting.clear();
    }
}

fn git_unknown() -> GitFacts {
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
fn value_of<T: serde::de::DeserializeOwned>(results: &[JobResult], id: u64) -> Option<T> {
    results
        .iter()
        .find(|r| r.id == id)
        .and_then(|r| match &r.outcome {
            JobOutcome::Done { value, .. } => serde_json::from_value(value.clone()).ok(),
            _ => None,
        })
}

fn finished_at(results: &[JobResult], id: u64, otherwise: i64) -> i64 {
    results
        .iter()
        .find(|r| r.id == id)
        .and_then(|r| match r.outcome {
            JobOutcome::Done { at_ms, .. } => Some(at_ms),
            _ => None,
        })
        .unwrap_or(otherwise)
}

fn aborted(results: &[JobResult]) -> bool {
    results.iter().any(|r| r.outcome == JobOutcome::Aborted)
}

fn failure_of(results: &[JobResult], id: u64) -> Option<(String, bool)> {
    results
        .iter()
        .find(|r| r.id == id)
        .and_then(|r| match &r.outcome {
            JobOutcome::Failed { error, exists } => Some((error.clone(), *exists)),
            _ => None,
        })
}

/// The tool reply of a handoff the user aborted: nothing written, no reset.
fn aborted_reply() -> ToolReply {
    ToolReply {
        text: "context_handoff was aborted before its handoff was written: nothing was written and the context stays as it is.".into(),
        is_error: true,
        ..ToolReply::default()
    }
}

impl Engine {
    fn job(&mut self, now_ms: i64, budget_ms: i64, work: Work) -> Job {
        Job {
            id: self.ops.id(),
            deadline_ms: now_ms.saturating_add(budget_ms),
            work,
        }
    }

    /// A job whose failure the operation reports itself (not told to the user as a failure).
    fn quiet_job(&mut self, now_ms: i64, budget_ms: i64, work: Work) -> Job {
        let job = self.job(now_ms, budget_ms, work);
        self.ops.quiet.insert(job.id);
        job
    }

    fn wait(&mut self, op: Op, mut out: Output) -> Output {
        let id = self.ops.id();
        self.ops.waiting.insert(id, op);
        out.op = Some(id);
        out
    }

    // ----- the `context` hook -----

    /// A `context` hook: the observation, then the window's checks (each a job when due), then
    /// the messages the request carries. Nothing due: one answer.
    pub fn context_hook(&mut self, obs: &Observation) -> Output {
        let reply = self.handle(obs);
        let out = Output::from_hook(reply);
        self.context_next(&obs.moment, out)
    }

    /// The next check that is due, or the messages when none is.
    fn context_next(&mut self, moment: &Moment, mut out: Output) -> Output {
        let window = self.mirror.history.current_window_id().to_string();
        if self.resume_check_due() {
            let env = self.settings.resume_check_env.clone();
            let facts = ResumeFacts {
                env: env.clone(),
                session_name: None,
            };
            if env.as_deref().is_some_and(|e| !e.trim().is_empty())
                || self.budget.resume_checks().is_empty()
            {
                return self.context_resume(moment, &facts, window, out);
            }
            let job = self.job(
                moment.now_ms,
                deadlines::FACTS_MS,
                Work::Facts {
                    session_name: true,
                    registries: false,
                    task_ids: None,
                    store: false,
                },
            );
            let op = ContextOp {
                stage: ContextStage::ResumeName,
                window,
                jobs: vec![job.id],
            };
            out.jobs.push(job);
            return self.wait(Op::Context(op), out);
        }
        if self.watch_check_due() {
            let job = self.job(
                moment.now_ms,
                deadlines::FACTS_MS,
                Work::Facts {
                    session_name: false,
                    registries: true,
                    task_ids: None,
                    store: false,
                },
            );
            let op = ContextOp {
                stage: ContextStage::Watch,
                window,
                jobs: vec![job.id],
            };
            out.jobs.push(job);
            return self.wait(Op::Context(op), out);
        }
        if self.stale_check_due() {
            if let Some((record, window)) = self.stale_check() {
                let job = self.job(
                    moment.now_ms,
                    deadlines::STALE_MS,
                    Work::StaleCheck { record },
                );
                let op = ContextOp {
                    stage: ContextStage::Stale,
                    window,
                    jobs: vec![job.id],
                };
                out.jobs.push(job);
                return self.wait(Op::Context(op), out);
            }
        }
        out.messages = [
            self.resume_context(),
            self.watch_context(),
            self.stale_context(),
        ]
        .into_iter()
        .flatten()
        .collect();
        out
    }

    fn context_resume(
        &mut self,
        moment: &Moment,
        facts: &ResumeFacts,
        window: String,
        out: Output,
    ) -> Output {
        let Some((command, window)) = self.reset_resume_command(moment, facts) else {
            // None runs (no command for this session): the check is spent for this window.
            self.budget.resume_started = Some(window);
            return self.context_next(moment, out);
        };
        let job = self.job(
            moment.now_ms,
            deadlines::RESUME_MS,
            Work::ResumeCheck {
                command: command.command,
                source: command.source,
                cwd: moment.cwd.clone(),
            },
        );
        let op = ContextOp {
            stage: ContextStage::Resume,
            window,
            jobs: vec![job.id],
        };
        let mut out = out;
        out.jobs.push(job);
        self.wait(Op::Context(op), out)
    }

    fn context_done(&mut self, op: ContextOp, results: &[JobResult], moment: &Moment) -> Output {
        let out = Output::default();
        if aborted(results) {
            return out;
        }
        let first = op.jobs.first().copied().unwrap_or_default();
        match op.stage {
            ContextStage::ResumeName => {
                let facts = ResumeFacts {
                    env: self.settings.resume_check_env.clone(),
                    session_name: value_of::<HostFacts>(results, first)
                        .and_then(|f| f.session_name),
                };
                self.context_resume(moment, &facts, op.window, out)
            }
            ContextStage::Resume => {
                let at = finished_at(results, first, moment.now_ms);
                match value_of::<CheckResult>(results, first) {
                    Some(result) => {
                        let record = super::resume::resume_record(&op.window, at, &result);
                        self.appended(op.window, record, out)
                    }
                    // The runner failed (its own bounds catch the command): no record, and the
                    // failure was reported by the host.
                    None => self.context_next(moment, out),
                }
            }
            ContextStage::Watch => {
                let live = value_of::<HostFacts>(results, first).and_then(|f| f.jobs);
                match self.watch_check(live.as_deref(), moment.now_ms) {
                    Some(record) => self.appended(op.window, record, out),
                    None => self.context_next(moment, out),
                }
            }
            ContextStage::Stale => {
                let at = finished_at(results, first, moment.now_ms);
                match value_of::<StaleReport>(results, first) {
                    Some(report) => {
                        let record = super::stale::stale_record(&op.window, at, &report);
                        self.appended(op.window, record, out)
                    }
                    // Not collected (deadline, failure): nothing is claimed about the workspace.
                    None => self.context_next(moment, out),
                }
            }
            ContextStage::Appended => self.context_next(moment, out),
        }
    }

    /// Ask the host to append `record` and come back once it is fed.
    fn appended(&mut self, window: String, record: Marker, mut out: Output) -> Output {
        out.appends.push(record);
        let op = ContextOp {
            stage: ContextStage::Appended,
            window,
            jobs: Vec::new(),
        };
        self.wait(Op::Context(op), out)
    }

    // ----- context_handoff -----

    /// A tool call: `context_handoff` starts an operation with jobs; every other tool answers at
    /// once.
    pub fn tool_input(&mut self, name: &str, args: &Value, moment: &Moment) -> Output {
        if name != "context_handoff" {
            let mut reply = self.tool(name, args, moment);
            let mut out = Output::default();
            if let Some(persist) = reply.persist.take() {
                out.appends.push(persist);
            }
            out.effects = std::mem::take(&mut reply.effects);
            out.reply = Some(reply);
            return out;
        }
        let parsed = match self.handoff_begin(args, moment) {
            Ok(parsed) => parsed,
            Err(reply) => return Self::tool_output(*reply),
        };
        let git = self.job(
            moment.now_ms,
            deadlines::GIT_MS,
            Work::Git {
                cwd: moment.cwd.clone(),
                files: Some(parsed.files_to_read.clone()),
            },
        );
        let needs_name = self
            .settings
            .resume_check_env
            .as_deref()
            .is_none_or(|e| e.trim().is_empty())
            && !self.budget.resume_checks().is_empty();
        let facts = self.job(
            moment.now_ms,
            deadlines::FACTS_MS,
            Work::Facts {
                session_name: needs_name,
                registries: false,
                task_ids: None,
                store: true,
            },
        );
        let op = HandoffOp {
            stage: HandoffStage::Collect,
            jobs: vec![git.id, facts.id],
            args: parsed,
            raw_args: args.clone(),
            git: None,
            store_paths: None,
            stores: None,
            session_name: None,
            resume: None,
            registries: None,
            results_at_start: self.tool_results_seen,
            recollected: false,
            tries: 0,
            rendered: None,
        };
        let out = Output {
            jobs: vec![git, facts],
            ..Output::default()
        };
        self.wait(Op::Handoff(Box::new(op)), out)
    }

    fn tool_output(mut reply: ToolReply) -> Output {
        let mut out = Output::default();
        if let Some(persist) = reply.persist.take() {
            out.appends.push(persist);
        }
        out.effects = std::mem::take(&mut reply.effects);
        out.reply = Some(reply);
        out
    }

    fn handoff_done(
        &mut self,
        mut op: Box<HandoffOp>,
        results: &[JobResult],
        moment: &Moment,
    ) -> Output {
        if aborted(results) {
            self.outstanding.handoff_launch_prompt = None;
            return Self::tool_output(aborted_reply());
        }
        let jobs = std::mem::take(&mut op.jobs);
        let first = jobs.first().copied().unwrap_or_default();
        match op.stage {
            HandoffStage::Collect => {
                op.git = Some(
                    value_of::<GitWire>(results, first)
                        .map(GitFacts::from)
                        .unwrap_or_else(git_unknown),
                );
                let facts = jobs
                    .get(1)
                    .and_then(|id| value_of::<HostFacts>(results, *id))
                    .unwrap_or_default();
                op.session_name = facts.session_name;
                op.store_paths = facts.store.map(|s| s.paths());
                let paths = op.store_paths.clone().unwrap_or_default();
                let job = self.job(
                    moment.now_ms,
                    deadlines::STORES_MS,
                    Work::Stores {
                        questions_home: paths.questions_home,
                        claims_file: paths.claims_file,
                        task_dir: paths.task_dir,
                    },
                );
                op.stage = HandoffStage::Stores;
                op.jobs = vec![job.id];
                let out = Output {
                    jobs: vec![job],
                    ..Output::default()
                };
                self.wait(Op::Handoff(op), out)
            }
            HandoffStage::Stores => {
                op.stores = value_of::<StoreContents>(results, first);
                let facts = ResumeFacts {
                    env: self.settings.resume_check_env.clone(),
                    session_name: op.session_name.clone(),
                };
                let head = op.git.as_ref().and_then(|g| g.head.clone());
                match self.handoff_resume_command(&op.raw_args, moment, head.as_deref(), &facts) {
                    Some(command) => {
                        let job = self.job(
                            moment.now_ms,
                            deadlines::RESUME_MS,
                            Work::ResumeCheck {
                                command: command.command,
                                source: command.source,
                                cwd: moment.cwd.clone(),
                            },
                        );
                        op.stage = HandoffStage::Resume;
                        op.jobs = vec![job.id];
                        let out = Output {
                            jobs: vec![job],
                            ..Output::default()
                        };
                        self.wait(Op::Handoff(op), out)
                    }
                    None => self.handoff_registries(op, moment),
                }
            }
            HandoffStage::Resume => {
                // A runner that failed leaves the handoff without the section.
                op.resume = value_of::<CheckResult>(results, first);
                self.handoff_registries(op, moment)
            }
            HandoffStage::Registries => {
                op.registries = Some(value_of::<HostFacts>(results, first).unwrap_or_default());
                if self.tool_results_seen != op.results_at_start && !op.recollected {
                    // A sibling tool of the same message finished while the facts were being
                    // collected (it may have committed, changed a file): collect git again.
                    op.recollected = true;
                    let job = self.job(
                        moment.now_ms,
                        deadlines::GIT_MS,
                        Work::Git {
                            cwd: moment.cwd.clone(),
                            files: Some(op.args.files_to_read.clone()),
                        },
                    );
                    op.stage = HandoffStage::Recollect;
                    op.jobs = vec![job.id];
                    let out = Output {
                        jobs: vec![job],
                        ..Output::default()
                    };
                    return self.wait(Op::Handoff(op), out);
                }
                self.handoff_number(op, moment)
            }
            HandoffStage::Recollect => {
                if let Some(git) = value_of::<GitWire>(results, first) {
                    op.git = Some(git.into());
                }
                self.handoff_number(op, moment)
            }
            HandoffStage::Number => match value_of::<u32>(results, first) {
                Some(sequence) => self.handoff_write(op, sequence, moment),
                None => {
                    let error = failure_of(results, first)
                        .map(|(e, _)| e)
                        .unwrap_or_else(|| "no number".into());
                    Self::tool_output(ToolReply {
                        text: format!("context_handoff: cannot choose a handoff file name: {error}. Nothing was committed; the context stays as it is."),
                        is_error: true,
                        ..ToolReply::default()
                    })
                }
            },
            HandoffStage::Write => {
                let Some(rendered) = op.rendered.take() else {
                    return Self::tool_output(aborted_reply());
                };
                match failure_of(results, first) {
                    None => {
                        let path = value_of::<Value>(results, first)
                            .and_then(|v| v.get("path").and_then(Value::as_str).map(String::from))
                            .unwrap_or(rendered.path);
                        let reply = self.handoff_written(
                            &path,
                            rendered.markdown,
                            rendered.fingerprint,
                            moment,
                        );
                        Self::tool_output(reply)
                    }
                    Some((_, true)) if op.tries < HANDOFF_FILE_TRIES => {
                        // Another writer took the number: choose again.
                        self.handoff_number(op, moment)
                    }
                    Some((_, true)) => Self::tool_output(ToolReply {
                        text: "context_handoff: cannot find a free handoff file name: too many concurrent handoffs. Nothing was committed; the context stays as it is.".into(),
                        is_error: true,
                        ..ToolReply::default()
                    }),
                    Some((error, false)) => {
                        // A full disk or a read-only folder: the handoff commits from memory
                        // (the next window's boot block carries it) and the user is told.
                        let mut reply = self.handoff_unsaved(
                            &rendered.path,
                            rendered.markdown,
                            rendered.fingerprint,
                            moment,
                            &error,
                        );
                        reply.effects.push(Effect::WriteFailed {
                            text: format!(
                                "relay: cannot write the handoff file {}: {error}; the handoff is kept in the session and the next window starts from it",
                                rendered.path
                            ),
                        });
                        Self::tool_output(reply)
                    }
                }
            }
        }
    }

    fn handoff_registries(&mut self, mut op: Box<HandoffOp>, moment: &Moment) -> Output {
        let job = self.job(
            moment.now_ms,
            deadlines::FACTS_MS,
            Work::Facts {
                session_name: false,
                registries: true,
                task_ids: op.stores.as_ref().and_then(|s| s.task_ids.clone()),
                store: false,
            },
        );
        op.stage = HandoffStage::Registries;
        op.jobs = vec![job.id];
        let out = Output {
            jobs: vec![job],
            ..Output::default()
        };
        self.wait(Op::Handoff(op), out)
    }

    fn handoff_root(&self, op: &HandoffOp, moment: &Moment) -> String {
        op.git
            .as_ref()
            .and_then(|g| g.repo_root.clone())
            .unwrap_or_else(|| moment.cwd.clone())
    }

    fn handoff_number(&mut self, mut op: Box<HandoffOp>, moment: &Moment) -> Output {
        op.tries += 1;
        let job = self.quiet_job(
            moment.now_ms,
            deadlines::FILE_MS,
            Work::HandoffNumber {
                root: self.handoff_root(&op, moment),
                session_id: self.mirror.history.session_id().to_string(),
            },
        );
        op.stage = HandoffStage::Number;
        op.jobs = vec![job.id];
        let out = Output {
            jobs: vec![job],
            ..Output::default()
        };
        self.wait(Op::Handoff(op), out)
    }

    fn handoff_write(&mut self, mut op: Box<HandoffOp>, sequence: u32, moment: &Moment) -> Output {
        let root = self.handoff_root(&op, moment);
        let session_id = self.mirror.history.session_id().to_string();
        let path = crate::handoff::handoff_file_path(&root, &session_id, sequence);
        let git = op.git.clone().unwrap_or_else(git_unknown);
        let facts = op.registries.as_ref().map(|r| IntegrationFacts {
            jobs: r.jobs.clone(),
            subagents: r.subagents.clone(),
            stores: op.stores.clone(),
        });
        let (markdown, sidecar, fingerprint) = match self.handoff_render(
            &op.args,
            &git,
            op.resume.as_ref(),
            facts.as_ref(),
            &path,
            sequence,
            moment,
        ) {
            Ok(rendered) => rendered,
            Err(reply) => return Self::tool_output(*reply),
        };
        let job = self.quiet_job(
            moment.now_ms,
            deadlines::FILE_MS,
            Work::WriteHandoff {
                root,
                session_id,
                sequence,
                markdown: markdown.clone(),
                sidecar,
            },
        );
        op.rendered = Some(Rendered {
            path,
            markdown,
            fingerprint,
        });
        op.stage = HandoffStage::Write;
        op.jobs = vec![job.id];
        let out = Output {
            jobs: vec![job],
            ..Output::default()
        };
        self.wait(Op::Handoff(op), out)
    }

    // ----- results and failures -----

    /// The results of operation `op`'s jobs (its appends already fed).
    pub fn done(&mut self, op: u64, results: &[JobResult], moment: &Moment) -> Output {
        let mut out = match self.ops.waiting.remove(&op) {
            Some(Op::Context(c)) => self.context_done(c, results, moment),
            Some(Op::Handoff(h)) => self.handoff_done(h, results, moment),
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
    pub fn failed(&mut self, hook: &str, message: &str, reported: &mut Vec<String>) -> Output {
        let mut out = Output::default();
        let text = format!("relay: {hook} failed: {message}");
        if !reported.contains(&text) {
            reported.push(text.clone());
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

/// A job's result handed back by a test or the CLI.
pub fn done_with(id: u64, value: Value, at_ms: i64) -> JobResult {
    JobResult {
        id,
        outcome: JobOutcome::Done { value, at_ms },
    }
}
