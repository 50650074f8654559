//! `relay config` and `relay doctor` against real settings files, a real trust store and real
//! executables on PATH, each in a fresh temporary folder.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_relay");

/// A fresh folder: `agent/` (Pi's agent folder), `work/` (the project), `bin/` (PATH).
fn temp(tag: &str) -> PathBuf {
    let dir = common::fresh_dir(&format!("relay-config-{tag}"));
    for sub in ["agent", "work/.pi", "bin"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    dir
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn executable(path: &Path, script: &str) {
    write(path, script);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn relay(root: &Path, args: &[&str]) -> Output {
    relay_command(root, args).output().expect("relay runs")
}

fn relay_command(root: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .current_dir(root.join("work"))
        .env("PI_CODING_AGENT_DIR", root.join("agent"))
        .env("PATH", root.join("bin"))
        .env_remove("PI_CONTEXT_BUDGET_STATE_DIR")
        .env_remove("PI_CONTEXT_BUDGET_CONFIG")
        .env_remove("PI_RESUME_CHECK")
        .env_remove("RELAY_ADDON");
    command
}

/// napi-rs's name for this platform, as `relay doctor` looks for it (redacted in snapshots).
fn triple() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let abi = if cfg!(target_env = "musl") {
        "-musl"
    } else {
        "-gnu"
    };
    format!("{}-{arch}{abi}", std::env::consts::OS)
}

fn text(o: &Output, root: &Path) -> String {
    String::from_utf8_lossy(&o.stdout)
        .replace(&root.display().to_string(), "<tmp>")
        .replace(&triple(), "<platform>")
}

fn settings(root: &Path) {
    write(
        &root.join("agent/settings.json"),
        r#"{"defaultProvider": "openai", "defaultModel": "gpt",
            "compaction": {"modelOverrides": {"openai/gpt": {"reserveTokens": 30000}}},
            "relay": {"reminderMarginTokens": 8000,
                      "budget": {"mode": "enforce", "enforceCwds": ["/nowhere"], "idleMinutes": 20}}}"#,
    );
    write(
        &root.join("work/.pi/settings.json"),
        r#"{"relay": {"budget": {"main": {"hard": 120000}}, "pins": ["Run make test before every commit."]}}"#,
    );
}

#[test]
fn config_names_where_each_value_came_from_and_follows_pi_trust_store() {
    let root = temp("trust");
    settings(&root);
    let work = root.join("work").display().to_string();
    write(
        &root.join("agent/trust.json"),
        &format!("{{{}: true}}", serde_json::to_string(&work).unwrap()),
    );
    let o = relay(&root, &["config", "--window", "400000"]);
    assert!(o.status.success(), "{o:?}");
    insta::assert_snapshot!("config_trusted_project", text(&o, &root));

    // Untrusted (by option, then by the store): the project's hard is not applied.
    let o = relay(&root, &["config", "--window", "400000", "--untrusted"]);
    let shown = text(&o, &root);
    assert!(
        shown.contains("hard              333,000 tokens  ← derived from the window"),
        "{shown}"
    );
    assert!(
        shown.contains("ignored: the project is not trusted (--untrusted)"),
        "{shown}"
    );
    // An untrusted project's default pins are not in force either.
    assert!(shown.contains("\nPinned instructions: none\n"), "{shown}");
    write(
        &root.join("agent/trust.json"),
        &format!("{{{}: false}}", serde_json::to_string(&work).unwrap()),
    );
    let shown = text(&relay(&root, &["config", "--window", "400000"]), &root);
    assert!(
        shown.contains("333,000 tokens  ← derived from the window"),
        "{shown}"
    );

    // JSON: the same rows.
    let o = relay(
        &root,
        &["--json", "config", "--model", "a/b", "--role", "subagent"],
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = doc["report"]["in_force"].as_array().unwrap();
    let role = rows.iter().find(|r| r["key"] == "role").unwrap();
    assert_eq!(role["value"], "subagent");
    assert_eq!(role["origin"], "--role (default main)");
    // The project is untrusted by now: no pins.
    assert_eq!(doc["report"]["pins"], serde_json::json!([]));
}

#[test]
fn config_reports_files_it_cannot_read_and_invalid_keys_by_path() {
    let root = temp("bad");
    write(&root.join("agent/settings.json"), "{ not json");
    write(
        &root.join("work/.pi/settings.json"),
        r#"{"relay": {"budget": {"idleMinutes": -1}}}"#,
    );
    let o = relay(&root, &["config", "--trusted"]);
    assert!(o.status.success());
    let shown = text(&o, &root);
    assert!(
        shown.contains("  - global settings (<tmp>/agent/settings.json): cannot be read (key must be a string at line 1 column 3); ignored"),
        "{shown}"
    );
    assert!(
        shown.contains("  - project settings (.pi/settings.json): relay.budget.idleMinutes: must be a positive finite number, got -1"),
        "{shown}"
    );
}

/// Issue 34: `relay config` read the settings and budget files blocking and whole; a FIFO at
/// `.pi/settings.json` held it for good. Each hostile file is refused with a note naming it,
/// and the command ends (the wait is bounded: the child is killed past it).
#[test]
fn config_refuses_a_fifo_a_device_and_an_oversize_file_without_blocking() {
    let root = temp("hostile");
    std::fs::create_dir_all(root.join("work/.pi")).unwrap();
    std::fs::create_dir_all(root.join("agent")).unwrap();
    let fifo = root.join("work/.pi/settings.json");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    std::os::unix::fs::symlink("/dev/null", root.join("agent/settings.json")).unwrap();
    let mut budget = String::from(r#"{"mode": "enforce"}"#);
    budget.push_str(&" ".repeat(1024 * 1024));
    write(&root.join("agent/context-budget.json"), &budget);
    let mut child = relay_command(&root, &["config", "--trusted"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("relay config blocked on a hostile file");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{o:?}");
    let shown = text(&o, &root);
    for line in [
        "global settings (<tmp>/agent/settings.json): cannot be read (a character device, not a regular file); ignored",
        "project settings (.pi/settings.json): cannot be read (a FIFO, not a regular file); ignored",
        "<tmp>/agent/context-budget.json: cannot read the budget configuration (larger than the 1 MiB limit); using safe observe mode",
    ] {
        assert!(shown.contains(line), "{line}\n{shown}");
    }
}

/// A Pi with a supported version, Relay's core and pi-session: every check passes.
fn healthy(root: &Path) {
    executable(&root.join("bin/pi"), "#!/bin/sh\necho 1.6.0\n");
    executable(&root.join("bin/pi-session"), "#!/bin/sh\nexit 0\n");
    let ext = root.join("relay-extension");
    write(&ext.join("package.json"), r#"{"name": "pi-relay"}"#);
    write(&ext.join(format!("native/relay.{}.node", triple())), "core");
    write(
        &root.join("agent/settings.json"),
        &format!(
            r#"{{"packages": [{}]}}"#,
            serde_json::to_string(&ext).unwrap()
        ),
    );
}

#[test]
fn doctor_passes_on_a_complete_install() {
    let root = temp("doctor-ok");
    healthy(&root);
    let o = relay(&root, &["doctor"]);
    let shown = text(&o, &root);
    assert!(
        o.status.success(),
        "{shown}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    insta::assert_snapshot!("doctor_ok", shown);
}

#[test]
fn doctor_says_what_to_fix_for_each_failing_check() {
    let root = temp("doctor-bad");
    healthy(&root);
    // An old Pi, no core in the package, a bad setting, a state folder under a file, no wrapper
    // (optional).
    executable(&root.join("bin/pi"), "#!/bin/sh\necho 0.87.1\n");
    std::fs::remove_file(root.join(format!("relay-extension/native/relay.{}.node", triple())))
        .unwrap();
    std::fs::remove_file(root.join("bin/pi-session")).unwrap();
    let ext = root.join("relay-extension");
    write(
        &root.join("agent/settings.json"),
        &format!(
            r#"{{"packages": [{}], "relay": {{"enabled": "yes"}}}}"#,
            serde_json::to_string(&ext).unwrap()
        ),
    );
    write(&root.join("a-file"), "");
    let o = Command::new(BIN)
        .args(["doctor"])
        .current_dir(root.join("work"))
        .env("PI_CODING_AGENT_DIR", root.join("agent"))
        .env("PATH", root.join("bin"))
        .env("PI_CONTEXT_BUDGET_STATE_DIR", root.join("a-file/state"))
        .env_remove("RELAY_ADDON")
        .env_remove("PI_CONTEXT_BUDGET_CONFIG")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "relay: 4 checks failed\n",
        "the missing pi-session is reported, not counted"
    );
    insta::assert_snapshot!("doctor_failing", text(&o, &root));
}

#[test]
fn doctor_without_pi_session_says_so_and_exits_healthy() {
    let root = temp("doctor-no-wrapper");
    healthy(&root);
    std::fs::remove_file(root.join("bin/pi-session")).unwrap();
    let o = relay(&root, &["doctor"]);
    let shown = text(&o, &root);
    assert!(o.status.success(), "{shown}");
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
    assert!(
        shown.contains("note pi-session     no `pi-session` on PATH (optional: needed only for a relaunch in a fresh process)\n"),
        "{shown}"
    );
    assert!(!shown.contains("FAIL"), "{shown}");
    let o = relay(&root, &["doctor", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["failed"], 0);
    let wrapper = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "pi-session")
        .unwrap();
    assert_eq!(
        (wrapper["ok"].as_bool(), wrapper["optional"].as_bool()),
        (Some(false), Some(true))
    );
}

/// Relay's package (with its core) at `dir`.
fn relay_package(dir: &Path) {
    write(
        &dir.join("package.json"),
        r#"{"name": "pi-relay", "pi": {"extensions": ["./src/index.ts"]}}"#,
    );
    write(
        &dir.join("src/index.ts"),
        "export default function relay() {}\n",
    );
    write(&dir.join(format!("native/relay.{}.node", triple())), "core");
}

/// `relay doctor`'s core line in `root`, with HOME at `root/home` and Pi's trust store deciding.
fn core_line(root: &Path) -> String {
    let o = Command::new(BIN)
        .args(["doctor"])
        .current_dir(root.join("work"))
        .env("PI_CODING_AGENT_DIR", root.join("agent"))
        .env("HOME", root.join("home"))
        .env("PATH", root.join("bin"))
        .env_remove("PI_CONTEXT_BUDGET_STATE_DIR")
        .env_remove("PI_CONTEXT_BUDGET_CONFIG")
        .env_remove("RELAY_ADDON")
        .output()
        .unwrap();
    let shown = text(&o, root);
    let line = shown
        .lines()
        .skip_while(|l| !l.contains(" core "))
        .take_while(|l| l.contains(" core ") || l.trim_start().starts_with("fix:"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(o.status.success(), line.starts_with("ok"), "{shown}");
    line
}

fn trust(root: &Path, trusted: bool) {
    write(
        &root.join("agent/trust.json"),
        &serde_json::json!({ root.join("work").display().to_string(): trusted }).to_string(),
    );
}

/// One lookup of `doctor_finds_relay_wherever_pi_would_load_it`: (case, global settings, project
/// settings, package folder, project trust, core line).
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Option<bool>,
    &'static str,
);

/// Every way Pi finds a package (docs/packages.md and its package manager): `pi install` into
/// the agent folder or a trusted project (`-l`: `.pi/npm`, `.pi/git`), local paths relative to
/// the settings file's scope, `~`, a file that is an extension's entry, and the scope's
/// `extensions/` folder; an untrusted project's packages are named but not used.
#[test]
fn doctor_finds_relay_wherever_pi_would_load_it() {
    let cases: &[Case] = &[
        // (case, global settings, project settings, package folder, project trust, core line)
        ("npm, global", r#"{"packages": ["npm:pi-relay@0.1.0"]}"#, "", "agent/npm/node_modules/pi-relay", None,
         "ok   core           <tmp>/agent/npm/node_modules/pi-relay/native/relay.<platform>.node (for <platform>)"),
        ("npm, project", "{}", r#"{"packages": [{"source": "npm:pi-relay"}]}"#, "work/.pi/npm/node_modules/pi-relay", Some(true),
         "ok   core           <tmp>/work/.pi/npm/node_modules/pi-relay/native/relay.<platform>.node (for <platform>)"),
        ("git, global", r#"{"packages": ["git:github.com/example/pi-relay@v1"]}"#, "", "agent/git/github.com/example/pi-relay", None,
         "ok   core           <tmp>/agent/git/github.com/example/pi-relay/native/relay.<platform>.node (for <platform>)"),
        ("git URL, project", "{}", r#"{"packages": ["https://github.com/example/pi-relay"]}"#, "work/.pi/git/github.com/example/pi-relay", Some(true),
         "ok   core           <tmp>/work/.pi/git/github.com/example/pi-relay/native/relay.<platform>.node (for <platform>)"),
        ("relative path, project", "{}", r#"{"packages": ["../vendor/relay"]}"#, "work/vendor/relay", Some(true),
         "ok   core           <tmp>/work/vendor/relay/native/relay.<platform>.node (for <platform>)"),
        ("relative path, global", r#"{"packages": ["../relay"]}"#, "", "relay", None,
         "ok   core           <tmp>/relay/native/relay.<platform>.node (for <platform>)"),
        ("home path", r#"{"packages": ["~/src/relay"]}"#, "", "home/src/relay", None,
         "ok   core           <tmp>/home/src/relay/native/relay.<platform>.node (for <platform>)"),
        ("extension entry file", r#"{"extensions": ["~/src/relay/src/index.ts"]}"#, "", "home/src/relay", None,
         "ok   core           <tmp>/home/src/relay/native/relay.<platform>.node (for <platform>)"),
        ("extensions folder", "{}", "", "agent/extensions/relay", None,
         "ok   core           <tmp>/agent/extensions/relay/native/relay.<platform>.node (for <platform>)"),
        ("untrusted project", "{}", r#"{"packages": ["npm:pi-relay"]}"#, "work/.pi/npm/node_modules/pi-relay", Some(false),
         "FAIL core           Pi's settings (<tmp>/agent/settings.json, and a trusted project's .pi/settings.json) name no pi-relay package or extension; <tmp>/work/.pi/settings.json names packages, but the project is not trusted: Pi loads them only after trust is granted\n                    fix: install Relay into Pi: `pi install npm:pi-relay`, or `pi install /path/to/relay/extension` after `make build`"),
        ("another package", r#"{"packages": ["npm:pi-other"]}"#, "", "agent/npm/node_modules/pi-other", None,
         "FAIL core           Pi's settings (<tmp>/agent/settings.json, and a trusted project's .pi/settings.json) name no pi-relay package or extension\n                    fix: install Relay into Pi: `pi install npm:pi-relay`, or `pi install /path/to/relay/extension` after `make build`"),
    ];
    for (i, (case, global, project, folder, trusted, want)) in cases.iter().enumerate() {
        let root = temp(&format!("doctor-find-{i}"));
        healthy(&root);
        write(&root.join("agent/settings.json"), global);
        if !project.is_empty() {
            write(&root.join("work/.pi/settings.json"), project);
        }
        if let Some(t) = trusted {
            trust(&root, *t);
        }
        relay_package(&root.join(folder));
        if *case == "another package" {
            write(
                &root.join(folder).join("package.json"),
                r#"{"name": "pi-other"}"#,
            );
        }
        assert_eq!(core_line(&root), *want, "{case}");
    }
}
