//! Feeding the engine's mirror: a branch replayed apart from the engine (`LoadedBranch`, on a
//! worker) and installed or completed, a full resync, `append` (only entries that descend from
//! the tip) and a navigation's truncation, each observed by the engine.

use super::*;

/// A branch replayed apart from any engine, e.g. on a worker thread while the engine keeps
/// answering: [`Engine::install`] then gives exactly the state [`Engine::resync`] gives for the
/// same entries. Replaying touches nothing but the mirror, so building it elsewhere changes
/// nothing about the result.
pub struct LoadedBranch {
    mirror: Mirror,
}

impl LoadedBranch {
    /// An empty branch of session `session_id`; feed it root first with [`LoadedBranch::push`].
    pub fn new(session_id: &str) -> Self {
        let mut mirror = Mirror::new(session_id);
        mirror.replaying = true;
        LoadedBranch { mirror }
    }

    /// The branch of session `session_id` made of `entries`, root first.
    pub fn of(session_id: &str, entries: &[Entry]) -> Self {
        let mut branch = LoadedBranch::new(session_id);
        for entry in entries {
            branch.push(entry);
        }
        branch
    }

    /// The next entry of the branch.
    pub fn push(&mut self, entry: &Entry) {
        let _ = self.mirror.push(entry);
    }

    /// The next entry of the branch, whose line is at `at` in the file given to
    /// [`LoadedBranch::read_texts_from`]: the history keeps where its text is, not the text.
    pub fn push_at(&mut self, entry: &Entry, at: crate::entry::LineAt) {
        let _ = self.mirror.push_at(entry, Some(at));
    }

    /// The session file this branch is read from, to read item texts back from (give it before
    /// the first [`LoadedBranch::push_at`]).
    pub fn read_texts_from(&mut self, lines: std::sync::Arc<dyn crate::history::LineSource>) {
        self.mirror.history.read_texts_from(lines);
    }

    /// Marks a branch whose earlier windows were fed skimmed (messages without their texts, the
    /// current window in full): once installed, every hook sees the branch's state, and
    /// [`Engine::history_complete`] is false until [`Engine::complete`] swaps in the whole one.
    pub fn skimmed(&mut self) {
        self.mirror.skimmed = true;
    }

    /// Drop every entry after `id` (all when `None`), as [`Engine::truncate_after`] does.
    pub fn truncate_after(&mut self, id: Option<&str>) {
        match id {
            None => {
                let sid = self.mirror.history.session_id().to_string();
                let skimmed = self.mirror.skimmed;
                self.mirror = Mirror::new(&sid);
                self.mirror.replaying = true;
                self.mirror.skimmed = skimmed;
            }
            Some(id) => {
                let _ = self.mirror.truncate_after(id);
            }
        }
    }

    /// The id of the newest entry pushed.
    pub fn tip(&self) -> Option<&str> {
        self.mirror.history.tip()
    }

    /// Whether every window's texts are in (not [`LoadedBranch::skimmed`]).
    pub fn is_complete(&self) -> bool {
        !self.mirror.skimmed
    }

    /// The session this branch belongs to.
    pub fn session_id(&self) -> &str {
        self.mirror.history.session_id()
    }
}

/// An engine whose mirror is `branch` (what a load installs; the same state a resync of its
/// entries gives), for tools and tests that read a session without a host.
impl From<LoadedBranch> for Engine {
    fn from(branch: LoadedBranch) -> Self {
        let mut engine = Engine::new();
        engine.install(branch);
        engine
    }
}

/// Feeding the mirror: the engine's inputs that keep it equal to Pi's branch.
impl Engine {
    /// Replace the mirror with a branch replayed elsewhere ([`LoadedBranch`]); the same as
    /// `begin_resync`, `push_replayed` for each of its entries, then `end_resync`.
    pub(crate) fn install(&mut self, loaded: LoadedBranch) {
        let session_id = loaded.mirror.history.session_id().to_string();
        self.begin_resync(&session_id);
        self.mirror = loaded.mirror;
        self.end_resync();
    }

    /// Whether the history holds every window's texts: false between installing a skimmed
    /// branch ([`LoadedBranch::skimmed`]) and [`Engine::complete`].
    pub(crate) fn history_complete(&self) -> bool {
        !self.mirror.skimmed
    }

    /// Swap the whole branch, read apart from the engine, for the skimmed one installed before:
    /// `loaded` must end where the mirror ends now (the caller replays on it what the engine was
    /// given since). Only the mirror changes: the engine's own state (outstanding resets, the
    /// stored handoff, the scheduler) stays, as it was already the branch's. False, with nothing
    /// changed, when the two disagree on the branch (its entries, windows, notes, turns or
    /// commits) or the mirror is not skimmed.
    pub(crate) fn complete(&mut self, loaded: LoadedBranch) -> bool {
        let (old, mut new) = (&mut self.mirror, loaded.mirror);
        let same = old.skimmed
            && !new.skimmed
            && old.history.tip() == new.history.tip()
            && old.history.entry_count() == new.history.entry_count()
            && old.history.window_ids() == new.history.window_ids()
            && old.earlier.len() == new.earlier.len()
            && old.note_ops.len() == new.note_ops.len()
            && old.turn_marks == new.turn_marks
            && old.commit_marks == new.commit_marks
            && old.progress_marks == new.progress_marks
            && old.current.user_at == new.current.user_at
            && old.current.first_usage() == new.current.first_usage();
        if !same {
            return false;
        }
        // What the skimmed mirror already reported is not reported again.
        new.skipped_notes = std::mem::take(&mut old.skipped_notes);
        new.unimported = std::mem::take(&mut old.unimported);
        new.replaying = false;
        self.mirror = new;
        true
    }

    /// Replace the mirror with a whole branch, root first.
    pub(crate) fn resync(&mut self, session_id: &str, entries: &[Entry]) {
        self.begin_resync(session_id);
        for entry in entries {
            self.push_replayed(entry);
        }
        self.end_resync();
    }

    /// Streaming form of [`Engine::resync`]: `begin_resync`, then `push_replayed` for each entry
    /// of the branch (root first), then `end_resync` gives exactly the state `resync` gives for
    /// the same entries, without holding the whole branch in memory at once.
    pub(crate) fn begin_resync(&mut self, session_id: &str) {
        self.mirror = Mirror::new(session_id);
        self.mirror.replaying = true;
        self.budget.handoff_ready = None;
        self.budget.stored_handoff = None;
        self.budget.forced = None;
    }

    /// The next entry of a branch being replayed after [`Engine::begin_resync`].
    pub(crate) fn push_replayed(&mut self, entry: &Entry) {
        self.push(entry);
    }

    /// Ends a replay started by [`Engine::begin_resync`].
    pub(crate) fn end_resync(&mut self) {
        self.mirror.replaying = false;
        // Attempt ids recorded on the branch are history: new attempts must never match them.
        self.scheduler
            .set_next_attempt_floor(self.mirror.max_attempt_seen.saturating_add(1));
        // The policy starts from what the branch holds: floor, turn clock, commits, loop guard.
        self.budget.policy = self.mirror.policy_state();
        self.outstanding.boot = false;
        self.outstanding.reminder = None;
    }

    /// Append entries that follow the current tip on the branch: the first one's parent is the
    /// tip (the root's `None` when the mirror is empty) and each later one's parent the one before
    /// it. Anything else (a walk that went wrong, entries out of order, a branch Pi left) would
    /// mirror a branch Pi does not have: nothing is appended and the answer says so; the host then
    /// reloads the whole branch ([`Input::Resync`](super::door::Input), asked for by the output's
    /// `needs_branch`).
    pub(crate) fn append(&mut self, entries: &[Entry]) -> Appended {
        let mut parent = self.tip().map(str::to_string);
        for entry in entries {
            if entry.parent_id != parent {
                return Appended::NotDescending {
                    entry: entry.id.clone(),
                    tip: parent,
                };
            }
            parent = Some(entry.id.clone());
        }
        for entry in entries {
            self.push(entry);
        }
        Appended::Mirrored
    }

    /// Drop every entry after `id` (all entries when `id` is None), as after a tree navigation.
    pub(crate) fn truncate_after(&mut self, id: Option<&str>) {
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
                            self.outstanding.hook_reset = None;
                            self.scheduler
                                .handle(SchedInput::ResetApplied { attempt: a });
                        }
                    }
                    // Any new window (Relay's or Pi's own compaction) starts the budget afresh.
                    let fx = self.policy_step(PolicyInput::ResetApplied);
                    self.budget.pending_fx.extend(fx);
                    self.budget.handoff_ready = None;
                    self.budget.stored_handoff = None;
                    self.budget.forced = None;
                    self.budget.relaunch_failed = None;
                }
                self.outstanding.reminder = None;
            }
            Observed::Boot => self.outstanding.boot = false,
            Observed::Reminder => self.outstanding.reminder = None,
            Observed::Other => {}
        }
    }
}

/// What [`Engine::append`] did with new entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Appended {
    /// They continue the tip and are mirrored.
    Mirrored,
    /// `entry` does not follow the one before it (`tip`, the mirror's tip for the first entry;
    /// `None`: the root): nothing was mirrored; the whole branch must be reloaded.
    NotDescending { entry: String, tip: Option<String> },
}

impl Appended {
    /// The warning for entries that do not descend from the tip.
    pub(crate) fn warning(&self) -> Option<String> {
        match self {
            Appended::Mirrored => None,
            Appended::NotDescending { entry, tip } => Some(format!(
                "relay: entry {entry} does not follow the mirror's tip ({}); the session is reloaded from Pi",
                tip.as_deref().unwrap_or("the root")
            )),
        }
    }
}
