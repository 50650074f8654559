//! The `context` hook's operation: the window's resume, watch and stale-handoff checks, each once
//! and in that order, each a job when it is due, then the messages every request of the window
//! carries. Nothing due: one answer.

use super::super::wire::{Marker, Moment, Observation, ResumeFacts, ToolStub};
use super::super::Engine;
use super::{
    aborted, deadlines, finished_at, value_of, ContextOp, ContextStage, HostFacts, JobResult, Op,
    Output, Work,
};
use crate::resume_check::CheckResult;
use crate::staleness::StaleReport;

impl Engine {
    // ----- the `context` hook -----

    /// A `context` hook: the observation, then the window's checks (each a job when due), then
    /// the messages the request carries. Nothing due: one answer.
    pub(crate) fn context_hook(&mut self, obs: &Observation) -> Output {
        let reply = self.observe(obs);
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
        self.tell_stubs(&mut out);
        out
    }

    /// The window's clearings hold for every request of it, whatever else the hook says: every
    /// answer to a `context` hook leaves the host holding the window's stubs. They cross only
    /// when they differ from what the host holds (a compare, no copy).
    fn tell_stubs(&mut self, out: &mut Output) {
        let told = self.stubs_told.as_ref();
        if !told.is_some_and(|told| told.iter().eq(self.mirror.window_stub_iter())) {
            let stubs: Vec<_> = self.mirror.window_stub_iter().cloned().collect();
            out.stubs = Some(stubs.iter().map(ToolStub::from).collect());
            self.stubs_told = Some(stubs);
        }
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

    pub(super) fn context_done(
        &mut self,
        op: ContextOp,
        results: &[JobResult],
        moment: &Moment,
    ) -> Output {
        let mut out = Output::default();
        if aborted(results) {
            self.context_aborted(&op);
            self.tell_stubs(&mut out);
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
                        let record = super::super::resume::resume_record(&op.window, at, &result);
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
                    Some(report) => match self.stale_result(&op.window, at, &report) {
                        Some(record) => self.appended(op.window, record, out),
                        // A re-check that found what the last check found: nothing moved.
                        None => self.context_next(moment, out),
                    },
                    // Not collected (deadline, failure): nothing is claimed about the workspace.
                    None => self.context_next(moment, out),
                }
            }
            ContextStage::Appended => self.context_next(moment, out),
        }
    }

    /// Pi's abort (Esc) stopped the check `op` waited for: it counts as not run. Nothing of it is
    /// recorded, and the window's next request runs it again: the checks are there for the
    /// window's first answered request, the aborted request got no answer (an aborted or failed
    /// reply does not count, `Mirror::window_answered`), so the model has seen no result yet; and a stopped
    /// command left no result worth showing. Each retry can be stopped the same way.
    fn context_aborted(&mut self, op: &ContextOp) {
        match op.stage {
            ContextStage::Resume if self.budget.resume_started.as_deref() == Some(&op.window) => {
                self.budget.resume_started = None;
            }
            ContextStage::Stale if self.budget.stale_started.as_deref() == Some(&op.window) => {
                self.budget.stale_started = None;
                // A re-check (the window was checked before) is still owed.
                if self.mirror.current_window().stale_check.is_some() {
                    self.budget.stale_recheck = true;
                }
            }
            // The resume check's session name and the watch check's registries: nothing was
            // handed out yet (the check is marked when its facts are in).
            _ => {}
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
}
