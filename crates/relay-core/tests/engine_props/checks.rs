//! The checks: what every hook's and tool's answer may hold, what a reset must carry, and the
//! state after every action (the branch, the mirror against a fresh resync, through the door).

use super::*;

impl Host {
    /// The user prompts of the current window, oldest first.
    pub(super) fn current_window_prompts(&self) -> Vec<String> {
        self.prompts_between(self.window_start(), self.branch.len())
    }

    pub(super) fn prompts_between(&self, from: usize, to: usize) -> Vec<String> {
        self.branch[from..to]
            .iter()
            .flat_map(|e| match &e.kind {
                EntryKind::Message(m) if m.role == "user" => prompts_in(&m.text),
                _ => Vec::new(),
            })
            .collect()
    }

    /// The user prompts of the newest window that holds any, oldest first: the current window's,
    /// else those of the newest earlier window with prompts (what a reset repeats).
    pub(super) fn recent_window_prompts(&self) -> Vec<String> {
        let mut to = self.branch.len();
        let mut starts: Vec<usize> = self
            .branch
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e.kind, EntryKind::Compaction { .. }))
            .map(|(i, _)| i)
            .collect();
        loop {
            let from = starts.pop().unwrap_or(0);
            let prompts = self.prompts_between(from, to);
            if !prompts.is_empty() || from == 0 {
                return prompts;
            }
            to = from;
        }
    }

    pub(super) fn steers_in_window(&self) -> usize {
        let from = self.window_start();
        self.branch[from.min(self.branch.len())..]
            .iter()
            .filter(|e| matches!(&e.kind, EntryKind::CustomMessage { custom_type, .. } if custom_type == STEER_TYPE))
            .count()
    }

    pub(super) fn max_attempt_on_branch(&self) -> u64 {
        self.branch
            .iter()
            .filter_map(|e| match &e.kind {
                EntryKind::Compaction { details, .. } => {
                    details.get("attempt").and_then(Value::as_u64)
                }
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    pub(super) fn window_ids_on_branch(&self) -> Vec<String> {
        self.branch
            .iter()
            .filter_map(|e| match &e.kind {
                EntryKind::Compaction { details, .. } => details
                    .get("windowId")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                _ => None,
            })
            .collect()
    }

    /// Telemetry, notices and texts every reply must respect.
    pub(super) fn check_effects(
        &mut self,
        hook: Hook,
        effects: &[Value],
        enabled: bool,
    ) -> Result<(), String> {
        let mode = self.applied.mode;
        for effect in effects {
            match effect["kind"].as_str().unwrap_or_default() {
                "send" => {
                    let custom_type = effect["customType"].as_str().unwrap_or_default();
                    let content = effect["content"].as_str().unwrap_or_default();
                    check!(
                        enabled,
                        "{}: disabled Relay sends {custom_type}",
                        hook.name()
                    );
                    check!(
                        prompts_in(content).is_empty(),
                        "{}: {custom_type} replays a user prompt",
                        hook.name()
                    );
                    match custom_type {
                        t if t == BOOT_TYPE => check!(
                            hook == Hook::SessionStart,
                            "boot block from {}",
                            hook.name()
                        ),
                        t if t == REMINDER_TYPE => check!(
                            matches!(hook, Hook::BeforeAgentStart | Hook::TurnEnd),
                            "reminder from {}",
                            hook.name()
                        ),
                        // The idle input's compaction failing is the input's (its job's result).
                        t if t == RESET_FAILED_TYPE => check!(
                            matches!(hook, Hook::Settled | Hook::CompactFailed | Hook::Input),
                            "reset-failed message from {}",
                            hook.name()
                        ),
                        t if t == STEER_TYPE => {
                            check!(
                                hook == Hook::BeforeCompact,
                                "notes steer from {}",
                                hook.name()
                            );
                            check!(
                                effect["deliverAs"] == "steer",
                                "notes steer not delivered as a steer: {effect}"
                            );
                            let borrowed = self.steers_in_window() + self.steers.len();
                            check!(
                                borrowed == 0,
                                "a second borrowed turn in one window ({borrowed} already)"
                            );
                            self.fresh_request = true;
                        }
                        other => {
                            return Err(format!("{}: unexpected message {other}", hook.name()))
                        }
                    }
                }
                "append" => check!(enabled, "{}: disabled Relay appends {effect}", hook.name()),
                "notify" => {
                    let text = effect["text"].as_str().unwrap_or_default();
                    check!(
                        prompts_in(text).is_empty(),
                        "a notice repeats a user prompt"
                    );
                    let reset_failed = enabled
                        && matches!(hook, Hook::Settled | Hook::CompactFailed | Hook::Input)
                        && text.starts_with("relay: the context window was not reset");
                    // Overflow recovery acts in every mode while Relay is on (observe recovers,
                    // off cancels Pi's compaction): its warnings say why a request failed.
                    let overflow = enabled
                        && matches!(hook, Hook::BeforeCompact | Hook::CompactFailed)
                        && (text.starts_with("relay: the context overflowed")
                            || text.starts_with("relay: the provider reported a context overflow"));
                    // A threshold compaction in a window that has not grown since its reset
                    // is skipped with a warning in every mode while Relay is on.
                    let futile = enabled
                        && hook == Hook::BeforeCompact
                        && text.starts_with("relay: this context window began at");
                    // A `/reload` or resume applies the session's `/relay on|off` again, with its
                    // notice.
                    let recalled = hook == Hook::SessionStart
                        && self.toggle.is_some()
                        && (text.starts_with("relay: on") || text.starts_with("relay: off"));
                    // A job that failed is told once, whatever the mode (jobs.rs's failures).
                    let job_failed = matches!(hook, Hook::Context | Hook::ToolCall)
                        && (text.contains(jobs::FAILED) || text.contains(jobs::DEADLINE));
                    check!(
                        hook == Hook::Command
                            || recalled
                            || job_failed
                            || (enabled && mode == Mode::Enforce)
                            || reset_failed
                            || overflow
                            || futile,
                        "{}: a notice in {} mode (enabled: {enabled}): {text}",
                        hook.name(),
                        mode.as_str()
                    );
                }
                "telemetry" => {
                    let name = effect["event"]["event"].as_str().unwrap_or_default();
                    check!(
                        mode != Mode::Off,
                        "{}: telemetry {name} in off mode",
                        hook.name()
                    );
                    // Reports about Relay itself (a configured/effective mode mismatch, a
                    // configuration problem) are not policy actions.
                    // Overflow recovery is the one automatic action observe takes (seed 004).
                    let about_relay =
                        matches!(name, "mode_mismatch" | "error") || name.starts_with("overflow_");
                    if (mode == Mode::Observe || !enabled) && !about_relay {
                        check!(
                            name.starts_with("would_"),
                            "{}: {name} while the policy only observes (mode {}, enabled {enabled})",
                            hook.name(),
                            mode.as_str()
                        );
                    }
                    if matches!(name, "handoff_committed" | "forced_reset") {
                        self.fresh_request = true;
                        self.reset_owed = true;
                    }
                    if name == "reset_dropped" {
                        self.reset_owed = false;
                    }
                }
                "status" | "writeStatus" | "log" | "activeTools" => {}
                // A handoff file that could not be written (the handoff commits from the session).
                "writeFailed" => check!(
                    hook == Hook::ToolCall && mode == Mode::Enforce,
                    "{}: a write failure outside a handoff",
                    hook.name()
                ),
                other => return Err(format!("{}: unknown effect {other}", hook.name())),
            }
        }
        Ok(())
    }

    /// Whether Relay owes the current window its one continuation after an early stop at this
    /// completed settle point (when nothing else is installed there): the window was opened by
    /// an automatic or forced reset, holds no user prompt, no tool call and no continue-task yet,
    /// its latest answer asked the user what to do, and no prompt is queued.
    pub(super) fn early_stop_owed(&self) -> bool {
        let start = self.window_start();
        let opened_automatically = matches!(
            self.branch.get(start).map(|e| &e.kind),
            Some(EntryKind::Compaction { details, .. })
                if details["relay"] == "window"
                    && matches!(
                        details["source"].as_str(),
                        Some("fallback" | "threshold" | "overflow" | "forced" | "idle" | "handoff")
                    )
        );
        if !opened_automatically || self.queued() {
            return false;
        }
        let mut last_answer = None;
        for e in &self.branch[start..] {
            match &e.kind {
                EntryKind::Message(m) if m.role == "user" || m.role == "toolResult" => {
                    return false
                }
                EntryKind::Message(m) if m.role == "assistant" => {
                    if m.stop_reason.as_deref() == Some("toolUse") {
                        return false;
                    }
                    last_answer = Some(m.text.as_str());
                }
                EntryKind::CustomMessage { custom_type, .. }
                    if custom_type == CONTINUE_TASK_TYPE =>
                {
                    return false
                }
                _ => {}
            }
        }
        last_answer == Some(ASK)
    }

    pub(super) fn check_hook(
        &mut self,
        hook: Hook,
        extra: &Value,
        reply: &Answered,
        enabled: bool,
    ) -> Result<(), String> {
        if hook == Hook::BeforeSettle && extra["outcome"] == "completed" && enabled {
            check!(
                !self.early_stop_owed() || reply.result.is_some(),
                "an early stop in a window an automatic reset opened was not continued"
            );
        }
        let effects: Vec<Value> = reply
            .effects
            .iter()
            .map(|e| serde_json::to_value(e).expect("effects serialise"))
            .collect();
        let acting = hook != Hook::Command;
        self.check_effects(hook, &effects, enabled || !acting)?;
        // A request carries the stubs of every clearing of its window, in order, and no other.
        let start = self
            .branch
            .iter()
            .rposition(|e| matches!(e.kind, EntryKind::Compaction { .. }))
            .unwrap_or(0);
        let cleared: Vec<(String, u64, String)> = self
            .branch
            .iter()
            .skip(start)
            .filter_map(|b| match &b.kind {
                EntryKind::Custom { custom_type, data } if custom_type == CLEARING_TYPE => {
                    data["stubs"].as_array().cloned()
                }
                _ => None,
            })
            .flatten()
            .map(|s| {
                let text = |k: &str| s[k].as_str().unwrap_or_default().to_string();
                (text("call"), s["nth"].as_u64().unwrap_or(0), text("text"))
            })
            .collect();
        // The host's stubs: the last the engine sent, kept while it sends none.
        let sent: Vec<(String, u64, String)> = self
            .stubs_held
            .iter()
            .map(|s| (s.call.clone(), u64::from(s.nth), s.text.clone()))
            .collect();
        check!(
            hook != Hook::Context || sent == cleared,
            "the request's stubs {sent:?} are not its window's clearings {cleared:?}"
        );
        check!(
            hook == Hook::Context || reply.stubs.is_none(),
            "{} answers stubs",
            hook.name()
        );
        // A final answer stays the run's last message: no reminder is queued behind it.
        if hook == Hook::TurnEnd && extra["toolResults"].as_u64() == Some(0) {
            check!(
                !effects
                    .iter()
                    .any(|e| e["customType"].as_str() == Some(REMINDER_TYPE)),
                "a reminder after a final answer"
            );
        }
        let Some(result) = &reply.result else {
            check!(
                !(hook == Hook::BeforeCompact && enabled),
                "Relay is on and lets Pi's summarizer run ({extra})"
            );
            return Ok(());
        };
        check!(
            enabled,
            "{}: disabled Relay answers {}",
            hook.name(),
            result_name(result)
        );
        match result {
            HookResult::Cancel => {
                check!(hook == Hook::BeforeCompact, "cancel from {}", hook.name())
            }
            // The door turns an idle input's compaction into a job: never a result.
            HookResult::Compact { .. } => {
                check!(false, "a compaction request from {}", hook.name())
            }
            HookResult::Block { .. } => {
                check!(hook == Hook::ToolCall, "block from {}", hook.name());
                check!(
                    extra["toolName"] != "context_handoff",
                    "context_handoff is blocked"
                );
                check!(
                    self.applied.mode == Mode::Enforce,
                    "a tool is blocked in {} mode",
                    self.applied.mode.as_str()
                );
            }
            HookResult::Continue { continuation }
                if continuation.custom_type == CONTINUE_TASK_TYPE =>
            {
                check!(
                    hook == Hook::BeforeSettle,
                    "continue-task from {}",
                    hook.name()
                );
                check!(
                    self.early_stop_owed(),
                    "a continue-task without an early stop owed in this window"
                );
                let latest: Vec<String> = self
                    .recent_window_prompts()
                    .last()
                    .cloned()
                    .into_iter()
                    .collect();
                check!(
                    prompts_in(&continuation.content) == latest,
                    "the continue-task quotes {:?}, not the latest prompt {latest:?}",
                    prompts_in(&continuation.content)
                );
            }
            HookResult::Continue { continuation } => {
                check!(hook == Hook::BeforeSettle, "continue from {}", hook.name());
                check!(
                    self.applied.mode == Mode::Enforce,
                    "a handoff request in {} mode",
                    self.applied.mode.as_str()
                );
                check!(
                    continuation.custom_type == HANDOFF_REQUEST_TYPE,
                    "continue with {}",
                    continuation.custom_type
                );
                check!(
                    prompts_in(&continuation.content).is_empty(),
                    "a handoff request replays a prompt"
                );
                self.idle_requested = continuation.content.contains("work is still pending");
                self.run_continues += 1;
                check!(
                    self.run_continues <= 1,
                    "a second handoff request in one run"
                );
            }
            HookResult::Reset { plan } => self.check_reset(hook, extra, plan)?,
            HookResult::Clear { record } => {
                check!(hook == Hook::TurnEnd, "a clearing from {}", hook.name());
                check!(
                    record.custom_type == CLEARING_TYPE,
                    "clearing record {}",
                    record.custom_type
                );
                let stubs = record.data["stubs"].as_array().cloned().unwrap_or_default();
                check!(!stubs.is_empty(), "a clearing of nothing");
                // Every target is a tool result of the current window, found by its call, that
                // no earlier clearing or edit replaced.
                let start = self
                    .branch
                    .iter()
                    .rposition(|e| matches!(e.kind, EntryKind::Compaction { .. }))
                    .unwrap_or(0);
                for stub in &stubs {
                    let id = stub["id"].as_str().unwrap_or_default();
                    let target = self.branch.iter().skip(start).find(|b| b.id == id);
                    check!(
                        matches!(target.map(|t| &t.kind), Some(EntryKind::Message(m)) if m.role == "toolResult" && m.tool_call_id.as_deref() == stub["call"].as_str()),
                        "a clearing replaces {id} (not a tool result of the current window, or not by its call)"
                    );
                    let again = self.branch.iter().any(|b| match &b.kind {
                        EntryKind::ContextEdit { target_id, .. } => target_id == id,
                        EntryKind::Custom { custom_type, data } if custom_type == CLEARING_TYPE => {
                            data["stubs"]
                                .as_array()
                                .is_some_and(|s| s.iter().any(|s| s["id"] == id))
                        }
                        _ => false,
                    });
                    check!(!again, "a clearing replaces {id} again");
                }
            }
        }
        Ok(())
    }

    pub(super) fn check_reset(
        &mut self,
        hook: Hook,
        extra: &Value,
        plan: &ResetPlan,
    ) -> Result<(), String> {
        let details = serde_json::to_value(&plan.details).expect("the window marker serialises");
        let source = details["source"].as_str().unwrap_or_default();
        let from_compaction = hook == Hook::BeforeCompact;
        check!(
            matches!(
                hook,
                Hook::TurnEnd | Hook::BeforeSettle | Hook::BeforeCompact
            ),
            "reset from {}",
            hook.name()
        );
        if !from_compaction {
            check!(
                self.fresh_request,
                "{}: reset ({source}) without a request no earlier reset consumed",
                hook.name()
            );
        }
        self.fresh_request = false;
        if matches!(source, "handoff" | "forced" | "idle") {
            check!(
                self.applied.mode == Mode::Enforce,
                "a {source} reset in {} mode",
                self.applied.mode.as_str()
            );
        }
        check!(
            plan.marker.custom_type == RESET_MARKER_TYPE,
            "marker {}",
            plan.marker.custom_type
        );
        check!(details["relay"] == "window", "reset details {details}");
        let attempt = details["attempt"].as_u64().unwrap_or(0);
        check!(
            attempt > self.max_attempt_on_branch(),
            "attempt {attempt} is not fresh (branch has {})",
            self.max_attempt_on_branch()
        );
        let window_id = details["windowId"].as_str().unwrap_or_default();
        check!(
            window_id.starts_with(&format!("pcw:{}:", self.sid)),
            "window id {window_id}"
        );
        check!(
            !self.window_ids_on_branch().iter().any(|w| w == window_id),
            "window id {window_id} reused on the branch"
        );
        if let Some(c) = &plan.continuation {
            check!(!from_compaction, "a continuation from a compaction hook");
            check!(
                !self.queued(),
                "a continuation while the user has a prompt queued"
            );
            check!(
                c.custom_type == CONTINUE_TYPE,
                "continuation {}",
                c.custom_type
            );
            check!(
                prompts_in(&c.content).is_empty(),
                "the continuation replays a prompt"
            );
        }
        // The user's messages the reset repeats are those outside `<in_progress>`: that section
        // names the model's own last actions, whose arguments and words may quote a prompt. It
        // is bounded (`render::in_progress`).
        let (outside, section) = branch::split_in_progress(&plan.summary);
        check!(
            section.chars().count() <= relay_core::render::in_progress::IN_PROGRESS_MAX_CHARS,
            "the <in_progress> section has {} characters",
            section.chars().count()
        );
        let in_summary = prompts_in(&outside);
        let restate =
            from_compaction && extra["reason"] == "overflow" && extra["willRetry"] == true;
        // Automatic and manual resets repeat the window's newest user messages (up to eight,
        // oldest first; a window without any repeats the newest earlier window's); an overflow
        // Pi retries restates the window's own newest one as the dropped request after them;
        // new_context and handoffs repeat nothing else.
        let carries = matches!(
            source,
            "fallback" | "threshold" | "overflow" | "forced" | "idle" | "manual"
        );
        let own = !self.current_window_prompts().is_empty();
        let restate = restate && own;
        let prompts = self.recent_window_prompts();
        let keep = match (carries, restate) {
            (true, true) => 9,
            (true, false) => 8,
            (false, true) => 1,
            (false, false) => 0,
        };
        let expected = prompts[prompts.len().saturating_sub(keep)..].to_vec();
        check!(
            in_summary == expected,
            "a {source} reset (restate: {restate}) repeats {in_summary:?}, expected {expected:?}"
        );
        Ok(())
    }

    pub(super) fn check_tool(
        &mut self,
        name: &str,
        reply: &ToolReply,
        effects: &[Effect],
        appends: &[Marker],
    ) -> Result<(), String> {
        let enabled = self.enabled();
        let effects: Vec<Value> = effects
            .iter()
            .map(|e| serde_json::to_value(e).expect("effects serialise"))
            .collect();
        self.check_effects(Hook::ToolCall, &effects, enabled)?;
        match name {
            "new_context" => {
                if !enabled {
                    check!(
                        reply.is_error && !reply.terminate,
                        "new_context while disabled: {}",
                        reply.text
                    );
                } else if self.idle_since_reset() {
                    // The reset guard: a window opened by a reset that holds no work yet.
                    check!(
                        reply.is_error && !reply.terminate && reply.text.contains("refused"),
                        "new_context in a window without work since its reset: {}",
                        reply.text
                    );
                } else {
                    check!(
                        !reply.is_error && reply.terminate,
                        "new_context while enabled: {}",
                        reply.text
                    );
                    if !reply.text.contains("already pending") {
                        self.fresh_request = true;
                    }
                }
            }
            "context_handoff" => {
                if !reply.is_error && reply.text.contains("\"commit\":") {
                    self.promised_commit = true;
                }
                if !self.enforcing() {
                    check!(
                        appends.is_empty() && reply.text.contains("\"written\":false"),
                        "context_handoff acts with mode {} and Relay {}: {}",
                        self.applied.mode.as_str(),
                        if enabled { "on" } else { "off" },
                        reply.text
                    );
                }
            }
            _ => {}
        }
        for p in appends {
            let allowed = match name {
                "notes_write_file" | "notes_append_to_file" => p.custom_type == NOTE_CUSTOM_TYPE,
                "context_handoff" => p.custom_type == HANDOFF_TYPE,
                _ => false,
            };
            check!(
                allowed && !reply.is_error,
                "{name} persists {}",
                p.custom_type
            );
        }
        Ok(())
    }

    /// After every action: the mirror is a projection of the branch, and the branch itself holds
    /// what the invariants allow.
    pub(super) fn check_state(&mut self) -> Result<(), String> {
        // Every record Relay wrote carries today's version: the window marker in a compaction's
        // `details`, a `relay/*` custom entry's `data`, a `relay/*` custom message's `details`.
        for entry in &self.branch {
            let record = match &entry.kind {
                EntryKind::Compaction { details, .. } if details["relay"] == "window" => details,
                EntryKind::Custom { custom_type, data } if custom_type.starts_with("relay/") => {
                    data
                }
                EntryKind::CustomMessage {
                    custom_type,
                    details,
                    ..
                } if custom_type.starts_with("relay/") => details,
                _ => continue,
            };
            check!(
                record["v"] == relay_core::records::VERSION,
                "entry {} is a record without version {}: {record}",
                entry.id,
                relay_core::records::VERSION
            );
        }
        // No sync here: like the driver, the host feeds entries only before hooks and tools, so
        // the mirror is compared with the part of the branch it has been given.
        if self.pending_truncate.is_none() {
            let tip = self
                .mirrored
                .checked_sub(1)
                .map(|i| self.branch[i].id.clone());
            check!(
                self.last_tip == tip,
                "the last output's tip {:?} != {tip:?}",
                self.last_tip
            );
        }
        check!(!self.waiting_for_branch, "the engine waits for the branch");

        // The mirror against a fresh resync, through the door: windows, items and notes as the
        // tools show them, the `/relay` status and `get_context_remaining`.
        if self.pending_truncate.is_none() {
            let mut fresh = jobs::fresh_engine(self);
            let mut live = std::mem::take(&mut self.engine);
            let mut outcome = Ok(());
            for (tool, args) in branch::MIRROR_PROBES {
                let args: Value = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
                let ours = jobs::probe(&mut live, self, tool, &args);
                let theirs = jobs::probe(&mut fresh, self, tool, &args);
                if ours != theirs {
                    outcome = Err(format!(
                        "{tool} differs from a resync:\n{ours}\n---\n{theirs}"
                    ));
                    break;
                }
            }
            if outcome.is_ok() {
                let ours = jobs::answers(&mut live, self);
                let theirs = jobs::answers(&mut fresh, self);
                if ours != theirs {
                    outcome = Err(format!(
                        "the live engine answers {ours:?}, a fresh one resynced from the branch {theirs:?}"
                    ));
                }
            }
            self.engine = live;
            outcome?;
        }

        // The branch.
        branch::check_branch(&self.branch, &self.restating)?;
        check!(
            self.blocked.is_disjoint(&self.executed),
            "a blocked call ran"
        );
        Ok(())
    }
}
