//! Loading a session into the binding's engine: at once from the file (small files, reloads), or
//! as `load` jobs on the libuv pool for a large one: the current window first (the earlier ones
//! skimmed), then, once something needs it or the first run settles, the whole history, swapped
//! in with the feeds journalled meanwhile (a one-shot `pi -p` never waits for it). The binding
//! keeps which load is in flight (`load_op`, `pending_load`, `pending_whole`, the cancel flag);
//! the job runner (`jobs.rs`) runs [`run_load`] and the engine decides nothing here but what a
//! loaded branch holds.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use relay_core::engine::{self, Job, JobOutcome, JobResult, Output, Work};
use relay_core::entry::{BranchSink, Entry, LineAt};
use relay_io::session::{Leaf, TailLoad};

use super::{Binding, Failure, Fed, LoadOp};
use crate::boundary;
use crate::jobs;

/// Session files at least this large are loaded in the background ([`Binding::begin_load`]):
/// below it a load takes a few milliseconds, less than handing it to a worker is worth.
pub const BACKGROUND_LOAD_BYTES: u64 = 8 * 1024 * 1024;
/// A session file to replay on a worker thread ([`run_load`]); the branch goes to `slot`.
pub struct LoadJob {
    /// `None`: the file's own (its header's), for a read ahead of Pi's `session_start`.
    session_id: Option<String>,
    path: PathBuf,
    /// `None`: the file's last entry, the leaf Pi opens a session at (a read ahead).
    leaf_id: Option<String>,
    slot: Arc<Mutex<Option<engine::LoadedBranch>>>,
    /// Read the current window first ([`relay_io::session::stream_session_tail`]): the earlier
    /// windows skimmed, to be completed by a whole load. A branch without a compaction is read
    /// whole at once.
    tail: bool,
    /// Set when nobody waits for this load any more (Pi shuts down, another session or a
    /// resync replaced it): the reader stops at its next entry and the load gives nothing.
    cancel: Arc<std::sync::atomic::AtomicBool>,
}
/// Read the session file of `job` and replay the branch ending at its leaf, apart from any engine
/// (blocking: the addon runs it on a libuv worker). `Ok(true)` when the file holds the leaf: the
/// branch then waits in the job's slot for [`Binding::finish_load`]. A panic is an error.
pub fn run_load(job: &LoadJob) -> Result<bool, Failure> {
    struct Sink<'a> {
        session_id: &'a str,
        branch: Option<engine::LoadedBranch>,
        cancel: &'a std::sync::atomic::AtomicBool,
        /// The file the whole load's history reads its texts back from (none for the first
        /// pass, whose current window is read whole and whose earlier windows are skimmed).
        lines: Option<Arc<dyn relay_core::history::LineSource>>,
    }
    impl BranchSink for Sink<'_> {
        fn wanted(&self) -> bool {
            !self.cancel.load(std::sync::atomic::Ordering::Relaxed)
        }
        fn begin(&mut self) {
            let mut branch = engine::LoadedBranch::new(self.session_id);
            if let Some(lines) = &self.lines {
                branch.read_texts_from(lines.clone());
            }
            self.branch = Some(branch);
        }
        fn entry(&mut self, entry: Entry) {
            self.entry_ref(&entry);
        }
        fn entry_ref(&mut self, entry: &Entry) {
            if let Some(branch) = self.branch.as_mut() {
                branch.push(entry);
            }
        }
        fn entry_at(&mut self, entry: &Entry, at: LineAt) {
            if let Some(branch) = self.branch.as_mut() {
                branch.push_at(entry, at);
            }
        }
    }
    let loaded = boundary::catch(|| {
        boundary::inject("loadSessionFileInBackground", &|| {
            job.path.display().to_string()
        });
        let session_id = match &job.session_id {
            Some(id) => id.clone(),
            None => relay_io::session::session_header_id(&job.path).ok()??,
        };
        let mut sink = Sink {
            session_id: &session_id,
            branch: None,
            cancel: &job.cancel,
            lines: None,
        };
        let mut leaf_id = job.leaf_id.clone();
        if job.tail {
            boundary::hold("TAIL");
            let leaf = match &leaf_id {
                Some(id) => Leaf::Id(id),
                None => Leaf::Last,
            };
            // A read ahead runs while Pi starts up on its own thread: its second thread takes
            // only the time Pi's leaves.
            let read = if job.leaf_id.is_none() {
                relay_io::session::stream_session_tail_beside(&job.path, leaf, &mut sink)
            } else {
                relay_io::session::stream_session_tail(&job.path, leaf, &mut sink)
            };
            match read {
                Ok(TailLoad::Tail) => {
                    return sink.branch.map(|mut branch| {
                        branch.skimmed();
                        branch
                    });
                }
                Ok(TailLoad::NoLeaf) | Err(_) => return None,
                Ok(TailLoad::NoTail { leaf }) => leaf_id = Some(leaf),
            }
        }
        // A whole load always has its leaf: the tip it completes, or the tail pass's.
        let leaf_id = leaf_id?;
        boundary::hold_unless("LOAD", &job.cancel);
        // The whole history keeps where each text is in the file, not the text (a file that
        // cannot be opened again is read whole into memory, as before).
        sink.lines = relay_io::session::SessionLines::open(&job.path)
            .ok()
            .map(|l| Arc::new(l) as Arc<dyn relay_core::history::LineSource>);
        let found = relay_io::session::stream_session_branch(&job.path, &leaf_id, &mut sink);
        match (found, sink.branch) {
            (Ok(true), Some(branch)) => Some(branch),
            _ => None,
        }
    })
    .map_err(|text| {
        Failure::Panic(format!(
            "relay: internal error in loadSessionFileInBackground: {text}"
        ))
    })?;
    let found = loaded.is_some();
    *lock_slot(&job.slot) = loaded;
    // What the read freed (its blocks and batches) stays in this worker's malloc arena otherwise:
    // 37 MiB of the first pass on the 256 MiB session. Trimmed here, on the worker, because it
    // takes 12-14 ms (it was in `finish_load`, on Pi's thread).
    release_free_memory();
    Ok(found)
}
/// A read of a session file ahead of Pi's `session_start` ([`Binding::prefetch`]): its job, the
/// file, and where the job leaves the branch it read (at the file's last entry).
pub struct Prefetch {
    pub(super) op: u64,
    path: PathBuf,
    slot: Arc<Mutex<Option<engine::LoadedBranch>>>,
    cancel: Arc<std::sync::atomic::AtomicBool>,
    /// The job came back (its branch, if any, is in `slot`).
    done: bool,
}

/// What a background load left in its slot (a worker that panicked holding the lock still left
/// its value, or none).
fn take_slot<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    lock_slot(slot).take()
}

/// A background load's slot, locked (a worker that panicked holding the lock still left its
/// value, or none).
fn lock_slot<T>(slot: &Mutex<Option<T>>) -> std::sync::MutexGuard<'_, Option<T>> {
    slot.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether `path` is a file large enough to load on the pool ([`BACKGROUND_LOAD_BYTES`]).
fn loads_in_background(path: &str) -> bool {
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.len() >= BACKGROUND_LOAD_BYTES)
        .unwrap_or(false)
}

/// The job that runs the load registered under `id` (no deadline: its size bounds it).
fn load_job(id: u64, whole: bool) -> Job {
    Job {
        id,
        deadline_ms: relay_core::engine::door::NO_DEADLINE_MS,
        work: Work::Load { whole },
    }
}
/// Return the pages malloc holds free to the system (glibc keeps the free pages of each thread's
/// arena; a dropped mirror built on a worker left 50-75 MiB resident on the 256 MiB session).
/// A no-op on other targets.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: malloc_trim takes no pointer and has no precondition; glibc locks each arena it trims.
    unsafe {
        libc::malloc_trim(0);
    }
}

impl Binding {
    /// Replace the mirror by reading the session file and taking the branch that ends at `leaf_id`.
    /// `Ok(false)` when the file does not contain that leaf (the caller then resyncs from Pi).
    pub fn load_session_file(
        &mut self,
        session_id: &str,
        path: &str,
        leaf_id: &str,
    ) -> Result<bool, Failure> {
        struct Replay<'a> {
            engine: &'a mut engine::Engine,
            session_id: &'a str,
            begun: bool,
        }
        impl BranchSink for Replay<'_> {
            fn begin(&mut self) {
                self.engine.begin_resync(self.session_id);
                self.begun = true;
            }
            fn entry(&mut self, entry: Entry) {
                self.engine.push_replayed(&entry);
            }
            fn entry_ref(&mut self, entry: &Entry) {
                self.engine.push_replayed(entry);
            }
        }
        self.guarded("loadSessionFile", &String::new, |b| {
            let mut replay = Replay {
                engine: &mut b.inner,
                session_id,
                begun: false,
            };
            let found =
                relay_io::session::stream_session_branch(Path::new(path), leaf_id, &mut replay);
            if replay.begun {
                replay.engine.end_resync();
            }
            b.drop_loads();
            let loaded = matches!(found, Ok(true));
            if loaded {
                b.needs_resync = false;
            }
            Ok(loaded)
        })
    }

    /// Start replacing the mirror from the session file without holding the caller: `None` when
    /// the file is small (below [`BACKGROUND_LOAD_BYTES`]) or cannot be read, and the caller loads
    /// it at once with [`Binding::load_session_file`]; else the job to run on a worker
    /// ([`run_load`]), whose branch [`Binding::finish_load`] installs. Until then the engine keeps
    /// its current mirror; the extension holds its hooks and tools until the load is done.
    pub fn begin_load(
        &mut self,
        session_id: &str,
        path: &str,
        leaf_id: &str,
    ) -> Result<Option<LoadJob>, Failure> {
        self.guarded("loadSessionFileInBackground", &String::new, |b| {
            if !loads_in_background(path) {
                return Ok(None);
            }
            b.drop_loads();
            let slot = Arc::new(Mutex::new(None));
            b.pending_load = Some(Arc::clone(&slot));
            b.skimmed_source = Some((session_id.to_string(), PathBuf::from(path)));
            let cancel = Arc::new(std::sync::atomic::AtomicBool::new(false));
            b.load_cancel = Some(Arc::clone(&cancel));
            Ok(Some(LoadJob {
                session_id: Some(session_id.to_string()),
                path: PathBuf::from(path),
                leaf_id: Some(leaf_id.to_string()),
                slot,
                tail: true,
                cancel,
            }))
        })
    }

    /// Install the branch the newest background load replayed (the state `loadSessionFile`
    /// gives). `false` when there is none: the load found no such leaf, failed, or was
    /// superseded by a resync or a newer load. A skimmed branch keeps its file for the whole
    /// load ([`Binding::begin_complete`]), which waits until something needs it.
    pub fn finish_load(&mut self) -> Result<bool, Failure> {
        self.guarded("finishLoad", &String::new, |b| {
            let Some(slot) = b.pending_load.take() else {
                return Ok(false);
            };
            let loaded = take_slot(&slot);
            let Some(loaded) = loaded else {
                b.skimmed_source = None;
                return Ok(false);
            };
            b.inner.install(loaded);
            b.needs_resync = false;
            if b.inner.history_complete() {
                b.skimmed_source = None;
            }
            Ok(true)
        })
    }

    /// The whole load that completes an installed skimmed branch (run it with [`run_load`] on a
    /// worker, then [`Binding::finish_complete`]); `None` when the history is complete, its load
    /// is under way, or a resync replaced the skimmed branch. It reads the branch up to the
    /// mirror's tip (Pi writes every entry of a resumed session to its file as it appends it);
    /// what the engine is given meanwhile is journalled and replayed on it.
    pub fn begin_complete(&mut self) -> Result<Option<LoadJob>, Failure> {
        self.guarded("beginCompleteLoad", &String::new, |b| {
            if b.inner.history_complete() || b.pending_whole.is_some() || b.needs_resync {
                return Ok(None);
            }
            let (Some((session_id, path)), Some(tip)) =
                (b.skimmed_source.clone(), b.inner.tip().map(str::to_string))
            else {
                return Ok(None);
            };
            let slot = Arc::new(Mutex::new(None));
            b.pending_whole = Some(Arc::clone(&slot));
            b.journal = Some(Vec::new());
            let cancel = Arc::new(std::sync::atomic::AtomicBool::new(false));
            b.load_cancel = Some(Arc::clone(&cancel));
            Ok(Some(LoadJob {
                session_id: Some(session_id),
                path,
                leaf_id: Some(tip),
                slot,
                tail: false,
                cancel,
            }))
        })
    }

    /// The whole history's load as a background job ([`Output::history_load`]), when a skimmed
    /// history waits for it and it has not started.
    pub(super) fn history_load(&mut self) -> Result<Option<Job>, Failure> {
        Ok(self
            .begin_complete()?
            .map(|job| self.register_load(job, true)))
    }

    /// Swap the whole branch in for the skimmed one: what the engine was given meanwhile is
    /// replayed on it first, and the engine's own state stays. `false` when there is nothing to
    /// swap (the load failed or was superseded) or the two branches disagree; the mirror then
    /// stays skimmed and the extension reloads the session in full.
    pub fn finish_complete(&mut self) -> Result<bool, Failure> {
        self.guarded("finishCompleteLoad", &String::new, |b| {
            let Some(slot) = b.pending_whole.take() else {
                return Ok(false);
            };
            let loaded = take_slot(&slot);
            let (Some(mut loaded), Some(journal)) = (loaded, b.journal.take()) else {
                return Ok(false);
            };
            b.skimmed_source = None;
            for fed in &journal {
                match fed {
                    Fed::Append(entries) => {
                        for entry in entries {
                            loaded.push(entry);
                        }
                    }
                    Fed::Truncate(id) => loaded.truncate_after(id.as_deref()),
                }
            }
            let swapped = b.inner.complete(loaded);
            // The skimmed branch just dropped was built on a worker, in malloc's arena for that
            // thread, and glibc keeps its freed pages: without this the engine stayed at 1.5-1.6x
            // the message text after the swap (1.23x for the same branch loaded at once).
            release_free_memory();
            Ok(swapped)
        })
    }

    /// Read `path` ahead of Pi's `session_start` (see [`relay_core::engine::Input::Prefetch`]):
    /// a load job of its current window at its last entry, kept apart from the session's own
    /// loads until [`Binding::open`] takes it or drops it.
    pub(super) fn prefetch(&mut self, path: &str) -> Result<Output, Failure> {
        self.drop_prefetch();
        if !loads_in_background(path) {
            return Ok(Output::default());
        }
        let slot = Arc::new(Mutex::new(None));
        let cancel = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let job = LoadJob {
            session_id: None,
            path: PathBuf::from(path),
            leaf_id: None,
            slot: Arc::clone(&slot),
            tail: true,
            cancel: Arc::clone(&cancel),
        };
        let id = self.load_id();
        jobs::register_load(id, job);
        self.prefetch = Some(Prefetch {
            op: id,
            path: PathBuf::from(path),
            slot,
            cancel,
            done: false,
        });
        Ok(Output {
            op: Some(id),
            jobs: vec![load_job(id, false)],
            ..Output::default()
        })
    }

    /// The read ahead came back: what it read waits in its slot for [`Binding::open`]; the
    /// output's `value` is `{tip}`, the entry it read up to (`null`: nothing to install).
    pub(super) fn prefetch_done(&mut self, results: &[JobResult]) -> Output {
        let Some(prefetch) = self.prefetch.as_mut() else {
            return Output::default();
        };
        prefetch.done = true;
        let found = results.iter().any(|r| {
            r.id == prefetch.op
                && matches!(&r.outcome, JobOutcome::Done { value, .. } if value == &serde_json::json!(true))
        });
        let tip = lock_slot(&prefetch.slot)
            .as_ref()
            .and_then(|b| b.tip().map(str::to_string));
        if !found || tip.is_none() {
            self.drop_prefetch();
        }
        Output {
            value: Some(serde_json::json!({ "tip": if found { tip } else { None } })),
            ..Output::default()
        }
    }

    /// Stop and forget the read ahead.
    pub(super) fn drop_prefetch(&mut self) {
        if let Some(prefetch) = self.prefetch.take() {
            prefetch
                .cancel
                .store(true, std::sync::atomic::Ordering::Relaxed);
            if !prefetch.done {
                jobs::forget_load(prefetch.op);
            }
        }
    }

    /// The branch read ahead of `session_start`, when it is the one `open` asks for: the same
    /// file and session, its job back, and its tip Pi's leaf or `read_ahead` (an ancestor of
    /// the leaf, the host says). Taken either way (a read ahead serves once).
    fn take_prefetched(
        &mut self,
        session_id: &str,
        path: &str,
        leaf_id: &str,
        read_ahead: Option<&str>,
    ) -> Option<engine::LoadedBranch> {
        let prefetch = self.prefetch.as_ref()?;
        let usable = prefetch.done && prefetch.path == Path::new(path);
        let branch = if usable {
            take_slot(&prefetch.slot)
        } else {
            None
        };
        self.drop_prefetch();
        branch.filter(|b| {
            b.session_id() == session_id
                && (b.tip() == Some(leaf_id) || (read_ahead.is_some() && b.tip() == read_ahead))
        })
    }

    /// Forget every background load in flight (a resync or a newer load replaces them).
    pub(super) fn drop_loads(&mut self) {
        if let Some(cancel) = self.load_cancel.take() {
            cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        if let Some(old) = self.load_op.take() {
            jobs::forget_load(old.op);
        }
        self.pending_load = None;
        self.pending_whole = None;
        self.skimmed_source = None;
        self.journal = None;
    }

    pub(super) fn load_id(&mut self) -> u64 {
        self.next_load_id += 1;
        self.next_load_id
    }

    /// A session starts (or must be reloaded in full): a large file in the background (its
    /// current window first), a small one at once; no file, or one without the leaf, asks the
    /// host for the branch.
    pub(super) fn open(
        &mut self,
        session_id: &str,
        file: Option<&str>,
        leaf: Option<&str>,
        background: bool,
        read_ahead: Option<&str>,
    ) -> Result<Output, Failure> {
        self.inner.forget_operations();
        self.drop_loads();
        let (Some(file), Some(leaf)) = (file, leaf) else {
            self.needs_resync = true;
            return Ok(Output::default());
        };
        // Read ahead of session_start and what Pi opened: installed now, no job.
        if let Some(branch) = self.take_prefetched(session_id, file, leaf, read_ahead) {
            let skimmed = !branch.is_complete();
            self.guarded("finishLoad", &String::new, |b| {
                b.inner.install(branch);
                Ok(())
            })?;
            self.needs_resync = false;
            if skimmed {
                self.skimmed_source = Some((session_id.to_string(), PathBuf::from(file)));
            }
            return Ok(Output::default());
        }
        if background {
            if let Some(job) = self.begin_load(session_id, file, leaf)? {
                return Ok(self.load_output(job, false));
            }
        }
        if !self.load_session_file(session_id, file, leaf)? {
            self.needs_resync = true;
        }
        Ok(Output::default())
    }

    pub(super) fn load_output(&mut self, job: LoadJob, whole: bool) -> Output {
        let job = self.register_load(job, whole);
        Output {
            op: Some(job.id),
            jobs: vec![job],
            ..Output::default()
        }
    }

    /// Hand `job` to the job runner: its `Done` (op = the job's id) installs what it read.
    fn register_load(&mut self, job: LoadJob, whole: bool) -> Job {
        let id = self.load_id();
        jobs::register_load(id, job);
        self.load_op = Some(LoadOp { op: id });
        load_job(id, whole)
    }

    /// A load job came back: install the current window, or swap the whole history in. A load that failed or disagrees asks for a full reload.
    pub(super) fn load_done(&mut self, op: u64, results: &[JobResult]) -> Result<Output, Failure> {
        self.load_op = None;
        // A load that failed (a panic on its worker, an unreadable file) is told once; the session
        // is then reloaded in full.
        let mut told = Output::default();
        for result in results {
            if let JobOutcome::Failed { error, .. } = &result.outcome {
                told = self
                    .inner
                    .failed("loading the session", error, &mut self.reported);
            }
        }
        let mut out = self.load_step(op, results)?;
        told.effects.append(&mut out.effects);
        out.effects = told.effects;
        Ok(out)
    }

    pub(super) fn load_step(&mut self, op: u64, results: &[JobResult]) -> Result<Output, Failure> {
        let found = results.iter().any(|r| {
            r.id == op
                && matches!(&r.outcome, JobOutcome::Done { value, .. } if value == &serde_json::json!(true))
        });
        if self.pending_load.is_some() {
            // The current window is in: the whole history waits until it is needed.
            if !(found && self.finish_load()?) {
                self.drop_loads();
                self.needs_resync = true;
            }
            return Ok(Output::default());
        }
        let swapped = found && self.finish_complete()?;
        if !swapped && !self.inner.history_complete() {
            self.drop_loads();
            self.needs_resync = true;
        }
        Ok(Output::default())
    }
}
