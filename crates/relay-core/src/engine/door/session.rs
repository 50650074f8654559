//! The session's branch as an operation of the engine: loading it from the session file (in
//! passes, on the pool), reading it ahead of Pi's `session_start`, feeding what Pi appended, a
//! full resync from Pi's branch, and what a navigation drops.
//!
//! A file of [`BACKGROUND_LOAD_BYTES`] or more (its size is a fact the host reports) loads in two
//! passes: its current window in full, the earlier windows skimmed ([`LoadPass::Current`]), then,
//! when something reads the earlier windows or the first run settles, the whole branch
//! ([`LoadPass::Rest`]). What the engine is fed while the whole branch loads is journalled and
//! replayed on it before it is swapped in. A smaller file, or a reload after a failure, is one
//! pass ([`LoadPass::All`]) the host runs before its call returns ([`Output::run_now`]).

use super::*;
use crate::engine::wire::Feed;
use crate::entry::{parse_entry, Entry, EntryKind};

/// From this size on, a session file loads on the pool in two passes.
pub const BACKGROUND_LOAD_BYTES: u64 = 8 * 1024 * 1024;

/// What the engine refuses while it waits for the whole branch.
pub const WAITING: &str =
    "relay: the engine restarted after an internal error and waits for a full resync from the session";

/// One change of the mirror, journalled while the whole branch loads.
#[derive(Debug)]
enum Fed {
    Append(Vec<Entry>),
    Truncate(Option<String>),
}

/// What a load job that runs now is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// The session's first load: what it reads replaces the mirror.
    Start,
    /// The whole branch of a skimmed mirror: swapped in once the journal is replayed on it.
    Complete,
}

#[derive(Debug)]
struct Running {
    id: u64,
    purpose: Purpose,
}

/// A read ahead of Pi's `session_start` ([`Input::Prefetch`]).
#[derive(Debug)]
struct ReadAhead {
    id: u64,
    file: String,
    done: bool,
    branch: Option<super::super::LoadedBranch>,
}

impl std::fmt::Debug for super::super::LoadedBranch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LoadedBranch({:?})", self.tip())
    }
}

/// The engine's session-load state.
#[derive(Debug, Default)]
pub(in crate::engine) struct Loads {
    running: Option<Running>,
    /// The session and file of an installed skimmed branch, for the load that completes it.
    skimmed_source: Option<(String, String)>,
    journal: Option<Vec<Fed>>,
    read_ahead: Option<ReadAhead>,
    /// The engine waits for the whole branch (a feed that did not follow, a failed load, a
    /// restart after a panic): hooks, tools and feeds are refused until it comes.
    pub(in crate::engine) needs_branch: bool,
    /// Problems found in entries Pi handed over, reported with the next output.
    pub(in crate::engine) warnings: Vec<String>,
}

fn found(results: &[JobResult], id: u64) -> bool {
    results.iter().any(|r| {
        r.id == id
            && matches!(&r.outcome, JobOutcome::Done { value, .. } if value == &Value::Bool(true))
    })
}

fn take_loaded(loaded: &mut Loaded, id: u64) -> Option<super::super::LoadedBranch> {
    let at = loaded.0.iter().position(|(job, _)| *job == id)?;
    Some(loaded.0.swap_remove(at).1)
}

impl Engine {
    fn load_job(
        &mut self,
        file: &str,
        session_id: Option<&str>,
        leaf: Option<&str>,
        pass: LoadPass,
    ) -> Job {
        Job {
            id: self.ops.id(),
            deadline_ms: NO_DEADLINE_MS,
            work: Work::Load {
                file: file.to_string(),
                session_id: session_id.map(str::to_string),
                leaf: leaf.map(str::to_string),
                pass,
            },
        }
    }

    /// Forget every load in flight (a resync, a newer load or the session's end replaces them):
    /// their jobs are stopped.
    pub(super) fn drop_loads(&mut self, out: &mut Output) {
        if let Some(running) = self.loads.running.take() {
            out.cancel.push(running.id);
        }
        self.loads.skimmed_source = None;
        self.loads.journal = None;
    }

    /// Stop and forget the read ahead.
    pub(super) fn drop_read_ahead(&mut self, out: &mut Output) {
        if let Some(read_ahead) = self.loads.read_ahead.take() {
            if !read_ahead.done {
                out.cancel.push(read_ahead.id);
            }
        }
    }

    /// A session starts (or must be reloaded in full): see the module documentation. No file,
    /// or no leaf, asks the host for the branch.
    pub(super) fn open(
        &mut self,
        session_id: &str,
        file: Option<&str>,
        size: Option<u64>,
        leaf: Option<&str>,
        background: bool,
        read_ahead: Option<&str>,
    ) -> Output {
        let mut out = Output::default();
        self.ops.clear();
        self.drop_loads(&mut out);
        let (Some(file), Some(leaf)) = (file, leaf) else {
            self.drop_read_ahead(&mut out);
            self.loads.needs_branch = true;
            return out;
        };
        if let Some(branch) = self.take_read_ahead(session_id, file, leaf, read_ahead, &mut out) {
            let skimmed = !branch.is_complete();
            self.install(branch);
            self.loads.needs_branch = false;
            if skimmed {
                self.loads.skimmed_source = Some((session_id.to_string(), file.to_string()));
            }
            return out;
        }
        let large = size.is_some_and(|s| s >= BACKGROUND_LOAD_BYTES);
        if background && large {
            let job = self.load_job(file, Some(session_id), Some(leaf), LoadPass::Current);
            self.loads.skimmed_source = Some((session_id.to_string(), file.to_string()));
            self.loads.running = Some(Running {
                id: job.id,
                purpose: Purpose::Start,
            });
            out.op = Some(job.id);
            out.jobs.push(job);
        } else {
            let job = self.load_job(file, Some(session_id), Some(leaf), LoadPass::All);
            self.loads.running = Some(Running {
                id: job.id,
                purpose: Purpose::Start,
            });
            out.run_now = Some(job);
        }
        out
    }

    /// Read a large file ahead of `session_start` ([`Input::Prefetch`]).
    pub(super) fn prefetch(&mut self, file: &str, size: u64) -> Output {
        let mut out = Output::default();
        self.drop_read_ahead(&mut out);
        if size < BACKGROUND_LOAD_BYTES {
            return out;
        }
        let job = self.load_job(file, None, None, LoadPass::Current);
        self.loads.read_ahead = Some(ReadAhead {
            id: job.id,
            file: file.to_string(),
            done: false,
            branch: None,
        });
        out.op = Some(job.id);
        out.jobs.push(job);
        out
    }

    /// The branch read ahead, when it is the one `open` asks for: the same file and session, its
    /// job back, and its tip Pi's leaf or `read_ahead` (an ancestor of the leaf, the host says).
    /// Taken either way (a read ahead serves once).
    fn take_read_ahead(
        &mut self,
        session_id: &str,
        file: &str,
        leaf: &str,
        read_ahead: Option<&str>,
        out: &mut Output,
    ) -> Option<super::super::LoadedBranch> {
        let usable = self
            .loads
            .read_ahead
            .as_ref()
            .is_some_and(|r| r.done && r.file == file);
        let branch = if usable {
            self.loads.read_ahead.as_mut().and_then(|r| r.branch.take())
        } else {
            None
        };
        self.drop_read_ahead(out);
        branch.filter(|b| {
            b.session_id() == session_id
                && (b.tip() == Some(leaf) || (read_ahead.is_some() && b.tip() == read_ahead))
        })
    }

    /// The whole history's load, when the mirror is skimmed and it has not started.
    pub(super) fn history_load(&mut self) -> Option<Job> {
        if self.history_complete() || self.loads.running.is_some() || self.loads.needs_branch {
            return None;
        }
        let (session_id, file) = self.loads.skimmed_source.clone()?;
        let tip = self.tip()?.to_string();
        let job = self.load_job(&file, Some(&session_id), Some(&tip), LoadPass::Rest);
        self.loads.journal = Some(Vec::new());
        self.loads.running = Some(Running {
            id: job.id,
            purpose: Purpose::Complete,
        });
        Some(job)
    }

    /// Whether `op` is a load's (the session's or the read ahead's) rather than an operation's.
    pub(super) fn is_load(&self, op: u64) -> bool {
        self.loads.running.as_ref().is_some_and(|r| r.id == op)
            || self.loads.read_ahead.as_ref().is_some_and(|r| r.id == op)
    }

    /// A load job came back: install what it read, swap the whole history in, or keep the read
    /// ahead for `open`. A load that failed or disagrees asks for the whole branch.
    pub(super) fn load_done(&mut self, op: u64, results: &[JobResult], loaded: Loaded) -> Output {
        let mut loaded = loaded;
        if let Some(read_ahead) = self.loads.read_ahead.as_mut().filter(|r| r.id == op) {
            read_ahead.done = true;
            let ok = found(results, op);
            read_ahead.branch = take_loaded(&mut loaded, op).filter(|_| ok);
            let tip = read_ahead
                .branch
                .as_ref()
                .and_then(|b| b.tip().map(str::to_string));
            let mut out = Output::default();
            if tip.is_none() {
                self.drop_read_ahead(&mut out);
            }
            out.value = Some(Answer::ReadAhead { tip });
            return out;
        }
        let Some(running) = self.loads.running.take() else {
            return Output::default();
        };
        // A load that failed (a panic on its worker, an unreadable file) is told once; the
        // session is then loaded again in full.
        let mut out = Output::default();
        for result in results {
            if let JobOutcome::Failed { error, .. } = &result.outcome {
                let told = self.failed("loading the session", error);
                out.effects.extend(told.effects);
            }
        }
        let branch = take_loaded(&mut loaded, op).filter(|_| found(results, op));
        match running.purpose {
            Purpose::Start => match branch {
                Some(branch) => {
                    self.install(branch);
                    self.loads.needs_branch = false;
                    if self.history_complete() {
                        self.loads.skimmed_source = None;
                    }
                }
                None => {
                    self.drop_loads(&mut out);
                    self.loads.needs_branch = true;
                }
            },
            Purpose::Complete => {
                let journal = self.loads.journal.take();
                let swapped = match (branch, journal) {
                    (Some(mut branch), Some(journal)) => {
                        self.loads.skimmed_source = None;
                        for fed in &journal {
                            match fed {
                                Fed::Append(entries) => entries.iter().for_each(|e| branch.push(e)),
                                Fed::Truncate(id) => branch.truncate_after(id.as_deref()),
                            }
                        }
                        self.complete(branch)
                    }
                    _ => false,
                };
                if !swapped && !self.history_complete() {
                    self.drop_loads(&mut out);
                    self.loads.needs_branch = true;
                }
            }
        }
        out
    }

    /// Replace the mirror with Pi's whole branch (`entries`, root first).
    pub(super) fn resync_from(&mut self, session_id: &str, entries: &[Value]) -> Output {
        let mut out = Output::default();
        let raws: Vec<String> = entries.iter().map(Value::to_string).collect();
        let entries = self.entries_of(raws.iter().map(String::as_str));
        self.ops.clear();
        self.resync(session_id, &entries);
        self.loads.needs_branch = false;
        self.drop_loads(&mut out);
        out
    }

    /// Apply a [`Feed`]: drop what Pi navigated away from, append what it added. Entries that do
    /// not continue the mirror's branch are not mirrored: the whole branch is asked for.
    pub(super) fn feed(&mut self, feed: Feed) -> Result<(), String> {
        if self.loads.needs_branch {
            return Err(WAITING.into());
        }
        if feed.truncate == Some(true) {
            self.truncate_after(feed.after.as_deref());
            if let Some(journal) = self.loads.journal.as_mut() {
                journal.push(Fed::Truncate(feed.after.clone()));
            }
        }
        let raws = feed.append.unwrap_or_default();
        if !raws.is_empty() {
            let entries = self.entries_of(raws.iter().map(|r| r.get()));
            if let Some(warning) = self.append(&entries).warning() {
                self.loads.needs_branch = true;
                return Err(warning);
            }
            if let Some(journal) = self.loads.journal.as_mut() {
                journal.push(Fed::Append(entries));
            }
        }
        Ok(())
    }

    /// Parse entries one by one. An entry that does not parse keeps its place on the branch as
    /// an unknown entry (with a warning) instead of failing the whole batch, so that one odd
    /// entry never stops the mirror (or every later hook) from working.
    fn entries_of<'a>(&mut self, raws: impl Iterator<Item = &'a str>) -> Vec<Entry> {
        /// The fields every entry needs to keep its place on the branch.
        #[derive(serde::Deserialize)]
        struct Skeleton {
            #[serde(rename = "type")]
            entry_type: Option<String>,
            id: Option<String>,
            #[serde(rename = "parentId")]
            parent_id: Option<String>,
            timestamp: Option<String>,
        }
        let mut entries = Vec::new();
        for (index, raw) in raws.enumerate() {
            match parse_entry(raw) {
                Ok(entry) => entries.push(entry),
                Err(error) => match serde_json::from_str::<Skeleton>(raw).ok() {
                    Some(Skeleton {
                        entry_type,
                        id: Some(id),
                        parent_id,
                        timestamp,
                    }) if !id.is_empty() => {
                        self.loads.warnings.push(format!(
                            "relay: entry {id} could not be read ({error}); it is kept without content"
                        ));
                        entries.push(Entry {
                            id,
                            parent_id,
                            timestamp: timestamp.unwrap_or_default(),
                            kind: EntryKind::Unknown {
                                entry_type: entry_type.unwrap_or_default(),
                            },
                        });
                    }
                    _ => self.loads.warnings.push(format!(
                        "relay: branch element {index} has no usable id and was skipped ({error})"
                    )),
                },
            }
        }
        entries
    }
}
