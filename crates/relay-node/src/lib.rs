//! napi-rs binding: the `Engine` class the Pi extension holds. JSON strings cross the boundary in
//! both directions; errors come back as JS exceptions with a clear message (never a crash).
//!
//! Every entry point catches panics twice over: `#[napi(catch_unwind)]` around napi's own argument
//! and result conversion, and [`binding::Binding::guarded`] around the work, which also replaces
//! the engine and asks for a full resync (see the `binding` module). Slow effects never run on
//! Pi's event loop: `collectGit`, `collectStores`, the resume checks (`handoffResumeCheck`,
//! `resetResumeCheck`), the stale-handoff check (`staleCheck`) and the large loads are
//! `AsyncTask`s on the libuv pool, each bounded by its deadline. None of them is started by an
//! `Engine` method: napi-rs keeps the borrow of the object whose method returned an `AsyncTask`
//! until it settles, which would make every other engine call fail meanwhile. The two collections
//! are module functions; the checks and loads come back as handles (`CheckRun`, `SessionLoad`)
//! whose `run()` starts the work.
#![deny(
    clippy::all,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

pub mod binding;
pub mod boundary;

use std::path::PathBuf;
use std::time::Instant;

use binding::{Binding, Failure};
use napi::bindgen_prelude::*;
use napi::{Env, Task};
use napi_derive::napi;

fn to_js(failure: Failure) -> Error {
    match failure {
        Failure::Invalid(text) => Error::new(Status::InvalidArg, text),
        Failure::Panic(text) => Error::new(Status::GenericFailure, text),
    }
}

#[napi(catch_unwind)]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The one line Pi's TUI shows for a Relay message (`null` for a type that is not Relay's).
#[napi(catch_unwind)]
pub fn message_line(custom_type: String, content: String) -> Option<String> {
    relay_core::engine::tui::message_line(&custom_type, &content)
}

/// The tool error for a call Pi's own schema check refused (`pi_message`: Pi's error, of which
/// the extension passes at most the first 64 KiB): Pi's list of what is wrong without its copy of
/// every argument.
#[napi(catch_unwind)]
pub fn schema_refusal(tool: String, pi_message: String) -> String {
    relay_core::args::schema_refusal(&tool, &pi_message)
}

/// The message types the extension registers a TUI renderer for.
#[napi(catch_unwind)]
pub fn rendered_message_types() -> Vec<String> {
    relay_core::engine::tui::RENDERED_TYPES
        .iter()
        .map(|t| t.to_string())
        .collect()
}

/// `null` when Relay supports Pi `piVersion`, else the message to show instead of loading.
#[napi(catch_unwind)]
pub fn pi_version_refusal(pi_version: String) -> Option<String> {
    relay_core::host::pi_version_refusal(&pi_version)
}

/// The engine held by the extension: branch mirror plus every decision.
#[napi(js_name = "Engine")]
pub struct JsEngine {
    b: Binding,
}

impl Default for JsEngine {
    fn default() -> Self {
        Self::new()
    }
}

#[napi]
impl JsEngine {
    #[napi(constructor, catch_unwind)]
    pub fn new() -> Self {
        boundary::quiet_panics();
        JsEngine { b: Binding::new() }
    }

    /// Validate and apply configuration sources; returns a HookReply with one warning per problem.
    #[napi(catch_unwind)]
    pub fn configure(&mut self, json: String) -> Result<String> {
        self.b.configure(&json).map_err(to_js)
    }

    /// True after a caught panic replaced the engine: the caller must call `resync` or
    /// `loadSessionFile` (a full resync from Pi's branch) before the next event.
    #[napi(catch_unwind)]
    pub fn needs_resync(&self) -> bool {
        self.b.needs_resync()
    }

    /// Replace the mirror with a whole branch (JSON array of entries, root first).
    #[napi(catch_unwind)]
    pub fn resync(&mut self, session_id: String, entries_json: String) -> Result<()> {
        self.b.resync(&session_id, &entries_json).map_err(to_js)
    }

    /// Replace the mirror by reading the session file and taking the branch that ends at `leaf_id`.
    /// Returns false when the file does not contain that leaf (the caller then resyncs from Pi).
    #[napi(catch_unwind)]
    pub fn load_session_file(
        &mut self,
        session_id: String,
        path: String,
        leaf_id: String,
    ) -> Result<bool> {
        self.b
            .load_session_file(&session_id, &path, &leaf_id)
            .map_err(to_js)
    }

    /// Replace the mirror from a large session file on the libuv thread pool: `null` when the
    /// file is small (load it with `loadSessionFile`), else a `SessionLoad` whose `run()` is a
    /// promise of whether the file holds `leaf_id`. When it resolves, `finishLoad()` installs the
    /// branch; until then the engine keeps its current mirror.
    #[napi(catch_unwind)]
    pub fn load_session_file_in_background(
        &mut self,
        session_id: String,
        path: String,
        leaf_id: String,
    ) -> Result<Option<SessionLoad>> {
        let job = self
            .b
            .begin_load(&session_id, &path, &leaf_id)
            .map_err(to_js)?;
        Ok(job.map(|job| SessionLoad { job: Some(job) }))
    }

    /// Install the branch the newest background load replayed; false when there is none (not
    /// found, failed, or superseded by a resync or a newer load).
    #[napi(catch_unwind)]
    pub fn finish_load(&mut self) -> Result<bool> {
        self.b.finish_load().map_err(to_js)
    }

    /// Whether the mirror holds every window's texts: false after `finishLoad()` installed a
    /// large session's current window with its earlier windows skimmed, until
    /// `finishCompleteLoad()`. The history tools wait for it.
    #[napi(catch_unwind)]
    pub fn history_complete(&mut self) -> Result<bool> {
        self.b.history_complete().map_err(to_js)
    }

    /// The whole load that completes a skimmed history: `null` when the history is complete,
    /// else a `SessionLoad` whose `run()` reads the file on the libuv thread pool; then
    /// `finishCompleteLoad()` swaps it in. (A handle of its own, so that the engine is not
    /// borrowed while the load runs and the hooks go on.)
    #[napi(catch_unwind)]
    pub fn begin_complete_load(&mut self) -> Result<Option<SessionLoad>> {
        let job = self.b.begin_complete().map_err(to_js)?;
        Ok(job.map(|job| SessionLoad { job: Some(job) }))
    }

    /// Swap in the whole branch the `SessionLoad` read (with what was appended since);
    /// false when there is none or it disagrees with the mirror (then reload the session).
    #[napi(catch_unwind)]
    pub fn finish_complete_load(&mut self) -> Result<bool> {
        self.b.finish_complete().map_err(to_js)
    }

    #[napi(catch_unwind)]
    pub fn has_entry(&mut self, id: String) -> Result<bool> {
        self.b.has_entry(&id).map_err(to_js)
    }

    #[napi(catch_unwind)]
    pub fn tip_id(&mut self) -> Result<Option<String>> {
        self.b.tip_id().map_err(to_js)
    }

    #[napi(catch_unwind)]
    pub fn truncate_after(&mut self, id: Option<String>) -> Result<()> {
        self.b.truncate_after(id.as_deref()).map_err(to_js)
    }

    /// Append entries that follow the tip (JSON array, root first).
    #[napi(catch_unwind)]
    pub fn append(&mut self, entries_json: String) -> Result<()> {
        self.b.append(&entries_json).map_err(to_js)
    }

    /// Run a tool; returns a ToolReply. For `context_handoff`, `git_json` is what `collectGit`
    /// resolved to (absent: the git metadata is recorded as unknown), `resume_json` what
    /// `handoffResumeCheck` resolved to (absent: no resume check section) and
    /// `integrations_json` the `IntegrationFacts` (registries and what `collectStores` read;
    /// absent: every integration section says unavailable).
    #[napi(catch_unwind)]
    pub fn tool(
        &mut self,
        name: String,
        args_json: String,
        observation_json: String,
        git_json: Option<String>,
        resume_json: Option<String>,
        integrations_json: Option<String>,
    ) -> Result<String> {
        self.b
            .tool(
                &name,
                &args_json,
                &observation_json,
                git_json.as_deref(),
                resume_json.as_deref(),
                integrations_json.as_deref(),
            )
            .map_err(to_js)
    }

    /// Whether the window's watch check is still to run (cheap; the `context` hook asks before
    /// every request and reads the jobs registry only on `true`).
    #[napi(catch_unwind)]
    pub fn watch_check_due(&mut self) -> Result<bool> {
        self.b.watch_check_due().map_err(to_js)
    }

    /// The window's watch check against the live jobs registry (`jobs_json`: its records as a
    /// JSON array, `null`: no registry): the `Marker` JSON to append, or `null`.
    #[napi(catch_unwind)]
    pub fn watch_check(
        &mut self,
        jobs_json: Option<String>,
        now_ms: i64,
    ) -> Result<Option<String>> {
        self.b
            .watch_check(jobs_json.as_deref(), now_ms)
            .map_err(to_js)
    }

    /// The `ContextMessage` JSON of the window's watch check, or `null`.
    #[napi(catch_unwind)]
    pub fn watch_context(&mut self) -> Result<Option<String>> {
        self.b.watch_context().map_err(to_js)
    }

    /// The operator's resume check to run right before the handoff `args_json` is written:
    /// `null` when none runs (the engine decides: command configured, enforce, not a subagent,
    /// a handoff that will be written), else a `CheckRun` whose `run()` is a promise of the
    /// result JSON for `tool`. The
    /// command runs on the libuv thread pool, never on the event loop.
    #[napi(catch_unwind)]
    pub fn handoff_resume_check(
        &mut self,
        args_json: String,
        moment_json: String,
        git_json: Option<String>,
        facts_json: String,
    ) -> Result<Option<CheckRun>> {
        let job = self
            .b
            .handoff_resume_check(&args_json, &moment_json, git_json.as_deref(), &facts_json)
            .map_err(to_js)?;
        Ok(job.map(|job| CheckRun::new(CheckJob::Resume(job))))
    }

    /// Whether the window's after-reset resume check is still to run (cheap; the `context` hook
    /// asks before every request and collects the facts only on `true`).
    #[napi(catch_unwind)]
    pub fn resume_check_due(&mut self) -> Result<bool> {
        self.b.resume_check_due().map_err(to_js)
    }

    /// The after-reset resume check: `null` when none runs, else a `CheckRun` whose `run()` is a
    /// promise of the `Marker` JSON
    /// to append (the result recorded for its window). Runs on the libuv thread pool.
    #[napi(catch_unwind)]
    pub fn reset_resume_check(
        &mut self,
        moment_json: String,
        facts_json: String,
    ) -> Result<Option<CheckRun>> {
        let job = self
            .b
            .reset_resume_check(&moment_json, &facts_json)
            .map_err(to_js)?;
        Ok(job.map(|job| CheckRun::new(CheckJob::Resume(job))))
    }

    /// The `ContextMessage` JSON the `context` hook inserts into this window's requests, or
    /// `null`.
    #[napi(catch_unwind)]
    pub fn resume_context(&mut self) -> Result<Option<String>> {
        self.b.resume_context().map_err(to_js)
    }

    /// Feed one observation; returns a HookReply.
    #[napi(catch_unwind)]
    pub fn handle(&mut self, observation_json: String) -> Result<String> {
        self.b.handle(&observation_json).map_err(to_js)
    }

    /// The model's arguments for the tool `name` with Codex-style aliases renamed, or the tool
    /// error for an unknown argument: `{"args": …}` or `{"error": text}` (Pi's `prepareArguments`).
    #[napi(catch_unwind)]
    pub fn prepare_arguments(&mut self, name: String, args_json: String) -> Result<String> {
        self.b.prepare_arguments(&name, &args_json).map_err(to_js)
    }

    /// The tools' names, labels and descriptions.
    #[napi(catch_unwind)]
    pub fn tool_specs(&mut self) -> Result<String> {
        self.b.tool_specs().map_err(to_js)
    }

    /// Whether the window's stale-handoff check is still to run (cheap; the `context` hook asks
    /// before every request).
    #[napi(catch_unwind)]
    pub fn stale_check_due(&mut self) -> Result<bool> {
        self.b.stale_check_due().map_err(to_js)
    }

    /// The window's stale-handoff check: `null` when none runs, else a `CheckRun` whose `run()` is
    /// a promise of the `Marker`
    /// JSON to append (what differs between the workspace the handoff recorded and now). Git and
    /// the file reads run on the libuv thread pool within one deadline
    /// (`relay_io::workspace::RESUME_DEADLINE`, counted from this call).
    #[napi(catch_unwind)]
    pub fn stale_check(&mut self) -> Result<Option<CheckRun>> {
        let job = self.b.stale_check().map_err(to_js)?;
        Ok(job.map(|job| CheckRun::new(CheckJob::Stale(job))))
    }

    /// The `ContextMessage` JSON of the window's stale-handoff check, or `null` (none, or
    /// nothing differed).
    #[napi(catch_unwind)]
    pub fn stale_context(&mut self) -> Result<Option<String>> {
        self.b.stale_context().map_err(to_js)
    }
}

/// Collect the git metadata of a handoff for `cwd` on the libuv thread pool, all commands within
/// one deadline (`relay_io::git::GIT_DEADLINE`, counted from this call); resolves to the facts to
/// pass to `tool("context_handoff", ...)`. Given the handoff's arguments (`args_json`), also what
/// the handoff records of the workspace for the stale-handoff check (uncommitted files, stamps of
/// those and of its files to read), within the same deadline. Never blocks the event loop.
///
/// A module function, not an `Engine` method: napi-rs keeps the borrow of a method's `self` until
/// the task it returns settles, so every other call into the engine (the hooks of the tool calls
/// Pi runs beside this one) would fail meanwhile.
#[napi(catch_unwind, ts_return_type = "Promise<string>")]
pub fn collect_git(cwd: String, args_json: Option<String>) -> AsyncTask<CollectGit> {
    AsyncTask::new(CollectGit {
        cwd: PathBuf::from(cwd),
        deadline: Instant::now() + relay_io::git::GIT_DEADLINE,
        args_json,
    })
}

/// Read the optional integrations' stores on disk (pending questions, issue claims, this
/// session's subagent task directory) on the libuv thread pool; `facts_json` is a `StoreFacts`.
/// Resolves to the `StoreContents` JSON for `tool("context_handoff", …)`. A module function for
/// the reason `collect_git` is.
#[napi(catch_unwind, ts_return_type = "Promise<string>")]
pub fn collect_stores(facts_json: String) -> AsyncTask<CollectStores> {
    AsyncTask::new(CollectStores { facts_json })
}

/// A check the engine prepared (a resume check or the stale-handoff check), apart from the
/// engine: its `run()` borrows only this handle while the work runs, so the engine stays free for
/// the hooks (napi-rs holds the borrow of whatever returned an `AsyncTask` until it settles).
#[napi]
pub struct CheckRun {
    job: Option<CheckJob>,
}

/// What a [`CheckRun`] runs.
enum CheckJob {
    Resume(binding::ResumeJob),
    Stale(binding::StaleJob),
}

impl CheckRun {
    fn new(job: CheckJob) -> Self {
        CheckRun { job: Some(job) }
    }
}

#[napi]
impl CheckRun {
    /// Run the check on the libuv thread pool (once): a promise of its JSON.
    #[napi(catch_unwind, ts_return_type = "Promise<string>")]
    pub fn run(&mut self) -> Result<AsyncTask<RunCheck>> {
        let job = self
            .job
            .take()
            .ok_or_else(|| Error::from_reason("relay: this check already ran"))?;
        Ok(AsyncTask::new(RunCheck { job }))
    }
}

/// The work of a [`CheckRun`] on a worker thread.
pub struct RunCheck {
    job: CheckJob,
}

impl Task for RunCheck {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> Result<String> {
        // Runs on a libuv worker: both catch panics themselves.
        match &self.job {
            CheckJob::Resume(job) => binding::run_resume_check(job),
            CheckJob::Stale(job) => binding::run_stale_check(job),
        }
        .map_err(to_js)
    }

    fn resolve(&mut self, _env: Env, output: String) -> Result<String> {
        Ok(output)
    }
}

/// The work of `collectStores`: blocking file reads on a worker thread.
pub struct CollectStores {
    facts_json: String,
}

impl Task for CollectStores {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> Result<String> {
        // Runs on a libuv worker: `collect_stores` catches panics itself.
        binding::collect_stores(&self.facts_json).map_err(to_js)
    }

    fn resolve(&mut self, _env: Env, output: String) -> Result<String> {
        Ok(output)
    }
}

/// A whole load of a session file, apart from the engine (`Engine.beginCompleteLoad()`).
#[napi]
pub struct SessionLoad {
    job: Option<binding::LoadJob>,
}

#[napi]
impl SessionLoad {
    /// Read and replay the file on the libuv thread pool (once): a promise of whether the file
    /// holds the leaf.
    #[napi(catch_unwind, ts_return_type = "Promise<boolean>")]
    pub fn run(&mut self) -> Result<AsyncTask<LoadSession>> {
        let job = self
            .job
            .take()
            .ok_or_else(|| Error::from_reason("relay: this session load already ran"))?;
        Ok(AsyncTask::new(LoadSession { job }))
    }
}

/// The work of `loadSessionFileInBackground`: reading and replaying a session file on a worker.
pub struct LoadSession {
    job: binding::LoadJob,
}

impl Task for LoadSession {
    type Output = bool;
    type JsValue = bool;

    fn compute(&mut self) -> Result<bool> {
        // Runs on a libuv worker: `run_load` catches panics itself.
        binding::run_load(&self.job).map_err(to_js)
    }

    fn resolve(&mut self, _env: Env, output: bool) -> Result<bool> {
        Ok(output)
    }
}

/// The work of `collectGit`: blocking git commands (and the handoff's file stamps) on a worker
/// thread.
pub struct CollectGit {
    cwd: PathBuf,
    deadline: Instant,
    args_json: Option<String>,
}

impl Task for CollectGit {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> Result<String> {
        // Runs on a libuv worker: `collect_git` catches panics itself (none may unwind into C).
        binding::collect_git(&self.cwd, self.deadline, self.args_json.as_deref()).map_err(to_js)
    }

    fn resolve(&mut self, _env: Env, output: String) -> Result<String> {
        Ok(output)
    }
}
