//! Real processes: each case returns within its bound with the right result, and no process of
//! the check's group is left (`kill(-pgid, 0)` fails with ESRCH). Every command prints `$$`
//! first: bash's pid, which is the process group's id.
use super::*;
use crate::fsx::test_support::TempDir;
use rustix::process::test_kill_process_group;

fn quick(timeout_ms: u64) -> Runner {
    Runner {
        timeout: Duration::from_millis(timeout_ms),
        ..Runner::default()
    }
}

/// Run `command` in a fresh folder; the result, how long it took and the group id it printed.
fn run(runner: &Runner, command: &str) -> (CheckResult, Duration, Pid) {
    let t = TempDir::new("resume");
    let started = Instant::now();
    let r = runner.run(command, "PI_RESUME_CHECK", &t.0);
    let took = started.elapsed();
    let first = r.output.head.lines().next().unwrap_or_default().to_string();
    let pgid: i32 = first
        .parse()
        .unwrap_or_else(|_| panic!("no pid first: {r:?}"));
    (r, took, Pid::from_raw(pgid).unwrap())
}

/// The group is gone: SIGKILL is delivered asynchronously and the killed orphans are reaped by
/// init, so this waits a bounded moment for ESRCH.
fn assert_group_gone(pgid: Pid) {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        match test_kill_process_group(pgid) {
            Err(e) if e == rustix::io::Errno::SRCH => return,
            other if Instant::now() >= until => panic!("group {pgid:?} still there: {other:?}"),
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

fn text(r: &CheckResult) -> String {
    format!("{}{}", r.output.head, r.output.tail)
}

#[test]
fn a_command_sleeping_past_the_timeout_is_killed_with_its_group() {
    let (r, took, pgid) = run(&quick(300), "echo $$; sleep 30 & sleep 30");
    assert_eq!(r.status, CheckStatus::TimedOut { after_ms: 300 });
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(!r.output_held_open);
    assert_group_gone(pgid);
}

#[test]
fn a_daemonized_child_holding_the_pipe_cannot_hang_the_check() {
    for command in [
        "echo $$; (sleep 30 &) ; echo hi",
        "echo $$; sleep 30 & echo hi",
    ] {
        let (r, took, pgid) = run(&Runner::default(), command);
        assert_eq!(r.status, CheckStatus::Exited { code: 0 }, "{command}");
        assert_eq!(
            text(&r),
            format!("{}\nhi\n", pgid.as_raw_nonzero()),
            "{command}"
        );
        assert!(
            r.output_held_open,
            "{command}: the drain limit ended the read"
        );
        assert!(took >= Duration::from_millis(900), "{command}: {took:?}");
        assert!(took < Duration::from_secs(5), "{command}: {took:?}");
        assert_group_gone(pgid);
    }
}

#[test]
fn a_command_that_closes_its_output_returns_at_once() {
    let (r, took, pgid) = run(
        &Runner::default(),
        "echo $$; sleep 30 >/dev/null 2>&1 & echo done",
    );
    assert_eq!(r.status, CheckStatus::Exited { code: 0 });
    assert!(!r.output_held_open, "end of file came with the exit");
    assert!(took < Duration::from_millis(900), "no drain wait: {took:?}");
    assert_group_gone(pgid);
}

#[test]
fn a_flood_of_100_mb_is_counted_not_kept() {
    let (r, took, pgid) = run(
        &Runner::default(),
        "echo $$; yes 0123456789abcdef | head -c 100000000; echo; echo END",
    );
    assert_eq!(r.status, CheckStatus::Exited { code: 0 });
    let pid_line = format!("{}\n", pgid.as_raw_nonzero()).len() as u64;
    assert_eq!(r.output.total_bytes, pid_line + 100_000_000 + 1 + 4);
    assert_eq!(r.output.head.len(), 4096);
    assert_eq!(r.output.tail.len(), 4096);
    assert!(
        r.output.tail.ends_with("\nEND\n"),
        "{:?}",
        &r.output.tail[4000..]
    );
    assert_eq!(
        r.output.skipped_bytes,
        r.output.total_bytes - 8192,
        "everything between head and tail is counted"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert_group_gone(pgid);
}

#[test]
fn a_nonzero_exit_keeps_stdout_and_stderr_in_order() {
    let (r, _, pgid) = run(
        &Runner::default(),
        "echo $$; echo out; echo err >&2; exit 3",
    );
    assert_eq!(r.status, CheckStatus::Exited { code: 3 });
    assert_eq!(text(&r), format!("{}\nout\nerr\n", pgid.as_raw_nonzero()));
    assert_eq!(r.command, "echo $$; echo out; echo err >&2; exit 3");
    assert_eq!(r.source, "PI_RESUME_CHECK");
    assert_group_gone(pgid);
}

#[test]
fn a_signal_is_reported_as_such() {
    let (r, _, pgid) = run(&Runner::default(), "echo $$; kill -TERM $$");
    assert_eq!(r.status, CheckStatus::Signaled { signal: 15 });
    assert_group_gone(pgid);
}

#[test]
fn stdin_is_closed() {
    let (r, took, _) = run(&quick(5_000), "echo $$; cat; echo read-eof");
    assert_eq!(r.status, CheckStatus::Exited { code: 0 });
    assert!(text(&r).ends_with("read-eof\n"));
    assert!(took < Duration::from_secs(4), "{took:?}");
}

#[test]
fn a_missing_cwd_or_a_missing_bash_cannot_spawn() {
    let t = TempDir::new("resume-spawn");
    let gone = t.0.join("no/such/dir");
    let started = Instant::now();
    let r = Runner::default().run("echo hi", "PI_RESUME_CHECK", &gone);
    match &r.status {
        CheckStatus::SpawnFailed { error } => {
            assert!(error.contains(&gone.display().to_string()), "{error}");
            assert!(error.contains("No such file or directory"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.output, CheckOutput::default());
    let no_path = Runner {
        env: vec![("PATH".into(), "".into())],
        ..Runner::default()
    };
    let r = no_path.run("echo hi", "PI_RESUME_CHECK", &t.0);
    assert!(
        matches!(&r.status, CheckStatus::SpawnFailed { error } if error.starts_with("cannot run bash in ")),
        "{r:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn capture_cuts_keep_characters_whole() {
    let mut c = Capture::default();
    // 4095 ASCII bytes, then a 4-byte character across the head's end, then more.
    c.push(&[b'a'; 4095]);
    c.push("😀".as_bytes());
    c.push(b"bc");
    let out = c.finish();
    assert_eq!(out.head.len(), 4095);
    assert_eq!(out.tail, "😀bc");
    assert_eq!(out.skipped_bytes, 0);
    let mut c = Capture::default();
    c.push(&[b'a'; 4096]);
    c.push(&[b'x'; 10]);
    // The last 4096 bytes start inside an "é": the tail drops that continuation byte.
    c.push("é".repeat(2048).as_bytes());
    c.push(&[b'y'; 1]);
    let out = c.finish();
    assert!(out.tail.ends_with('y'));
    assert!(!out.tail.contains('\u{FFFD}'), "no split character");
    assert_eq!(
        out.skipped_bytes + out.head.len() as u64 + out.tail.len() as u64,
        out.total_bytes
    );
}

#[test]
fn a_cancelled_check_is_killed_with_its_group() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let cancel = Arc::new(AtomicBool::new(false));
    let runner = Runner {
        cancel: Some(Arc::clone(&cancel)),
        ..Runner::default()
    };
    let t = TempDir::new("resume-cancel");
    let started_file = t.0.join("started");
    let command = format!("echo $$; touch {}; sleep 30", started_file.display());
    let waiter = {
        let cancel = Arc::clone(&cancel);
        let started_file = started_file.clone();
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(10);
            while !started_file.exists() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            cancel.store(true, Ordering::Relaxed);
        })
    };
    let r = runner.run(&command, "PI_RESUME_CHECK", &t.0);
    waiter.join().unwrap();
    assert_eq!(r.status, CheckStatus::Signaled { signal: 9 }, "{r:?}");
    let pgid: i32 = r.output.head.lines().next().unwrap().parse().unwrap();
    assert_group_gone(Pid::from_raw(pgid).unwrap());
}
