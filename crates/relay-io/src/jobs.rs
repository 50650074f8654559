//! The job runner: the work a [`Job`] names, done on a libuv worker (never on Pi's event loop),
//! each within its own bounds, answered as a [`JobOutcome`]. It decides nothing: what a result
//! or a failure means is the engine's (`relay_core::engine::door`).
//!
//! A session load is the one job whose result is not JSON: the branch it read waits under the
//! job's id until the host hands it back to the engine with the job's `Done` ([`take_loaded`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use relay_core::engine::{GitWire, Job, JobOutcome, LoadedBranch, Work};
use relay_core::integrations::StorePaths;
use serde_json::{json, Value};

use crate::boundary;

mod load;
pub use load::{load_branch, release_free_memory};

/// `mutex` locked; a thread that panicked holding it left a usable table.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Branches load jobs read, waiting for the host to hand them to the engine (keyed by job id).
fn loaded() -> &'static Mutex<HashMap<u64, LoadedBranch>> {
    static LOADED: OnceLock<Mutex<HashMap<u64, LoadedBranch>>> = OnceLock::new();
    LOADED.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The branch load job `id` read, for the engine (once).
pub fn take_loaded(id: u64) -> Option<LoadedBranch> {
    let mut map = lock(loaded());
    map.remove(&id)
}

/// What stops a job nobody waits for any more: its cancel flag, and the files it made that a
/// cancel arriving after it finished still removes (a handoff write whose result the host did
/// not wait for must not leave its files behind).
#[derive(Default)]
struct Control {
    cancelled: Arc<AtomicBool>,
    made: Mutex<Vec<PathBuf>>,
    /// The job's runner returned.
    ended: AtomicBool,
}

/// The controls of the jobs running now, and of the finished jobs whose files the engine has not
/// taken yet (keyed by job id): a job nobody waits for any more (Pi's abort, the host's deadline)
/// is stopped where its runner can stop (a resume check's process group is killed, a handoff
/// write removes what it wrote).
fn controls() -> &'static Mutex<HashMap<u64, Arc<Control>>> {
    static CONTROLS: OnceLock<Mutex<HashMap<u64, Arc<Control>>>> = OnceLock::new();
    CONTROLS.get_or_init(|| Mutex::new(HashMap::new()))
}

fn control(id: u64) -> Arc<Control> {
    let mut map = lock(controls());
    Arc::clone(map.entry(id).or_default())
}

fn cancel_flag(id: u64) -> Arc<AtomicBool> {
    Arc::clone(&control(id).cancelled)
}

/// Job `id` ended: its control goes, unless it made files a late cancel would remove (then
/// [`settled`] or [`cancel`] ends it).
fn finished(id: u64) {
    let mut map = lock(controls());
    let Some(control) = map.get(&id) else {
        return;
    };
    control.ended.store(true, Ordering::SeqCst);
    if lock(&control.made).is_empty() {
        map.remove(&id);
    }
}

/// Stop job `id` where its runner can stop: nobody waits for its result any more. Files it made
/// and reported in a result the host did not wait for are removed (the runner itself removes them
/// when the cancel comes before it reports).
pub fn cancel(id: u64) {
    let control = control(id);
    let made = {
        let mut made = lock(&control.made);
        control.cancelled.store(true, Ordering::SeqCst);
        std::mem::take(&mut *made)
    };
    for file in made {
        let _ = std::fs::remove_file(file);
    }
    // A branch read for nobody goes (it may be large).
    let _ = take_loaded(id);
    // A job that has not started keeps its control, so it starts cancelled (one that ended before
    // and left nothing behind gets an empty control too: the two look alike here).
    if control.ended.load(Ordering::SeqCst) {
        lock(controls()).remove(&id);
    }
}

/// The engine has job `id`'s result: the files it made are the engine's now.
pub fn settled(id: u64) {
    let mut map = lock(controls());
    map.remove(&id);
}

/// `files`, just written by the job of `control`, become its result unless the job was cancelled
/// meanwhile: then they are removed and false is returned. Under the control's lock, so a cancel
/// either comes first (the files go here) or finds them (and removes them itself).
fn keep_unless_cancelled(control: &Control, files: Vec<PathBuf>) -> bool {
    let mut made = lock(&control.made);
    if control.cancelled.load(Ordering::SeqCst) {
        for file in files {
            let _ = std::fs::remove_file(file);
        }
        return false;
    }
    *made = files;
    true
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

/// A handoff write stopped by its cancel (nobody waits for it): nothing of it stays.
const WRITE_CANCELLED: &str =
    "relay: the handoff write was stopped (nobody waits for it): nothing was written";

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
    let outcome = execute(&job);
    serde_json::to_string(&outcome).map_err(|e| format!("relay: cannot encode a job outcome: {e}"))
}

/// Run `job` to its outcome on the calling thread (see [`run`]).
pub fn execute(job: &Job) -> JobOutcome {
    let outcome = boundary::catch(|| {
        boundary::inject("job", &|| job.work.kind().to_string());
        run_job(job)
    });
    finished(job.id);
    outcome.unwrap_or_else(|text| {
        failed(format!(
            "relay: internal error in the {} job: {text}",
            job.work.kind()
        ))
    })
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
            crate::integrations::read_stores(&StorePaths {
                questions_home: questions_home.clone(),
                claims_file: claims_file.clone(),
                task_dir: task_dir.clone(),
            })
        }),
        Work::Facts { .. } | Work::Compact => failed(format!(
            "relay: {} jobs are the host's to run",
            job.work.kind()
        )),
        Work::ResumeCheck {
            command,
            source,
            cwd,
        } => to_value(&crate::resume_check::run_resume_check_cancellable(
            command,
            source,
            Path::new(cwd),
            cancel_flag(job.id),
        )),
        Work::StaleCheck { record } => {
            let now = crate::workspace::now_until(record, deadline(job));
            to_value(&relay_core::staleness::compare(record, &now))
        }
        Work::HandoffNumber { root, session_id } => {
            match crate::handoff_files::next_sequence(Path::new(root), session_id) {
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
        } => {
            // Esc (or the deadline) before or while the files are written: none stay, so no
            // handoff file exists without its record on the branch.
            let control = control(job.id);
            if control.cancelled.load(Ordering::SeqCst) {
                return failed(WRITE_CANCELLED);
            }
            match crate::handoff_files::write_handoff(
                Path::new(root),
                session_id,
                *sequence,
                markdown,
                sidecar,
            ) {
                Ok(path) => {
                    boundary::hold_unless("WRITE", &control.cancelled);
                    let files = vec![path.clone(), path.with_extension("json")];
                    if keep_unless_cancelled(&control, files) {
                        done(json!({ "path": path.display().to_string() }))
                    } else {
                        failed(WRITE_CANCELLED)
                    }
                }
                Err(e) => JobOutcome::Failed {
                    error: e.to_string(),
                    exists: e.kind() == std::io::ErrorKind::AlreadyExists,
                },
            }
        }
        Work::Vet { path, cap } => to_value(&crate::fsx::vet_small_file(Path::new(path), *cap)),
        Work::Load {
            file,
            session_id,
            leaf,
            pass,
        } => {
            let control = control(job.id);
            let branch = load_branch(
                Path::new(file),
                session_id.as_deref(),
                leaf.as_deref(),
                *pass,
                &control.cancelled,
            );
            let found = branch.is_some();
            if let Some(branch) = branch {
                // Under the control's lock: a cancel comes first (nothing is kept) or after
                // (it takes the branch away again).
                let _made = lock(&control.made);
                if control.cancelled.load(Ordering::SeqCst) {
                    return failed("relay: this session load is no longer wanted");
                }
                lock(loaded()).insert(job.id, branch);
            }
            release_free_memory();
            done(json!(found))
        }
    }
}

/// Git metadata for a handoff, within `deadline`; with the handoff's `files` to read, also what
/// it records of the workspace for the stale-handoff check.
pub fn collect_git(cwd: &Path, deadline: Instant, files: Option<&[String]>) -> GitWire {
    let Some(files) = files else {
        let info = crate::git::git_state_until(cwd, deadline);
        return GitWire {
            repo_root: info.repo_root,
            branch: info.branch,
            head: info.head,
            state: info.state,
            workspace: None,
        };
    };
    let (info, record) = crate::workspace::record_until(cwd, files, deadline);
    GitWire {
        repo_root: info.repo_root,
        branch: info.branch,
        head: info.head,
        state: info.state,
        workspace: Some(record),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_job(id: u64, root: &Path) -> String {
        json!({"id": id, "deadlineMs": i64::MAX, "work": {
            "kind": "writeHandoff", "root": root, "sessionId": "s", "sequence": 1,
            "markdown": "# Handoff\n", "sidecar": {"version": 1, "kind": "handoff",
                "heading": "Handoff s-1", "markdownPath": "", "sessionId": "s", "sequence": 1,
                "windowId": "w", "createdAt": "", "timestampMs": 0, "tzOffsetMinutes": 0,
                "cwd": "/", "git": {"state": "noGit"}, "goal": "g", "nextStep": "n",
                "facts": "f", "filesToRead": [], "cutSections": [],
                "fingerprint": {"atMs": 0, "text": "g"}}}})
        .to_string()
    }

    fn handoff_files(root: &Path) -> Vec<String> {
        let dir = crate::handoff_files::handoff_dir(root);
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    #[test]
    fn a_handoff_write_cancelled_after_it_finished_leaves_no_file_and_a_settled_one_keeps_its_files(
    ) {
        let root = std::env::temp_dir().join(format!("relay-io-write-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        // The host stopped waiting (Esc) while the write ran; the write finished anyway, and
        // its result never reached the engine: the cancel that follows removes both files.
        let outcome: Value = serde_json::from_str(&run(&write_job(9_001, &root)).unwrap()).unwrap();
        assert_eq!(outcome["kind"], "done", "{outcome}");
        assert_eq!(handoff_files(&root), ["s-1.json", "s-1.md"]);
        cancel(9_001);
        assert!(
            handoff_files(&root).is_empty(),
            "{:?}",
            handoff_files(&root)
        );
        assert!(!lock(controls()).contains_key(&9_001));
        // Cancelled before it ran: nothing is written.
        cancel(9_002);
        let outcome: Value = serde_json::from_str(&run(&write_job(9_002, &root)).unwrap()).unwrap();
        assert_eq!(outcome["kind"], "failed", "{outcome}");
        assert!(handoff_files(&root).is_empty());
        assert!(!lock(controls()).contains_key(&9_002));
        // The engine took the result: the files are its, and nothing is left in the table.
        let outcome: Value = serde_json::from_str(&run(&write_job(9_003, &root)).unwrap()).unwrap();
        assert_eq!(outcome["kind"], "done", "{outcome}");
        settled(9_003);
        assert!(!lock(controls()).contains_key(&9_003));
        assert_eq!(handoff_files(&root), ["s-1.json", "s-1.md"]);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
