//! `pi-session` (also `relay session`): runs the real Pi and, when Relay asks for it, starts a
//! fresh Pi that continues from the handoff.
//!
//! # Contract
//!
//! - Pi is `PI_SESSION_PI` (default `pi`), started with the user's arguments (the wrapper's own
//!   `--` removed, [`args`]) in the wrapper's working directory and terminal: it inherits stdin,
//!   stdout and stderr and stays in the wrapper's process group, so the terminal's Ctrl-C and
//!   Ctrl-\ reach Pi directly. The wrapper survives SIGINT and SIGQUIT itself and passes
//!   SIGTERM and SIGHUP on to Pi (a signalled wrapper never relaunches).
//! - Each launch gets `PI_RELAUNCH_MARKER` (`<marker dir>/<wrapper pid>-<nonce>.json`, a fresh
//!   nonce every launch, [`marker`]), `PI_RELAUNCH_KEY_FILE` (the path of a file holding this
//!   launch's fresh key, mode 0600, which Relay takes and removes when it loads),
//!   `PI_SESSION_WRAPPER`, `PI_SESSION_WRAPPER_PID` and `PI_SESSION_LAUNCH_ID` (the nonce).
//!   The key file is removed once Pi has exited, whatever happened. `--mode rpc` runs Pi once
//!   without them: an RPC client reconnects by itself.
//! - Pi exits 0 and the marker of this very launch is valid, signed with this launch's key: the
//!   marker is consumed (removed) and a fresh Pi starts with the options minus session selectors, `@<launchPrompt>` when
//!   given, and [`continue_prompt`]. At most `PI_SESSION_MAX_RELAUNCHES_PER_HOUR` (default 5)
//!   relaunches in any rolling hour of this invocation.
//! - Anything else ends the wrapper with Pi's exit status (128 + the signal number when Pi was
//!   killed by a signal, 143 for SIGTERM). A marker that is present but refused (non-zero exit,
//!   signal, invalid, unsigned or forged, stale pid, forged or reused nonce, limit) is kept, and one `pi-session:`
//!   line on stderr says why.

pub mod args;
pub mod marker;

use std::collections::{HashSet, VecDeque};
use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};

/// The exit status for the wrapper's own errors (bad arguments or environment, Pi not found).
const USAGE_ERROR: u8 = 2;
const HOUR: Duration = Duration::from_secs(3600);
const DEFAULT_MAX_PER_HOUR: u32 = 5;

/// The prompt a relaunched Pi starts with. The model reads it (snapshot-tested).
pub fn continue_prompt(handoff: &str) -> String {
    format!(
        "Continue the previous session's work from its handoff file {handoff}. This is a fresh \
         process: the earlier conversation is not here. Read the handoff first, then verify its \
         facts against the workspace, git (HEAD, status) and any external state it names, and \
         continue from its Next step without asking the user to restate the task."
    )
}

/// The wrapper's settings from its environment.
#[derive(Debug)]
struct Config {
    pi: OsString,
    marker_dir: PathBuf,
    max_per_hour: u32,
}

fn config_from_env() -> Result<Config, String> {
    let pi = std::env::var_os("PI_SESSION_PI")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "pi".into());
    let marker_dir = match std::env::var_os("PI_SESSION_MARKER_DIR").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => agent_dir()?.join("relaunch"),
    };
    if !marker_dir.is_absolute() {
        return Err(format!(
            "PI_SESSION_MARKER_DIR must be an absolute path, got {}",
            marker_dir.display()
        ));
    }
    let max_per_hour = match std::env::var_os("PI_SESSION_MAX_RELAUNCHES_PER_HOUR") {
        None => DEFAULT_MAX_PER_HOUR,
        Some(v) => v
            .to_str()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .ok_or_else(|| {
                format!(
                    "PI_SESSION_MAX_RELAUNCHES_PER_HOUR must be a whole number (0 turns relaunching off), got {:?}",
                    v.to_string_lossy()
                )
            })?,
    };
    Ok(Config {
        pi,
        marker_dir,
        max_per_hour,
    })
}

/// Pi's agent directory as Pi computes it: `PI_CODING_AGENT_DIR` (a leading `~` expanded), else
/// `~/.pi/agent`.
fn agent_dir() -> Result<PathBuf, String> {
    let home = || {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| {
                "HOME is not set, so Pi's agent directory is unknown; set PI_SESSION_MARKER_DIR"
                    .to_string()
            })
    };
    match std::env::var_os("PI_CODING_AGENT_DIR").filter(|v| !v.is_empty()) {
        Some(d) => {
            let s = d.to_string_lossy();
            if s == "~" {
                home()
            } else if let Some(rest) = s.strip_prefix("~/") {
                Ok(home()?.join(rest))
            } else {
                Ok(PathBuf::from(d))
            }
        }
        None => Ok(home()?.join(".pi").join("agent")),
    }
}

/// Signals to the wrapper: SIGTERM and SIGHUP go on to Pi; SIGINT and SIGQUIT are left to the
/// terminal (which sends them to the whole foreground process group, Pi included). Any of the
/// forwarded ones means the wrapper was asked to stop: no relaunch after it.
struct Signals {
    child: Arc<AtomicI32>,
    stop: Arc<AtomicBool>,
}

impl Signals {
    fn install() -> Result<Signals, String> {
        let child = Arc::new(AtomicI32::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT, SIGQUIT])
            .map_err(|e| format!("cannot install signal handlers: {e}"))?;
        let (c, s) = (Arc::clone(&child), Arc::clone(&stop));
        std::thread::Builder::new()
            .name("pi-session-signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    let forward = match sig {
                        SIGTERM => rustix::process::Signal::TERM,
                        SIGHUP => rustix::process::Signal::HUP,
                        _ => continue,
                    };
                    s.store(true, Ordering::SeqCst);
                    if let Some(pid) = rustix::process::Pid::from_raw(c.load(Ordering::SeqCst)) {
                        let _ = rustix::process::kill_process(pid, forward);
                    }
                }
            })
            .map_err(|e| format!("cannot start the signal thread: {e}"))?;
        Ok(Signals { child, stop })
    }
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("pi-session: {msg}");
    ExitCode::from(USAGE_ERROR)
}

/// Refuse a relaunch: the marker (when there is one) is kept.
fn refuse(msg: impl std::fmt::Display, code: u8) -> ExitCode {
    eprintln!("pi-session: not relaunching: {msg}");
    ExitCode::from(code)
}

/// The wrapper. `args` are Pi's arguments (without the program name).
/// The wrapper's own help (`pi-session --help`, `relay session --help`): what it does and the
/// variables it reads. Pi's options are Pi's (`pi --help`).
pub const HELP: &str = "\
pi-session: run Pi and relaunch it once from Relay's handoff when the window cannot go on

Usage: pi-session [PI OPTIONS] [-- @/abs/launch.md REQUEST]
       relay session [PI OPTIONS] [-- @/abs/launch.md REQUEST]

Every argument is Pi's (see `pi --help`); the wrapper removes its own `--` and, on a relaunch,
Pi's session selectors (-c/--continue, -r/--resume, --session, --session-id, --fork). A relaunch
happens only when Pi exits 0 after Relay wrote this launch's marker, signed with this launch's
key; anything else ends the wrapper with Pi's exit status.

Environment:
  PI_SESSION_PI                        the Pi to run (default: pi on PATH)
  PI_SESSION_MARKER_DIR                absolute folder for relaunch markers
                                       (default: <Pi agent dir>/relaunch)
  PI_SESSION_MAX_RELAUNCHES_PER_HOUR   relaunches allowed in any rolling hour (default 5, 0 = never)
  PI_CODING_AGENT_DIR                  Pi's agent dir (default ~/.pi/agent)

Set for Pi on each launch: PI_RELAUNCH_MARKER, PI_RELAUNCH_KEY_FILE, PI_SESSION_WRAPPER,
PI_SESSION_WRAPPER_PID, PI_SESSION_LAUNCH_ID; Relay removes them from Pi's environment when it
loads. `--mode rpc` runs Pi once without them.
";

/// `--help` or `-h` before the wrapper's `--` asks for the wrapper's help, not Pi's.
fn wants_help(args: &[OsString]) -> bool {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--help" || a == "-h")
}

pub fn run(args: Vec<OsString>) -> ExitCode {
    if wants_help(&args) {
        print!("{HELP}");
        return ExitCode::SUCCESS;
    }
    let parsed = match args::parse(args) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let cfg = match config_from_env() {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let cwd = match std::env::current_dir() {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot read the working directory: {e}")),
    };
    if parsed.rpc {
        // RPC: Pi once, without the relaunch contract.
        let mut cmd = Command::new(&cfg.pi);
        cmd.args(parsed.first_launch());
        for v in [
            "PI_RELAUNCH_MARKER",
            "PI_RELAUNCH_KEY_FILE",
            "PI_SESSION_WRAPPER",
            "PI_SESSION_WRAPPER_PID",
            "PI_SESSION_LAUNCH_ID",
        ] {
            cmd.env_remove(v);
        }
        let signals = match Signals::install() {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        return match spawn_wait(&mut cmd, &signals) {
            Ok(code) => ExitCode::from(code),
            Err(e) => fail(format!("cannot run {}: {e}", cfg.pi.to_string_lossy())),
        };
    }
    if let Err(e) = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&cfg.marker_dir)
    {
        return fail(format!(
            "cannot create the marker directory {}: {e}",
            cfg.marker_dir.display()
        ));
    }
    let signals = match Signals::install() {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let pid = std::process::id();
    let mut used: HashSet<String> = HashSet::new();
    let mut relaunches: VecDeque<Instant> = VecDeque::new();
    let mut argv = parsed.first_launch();
    loop {
        let launch = match marker::new_launch(&cfg.marker_dir, pid, &used) {
            Ok(l) => l,
            Err(e) => return fail(e),
        };
        let mut cmd = Command::new(&cfg.pi);
        cmd.args(&argv)
            .env("PI_RELAUNCH_MARKER", &launch.path)
            .env("PI_RELAUNCH_KEY_FILE", &launch.key_path)
            .env(
                "PI_SESSION_WRAPPER",
                concat!("pi-session ", env!("CARGO_PKG_VERSION")),
            )
            .env("PI_SESSION_WRAPPER_PID", pid.to_string())
            .env("PI_SESSION_LAUNCH_ID", &launch.nonce);
        let ran = spawn_wait(&mut cmd, &signals);
        // Relay removed the key file when it loaded; without Relay (or when Pi never started) it
        // is removed here. The key stays in memory to verify the marker.
        let _ = std::fs::remove_file(&launch.key_path);
        let code = match ran {
            Ok(c) => c,
            Err(e) => return fail(format!("cannot run {}: {e}", cfg.pi.to_string_lossy())),
        };
        match decide(
            &cfg,
            &cwd,
            pid,
            &launch,
            &used,
            &mut relaunches,
            code,
            &signals,
        ) {
            Next::Exit(code) => return code,
            Next::Relaunch(m) => {
                used.insert(launch.nonce.clone());
                // The marker is spent; the next launch gets its own.
                let _ = std::fs::remove_file(&launch.path);
                eprintln!(
                    "pi-session: relaunching pi in a fresh process from the handoff {} ({} of {} relaunches in the last hour)",
                    m.handoff,
                    relaunches.len(),
                    cfg.max_per_hour
                );
                argv = parsed.relaunch(m.launch_prompt.as_deref(), &continue_prompt(&m.handoff));
            }
        }
    }
}

enum Next {
    Exit(ExitCode),
    Relaunch(marker::RelaunchMarker),
}

/// After Pi exited with `code`: relaunch, or exit with `code` (saying why when a marker was left).
#[allow(clippy::too_many_arguments)]
fn decide(
    cfg: &Config,
    cwd: &Path,
    pid: u32,
    launch: &marker::Launch,
    used: &HashSet<String>,
    relaunches: &mut VecDeque<Instant>,
    code: u8,
    signals: &Signals,
) -> Next {
    let present = launch.path.symlink_metadata().is_ok();
    let kept = || format!("the marker {} is kept", launch.path.display());
    if signals.stop.load(Ordering::SeqCst) {
        return Next::Exit(if present {
            refuse(
                format!(
                    "pi-session was asked to stop (SIGTERM or SIGHUP); {}",
                    kept()
                ),
                code,
            )
        } else {
            ExitCode::from(code)
        });
    }
    if code != 0 {
        if !present {
            return Next::Exit(ExitCode::from(code));
        }
        let why = if code > 128 {
            format!(
                "pi exited with status {code} (signal {}); only exit 0 allows a relaunch",
                code - 128
            )
        } else {
            format!("pi exited with status {code}; only exit 0 allows a relaunch")
        };
        return Next::Exit(refuse(format!("{why}; {}", kept()), code));
    }
    if !present {
        return Next::Exit(
            match marker::explain_missing(&cfg.marker_dir, pid, launch, used) {
                Some(why) => refuse(format!("{why}; kept"), 0),
                None => ExitCode::SUCCESS,
            },
        );
    }
    let m = match marker::read_valid(&launch.path, cwd, &launch.key) {
        Ok(m) => m,
        Err(why) => return Next::Exit(refuse(format!("invalid marker: {why}; {}", kept()), 0)),
    };
    let now = Instant::now();
    while relaunches
        .front()
        .is_some_and(|t| now.duration_since(*t) >= HOUR)
    {
        relaunches.pop_front();
    }
    if relaunches.len() >= cfg.max_per_hour as usize {
        return Next::Exit(refuse(
            format!(
                "{} relaunches in the last hour already (PI_SESSION_MAX_RELAUNCHES_PER_HOUR={}); {}",
                relaunches.len(),
                cfg.max_per_hour,
                kept()
            ),
            0,
        ));
    }
    relaunches.push_back(now);
    Next::Relaunch(m)
}

/// Run Pi to its end; its exit status, 128 + the signal number when a signal ended it.
fn spawn_wait(cmd: &mut Command, signals: &Signals) -> std::io::Result<u8> {
    let mut child = cmd.spawn()?;
    let raw = i32::try_from(child.id()).unwrap_or(0);
    signals.child.store(raw, Ordering::SeqCst);
    // A SIGTERM that arrived before the pid was known is passed on now.
    if signals.stop.load(Ordering::SeqCst) {
        if let Some(pid) = rustix::process::Pid::from_raw(raw) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
    }
    let status = child.wait()?;
    signals.child.store(0, Ordering::SeqCst);
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c & 0xff).unwrap_or(1),
        (None, Some(s)) => u8::try_from((128 + s) & 0xff).unwrap_or(1),
        (None, None) => 1,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn continue_prompt_text() {
        insta::assert_snapshot!(super::continue_prompt("/w/.ai-work/handoffs/S1-2.md"));
    }
}
