//! [`Engine::handle`]: the engine's one entry. Every [`Input`] goes in here and every answer
//! comes out as an [`Output`], whose `tip`, `needsBranch` and `historyComplete` tell the host
//! what the mirror holds after it.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::*;
use crate::engine::wire::Event;

/// The user's last `/relay on|off` per session, for this process: the addon outlives the
/// engines a `/reload` re-creates (the library is loaded once), so the new engine applies the
/// toggle again at its `session_start`. A restart of Pi, or another session, starts from the
/// `relay.enabled` setting. Memory of the process, not IO: the engine stays sans-IO.
fn toggles() -> &'static Mutex<HashMap<String, String>> {
    static TOGGLES: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    TOGGLES.get_or_init(|| Mutex::new(HashMap::new()))
}

fn toggle_memory() -> std::sync::MutexGuard<'static, HashMap<String, String>> {
    toggles()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How much of Pi's schema-check error the engine reads (UTF-16 units, as JavaScript counts):
/// Pi's list of what is wrong comes first, its copy of every argument (which may be 100 MB) after.
pub(in crate::engine) const PI_ERROR_HEAD: usize = 65_536;

/// The first [`PI_ERROR_HEAD`] UTF-16 units of `message` (never splitting a character).
pub(in crate::engine) fn pi_error_head(message: &str) -> &str {
    let mut units = 0;
    for (at, c) in message.char_indices() {
        units += c.len_utf16();
        if units > PI_ERROR_HEAD {
            return &message[..at];
        }
    }
    message
}

impl Engine {
    /// The engine's one entry: one input in, what to do about it out.
    pub fn handle(&mut self, mut input: Input) -> Output {
        let feed = matches!(input, Input::Feed(_));
        self.resolve_window(&mut input);
        let mut out = self.dispatch(input);
        // Warnings go with an output that is not refused (a refused one fails the host's call).
        let warnings = match out.refused {
            None => std::mem::take(&mut self.loads.warnings),
            Some(_) => Vec::new(),
        };
        if !warnings.is_empty() {
            let mut effects: Vec<Effect> = warnings
                .into_iter()
                .map(|text| Effect::Log { text })
                .collect();
            effects.append(&mut out.effects);
            out.effects = effects;
        }
        // A history text that no longer matches the session file: load the session again.
        if self.history().unreadable() {
            self.loads.needs_branch = true;
        }
        out.drafts = out.result.as_ref().map(Draft::of).unwrap_or_default();
        out.tip = self.tip().map(str::to_string);
        out.answered_model = self.name_answer(feed);
        out.needs_branch = self.loads.needs_branch;
        out.history_complete = self.history_complete();
        out.boundary = self.boundary;
        out
    }

    /// A fresh engine in place of this one after a panic: the last configuration that applied
    /// and the last `/relay on|off`, as after a `/reload`, waiting for the whole branch. What
    /// this one told the user is not told again.
    pub fn restarted(&self) -> Engine {
        let mut fresh = Engine::new();
        // Jobs of this engine may still run: the new one's ids follow theirs.
        fresh.ops.continue_from(&self.ops);
        fresh.told = self.told.clone();
        fresh.write_failure_told = self.write_failure_told;
        if let Some(sources) = &self.last_sources {
            // Its warnings were told when it first applied.
            let mut told = std::mem::take(&mut fresh.told);
            let _ = fresh.configure_reply(sources, &mut told);
            fresh.told = told;
            fresh.last_sources = Some(sources.clone());
        }
        if let Some(args) = &self.toggle {
            let _ = fresh.observe(&Observation {
                moment: Moment::default(),
                event: Event::Command { args: args.clone() },
            });
            fresh.toggle = Some(args.clone());
        }
        fresh.loads.needs_branch = true;
        fresh
    }

    /// An engine with the default configuration, waiting for the whole branch (a restart whose
    /// configuration itself failed).
    pub fn waiting_for_branch() -> Engine {
        let mut fresh = Engine::new();
        fresh.loads.needs_branch = true;
        fresh
    }

    /// This engine's job and operation ids start after `first`: engines of one process (a
    /// subagent's, a restarted one) share the job runner, whose tables are keyed by job id.
    pub fn with_ids_after(mut self, first: u64) -> Self {
        self.ops.start_after(first);
        self
    }

    /// A file of Relay's could not be written: the first such failure is one warning, later
    /// ones are not told (the engine's one record of what it told the user).
    pub(super) fn write_failed(&mut self, text: String) -> Option<Effect> {
        if self.write_failure_told {
            return None;
        }
        self.write_failure_told = true;
        Some(Effect::Notify {
            text: format!(
                "{text}. Relay keeps working; failures to write its files are not reported again."
            ),
            level: NotifyLevel::Warning,
        })
    }

    /// The session the mirror holds.
    pub fn session_id(&self) -> &str {
        self.history().session_id()
    }

    fn refused(text: impl Into<String>) -> Output {
        Output {
            refused: Some(text.into()),
            ..Output::default()
        }
    }

    fn dispatch(&mut self, input: Input) -> Output {
        let answer = |a: Answer| Output {
            value: Some(a),
            ..Output::default()
        };
        match input {
            Input::Describe {
                pi_version,
                config_dir,
                runtime,
                .. // `relaunch_key_file`: the binding's
            } => {
                let tools = super::super::tool_specs();
                answer(Answer::Description(Description {
                    refusal: crate::host::host_refusal(&pi_version, &config_dir, &runtime),
                    last_resort: Description::last_resorts(&tools),
                    tools,
                    command: super::super::specs::command_spec(),
                    hooks: super::description::HookSpec::all(),
                    router_api: crate::engine::wire::ROUTER_API,
                    rendered_types: super::super::tui::RENDERED_TYPES
                        .iter()
                        .map(|t| t.to_string())
                        .collect(),
                }))
            }
            Input::Configure { sources } => {
                let mut told = std::mem::take(&mut self.told);
                let reply = self.configure_reply(&sources, &mut told);
                self.told = told;
                self.last_sources = Some(*sources);
                Output::from_hook(reply)
            }
            Input::Open {
                session_id,
                file,
                size,
                leaf,
                background,
                read_ahead,
            } => self.open(
                &session_id,
                file.as_deref(),
                size,
                leaf.as_deref(),
                background,
                read_ahead.as_deref(),
            ),
            Input::Resync {
                session_id,
                entries,
            } => self.resync_from(&session_id, &entries),
            Input::Prefetch { file, size } => self.prefetch(&file, size),
            Input::Close => {
                let mut out = Output::default();
                self.drop_loads(&mut out);
                self.drop_read_ahead(&mut out);
                out
            }
            Input::History => Output {
                history_load: self.history_load(),
                ..Output::default()
            },
            Input::Known { ids } => {
                answer(Answer::Known(ids.iter().position(|id| self.contains(id))))
            }
            Input::Hook { observation } => self.hook(&observation),
            Input::Tool {
                call_id: _,
                name,
                args,
                moment,
            } => {
                if self.loads.needs_branch {
                    return Self::refused(WAITING);
                }
                self.tool_input(&name, &args, &moment)
            }
            Input::Prepare { tool, args } => answer(match crate::args::prepare(&tool, &args) {
                Ok(args) => Answer::Prepared { args },
                Err(e) => Answer::Refused {
                    error: Some(e.text),
                },
            }),
            Input::SchemaRefused { tool, message } => {
                let message = pi_error_head(&message);
                answer(match crate::args::is_schema_refusal(message) {
                    true => Answer::Refused {
                        error: Some(crate::args::schema_refusal(&tool, message)),
                    },
                    false => Answer::Refused { error: None },
                })
            }
            Input::Guards { agent_dir } => self.guards(&agent_dir),
            Input::Done {
                op,
                results,
                moment,
                loaded,
            } => self.jobs_done(op, &results, &moment, loaded),
            Input::Failed { hook, message } => self.failed(&hook, &message),
            Input::Feed(feed) => match self.feed(feed) {
                Ok(()) => Output::default(),
                Err(text) => Self::refused(text),
            },
            Input::WriteFailed { text } => Output {
                effects: self.write_failed(text).into_iter().collect(),
                ..Output::default()
            },
            Input::RelaunchUnwritten { why, observation } => {
                Output::from_hook(self.relaunch_unwritten(&observation, &why))
            }
        }
    }

    /// A Pi hook: the `/relay on|off` memory across reloads, the loads a shutdown stops, the
    /// engine's answer, and the whole history's load at the first settle.
    fn hook(&mut self, observation: &Observation) -> Output {
        if self.loads.needs_branch {
            return Self::refused(WAITING);
        }
        let session = self.session_id().to_string();
        let mut recalled = Vec::new();
        let mut stopped = Output::default();
        match &observation.event {
            Event::Command { args } if args == "on" || args == "off" => {
                self.toggle = Some(args.clone());
                toggle_memory().insert(session, args.clone());
            }
            // A load still running is for nobody now (`pi -p` ends, `/quit`, a switch): it
            // stops, and Pi does not wait for it.
            Event::SessionShutdown => self.drop_loads(&mut stopped),
            Event::SessionStart { .. } if self.toggle.is_none() => {
                let remembered = toggle_memory().get(&session).cloned();
                if let Some(args) = remembered {
                    self.toggle = Some(args.clone());
                    recalled = self
                        .observe(&Observation {
                            moment: observation.moment.clone(),
                            event: Event::Command { args },
                        })
                        .effects;
                }
            }
            _ => {}
        }
        let mut out = if observation.event == Event::Context {
            self.context_hook(observation)
        } else {
            let reply = self.observe(observation);
            let load_history = reply.load_history;
            let mut out = Output::from_hook(reply);
            if load_history {
                out.history_load = self.history_load();
            }
            // Pi's compaction is a job of the input's operation: the input goes on once it ends.
            if let Some(HookResult::Compact { attempt }) = out.result {
                out.result = None;
                let id = self.ops.id();
                self.ops.quiet.insert(id);
                out.jobs.push(Job {
                    id,
                    deadline_ms: NO_DEADLINE_MS,
                    work: Work::Compact,
                });
                out = self.wait(Op::Compact { attempt }, out);
            }
            out
        };
        recalled.append(&mut out.effects);
        out.effects = recalled;
        out.cancel = stopped.cancel;
        out
    }
}

impl Engine {
    /// Pi's compaction for reset `attempt` ended: done, or its failure is the input's
    /// [`Event::CompactError`] (an abort is one too).
    pub(super) fn compacted(
        &mut self,
        attempt: u64,
        results: &[JobResult],
        moment: &Moment,
    ) -> Output {
        let error_message = match results.first().map(|r| &r.outcome) {
            Some(JobOutcome::Done { .. }) => return Output::default(),
            Some(JobOutcome::Failed { error, .. }) => error.clone(),
            Some(JobOutcome::Aborted) | None => "the compaction was aborted".to_string(),
        };
        let event = Event::CompactError {
            attempt,
            error_message,
        };
        Output::from_hook(self.observe(&Observation {
            moment: moment.clone(),
            event,
        }))
    }

    /// The results of operation `op`'s jobs: a load's, a `guards` vet's, or those of an
    /// operation that needs the branch.
    fn jobs_done(
        &mut self,
        op: u64,
        results: &[JobResult],
        moment: &Moment,
        loaded: Loaded,
    ) -> Output {
        if self.is_load(op) {
            self.load_done(op, results, loaded)
        } else if let Some(out) = self.guards_done(op, results) {
            out
        } else if self.loads.needs_branch {
            Self::refused(WAITING)
        } else {
            self.done(op, results, moment)
        }
    }

    /// The `guards` query: vet `<agent_dir>/lib/guards.ts` at once (a job the binding runs
    /// before the call returns), answered by [`Engine::guards_done`].
    fn guards(&mut self, agent_dir: &str) -> Output {
        let sep = if agent_dir.ends_with('/') { "" } else { "/" };
        let file = format!("{agent_dir}{sep}lib/guards.ts");
        let id = self.ops.id();
        let work = Work::Vet {
            path: file.clone(),
            cap: crate::engine::wire::MAX_GUARDS_BYTES,
        };
        self.ops.waiting.insert(id, Op::Guards { file });
        Output {
            run_now: Some(Job {
                id,
                deadline_ms: NO_DEADLINE_MS,
                work,
            }),
            ..Output::default()
        }
    }

    /// The answer to a `guards` query whose vet is job `op`; `None` for any other operation. A
    /// library that is there but refused (or could not be vetted) is not imported.
    fn guards_done(&mut self, op: u64, results: &[JobResult]) -> Option<Output> {
        use crate::engine::wire::Vetted;
        let Some(Op::Guards { .. }) = self.ops.waiting.get(&op) else {
            return None;
        };
        let Some(Op::Guards { file }) = self.ops.waiting.remove(&op) else {
            return None;
        };
        let (file, error) = match results.iter().find(|r| r.id == op).map(|r| &r.outcome) {
            Some(JobOutcome::Done { value, .. }) => match Vetted::deserialize(value) {
                Ok(Vetted::Missing) => (None, None),
                Ok(Vetted::Regular) => (Some(file), None),
                Ok(Vetted::Refused { why }) => (Some(file), Some(why)),
                Err(e) => (Some(file), Some(e.to_string())),
            },
            Some(JobOutcome::Failed { error, .. }) => (Some(file), Some(error.clone())),
            Some(JobOutcome::Aborted) | None => (Some(file), Some("not checked".to_string())),
        };
        Some(Output {
            value: Some(Answer::Guards { file, error }),
            ..Output::default()
        })
    }
}
