//! What each method of the addon's `Engine` does, free of napi so that `cargo test` covers it;
//! `lib.rs` only converts arguments, results and errors.
//!
//! **Panic boundary and resync.** Every method runs inside [`Binding::guarded`]. A panic there is
//! caught and answered with a [`Failure::Panic`] (the extension reports it once and its hook does
//! nothing). The engine that panicked may hold a half-updated mirror or state, so it is dropped:
//! a new one takes its place, configured with the last configuration that applied and the last
//! `/relay on|off`, as after a `/reload`. Until the extension has resynced it from Pi's branch
//! (`resync` or `loadSessionFile`), [`Binding::needs_resync`] is true and `handle`, `tool`,
//! `append` and `truncateAfter` refuse to work, so that no decision is made on an empty mirror.
//! The adapter's `sync()` checks `needsResync()` before every event and does the full resync.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use relay_core::engine::{
    self, ConfigSources, Effect, Event, GitFacts, NotifyLevel, Observation, ToolReply,
};
use relay_core::entry::{parse_entry, BranchSink, Entry, EntryKind};
use relay_core::handoff::GitState;
use relay_core::integrations::{IntegrationFacts, StoreFacts};
use relay_core::resume_check::CheckResult;
use relay_core::staleness::WorkspaceRecord;
use relay_io::session::TailLoad;

use crate::boundary;

/// Why a method failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The caller handed over something that does not parse (or asked at the wrong time).
    Invalid(String),
    /// A panic was caught; the engine was replaced and waits for a full resync.
    Panic(String),
}

impl Failure {
    pub fn text(&self) -> &str {
        match self {
            Failure::Invalid(text) | Failure::Panic(text) => text,
        }
    }
}

fn invalid(what: &str, err: impl std::fmt::Display) -> Failure {
    Failure::Invalid(format!("relay: invalid {what}: {err}"))
}

const WAITING: &str =
    "relay: the engine restarted after an internal error and waits for a full resync from the session";

/// The state behind one addon `Engine`.
pub struct Binding {
    inner: engine::Engine,
    reported: Vec<String>,
    /// Problems found in entries Pi handed over, reported with the next hook's reply.
    warnings: Vec<String>,
    /// Where status and events are written (`PI_CONTEXT_BUDGET_STATE_DIR` or agentDir/context-budget).
    state_dir: Option<PathBuf>,
    /// The last configuration that applied without a panic (budget file already read).
    last_sources: Option<ConfigSources>,
    /// The last `/relay on` or `/relay off` that went through.
    toggle: Option<String>,
    /// A panic replaced the engine; its mirror is empty until a full resync.
    needs_resync: bool,
    /// A write of Relay's files (events, status, relaunch marker, handoff) failed and the user
    /// was told: one notification for all of them, later failures are not reported again.
    write_failure_told: bool,
    /// Why the relaunch marker of the observation being handled could not be written: the
    /// engine is told at once ([`engine::Engine::relaunch_unwritten`]) and resets in-process.
    relaunch_unwritten: Option<String>,
    /// Where the newest background load ([`Binding::begin_load`]) leaves its branch; a resync or
    /// a newer load replaces it, so a superseded load is never installed.
    pending_load: Option<Arc<Mutex<Option<engine::LoadedBranch>>>>,
    /// The file, session and leaf of the installed skimmed branch, for the whole load that
    /// completes it ([`Binding::begin_complete`]).
    skimmed_source: Option<(String, PathBuf, String)>,
    /// Where the whole load ([`Binding::begin_complete`]) leaves its branch.
    pending_whole: Option<Arc<Mutex<Option<engine::LoadedBranch>>>>,
    /// What the engine was given since the skimmed branch was installed, replayed on the whole
    /// branch before it is swapped in ([`Binding::finish_complete`]).
    journal: Option<Vec<Fed>>,
}

/// One change of the mirror, as the extension fed it.
enum Fed {
    Append(Vec<Entry>),
    Truncate(Option<String>),
}

impl Default for Binding {
    fn default() -> Self {
        Self::new()
    }
}

/// The git facts `collect_git` hands to JavaScript and `tool` takes back (opaque to the extension).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GitWire {
    pub repo_root: Option<String>,
    pub branch: Option<String>,
    pub head: Option<String>,
    pub state: GitState,
    /// What the handoff records of the workspace for the stale-handoff check (collected when
    /// `collectGit` was given the handoff's arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceRecord>,
}

impl From<GitWire> for GitFacts {
    fn from(g: GitWire) -> Self {
        GitFacts {
            repo_root: g.repo_root,
            branch: g.branch,
            head: g.head,
            state: g.state,
            workspace: g.workspace,
        }
    }
}

/// Git metadata for a handoff, within `deadline` (blocking: the addon runs it on a worker
/// thread). With the handoff's arguments (`args_json`), also what it records of the workspace for
/// the stale-handoff check: the uncommitted files and the stamps of those and of its
/// `files_to_read` (arguments that do not decode stamp no file to read: the tool refuses them
/// anyway). Returns the facts as JSON for [`Binding::tool`]; a panic is an error, never a crash.
pub fn collect_git(
    cwd: &Path,
    deadline: Instant,
    args_json: Option<&str>,
) -> Result<String, Failure> {
    let wire = boundary::catch(|| {
        boundary::inject("collectGit", &|| cwd.display().to_string());
        let Some(args_json) = args_json else {
            let info = relay_io::git::git_state_until(cwd, deadline);
            return GitWire {
                repo_root: info.repo_root,
                branch: info.branch,
                head: info.head,
                state: info.state,
                workspace: None,
            };
        };
        let files = serde_json::from_str::<serde_json::Value>(args_json)
            .ok()
            .and_then(|args| relay_core::handoff::HandoffArgs::parse(&args).ok())
            .map(|a| a.files_to_read)
            .unwrap_or_default();
        let (info, record) = relay_io::workspace::record_until(cwd, &files, deadline);
        GitWire {
            repo_root: info.repo_root,
            branch: info.branch,
            head: info.head,
            state: info.state,
            workspace: Some(record),
        }
    })
    .map_err(|text| Failure::Panic(format!("relay: internal error in collectGit: {text}")))?;
    serde_json::to_string(&wire).map_err(|e| invalid("git facts", e))
}

/// A stale-handoff check to run on a worker thread: what the handoff recorded, the window its
/// record belongs to, and the one deadline of the whole collection.
#[derive(Debug, Clone)]
pub struct StaleJob {
    pub record: WorkspaceRecord,
    pub window: String,
    pub deadline: Instant,
}

/// Run a stale-handoff check (blocking, up to its deadline: the addon runs it on a worker
/// thread): the workspace now (relay-io), compared with the record (relay-core). Returns the
/// Marker JSON to append; a panic is an error, never a crash.
pub fn run_stale_check(job: &StaleJob) -> Result<String, Failure> {
    let report = boundary::catch(|| {
        boundary::inject("staleCheck", &|| job.record.cwd.clone());
        let now = relay_io::workspace::now_until(&job.record, job.deadline);
        relay_core::staleness::compare(&job.record, &now)
    })
    .map_err(|text| {
        Failure::Panic(format!(
            "relay: internal error in the stale-handoff check: {text}"
        ))
    })?;
    let record = engine::stale_record(&job.window, now_ms(), &report);
    serde_json::to_string(&record).map_err(|e| invalid("stale-handoff check record", e))
}

/// An operator's resume check to run on a worker thread: the command the engine picked, the cwd,
/// and for an after-reset check the window its record belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeJob {
    pub command: String,
    pub source: String,
    pub cwd: PathBuf,
    /// `Some(window)`: the job resolves to the branch record (a Marker) for that window;
    /// `None` (before a handoff): to the result for `tool("context_handoff", …)`.
    pub window: Option<String>,
}

/// Run a resume check (blocking, up to the timeout plus the drain limit: the addon runs it on a
/// worker thread). Returns the result JSON, or for an after-reset check the Marker to persist;
/// a panic is an error, never a crash.
pub fn run_resume_check(job: &ResumeJob) -> Result<String, Failure> {
    let result = boundary::catch(|| {
        boundary::inject("resumeCheck", &|| job.command.clone());
        relay_io::resume_check::run_resume_check(&job.command, &job.source, &job.cwd)
    })
    .map_err(|text| Failure::Panic(format!("relay: internal error in the resume check: {text}")))?;
    match &job.window {
        None => serde_json::to_string(&result).map_err(|e| invalid("resume check result", e)),
        Some(window) => {
            let record = engine::resume_record(window, now_ms(), &result);
            serde_json::to_string(&record).map_err(|e| invalid("resume check record", e))
        }
    }
}

/// The integrations' stores on disk for a handoff (blocking file IO: the addon runs it on a worker
/// thread). `facts_json` is a `StoreFacts`; the result is the `StoreContents` JSON the extension
/// hands back with the handoff. A panic is an error, never a crash.
pub fn collect_stores(facts_json: &str) -> Result<String, Failure> {
    let facts: StoreFacts =
        serde_json::from_str(facts_json).map_err(|e| invalid("integration store facts", e))?;
    let contents = boundary::catch(|| {
        boundary::inject("collectStores", &String::new);
        relay_io::integrations::read_stores(&facts.paths())
    })
    .map_err(|text| {
        Failure::Panic(format!(
            "relay: internal error while reading the integration stores: {text}"
        ))
    })?;
    serde_json::to_string(&contents).map_err(|e| invalid("integration stores", e))
}

/// Session files at least this large are loaded in the background ([`Binding::begin_load`]):
/// below it a load takes a few milliseconds, less than handing it to a worker is worth.
pub const BACKGROUND_LOAD_BYTES: u64 = 8 * 1024 * 1024;

/// A session file to replay on a worker thread ([`run_load`]); the branch goes to `slot`.
pub struct LoadJob {
    session_id: String,
    path: PathBuf,
    leaf_id: String,
    slot: Arc<Mutex<Option<engine::LoadedBranch>>>,
    /// Read the current window first ([`relay_io::session::stream_session_tail`]): the earlier
    /// windows skimmed, to be completed by a whole load. A branch without a compaction is read
    /// whole at once.
    tail: bool,
}

/// Read the session file of `job` and replay the branch ending at its leaf, apart from any engine
/// (blocking: the addon runs it on a libuv worker). `Ok(true)` when the file holds the leaf: the
/// branch then waits in the job's slot for [`Binding::finish_load`]. A panic is an error.
pub fn run_load(job: &LoadJob) -> Result<bool, Failure> {
    struct Sink<'a> {
        session_id: &'a str,
        branch: Option<engine::LoadedBranch>,
    }
    impl BranchSink for Sink<'_> {
        fn begin(&mut self) {
            self.branch = Some(engine::LoadedBranch::new(self.session_id));
        }
        fn entry(&mut self, entry: Entry) {
            self.entry_ref(&entry);
        }
        fn entry_ref(&mut self, entry: &Entry) {
            if let Some(branch) = self.branch.as_mut() {
                branch.push(entry);
            }
        }
    }
    let loaded = boundary::catch(|| {
        boundary::inject("loadSessionFileInBackground", &|| {
            job.path.display().to_string()
        });
        let mut sink = Sink {
            session_id: &job.session_id,
            branch: None,
        };
        if job.tail {
            boundary::hold("TAIL");
            match relay_io::session::stream_session_tail(&job.path, &job.leaf_id, &mut sink) {
                Ok(TailLoad::Tail) => {
                    return sink.branch.map(|mut branch| {
                        branch.skimmed();
                        branch
                    });
                }
                Ok(TailLoad::NoLeaf) | Err(_) => return None,
                Ok(TailLoad::NoTail) => {}
            }
        }
        boundary::hold("LOAD");
        let found = relay_io::session::stream_session_branch(&job.path, &job.leaf_id, &mut sink);
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
    match job.slot.lock() {
        Ok(mut slot) => *slot = loaded,
        Err(poisoned) => *poisoned.into_inner() = loaded,
    }
    // What the read freed (its blocks and batches) stays in this worker's malloc arena otherwise:
    // 37 MiB of the first pass on the 256 MiB session. Trimmed here, on the worker, because it
    // takes 12-14 ms (it was in `finish_load`, on Pi's thread).
    release_free_memory();
    Ok(found)
}

/// Milliseconds since the Unix epoch (the binding's clock; the engine has none).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

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

/// The event type of an observation, for error texts.
fn event_type(observation_json: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Tag {
        #[serde(rename = "type")]
        kind: String,
    }
    #[derive(serde::Deserialize)]
    struct Envelope {
        event: Tag,
    }
    serde_json::from_str::<Envelope>(observation_json)
        .map(|o| o.event.kind)
        .unwrap_or_else(|_| "?".into())
}

impl Binding {
    pub fn new() -> Self {
        Binding {
            inner: engine::Engine::new(),
            reported: Vec::new(),
            write_failure_told: false,
            relaunch_unwritten: None,
            warnings: Vec::new(),
            state_dir: None,
            last_sources: None,
            toggle: None,
            needs_resync: false,
            pending_load: None,
            skimmed_source: None,
            pending_whole: None,
            journal: None,
        }
    }

    /// Whether a panic replaced the engine and the extension must resync it from Pi's branch.
    pub fn needs_resync(&self) -> bool {
        self.needs_resync
    }

    /// Run `f` as the body of method `method` (`detail`: what it was working on, for the error
    /// text). A panic is caught, the engine replaced (see the module documentation) and the
    /// panic answered as [`Failure::Panic`].
    pub fn guarded<T>(
        &mut self,
        method: &str,
        detail: &dyn Fn() -> String,
        f: impl FnOnce(&mut Self) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        match boundary::catch(|| {
            boundary::inject(method, detail);
            f(self)
        }) {
            Ok(result) => result,
            Err(text) => {
                let what = detail();
                let place = if what.is_empty() {
                    method.to_string()
                } else {
                    format!("{method} ({what})")
                };
                let recovered = self.recover();
                let message = format!("relay: internal error in {place}: {text}. {recovered}");
                self.error_event("hook", &message);
                Err(Failure::Panic(message))
            }
        }
    }

    /// Replace the engine after a panic: a new one with the last good configuration and toggle.
    fn recover(&mut self) -> &'static str {
        self.needs_resync = true;
        let sources = self.last_sources.clone();
        let toggle = self.toggle.clone();
        let mut reported = self.reported.clone();
        let fresh = boundary::catch(move || {
            let mut fresh = engine::Engine::new();
            if let Some(sources) = &sources {
                // Its warnings were reported when it was first applied.
                let _ = fresh.configure_reply(sources, &mut reported);
            }
            if let Some(args) = toggle {
                let _ = fresh.handle(&Observation {
                    moment: engine::Moment::default(),
                    event: Event::Command { args },
                });
            }
            fresh
        });
        match fresh {
            Ok(fresh) => {
                self.inner = fresh;
                "Relay restarted its engine and reloads the session branch before the next event"
            }
            Err(_) => {
                self.inner = engine::Engine::new();
                self.last_sources = None;
                "Relay restarted its engine with the default configuration and reloads the session branch before the next event"
            }
        }
    }

    fn ready(&self) -> Result<(), Failure> {
        if self.needs_resync {
            Err(Failure::Invalid(WAITING.into()))
        } else {
            Ok(())
        }
    }

    /// Validate and apply configuration sources; returns a HookReply with one warning per problem.
    pub fn configure(&mut self, json: &str) -> Result<String, Failure> {
        self.guarded("configure", &String::new, |b| {
            let mut sources: ConfigSources =
                serde_json::from_str(json).map_err(|e| invalid("configuration sources", e))?;
            // The budget policy file is re-read each time (startup and every input), as seed 004 does.
            if let Some(file) = sources.budget_file_path() {
                match std::fs::read_to_string(&file.path) {
                    Ok(text) => sources.budget_file = Some(text),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => sources.budget_file_error = Some(e.to_string()),
                }
            }
            b.state_dir = sources.state_dir.as_deref().map(PathBuf::from);
            let mut reply = b.inner.configure_reply(&sources, &mut b.reported);
            b.last_sources = Some(sources);
            b.execute(&mut reply.effects);
            serde_json::to_string(&reply).map_err(|e| invalid("reply", e))
        })
    }

    /// Replace the mirror with a whole branch (JSON array of entries, root first).
    pub fn resync(&mut self, session_id: &str, entries_json: &str) -> Result<(), Failure> {
        self.guarded("resync", &String::new, |b| {
            let entries = b
                .entries_of(entries_json)
                .map_err(|e| invalid("branch entries", e))?;
            b.inner.resync(session_id, &entries);
            b.needs_resync = false;
            b.drop_loads();
            Ok(())
        })
    }

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
            let big = std::fs::metadata(path)
                .map(|m| m.is_file() && m.len() >= BACKGROUND_LOAD_BYTES)
                .unwrap_or(false);
            if !big {
                return Ok(None);
            }
            b.drop_loads();
            let slot = Arc::new(Mutex::new(None));
            b.pending_load = Some(Arc::clone(&slot));
            b.skimmed_source = Some((
                session_id.to_string(),
                PathBuf::from(path),
                leaf_id.to_string(),
            ));
            Ok(Some(LoadJob {
                session_id: session_id.to_string(),
                path: PathBuf::from(path),
                leaf_id: leaf_id.to_string(),
                slot,
                tail: true,
            }))
        })
    }

    /// Install the branch the newest background load replayed (the state `loadSessionFile`
    /// gives). `false` when there is none: the load found no such leaf, failed, or was
    /// superseded by a resync or a newer load.
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
            } else {
                b.journal = Some(Vec::new());
            }
            Ok(true)
        })
    }

    /// Whether the mirror holds every window's texts (false while a skimmed branch waits for
    /// its whole load): the history tools wait for it.
    pub fn history_complete(&mut self) -> Result<bool, Failure> {
        self.guarded("historyComplete", &String::new, |b| {
            Ok(b.inner.history_complete())
        })
    }

    /// The whole load that completes an installed skimmed branch (run it with [`run_load`] on a
    /// worker, then [`Binding::finish_complete`]); `None` when the history is complete or a
    /// resync replaced the skimmed branch.
    pub fn begin_complete(&mut self) -> Result<Option<LoadJob>, Failure> {
        self.guarded("beginCompleteLoad", &String::new, |b| {
            if b.inner.history_complete() || b.journal.is_none() {
                return Ok(None);
            }
            let Some((session_id, path, leaf_id)) = b.skimmed_source.clone() else {
                return Ok(None);
            };
            let slot = Arc::new(Mutex::new(None));
            b.pending_whole = Some(Arc::clone(&slot));
            Ok(Some(LoadJob {
                session_id,
                path,
                leaf_id,
                slot,
                tail: false,
            }))
        })
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

    /// Forget every background load in flight (a resync or a newer load replaces them).
    fn drop_loads(&mut self) {
        self.pending_load = None;
        self.pending_whole = None;
        self.skimmed_source = None;
        self.journal = None;
    }

    pub fn has_entry(&mut self, id: &str) -> Result<bool, Failure> {
        self.guarded("hasEntry", &String::new, |b| Ok(b.inner.contains(id)))
    }

    pub fn tip_id(&mut self) -> Result<Option<String>, Failure> {
        self.guarded("tipId", &String::new, |b| {
            Ok(b.inner.tip().map(str::to_string))
        })
    }

    pub fn truncate_after(&mut self, id: Option<&str>) -> Result<(), Failure> {
        self.guarded("truncateAfter", &String::new, |b| {
            b.ready()?;
            b.inner.truncate_after(id);
            if let Some(journal) = b.journal.as_mut() {
                journal.push(Fed::Truncate(id.map(str::to_string)));
            }
            Ok(())
        })
    }

    /// Append entries that follow the tip (JSON array, root first).
    pub fn append(&mut self, entries_json: &str) -> Result<(), Failure> {
        self.guarded("append", &String::new, |b| {
            b.ready()?;
            let entries = b
                .entries_of(entries_json)
                .map_err(|e| invalid("new entries", e))?;
            b.inner.append(&entries);
            if let Some(journal) = b.journal.as_mut() {
                journal.push(Fed::Append(entries));
            }
            Ok(())
        })
    }

    /// Run a tool; returns a ToolReply. `git_json` is what [`collect_git`] produced for a
    /// handoff; without it the handoff's git metadata is recorded as unknown.
    pub fn tool(
        &mut self,
        name: &str,
        args_json: &str,
        observation_json: &str,
        git_json: Option<&str>,
        resume_json: Option<&str>,
        integrations_json: Option<&str>,
    ) -> Result<String, Failure> {
        self.guarded("tool", &|| name.to_string(), |b| {
            b.ready()?;
            let args: serde_json::Value =
                serde_json::from_str(args_json).map_err(|e| invalid("tool arguments", e))?;
            let moment: engine::Moment = serde_json::from_str(observation_json)
                .map_err(|e| invalid("tool observation", e))?;
            let mut reply = if name == "context_handoff" {
                let git = match git_json {
                    Some(json) => serde_json::from_str::<GitWire>(json)
                        .map_err(|e| invalid("git facts", e))?
                        .into(),
                    None => GitFacts {
                        repo_root: None,
                        branch: None,
                        head: None,
                        state: GitState::Unknown,
                        workspace: None,
                    },
                };
                let resume = resume_json
                    .map(serde_json::from_str::<CheckResult>)
                    .transpose()
                    .map_err(|e| invalid("resume check result", e))?;
                let facts = integrations_json
                    .map(serde_json::from_str::<IntegrationFacts>)
                    .transpose()
                    .map_err(|e| invalid("integration facts", e))?;
                b.handoff(&args, &moment, &git, resume.as_ref(), facts.as_ref())
            } else {
                b.inner.tool(name, &args, &moment)
            };
            b.execute(&mut reply.effects);
            serde_json::to_string(&reply).map_err(|e| invalid("reply", e))
        })
    }

    /// The resume check to run right before the handoff `args_json` is written (`None`: none
    /// runs). `git_json` is what [`collect_git`] produced; `facts_json` a `ResumeFacts`.
    pub fn handoff_resume_check(
        &mut self,
        args_json: &str,
        moment_json: &str,
        git_json: Option<&str>,
        facts_json: &str,
    ) -> Result<Option<ResumeJob>, Failure> {
        self.guarded("handoffResumeCheck", &String::new, |b| {
            b.ready()?;
            let args: serde_json::Value =
                serde_json::from_str(args_json).map_err(|e| invalid("tool arguments", e))?;
            let moment: engine::Moment =
                serde_json::from_str(moment_json).map_err(|e| invalid("tool observation", e))?;
            let facts: engine::ResumeFacts =
                serde_json::from_str(facts_json).map_err(|e| invalid("resume check facts", e))?;
            let head = match git_json {
                Some(json) => {
                    serde_json::from_str::<GitWire>(json)
                        .map_err(|e| invalid("git facts", e))?
                        .head
                }
                None => None,
            };
            Ok(b.inner
                .handoff_resume_command(&args, &moment, head.as_deref(), &facts)
                .map(|c| ResumeJob {
                    command: c.command,
                    source: c.source,
                    cwd: PathBuf::from(&moment.cwd),
                    window: None,
                }))
        })
    }

    /// Whether the window's after-reset resume check is still to run (cheap: asked before
    /// every request).
    pub fn resume_check_due(&mut self) -> Result<bool, Failure> {
        self.guarded("resumeCheckDue", &String::new, |b| {
            b.ready()?;
            Ok(b.inner.resume_check_due())
        })
    }

    /// The after-reset resume check to run now (`None`: none runs); it is handed out once.
    pub fn reset_resume_check(
        &mut self,
        moment_json: &str,
        facts_json: &str,
    ) -> Result<Option<ResumeJob>, Failure> {
        self.guarded("resetResumeCheck", &String::new, |b| {
            b.ready()?;
            let moment: engine::Moment =
                serde_json::from_str(moment_json).map_err(|e| invalid("observation", e))?;
            let facts: engine::ResumeFacts =
                serde_json::from_str(facts_json).map_err(|e| invalid("resume check facts", e))?;
            Ok(b.inner
                .reset_resume_command(&moment, &facts)
                .map(|(c, window)| ResumeJob {
                    command: c.command,
                    source: c.source,
                    cwd: PathBuf::from(&moment.cwd),
                    window: Some(window),
                }))
        })
    }

    /// The message the `context` hook inserts into the request (a `ContextMessage`), or `None`.
    pub fn resume_context(&mut self) -> Result<Option<String>, Failure> {
        self.guarded("resumeContext", &String::new, |b| {
            b.ready()?;
            b.inner
                .resume_context()
                .map(|m| serde_json::to_string(&m).map_err(|e| invalid("context message", e)))
                .transpose()
        })
    }

    /// Whether the window's watch check is still to run (cheap: asked before every request).
    pub fn watch_check_due(&mut self) -> Result<bool, Failure> {
        self.guarded("watchCheckDue", &String::new, |b| {
            b.ready()?;
            Ok(b.inner.watch_check_due())
        })
    }

    /// The window's watch check against the live registry (`jobs_json`: the records it lists, a
    /// JSON array; `None`: no registry): the Marker JSON to append, or `None` when nothing is
    /// missing or the check is not due.
    pub fn watch_check(
        &mut self,
        jobs_json: Option<&str>,
        now_ms: i64,
    ) -> Result<Option<String>, Failure> {
        self.guarded("watchCheck", &String::new, |b| {
            b.ready()?;
            let live = jobs_json
                .map(serde_json::from_str::<Vec<serde_json::Value>>)
                .transpose()
                .map_err(|e| invalid("jobs registry records", e))?;
            b.inner
                .watch_check(live.as_deref(), now_ms)
                .map(|m| serde_json::to_string(&m).map_err(|e| invalid("watch check record", e)))
                .transpose()
        })
    }

    /// Whether the window's stale-handoff check is still to run (cheap: asked before every
    /// request).
    pub fn stale_check_due(&mut self) -> Result<bool, Failure> {
        self.guarded("staleCheckDue", &String::new, |b| {
            b.ready()?;
            Ok(b.inner.stale_check_due())
        })
    }

    /// The window's stale-handoff check to run now (`None`: none runs); handed out once, its
    /// deadline counted from now.
    pub fn stale_check(&mut self) -> Result<Option<StaleJob>, Failure> {
        self.guarded("staleCheck", &String::new, |b| {
            b.ready()?;
            Ok(b.inner.stale_check().map(|(record, window)| StaleJob {
                record,
                window,
                deadline: Instant::now() + relay_io::workspace::RESUME_DEADLINE,
            }))
        })
    }

    /// The stale-handoff message the `context` hook inserts into the request, or `None`.
    pub fn stale_context(&mut self) -> Result<Option<String>, Failure> {
        self.guarded("staleContext", &String::new, |b| {
            b.ready()?;
            b.inner
                .stale_context()
                .map(|m| serde_json::to_string(&m).map_err(|e| invalid("context message", e)))
                .transpose()
        })
    }

    /// The watch check message the `context` hook inserts into the request, or `None`.
    pub fn watch_context(&mut self) -> Result<Option<String>, Failure> {
        self.guarded("watchContext", &String::new, |b| {
            b.ready()?;
            b.inner
                .watch_context()
                .map(|m| serde_json::to_string(&m).map_err(|e| invalid("context message", e)))
                .transpose()
        })
    }

    /// Feed one observation; returns a HookReply.
    pub fn handle(&mut self, observation_json: &str) -> Result<String, Failure> {
        self.guarded("handle", &|| event_type(observation_json), |b| {
            b.ready()?;
            let obs: Observation =
                serde_json::from_str(observation_json).map_err(|e| invalid("observation", e))?;
            let mut reply = b.inner.handle(&obs);
            if let Event::Command { args } = &obs.event {
                if args == "on" || args == "off" {
                    b.toggle = Some(args.clone());
                }
            }
            b.execute(&mut reply.effects);
            if let Some(why) = b.relaunch_unwritten.take() {
                // No relaunch: the engine resets in-process at this same settle point instead.
                let mut more = b.inner.relaunch_unwritten(&obs, &why);
                b.execute(&mut more.effects);
                reply.effects.append(&mut more.effects);
                if reply.result.is_none() {
                    reply.result = more.result;
                }
            }
            serde_json::to_string(&reply).map_err(|e| invalid("reply", e))
        })
    }

    /// The tools' names, labels and descriptions.
    /// The model's arguments for `name` as Pi should validate them (aliases renamed, unknown
    /// arguments refused): `{"args": …}` or `{"error": "<tool error text>"}`. Pure, so it also
    /// answers while a resync is awaited.
    pub fn prepare_arguments(&mut self, name: &str, args_json: &str) -> Result<String, Failure> {
        self.guarded("prepareArguments", &|| name.to_string(), |_| {
            let args: serde_json::Value =
                serde_json::from_str(args_json).map_err(|e| invalid("tool arguments", e))?;
            let out = match relay_core::args::prepare(name, &args) {
                Ok(args) => serde_json::json!({ "args": args }),
                Err(e) => serde_json::json!({ "error": e.text }),
            };
            serde_json::to_string(&out).map_err(|e| invalid("prepared arguments", e))
        })
    }

    pub fn tool_specs(&mut self) -> Result<String, Failure> {
        self.guarded("toolSpecs", &String::new, |_| {
            serde_json::to_string(&engine::tool_specs()).map_err(|e| invalid("tool specs", e))
        })
    }

    /// Parse a JSON array of branch entries. An entry that does not parse keeps its place on the
    /// branch as an unknown entry (with a warning) instead of failing the whole batch, so that one
    /// odd entry never stops the mirror (or every later hook) from working.
    fn entries_of(&mut self, json: &str) -> Result<Vec<Entry>, serde_json::Error> {
        let raws: Vec<&serde_json::value::RawValue> = serde_json::from_str(json)?;
        let mut entries = Vec::with_capacity(raws.len());
        for (index, raw) in raws.into_iter().enumerate() {
            match parse_entry(raw.get()) {
                Ok(entry) => entries.push(entry),
                Err(error) => {
                    let skeleton: Option<Skeleton> = serde_json::from_str(raw.get()).ok();
                    match skeleton {
                        Some(Skeleton {
                            entry_type,
                            id: Some(id),
                            parent_id,
                            timestamp,
                        }) if !id.is_empty() => {
                            self.warnings.push(format!(
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
                        _ => self.warnings.push(format!(
                            "relay: branch element {index} has no usable id and was skipped ({error})"
                        )),
                    }
                }
            }
        }
        Ok(entries)
    }

    /// Append an `error` event (`kind`: hook, config, telemetry) to events.jsonl; a failure to do
    /// so is itself reported once through [`Binding::execute`]'s path.
    fn error_event(&mut self, kind: &str, message: &str) {
        let Some(dir) = &self.state_dir else { return };
        let event = serde_json::json!({
            "ts": now_ms(),
            "event": "error",
            "kind": kind,
            "sessionId": self.inner.history().session_id(),
            "message": message,
        });
        if relay_io::telemetry::append_event(dir, &event).is_err() {
            // The events file itself is unwritable: `execute` reports that once.
        }
    }

    /// Tell the user about a failed write of Relay's files (a full disk, a read-only folder), once
    /// per engine: the first failure is one warning notification, later ones are not reported.
    fn tell_write_failure(&mut self, kept: &mut Vec<Effect>, text: String) {
        if self.write_failure_told {
            return;
        }
        self.write_failure_told = true;
        kept.push(Effect::Notify {
            text: format!(
                "{text}. Relay keeps working; failures to write its files are not reported again."
            ),
            level: NotifyLevel::Warning,
        });
    }

    /// Perform the file effects here (telemetry, status, the relaunch marker) and leave the rest
    /// for the extension. A failed write never fails the hook: the first one is a warning
    /// notification ([`Binding::tell_write_failure`]), and a status or marker failure is also an
    /// `error` event (when the event log can still be written).
    fn execute(&mut self, effects: &mut Vec<Effect>) {
        let session_id = self.inner.history().session_id().to_string();
        let mut kept = Vec::with_capacity(effects.len());
        for text in self.warnings.drain(..) {
            kept.push(Effect::Log { text });
        }
        // Pi is only asked to shut down for a relaunch once its marker is written.
        let mut marker_failed = false;
        for effect in effects.drain(..) {
            match effect {
                Effect::WriteRelaunchMarker { path, marker, key } => {
                    if let Err(why) = write_relaunch_marker(&path, &marker, &key) {
                        // The engine's `relaunch_failed` event and warning say why.
                        marker_failed = true;
                        self.relaunch_unwritten = Some(why);
                    }
                }
                Effect::RemoveRelaunchMarker { path } => {
                    let _ = std::fs::remove_file(path);
                }
                Effect::Shutdown if marker_failed => {}
                Effect::Telemetry { mut event } => {
                    if let Some(obj) = event.as_object_mut() {
                        // Events made without a clock (configuration problems) get their time here.
                        obj.entry("ts")
                            .or_insert_with(|| serde_json::json!(now_ms()));
                    }
                    let failed = self.state_dir.as_ref().and_then(|dir| {
                        relay_io::telemetry::append_event(dir, &event)
                            .err()
                            .map(|e| {
                                format!(
                                    "relay: cannot append to {}: {e}",
                                    relay_io::telemetry::events_path(dir).display()
                                )
                            })
                    });
                    if let Some(text) = failed {
                        self.tell_write_failure(&mut kept, text);
                    }
                }
                Effect::WriteStatus { mut status } => {
                    if let Some(obj) = status.as_object_mut() {
                        obj.insert("pid".into(), serde_json::json!(std::process::id()));
                    }
                    let failed = match &self.state_dir {
                        Some(dir) => relay_io::telemetry::write_status(dir, &session_id, &status)
                            .err()
                            .map(|e| {
                                format!(
                                    "relay: cannot write the status file in {}: {e}",
                                    dir.display()
                                )
                            }),
                        None => None,
                    };
                    if let Some(text) = failed {
                        if !self.write_failure_told {
                            self.error_event("telemetry", &text);
                        }
                        self.tell_write_failure(&mut kept, text);
                    }
                }
                other => kept.push(other),
            }
        }
        *effects = kept;
    }

    /// `context_handoff`: validate, render with the git facts collected beforehand (off Pi's
    /// event loop), write the files, arm the commit.
    fn handoff(
        &mut self,
        args: &serde_json::Value,
        moment: &engine::Moment,
        git: &GitFacts,
        resume: Option<&CheckResult>,
        facts: Option<&IntegrationFacts>,
    ) -> ToolReply {
        let parsed = match self.inner.handoff_begin(args, moment) {
            Ok(parsed) => parsed,
            Err(reply) => return *reply,
        };
        let root = PathBuf::from(git.repo_root.as_deref().unwrap_or(&moment.cwd));
        let session_id = self.inner.history().session_id().to_string();
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            ToolReply {
            text: format!(
                "context_handoff: cannot {what}: {e}. Nothing was committed; the context stays as it is."
            ),
            is_error: true,
            ..ToolReply::default()
        }
        };
        // A concurrent writer may take a sequence number: re-render with the next one.
        for _ in 0..5 {
            let n = match relay_io::handoff_files::next_sequence(&root, &session_id) {
                Ok(n) => n,
                Err(e) => return fail("choose a handoff file name", &e),
            };
            let path = relay_io::handoff_files::handoff_path(&root, &session_id, n);
            let path_text = path.display().to_string();
            let (markdown, sidecar, fingerprint) = match self
                .inner
                .handoff_render(&parsed, git, resume, facts, &path_text, n, moment)
            {
                Ok(rendered) => rendered,
                Err(reply) => return *reply,
            };
            match relay_io::handoff_files::write_handoff(&root, &session_id, n, &markdown, &sidecar)
            {
                Ok(written) => {
                    return self.inner.handoff_written(
                        &written.display().to_string(),
                        markdown,
                        fingerprint,
                        moment,
                    );
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                // A full disk or a read-only folder: the handoff commits from memory (the next
                // window's boot block carries it) and the user is told.
                Err(e) => {
                    let mut reply = self.inner.handoff_unsaved(
                        &path_text,
                        markdown,
                        fingerprint,
                        moment,
                        &e.to_string(),
                    );
                    let text = format!(
                        "relay: cannot write the handoff file {path_text}: {e}; the handoff is kept in the session and the next window starts from it"
                    );
                    let mut told = Vec::new();
                    self.tell_write_failure(&mut told, text);
                    reply.effects.extend(told);
                    return reply;
                }
            }
        }
        fail(
            "find a free handoff file name",
            &"too many concurrent handoffs",
        )
    }
}

/// Sign and write the pi-session relaunch marker (relay-io checks the handoff and launch prompt
/// files first). The error says why; it never contains the key.
fn write_relaunch_marker(
    path: &str,
    marker: &serde_json::Value,
    key: &engine::RelaunchKey,
) -> Result<(), String> {
    let key = relay_io::relaunch::Key::from_hex(key.expose())
        .ok_or_else(|| "the relaunch key is not 64 hex digits".to_string())?;
    let marker: relay_io::relaunch::Marker = serde_json::from_value(marker.clone())
        .map_err(|e| format!("the relaunch marker has not the wrapper's shape: {e}"))?;
    relay_io::relaunch::write_marker(std::path::Path::new(path), &key, &marker)
}

/// What a background load left in its slot (a worker that panicked holding the lock still left
/// its value, or none).
fn take_slot<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    match slot.lock() {
        Ok(mut slot) => slot.take(),
        Err(poisoned) => poisoned.into_inner().take(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn entry(id: &str, parent: Option<&str>, text: &str) -> Value {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
               "message": {"role": "user", "content": [{"type": "text", "text": text}]}})
    }

    fn moment() -> Value {
        json!({"nowMs": 1_000, "tzOffsetMinutes": 0, "usage": null, "model": null,
            "contextWindow": null, "hasPendingMessages": false, "cwd": "/nowhere", "subagent": false})
    }

    /// A tool call's moment (a tool takes no event).
    fn tool_moment() -> String {
        moment().to_string()
    }

    fn observation(kind: &str, extra: Value) -> String {
        let mut event = json!({"type": kind});
        if let (Some(o), Value::Object(e)) = (event.as_object_mut(), extra) {
            o.extend(e);
        }
        json!({"moment": moment(), "event": event}).to_string()
    }

    fn tool_text(reply: &str) -> String {
        let v: Value = serde_json::from_str(reply).unwrap();
        v["text"].as_str().unwrap().to_string()
    }

    fn branch() -> String {
        json!([
            entry("a1", None, "first NEEDLE-1"),
            entry("a2", Some("a1"), "second")
        ])
        .to_string()
    }

    /// A session file of at least `bytes` bytes: a header, then a linear chain of user messages
    /// `m0`, `m1`, … whose texts are `fill` (the first also holds `NEEDLE-FIRST`).
    fn session_file(dir: &Path, bytes: usize) -> (PathBuf, String) {
        let fill = "lorem ipsum dolor sit amet ".repeat(150);
        let mut text = json!({"type": "session", "version": 3, "id": "S", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/nowhere"}).to_string();
        text.push('\n');
        let mut parent: Option<String> = None;
        let mut n = 0;
        while text.len() < bytes {
            let id = format!("m{n}");
            let body = if n == 0 {
                format!("NEEDLE-FIRST {fill}")
            } else {
                fill.clone()
            };
            text.push_str(&entry(&id, parent.as_deref(), &body).to_string());
            text.push('\n');
            parent = Some(id);
            n += 1;
        }
        let path = dir.join("session.jsonl");
        std::fs::write(&path, text).unwrap();
        (path, parent.unwrap())
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("relay-node-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_relaunch_marker_is_signed_and_a_failed_write_says_why_without_the_key() {
        let dir = scratch("relaunch-marker");
        let handoff = dir.join("h.md");
        std::fs::write(&handoff, "# Handoff\n").unwrap();
        let hex = "0f".repeat(32);
        let key = engine::RelaunchKey::new(hex.clone());
        let marker = serde_json::json!({
            "cwd": "/w", "launchPrompt": null, "handoff": handoff, "sessionFile": null,
        });
        let path = dir.join("1-m.json");
        write_relaunch_marker(&path.to_string_lossy(), &marker, &key).unwrap();
        let k = relay_io::relaunch::Key::from_hex(&hex).unwrap();
        let opened = relay_io::relaunch::open(&k, &std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(opened.handoff, handoff.to_string_lossy());
        // A marker folder that cannot exist (below a regular file): the write fails.
        let blocked = handoff.join("1-m.json");
        let why = write_relaunch_marker(&blocked.to_string_lossy(), &marker, &key).unwrap_err();
        assert!(
            why.starts_with(&format!(
                "cannot write the relaunch marker {}: ",
                blocked.display()
            )),
            "{why}"
        );
        assert!(!why.contains(&hex));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_background_load_installs_the_state_a_load_at_once_gives() {
        let dir = scratch("bg-load");
        let (path, leaf) = session_file(&dir, BACKGROUND_LOAD_BYTES as usize + 1);
        let path = path.display().to_string();
        let mut at_once = Binding::new();
        assert!(at_once.load_session_file("S", &path, &leaf).unwrap());

        let mut b = Binding::new();
        b.resync("S", &branch()).unwrap();
        let job = b
            .begin_load("S", &path, &leaf)
            .unwrap()
            .expect("a large file loads in the background");
        // Until the branch is installed the engine keeps the mirror it had.
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));
        assert!(run_load(&job).unwrap());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));
        assert!(b.finish_load().unwrap());
        assert_eq!(b.tip_id().unwrap(), at_once.tip_id().unwrap());
        assert!(!b.finish_load().unwrap(), "a branch is installed once");
        for (name, args) in [
            ("history_list_windows", json!({})),
            ("history_search_contents", json!({"query": "NEEDLE-FIRST"})),
        ] {
            let args = args.to_string();
            assert_eq!(
                tool_text(
                    &b.tool(name, &args, &tool_moment(), None, None, None)
                        .unwrap()
                ),
                tool_text(
                    &at_once
                        .tool(name, &args, &tool_moment(), None, None, None)
                        .unwrap()
                ),
                "{name}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A large session with windows: user questions and assistant answers (with usage), a
    /// compaction every 300 entries, a note written in the first window; the leaf's id.
    fn windowed_session(dir: &Path, bytes: usize) -> (PathBuf, String) {
        let fill = "lorem ipsum dolor sit amet ".repeat(150);
        let mut text = json!({"type": "session", "version": 3, "id": "S", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/nowhere"}).to_string();
        text.push('\n');
        let mut parent: Option<String> = None;
        let mut n = 0;
        while text.len() < bytes {
            let id = format!("m{n}");
            let ts = "2026-01-01T00:00:00.000Z";
            let line = if n % 300 == 299 {
                json!({"type": "compaction", "id": id, "parentId": parent, "timestamp": ts,
                       "summary": format!("summary {n}"), "firstKeptEntryId": parent, "tokensBefore": 1000})
            } else if n == 5 {
                json!({"type": "custom", "id": id, "parentId": parent, "timestamp": ts, "customType": "relay/note",
                       "data": {"kind": "write", "path": "plan.md", "content": "the plan", "atMs": 5}})
            } else if n % 2 == 1 {
                json!({"type": "message", "id": id, "parentId": parent, "timestamp": ts,
                       "message": {"role": "assistant", "content": [{"type": "text", "text": format!("answer {n} {fill}")}],
                                   "usage": {"totalTokens": 1000 + n}, "stopReason": "stop"}})
            } else {
                let body = if n == 0 {
                    format!("NEEDLE-FIRST {fill}")
                } else {
                    format!("question {n} {fill}")
                };
                entry(&id, parent.as_deref(), &body)
            };
            text.push_str(&line.to_string());
            text.push('\n');
            parent = Some(id);
            n += 1;
        }
        let path = dir.join("windowed.jsonl");
        std::fs::write(&path, text).unwrap();
        (path, parent.unwrap())
    }

    #[test]
    fn a_skimmed_load_answers_the_hooks_as_a_whole_load_and_completes_to_a_fresh_load() {
        let dir = scratch("bg-tail");
        let (path, leaf) = windowed_session(&dir, BACKGROUND_LOAD_BYTES as usize + 1);
        let path = path.display().to_string();
        let mut whole = Binding::new();
        assert!(whole.load_session_file("S", &path, &leaf).unwrap());
        assert!(whole.history_complete().unwrap());

        let mut b = Binding::new();
        let job = b.begin_load("S", &path, &leaf).unwrap().unwrap();
        assert!(run_load(&job).unwrap());
        assert!(b.finish_load().unwrap());
        assert!(
            !b.history_complete().unwrap(),
            "the earlier windows are skimmed"
        );
        // Everything a hook reads is the branch's: the usage estimate, the windows, the notes.
        let estimated = json!({"nowMs": 1_000, "tzOffsetMinutes": 0, "usage": null, "model": "faux/m",
            "contextWindow": 200_000, "hasPendingMessages": false, "cwd": "/nowhere", "subagent": false}).to_string();
        let status = observation("command", json!({"args": "status"}));
        let same = |b: &mut Binding, whole: &mut Binding| {
            assert_eq!(
                tool_text(
                    &b.tool("get_context_remaining", "{}", &estimated, None, None, None)
                        .unwrap()
                ),
                tool_text(
                    &whole
                        .tool("get_context_remaining", "{}", &estimated, None, None, None)
                        .unwrap()
                ),
            );
            assert_eq!(
                tool_text(
                    &b.tool(
                        "notes_list_files_by_prefix",
                        "{}",
                        &estimated,
                        None,
                        None,
                        None
                    )
                    .unwrap()
                ),
                tool_text(
                    &whole
                        .tool(
                            "notes_list_files_by_prefix",
                            "{}",
                            &estimated,
                            None,
                            None,
                            None
                        )
                        .unwrap()
                ),
            );
            assert_eq!(b.handle(&status).unwrap(), whole.handle(&status).unwrap());
        };
        same(&mut b, &mut whole);
        // A history tool never answers from the skimmed part.
        let early: Value = serde_json::from_str(
            &b.tool(
                "history_search_contents",
                r#"{"query":"NEEDLE-FIRST"}"#,
                &tool_moment(),
                None,
                None,
                None,
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(early["isError"], true, "{early}");
        assert!(
            early["text"].as_str().unwrap().contains("still loading"),
            "{early}"
        );

        // Pi goes on while the whole file loads: entries appended, a navigation back, more.
        let fresh = json!([
            entry("n1", Some(&leaf), "new NEEDLE-NEW"),
            entry("n2", Some("n1"), "newer")
        ])
        .to_string();
        let after_nav = json!([entry("n3", Some("n1"), "other NEEDLE-NAV")]).to_string();
        let job = b
            .begin_complete()
            .unwrap()
            .expect("a whole load completes the history");
        for e in [&mut b, &mut whole] {
            e.append(&fresh).unwrap();
            e.truncate_after(Some("n1")).unwrap();
            e.append(&after_nav).unwrap();
        }
        assert!(run_load(&job).unwrap());
        assert!(b.finish_complete().unwrap());
        assert!(b.history_complete().unwrap());
        assert!(!b.finish_complete().unwrap(), "swapped once");
        same(&mut b, &mut whole);
        for (name, args) in [
            ("history_list_windows", json!({})),
            ("history_search_contents", json!({"query": "NEEDLE-FIRST"})),
            ("history_search_contents", json!({"query": "NEEDLE"})),
            ("history_list_items", json!({"limit": 50})),
        ] {
            let args = args.to_string();
            assert_eq!(
                tool_text(
                    &b.tool(name, &args, &tool_moment(), None, None, None)
                        .unwrap()
                ),
                tool_text(
                    &whole
                        .tool(name, &args, &tool_moment(), None, None, None)
                        .unwrap()
                ),
                "{name}"
            );
        }
        // And the whole-load side equals a fresh load of the final branch.
        let mut fresh_load = Binding::new();
        let final_branch: Vec<Value> = {
            let text = std::fs::read_to_string(&path).unwrap();
            let mut v: Vec<Value> = text
                .lines()
                .skip(1)
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            v.push(entry("n1", Some(&leaf), "new NEEDLE-NEW"));
            v.push(entry("n3", Some("n1"), "other NEEDLE-NAV"));
            v
        };
        fresh_load
            .resync("S", &Value::Array(final_branch).to_string())
            .unwrap();
        let args = json!({"query": "NEEDLE"}).to_string();
        assert_eq!(
            tool_text(
                &b.tool(
                    "history_search_contents",
                    &args,
                    &tool_moment(),
                    None,
                    None,
                    None
                )
                .unwrap()
            ),
            tool_text(
                &fresh_load
                    .tool(
                        "history_search_contents",
                        &args,
                        &tool_moment(),
                        None,
                        None,
                        None
                    )
                    .unwrap()
            ),
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_resync_while_the_history_completes_drops_the_whole_load() {
        let dir = scratch("bg-tail-resync");
        let (path, leaf) = windowed_session(&dir, BACKGROUND_LOAD_BYTES as usize + 1);
        let path = path.display().to_string();
        let mut b = Binding::new();
        let job = b.begin_load("S", &path, &leaf).unwrap().unwrap();
        assert!(run_load(&job).unwrap());
        assert!(b.finish_load().unwrap());
        let job = b.begin_complete().unwrap().unwrap();
        b.resync("S", &branch()).unwrap();
        assert!(b.history_complete().unwrap(), "a resync is whole");
        assert!(run_load(&job).unwrap());
        assert!(
            !b.finish_complete().unwrap(),
            "the superseded load is not swapped in"
        );
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));
        assert!(b.begin_complete().unwrap().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_small_file_loads_at_once_and_a_superseded_or_missing_load_installs_nothing() {
        let dir = scratch("bg-small");
        let (small, small_leaf) = session_file(&dir, 10_000);
        let mut b = Binding::new();
        assert!(b
            .begin_load("S", &small.display().to_string(), &small_leaf)
            .unwrap()
            .is_none());
        assert!(b
            .begin_load("S", "/no/such/file.jsonl", "x")
            .unwrap()
            .is_none());

        let (path, leaf) = session_file(&dir, BACKGROUND_LOAD_BYTES as usize + 1);
        let path = path.display().to_string();
        // A resync while the load runs is newer than the load: the load is dropped.
        let job = b.begin_load("S", &path, &leaf).unwrap().unwrap();
        b.resync("S", &branch()).unwrap();
        assert!(run_load(&job).unwrap());
        assert!(!b.finish_load().unwrap());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));
        // A newer load supersedes an older one.
        let old = b.begin_load("S", &path, &leaf).unwrap().unwrap();
        let new = b.begin_load("S", &path, "m3").unwrap().unwrap();
        assert!(run_load(&old).unwrap());
        assert!(run_load(&new).unwrap());
        assert!(b.finish_load().unwrap());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("m3"));
        // A leaf the file does not hold: nothing to install, the mirror is kept.
        let job = b.begin_load("S", &path, "nowhere").unwrap().unwrap();
        assert!(!run_load(&job).unwrap());
        assert!(!b.finish_load().unwrap());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("m3"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_caught_panic_replaces_the_engine_and_work_waits_for_a_full_resync() {
        let mut b = Binding::new();
        b.configure(
            &json!({"global": {"relay": {"enabled": true}}, "projectTrusted": false}).to_string(),
        )
        .unwrap();
        b.resync("S", &branch()).unwrap();
        b.handle(&observation("command", json!({"args": "off"})))
            .unwrap();
        assert!(!b.inner.enabled());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));

        let failure = b
            .guarded("handle", &|| "turn_end".into(), |_| -> Result<(), _> {
                panic!("deliberate")
            })
            .unwrap_err();
        let Failure::Panic(text) = &failure else {
            panic!("{failure:?}")
        };
        assert!(
            text.starts_with("relay: internal error in handle (turn_end): deliberate"),
            "{text}"
        );
        assert!(text.contains("reloads the session branch"), "{text}");

        // A new engine: empty mirror, the toggle kept, and no decision before the resync.
        assert!(b.needs_resync());
        assert_eq!(b.tip_id().unwrap(), None);
        assert!(!b.inner.enabled(), "/relay off survives the restart");
        for refused in [
            b.handle(&observation("context", json!({}))).map(|_| ()),
            b.tool(
                "history_list_windows",
                "{}",
                &tool_moment(),
                None,
                None,
                None,
            )
            .map(|_| ()),
            b.append("[]"),
            b.truncate_after(None),
        ] {
            assert_eq!(refused, Err(Failure::Invalid(WAITING.into())));
        }

        b.resync("S", &branch()).unwrap();
        assert!(!b.needs_resync());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));
        let found = b
            .tool(
                "history_search_contents",
                &json!({"query": "NEEDLE-1"}).to_string(),
                &tool_moment(),
                None,
                None,
                None,
            )
            .unwrap();
        assert!(tool_text(&found).contains("NEEDLE-1"), "{found}");
        b.handle(&observation("context", json!({}))).unwrap();
    }

    #[test]
    fn errors_name_the_event_type_of_an_observation() {
        assert_eq!(event_type(&observation("turn_end", json!({}))), "turn_end");
        assert_eq!(event_type("{\"type\": \"turn_end\"}"), "?");
    }

    #[test]
    fn a_panic_in_the_first_configuration_leaves_the_defaults() {
        let mut b = Binding::new();
        let failure = b
            .guarded("configure", &String::new, |_| -> Result<(), _> {
                panic!("in configure")
            })
            .unwrap_err();
        assert!(
            failure
                .text()
                .starts_with("relay: internal error in configure: in configure"),
            "{failure:?}"
        );
        assert!(b.needs_resync());
        assert!(b.inner.enabled(), "defaults");
        assert!(b.load_session_file("S", "/no/such/file.jsonl", "x").is_ok());
        assert!(b.needs_resync(), "a load that found nothing is no resync");
        b.resync("S", "[]").unwrap();
        assert!(!b.needs_resync());
    }

    #[test]
    fn invalid_input_is_an_error_not_a_restart() {
        let mut b = Binding::new();
        b.resync("S", &branch()).unwrap();
        assert!(matches!(b.handle("{"), Err(Failure::Invalid(_))));
        assert!(matches!(b.append("nope"), Err(Failure::Invalid(_))));
        assert!(!b.needs_resync());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));
    }

    #[test]
    fn git_facts_round_trip_and_a_missing_collection_is_unknown() {
        let dir = std::env::temp_dir().join(format!("relay-node-git-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Already past the deadline: nothing runs, the facts say unknown.
        let json = collect_git(&dir, Instant::now(), None).unwrap();
        let wire: GitWire = serde_json::from_str(&json).unwrap();
        assert_eq!(
            wire,
            GitWire {
                repo_root: None,
                branch: None,
                head: None,
                state: GitState::Unknown,
                workspace: None,
            }
        );
        assert_eq!(
            serde_json::from_str::<Value>(&json).unwrap(),
            json!({"repoRoot": null, "branch": null, "head": null, "state": "unknown"})
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_resume_check_job_gives_the_result_for_a_handoff_and_the_record_for_a_window() {
        let dir = std::env::temp_dir().join(format!("relay-node-resume-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut job = ResumeJob {
            command: "echo checked; exit 4".into(),
            source: "PI_RESUME_CHECK".into(),
            cwd: dir.clone(),
            window: None,
        };
        let result: Value = serde_json::from_str(&run_resume_check(&job).unwrap()).unwrap();
        assert_eq!(result["status"], json!({"kind": "exited", "code": 4}));
        assert_eq!(result["output"]["head"], "checked\n");
        job.window = Some("pcw:S:00000001".into());
        let record: Value = serde_json::from_str(&run_resume_check(&job).unwrap()).unwrap();
        assert_eq!(record["customType"], "relay/resume-check");
        assert_eq!(record["data"]["windowId"], "pcw:S:00000001");
        assert_eq!(record["data"]["result"]["status"]["code"], 4);
        assert!(record["data"]["atMs"].as_i64().unwrap() > 0);
        // The check's result is what `tool("context_handoff", …)` takes back.
        let parsed: CheckResult = serde_json::from_value(result).unwrap();
        assert_eq!(parsed.command, "echo checked; exit 4");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
