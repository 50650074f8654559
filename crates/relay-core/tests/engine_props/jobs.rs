//! The host's side of the door: one input in and the door's own invariants checked, an
//! operation driven to its end (its appends made and fed, its jobs run, the results handed back),
//! the jobs themselves (each kind answered with a plausible value of its real type, or failed,
//! timed out, aborted), and the session's load at start-up.

use proptest::prelude::*;
use relay_core::engine::{
    Answer, Engine, Feed, GitWire, HostFacts, Input, Job, JobOutcome, JobResult, Loaded, Output,
    Work, BACKGROUND_LOAD_BYTES,
};
use relay_core::handoff::GitState;
use relay_core::integrations::StoreContents;
use relay_core::resume_check::{CheckOutput, CheckResult, CheckStatus};
use relay_core::staleness::{DirtyDrift, DirtySet, GitDrift, Listed, StaleReport, WorkspaceRecord};
use serde_json::{json, Value};

use super::{wire, Answered, EntryKind, Host, CWD};

/// HEAD as the generated git jobs report it.
const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";
/// What a failed job's error says (the engine tells the user once, in any mode).
pub const FAILED: &str = "permission denied (os error 13)";
/// What a job stopped at its deadline says.
pub const DEADLINE: &str = "did not finish within its deadline";
/// The answers one operation may take before it counts as waiting forever.
const MAX_ANSWERS: usize = 16;

/// How a job ends, in the order the session's jobs take them (cycled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Done, with a plausible value of its kind.
    Done,
    /// The runner failed (an IO error, a panic on its worker).
    Failed,
    /// The host stopped waiting at the job's deadline.
    Deadline,
    /// Pi's abort signal (Esc): the run ends aborted.
    Aborted,
    /// A handoff file's number was taken by another writer (any other job: done).
    Taken,
}

pub fn fates() -> impl Strategy<Value = Vec<Fate>> {
    prop::collection::vec(
        prop_oneof![
            24 => Just(Fate::Done),
            2 => Just(Fate::Failed),
            2 => Just(Fate::Deadline),
            1 => Just(Fate::Aborted),
            1 => Just(Fate::Taken),
        ],
        1..12,
    )
}

/// How a `/reload` opens the session (the host has no session file to read: every load comes
/// back empty and the engine must ask for the branch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenKind {
    /// No session file (`--no-session`): the branch is asked for at once.
    NoFile,
    /// A small file: one load the host runs before its call returns (`runNow`).
    Small,
    /// A large file: the current window's load in the background (a job of its own).
    Large,
}

pub fn open_kind() -> impl Strategy<Value = OpenKind> {
    prop_oneof![
        Just(OpenKind::NoFile),
        Just(OpenKind::Small),
        Just(OpenKind::Large)
    ]
}

fn value<T: serde::Serialize>(v: T) -> Value {
    serde_json::to_value(v).expect("a job's value serialises")
}

impl Host {
    /// One input through the door, and what every output must respect.
    pub(super) fn call(&mut self, input: Input) -> Result<Output, String> {
        let waiting = self.waiting_for_branch;
        let (feed, hook) = (
            matches!(input, Input::Feed(_)),
            matches!(input, Input::Hook { .. }),
        );
        let out = self.engine.handle(input);
        wire(&out)?;
        check!(
            out.refused.is_none() || waiting || out.needs_branch,
            "an input was refused while the engine does not wait for the branch: {:?}",
            out.refused
        );
        if let Some(op) = out.op {
            check!(
                self.ops_seen.insert(op),
                "operation {op} was handed out twice"
            );
        }
        for job in out.jobs.iter().chain(&out.run_now) {
            check!(
                self.jobs_seen.insert(job.id),
                "job {} was handed out twice",
                job.id
            );
            check!(
                job.deadline_ms > self.now_ms,
                "job {} ({}) is due at {}, before now ({})",
                job.id,
                job.work.kind(),
                job.deadline_ms,
                self.now_ms
            );
        }
        self.waiting_for_branch = out.needs_branch;
        self.last_tip = out.tip.clone();
        if !feed {
            self.answered = out.answered_model.clone();
        }
        // A hook follows a feed of the whole branch: it names the latest successful answer's model.
        if hook && !out.needs_branch && out.refused.is_none() {
            let latest = self.branch.iter().rev().find_map(|e| match &e.kind {
                EntryKind::Message(m) => m.answered_by(),
                _ => None,
            });
            check!(
                out.answered_model.as_ref() == latest,
                "the output names {:?}, the branch's latest answer is {latest:?}",
                out.answered_model
            );
        }
        Ok(out)
    }

    /// Hand the engine what Pi appended since the last feed (and the navigation before it): the
    /// feed follows the branch, so it is never refused, and the output's tip is the branch's.
    pub(super) fn sync(&mut self) -> Result<(), String> {
        let truncate = self.pending_truncate.take();
        if self.mirrored == self.branch.len() && truncate.is_none() {
            return Ok(());
        }
        let mut text = String::from("{");
        if let Some(after) = &truncate {
            let _ = std::fmt::Write::write_fmt(
                &mut text,
                format_args!("\"truncate\":true,\"after\":{},", json!(after)),
            );
        }
        text.push_str("\"append\":[");
        text.push_str(&self.raws[self.mirrored..].join(","));
        text.push_str("]}");
        let feed: Feed =
            serde_json::from_str(&text).map_err(|e| format!("a feed does not read: {e}"))?;
        let out = self.call(Input::Feed(feed))?;
        check!(
            out.refused.is_none(),
            "a feed that continues the branch was refused: {:?}",
            out.refused
        );
        self.mirrored = self.branch.len();
        let tip = self.branch.last().map(|e| e.id.clone());
        check!(
            out.tip == tip,
            "after a feed the output's tip {:?} is not the branch's {tip:?}",
            out.tip
        );
        Ok(())
    }

    /// Run an output's operation to its end: a job to run now, or the appends made and fed and
    /// the jobs answered, until an output waits for nothing. Every answered `op` is gone: the
    /// next output's `op` is a new one or none.
    pub(super) fn drive(&mut self, mut out: Output, with_usage: bool) -> Result<Answered, String> {
        let mut answered = Answered::default();
        for _ in 0..MAX_ANSWERS {
            answered.effects.append(&mut out.effects);
            if let Some(stubs) = out.stubs.take() {
                self.stubs_held.clone_from(&stubs);
                answered.stubs = Some(stubs);
            }
            if out.result.is_some() {
                answered.result = out.result.take();
            }
            if out.continue_run.is_some() {
                answered.continue_run = out.continue_run;
            }
            if out.reply.is_some() {
                answered.reply = out.reply.take();
            }
            let (op, results) = if let Some(job) = out.run_now.take() {
                (job.id, vec![self.run_job(&job)?])
            } else if let Some(op) = out.op {
                if !out.appends.is_empty() {
                    for m in std::mem::take(&mut out.appends) {
                        self.custom(&m.custom_type, &m.data);
                    }
                    self.sync()?;
                }
                let jobs = std::mem::take(&mut out.jobs);
                let results = jobs.iter().map(|j| self.run_job(j));
                (op, results.collect::<Result<Vec<_>, String>>()?)
            } else {
                answered.appends = out.appends;
                return Ok(answered);
            };
            self.tick();
            let moment = serde_json::from_value(self.moment_json(with_usage))
                .map_err(|e| format!("the wire rejects the moment: {e}"))?;
            out = self.call(Input::Done {
                op,
                results: results.clone(),
                moment,
                loaded: Loaded::default(),
            })?;
            // The same answer again (a runner that reported twice): nothing waits for it.
            let again = self.engine.handle(Input::Done {
                op,
                results,
                moment: serde_json::from_value(self.moment_json(with_usage))
                    .map_err(|e| format!("the wire rejects the moment: {e}"))?,
                loaded: Loaded::default(),
            });
            check!(
                again.op.is_none()
                    && again.jobs.is_empty()
                    && again.run_now.is_none()
                    && again.effects.is_empty()
                    && again.result.is_none()
                    && again.reply.is_none()
                    && again.appends.is_empty(),
                "operation {op} answered twice acted again: {again:?}"
            );
            check!(
                out.op != Some(op),
                "operation {op} was answered and is waited for again"
            );
        }
        Err(format!(
            "an operation was still waiting after {MAX_ANSWERS} answers"
        ))
    }

    fn fate(&mut self) -> Fate {
        let fate = self.fates[self.fate_at % self.fates.len()];
        self.fate_at += 1;
        fate
    }

    /// Run one job the way the runner would, to the generated fate (Pi's compaction as Pi would).
    fn run_job(&mut self, job: &Job) -> Result<JobResult, String> {
        let fate = self.fate();
        let name = job.work.kind();
        self.trace
            .push(format!("  job {} {name} -> {fate:?}", job.id));
        if job.work == Work::Compact {
            let outcome = self.pi_compaction(fate)?;
            return Ok(JobResult {
                id: job.id,
                outcome,
            });
        }
        let outcome = match (fate, &job.work) {
            (Fate::Aborted, Work::Load { .. }) => JobOutcome::Aborted,
            (Fate::Aborted, _) => {
                self.aborting = true;
                JobOutcome::Aborted
            }
            (Fate::Failed, _) => JobOutcome::Failed {
                error: format!("{name}: {FAILED}"),
                exists: false,
            },
            (Fate::Deadline, _) => {
                if job.deadline_ms < self.now_ms + 60_000 {
                    self.now_ms = self.now_ms.max(job.deadline_ms);
                }
                JobOutcome::Failed {
                    error: format!("{name} {DEADLINE}"),
                    exists: false,
                }
            }
            (Fate::Taken, Work::WriteHandoff { .. }) => JobOutcome::Failed {
                error: "the handoff file exists".into(),
                exists: true,
            },
            (_, work) => JobOutcome::Done {
                value: self.job_value(work),
                at_ms: self.now_ms + 5,
            },
        };
        Ok(JobResult {
            id: job.id,
            outcome,
        })
    }

    /// The idle input's compaction (`ctx.compact()`), to the generated fate: done, its `manual`
    /// hook answered with Relay's reset and installed; failed after that hook; or failed before it
    /// ("Nothing to compact", which Pi reports to `session_compact_failed` too).
    fn pi_compaction(&mut self, fate: Fate) -> Result<JobOutcome, String> {
        let failed = |error: &str| JobOutcome::Failed {
            error: error.into(),
            exists: false,
        };
        Ok(match fate {
            Fate::Done | Fate::Taken => match self.compact("manual", false, false)? {
                true => JobOutcome::Done {
                    value: Value::Null,
                    at_ms: self.now_ms,
                },
                false => failed("Compaction cancelled"),
            },
            Fate::Failed | Fate::Aborted => {
                self.compact("manual", false, true)?;
                failed("Compaction failed: the summary request failed")
            }
            Fate::Deadline => {
                let nothing = "Nothing to compact (session too small)";
                self.hook(
                    super::Hook::CompactFailed,
                    json!({ "reason": "manual", "aborted": false, "errorMessage": format!("Compaction failed: {nothing}") }),
                )?;
                failed(nothing)
            }
        })
    }

    /// A plausible value of each kind, built from the engine's own types.
    fn job_value(&mut self, work: &Work) -> Value {
        match work {
            Work::Git { cwd, files } => value(GitWire {
                repo_root: Some(CWD.into()),
                branch: Some("main".into()),
                head: Some(HEAD.into()),
                state: GitState::Repo,
                workspace: files.as_ref().map(|_| WorkspaceRecord {
                    cwd: cwd.clone(),
                    repo_root: Some(CWD.into()),
                    git_state: GitState::Repo,
                    branch: Some("main".into()),
                    head: Some(HEAD.into()),
                    dirty: DirtySet::Unavailable,
                    files: Vec::new(),
                }),
            }),
            Work::Stores { .. } => value(StoreContents::default()),
            // Only an idle input asks for Pi's compaction; this host sends none (checks.rs).
            Work::Compact => unreachable!("a compaction job without an idle input"),
            Work::Vet { .. } => value(relay_core::engine::wire::Vetted::Missing),
            Work::Facts {
                session_name,
                registries,
                ..
            } => value(HostFacts {
                session_name: session_name.then(|| "props".to_string()),
                jobs: registries.then(Vec::new),
                subagents: registries.then(Vec::new),
            }),
            Work::ResumeCheck {
                command, source, ..
            } => value(CheckResult {
                command: command.clone(),
                source: source.clone(),
                status: CheckStatus::Exited {
                    code: i32::from(self.fate_at.is_multiple_of(2)),
                },
                output: CheckOutput {
                    head: "checked\n".into(),
                    tail: String::new(),
                    skipped_bytes: 0,
                    total_bytes: 8,
                },
                output_held_open: false,
            }),
            Work::StaleCheck { .. } => value(StaleReport {
                // Every other check finds the workspace moved.
                git: if self.fate_at.is_multiple_of(2) {
                    GitDrift::NotRecorded
                } else {
                    GitDrift::Unavailable
                },
                changed: Listed::default(),
                vanished: Listed::default(),
                appeared: Listed::default(),
                unchecked: Listed::default(),
                dirty: DirtyDrift::default(),
            }),
            Work::HandoffNumber { .. } => {
                self.handoffs += 1;
                json!(self.handoffs)
            }
            Work::WriteHandoff {
                root,
                session_id,
                sequence,
                ..
            } => {
                self.trace
                    .push(format!("  (handoff file {sequence} written)"));
                json!({ "path": format!("{root}/.ai-work/handoffs/{session_id}-{sequence}.md") })
            }
            // relay-core has no IO: the host has no session file to read.
            Work::Load { .. } => Value::Bool(false),
        }
    }

    /// A fresh engine's start-up: the configuration, then the session opened as `open` says (a
    /// load that reads nothing must end in the engine asking for the branch) or resynced at once
    /// (`None`: a resume), then the whole branch.
    pub(super) fn open(&mut self, open: Option<OpenKind>) -> Result<(), String> {
        if let Some(kind) = open {
            let file = format!("/sessions/{}.jsonl", self.sid);
            let (file, size) = match kind {
                OpenKind::NoFile => (None, None),
                OpenKind::Small => (Some(file), Some(4_096)),
                OpenKind::Large => (Some(file), Some(2 * BACKGROUND_LOAD_BYTES)),
            };
            let out = self.call(Input::Open {
                session_id: self.sid.clone(),
                file,
                size,
                leaf: self.branch.last().map(|e| e.id.clone()),
                background: true,
                read_ahead: None,
            })?;
            self.drive(out, false)?;
            check!(
                self.waiting_for_branch,
                "an open ({kind:?}) whose load read nothing does not ask for the branch"
            );
            // While it waits, the engine refuses hooks.
            let out = self.call(Input::Tool {
                call_id: "early".into(),
                name: "history_list_windows".into(),
                args: json!({}),
                moment: serde_json::from_value(self.moment_json(true))
                    .map_err(|e| e.to_string())?,
            })?;
            check!(
                out.refused.is_some(),
                "a tool while the engine waits for the branch was answered"
            );
        }
        let entries = self.branch_values();
        let out = self.call(Input::Resync {
            session_id: self.sid.clone(),
            entries,
        })?;
        self.mirrored = self.branch.len();
        check!(
            !out.needs_branch && out.refused.is_none(),
            "a resync leaves the engine waiting for the branch"
        );
        let tip = self.branch.last().map(|e| e.id.clone());
        check!(
            out.tip == tip,
            "after a resync the tip {:?} is not {tip:?}",
            out.tip
        );
        Ok(())
    }

    pub(super) fn branch_values(&self) -> Vec<Value> {
        self.raws[..self.mirrored.min(self.raws.len())]
            .iter()
            .map(|r| serde_json::from_str(r).expect("a raw entry is JSON"))
            .collect()
    }

    /// `known`: where the new leaf meets the mirror, as the driver asks after a navigation.
    pub(super) fn known(&mut self, mirrored_ids: &[String]) -> Result<(), String> {
        let ids: Vec<String> = self.branch.iter().rev().map(|e| e.id.clone()).collect();
        let expected = ids.iter().position(|id| mirrored_ids.contains(id));
        let out = self.call(Input::Known { ids })?;
        check!(
            out.value == Some(Answer::Known(expected)),
            "known answered {:?}, expected {expected:?}",
            out.value
        );
        Ok(())
    }
}

/// The fresh engine the live one is compared with: configured, resynced from the part of the
/// branch the live one was given, `/relay on|off` as the user left it.
pub(super) fn fresh_engine(host: &Host) -> Engine {
    let mut fresh = Engine::new();
    fresh.handle(Input::Configure {
        sources: Box::new(Host::sources(host.applied)),
    });
    fresh.handle(Input::Resync {
        session_id: host.sid.clone(),
        entries: host.branch_values(),
    });
    if let Some(on) = host.toggle {
        let _ = command(&mut fresh, host, if on { "on" } else { "off" });
    }
    fresh
}

/// `/relay <args>` to `engine`: its output.
pub(super) fn command(engine: &mut Engine, host: &Host, args: &str) -> Output {
    let observation = serde_json::from_value(json!({
        "moment": host.moment_json(false),
        "event": { "type": "command", "args": args },
    }))
    .expect("a command observation reads");
    engine.handle(Input::Hook { observation })
}

/// What an engine answers about the session, for two engines that must agree: the head of the
/// `/relay` status (the window and the usage estimate; an operation in flight is the live
/// engine's own) and `get_context_remaining`.
pub(super) fn answers(engine: &mut Engine, host: &Host) -> (Option<String>, String) {
    let status = command(engine, host, "status")
        .effects
        .iter()
        .find_map(|e| match e {
            relay_core::engine::Effect::Status { text } => text.clone(),
            _ => None,
        });
    let head = status.map(|s| {
        s.split(" · ")
            .take(2)
            .filter(|p| !p.starts_with("reset pending"))
            .collect::<Vec<_>>()
            .join(" · ")
    });
    let remaining = probe(engine, host, "get_context_remaining", &json!({}));
    (head, remaining)
}

/// A read-only tool's text, through the door.
pub(super) fn probe(engine: &mut Engine, host: &Host, tool: &str, args: &Value) -> String {
    let out = engine.handle(Input::Tool {
        call_id: "probe".into(),
        name: tool.into(),
        args: args.clone(),
        moment: serde_json::from_value(host.moment_json(true)).expect("a moment reads"),
    });
    match out.reply {
        Some(reply) => reply.text,
        None => format!("no reply: {out:?}"),
    }
}
