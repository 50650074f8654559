//! Tool dispatch: every tool call the model makes, by name, to the module that answers it.
//!
//! **Contract.**
//! - History and notes reads answer from the mirror; the notes writes are validated here and
//!   returned as an entry to persist ([`ToolReply::persist`]): the note changes only when the
//!   mirror sees that entry, so the branch stays the source of truth.
//! - `new_context` asks the one scheduler; `get_context_remaining` reports Pi's own usage figure
//!   (tools are the only calls that carry it) less the compaction reserve.
//! - `context_handoff` is three steps because the binding does IO between them:
//!   [`Engine::handoff_begin`] (mode and arguments), [`Engine::handoff_render`] (back-off check
//!   and rendering, given the git facts), [`Engine::handoff_written`] (arm the commit at this
//!   turn's end). Nothing is committed unless all three ran.
//! - An unknown tool name is a tool error, never a panic.

use serde_json::{json, Value};

use super::budget::ReadyHandoff;
use super::files::{HandoffSidecar, TelemetryEvent};
use super::wire::{GitFacts, HookReply, Moment, ToolReply};
use super::Engine;
use crate::args;
use crate::handoff::{
    duplicate_check, narrative_cuts, HandoffArgs, HandoffError, HandoffFingerprint, HandoffMeta,
};
use crate::integrations::{self, IntegrationFacts};
use crate::notes::NoteOp;
use crate::policy::{self, handoff_is_forced, Mode, PolicyInput};
use crate::records::{CustomRecord, HandoffRecord};
use crate::render::handoff::{render_markdown_with, shortened_reply};
use crate::resume_check::CheckResult;
use crate::scheduler::NewContextAnswer;
use crate::settings::remaining_tokens;
use crate::tool_name::ToolName;
use crate::ToolOutput;

/// The reset guard's refusal of `new_context` in a window opened by a reset that holds no work
/// yet (no user message, no successful tool but the reset tools): a reset now would start over
/// from the same notes and the same boot block, so a model calling it in a loop stops here.
pub const RESET_GUARD_NEW_CONTEXT: &str = "new_context: refused: this context window was opened by a reset and nothing has happened in it yet (no user message, no tool result), so another reset would only repeat it. Continue the task from the boot block and your notes; call new_context once you have done work worth leaving behind.";

/// The same guard for a voluntary `context_handoff` (one the budget does not require).
pub const RESET_GUARD_HANDOFF: &str = "context_handoff: refused: this context window was opened by a reset and nothing has happened in it yet (no user message, no tool result), so another handoff would only repeat the one you continue from. Continue the task; the budget asks for a handoff when one is needed.";

impl Engine {
    /// Run one of Relay's tools (`context_handoff` goes through the `handoff_*` steps instead).
    pub(crate) fn tool(&mut self, name: &str, args: &Value, moment: &Moment) -> ToolReply {
        self.tz_offset_minutes = moment.tz_offset_minutes;
        self.observe_guard(moment);
        // Only the tools whose spec says `uses_pi_usage` get Pi's figure; the others are judged by
        // the incremental estimate, as hooks are.
        let estimated;
        let moment = if moment.usage.is_some() {
            moment
        } else {
            estimated = Moment {
                usage: self.mirror.usage(moment),
                ..moment.clone()
            };
            &estimated
        };
        if ToolName::of(name).is_history() && self.mirror.skimmed {
            // The extension waits for the whole history first (`needs_history`); never answer
            // from the part that is loaded as if it were all of it.
            return ToolOutput::error(format!(
                "{name}: the earlier windows of this session are still loading; call it again"
            ))
            .into();
        }
        if ToolName::of(name) == ToolName::Memory {
            // Anthropic's memory tool: the notes call it means runs as if the model had made it.
            return match crate::memory_tool::translate(&self.mirror.notes, args) {
                Ok(call) => self.tool(call.tool, &call.args, moment),
                Err(out) => out.into(),
            };
        }
        let history = &self.mirror.history;
        let notes = &self.mirror.notes;
        match name {
            "history_list_windows" => history.list_windows(args).into(),
            "history_list_items" => history.list_items(args).into(),
            "history_read_item" => history.read_item(args).into(),
            "history_search_contents" => history.search_contents(args).into(),
            "notes_list_files_by_prefix" => notes.list_files_by_prefix(args).into(),
            "notes_read_file" => notes.read_file(args).into(),
            "notes_search_contents" => notes.search_contents(args).into(),
            "notes_write_file" | "notes_append_to_file" => {
                match notes.prepare(name, args, moment.now_ms) {
                    Err(out) => out.into(),
                    Ok(op) => {
                        // `prepare` validated the operation against the current note; describe
                        // the note after it without copying it.
                        let text = note_after(notes.get(&op.path).map(|n| n.content.as_str()), &op);
                        let mut reply: ToolReply = text.into();
                        if !reply.is_error {
                            reply.persist = Some(op.record().marker());
                        }
                        reply
                    }
                }
            }
            "new_context" => {
                if let Err(out) = args::decode::<args::NewContext>(name, args) {
                    return out.into();
                }
                if self.mirror.current_window().idle_since_reset() {
                    return ToolOutput::error(RESET_GUARD_NEW_CONTEXT).into();
                }
                let (text, terminate, is_error) = match self.scheduler.new_context() {
                    NewContextAnswer::Scheduled => (
                        "A new context window will start as soon as this run settles. End your turn now; the next window opens with your notes index.",
                        true,
                        false,
                    ),
                    NewContextAnswer::AlreadyPending => (
                        "A reset is already pending; it happens as soon as this run settles. End your turn now.",
                        true,
                        false,
                    ),
                    NewContextAnswer::Disabled => (
                        "Relay's context windows are off (/relay on enables them); no reset was scheduled.",
                        false,
                        true,
                    ),
                };
                let mut reply = ToolReply {
                    text: text.into(),
                    is_error,
                    terminate,
                    ..ToolReply::default()
                };
                reply.effects.push(self.status_effect(moment));
                reply
            }
            "get_context_remaining" => {
                if let Err(out) = args::decode::<args::GetContextRemaining>(name, args) {
                    return out.into();
                }
                let reserve = self.reserve_for(moment);
                let remaining = moment
                    .usage
                    .and_then(|u| remaining_tokens(u.context_window, u.tokens, reserve));
                ToolOutput::json(&json!({ "remaining_tokens": remaining })).into()
            }
            other => ToolOutput::error(format!("unknown tool {other:?}")).into(),
        }
    }

    /// `context_handoff`, step 1: is the tool active, and are the arguments valid?
    pub(crate) fn handoff_begin(
        &mut self,
        args: &Value,
        moment: &Moment,
    ) -> Result<HandoffArgs, Box<ToolReply>> {
        self.observe_guard(moment);
        self.refresh_params(moment);
        let parsed =
            HandoffArgs::parse(args).map_err(|e| Box::new(ToolReply::from(e.to_tool_output())))?;
        if !self.enabled() {
            // `/relay off` or `relay.enabled: false`: no reset can follow, so nothing is written.
            return Err(Box::new(ToolReply::from(ToolOutput::json(&json!({
                "written": false,
                "relay": "off",
                "message": "Relay is off in this session (/relay on or the relay.enabled setting turns it on): no handoff was written and no reset follows. Keep working in this window.",
            })))));
        }
        let mode = &self.budget_mode();
        if mode.effective != Mode::Enforce {
            let mut reply = ToolReply::from(ToolOutput::json(&json!({
                "written": false,
                "mode": mode.effective.as_str(),
                "configured_mode": mode.configured.as_str(),
                "reason": mode.reason,
                "message": "Handoffs are not enforced here (budget policy mode is not enforce): nothing was written and no reset follows. Keep working; use notes and new_context to carry state across windows.",
            })));
            if mode.effective == Mode::Observe {
                let event = self
                    .telemetry_event(
                        TelemetryEvent::Handoff {
                            goal_chars: parsed.goal.chars().count(),
                        },
                        moment,
                    )
                    .would();
                reply.effects.push(super::wire::Effect::Telemetry {
                    event: Box::new(event),
                });
            }
            return Err(Box::new(reply));
        }
        if !handoff_is_forced(&self.budget.policy)
            && self.mirror.current_window().idle_since_reset()
        {
            return Err(Box::new(ToolReply::from(ToolOutput::error(
                RESET_GUARD_HANDOFF,
            ))));
        }
        Ok(parsed)
    }

    /// `context_handoff`, step 2: back-off check and rendering, with the metadata the binding
    /// collected (and the resume check it ran, which goes under `## Resume check`, and what the
    /// optional integrations list, each section within its own allowance; `None` renders every
    /// integration as unavailable).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn handoff_render(
        &mut self,
        args: &HandoffArgs,
        git: &GitFacts,
        resume: Option<&CheckResult>,
        facts: Option<&IntegrationFacts>,
        markdown_path: &str,
        sequence: u32,
        moment: &Moment,
    ) -> Result<(String, HandoffSidecar, HandoffFingerprint), Box<ToolReply>> {
        if !handoff_is_forced(&self.budget.policy) {
            if let Err(retry) = duplicate_check(
                self.mirror.last_fingerprint(),
                moment.now_ms,
                git.head.as_deref(),
                args,
            ) {
                return Err(Box::new(
                    ToolOutput::error(retry.message(moment.tz_offset_minutes)).into(),
                ));
            }
        }
        self.outstanding.handoff_launch_prompt = args.launch_prompt.clone();
        let history = &self.mirror.history;
        let meta = HandoffMeta {
            timestamp_ms: moment.now_ms,
            tz_offset_minutes: moment.tz_offset_minutes,
            cwd: moment.cwd.clone(),
            repo_root: git.repo_root.clone(),
            git_branch: git.branch.clone(),
            git_head: git.head.clone(),
            git_state: git.state,
            session_id: history.session_id().to_string(),
            sequence,
            window_id: history.current_window_id().to_string(),
        };
        let none = IntegrationFacts::default();
        let rendered = integrations::render(facts.unwrap_or(&none), &meta.session_id);
        let reserved = if resume.is_some() {
            super::resume::RESUME_RESERVE_BYTES
        } else {
            0
        };
        let mut markdown = render_markdown_with(args, &meta, &rendered.markdown(), reserved)
            .map_err(|e: HandoffError| ToolReply::from(e.to_tool_output()))?;
        let mut sidecar = HandoffSidecar::new(args, &meta, markdown_path);
        sidecar.integrations = rendered.sidecar;
        self.budget.recorded_jobs = rendered.recorded_jobs;
        self.budget.recorded_workspace = git.workspace.clone();
        sidecar.workspace = git.workspace.clone();
        self.outstanding.handoff_cuts = narrative_cuts(args);
        if let Some(result) = resume {
            markdown = super::resume::with_resume_section(markdown, result);
            sidecar.resume_check = Some(result.clone());
        }
        let fingerprint = HandoffFingerprint::new(args, moment.now_ms, git.head.as_deref());
        Ok((markdown, sidecar, fingerprint))
    }

    /// `context_handoff`, step 3: the files are written; arm the commit at this turn's end.
    pub(crate) fn handoff_written(
        &mut self,
        path: &str,
        markdown: String,
        fingerprint: HandoffFingerprint,
        moment: &Moment,
    ) -> ToolReply {
        let fx = self.policy_step(PolicyInput::HandoffWritten {
            path: path.to_string(),
        });
        let mut hook = HookReply::default();
        self.apply_policy(fx, moment, &mut hook);
        let committing = self.budget.policy.phase() == policy::Phase::HandoffPendingCommit;
        // No silent cut: sections the narrative budget shortened are named with their sizes.
        let cuts = std::mem::take(&mut self.outstanding.handoff_cuts);
        let sidecar = match path.strip_suffix(".md") {
            Some(stem) => format!("{stem}.json"),
            None => format!("{path}.json"),
        };
        let shortened = shortened_reply(&cuts, &sidecar);
        // Valid until a later real tool result, a new external run or a new window.
        let launch_prompt = self.outstanding.handoff_launch_prompt.take();
        let launch_prompt_of_record = launch_prompt.clone();
        self.budget.stored_handoff = Some(ReadyHandoff {
            path: path.to_string(),
            markdown: markdown.clone(),
            launch_prompt: launch_prompt.clone(),
        });
        let mut out = if committing {
            self.budget.handoff_ready = Some(ReadyHandoff {
                path: path.to_string(),
                markdown,
                launch_prompt,
            });
            json!({
                "written": true,
                "path": path,
                "commit": "at the end of this turn the context resets and work continues from this handoff; end your turn now and call no other tool",
            })
        } else {
            // A cap or loop-guard fallback is armed (or a reset is already under way): the file
            // stays as a record, but it cannot replace the fallback.
            json!({
                "written": true,
                "path": path,
                "committed": false,
                "reason": "a fallback reset is already armed for this window; this handoff is kept on disk but does not replace it. End your turn.",
            })
        };
        if let (Some(s), Value::Object(m)) = (shortened, &mut out) {
            m.insert("shortened".into(), s);
        }
        let mut reply = ToolReply::from(ToolOutput::json(&out));
        let record = HandoffRecord {
            v: crate::records::VERSION,
            path: path.to_string(),
            fingerprint,
            launch_prompt: launch_prompt_of_record,
            // The jobs and watches recorded for the next window's watch check (absent: no
            // registry).
            jobs: self.budget.recorded_jobs.take(),
            // The workspace recorded for the next window's stale-handoff check (absent: not
            // collected).
            workspace: self.budget.recorded_workspace.take(),
        };
        reply.persist = Some(record.marker());
        reply.effects = hook.effects;
        reply
    }

    /// `context_handoff` when its files could not be written (a full disk, a read-only folder):
    /// the handoff still commits from memory, since the next window's boot block carries the
    /// whole markdown, and the reply tells the model that the file at `path` does not exist.
    /// `error` is the write's error text. The user is told by the binding.
    pub(crate) fn handoff_unsaved(
        &mut self,
        path: &str,
        markdown: String,
        fingerprint: HandoffFingerprint,
        moment: &Moment,
        error: &str,
    ) -> ToolReply {
        let mut reply = self.handoff_written(path, markdown, fingerprint, moment);
        if let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(&reply.text) {
            m.insert("written".into(), json!(false));
            m.insert(
                "saved".into(),
                json!(format!(
                    "no: the file could not be written ({error}); do not read it. The handoff is kept in the session and the next window starts from it."
                )),
            );
            reply.text = ToolOutput::json(&Value::Object(m)).text;
        }
        reply
    }
}

/// The notes tool result after `op`, computed from the note before it (no copy of the note):
/// `{"path","deleted":true}` for a delete, else `{"path","lines","bytes","deleted":false}`, the
/// same shape `Notes::op_result` gives after replaying the operation.
pub(super) fn note_after(before: Option<&str>, op: &NoteOp) -> ToolOutput {
    use crate::notes::NoteOpKind;
    let newlines = |t: &str| memchr::memchr_iter(b'\n', t.as_bytes()).count();
    let (bytes, breaks, last) = match op.kind {
        NoteOpKind::Write if op.content.is_empty() => {
            return ToolOutput::json(&json!({ "path": op.path, "deleted": true }));
        }
        NoteOpKind::Write => (
            op.content.len(),
            newlines(&op.content),
            op.content.as_bytes().last(),
        ),
        NoteOpKind::Append => {
            let old = before.unwrap_or("");
            let last = op.content.as_bytes().last().or(old.as_bytes().last());
            (
                old.len() + op.content.len(),
                newlines(old) + newlines(&op.content),
                last,
            )
        }
    };
    // Lines as `count_lines` counts them: "" has none, a final line without "\n" counts.
    let lines = breaks + usize::from(bytes > 0 && last != Some(&b'\n'));
    ToolOutput::json(&json!({ "path": op.path, "lines": lines, "bytes": bytes, "deleted": false }))
}
