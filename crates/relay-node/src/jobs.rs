//! The job runner: the work a [`Job`] names, done on a libuv worker (never on Pi's event loop),
//! each within its own bounds, answered as a [`JobOutcome`]. It decides nothing: what a result
//! or a failure means is the engine's (`relay_core::engine::door`).
//!
//! A session load is the one job whose result is not JSON: the binding registers the prepared
//! [`LoadJob`] under the job's id ([`register_load`]) and the runner takes it from there; the
//! branch it read waits in the job's slot for the binding.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use relay_core::engine::{GitWire, Job, JobOutcome, Work};
use relay_core::integrations::StorePaths;
use serde_json::{json, Value};

use crate::binding::{self, LoadJob};
use crate::boundary;

/// `mutex` locked; a thread that panicked holding it left a usable table.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Loads prepared by a binding, waiting for their job to run (keyed by job id).
fn loads() -> &'static Mutex<HashMap<u64, LoadJob>> {
    static LOADS: OnceLock<Mutex<HashMap<u64, LoadJob>>> = OnceLock::new();
    LOADS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Hand a prepared load to the runner under job id `id`.
pub fn register_load(id: u64, job: LoadJob) {
    let mut map = lock(loads());
    map.insert(id, job);
}

/// Drop a prepared load that will not run (superseded).
pub fn forget_load(id: u64) {
    let mut map = lock(loads());
    map.remove(&id);
}

/// The cancel flags of the jobs running now (keyed by job id): a job nobody waits for any more
/// (Pi's abort) is stopped where its runner can stop (a resume check's process group is killed).
fn cancels() -> &'static Mutex<HashMap<u64, Arc<AtomicBool>>> {
    static CANCELS: OnceLock<Mutex<HashMap<u64, Arc<AtomicBool>>>> = OnceLock::new();
    CANCELS.get_or_init(|| Mutex::new(HashMap::new()))
}

fn cancel_flag(id: u64) -> Arc<AtomicBool> {
    let mut map = lock(cancels());
    Arc::clone(map.entry(id).or_default())
}

fn forget_cancel(id: u64) {
    let mut map = lock(cancels());
    map.remove(&id);
}

/// Stop job `id` where its runner can stop: nobody waits for its result any more.
pub fn cancel(id: u64) {
    cancel_flag(id).store(true, Ordering::Relaxed);
}

fn take_load(id: u64) -> Option<LoadJob> {
    let mut map = lock(loads());
    map.remove(&id)
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The job's deadline as an instant of this process.
fn deadline(job: &Job) -> Instant {
    let left = job.deadline_ms.saturating_sub(now_ms()).max(0);
    Instant::now() + Duration::from_millis(u64::try_from(left).unwrap_or(0))
}

fn failed(error: impl Into<String>) -> JobOutcome {
    JobOutcome::Failed {
        error: error.into(),
        exists: false,
    }
}

fn done(value: Value) -> JobOutcome {
    JobOutcome::Done {
        value,
        at_ms: now_ms(),
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> JobOutcome {
    match serde_json::to_value(value) {
        Ok(value) => done(value),
        Err(e) => failed(format!("relay: cannot encode a job result: {e}")),
    }
}

/// Run `job_json` (a [`Job`]) to its outcome, as JSON. Blocking: called on a libuv worker. A
/// malformed job is an error; everything that goes wrong while running it (a panic included) is
/// a `failed` outcome, never an unwinding.
pub fn run(job_json: &str) -> Result<String, String> {
    let job: Job =
        serde_json::from_str(job_json).map_err(|e| format!("relay: invalid job: {e}"))?;
    let outcome = boundary::catch(|| {
        boundary::inject("job", &|| kind(&job.work).to_string());
        run_job(&job)
    });
    forget_cancel(job.id);
    let outcome = outcome.unwrap_or_else(|text| {
        failed(format!(
            "relay: internal error in the {} job: {text}",
            kind(&job.work)
        ))
    });
    serde_json::to_string(&outcome).map_err(|e| format!("relay: cannot encode a job outcome: {e}"))
}

fn kind(work: &Work) -> &'static str {
    match work {
        Work::Git { .. } => "git",
        Work::Stores { .. } => "stores",
        Work::Facts { .. } => "facts",
        Work::ResumeCheck { .. } => "resumeCheck",
        Work::StaleCheck { .. } => "staleCheck",
        Work::HandoffNumber { .. } => "handoffNumber",
        Work::WriteHandoff { .. } => "writeHandoff",
        Work::Load { .. } => "load",
    }
}

fn run_job(job: &Job) -> JobOutcome {
    match &job.work {
        Work::Git { cwd, files } => to_value(&collect_git(
            Path::new(cwd),
            deadline(job),
            files.as_deref(),
        )),
        Work::Stores {
            questions_home,
            claims_file,
            task_dir,
        } => to_value(&{
            boundary::hold("STORES");
            relay_io::integrations::read_stores(&StorePaths {
                questions_home: questions_home.clone(),
                claims_file: claims_file.clone(),
                task_dir: task_dir.clone(),
            })
        }),
        Work::Facts { .. } => failed("relay: facts jobs are the host's to run"),
        Work::ResumeCheck {
            command,
            source,
            cwd,
        } => to_value(&relay_io::resume_check::run_resume_check_cancellable(
            command,
            source,
            Path::new(cwd),
            cancel_flag(job.id),
        )),
        Work::StaleCheck { record } => {
            let now = relay_io::workspace::now_until(record, deadline(job));
            to_value(&relay_core::staleness::compare(record, &now))
        }
        Work::HandoffNumber { root, session_id } => {
            match relay_io::handoff_files::next_sequence(Path::new(root), session_id) {
                Ok(n) => done(json!(n)),
                Err(e) => failed(e.to_string()),
            }
        }
        Work::WriteHandoff {
            root,
            session_id,
            sequence,
            markdown,
            sidecar,
        } => match relay_io::handoff_files::write_handoff(
            Path::new(root),
            session_id,
            *sequence,
            markdown,
            sidecar,
        ) {
            Ok(path) => done(json!({ "path": path.display().to_string() })),
            Err(e) => JobOutcome::Failed {
                error: e.to_string(),
                exists: e.kind() == std::io::ErrorKind::AlreadyExists,
            },
        },
        Work::Load { .. } => match take_load(job.id) {
            Some(load) => match binding::run_load(&load) {
                Ok(found) => done(json!(found)),
                Err(e) => failed(e.text().to_string()),
            },
            None => failed("relay: this session load is no longer wanted"),
        },
    }
}

/// Git metadata for a handoff, within `deadline`; with the handoff's `files` to read, also what
/// it records of the workspace for the stale-handoff check.
pub fn collect_git(cwd: &Path, deadline: Instant, files: Option<&[String]>) -> GitWire {
    let Some(files) = files else {
        let info = relay_io::git::git_state_until(cwd, deadline);
        return GitWire {
            repo_root: info.repo_root,
            branch: info.branch,
            head: info.head,
            state: info.state,
            workspace: None,
        };
    };
    let (info, record) = relay_io::workspace::record_until(cwd, files, deadline);
    GitWire {
        repo_root: info.repo_root,
        branch: info.branch,
        head: info.head,
        state: info.state,
        workspace: Some(record),
    }
}
