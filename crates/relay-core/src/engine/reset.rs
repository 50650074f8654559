//! Reset planning: turning the scheduler's decisions into what the adapter installs.
//!
//! **Contract.**
//! - [`Engine::apply_sched`] is the only place a [`SchedOutput`] becomes a reply: a reset plan, a
//!   cancel of Pi's compaction, or the borrowed turn's note-taking steer. A reset plan is recorded
//!   as outstanding until the mirror sees its compaction (or the settle point passes without it).
//! - A reset plan is complete data: a marker entry, a compaction whose summary is the next
//!   window's boot block (window ids, notes index, protocol; the handoff or forced-reset note; for
//!   an automatic or manual reset the ended window's recent user input, bounded; the `/compact`
//!   instructions; the dropped user request when the scheduler asks to restate it; the closing
//!   window's last actions in `<in_progress>` unless `relay.inProgress` is off), and at most
//!   one continuation.
//! - Window ids are `pcw:<session>:<8 hex>`, unique on the branch, derived from the session, the
//!   time and the branch length: no random source.

use super::wire::{
    Continuation, DeliverAs, Effect, HookReply, HookResult, Moment, ResetPlan, CONTINUE_TYPE,
    STEER_TYPE,
};
use super::Engine;
use crate::records::{CustomRecord, MessageDetails, ResetMarkerRecord, WindowRecord};
use crate::render::{
    render_boot_block, render_budget_steer, render_continuation, render_notes_steer,
    render_overflow_notice, BootBlock, ContinuationReason, NoteIndexEntry, USER_INPUT_MESSAGES,
};
use crate::scheduler::{AttemptId, ResetSource, SchedOutput};

/// What a boot block carries besides the window ids and the notes index.
#[derive(Default)]
pub(super) struct BootExtras<'a> {
    /// The handoff markdown.
    pub(super) handoff: Option<&'a str>,
    /// The user request the reset dropped (overflow Pi retries).
    pub(super) dropped: Option<&'a str>,
    /// The model had worked on `dropped` in the ended window (a tool ran since it arrived).
    pub(super) dropped_in_progress: bool,
    /// Why a forced (mechanical) reset happened, without a handoff.
    pub(super) reset_notice: Option<&'a str>,
    /// The user's recent messages, oldest first (the newest is marked as the latest request
    /// unless `dropped` is set).
    pub(super) earlier: Vec<&'a str>,
    /// The user's `/compact` instructions.
    pub(super) compact_instructions: Option<&'a str>,
    /// The closing window's `<in_progress>` section, rendered.
    pub(super) in_progress: Option<&'a str>,
}

impl Engine {
    /// Carry out the scheduler's outputs into `reply`.
    pub(super) fn apply_sched(
        &mut self,
        outs: Vec<SchedOutput>,
        moment: &Moment,
        reply: &mut HookReply,
    ) {
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
                    self.outstanding.reset = Some(attempt);
                    reply.result = Some(HookResult::Reset { plan });
                }
                SchedOutput::CancelCompaction => reply.result = Some(HookResult::Cancel),
                SchedOutput::Compact { attempt } => {
                    self.outstanding.input_compact = Some(attempt);
                    reply.result = Some(HookResult::Compact { attempt });
                }
                SchedOutput::SteerNotes => reply.effects.push(Effect::Send {
                    custom_type: STEER_TYPE.into(),
                    content: self.steer_text(),
                    display: true,
                    trigger_turn: true,
                    deliver_as: Some(DeliverAs::Steer),
                    details: Some(MessageDetails::current()),
                }),
                SchedOutput::PassThrough => {}
            }
        }
    }

    /// The borrowed turn's steer: the notes steer, unless the enforced budget policy blocks the
    /// notes tools now; then it asks only for what the policy allows (one answer, not a steer
    /// the next tool call contradicts).
    fn steer_text(&self) -> String {
        let access = (self.policy_mode() == crate::policy::Mode::Enforce)
            .then(|| crate::policy::notes_access(&self.budget.policy))
            .flatten();
        match access {
            Some(steer) => render_budget_steer(steer),
            None => render_notes_steer(),
        }
    }

    /// A window id `pcw:<session>:<8 hex>` unique on the branch, derived without a random source.
    fn mint_window_id(&self, now_ms: i64) -> String {
        let history = &self.mirror.history;
        let session = history.session_id();
        let existing = history.window_ids();
        let mut seed =
            fnv1a(session.as_bytes()) ^ (now_ms as u64) ^ ((history.entry_count() as u64) << 32);
        loop {
            seed = splitmix64(seed);
            let id = format!("pcw:{session}:{:08x}", seed as u32);
            if !existing.iter().any(|e| *e == id) {
                return id;
            }
        }
    }

    /// The boot block of the current window (`current == None`, the root window's visible one) or
    /// of the window a reset opens.
    pub(super) fn boot_text(
        &self,
        current: Option<&str>,
        previous: Option<&str>,
        extras: BootExtras<'_>,
    ) -> String {
        let history = &self.mirror.history;
        let notes = &self.mirror.notes;
        let ids = history.window_ids();
        let first = ids.first().copied().unwrap_or("");
        let current = current.unwrap_or_else(|| history.current_window_id());
        let recent = notes.recent(3);
        let pins = self.pins().in_force();
        let block = BootBlock {
            agent_name: &self.settings.config.agent_name,
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
            note_count: notes.len(),
            tz_offset_minutes: self.tz_offset_minutes,
            handoff: extras.handoff,
            dropped_request: extras.dropped,
            dropped_request_in_progress: extras.dropped_in_progress,
            reset_notice: extras.reset_notice,
            earlier_user_input: extras.earlier,
            compact_instructions: extras.compact_instructions,
            pins: &pins,
            in_progress: extras.in_progress,
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
        let previous = self.mirror.history.current_window_id().to_string();
        let CarriedInput {
            earlier,
            dropped,
            dropped_in_progress,
        } = self.carried_input(source, restate);
        // Only set while a `/compact` with instructions is answered, whatever source it gets (a
        // ready handoff makes it a handoff reset): the instructions are never dropped silently.
        let compact_instructions = self.compact_instructions.as_deref();
        // A written handoff travels into the next window whatever triggered the reset; a forced
        // (mechanical) reset carries its explanation as a notice instead, never as a handoff.
        // The overflow backstop also carries a stored handoff that did not commit (a cap or
        // loop-guard fallback ignored it) while nothing invalidated it; without one, its
        // mechanical summary is the earlier user input plus the overflow notice.
        // So does the idle-input recovery's reset, which exists only for its stored handoff.
        let stored = match source {
            ResetSource::Overflow | ResetSource::Idle => self.budget.stored_handoff.as_ref(),
            _ => None,
        };
        let ready = self.budget.handoff_ready.as_ref().or(stored);
        let forced = self.budget.forced.as_ref();
        let handoff = ready.map(|r| r.markdown.as_str());
        let overflow_notice = render_overflow_notice();
        let notice = match (ready, forced) {
            (None, Some(forced)) if source == ResetSource::Forced => Some(forced.note.as_str()),
            (None, _) if source == ResetSource::Overflow => Some(overflow_notice.as_str()),
            _ => None,
        };
        let continuation = match (forced, source) {
            (Some(forced), ResetSource::Forced) => continuation && forced.continue_run,
            _ => continuation,
        };
        // The closing window's last actions, read from the branch once, as the window closes: the
        // summary is the next window's boot block, the same bytes in every request of it.
        let in_progress = self
            .settings
            .config
            .in_progress
            .then(|| self.mirror.in_progress(moment.now_ms))
            .flatten();
        let summary = self.boot_text(
            Some(&window_id),
            Some(&previous),
            BootExtras {
                handoff,
                dropped: dropped.as_deref(),
                dropped_in_progress,
                reset_notice: notice,
                earlier: earlier.iter().map(|t| t.as_ref()).collect(),
                compact_instructions,
                in_progress: in_progress.as_deref(),
            },
        );
        let source_name = source.as_str();
        // Seed 004's marker: `kind` says what opened the window ("handoff" only when the agent's
        // written handoff travels into it; a mechanical forced reset is a "reset"), `commit` the
        // budget commit it stands for (see `crate::entry::WindowMarker`).
        let commit = self.budget.policy.committing.map(|k| k.as_str());
        let kind = if ready.is_some() { "handoff" } else { "reset" };
        let reason = continuation_reason(source, handoff.is_some());
        ResetPlan {
            marker: ResetMarkerRecord::new(&window_id, attempt, source_name).marker(),
            summary,
            details: Box::new(WindowRecord::new(
                &window_id,
                &previous,
                attempt,
                source_name,
                kind,
                commit,
                ready.map(|r| r.path.as_str()),
            )),
            continuation: continuation.then(|| Continuation {
                custom_type: CONTINUE_TYPE.into(),
                content: render_continuation(reason),
                details: MessageDetails::current(),
            }),
        }
    }

    /// The user's recent input a reset's boot block repeats (oldest first, bounded), and the
    /// request an overflow dropped, restated as pending instead.
    fn carried_input(&self, source: ResetSource, restate: bool) -> CarriedInput<'_> {
        // An automatic or manual reset repeats the user's recent input (the ended window's, or
        // when it received none, that of the newest window before it that did), so that the
        // user's request and constraints survive even when the model wrote no notes; the model's
        // own new_context and a committed handoff (which carries user_constraints) do not. The
        // request an overflow dropped is the ended window's newest one: it is restated as pending
        // instead (a window without user input dropped no request of the user's).
        let carries_input = matches!(
            source,
            ResetSource::Fallback
                | ResetSource::Threshold
                | ResetSource::Overflow
                | ResetSource::Forced
                | ResetSource::Idle
                | ResetSource::Manual
        );
        let mut earlier = if carries_input || restate {
            self.mirror.recent_user_input(USER_INPUT_MESSAGES + 1)
        } else {
            Vec::new()
        };
        let own_input = !self.mirror.current_window().user_at.is_empty();
        let dropped = if restate && own_input {
            earlier.pop()
        } else {
            None
        };
        // An overflow in the middle of a run: the model had already worked on the request.
        let dropped_in_progress = dropped.is_some() && self.mirror.worked_since_latest_request();
        if !carries_input {
            earlier.clear();
        }
        if earlier.len() > USER_INPUT_MESSAGES {
            earlier.remove(0);
        }
        CarriedInput {
            earlier,
            dropped,
            dropped_in_progress,
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

/// What a reset carries of the user's input ([`Engine::carried_input`]).
struct CarriedInput<'a> {
    /// The user's recent messages, oldest first, at most [`USER_INPUT_MESSAGES`].
    earlier: Vec<std::borrow::Cow<'a, str>>,
    /// The request an overflow dropped, restated as pending.
    dropped: Option<std::borrow::Cow<'a, str>>,
    /// The model had already worked on `dropped` (an overflow in the middle of a run).
    dropped_in_progress: bool,
}

/// Why the new window's run continues: after an automatic reset, a mechanical forced reset
/// (`handoff` is false: no handoff travels), a handoff, or the model's own `new_context`.
fn continuation_reason(source: ResetSource, handoff: bool) -> ContinuationReason {
    match source {
        ResetSource::Fallback | ResetSource::Threshold | ResetSource::Overflow => {
            ContinuationReason::Fallback
        }
        ResetSource::Forced if !handoff => ContinuationReason::Mechanical,
        ResetSource::Handoff | ResetSource::Forced | ResetSource::Idle => {
            ContinuationReason::Handoff
        }
        _ => ContinuationReason::NewContext,
    }
}
