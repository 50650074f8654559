//! The mirror: Relay's projection of Pi's current branch, fed entry by entry, and Pi's usage
//! estimate kept from it.
//!
//! **Contract.**
//! - [`Mirror`] holds only what replaying the branch rebuilds: the history (items and windows),
//!   the notes (replayed operations), per-window facts (boot block, reminder, the last user
//!   request), Pi's usage estimate per window, the latest handoff record and the budget commits.
//!   A reload of the JSONL gives the same state.
//! - Appending costs O(new entries); a navigation truncates to the common ancestor and rebuilds
//!   only the current window's estimate (and the notes, when a note operation was dropped).
//! - [`Mirror::push`] reports what the entry means for the rest of the engine ([`Observed`]);
//!   reacting to it (a reset applied, a boot block or reminder that arrived) is the engine's part,
//!   in the `impl Engine` block below.

use serde_json::Value;

use super::wire::{Moment, Usage, BOOT_TYPE, HANDOFF_TYPE, REMINDER_TYPE, RESUME_CHECK_TYPE};
use super::Engine;
use crate::entry::{Entry, EntryKind};
use crate::handoff::HandoffFingerprint;
use crate::history::History;
use crate::notes::{NoteOp, Notes, NOTE_CUSTOM_TYPE};
use crate::policy::{PolicyInput, PolicyState};
use crate::scheduler::{AttemptId, SchedInput};

/// Per-window facts derived from the mirror (positions are indices into the mirrored branch).
#[derive(Debug, Clone, Default)]
pub(super) struct WindowState {
    /// Position of the compaction that opened the window (0 for the root window).
    pub(super) start: usize,
    pub(super) boot_at: Option<usize>,
    pub(super) reminder_at: Option<usize>,
    /// The window's last user message: restated in the boot block when a reset drops it.
    pub(super) last_user: Option<(usize, String)>,
    /// Context size the way Pi estimates it, kept incrementally so that no hook has to ask Pi
    /// (whose `getContextUsage()` walks the whole branch): the last valid assistant usage in this
    /// window, plus chars/4 of every message after it.
    last_usage: Option<u64>,
    /// The window's first valid assistant usage: the budget policy's floor.
    pub(super) first_usage: Option<u64>,
    trailing: u64,
    /// chars/4 of every message of the window (Pi's estimate before any usage is known).
    all: u64,
    /// The compaction that opened the window committed a written handoff.
    pub(super) opened_by_handoff: bool,
    /// The window's resume check (a `relay/resume-check` entry for this window): its position,
    /// the message every request of the window carries, and when it ran.
    pub(super) resume_check: Option<(usize, String, i64)>,
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

/// What a mirrored entry means for the rest of the engine.
pub(super) enum Observed {
    /// A compaction opened a new window; `attempt` is Relay's reset attempt it installs, if any.
    Window {
        attempt: Option<AttemptId>,
    },
    /// The root window's boot block.
    Boot,
    /// The current window's reminder.
    Reminder,
    Other,
}

/// The projection of the branch. See the module documentation.
pub(super) struct Mirror {
    pub(super) history: History,
    pub(super) notes: Notes,
    note_ops: Vec<(usize, NoteOp)>,
    /// The windows before the current one, oldest first.
    earlier: Vec<WindowState>,
    current: WindowState,
    usage_marks: Vec<UsageMark>,
    /// Persisted note operations that failed validation (entry + reason), reported once.
    skipped_notes: Vec<String>,
    /// The largest reset attempt id found on the branch.
    pub(super) max_attempt_seen: AttemptId,
    /// Positions of the compactions on the branch that were budget/hard commits (they count toward
    /// `maxHandoffsPerSession`, also after a reload or a navigation).
    commit_marks: Vec<usize>,
    /// Positions of the assistant messages on the branch: one per turn, the policy's turn clock.
    turn_marks: Vec<usize>,
    /// Positions of successful tool results other than `context_handoff` (progress for the loop
    /// guard).
    progress_marks: Vec<usize>,
    /// The newest handoff written on the branch and not yet committed (a `relay/handoff` entry):
    /// its position, path and duplicate fingerprint.
    written_handoff: Option<(usize, String, HandoffFingerprint)>,
    /// Handoffs that committed (a compaction on the branch names their path), oldest first: the
    /// duplicate back-off and the status file use the newest. A handoff that was invalidated or
    /// ignored never committed, so it sets no back-off.
    committed_handoffs: Vec<(usize, String, HandoffFingerprint)>,
    /// Replaying a whole branch: applied resets are history, not callbacks.
    pub(super) replaying: bool,
}

impl Mirror {
    pub(super) fn new(session_id: &str) -> Self {
        Mirror {
            history: History::new(session_id),
            notes: Notes::new(),
            note_ops: Vec::new(),
            earlier: Vec::new(),
            current: WindowState::default(),
            usage_marks: Vec::new(),
            skipped_notes: Vec::new(),
            max_attempt_seen: 0,
            commit_marks: Vec::new(),
            turn_marks: Vec::new(),
            progress_marks: Vec::new(),
            written_handoff: None,
            committed_handoffs: Vec::new(),
            replaying: false,
        }
    }

    pub(super) fn current_window(&self) -> &WindowState {
        &self.current
    }

    /// Budget/hard commits on the branch (they count toward the handoff cap).
    pub(super) fn commits(&self) -> u32 {
        u32::try_from(self.commit_marks.len()).unwrap_or(u32::MAX)
    }

    /// The budget policy's state as the branch holds it: the floor (the current window's first
    /// assistant usage), the turn clock (assistant messages), the handoff count and the loop
    /// guard's commits since the last successful non-handoff tool, each at the turn it was made.
    /// Nothing pending: a reload, a navigation or leaving an observe preview starts from here.
    pub(super) fn policy_state(&self) -> PolicyState {
        let turns_before = |pos: usize| self.turn_marks.partition_point(|&t| t < pos) as u64;
        let last_progress = self.progress_marks.last().copied();
        let unproductive_commits = self
            .commit_marks
            .iter()
            .filter(|&&c| last_progress.is_none_or(|p| c > p))
            .map(|&c| turns_before(c))
            .collect();
        let floor = self.current.first_usage;
        PolicyState {
            floor,
            awaiting_floor: floor.is_none(),
            turn: self.turn_marks.len() as u64,
            handoffs_committed: self.commits(),
            unproductive_commits,
            ..PolicyState::default()
        }
    }

    /// Whether the current window has an assistant reply yet (its first request was answered).
    pub(super) fn window_answered(&self) -> bool {
        self.turn_marks
            .last()
            .is_some_and(|&t| t >= self.current.start)
    }

    /// The newest committed handoff's duplicate fingerprint (the back-off compares with it).
    pub(super) fn last_fingerprint(&self) -> Option<&HandoffFingerprint> {
        self.committed_handoffs.last().map(|(_, _, fp)| fp)
    }

    /// The newest committed handoff's path and time, for the status file.
    pub(super) fn last_handoff(&self) -> Option<(&str, i64)> {
        self.committed_handoffs
            .last()
            .map(|(_, path, fp)| (path.as_str(), fp.at_ms))
    }

    /// Note operations on the branch that could not be applied, each reported once.
    pub(super) fn take_skipped_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.skipped_notes)
    }

    /// Mirror the next entry of the branch.
    pub(super) fn push(&mut self, entry: &Entry) -> Observed {
        let pos = self.history.entry_count();
        self.history.push(entry);
        let observed = match &entry.kind {
            EntryKind::Compaction { details, .. } => {
                let previous = std::mem::replace(
                    &mut self.current,
                    WindowState {
                        start: pos,
                        ..WindowState::default()
                    },
                );
                self.earlier.push(previous);
                let attempt = (details.get("relay").and_then(Value::as_str) == Some("window"))
                    .then(|| details.get("attempt").and_then(Value::as_u64))
                    .flatten();
                if let Some(a) = attempt {
                    self.max_attempt_seen = self.max_attempt_seen.max(a);
                }
                let committed = details.get("handoffPath").and_then(Value::as_str);
                if let Some(path) = committed {
                    if let Some((_, written, fp)) = self.written_handoff.take() {
                        if written == path {
                            self.committed_handoffs.push((pos, written, fp));
                            self.current.opened_by_handoff = true;
                        }
                    }
                }
                self.written_handoff = None;
                let kind = details.get("kind").and_then(Value::as_str);
                if matches!(kind, Some("budget" | "hard" | "forcedHard")) {
                    self.commit_marks.push(pos);
                }
                Observed::Window { attempt }
            }
            EntryKind::CustomMessage { custom_type, .. } if custom_type == BOOT_TYPE => {
                self.current.boot_at = Some(pos);
                Observed::Boot
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
                    self.current.reminder_at = Some(pos);
                    Observed::Reminder
                } else {
                    Observed::Other
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
                Observed::Other
            }
            EntryKind::Custom { custom_type, data } if custom_type == HANDOFF_TYPE => {
                let fingerprint = data
                    .get("fingerprint")
                    .and_then(HandoffFingerprint::from_value);
                let path = data.get("path").and_then(Value::as_str);
                if let (Some(fp), Some(path)) = (fingerprint, path) {
                    self.written_handoff = Some((pos, path.to_string(), fp));
                }
                Observed::Other
            }
            EntryKind::Custom { custom_type, data } if custom_type == RESUME_CHECK_TYPE => {
                if let Some(check) =
                    super::resume::window_check(data, self.history.current_window_id())
                {
                    self.current.resume_check = Some((pos, check.0, check.1));
                }
                Observed::Other
            }
            EntryKind::Message(m) if m.role == "user" => {
                self.current.last_user = Some((pos, m.text.clone()));
                Observed::Other
            }
            EntryKind::Message(m) if m.role == "assistant" => {
                self.turn_marks.push(pos);
                Observed::Other
            }
            EntryKind::Message(m)
                if m.role == "toolResult"
                    && !m.is_error
                    && m.tool_name.as_deref() != Some(crate::policy::HANDOFF_TOOL) =>
            {
                self.progress_marks.push(pos);
                Observed::Other
            }
            _ => Observed::Other,
        };
        self.account_usage(pos, entry);
        observed
    }

    /// Drop every entry after `id`. False when `id` is not mirrored (nothing changes).
    pub(super) fn truncate_after(&mut self, id: &str) -> bool {
        if !self.history.truncate_after(id) {
            return false;
        }
        let len = self.history.entry_count();
        while self.current.start >= len {
            match self.earlier.pop() {
                Some(w) => self.current = w,
                None => break,
            }
        }
        let w = &mut self.current;
        if w.boot_at.is_some_and(|p| p >= len) {
            w.boot_at = None;
        }
        if w.reminder_at.is_some_and(|p| p >= len) {
            w.reminder_at = None;
        }
        if w.last_user.as_ref().is_some_and(|(p, _)| *p >= len) {
            w.last_user = None;
        }
        if w.resume_check.as_ref().is_some_and(|(p, _, _)| *p >= len) {
            w.resume_check = None;
        }
        if self
            .written_handoff
            .as_ref()
            .is_some_and(|(p, _, _)| *p >= len)
        {
            self.written_handoff = None;
        }
        while self
            .committed_handoffs
            .last()
            .is_some_and(|(p, _, _)| *p >= len)
        {
            self.committed_handoffs.pop();
        }
        for marks in [
            &mut self.commit_marks,
            &mut self.turn_marks,
            &mut self.progress_marks,
        ] {
            while marks.last().is_some_and(|&p| p >= len) {
                marks.pop();
            }
        }
        while self.usage_marks.last().is_some_and(|m| m.pos >= len) {
            self.usage_marks.pop();
        }
        let start = self.current.start;
        let (mut last_usage, mut first_usage, mut trailing, mut all) = (None, None, 0, 0);
        for mark in self.usage_marks.iter().rev().take_while(|m| m.pos >= start) {
            match mark.usage {
                Some(u) if last_usage.is_none() => {
                    last_usage = Some(u);
                    first_usage = Some(u);
                }
                Some(u) => first_usage = Some(u),
                None => {
                    all += mark.estimate;
                    if last_usage.is_none() {
                        trailing += mark.estimate;
                    }
                }
            }
        }
        let w = &mut self.current;
        w.last_usage = last_usage;
        w.first_usage = first_usage;
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
        true
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
        let w = &mut self.current;
        match mark.usage {
            Some(u) => {
                w.last_usage = Some(u);
                w.first_usage.get_or_insert(u);
                w.trailing = 0;
            }
            None => {
                w.trailing += mark.estimate;
                w.all += mark.estimate;
            }
        }
    }

    /// The usage figure the policy and the reminder judge: Pi's own when the moment carries it
    /// (tools), else the incremental estimate. `None` while unknown (a window whose reset has no
    /// assistant usage yet).
    pub(super) fn usage(&self, moment: &Moment) -> Option<Usage> {
        if moment.usage.is_some() {
            return moment.usage;
        }
        let context_window = moment.context_window?;
        let w = &self.current;
        let tokens = match w.last_usage {
            Some(u) => Some(u + w.trailing),
            None if self.earlier.is_empty() => Some(w.all),
            None => None,
        };
        Some(Usage {
            tokens,
            context_window,
        })
    }
}

/// Feeding the mirror: the engine's inputs that keep it equal to Pi's branch.
impl Engine {
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
        self.mirror = Mirror::new(session_id);
        self.mirror.replaying = true;
        self.budget.handoff_ready = None;
        self.budget.forced = None;
    }

    /// The next entry of a branch being replayed after [`Engine::begin_resync`].
    pub fn push_replayed(&mut self, entry: &Entry) {
        self.push(entry);
    }

    /// Ends a replay started by [`Engine::begin_resync`].
    pub fn end_resync(&mut self) {
        self.mirror.replaying = false;
        // Attempt ids recorded on the branch are history: new attempts must never match them.
        self.scheduler
            .set_next_attempt_floor(self.mirror.max_attempt_seen.saturating_add(1));
        // The policy starts from what the branch holds: floor, turn clock, commits, loop guard.
        self.budget.policy = self.mirror.policy_state();
        self.outstanding.boot = false;
        self.outstanding.reminder = None;
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
                let sid = self.mirror.history.session_id().to_string();
                self.resync(&sid, &[]);
            }
            Some(id) => {
                self.mirror.truncate_after(id);
            }
        }
    }

    /// Mirror one entry and react to it: a compaction ends the window (and may be the reset this
    /// engine handed out), a boot block or reminder that arrives is no longer outstanding.
    fn push(&mut self, entry: &Entry) {
        match self.mirror.push(entry) {
            Observed::Window { attempt } => {
                if !self.mirror.replaying {
                    if let (Some(a), Some(outstanding)) = (attempt, self.outstanding.reset) {
                        if a == outstanding {
                            self.outstanding.reset = None;
                            self.scheduler
                                .handle(SchedInput::ResetApplied { attempt: a });
                        }
                    }
                    // Any new window (Relay's or Pi's own compaction) starts the budget afresh.
                    let fx = self.policy_step(PolicyInput::ResetApplied);
                    self.budget.pending_fx.extend(fx);
                    self.budget.handoff_ready = None;
                    self.budget.forced = None;
                }
                self.outstanding.reminder = None;
            }
            Observed::Boot => self.outstanding.boot = false,
            Observed::Reminder => self.outstanding.reminder = None,
            Observed::Other => {}
        }
    }
}
