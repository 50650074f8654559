//! The engine: one object that holds the branch mirror and every piece of policy, fed by
//! observations and answering with effects.
//!
//! Methods fall in four groups (after quinn-proto's `Connection`):
//! - **getters** (`window_count`, `tip`, `contains`, `tool_specs`): read state, change nothing;
//! - **mirror mutators** (`resync`, `append`, `truncate_after`): keep the mirror equal to Pi's branch;
//! - **handlers** (`handle`, `tool`): one observation in, a reply of effects out;
//! - there is no `poll_*`: every effect is returned by the call that caused it.
//!
//! **Architecture Invariant:** the engine never performs IO and never reads the clock. The adapter
//! passes `nowMs`, the local time-zone offset and Pi's usage figure inside every observation.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::config::{
    remaining_tokens, reminder_threshold, resolve_config, RelayConfig, DEFAULT_RESERVE_TOKENS,
};
use crate::entry::{Entry, EntryKind};
use crate::handoff::{
    duplicate_check, render_markdown, sidecar_json, GitState, HandoffArgs, HandoffError,
    HandoffFingerprint, HandoffMeta,
};
use crate::history::History;
use crate::notes::{NoteOp, Notes, NOTE_CUSTOM_TYPE};
use crate::policy::{
    self, effective_mode, handoff_is_forced, invalid_file_config, parse_budget_config, step_mode,
    BudgetConfig, EffectiveMode, Mode, PolicyEffect, PolicyInput, PolicyParams, PolicyState,
};
use crate::render::{
    group_digits, render_boot_block, render_continuation, render_notes_steer, render_reminder,
    render_status, BootBlock, ContinuationReason, NoteIndexEntry, StatusInfo,
};
use crate::scheduler::{
    AttemptId, CompactReason, NewContextAnswer, Outcome, ResetSource, SchedInput, SchedOutput,
    Scheduler,
};
use crate::{ConfigIssue, ToolOutput};

/// customType of the visible boot block of the root window.
pub const BOOT_TYPE: &str = "relay/boot";
/// customType of the once-per-window low-budget reminder.
pub const REMINDER_TYPE: &str = "relay/reminder";
/// customType of the marker entry appended just before a reset's compaction entry.
pub const RESET_MARKER_TYPE: &str = "relay/reset";
/// customType of the hidden continuation after a reset.
pub const CONTINUE_TYPE: &str = "relay/continue";
/// customType of the borrowed turn's note-taking steer.
pub const STEER_TYPE: &str = "relay/notes-steer";
/// customType of the record of a written handoff (path and duplicate fingerprint).
pub const HANDOFF_TYPE: &str = "relay/handoff";
/// customType of the policy's settle continuation asking for a handoff.
pub const HANDOFF_REQUEST_TYPE: &str = "relay/handoff-request";

// ---------------------------------------------------------------------------------------------
// Wire types: what the adapter sends and receives (JSON, camelCase).

/// Pi's context usage as `ctx.getContextUsage()` reports it.
#[derive(Debug, Clone, Copy, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub tokens: Option<u64>,
    pub context_window: u64,
}

/// Facts every observation carries.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Moment {
    pub now_ms: i64,
    pub tz_offset_minutes: i32,
    pub usage: Option<Usage>,
    pub model: Option<String>,
    pub context_window: Option<u64>,
    pub idle: bool,
    pub has_pending_messages: bool,
    pub cwd: String,
    pub session_id: String,
    /// This runtime was bound while another Relay runtime was already bound in the same process
    /// (an SDK child session): the budget policy uses the `subagent` thresholds.
    pub subagent: bool,
}

/// The Pi event an observation reports.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    SessionStart {
        #[serde(default)]
        reason: String,
    },
    SessionTree,
    SessionShutdown {
        #[serde(default)]
        reason: String,
    },
    BeforeAgentStart,
    Context,
    ToolCall {
        tool_name: String,
        #[serde(default)]
        tool_call_id: String,
    },
    ToolResult {
        tool_name: String,
        #[serde(default)]
        tool_call_id: String,
        #[serde(default)]
        is_error: bool,
    },
    TurnEnd {
        #[serde(default)]
        outcome: Option<String>,
    },
    AgentEnd,
    AgentBeforeSettle {
        #[serde(default)]
        outcome: Option<String>,
    },
    AgentSettled {
        #[serde(default)]
        aborted: bool,
    },
    /// `session_compact_failed`: a compaction (possibly the reset Relay returned from
    /// `session_before_compact`) was not appended.
    SessionCompactFailed,
    SessionBeforeCompact {
        reason: String,
        #[serde(default)]
        will_retry: bool,
    },
    Command {
        #[serde(default)]
        args: String,
    },
}

#[derive(Debug, Clone, Deserialize)]
pub struct Observation {
    #[serde(flatten)]
    pub moment: Moment,
    #[serde(flatten)]
    pub event: Event,
}

/// Something the adapter must do through Pi's API, in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Effect {
    /// `pi.sendMessage({customType, content, display}, {triggerTurn, deliverAs})`.
    Send {
        custom_type: String,
        content: String,
        display: bool,
        trigger_turn: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        deliver_as: Option<String>,
        /// `details` of the persisted custom message.
        #[serde(skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    /// `pi.appendEntry(customType, data)`.
    Append { custom_type: String, data: Value },
    /// `ctx.ui.notify(text, level)` (stderr without a UI).
    Notify { text: String, level: String },
    /// `ctx.ui.setStatus("relay", text)`.
    Status { text: Option<String> },
    /// A line on stderr.
    Log { text: String },
    /// An event for `events.jsonl` (executed by the binding, never reaches the extension).
    Telemetry { event: Value },
    /// The session's `status/<sessionId>.json` (executed by the binding).
    WriteStatus { status: Value },
}

/// A reset as the adapter installs it: marker entry, compaction entry, optional hidden continuation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResetPlan {
    pub marker: Marker,
    pub summary: String,
    pub details: Value,
    pub continuation: Option<Continuation>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Marker {
    pub custom_type: String,
    pub data: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Continuation {
    pub custom_type: String,
    pub content: String,
}

/// What the current hook must return to Pi.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum HookResult {
    Cancel,
    Block {
        reason: String,
    },
    Reset {
        plan: ResetPlan,
    },
    /// Keep the run going with one hidden message (boundary draft + `continue: true`).
    Continue {
        continuation: Continuation,
    },
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct HookReply {
    pub effects: Vec<Effect>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<HookResult>,
}

/// A tool's answer: the text the model reads, plus what the adapter must persist first.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolReply {
    pub text: String,
    pub is_error: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub terminate: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persist: Option<Marker>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<Effect>,
}

impl From<ToolOutput> for ToolReply {
    fn from(out: ToolOutput) -> Self {
        ToolReply {
            text: out.text,
            is_error: out.is_error,
            ..ToolReply::default()
        }
    }
}

/// Raw configuration sources collected by the adapter.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ConfigSources {
    pub relay: Option<Value>,
    pub compaction: Option<Value>,
    /// Path of the budget policy file (`context-budget.json` or `PI_CONTEXT_BUDGET_CONFIG`).
    pub budget_config_path: Option<String>,
    /// Its contents, when it exists and could be read (the binding reads it).
    pub budget_file: Option<String>,
    /// Why it could not be read (absent files are not an error).
    pub budget_file_error: Option<String>,
    /// Where status and events go (the binding writes them).
    pub state_dir: Option<String>,
    pub cwd: Option<String>,
}

/// Name, label and description of one tool, as the model sees them.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    pub name: &'static str,
    pub label: &'static str,
    pub description: &'static str,
}

/// Every tool Relay registers, in registration order.
pub fn tool_specs() -> Vec<ToolSpec> {
    let spec = |name, label, description| ToolSpec {
        name,
        label,
        description,
    };
    vec![
        spec(
            "history_list_windows",
            "History: list windows",
            "List the context windows of this session (oldest window is the root). Every item of every window stays readable with the history tools, even after resets. Arguments: limit (default all), recent_first (default true).",
        ),
        spec(
            "history_list_items",
            "History: list items",
            "List items (user, assistant, tool and system messages) of the durable session history, including windows before resets. Filters: window_id, role, tool_namespace, tool_name. limit defaults to 50, max_chars_per_item to 1200, recent_first to true.",
        ),
        spec(
            "history_read_item",
            "History: read item",
            "Read one history item by window_id and item_id, as a range of Unicode characters: offset_chars (default 0), limit_chars (default 20000). The reply says where the next range starts.",
        ),
        spec(
            "history_search_contents",
            "History: search",
            "Search every item of the session history, across all windows, for a case-sensitive literal substring (no regex, no semantic search). Filters: window_id, role, tool_namespace, tool_name. limit defaults to 20, recent_first to true.",
        ),
        spec(
            "notes_list_files_by_prefix",
            "Notes: list",
            "List your notes (session-scoped virtual files that survive window resets) whose path starts with prefix, with line and byte counts.",
        ),
        spec(
            "notes_read_file",
            "Notes: read",
            "Read a note, optionally a line range: start_line and end_line are 1-based and inclusive; negative values count from the end (-1 is the last line).",
        ),
        spec(
            "notes_search_contents",
            "Notes: search",
            "Search your notes for a case-sensitive literal substring; returns matching lines with their line numbers. path_prefix narrows the search.",
        ),
        spec(
            "notes_append_to_file",
            "Notes: append",
            "Append text to a note, creating it if needed. Paths are relative virtual paths like plan/todo.md. A note holds at most 1,000,000 UTF-8 bytes.",
        ),
        spec(
            "notes_write_file",
            "Notes: write",
            "Create or replace a note with the given content. Empty content deletes the note. Paths are relative virtual paths like plan/todo.md. A note holds at most 1,000,000 UTF-8 bytes.",
        ),
        spec(
            "new_context",
            "New context window",
            "Start a fresh context window once this run settles: the conversation so far leaves the context (it stays searchable with the history tools) and the new window opens with your notes index. Write notes first. Call it alone in its tool batch.",
        ),
        spec(
            "context_handoff",
            "Context handoff",
            "Write a structured handoff and continue in a fresh context window from it (when the budget policy enforces; otherwise nothing is written). Required: goal (the task, verbatim where it matters), next_step (the exact next action), facts (verified state: commits, test results, completed work). Optional: decisions, user_constraints (verbatim, never shortened), open_items, hypotheses (unverified, kept apart from facts), files_to_read (absolute paths), launch_prompt (absolute path). Git branch and HEAD are recorded automatically. Call it alone and end your turn: the reset happens at the end of this turn.",
        ),
        spec(
            "get_context_remaining",
            "Context remaining",
            "Report the estimated tokens left in this window before the compaction reserve: {\"remaining_tokens\": n}, or null when Pi cannot estimate it (no reply with usage yet in this window).",
        ),
    ]
}

// ---------------------------------------------------------------------------------------------

/// Per-window facts derived from the mirror (positions are indices into the mirrored branch).
#[derive(Debug, Clone, Default)]
struct WindowState {
    start: usize,
    boot_at: Option<usize>,
    reminder_at: Option<usize>,
    last_user: Option<(usize, String)>,
    /// Context size the way Pi estimates it, kept incrementally so that no hook has to ask Pi
    /// (whose `getContextUsage()` walks the whole branch): the last valid assistant usage in this
    /// window, plus chars/4 of every message after it.
    last_usage: Option<u64>,
    trailing: u64,
    /// chars/4 of every message of the window (Pi's estimate before any usage is known).
    all: u64,
}

/// One message's part in the usage estimate, kept so a navigation can rebuild the estimate of
/// the window it lands in.
#[derive(Debug, Clone, Copy)]
struct UsageMark {
    pos: usize,
    /// A valid assistant usage, or `None` for a message that only adds its estimate.
    usage: Option<u64>,
    estimate: u64,
}

/// Relay's engine. See the module documentation.
pub struct Engine {
    history: History,
    notes: Notes,
    note_ops: Vec<(usize, NoteOp)>,
    windows: Vec<WindowState>,
    scheduler: Scheduler,
    config: RelayConfig,
    reserve_tokens: u64,
    /// A boot block was sent and is not yet in the mirror.
    boot_reserved: bool,
    /// The window id for which a reminder was sent and is not yet in the mirror.
    reminder_reserved: Option<String>,
    /// The reset handed to the adapter and not yet seen in the mirror.
    inflight: Option<AttemptId>,
    /// Replaying a whole branch: applied resets are history, not callbacks.
    replaying: bool,
    /// Persisted note operations that failed validation (path + reason), reported once.
    skipped_notes: Vec<String>,
    tz_offset_minutes: i32,
    /// Between `before_agent_start` and `agent_settled`. Pi's `isIdle()` is false in its pre-prompt
    /// compaction check, so the engine tracks runs itself to tell that check from a streaming one.
    run_active: bool,
    /// `/relay on|off` for the rest of this runtime; wins over the `enabled` setting.
    toggle: Option<bool>,
    /// The largest reset attempt id found on the branch.
    max_attempt_seen: AttemptId,
    // ----- budget policy (seed 004) -----
    budget: BudgetConfig,
    mode: EffectiveMode,
    policy: PolicyState,
    /// Thresholds resolved for (model key, context window, subagent role).
    params: Option<(String, u64, bool, PolicyParams)>,
    /// The handoff written in this window and not yet committed: path and markdown.
    handoff_ready: Option<(String, String)>,
    /// A forced reset's boot-block note and whether the run continues after it.
    forced: Option<(String, bool)>,
    /// The previous handoff's duplicate fingerprint (replayed from `relay/handoff` entries).
    last_fingerprint: Option<HandoffFingerprint>,
    /// The previous handoff's path and time, for the status file.
    last_handoff: Option<(String, i64)>,
    /// Budget/hard commits found on the branch while replaying.
    /// The attempt returned as a `session_before_compact` result, until Pi appends or drops it.
    hook_attempt: Option<AttemptId>,
    /// Positions of the compactions on the branch that were budget/hard commits (they count toward
    /// `maxHandoffsPerSession`, also after a reload or a navigation).
    commit_marks: Vec<usize>,
    state_dir_known: bool,
    /// Policy effects produced while mirroring (a reset applied), delivered with the next reply.
    pending_policy_fx: Vec<PolicyEffect>,
    usage_marks: Vec<UsageMark>,
}

impl Default for Engine {
    fn default() -> Self {
        Self::new()
    }
}

impl Engine {
    pub fn new() -> Self {
        let (config, _) = resolve_config(None, None);
        Engine {
            history: History::new(""),
            notes: Notes::new(),
            note_ops: Vec::new(),
            windows: vec![WindowState::default()],
            scheduler: Scheduler::new(config.enabled),
            config,
            reserve_tokens: DEFAULT_RESERVE_TOKENS,
            boot_reserved: false,
            reminder_reserved: None,
            inflight: None,
            replaying: false,
            skipped_notes: Vec::new(),
            tz_offset_minutes: 0,
            run_active: false,
            toggle: None,
            max_attempt_seen: 0,
            budget: BudgetConfig::default(),
            mode: effective_mode(&BudgetConfig::default(), ""),
            policy: PolicyState::default(),
            params: None,
            handoff_ready: None,
            forced: None,
            last_fingerprint: None,
            last_handoff: None,
            commit_marks: Vec::new(),
            hook_attempt: None,
            state_dir_known: false,
            pending_policy_fx: Vec::new(),
            usage_marks: Vec::new(),
        }
    }

    // ----- getters -----

    pub fn tip(&self) -> Option<&str> {
        self.history.tip()
    }

    pub fn contains(&self, id: &str) -> bool {
        self.history.contains(id)
    }

    pub fn window_count(&self) -> usize {
        self.history.window_count()
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    pub fn notes(&self) -> &Notes {
        &self.notes
    }

    pub fn enabled(&self) -> bool {
        self.scheduler.enabled()
    }

    // ----- configuration -----

    /// Validate and apply configuration; every problem is reported with its key path.
    pub fn configure(&mut self, sources: &ConfigSources) -> Vec<ConfigIssue> {
        let mut issues = Vec::new();
        let (config, mut relay_issues) = resolve_config(sources.relay.as_ref(), None);
        issues.append(&mut relay_issues);
        self.reserve_tokens = DEFAULT_RESERVE_TOKENS;
        if let Some(compaction) = sources.compaction.as_ref() {
            match compaction.get("reserveTokens") {
                None | Some(Value::Null) => {}
                Some(v) => match v.as_u64() {
                    Some(n) if n > 0 => self.reserve_tokens = n,
                    _ => issues.push(ConfigIssue {
                        path: "compaction.reserveTokens".into(),
                        message: format!(
                            "expected a positive integer, got {v}; using {DEFAULT_RESERVE_TOKENS}"
                        ),
                    }),
                },
            }
        }
        let (budget, mut budget_issues) = select_budget(sources, config.budget.as_ref());
        issues.append(&mut budget_issues);
        if budget != self.budget {
            self.params = None;
        }
        self.budget = budget;
        self.mode = effective_mode(&self.budget, sources.cwd.as_deref().unwrap_or(""));
        self.state_dir_known = sources.state_dir.is_some();
        let was_enabled = self.toggle.unwrap_or(self.config.enabled);
        let now_enabled = self.toggle.unwrap_or(config.enabled);
        self.config = config;
        if was_enabled != now_enabled {
            self.scheduler.handle(SchedInput::SetEnabled(now_enabled));
        }
        issues
    }

    /// The same, answering with a reply whose effects report each issue once.
    pub fn configure_reply(
        &mut self,
        sources: &ConfigSources,
        seen: &mut Vec<String>,
    ) -> HookReply {
        let issues = self.configure(sources);
        let mut reply = HookReply::default();
        for issue in issues {
            let text = format!("relay: invalid setting {issue}");
            if !seen.contains(&text) {
                seen.push(text.clone());
                reply.effects.push(Effect::Notify {
                    text,
                    level: "warning".into(),
                });
            }
        }
        reply
    }

    // ----- mirror mutators -----

    /// Replace the mirror with a whole branch, root first.
    pub fn resync(&mut self, session_id: &str, entries: &[Entry]) {
        self.begin_resync(session_id);
        for entry in entries {
            self.push_replayed(entry);
        }
        self.end_resync();
    }

    /// Streaming form of [`Engine::resync`]: `begin_resync`, then `push_replayed` for each entry
    /// of the branch (root first), then `end_resync` gives exactly the state `resync` gives for
    /// the same entries, without holding the whole branch in memory at once.
    pub fn begin_resync(&mut self, session_id: &str) {
        self.history = History::new(session_id);
        self.usage_marks.clear();
        self.max_attempt_seen = 0;
        self.commit_marks.clear();
        self.last_fingerprint = None;
        self.last_handoff = None;
        self.handoff_ready = None;
        self.forced = None;
        self.notes = Notes::new();
        self.note_ops.clear();
        self.windows = vec![WindowState::default()];
        self.skipped_notes.clear();
        self.replaying = true;
    }

    /// The next entry of a branch being replayed after [`Engine::begin_resync`].
    pub fn push_replayed(&mut self, entry: &Entry) {
        debug_assert!(
            self.replaying,
            "push_replayed outside begin_resync/end_resync"
        );
        self.push(entry);
    }

    /// Ends a replay started by [`Engine::begin_resync`].
    pub fn end_resync(&mut self) {
        self.replaying = false;
        // Attempt ids recorded on the branch are history: new attempts must never match them.
        self.scheduler
            .set_next_attempt_floor(self.max_attempt_seen + 1);
        // Budget/hard commits made before a reload still count toward the cap.
        self.policy = PolicyState {
            handoffs_committed: self.commit_marks.len() as u32,
            ..PolicyState::default()
        };
        self.boot_reserved = false;
        self.reminder_reserved = None;
    }

    /// Append entries that follow the current tip on the branch.
    pub fn append(&mut self, entries: &[Entry]) {
        for entry in entries {
            self.push(entry);
        }
    }

    /// Drop every entry after `id` (all entries when `id` is None), as after a tree navigation.
    pub fn truncate_after(&mut self, id: Option<&str>) {
        match id {
            None => {
                let sid = self.history.session_id().to_string();
                self.resync(&sid, &[]);
            }
            Some(id) => {
                if !self.history.truncate_after(id) {
                    return;
                }
                let len = self.history.entry_count();
                while self.windows.len() > 1 && self.windows.last().is_some_and(|w| w.start >= len)
                {
                    self.windows.pop();
                }
                if let Some(w) = self.windows.last_mut() {
                    if w.boot_at.is_some_and(|p| p >= len) {
                        w.boot_at = None;
                    }
                    if w.reminder_at.is_some_and(|p| p >= len) {
                        w.reminder_at = None;
                    }
                    if w.last_user.as_ref().is_some_and(|(p, _)| *p >= len) {
                        w.last_user = None;
                    }
                }
                while self.commit_marks.last().is_some_and(|&p| p >= len) {
                    self.commit_marks.pop();
                }
                while self.usage_marks.last().is_some_and(|m| m.pos >= len) {
                    self.usage_marks.pop();
                }
                let start = self.current_window().start;
                let (mut last_usage, mut trailing, mut all) = (None, 0, 0);
                for mark in self.usage_marks.iter().rev().take_while(|m| m.pos >= start) {
                    match mark.usage {
                        Some(u) if last_usage.is_none() => last_usage = Some(u),
                        Some(_) => {}
                        None => {
                            all += mark.estimate;
                            if last_usage.is_none() {
                                trailing += mark.estimate;
                            }
                        }
                    }
                }
                let w = self.current_window_mut();
                w.last_usage = last_usage;
                w.trailing = trailing;
                w.all = all;
                let before = self.note_ops.len();
                self.note_ops.retain(|(p, _)| *p < len);
                if self.note_ops.len() != before {
                    self.notes = Notes::new();
                    for (_, op) in &self.note_ops {
                        let _ = self.notes.apply(op);
                    }
                }
            }
        }
    }

    fn push(&mut self, entry: &Entry) {
        let pos = self.history.entry_count();
        self.history.push(entry);
        match &entry.kind {
            EntryKind::Compaction { details, .. } => {
                self.windows.push(WindowState {
                    start: pos,
                    ..WindowState::default()
                });
                let attempt = (details.get("relay").and_then(Value::as_str) == Some("window"))
                    .then(|| details.get("attempt").and_then(Value::as_u64))
                    .flatten();
                if let Some(a) = attempt {
                    self.max_attempt_seen = self.max_attempt_seen.max(a);
                }
                let kind = details.get("kind").and_then(Value::as_str);
                if matches!(kind, Some("budget" | "hard" | "forcedHard")) {
                    self.commit_marks.push(pos);
                }
                if !self.replaying {
                    if let (Some(a), Some(inflight)) = (attempt, self.inflight) {
                        if a == inflight {
                            self.inflight = None;
                            self.scheduler
                                .handle(SchedInput::ResetApplied { attempt: a });
                        }
                    }
                    // Any new window (Relay's or Pi's own compaction) starts the budget afresh.
                    let fx = self.policy_step(PolicyInput::ResetApplied);
                    self.pending_policy_fx.extend(fx);
                    self.handoff_ready = None;
                    self.forced = None;
                }
                self.reminder_reserved = None;
            }
            EntryKind::CustomMessage { custom_type, .. } if custom_type == BOOT_TYPE => {
                self.current_window_mut().boot_at = Some(pos);
                self.boot_reserved = false;
            }
            EntryKind::CustomMessage {
                custom_type,
                details,
                ..
            } if custom_type == REMINDER_TYPE => {
                // A reminder written for an earlier window (queued just before a reset) does not
                // stand for this window's.
                let for_window = details.get("windowId").and_then(Value::as_str);
                if for_window.is_none_or(|w| w == self.history.current_window_id()) {
                    self.current_window_mut().reminder_at = Some(pos);
                    self.reminder_reserved = None;
                }
            }
            EntryKind::Custom { custom_type, data } if custom_type == NOTE_CUSTOM_TYPE => {
                match NoteOp::from_data(data)
                    .map_err(|e| e.to_string())
                    .and_then(|op| {
                        self.notes.apply(&op).map_err(|e| e.to_string())?;
                        Ok(op)
                    }) {
                    Ok(op) => self.note_ops.push((pos, op)),
                    Err(message) => self
                        .skipped_notes
                        .push(format!("entry {}: {message}", entry.id)),
                }
            }
            EntryKind::Custom { custom_type, data } if custom_type == HANDOFF_TYPE => {
                if let Some(fp) = data
                    .get("fingerprint")
                    .and_then(HandoffFingerprint::from_value)
                {
                    let at = fp.at_ms;
                    self.last_fingerprint = Some(fp);
                    if let Some(path) = data.get("path").and_then(Value::as_str) {
                        self.last_handoff = Some((path.to_string(), at));
                    }
                }
            }
            EntryKind::Message(m) if m.role == "user" => {
                self.current_window_mut().last_user = Some((pos, m.text.clone()));
            }
            _ => {}
        }
        self.account_usage(pos, entry);
    }

    /// Pi's context estimate (`estimateContextTokens`): the last assistant usage that is neither
    /// aborted nor an error, plus ceil(chars/4) per later message; chars are UTF-16 code units.
    fn account_usage(&mut self, pos: usize, entry: &Entry) {
        let estimate = |text: &str| (crate::history::utf16_len(text) as u64).div_ceil(4);
        let mark = match &entry.kind {
            EntryKind::Message(m) if m.role == "system" => return,
            EntryKind::Message(m) => {
                let valid = m.role == "assistant"
                    && !matches!(m.stop_reason.as_deref(), Some("aborted" | "error"))
                    && m.usage_total.unwrap_or(0) > 0;
                if valid {
                    UsageMark {
                        pos,
                        usage: m.usage_total,
                        estimate: 0,
                    }
                } else {
                    UsageMark {
                        pos,
                        usage: None,
                        estimate: estimate(&m.text),
                    }
                }
            }
            EntryKind::CustomMessage { text, .. } => UsageMark {
                pos,
                usage: None,
                estimate: estimate(text),
            },
            _ => return,
        };
        self.usage_marks.push(mark);
        let w = self.current_window_mut();
        match mark.usage {
            Some(u) => {
                w.last_usage = Some(u);
                w.trailing = 0;
            }
            None => {
                w.trailing += mark.estimate;
                w.all += mark.estimate;
            }
        }
    }

    /// The usage figure the policy and the reminder judge: Pi's own when the observation carries
    /// it (tools), else the engine's incremental estimate. `None` while unknown (a window whose
    /// reset has no assistant usage yet).
    fn usage(&self, moment: &Moment) -> Option<Usage> {
        if moment.usage.is_some() {
            return moment.usage;
        }
        let context_window = moment.context_window?;
        let w = self.current_window();
        let tokens = match w.last_usage {
            Some(u) => Some(u + w.trailing),
            None if self.windows.len() == 1 => Some(w.all),
            None => None,
        };
        Some(Usage {
            tokens,
            context_window,
        })
    }

    fn current_window_mut(&mut self) -> &mut WindowState {
        if self.windows.is_empty() {
            self.windows.push(WindowState::default());
        }
        self.windows.last_mut().expect("at least one window")
    }

    fn current_window(&self) -> &WindowState {
        self.windows.last().expect("at least one window")
    }

    // ----- handlers -----

    /// One observation in, the effects and hook result out.
    pub fn handle(&mut self, obs: &Observation) -> HookReply {
        let mut moment = obs.moment.clone();
        moment.usage = self.usage(&obs.moment);
        let obs = &Observation {
            moment,
            event: obs.event.clone(),
        };
        self.tz_offset_minutes = obs.moment.tz_offset_minutes;
        self.refresh_params(&obs.moment);
        let mut reply = HookReply::default();
        let mirrored = std::mem::take(&mut self.pending_policy_fx);
        self.apply_policy(mirrored, &obs.moment, &mut reply);
        match &obs.event {
            Event::SessionStart { .. } => {
                self.scheduler.handle(SchedInput::Invalidate);
                self.inflight = None;
                self.run_active = false;
                self.report_skipped_notes(&mut reply);
                if self.enabled()
                    && self.window_count() == 1
                    && self.current_window().boot_at.is_none()
                    && !self.boot_reserved
                {
                    self.boot_reserved = true;
                    let text = self.boot_text(None, None, None, None);
                    reply.effects.push(Effect::Send {
                        custom_type: BOOT_TYPE.into(),
                        content: text,
                        display: true,
                        trigger_turn: false,
                        deliver_as: None,
                        details: None,
                    });
                }
                reply.effects.push(self.status_effect(&obs.moment));
                self.write_status(&obs.moment, &mut reply);
            }
            Event::SessionTree | Event::SessionShutdown { .. } => {
                if matches!(obs.event, Event::SessionShutdown { .. }) {
                    self.run_active = false;
                }
                self.scheduler.handle(SchedInput::Invalidate);
                self.inflight = None;
                self.reminder_reserved = None;
                self.boot_reserved = false;
                if matches!(obs.event, Event::SessionTree) {
                    // The policy's state belongs to the branch that was left: start over from what
                    // the new branch holds, as a reload of it would.
                    self.policy = PolicyState {
                        handoffs_committed: self.commit_marks.len() as u32,
                        ..PolicyState::default()
                    };
                    self.handoff_ready = None;
                    self.forced = None;
                }
            }
            Event::BeforeAgentStart => {
                self.run_active = true;
                self.scheduler.handle(SchedInput::BeforeAgentStart);
                let fx = self.policy_step(PolicyInput::BeforeAgentStart);
                self.apply_policy(fx, &obs.moment, &mut reply);
            }
            Event::Context => {
                self.maybe_remind(&obs.moment, &mut reply);
                reply.effects.push(self.status_effect(&obs.moment));
            }
            Event::ToolCall {
                tool_name,
                tool_call_id,
            } => {
                let mut fx = self.policy_step(PolicyInput::Usage {
                    tokens: obs.moment.usage.and_then(|u| u.tokens),
                });
                fx.extend(self.policy_step(PolicyInput::ToolCall {
                    id: tool_call_id.clone(),
                    name: tool_name.clone(),
                }));
                self.apply_policy(fx, &obs.moment, &mut reply);
            }
            Event::ToolResult {
                tool_name,
                tool_call_id,
                is_error,
            } => {
                let fx = self.policy_step(PolicyInput::ToolFinished {
                    id: tool_call_id.clone(),
                    name: tool_name.clone(),
                    success: !is_error,
                });
                self.apply_policy(fx, &obs.moment, &mut reply);
            }
            Event::TurnEnd { .. } => {
                let mut fx = self.policy_step(PolicyInput::Usage {
                    tokens: obs.moment.usage.and_then(|u| u.tokens),
                });
                fx.extend(self.policy_step(PolicyInput::TurnEnd));
                self.apply_policy(fx, &obs.moment, &mut reply);
                let outs = self.scheduler.handle(SchedInput::TurnEnd {
                    has_queued_user_messages: obs.moment.has_pending_messages,
                });
                self.apply_sched(outs, &obs.moment, &mut reply);
                // The status file is written at session start, when a run settles and after a
                // reset or handoff, never per turn: an atomic write costs fsyncs on the hot path.
            }
            Event::AgentEnd => {
                self.scheduler.handle(SchedInput::AgentEnd);
            }
            Event::AgentBeforeSettle { outcome } => {
                if outcome.as_deref().unwrap_or("completed") == "completed" {
                    let fx = self.policy_step(PolicyInput::BeforeSettle);
                    self.apply_policy(fx, &obs.moment, &mut reply);
                }
                let outcome = match outcome.as_deref() {
                    Some("aborted") => Outcome::Aborted,
                    Some("error") => Outcome::Error,
                    _ => Outcome::Completed,
                };
                let outs = self.scheduler.handle(SchedInput::BeforeSettle {
                    outcome,
                    has_queued_user_messages: obs.moment.has_pending_messages,
                });
                self.apply_sched(outs, &obs.moment, &mut reply);
            }
            Event::AgentSettled { aborted } => {
                if let Some(attempt) = self.inflight.take() {
                    // The reset handed out at this settle point never reached the branch.
                    self.scheduler.handle(SchedInput::ResetRejected { attempt });
                }
                self.run_active = false;
                self.scheduler
                    .handle(SchedInput::Settled { aborted: *aborted });
                reply.effects.push(self.status_effect(&obs.moment));
                self.write_status(&obs.moment, &mut reply);
            }
            Event::SessionCompactFailed => {
                // The reset returned from a compaction hook was cancelled or failed (a cancel of
                // Relay's own, for a borrowed turn, also lands here but leaves no attempt): the
                // request is over, and a later one may try again.
                if let Some(attempt) = self.hook_attempt.take() {
                    if self.inflight == Some(attempt) {
                        self.inflight = None;
                        self.scheduler.handle(SchedInput::ResetRejected { attempt });
                    }
                }
            }
            Event::SessionBeforeCompact { reason, will_retry } => {
                if !self.enabled() {
                    return reply;
                }
                let will_retry = *will_retry;
                let reason = match reason.as_str() {
                    "manual" => CompactReason::Manual,
                    "overflow" => CompactReason::Overflow,
                    _ => CompactReason::Threshold,
                };
                let outs = self
                    .scheduler
                    .handle(SchedInput::CompactHook {
                        reason,
                        idle: !self.run_active,
                    })
                    .into_iter()
                    .map(|out| match out {
                        // An overflow Pi will not retry had its reply already: nothing is pending.
                        SchedOutput::Reset {
                            attempt,
                            source,
                            continuation,
                            restate_dropped_request,
                        } => SchedOutput::Reset {
                            attempt,
                            source,
                            continuation,
                            restate_dropped_request: restate_dropped_request && will_retry,
                        },
                        other => other,
                    })
                    .collect();
                self.apply_sched(outs, &obs.moment, &mut reply);
                self.hook_attempt = match reply.result {
                    Some(HookResult::Reset { .. }) => self.inflight,
                    _ => None,
                };
            }
            Event::Command { args } => self.command(args, &obs.moment, &mut reply),
        }
        self.check_dropped_reset(&obs.moment, &mut reply);
        reply
    }

    /// The policy waits in `Compacting` for the reset it asked for. When the scheduler no longer
    /// holds that request (an abort, a navigation, `/relay off`, a rejected draft), tell the policy,
    /// so that enforcement goes on instead of stopping for the rest of the window.
    fn check_dropped_reset(&mut self, moment: &Moment, reply: &mut HookReply) {
        if self.policy.phase() == policy::Phase::Compacting
            && self.scheduler.pending().is_none()
            && self.scheduler.in_flight().is_none()
        {
            let fx = self.policy_step(PolicyInput::ResetDropped);
            self.apply_policy(fx, moment, reply);
            self.forced = None;
        }
    }

    fn report_skipped_notes(&mut self, reply: &mut HookReply) {
        for skipped in self.skipped_notes.drain(..) {
            reply.effects.push(Effect::Notify {
                text: format!("relay: skipped an invalid note operation ({skipped})"),
                level: "warning".into(),
            });
        }
    }

    fn maybe_remind(&mut self, moment: &Moment, reply: &mut HookReply) {
        if !self.enabled() {
            return;
        }
        let Some(usage) = moment.usage else { return };
        let Some(tokens) = usage.tokens else { return };
        let physical = usage.context_window.saturating_sub(tokens);
        let threshold = reminder_threshold(self.reserve_tokens, self.config.reminder_margin_tokens);
        if physical > threshold {
            return;
        }
        let window = self.history.current_window_id().to_string();
        if self.current_window().reminder_at.is_some()
            || self.reminder_reserved.as_deref() == Some(window.as_str())
        {
            return;
        }
        // No reminder when this window is about to end anyway: a reset is pending or in flight,
        // or the budget policy already demands a handoff (a message queued now would only reach
        // the history after the reset, in the next window).
        let ending = self.scheduler.pending().is_some()
            || self.scheduler.in_flight().is_some()
            || (self.mode.effective == Mode::Enforce
                && matches!(
                    self.policy.phase(),
                    policy::Phase::HandoffRequired
                        | policy::Phase::HandoffPendingCommit
                        | policy::Phase::Compacting
                        | policy::Phase::FallbackArmed
                ));
        if ending {
            return;
        }
        self.reminder_reserved = Some(window.clone());
        let remaining =
            remaining_tokens(usage.context_window, Some(tokens), self.reserve_tokens).unwrap_or(0);
        reply.effects.push(Effect::Send {
            custom_type: REMINDER_TYPE.into(),
            content: render_reminder(remaining),
            display: true,
            trigger_turn: false,
            deliver_as: None,
            details: Some(json!({ "windowId": window })),
        });
    }

    // ----- budget policy -----

    fn refresh_params(&mut self, moment: &Moment) {
        let key = moment.model.clone().unwrap_or_default();
        let window = moment
            .usage
            .map(|u| u.context_window)
            .or(moment.context_window)
            .unwrap_or(0);
        let subagent = moment.subagent;
        let fresh = match &self.params {
            Some((k, w, sub, _)) => *k != key || *w != window || *sub != subagent,
            None => true,
        };
        if fresh {
            let params =
                PolicyParams::resolve(&self.budget, &key, window, self.reserve_tokens, subagent);
            self.params = Some((key, window, subagent, params));
        }
    }

    fn current_params(&self) -> PolicyParams {
        match &self.params {
            Some((_, _, _, p)) => *p,
            None => PolicyParams::resolve(&self.budget, "", 0, self.reserve_tokens, false),
        }
    }

    /// Run the policy transition under the effective mode (observe runs it on a projection).
    fn policy_step(&mut self, input: PolicyInput) -> Vec<PolicyEffect> {
        let params = self.current_params();
        // Every reset goes through the window scheduler: with the window features off no handoff
        // can commit, so the policy only observes.
        let mode = match self.mode.effective {
            Mode::Enforce if !self.enabled() => Mode::Observe,
            mode => mode,
        };
        let (state, fx) = step_mode(mode, &self.policy, &params, &input);
        self.policy = state;
        fx
    }

    fn apply_policy(&mut self, fx: Vec<PolicyEffect>, moment: &Moment, reply: &mut HookReply) {
        for effect in fx {
            match effect {
                PolicyEffect::Notify { level, text } => reply.effects.push(Effect::Notify {
                    text,
                    level: match level {
                        policy::NotifyLevel::Info => "info".into(),
                        policy::NotifyLevel::Warning => "warning".into(),
                    },
                }),
                PolicyEffect::Block { reason } => reply.result = Some(HookResult::Block { reason }),
                PolicyEffect::RequestReset {
                    source,
                    continue_run,
                    note,
                    ..
                } => {
                    let input = match source {
                        policy::ResetSource::Handoff => SchedInput::HandoffCommitReady,
                        policy::ResetSource::Forced => {
                            self.forced = Some((note.unwrap_or_default(), continue_run));
                            SchedInput::ForcedResetRequested {
                                source: ResetSource::Forced,
                            }
                        }
                    };
                    let outs = self.scheduler.handle(input);
                    self.apply_sched(outs, moment, reply);
                }
                PolicyEffect::Continue { text } => {
                    if reply.result.is_none() {
                        reply.result = Some(HookResult::Continue {
                            continuation: Continuation {
                                custom_type: HANDOFF_REQUEST_TYPE.into(),
                                content: text,
                            },
                        });
                    }
                }
                PolicyEffect::Event { name, fields } => {
                    let event = self.telemetry_event(&name, fields, moment);
                    reply.effects.push(Effect::Telemetry { event });
                }
            }
        }
    }

    fn telemetry_event(&self, name: &str, fields: Value, moment: &Moment) -> Value {
        let mut event = json!({
            "ts": moment.now_ms,
            "event": name,
            "sessionId": self.history.session_id(),
            "windowId": self.history.current_window_id(),
            "mode": self.mode.effective.as_str(),
        });
        if let (Some(obj), Value::Object(extra)) = (event.as_object_mut(), fields) {
            for (k, v) in extra {
                obj.entry(k).or_insert(v);
            }
        }
        event
    }

    /// The status file of seed 004: policy fields plus the session facts.
    fn write_status(&self, moment: &Moment, reply: &mut HookReply) {
        if !self.state_dir_known || self.history.session_id().is_empty() {
            return;
        }
        let params = self.current_params();
        let mut status = policy::status_fields(&self.policy, &params, &self.mode);
        if let Some(obj) = status.as_object_mut() {
            obj.insert("sessionId".into(), json!(self.history.session_id()));
            obj.insert("windowId".into(), json!(self.history.current_window_id()));
            obj.insert("windowCount".into(), json!(self.window_count()));
            obj.insert("cwd".into(), json!(moment.cwd));
            obj.insert("model".into(), json!(moment.model));
            let subagent = self.params.as_ref().is_some_and(|(_, _, sub, _)| *sub);
            obj.insert(
                "role".into(),
                json!(if subagent { "subagent" } else { "main" }),
            );
            obj.insert("updatedAt".into(), json!(moment.now_ms));
            obj.insert(
                "lastHandoff".into(),
                match &self.last_handoff {
                    Some((path, at)) => json!({ "path": path, "at": at }),
                    None => Value::Null,
                },
            );
            obj.insert("windowFeatures".into(), json!(self.enabled()));
        }
        reply.effects.push(Effect::WriteStatus { status });
    }

    /// `context_handoff`, step 1: is the tool active, and are the arguments valid?
    pub fn handoff_begin(
        &mut self,
        args: &Value,
        moment: &Moment,
    ) -> Result<HandoffArgs, Box<ToolReply>> {
        self.refresh_params(moment);
        let parsed =
            HandoffArgs::parse(args).map_err(|e| Box::new(ToolReply::from(e.to_tool_output())))?;
        if self.mode.effective != Mode::Enforce {
            let mut reply = ToolReply::from(ToolOutput::json(&json!({
                "written": false,
                "mode": self.mode.effective.as_str(),
                "configured_mode": self.mode.configured.as_str(),
                "reason": self.mode.reason,
                "message": "Handoffs are not enforced here (budget policy mode is not enforce): nothing was written and no reset follows. Keep working; use notes and new_context to carry state across windows.",
            })));
            if self.mode.effective == Mode::Observe {
                let event = self.telemetry_event(
                    "would_handoff",
                    json!({ "goal_chars": parsed.goal.chars().count() }),
                    moment,
                );
                reply.effects.push(Effect::Telemetry { event });
            }
            return Err(Box::new(reply));
        }
        Ok(parsed)
    }

    /// `context_handoff`, step 2: back-off check and rendering, with the metadata the binding collected.
    pub fn handoff_render(
        &self,
        args: &HandoffArgs,
        git: &GitFacts,
        markdown_path: &str,
        sequence: u32,
        moment: &Moment,
    ) -> Result<(String, Value, HandoffFingerprint), Box<ToolReply>> {
        if !handoff_is_forced(&self.policy) {
            if let Err(retry) = duplicate_check(
                self.last_fingerprint.as_ref(),
                moment.now_ms,
                git.head.as_deref(),
                args,
            ) {
                return Err(Box::new(
                    ToolOutput::error(retry.message(moment.tz_offset_minutes)).into(),
                ));
            }
        }
        let meta = HandoffMeta {
            timestamp_ms: moment.now_ms,
            tz_offset_minutes: moment.tz_offset_minutes,
            cwd: moment.cwd.clone(),
            repo_root: git.repo_root.clone(),
            git_branch: git.branch.clone(),
            git_head: git.head.clone(),
            git_state: git.state,
            session_id: self.history.session_id().to_string(),
            sequence,
            window_id: self.history.current_window_id().to_string(),
        };
        let markdown = render_markdown(args, &meta)
            .map_err(|e: HandoffError| ToolReply::from(e.to_tool_output()))?;
        let sidecar = sidecar_json(args, &meta, markdown_path);
        let fingerprint = HandoffFingerprint::new(args, moment.now_ms, git.head.as_deref());
        Ok((markdown, sidecar, fingerprint))
    }

    /// `context_handoff`, step 3: the files are written; arm the commit at this turn's end.
    pub fn handoff_written(
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
        let committing = self.policy.phase() == policy::Phase::HandoffPendingCommit;
        let mut reply = if committing {
            self.handoff_ready = Some((path.to_string(), markdown));
            ToolReply::from(ToolOutput::json(&json!({
                "written": true,
                "path": path,
                "commit": "at the end of this turn the context resets and work continues from this handoff; end your turn now and call no other tool",
            })))
        } else {
            // A cap or loop-guard fallback is armed (or a reset is already under way): the file
            // stays as a record, but it cannot replace the fallback.
            ToolReply::from(ToolOutput::json(&json!({
                "written": true,
                "path": path,
                "committed": false,
                "reason": "a fallback reset is already armed for this window; this handoff is kept on disk but does not replace it. End your turn.",
            })))
        };
        reply.persist = Some(Marker {
            custom_type: HANDOFF_TYPE.into(),
            data: json!({ "path": path, "fingerprint": fingerprint.to_value() }),
        });
        reply.effects = hook.effects;
        reply
    }

    fn apply_sched(&mut self, outs: Vec<SchedOutput>, moment: &Moment, reply: &mut HookReply) {
        for out in outs {
            match out {
                SchedOutput::Reset {
                    attempt,
                    source,
                    continuation,
                    restate_dropped_request,
                } => {
                    let plan = self.reset_plan(
                        attempt,
                        source,
                        continuation,
                        restate_dropped_request,
                        moment,
                    );
                    self.inflight = Some(attempt);
                    reply.result = Some(HookResult::Reset { plan });
                }
                SchedOutput::CancelCompaction => reply.result = Some(HookResult::Cancel),
                SchedOutput::SteerNotes => reply.effects.push(Effect::Send {
                    custom_type: STEER_TYPE.into(),
                    content: render_notes_steer(),
                    display: true,
                    trigger_turn: true,
                    deliver_as: Some("steer".into()),
                    details: None,
                }),
                SchedOutput::PassThrough => {}
            }
        }
    }

    /// A window id `pcw:<session>:<8 hex>` unique on the branch, derived without a random source.
    fn mint_window_id(&self, now_ms: i64) -> String {
        let session = self.history.session_id();
        let existing = self.history.window_ids();
        let mut seed = fnv1a(session.as_bytes())
            ^ (now_ms as u64)
            ^ ((self.history.entry_count() as u64) << 32);
        loop {
            seed = splitmix64(seed);
            let id = format!("pcw:{session}:{:08x}", seed as u32);
            if !existing.iter().any(|e| *e == id) {
                return id;
            }
        }
    }

    fn boot_text(
        &self,
        current: Option<&str>,
        previous: Option<&str>,
        dropped: Option<&str>,
        handoff: Option<&str>,
    ) -> String {
        let ids = self.history.window_ids();
        let first = ids.first().copied().unwrap_or("");
        let current = current.unwrap_or_else(|| self.history.current_window_id());
        let recent = self.notes.recent(3);
        let block = BootBlock {
            agent_name: &self.config.agent_name,
            first_window_id: first,
            current_window_id: current,
            previous_window_id: previous,
            notes: recent
                .iter()
                .map(|n| NoteIndexEntry {
                    path: &n.path,
                    content: &n.content,
                    updated_ms: n.updated_ms,
                })
                .collect(),
            note_count: self.notes.len(),
            tz_offset_minutes: self.tz_offset_minutes,
            handoff,
            dropped_request: dropped,
        };
        render_boot_block(&block)
    }

    fn reset_plan(
        &self,
        attempt: AttemptId,
        source: ResetSource,
        continuation: bool,
        restate: bool,
        moment: &Moment,
    ) -> ResetPlan {
        let window_id = self.mint_window_id(moment.now_ms);
        let previous = self.history.current_window_id().to_string();
        let dropped = if restate {
            self.current_window()
                .last_user
                .as_ref()
                .map(|(_, t)| t.as_str())
        } else {
            None
        };
        // A written handoff travels into the next window whatever triggered the reset; a forced
        // reset carries its explanation instead.
        let handoff = match (&self.handoff_ready, &self.forced) {
            (Some((_, markdown)), _) => Some(markdown.as_str()),
            (None, Some((note, _))) if source == ResetSource::Forced => Some(note.as_str()),
            _ => None,
        };
        let continuation = match (&self.forced, source) {
            (Some((_, keep_going)), ResetSource::Forced) => continuation && *keep_going,
            _ => continuation,
        };
        let summary = self.boot_text(Some(&window_id), Some(&previous), dropped, handoff);
        let source_name = source.as_str();
        let kind = self.policy.committing.map(|k| k.as_str());
        let reason = match source {
            ResetSource::Fallback | ResetSource::Threshold | ResetSource::Overflow => {
                ContinuationReason::Fallback
            }
            ResetSource::Handoff | ResetSource::Forced | ResetSource::Idle => {
                ContinuationReason::Handoff
            }
            _ => ContinuationReason::NewContext,
        };
        ResetPlan {
            marker: Marker {
                custom_type: RESET_MARKER_TYPE.into(),
                data: json!({ "windowId": window_id, "attempt": attempt, "source": source_name }),
            },
            summary,
            details: json!({
                "relay": "window",
                "windowId": window_id,
                "previousWindowId": previous,
                "attempt": attempt,
                "source": source_name,
                "kind": kind,
                "handoffPath": self.handoff_ready.as_ref().map(|(p, _)| p.clone()),
            }),
            continuation: continuation.then(|| Continuation {
                custom_type: CONTINUE_TYPE.into(),
                content: render_continuation(reason),
            }),
        }
    }

    fn status_text(&self, moment: &Moment) -> String {
        if !self.enabled() {
            return "relay off".into();
        }
        let mut s = format!("relay w{}", self.window_count());
        if let Some(u) = moment.usage {
            match remaining_tokens(u.context_window, u.tokens, self.reserve_tokens) {
                Some(r) => s.push_str(&format!(" · {} left", group_digits(r))),
                None => s.push_str(" · fresh"),
            }
        }
        if let Some(p) = self.scheduler.pending() {
            s.push_str(&format!(" · reset pending ({})", p.as_str()));
        }
        if let Some(footer) = policy::render_mode_footer(&self.mode) {
            s.push_str(" · ");
            s.push_str(&footer);
        }
        s
    }

    fn status_effect(&self, moment: &Moment) -> Effect {
        Effect::Status {
            text: Some(self.status_text(moment)),
        }
    }

    fn command(&mut self, args: &str, moment: &Moment, reply: &mut HookReply) {
        let text = match args {
            "on" => {
                self.toggle = Some(true);
                self.scheduler.handle(SchedInput::SetEnabled(true));
                "relay: on — context windows, notes index, reminder and reset-style compaction are active".to_string()
            }
            "off" => {
                self.toggle = Some(false);
                self.scheduler.handle(SchedInput::SetEnabled(false));
                "relay: off — Pi's default compaction applies again; history and notes tools stay available".to_string()
            }
            "" | "status" => render_status(&StatusInfo {
                enabled: self.enabled(),
                current_window_id: self.history.current_window_id(),
                window_count: self.window_count(),
                note_count: self.notes.len(),
                remaining_tokens: moment.usage.and_then(|u| {
                    remaining_tokens(u.context_window, u.tokens, self.reserve_tokens)
                }),
                reserve_tokens: self.reserve_tokens,
                reminder_threshold: reminder_threshold(
                    self.reserve_tokens,
                    self.config.reminder_margin_tokens,
                ),
                reminder_sent: self.current_window().reminder_at.is_some(),
                pending_reset: self.scheduler.pending().map(ResetSource::as_str),
                budget_mode: self.mode.effective.as_str(),
                budget_configured: self.mode.configured.as_str(),
                budget_reason: self.mode.reason.as_deref(),
            }),
            other => {
                format!("relay: unknown argument {other:?}; use /relay, /relay on or /relay off")
            }
        };
        reply.effects.push(Effect::Notify {
            text,
            level: "info".into(),
        });
        reply.effects.push(self.status_effect(moment));
    }

    /// Run one of Relay's tools.
    pub fn tool(&mut self, name: &str, args: &Value, moment: &Moment) -> ToolReply {
        self.tz_offset_minutes = moment.tz_offset_minutes;
        match name {
            "history_list_windows" => self.history.list_windows(args).into(),
            "history_list_items" => self.history.list_items(args).into(),
            "history_read_item" => self.history.read_item(args).into(),
            "history_search_contents" => self.history.search_contents(args).into(),
            "notes_list_files_by_prefix" => self.notes.list_files_by_prefix(args).into(),
            "notes_read_file" => self.notes.read_file(args).into(),
            "notes_search_contents" => self.notes.search_contents(args).into(),
            "notes_write_file" | "notes_append_to_file" => {
                match self.notes.prepare(name, args, moment.now_ms) {
                    Err(out) => out.into(),
                    Ok(op) => {
                        // `prepare` validated the operation against the current note; describe
                        // the note after it without copying it.
                        let text =
                            note_after(self.notes.get(&op.path).map(|n| n.content.as_str()), &op);
                        let mut reply: ToolReply = text.into();
                        if !reply.is_error {
                            reply.persist = Some(Marker {
                                custom_type: NOTE_CUSTOM_TYPE.into(),
                                data: op.to_data(),
                            });
                        }
                        reply
                    }
                }
            }
            "new_context" => {
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
                let remaining = moment.usage.and_then(|u| {
                    remaining_tokens(u.context_window, u.tokens, self.reserve_tokens)
                });
                ToolOutput::json(&json!({ "remaining_tokens": remaining })).into()
            }
            other => ToolOutput::error(format!("unknown tool {other:?}")).into(),
        }
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Git facts the binding collects for a handoff (independently of the model).
#[derive(Debug, Clone)]
pub struct GitFacts {
    pub repo_root: Option<String>,
    pub branch: Option<String>,
    pub head: Option<String>,
    pub state: GitState,
}

/// The budget policy configuration: the file when there is one (an unusable file selects safe
/// observe mode and says why), else the `budget` object of Relay's settings, else the defaults.
fn select_budget(
    sources: &ConfigSources,
    from_settings: Option<&Value>,
) -> (BudgetConfig, Vec<ConfigIssue>) {
    let file_path = sources
        .budget_config_path
        .clone()
        .unwrap_or_else(|| "context-budget.json".into());
    if let Some(error) = &sources.budget_file_error {
        let issue = ConfigIssue {
            path: file_path,
            message: format!(
                "cannot read the budget configuration ({error}); using safe observe mode"
            ),
        };
        return (invalid_file_config(issue.clone()), vec![issue]);
    }
    if let Some(text) = &sources.budget_file {
        return match serde_json::from_str::<Value>(text) {
            Ok(v) if v.is_object() => parse_budget_config(&v, &file_path),
            Ok(_) => {
                let issue = ConfigIssue {
                    path: file_path,
                    message: "expected a JSON object; using safe observe mode".into(),
                };
                (invalid_file_config(issue.clone()), vec![issue])
            }
            Err(e) => {
                let issue = ConfigIssue {
                    path: file_path,
                    message: format!("not valid JSON ({e}); using safe observe mode"),
                };
                (invalid_file_config(issue.clone()), vec![issue])
            }
        };
    }
    match from_settings {
        Some(v) => parse_budget_config(v, "relay.budget"),
        None => (BudgetConfig::default(), Vec::new()),
    }
}

#[cfg(test)]
mod tests;

/// The notes tool result after `op`, computed from the note before it (no copy of the note):
/// `{"path","deleted":true}` for a delete, else `{"path","lines","bytes","deleted":false}`, the
/// same shape `Notes::op_result` gives after replaying the operation.
fn note_after(before: Option<&str>, op: &NoteOp) -> ToolOutput {
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
