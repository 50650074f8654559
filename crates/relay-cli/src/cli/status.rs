//! `relay status`: the status files Relay's addon writes (relay-io `telemetry`:
//! `<state dir>/status/<sessionId>.json`, rewritten at each policy transition, with the writing
//! process's `pid`). The state folder is `--state-dir`, else `$PI_CONTEXT_BUDGET_STATE_DIR`, else
//! `<Pi's agent dir>/context-budget` (the extension's rule).
//!
//! **Liveness** is by pid: on Linux a process is running when `/proc/<pid>` exists; elsewhere
//! `kill -0 <pid>` is asked. A pid the system has since given to another process reads as
//! running (the file cannot tell); a session that ended leaves its file, which reads as gone.
//! Only running sessions are listed unless `--all`; exit 1 when none is running.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::{json, Value};

use super::{fatal, table, Outcome};

pub fn state_dir(given: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(d) = given {
        return Ok(d);
    }
    let env = std::env::var("PI_CONTEXT_BUDGET_STATE_DIR").ok();
    let agent = super::agent_dir()?;
    match relay_core::engine::wire::state_dir(env.as_deref(), agent.to_str()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => Ok(agent.join("context-budget")),
    }
}

/// Whether process `pid` exists.
pub fn alive(pid: u64) -> bool {
    if pid == 0 || pid > i32::MAX as u64 {
        return false;
    }
    if cfg!(target_os = "linux") {
        return Path::new("/proc").join(pid.to_string()).exists();
    }
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub fn run(given: Option<PathBuf>, all: bool, json: bool, out: &mut dyn Write) -> Result<Outcome> {
    let dir = state_dir(given)?;
    let status_dir = dir.join("status");
    let mut rows: Vec<(bool, Value, PathBuf)> = Vec::new();
    match std::fs::read_dir(&status_dir) {
        Ok(entries) => {
            for entry in entries {
                let entry = entry
                    .map_err(|e| fatal(format!("cannot read {}: {e}", status_dir.display())))?;
                let path = entry.path();
                if path.extension().is_none_or(|x| x != "json") {
                    continue;
                }
                let parsed = std::fs::read_to_string(&path)
                    .map_err(|e| e.to_string())
                    .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()));
                let status = match parsed {
                    Ok(v) if v.is_object() => v,
                    Ok(_) => {
                        eprintln!("{}: warning: not a JSON object, skipped", path.display());
                        continue;
                    }
                    Err(e) => {
                        eprintln!("{}: warning: skipped: {e}", path.display());
                        continue;
                    }
                };
                let running = status["pid"].as_u64().is_some_and(alive);
                if running || all {
                    rows.push((running, status, path));
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(fatal(format!("cannot read {}: {e}", status_dir.display()))),
    }
    // Running first, then the most recently updated.
    rows.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(b.1["updatedAt"].as_i64().cmp(&a.1["updatedAt"].as_i64()))
            .then(a.2.cmp(&b.2))
    });
    let running = rows.iter().filter(|r| r.0).count();
    if json {
        let docs: Vec<Value> = rows
            .iter()
            .map(|(alive, status, path)| {
                let mut s = status.clone();
                s["running"] = json!(alive);
                s["file"] = json!(path.display().to_string());
                s
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string(&docs)?)?;
    } else if !rows.is_empty() {
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|(alive, s, _)| {
                let text = |k: &str| match &s[k] {
                    Value::String(t) => t.clone(),
                    Value::Null => "-".into(),
                    v => v.to_string(),
                };
                vec![
                    if *alive { "running" } else { "gone" }.to_string(),
                    text("pid"),
                    text("phase"),
                    text("tokens"),
                    text("windowCount"),
                    s["updatedAt"]
                        .as_i64()
                        .map_or("-".into(), |ms| relay_core::time::format_local_iso(ms, 0)),
                    text("sessionId"),
                    text("cwd"),
                ]
            })
            .collect();
        out.write_all(
            table(
                &[
                    "STATE", "PID", "PHASE", "TOKENS", "WINDOWS", "UPDATED", "SESSION", "CWD",
                ],
                &cells,
            )
            .as_bytes(),
        )?;
    }
    if running == 0 {
        return Ok(Outcome::Nothing(format!(
            "no running Relay session (status files in {})",
            status_dir.display()
        )));
    }
    Ok(Outcome::Done)
}
