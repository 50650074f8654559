//! `context_handoff` as an operation: git (with what the handoff records of the workspace) and the
//! stores' places, then the stores, then the operator's resume check, then the live registries,
//! then git once more when a sibling tool finished meanwhile, then the file's number and the file
//! (another number when another writer took it). Pi's abort at any point: nothing is written.

use serde_json::Value;

use super::super::wire::{Moment, ResumeFacts, ToolReply};
use super::super::Engine;
use super::{
    aborted, aborted_reply, deadlines, failure_of, git_unknown, value_of, GitWire, HandoffOp,
    HandoffStage, HostFacts, Job, JobResult, Op, Output, Rendered, Work, HANDOFF_FILE_TRIES,
};
use crate::integrations::{IntegrationFacts, StoreContents};
use crate::resume_check::CheckResult;
use crate::tool_name::ToolName;

impl Engine {
    // ----- context_handoff -----

    /// A tool call: `context_handoff` starts an operation with jobs; every other tool answers at
    /// once.
    pub(crate) fn tool_input(&mut self, name: &str, args: &Value, moment: &Moment) -> Output {
        if ToolName::of(name) != ToolName::ContextHandoff {
            return Self::tool_output(self.tool(name, args, moment));
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

    pub(super) fn handoff_done(
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
                op.git = Some(value_of::<GitWire>(results, first).unwrap_or_else(git_unknown));
                let facts = jobs
                    .get(1)
                    .and_then(|id| value_of::<HostFacts>(results, *id))
                    .unwrap_or_default();
                op.session_name = facts.session_name;
                op.store_paths = Some(self.store_facts(moment).paths());
                let paths = op.store_paths.clone().unwrap_or_default();
                let work = Work::Stores {
                    questions_home: paths.questions_home,
                    claims_file: paths.claims_file,
                    task_dir: paths.task_dir,
                };
                self.handoff_next(op, HandoffStage::Stores, deadlines::STORES_MS, work, moment)
            }
            HandoffStage::Stores => {
                op.stores = value_of::<StoreContents>(results, first);
                self.handoff_resume(op, moment)
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
                    let work = Work::Git {
                        cwd: moment.cwd.clone(),
                        files: Some(op.args.files_to_read.clone()),
                    };
                    return self.handoff_next(
                        op,
                        HandoffStage::Recollect,
                        deadlines::GIT_MS,
                        work,
                        moment,
                    );
                }
                self.handoff_number(op, moment)
            }
            HandoffStage::Recollect => {
                if let Some(git) = value_of::<GitWire>(results, first) {
                    op.git = Some(git);
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
            HandoffStage::Write => self.handoff_file_done(op, results, first, moment),
        }
    }

    /// Ask for one job and wait for it in `stage`.
    fn handoff_next(
        &mut self,
        op: Box<HandoffOp>,
        stage: HandoffStage,
        deadline_ms: i64,
        work: Work,
        moment: &Moment,
    ) -> Output {
        let job = self.job(moment.now_ms, deadline_ms, work);
        self.handoff_wait(op, stage, job)
    }

    /// Wait for `job` in `stage`.
    fn handoff_wait(&mut self, mut op: Box<HandoffOp>, stage: HandoffStage, job: Job) -> Output {
        op.stage = stage;
        op.jobs = vec![job.id];
        let out = Output {
            jobs: vec![job],
            ..Output::default()
        };
        self.wait(Op::Handoff(op), out)
    }

    /// The operator's resume check, when one runs for this handoff; else the registries.
    fn handoff_resume(&mut self, op: Box<HandoffOp>, moment: &Moment) -> Output {
        let facts = ResumeFacts {
            env: self.settings.resume_check_env.clone(),
            session_name: op.session_name.clone(),
        };
        let head = op.git.as_ref().and_then(|g| g.head.clone());
        match self.handoff_resume_command(&op.raw_args, moment, head.as_deref(), &facts) {
            Some(command) => {
                let work = Work::ResumeCheck {
                    command: command.command,
                    source: command.source,
                    cwd: moment.cwd.clone(),
                };
                self.handoff_next(op, HandoffStage::Resume, deadlines::RESUME_MS, work, moment)
            }
            None => self.handoff_registries(op, moment),
        }
    }

    /// The file was written (commit), another writer took its number (choose again), or it
    /// could not be written (the handoff commits from memory and the user is told).
    fn handoff_file_done(
        &mut self,
        mut op: Box<HandoffOp>,
        results: &[JobResult],
        first: u64,
        moment: &Moment,
    ) -> Output {
        let Some(rendered) = op.rendered.take() else {
            return Self::tool_output(aborted_reply());
        };
        match failure_of(results, first) {
            None => {
                let path = value_of::<Value>(results, first)
                    .and_then(|v| v.get("path").and_then(Value::as_str).map(String::from))
                    .unwrap_or(rendered.path);
                let reply =
                    self.handoff_written(&path, rendered.markdown, rendered.fingerprint, moment);
                Self::tool_output(reply)
            }
            Some((_, true)) if op.tries < HANDOFF_FILE_TRIES => self.handoff_number(op, moment),
            Some((_, true)) => Self::tool_output(ToolReply {
                text: "context_handoff: cannot find a free handoff file name: too many concurrent handoffs. Nothing was committed; the context stays as it is.".into(),
                is_error: true,
                ..ToolReply::default()
            }),
            Some((error, false)) => {
                let mut reply = self.handoff_unsaved(
                    &rendered.path,
                    rendered.markdown,
                    rendered.fingerprint,
                    moment,
                    &error,
                );
                let text = format!(
                    "relay: cannot write the handoff file {}: {error}; the handoff is kept in the session and the next window starts from it",
                    rendered.path
                );
                reply.effects.extend(self.write_failed(text));
                Self::tool_output(reply)
            }
        }
    }

    fn handoff_registries(&mut self, op: Box<HandoffOp>, moment: &Moment) -> Output {
        let work = Work::Facts {
            session_name: false,
            registries: true,
            // The task directory's ids and those the subagent tools' results named.
            task_ids: crate::integrations::subagent_lookup_ids(
                op.stores.as_ref().and_then(|s| s.task_ids.as_deref()),
                &self.mirror.known_subagent_ids(),
            ),
        };
        self.handoff_next(
            op,
            HandoffStage::Registries,
            deadlines::FACTS_MS,
            work,
            moment,
        )
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
        self.handoff_wait(op, HandoffStage::Number, job)
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
                sidecar: Box::new(sidecar),
            },
        );
        op.rendered = Some(Rendered {
            path,
            markdown,
            fingerprint,
        });
        self.handoff_wait(op, HandoffStage::Write, job)
    }
}
