//! The operator's resume check: `bash -c <command>` in the session's cwd, bounded in time and in
//! memory, its outcome always a [`CheckResult`] (never an error, never a panic).
//!
//! - The command runs in its own process group with stdin closed; stdout and stderr share one
//!   pipe, read without blocking into a bounded capture (the first and the last 4 KiB, the rest
//!   counted and dropped), so a flood of output costs no memory and never blocks the command.
//! - The timeout ([`CHECK_TIMEOUT`], 30 s) kills the whole process group; the output then has at
//!   most [`DRAIN_LIMIT`] (1 s) to drain. When the direct child exits, the same drain limit
//!   applies, so a background process that inherited the pipe cannot hang the check; afterwards
//!   the process group is killed, so nothing the check started in its group survives it.
//!   (A descendant that moved to a group of its own escapes: checks should not daemonize.)
//! - The process group's leader is reaped only after the group was killed: its id cannot be
//!   reused by an unrelated group meanwhile.
//!
//! This blocks its thread for up to the timeout plus the drain limit: the addon runs it on a
//! worker thread, never on Pi's event loop.

use std::ffi::OsString;
use std::io::{ErrorKind, PipeReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::process::{kill_process_group, waitid, Pid, Signal, WaitId, WaitIdOptions};

pub use relay_core::resume_check::{CheckOutput, CheckResult, CheckStatus};

/// How long the command may run before its process group is killed.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the output may still drain after the command exited or was killed.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(1);
/// Bytes kept from the start and from the end of the output (the rendered result has 4 KiB).
const KEEP: usize = 4096;
/// Bytes read per poll round before the clock is looked at again (a flood cannot starve it).
const READ_ROUND: usize = 1 << 20;

/// How to run a check: the shell, the limits, and extra environment (tests shorten the limits
/// and empty `PATH`).
#[derive(Debug, Clone)]
pub struct Runner {
    pub program: OsString,
    pub timeout: Duration,
    pub drain: Duration,
    pub env: Vec<(OsString, OsString)>,
    /// Set by whoever stopped waiting for the check (Pi's abort): the command's process group is
    /// killed at once, as at the timeout.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Default for Runner {
    fn default() -> Self {
        Runner {
            program: "bash".into(),
            timeout: CHECK_TIMEOUT,
            drain: DRAIN_LIMIT,
            env: Vec::new(),
            cancel: None,
        }
    }
}

/// The first and last bytes of the output, and how many lay between them.
#[derive(Default)]
struct Capture {
    head: Vec<u8>,
    tail: Vec<u8>,
    skipped: u64,
    total: u64,
}

impl Capture {
    fn push(&mut self, mut bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len() as u64);
        let room = KEEP.saturating_sub(self.head.len());
        if room > 0 {
            let (first, rest) = bytes.split_at(room.min(bytes.len()));
            self.head.extend_from_slice(first);
            bytes = rest;
        }
        if bytes.len() >= KEEP {
            self.skipped += (self.tail.len() + bytes.len() - KEEP) as u64;
            self.tail.clear();
            self.tail
                .extend_from_slice(bytes.get(bytes.len() - KEEP..).unwrap_or_default());
        } else {
            self.tail.extend_from_slice(bytes);
            let excess = self.tail.len().saturating_sub(KEEP);
            if excess > 0 {
                self.tail.drain(..excess);
                self.skipped += excess as u64;
            }
        }
    }

    /// The capture as text: invalid UTF-8 replaced, no character split at the cuts.
    fn finish(mut self) -> CheckOutput {
        // A character cut at the end of the head belongs to what follows it.
        if let Err(e) = std::str::from_utf8(&self.head) {
            if e.error_len().is_none() {
                let partial = self.head.split_off(e.valid_up_to());
                if self.skipped == 0 {
                    let mut tail = partial;
                    tail.extend_from_slice(&self.tail);
                    self.tail = tail;
                } else {
                    self.skipped += partial.len() as u64;
                }
            }
        }
        if self.skipped > 0 {
            // The tail may start inside a character: drop its continuation bytes.
            let start = self
                .tail
                .iter()
                .take(3)
                .take_while(|b| (**b as i8) < -0x40)
                .count();
            self.tail.drain(..start);
            self.skipped += start as u64;
        }
        CheckOutput {
            head: String::from_utf8_lossy(&self.head).into_owned(),
            tail: String::from_utf8_lossy(&self.tail).into_owned(),
            skipped_bytes: self.skipped,
            total_bytes: self.total,
        }
    }
}

/// Read what the pipe holds now (it is non-blocking), at most [`READ_ROUND`] bytes. True at end
/// of file (every writer closed it) or on a read error.
fn read_available(pipe: &mut impl Read, capture: &mut Capture) -> bool {
    let mut buf = vec![0u8; 64 * 1024];
    let mut read = 0usize;
    while read < READ_ROUND {
        match pipe.read(&mut buf) {
            Ok(0) => return true,
            Ok(n) => {
                capture.push(buf.get(..n).unwrap_or_default());
                read += n;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
    false
}

/// Wait up to `wait` for the pipe to become readable (or closed).
fn wait_readable(pipe: &impl std::os::fd::AsFd, wait: Duration) {
    let mut fds = [PollFd::new(pipe, PollFlags::IN)];
    let timeout = Timespec {
        tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    let _ = poll(&mut fds, Some(&timeout));
}

/// Whether the child has exited, observed without reaping it (so its group can still be killed
/// safely). An error counts as exited: there is nothing left to wait for.
fn has_exited(pid: Pid) -> bool {
    !matches!(
        waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
        ),
        Ok(None)
    )
}

/// How often the child's exit is looked at while its output is quiet.
const EXIT_POLL: Duration = Duration::from_millis(10);

/// What [`Runner::watch`] saw of the command.
struct Watched {
    /// The output read so far.
    capture: Capture,
    /// The pipe reached end of file (everything holding its write end closed it).
    eof: bool,
    /// The direct child exited.
    exited: bool,
    /// The timeout passed first.
    timed_out: bool,
}

impl Runner {
    /// Run `command` (from `source`, for the label) with `bash -c` in `cwd`.
    pub fn run(&self, command: &str, source: &str, cwd: &Path) -> CheckResult {
        let result = |status, output, held| CheckResult {
            command: command.to_string(),
            source: source.to_string(),
            status,
            output,
            output_held_open: held,
        };
        let (mut reader, mut child, pid) = match self.start(command, cwd) {
            Ok(started) => started,
            Err(error) => {
                let status = CheckStatus::SpawnFailed { error };
                return result(status, CheckOutput::default(), false);
            }
        };
        let mut watched = self.watch(&mut reader, pid);
        let held_open = watched.exited && !watched.eof;
        let _ = kill_process_group(pid, Signal::KILL);
        if watched.timed_out && !watched.eof {
            // The group is killed: what it wrote may still drain, for at most the drain limit.
            self.drain_after_kill(&mut reader, &mut watched.capture);
        }
        drop(reader);
        let status = self.exit_status(&mut child, watched.timed_out);
        result(status, watched.capture.finish(), held_open)
    }

    /// Starts `command` in its own process group, stdin closed, stdout and stderr on one
    /// non-blocking pipe. The error (the check's `SpawnFailed`) says why it could not run.
    fn start(&self, command: &str, cwd: &Path) -> Result<(PipeReader, Child, Pid), String> {
        let failed = |e: &dyn std::fmt::Display| {
            format!(
                "cannot run {} in {}: {e}",
                self.program.to_string_lossy(),
                cwd.display()
            )
        };
        let (reader, writer) = std::io::pipe().map_err(|e| failed(&e))?;
        let writer2 = writer.try_clone().map_err(|e| failed(&e))?;
        let spawned = {
            let mut cmd = Command::new(&self.program);
            cmd.arg("-c")
                .arg(command)
                .current_dir(cwd)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .stdout(writer)
                .stderr(writer2)
                .process_group(0);
            cmd.spawn()
            // `cmd` drops here with this process's copies of the write end: end of file comes
            // when the command (and whatever inherited the pipe) closes it.
        };
        let mut child = spawned.map_err(|e| failed(&e))?;
        let pid = Pid::from_child(&child);
        if rustix::io::ioctl_fionbio(&reader, true).is_err() {
            let status = kill_and_reap(&mut child, pid);
            let _ = status;
            return Err(failed(&"cannot make the output pipe non-blocking"));
        }
        Ok((reader, child, pid))
    }

    /// Reads the output until the command exited and its output drained (or the drain limit
    /// passed), the timeout passed, or the check was cancelled.
    fn watch(&self, reader: &mut PipeReader, pid: Pid) -> Watched {
        let deadline = Instant::now() + self.timeout;
        let mut capture = Capture::default();
        let mut eof = false;
        let mut exited_at: Option<Instant> = None;
        let mut timed_out = false;
        loop {
            if !eof {
                eof = read_available(reader, &mut capture);
            }
            let now = Instant::now();
            if exited_at.is_none() && has_exited(pid) {
                exited_at = Some(now);
            }
            if exited_at.is_none()
                && self
                    .cancel
                    .as_ref()
                    .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
            {
                // Nobody waits for the result any more: the group is killed below.
                break;
            }
            let until = match exited_at {
                Some(at) => {
                    if eof || now >= at + self.drain {
                        break;
                    }
                    at + self.drain
                }
                None => {
                    if now >= deadline {
                        timed_out = true;
                        break;
                    }
                    deadline
                }
            };
            let wait = (until - now).min(EXIT_POLL);
            if eof {
                // Nothing more to read; only the exit is awaited.
                std::thread::sleep(wait);
            } else {
                wait_readable(reader, wait);
            }
        }
        Watched {
            capture,
            eof,
            exited: exited_at.is_some(),
            timed_out,
        }
    }

    /// After a timeout killed the group: what it wrote still drains, for at most the drain limit.
    fn drain_after_kill(&self, reader: &mut PipeReader, capture: &mut Capture) {
        let until = Instant::now() + self.drain;
        loop {
            let eof = read_available(reader, capture);
            let now = Instant::now();
            if eof || now >= until {
                break;
            }
            wait_readable(reader, (until - now).min(EXIT_POLL));
        }
    }

    /// The check's status once the group is killed: timed out, else how the command ended.
    fn exit_status(&self, child: &mut Child, timed_out: bool) -> CheckStatus {
        match child.wait() {
            _ if timed_out => CheckStatus::TimedOut {
                after_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
            },
            Ok(s) => match (s.code(), s.signal()) {
                (Some(code), _) => CheckStatus::Exited { code },
                (None, Some(signal)) => CheckStatus::Signaled { signal },
                (None, None) => CheckStatus::Exited { code: -1 },
            },
            Err(e) => CheckStatus::SpawnFailed {
                error: format!("cannot wait for the command: {e}"),
            },
        }
    }
}

/// Kill `child`'s process group, then reap `child`.
fn kill_and_reap(child: &mut Child, pid: Pid) -> Option<std::process::ExitStatus> {
    let _ = kill_process_group(pid, Signal::KILL);
    child.wait().ok()
}

/// Run the operator's `command` with the default limits (30 s, then 1 s to drain).
pub fn run_resume_check(command: &str, source: &str, cwd: &Path) -> CheckResult {
    Runner::default().run(command, source, cwd)
}

/// [`run_resume_check`], killed as soon as `cancel` is set.
pub fn run_resume_check_cancellable(
    command: &str,
    source: &str,
    cwd: &Path,
    cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> CheckResult {
    Runner {
        cancel: Some(cancel),
        ..Runner::default()
    }
    .run(command, source, cwd)
}

#[cfg(test)]
mod tests;
