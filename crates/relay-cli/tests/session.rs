//! The pi-session wrapper against a fake `pi` (tests/fixtures/fake-pi.sh): real processes, real
//! marker files, the wrapper's real exit status and stderr.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Case {
    root: PathBuf,
}

impl Case {
    /// A working directory, a marker directory and a plan for the fake pi (one line per launch).
    fn new(name: &str, plan: &[&str]) -> Case {
        let root = common::fresh_dir(&format!("pi-session-{name}"));
        fs::create_dir_all(root.join("work")).unwrap();
        fs::create_dir_all(root.join("fake")).unwrap();
        let root = root.canonicalize().unwrap();
        fs::write(root.join("fake/plan"), plan.join("\n") + "\n").unwrap();
        fs::write(root.join("fake/handoff.md"), "# Handoff\n").unwrap();
        Case { root }
    }

    fn fake(&self) -> PathBuf {
        self.root.join("fake")
    }

    fn markers(&self) -> PathBuf {
        self.root.join("markers")
    }

    fn with_launch_prompt(self) -> Case {
        fs::write(self.fake().join("launch.md"), "launch prompt\n").unwrap();
        self
    }

    fn command(&self, bin: &str, args: &[&str]) -> Command {
        let mut c = Command::new(bin);
        c.args(args)
            .current_dir(self.root.join("work"))
            .env("PI_SESSION_PI", fake_pi())
            .env("PI_SESSION_MARKER_DIR", self.markers())
            .env("FAKE_PI_DIR", self.fake())
            .env_remove("PI_SESSION_MAX_RELAUNCHES_PER_HOUR")
            .env_remove("PI_RELAUNCH_MARKER")
            .env_remove("PI_RELAUNCH_KEY_FILE")
            .env_remove("FAKE_PI_KEEP_KEY")
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(env!("CARGO_BIN_EXE_pi-session"), args)
            .output()
            .unwrap()
    }

    /// Each launch's arguments, in launch order.
    fn launches(&self) -> Vec<Vec<String>> {
        let log = fs::read_to_string(self.fake().join("log")).unwrap_or_default();
        let mut runs: Vec<Vec<String>> = Vec::new();
        for line in log.lines() {
            if line.starts_with("run ") {
                runs.push(Vec::new());
            } else if let Some(a) = line.strip_prefix("arg ") {
                runs.last_mut().unwrap().push(a.to_string());
            }
        }
        runs
    }

    /// The marker path launch `n` (1-based) was given.
    fn marker_of(&self, n: usize) -> PathBuf {
        PathBuf::from(
            fs::read_to_string(self.fake().join(format!("marker-{n}")))
                .unwrap()
                .trim(),
        )
    }

    fn marker_files(&self) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.markers())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

fn fake_pi() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-pi.sh")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const ARGS: &[&str] = &[
    "--model",
    "faux/faux-1",
    "-c",
    "--session",
    "/old/s.jsonl",
    "-nbt",
    "--plan=yes",
    "--",
    "@/abs/launch.md",
    "initial request",
];

#[test]
fn one_relaunch_after_exit_0_with_a_valid_marker() {
    let case = Case::new("ok", &["marker 0", "none 0"]).with_launch_prompt();
    let out = case.run(ARGS);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let launches = case.launches();
    assert_eq!(launches.len(), 2);
    // The first launch: the user's arguments, the wrapper's `--` removed.
    assert_eq!(
        launches[0],
        [
            "--model",
            "faux/faux-1",
            "-c",
            "--session",
            "/old/s.jsonl",
            "-nbt",
            "--plan=yes",
            "@/abs/launch.md",
            "initial request"
        ]
    );
    // The relaunch: selectors dropped, the old messages not replayed, @launchPrompt and the
    // prompt to continue from the handoff added.
    let handoff = case.fake().join("handoff.md");
    let lp = case.fake().join("launch.md");
    assert_eq!(
        launches[1],
        [
            "--model".to_string(),
            "faux/faux-1".into(),
            "-nbt".into(),
            "--plan=yes".into(),
            format!("@{}", lp.display()),
            relay_cli::session::continue_prompt(&handoff.to_string_lossy()),
        ]
    );
    // Each launch had its own marker path: the wrapper's pid and a fresh nonce.
    let (m1, m2) = (case.marker_of(1), case.marker_of(2));
    assert_ne!(m1, m2);
    let pid = out_pid(&m1);
    assert_eq!(pid, out_pid(&m2));
    assert!(!m1.exists(), "a consumed marker is removed");
    assert!(stderr(&out).contains("pi-session: relaunching pi in a fresh process from the handoff"));
    // Each launch's key file: beside its marker, readable by the user only.
    let log = fs::read_to_string(case.fake().join("log")).unwrap();
    for (n, m) in [(1, &m1), (2, &m2)] {
        let key = m.with_extension("key");
        assert!(
            log.contains(&format!(" {}\n", key.display())),
            "PI_RELAUNCH_KEY_FILE of launch {n}: {log}"
        );
        let mode = fs::read_to_string(case.fake().join(format!("keymode-{n}"))).unwrap();
        assert_eq!(mode.trim(), "-rw-------");
    }
    assert!(case.marker_files().is_empty());
}

/// The first `pi-session:` line on the wrapper's stderr.
fn refusal_line(out: &Output) -> String {
    stderr(out)
        .lines()
        .find(|l| l.starts_with("pi-session:"))
        .unwrap_or_default()
        .to_string()
}

/// Runs the fake pi's `kind` of invalid marker: refused (`why`), the refusal line says what is
/// wrong with the marker (`what`), and the marker is kept as evidence.
fn refused_invalid_marker(kind: &str, why: &str, what: &str) {
    let case = Case::new(kind, &[&format!("{kind} 0")]);
    let out = refused(&case, 0, why);
    let m = case.marker_of(1);
    assert_eq!(
        refusal_line(&out),
        format!(
            "pi-session: not relaunching: invalid marker: {m}: {what} {why}; the marker {m} is kept",
            m = m.display()
        )
    );
    assert!(m.exists(), "kept as evidence");
}

#[test]
fn no_relaunch_on_an_unsigned_marker() {
    refused_invalid_marker(
        "unsigned",
        "(unsigned marker)",
        "it is not a signed marker (unknown field `cwd`, expected `marker` or `mac` at line 1 column 6)",
    );
}

#[test]
fn no_relaunch_on_a_marker_signed_with_another_key() {
    refused_invalid_marker(
        "badmac",
        "(forged marker)",
        "its signature does not verify with this launch's key",
    );
}

#[test]
fn the_wrapper_removes_a_key_file_pi_left() {
    let case = Case::new("keykept", &["none 0"]);
    let out = case
        .command(env!("CARGO_BIN_EXE_pi-session"), ARGS)
        .env("FAKE_PI_KEEP_KEY", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(case.launches().len(), 1);
    assert!(case.marker_files().is_empty(), "{:?}", case.marker_files());
}

fn out_pid(marker: &Path) -> String {
    let name = marker.file_name().unwrap().to_string_lossy().into_owned();
    name.split('-').next().unwrap().to_string()
}

/// Runs a refusal case: exactly one launch, the given status, the marker kept, one reason line.
fn refused(case: &Case, status: i32, why: &str) -> Output {
    let out = case.run(ARGS);
    assert_eq!(out.status.code(), Some(status), "{}", stderr(&out));
    assert_eq!(case.launches().len(), 1, "no relaunch");
    let err = stderr(&out);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("pi-session:"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("pi-session: not relaunching: "),
        "{err}"
    );
    assert!(lines[0].contains(why), "{err}");
    assert_eq!(case.marker_files().len(), 1, "the marker is kept");
    out
}

#[test]
fn no_relaunch_on_a_stale_pid() {
    let case = Case::new("stale", &["stale 0"]);
    refused(&case, 0, "(stale pid)");
}

#[test]
fn no_relaunch_on_a_forged_nonce() {
    let case = Case::new("forged", &["forged 0"]);
    refused(&case, 0, "(forged nonce)");
    assert!(case
        .markers()
        .join(format!(
            "{}-0123456789abcdef0123456789abcdef.json",
            out_pid(&case.marker_of(1))
        ))
        .exists());
}

#[test]
fn no_relaunch_on_a_reused_nonce() {
    let case = Case::new("reuse", &["marker 0", "reuse 0"]);
    let out = case.run(ARGS);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        case.launches().len(),
        2,
        "one relaunch, then the reused marker is refused"
    );
    let err = stderr(&out);
    assert!(
        err.contains("pi-session: not relaunching: ") && err.contains("(reused nonce)"),
        "{err}"
    );
    assert!(case.marker_of(1).exists(), "the reused marker is kept");
}

#[test]
fn no_relaunch_on_exit_1() {
    let case = Case::new("exit1", &["marker 1"]);
    refused(
        &case,
        1,
        "pi exited with status 1; only exit 0 allows a relaunch",
    );
}

#[test]
fn no_relaunch_on_sigterm_exit_143() {
    let case = Case::new("term", &["marker TERM"]);
    refused(&case, 143, "pi exited with status 143 (signal 15)");
}

#[test]
fn no_relaunch_on_an_invalid_marker() {
    let case = Case::new("badcwd", &["badcwd 0"]);
    refused(
        &case,
        0,
        "cwd /elsewhere is not the wrapper's working directory",
    );
}

#[test]
fn the_sixth_relaunch_within_the_hour_is_refused() {
    let case = Case::new("limit", &["marker 0"]);
    let out = case.run(ARGS);
    assert_eq!(out.status.code(), Some(0));
    // The first launch and five relaunches; the sixth relaunch is refused.
    assert_eq!(case.launches().len(), 6, "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("pi-session: relaunching").count(), 5);
    assert!(err.contains("not relaunching: 5 relaunches in the last hour already (PI_SESSION_MAX_RELAUNCHES_PER_HOUR=5)"), "{err}");
    assert!(case.marker_of(6).exists(), "the refused marker is kept");
}

#[test]
fn no_marker_is_an_ordinary_exit_with_pi_status() {
    let case = Case::new("plain", &["none 3"]);
    let out = case.run(ARGS);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stderr(&out), "");
}

#[test]
fn sigterm_to_the_wrapper_reaches_pi_and_never_relaunches() {
    let case = Case::new("fwd", &["wait 0"]);
    let child = case
        .command(env!("CARGO_BIN_EXE_pi-session"), ARGS)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ready = case.fake().join("ready-1");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready.exists() {
        assert!(Instant::now() < deadline, "the fake pi never got ready");
        std::thread::yield_now();
    }
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not relaunching: pi-session was asked to stop"),
        "{}",
        stderr(&out)
    );
    assert_eq!(case.launches().len(), 1);
}

#[test]
fn a_bad_limit_names_the_variable() {
    let case = Case::new("badenv", &["marker 0"]);
    let out = case
        .command(env!("CARGO_BIN_EXE_pi-session"), ARGS)
        .env("PI_SESSION_MAX_RELAUNCHES_PER_HOUR", "five")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("PI_SESSION_MAX_RELAUNCHES_PER_HOUR must be a whole number"),
        "{}",
        stderr(&out)
    );
    assert!(case.launches().is_empty());
}

#[test]
fn relay_session_is_the_same_wrapper() {
    let case = Case::new("relay", &["marker 0", "none 0"]);
    let mut args = vec!["session"];
    args.extend_from_slice(ARGS);
    let out = case
        .command(env!("CARGO_BIN_EXE_relay"), &args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(case.launches().len(), 2);
}

#[test]
fn rpc_mode_runs_pi_once_without_the_wrapper_variables() {
    let case = Case::new("rpc", &["none 0"]);
    let out = case.run(&["--mode", "rpc"]);
    assert_eq!(out.status.code(), Some(0));
    let log = fs::read_to_string(case.fake().join("log")).unwrap();
    assert!(log.contains("env     \n"), "{log}");
}

#[test]
fn help_is_the_wrappers_own_and_runs_no_pi() {
    let case = Case::new("help", &[]);
    for (bin, args) in [
        (env!("CARGO_BIN_EXE_pi-session"), vec!["--help"]),
        (env!("CARGO_BIN_EXE_pi-session"), vec!["--model", "x", "-h"]),
        (env!("CARGO_BIN_EXE_relay"), vec!["session", "--help"]),
    ] {
        let out = case
            .command(bin, &args)
            .env("PI_SESSION_PI", "/nonexistent/pi")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text, relay_cli::session::HELP, "{args:?}");
        assert!(text.contains("PI_SESSION_PI"));
    }
    assert!(case.launches().is_empty());
}

#[test]
fn help_after_the_separator_is_a_message_to_pi() {
    let case = Case::new("help-after", &["none 0"]);
    let out = case.run(&["--", "--help"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A message that starts with `-` reaches Pi behind Pi's own `--`.
    assert_eq!(
        case.launches(),
        vec![vec!["--".to_string(), "--help".to_string()]]
    );
}
