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

use super::wire::{
    Moment, Usage, BOOT_TYPE, CLEARING_TYPE, CONTINUE_TASK_TYPE, FALLBACK_DISARMED_TYPE,
    HANDOFF_REQUEST_TYPE, HANDOFF_TYPE, NATIVE_FALLBACK_TYPE, PINS_TYPE, REMINDER_TYPE,
    RESET_FAILED_TYPE, RESUME_CHECK_TYPE, STALE_CHECK_TYPE, STEER_TYPE, WATCH_CHECK_TYPE,
};
use super::Engine;
use crate::entry::{Entry, EntryKind, Replacement, StopReason, SystemDelta, WindowMarker};
use crate::handoff::HandoffFingerprint;
use crate::history::History;
use crate::integrations::RecordedJob;
use crate::notes::{NoteOp, Notes, NOTE_CUSTOM_TYPE};
use crate::policy::{PolicyInput, PolicyState};
use crate::records::{
    ClearingRecord, FallbackDisarmedRecord, HandoffRecord, MessageDetails, NativeFallbackRecord,
    Record, ReminderDetails, ResetFailedDetails, WindowRecord,
};
use crate::scheduler::{AttemptId, ResetSource, SchedInput};
use crate::staleness::WorkspaceRecord;
use crate::tool_name::ToolName;

mod answers;
mod clearable;
mod in_progress;
mod load;
mod pins;
mod truncate;
mod usage;

pub use load::{Appended, LoadedBranch};
use usage::*;

/// Per-window facts derived from the mirror (positions are indices into the mirrored branch).
#[derive(Debug, Clone, Default)]
pub(super) struct WindowState {
    /// Position of the compaction that opened the window (0 for the root window).
    pub(super) start: usize,
    pub(super) boot_at: Option<usize>,
    pub(super) reminder_at: Option<usize>,
    /// Relay's note-taking steer in this window: the window's one borrowed turn is spent.
    pub(super) steer_at: Option<usize>,
    /// The notice of a rejected window-full reset (`details.retry`): the window waits for its
    /// retry.
    pub(super) reset_failed_at: Option<usize>,
    /// Every notice of a failed reset Relay owns in this window (not the user's `/compact`):
    /// the failure count is a projection of the branch.
    pub(super) owned_failures_at: Vec<usize>,
    /// The failure notice at which Relay gave up resetting this window (the third owned failure,
    /// or a persistent one): the compaction-failure fallback is armed from here on, also after a
    /// reload or a new process (`Mirror::policy_state`).
    pub(super) gave_up_at: Option<usize>,
    /// The latest `relay/fallback-disarmed` record of this window: a mode or guard change
    /// disarmed the fallback `gave_up_at` armed (a give-up after it arms it again).
    pub(super) disarmed_at: Option<usize>,
    /// The guard-off native fallback of this window (`relay/native-fallback` records): where
    /// Pi's own summarizer failed (the window earned one mechanical reset), and where that reset
    /// was chosen (spent). Positions, so that a navigation keeps them exact.
    pub(super) native_failed_at: Option<usize>,
    pub(super) native_spent_at: Option<usize>,
    /// Positions of the window's user messages, oldest first: the boot block of an automatic
    /// reset repeats the newest of them (their texts are in the history arena), and an overflow
    /// reset restates the newest as the dropped request. Positions only, so a navigation keeps it
    /// exact by dropping those past the new leaf.
    pub(super) user_at: Vec<usize>,
    /// Context size the way Pi estimates it (see [`Mirror::usage`]), kept incrementally so
    /// that no hook has to ask Pi (whose `getContextUsage()` walks the whole branch).
    estimate: Estimate,
    /// The compaction that opened the window committed a written handoff.
    pub(super) opened_by_handoff: bool,
    /// The window was opened by Relay's overflow reset (its one reset-and-retry).
    pub(super) opened_by_overflow: bool,
    /// The window was opened by one of Relay's automatic or forced resets (threshold crossing,
    /// fallback, overflow, forced budget reset, idle, handoff commit): not by the model's own
    /// `new_context`, the user's `/compact` or another extension's compaction.
    pub(super) opened_automatically: bool,
    /// The window's first tool call (an assistant message that stopped for tools, or a tool
    /// result).
    pub(super) tool_called_at: Option<usize>,
    /// The window's continuation after an early stop (`relay/continue-task`): at most one per
    /// window, also after a reload.
    pub(super) continued_task_at: Option<usize>,
    /// The first user message or successful assistant answer (not an error, not cut at
    /// `length`) in the window: it re-arms overflow recovery, as it re-arms Pi's own attempt.
    pub(super) rearmed_at: Option<usize>,
    /// The window's first user message or successful tool result other than Relay's two reset
    /// tools (`new_context`, `context_handoff`): until then a window opened by a reset holds no
    /// work, and the reset guard refuses another model-asked reset ([`WindowState::idle_since_reset`]).
    pub(super) worked_at: Option<usize>,
    /// The window's first assistant reply that was not aborted (Esc) or failed (Pi 1.3 records
    /// an abort while the request is prepared as an `error`): the window's first request was
    /// answered, so its after-reset checks are no longer due.
    pub(super) answered_at: Option<usize>,
    /// The window's resume check (a `relay/resume-check` entry for this window): its position,
    /// the message every request of the window carries, and when it ran.
    pub(super) resume_check: Option<(usize, String, i64)>,
    /// The jobs and watches the committed handoff that opened the window recorded (`None`: no
    /// handoff, or the pi-jobs registry was absent when it was written).
    pub(super) recorded_jobs: Option<Vec<RecordedJob>>,
    /// The window's watch check (a `relay/watch-check` entry for this window): its position, the
    /// message every request of the window carries, and when it ran.
    pub(super) watch_check: Option<(usize, String, i64)>,
    /// The workspace the committed handoff that opened the window recorded (`None`: no handoff,
    /// or one written without it).
    pub(super) recorded_workspace: Option<Box<WorkspaceRecord>>,
    /// The window's latest stale-handoff check (a `relay/stale-check` entry for this window).
    pub(super) stale_check: Option<super::stale::WindowCheck>,
    /// The window's tool calls, oldest first, and the positions of its assistant messages that
    /// said something besides calling tools: the next window's `<in_progress>` (see
    /// `mirror/in_progress.rs`).
    calls: Vec<in_progress::CallMark>,
    words_at: Vec<usize>,
}

impl WindowState {
    /// Relay gave up resetting this window and no mode or guard change disarmed that since: the
    /// compaction-failure fallback is armed.
    pub(super) fn fallback_armed(&self) -> bool {
        self.gave_up_at
            .is_some_and(|g| self.disarmed_at.is_none_or(|d| d < g))
    }

    /// The window's overflow reset-and-retry is spent: the window was opened by an overflow reset
    /// and neither user input nor a successful answer has re-armed recovery since.
    pub(super) fn overflow_retry_spent(&self) -> bool {
        self.opened_by_overflow && self.rearmed_at.is_none()
    }

    /// The guard-off native fallback: `None` while Pi's summarizer has not failed in the window,
    /// else whether its one mechanical reset was chosen already (`true`: spent).
    pub(super) fn native_fallback(&self) -> Option<bool> {
        self.native_failed_at
            .map(|_| self.native_spent_at.is_some())
    }

    /// The window was opened by a reset and nothing happened in it since: no user message, no
    /// successful tool other than `new_context` / `context_handoff`. A projection of the branch,
    /// so a reload keeps it.
    pub(super) fn idle_since_reset(&self) -> bool {
        self.start > 0 && self.worked_at.is_none()
    }

    /// The window's first valid assistant usage (the budget policy's floor), as Pi's estimate
    /// sees it: a context edit that removed it does not bring it back.
    pub(super) fn first_usage(&self) -> Option<u64> {
        self.estimate.first_usage
    }
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
    /// Entries of pi-context / pi-context-budget on the branch that Relay does not import, by
    /// `customType` (reported once, see `entry::unimported`).
    unimported: std::collections::BTreeMap<String, u32>,
    /// The largest reset attempt id found on the branch.
    pub(super) max_attempt_seen: AttemptId,
    /// Positions of the compactions on the branch that were budget/hard commits (they count toward
    /// `maxHandoffsPerSession`, also after a reload or a navigation).
    commit_marks: Vec<usize>,
    /// Positions of the assistant messages on the branch: one per turn, the policy's turn clock.
    turn_marks: Vec<usize>,
    /// Where the model of the latest successful answer changed, with that model, oldest first
    /// (`mirror/answers.rs`).
    answer_marks: Vec<(usize, crate::entry::ModelRef)>,
    /// Positions of successful tool results other than `context_handoff` (progress for the loop
    /// guard).
    progress_marks: Vec<usize>,
    /// Positions of the budget policy's handoff requests (`relay/handoff-request`), and of those
    /// among them that were the idle request (`details.idle`): see [`Mirror::run_request`].
    request_marks: Vec<usize>,
    idle_request_marks: Vec<usize>,
    /// The newest handoff written on the branch and not yet committed (a `relay/handoff` entry):
    /// its position, path, duplicate fingerprint and `launch_prompt` (for a relaunch).
    written_handoff: Option<(usize, String, HandoffFingerprint, Option<String>)>,
    /// The jobs the written handoff recorded (for the watch check of the window it opens).
    written_jobs: Option<Vec<RecordedJob>>,
    /// The workspace the written handoff recorded (for the stale check of the window it opens).
    written_workspace: Option<Box<WorkspaceRecord>>,
    /// Handoffs that committed (a compaction on the branch names their path), oldest first: the
    /// duplicate back-off and the status file use the newest. A handoff that was invalidated or
    /// ignored never committed, so it sets no back-off.
    committed_handoffs: Vec<(usize, String, HandoffFingerprint, Option<String>)>,
    /// Subagent ids the pi-subagents tools named in their results on the branch (position, id),
    /// oldest first: a handoff asks the live registry about them besides the task directory's.
    subagent_ids: Vec<(usize, String)>,
    /// The tool-result clearings on the branch (`relay/clear-tool-results` entries), oldest
    /// first.
    pub(super) clearings: Vec<clearable::ClearingMark>,
    /// The user's pinned instructions on the branch (`relay/pins` records, each the whole list
    /// after a change), oldest first: the newest is in force ([`Mirror::pins`]).
    pin_marks: Vec<(usize, Vec<String>)>,
    /// The branch's part in the ledger (`/relay stats`): each request, boundary and clearing
    /// with its position, oldest first.
    ledger_marks: Vec<(usize, crate::ledger::LedgerMark)>,
    /// What a clearing of the current window would free, kept as the window grows (see
    /// `mirror/clearable.rs`).
    clearable: std::cell::RefCell<clearable::Clearable>,
    /// Replaying a whole branch: applied resets are history, not callbacks.
    pub(super) replaying: bool,
    /// The windows before the current one were skimmed (their messages without texts, see
    /// [`LoadedBranch::skimmed`]): everything but the history's texts is the branch's, so the
    /// hooks can go on; the history tools wait for [`Engine::complete`].
    pub(super) skimmed: bool,
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
            unimported: std::collections::BTreeMap::new(),
            max_attempt_seen: 0,
            commit_marks: Vec::new(),
            turn_marks: Vec::new(),
            answer_marks: Vec::new(),
            progress_marks: Vec::new(),
            request_marks: Vec::new(),
            idle_request_marks: Vec::new(),
            subagent_ids: Vec::new(),
            written_handoff: None,
            clearings: Vec::new(),
            ledger_marks: Vec::new(),
            pin_marks: Vec::new(),
            clearable: Default::default(),
            written_jobs: None,
            written_workspace: None,
            committed_handoffs: Vec::new(),
            replaying: false,
            skimmed: false,
        }
    }

    pub(super) fn current_window(&self) -> &WindowState {
        &self.current
    }

    /// The newest `n` user messages of [`Mirror::user_input_window`], oldest first: the current
    /// window's, or those of the newest earlier window that has any.
    pub(super) fn recent_user_input(&self, n: usize) -> Vec<std::borrow::Cow<'_, str>> {
        let at = &self.user_input_window().user_at;
        at.get(at.len().saturating_sub(n)..)
            .unwrap_or_default()
            .iter()
            .filter_map(|&p| self.history.entry_text(p))
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// The newest window that holds a user message: the current one, or when it has none (a
    /// window a reset opened and no user has written in yet), the newest earlier one that does.
    /// O(windows) only past windows without user input, and only when a reset is planned or
    /// an early stop judged.
    fn user_input_window(&self) -> &WindowState {
        if !self.current.user_at.is_empty() {
            return &self.current;
        }
        self.earlier
            .iter()
            .rev()
            .find(|w| !w.user_at.is_empty())
            .unwrap_or(&self.current)
    }

    /// The text of the user's latest message on the branch (`None` without one, or while the
    /// earlier window holding it is skimmed, its text not read yet).
    pub(super) fn latest_user_request(&self) -> Option<std::borrow::Cow<'_, str>> {
        let at = *self.user_input_window().user_at.last()?;
        self.history.entry_text(at).filter(|t| !t.is_empty())
    }

    /// A tool ran successfully (other than `context_handoff`) since the current window's latest
    /// user message: the model had begun working on that request.
    pub(super) fn worked_since_latest_request(&self) -> bool {
        let Some(&at) = self.current.user_at.last() else {
            return false;
        };
        self.progress_marks.last().is_some_and(|&p| p > at)
    }

    /// The current window's latest assistant reply (its position), if it has one.
    pub(super) fn last_reply_in_window(&self) -> Option<usize> {
        self.turn_marks
            .last()
            .copied()
            .filter(|&t| t >= self.current.start)
    }

    /// What each window of the branch cost (`/relay stats`).
    pub(super) fn ledger(&self) -> crate::ledger::Ledger {
        crate::ledger::ledger_of(
            self.history.session_id(),
            &self.history.window_ids(),
            self.ledger_marks.iter().map(|(_, m)| m),
        )
    }

    /// Budget/hard commits on the branch (they count toward the handoff cap).
    pub(super) fn commits(&self) -> u32 {
        u32::try_from(self.commit_marks.len()).unwrap_or(u32::MAX)
    }

    /// The budget policy's state as the branch holds it: the floor (the current window's first
    /// assistant usage), the turn clock (assistant messages), the handoff count and the loop
    /// guard's commits since the last successful non-handoff tool, each at the turn it was made,
    /// and the compaction-failure fallback when Relay gave up resetting the current window.
    /// Nothing else pending: a reload, a navigation or leaving an observe preview starts from here.
    pub(super) fn policy_state(&self) -> PolicyState {
        let turns_before = |pos: usize| self.turn_marks.partition_point(|&t| t < pos) as u64;
        let last_progress = self.progress_marks.last().copied();
        let unproductive_commits = self
            .commit_marks
            .iter()
            .filter(|&&c| last_progress.is_none_or(|p| c > p))
            .map(|&c| turns_before(c))
            .collect();
        let floor = self.current.first_usage();
        let state = PolicyState {
            floor,
            awaiting_floor: floor.is_none(),
            turn: self.turn_marks.len() as u64,
            handoffs_committed: self.commits(),
            unproductive_commits,
            ..PolicyState::default()
        };
        // Relay gave up resetting this window: the compaction-failure fallback is armed until a
        // reset opens a new window (or a mode change disarms it).
        if self.current.fallback_armed() {
            crate::policy::armed_by_compaction_failure(state)
        } else {
            state
        }
    }

    /// The budget policy's handoff request in the run under way, as the branch holds it, for an
    /// engine made inside that run (Pi 1.3 lets a `/reload` through while a run is active):
    /// whether the run's one settle continuation was sent, and whether the idle handoff request
    /// is still open (sent in the run and in the current window: a reset ends it). Pi writes no
    /// mark where a run begins, and a steer or a follow-up is a user message like a prompt, so
    /// the run is taken to begin at the branch's latest user message: a request after it is the
    /// run's, and one before it counts as an earlier run's (after a steer, the request may come
    /// once more in the run, as after a new prompt).
    pub(super) fn run_request(&self) -> (bool, bool) {
        let run_start = self.user_input_window().user_at.last().copied();
        let in_run = |marks: &[usize]| {
            marks
                .last()
                .copied()
                .filter(|&p| run_start.is_none_or(|u| p > u))
        };
        let asked = in_run(&self.request_marks).is_some();
        let idle_open = in_run(&self.idle_request_marks).is_some_and(|p| p >= self.current.start);
        (asked, idle_open)
    }

    /// The newest subagent ids tool results named on the branch (at most
    /// [`crate::integrations::MAX_KNOWN_SUBAGENT_IDS`]).
    pub(super) fn known_subagent_ids(&self) -> Vec<String> {
        let skip = self
            .subagent_ids
            .len()
            .saturating_sub(crate::integrations::MAX_KNOWN_SUBAGENT_IDS);
        self.subagent_ids
            .iter()
            .skip(skip)
            .map(|(_, id)| id.clone())
            .collect()
    }

    /// How many resets came before the current window on the branch (0: the root window).
    pub(super) fn window_index(&self) -> usize {
        self.earlier.len()
    }

    /// Whether the current window's first request was answered: an assistant reply that was not
    /// aborted or failed (such a reply leaves the window's after-reset checks due).
    pub(super) fn window_answered(&self) -> bool {
        self.current.answered_at.is_some()
    }

    /// The newest committed handoff's duplicate fingerprint (the back-off compares with it).
    pub(super) fn last_fingerprint(&self) -> Option<&HandoffFingerprint> {
        self.committed_handoffs.last().map(|(_, _, fp, _)| fp)
    }

    /// The newest committed handoff's path and time, for the status file.
    pub(super) fn last_handoff(&self) -> Option<(&str, i64)> {
        self.committed_handoffs
            .last()
            .map(|(_, path, fp, _)| (path.as_str(), fp.at_ms))
    }

    /// The newest committed handoff's path and `launch_prompt`: what a relaunch continues from
    /// when this process wrote no handoff in the current window.
    pub(super) fn last_handoff_for_relaunch(&self) -> Option<(&str, Option<&str>)> {
        self.committed_handoffs
            .last()
            .map(|(_, path, _, lp)| (path.as_str(), lp.as_deref()))
    }

    /// Note operations on the branch that could not be applied, each reported once.
    pub(super) fn take_skipped_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.skipped_notes)
    }

    /// The replaced packages' entry types on the branch that Relay did not import, with their
    /// counts, each set reported once (empty afterwards).
    pub(super) fn take_unimported(&mut self) -> Vec<(String, u32)> {
        std::mem::take(&mut self.unimported).into_iter().collect()
    }

    /// A window marker that names a handoff file: the handoff written on the branch just before
    /// (`relay/handoff` with the same path) opens this window, or pi-context-budget's committed
    /// handoff does with its own fingerprint.
    fn commit_handoff(&mut self, pos: usize, record: &WindowRecord) {
        let Some(path) = record.handoff_path.as_deref() else {
            return;
        };
        let jobs = self.written_jobs.take();
        let workspace = self.written_workspace.take();
        if let Some((_, written, fp, lp)) = self.written_handoff.take() {
            if written == path {
                self.committed_handoffs.push((pos, written, fp, lp));
                self.current.opened_by_handoff = true;
                self.current.recorded_jobs = jobs;
                self.current.recorded_workspace = workspace;
            }
        } else if let Some(fp) = record
            .fingerprint
            .clone()
            .filter(|_| record.imported_from.is_some())
        {
            self.committed_handoffs
                .push((pos, path.to_string(), fp, None));
            self.current.opened_by_handoff = true;
        }
    }

    /// Mirror the next entry of the branch.
    pub(super) fn push(&mut self, entry: &Entry) -> Observed {
        self.push_at(entry, None)
    }

    /// [`Mirror::push`] for an entry whose line is at `at` in the session file the history reads
    /// texts back from (see [`LoadedBranch::read_texts_from`]).
    pub(super) fn push_at(&mut self, entry: &Entry, at: Option<crate::entry::LineAt>) -> Observed {
        let pos = self.history.entry_count();
        if let Some(t) = crate::entry::unimported(&entry.kind) {
            *self.unimported.entry(t.to_string()).or_default() += 1;
        }
        self.history.push_at(entry, at);
        if let Some(mark) = crate::ledger::LedgerMark::of_entry(entry) {
            self.ledger_marks.push((pos, mark));
        }
        let observed = match &entry.kind {
            EntryKind::Compaction { details, .. } => self.push_window(pos, details),
            EntryKind::CustomMessage {
                custom_type,
                details,
                ..
            } => self.push_message(pos, custom_type, details),
            EntryKind::Custom { custom_type, data } => {
                self.push_custom(pos, &entry.id, custom_type, data);
                Observed::Other
            }
            EntryKind::Message(m) if m.role == "user" => {
                self.current.user_at.push(pos);
                self.current.rearmed_at.get_or_insert(pos);
                self.current.worked_at.get_or_insert(pos);
                Observed::Other
            }
            EntryKind::Message(m) if m.role == "assistant" => {
                self.turn_marks.push(pos);
                self.note_answer(pos, m);
                if !m.stop().is_some_and(|r| r.aborted_or_failed()) {
                    self.current.answered_at.get_or_insert(pos);
                }
                if m.stop() == Some(StopReason::ToolUse) {
                    self.current.tool_called_at.get_or_insert(pos);
                }
                self.push_calls(pos, m);
                if !m.stop().is_some_and(|r| r.failed_or_cut()) {
                    self.current.rearmed_at.get_or_insert(pos);
                }
                Observed::Other
            }
            EntryKind::Message(m) if m.role == "toolResult" => {
                self.current.tool_called_at.get_or_insert(pos);
                self.push_call_result(pos, m);
                if m.tool_name
                    .as_deref()
                    .is_some_and(|n| crate::integrations::SUBAGENT_TOOLS.contains(&n))
                {
                    for id in crate::integrations::subagent_ids_in(&m.text) {
                        if !self.subagent_ids.iter().any(|(_, known)| *known == id) {
                            self.subagent_ids.push((pos, id));
                        }
                    }
                }
                if !m.is_error
                    && m.tool_name.as_deref().map(ToolName::of) != Some(ToolName::ContextHandoff)
                {
                    self.progress_marks.push(pos);
                    if m.tool_name.as_deref().map(ToolName::of) != Some(ToolName::NewContext) {
                        self.current.worked_at.get_or_insert(pos);
                    }
                }
                Observed::Other
            }
            _ => Observed::Other,
        };
        self.account_usage(pos, entry);
        observed
    }

    /// A compaction opens a window: what its window marker says (Relay's reset, or not Relay's).
    fn push_window(&mut self, pos: usize, details: &Value) -> Observed {
        let previous = std::mem::replace(
            &mut self.current,
            WindowState {
                start: pos,
                ..WindowState::default()
            },
        );
        self.earlier.push(previous);
        let record = WindowRecord::read(details);
        let attempt = record.as_ref().and_then(|r| r.attempt);
        if let Some(a) = attempt {
            self.max_attempt_seen = self.max_attempt_seen.max(a);
        }
        let source = record
            .as_ref()
            .and_then(|r| r.source.as_deref())
            .map(|name| ResetSource::parse(name).ok_or(name));
        self.current.opened_by_overflow =
            attempt.is_some() && source == Some(Ok(ResetSource::Overflow));
        self.current.opened_automatically = attempt.is_some()
            && match source {
                Some(Ok(
                    ResetSource::Fallback
                    | ResetSource::Threshold
                    | ResetSource::Overflow
                    | ResetSource::Forced
                    | ResetSource::Idle
                    | ResetSource::Handoff,
                )) => true,
                Some(Ok(ResetSource::NewContext | ResetSource::Manual)) | None => false,
                // A source this Relay does not know (a later Relay's): not an automatic reset,
                // so nothing is continued in the window it opened.
                Some(Err(_unknown)) => false,
            };
        if let Some(record) = &record {
            self.commit_handoff(pos, record);
        }
        self.written_handoff = None;
        self.written_jobs = None;
        self.written_workspace = None;
        // Both marker shapes (commit type in `commit`, or in `kind` before); commit types
        // that never count (voluntary, forcedGuard, idle, unknown ones) are passed over.
        if WindowMarker::of_record(record.as_ref()).counts() {
            self.commit_marks.push(pos);
        }
        Observed::Window { attempt }
    }

    /// One of Relay's custom messages (any other is passed over).
    fn push_message(&mut self, pos: usize, custom_type: &str, details: &Value) -> Observed {
        match custom_type {
            t if t == BOOT_TYPE => {
                self.current.boot_at = Some(pos);
                Observed::Boot
            }
            t if t == STEER_TYPE => {
                self.current.steer_at = Some(pos);
                Observed::Other
            }
            t if t == CONTINUE_TASK_TYPE => {
                self.current.continued_task_at.get_or_insert(pos);
                Observed::Other
            }
            t if t == HANDOFF_REQUEST_TYPE => {
                self.request_marks.push(pos);
                if MessageDetails::read(details).is_some_and(|d| d.idle) {
                    self.idle_request_marks.push(pos);
                }
                Observed::Other
            }
            t if t == RESET_FAILED_TYPE => {
                // Every field is optional: a notice that says nothing is Relay's own, not retried.
                let notice = ResetFailedDetails::read(details).unwrap_or_default();
                if notice.retry {
                    self.current.reset_failed_at = Some(pos);
                }
                if notice.owned() {
                    self.current.owned_failures_at.push(pos);
                    // The same rule as `Engine::report_failure`: the third failure of Relay's own
                    // reset in a window, or a persistent one, gives up.
                    let persistent = notice.persistent();
                    if self.current.gave_up_at.is_none()
                        && (persistent
                            || self.current.owned_failures_at.len()
                                >= super::MAX_OWNED_RESET_FAILURES)
                    {
                        self.current.gave_up_at = Some(pos);
                    }
                }
                Observed::Other
            }
            t if t == REMINDER_TYPE => {
                // A reminder written for an earlier window (queued just before a reset) does not
                // stand for this window's.
                let for_window = ReminderDetails::read(details).and_then(|d| d.window_id);
                if for_window.is_none_or(|w| w == self.history.current_window_id()) {
                    self.current.reminder_at = Some(pos);
                    Observed::Reminder
                } else {
                    Observed::Other
                }
            }
            _ => Observed::Other,
        }
    }

    /// One of Relay's custom entries (any other is passed over).
    fn push_custom(&mut self, pos: usize, id: &str, custom_type: &str, data: &Value) {
        match custom_type {
            t if t == NOTE_CUSTOM_TYPE => {
                match NoteOp::from_data(data)
                    .map_err(|e| e.to_string())
                    .and_then(|op| {
                        self.notes.apply(&op).map_err(|e| e.to_string())?;
                        Ok(op)
                    }) {
                    Ok(op) => self.note_ops.push((pos, op)),
                    Err(message) => self.skipped_notes.push(format!("entry {id}: {message}")),
                }
            }
            t if t == HANDOFF_TYPE => {
                if let Some(record) = HandoffRecord::read(data) {
                    self.written_handoff =
                        Some((pos, record.path, record.fingerprint, record.launch_prompt));
                    self.written_jobs = record.jobs;
                    self.written_workspace = record.workspace.map(Box::new);
                }
            }
            t if t == CLEARING_TYPE => {
                // Every field is optional: a record that says nothing freed nothing.
                let record = ClearingRecord::read(data).unwrap_or_default();
                self.clearings.push(clearable::ClearingMark {
                    pos,
                    window_id: record.window_id,
                    freed: record.tokens_freed,
                    stubs: record.stubs,
                });
            }
            t if t == STALE_CHECK_TYPE => {
                if let Some(check) =
                    super::stale::window_check(data, self.history.current_window_id())
                {
                    self.current.stale_check = Some(check.at(pos));
                }
            }
            t if t == WATCH_CHECK_TYPE => {
                if let Some(check) =
                    super::watch::window_check(data, self.history.current_window_id())
                {
                    self.current.watch_check = Some((pos, check.0, check.1));
                }
            }
            // Only a record of this window disarms its fallback.
            t if t == FALLBACK_DISARMED_TYPE
                && FallbackDisarmedRecord::read(data)
                    .is_some_and(|r| r.window_id == self.history.current_window_id()) =>
            {
                self.current.disarmed_at = Some(pos);
            }
            t if t == NATIVE_FALLBACK_TYPE => {
                // A record written for another window (the window changed before it was fed)
                // does not stand for this one.
                let record = NativeFallbackRecord::read(data)
                    .filter(|r| r.window_id == self.history.current_window_id());
                if let Some(r) = record {
                    if r.spent {
                        self.current.native_spent_at.get_or_insert(pos);
                    } else {
                        self.current.native_failed_at.get_or_insert(pos);
                    }
                }
            }
            t if t == PINS_TYPE => self.push_pins(pos, data),
            t if t == RESUME_CHECK_TYPE => {
                if let Some(check) =
                    super::resume::window_check(data, self.history.current_window_id())
                {
                    self.current.resume_check = Some((pos, check.0, check.1));
                }
            }
            _ => {}
        }
    }

    /// The current window's tool results, oldest first, for a clearing
    /// ([`crate::clearing::decide`]). O(the window's entries).
    pub(super) fn window_tool_results(&self) -> Vec<crate::clearing::ToolResultView<'_>> {
        let from = self
            .usage_marks
            .partition_point(|m| m.pos < self.current.start);
        let marks = self.usage_marks.get(from..).unwrap_or_default();
        let mut calls: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
        marks
            .iter()
            .filter_map(|m| match &m.mark {
                Mark::Message {
                    current,
                    edited,
                    editable: Editable::Content,
                    system: None,
                    call,
                    ..
                } => {
                    let (tool, chars) = self.history.tool_result_at(m.pos)?;
                    let call = call.as_deref();
                    let nth = call.map_or(0, |c| {
                        let seen = calls.entry(c).or_insert(0);
                        *seen += 1;
                        *seen - 1
                    });
                    Some(crate::clearing::ToolResultView {
                        entry_id: self.history.entry_id_at(m.pos),
                        tool,
                        chars,
                        tokens: *current,
                        edited: *edited,
                        call,
                        nth,
                    })
                }
                _ => None,
            })
            .collect()
    }
}
