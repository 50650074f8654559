//! `relay config`: the settings in force for a model and role, from the files on disk, with
//! where each value came from (relay-core's `effective` module, the same text as `/relay config`);
//! `relay doctor`: whether this install can run Relay, and what to fix.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use relay_core::effective::{effective_config, render_effective_config, ConfigQuery};
use relay_core::engine::wire::{ConfigSources, MAX_BUDGET_FILE_BYTES, MAX_SETTINGS_FILE_BYTES};
use serde_json::{json, Value};

use super::{agent_dir, Outcome};

/// What `relay config` is asked about.
#[derive(Debug, Default)]
pub struct ConfigRequest {
    pub model: Option<String>,
    pub window: Option<u64>,
    pub subagent: bool,
    pub cwd: Option<PathBuf>,
    /// `--trusted` / `--untrusted`; `None`: Pi's trust store decides.
    pub trusted: Option<bool>,
}

/// A file's text, read as the addon reads it: `Ok(None)` when absent; a FIFO, a device or a file
/// over `cap` is refused without blocking (`relay_io::fsx::read_small_text`).
fn read_text(path: &Path, cap: u64) -> Result<Option<String>, String> {
    relay_io::fsx::read_small_text(path, cap, true).map_err(|e| e.to_string())
}

/// A JSON file (a settings file or Pi's trust store): `Ok(None)` when absent, `Err(why)` when
/// refused, unreadable or not JSON.
fn read_json(path: &Path) -> Result<Option<Value>, String> {
    let Some(text) = read_text(path, MAX_SETTINGS_FILE_BYTES)? else {
        return Ok(None);
    };
    if text.trim().is_empty() {
        return Ok(Some(json!({})));
    }
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Pi's decision for `cwd` in `<agent dir>/trust.json` (the nearest folder with a decision), else
/// its `defaultProjectTrust` setting (`"always"` trusts; `"ask"`, the default, and `"never"` do not
/// until Pi asked). Returns the decision and where it came from.
fn project_trust(agent: &Path, cwd: &Path, global: Option<&Value>) -> (bool, String) {
    let trust_file = agent.join("trust.json");
    if let Ok(Some(Value::Object(map))) = read_json(&trust_file) {
        let mut dir = Some(cwd);
        while let Some(d) = dir {
            if let Some(Value::Bool(b)) = map.get(d.to_string_lossy().as_ref()) {
                return (*b, format!("{} ({})", trust_file.display(), d.display()));
            }
            dir = d.parent();
        }
    }
    let default = global
        .and_then(|g| g.get("defaultProjectTrust"))
        .and_then(Value::as_str)
        .unwrap_or("ask");
    (
        default == "always",
        format!("defaultProjectTrust \"{default}\""),
    )
}

/// The sources Pi would hand the engine in `cwd`, read from disk, and the warnings about files
/// that cannot be read.
fn sources_on_disk(
    cwd: &Path,
    trusted: Option<bool>,
) -> anyhow::Result<(ConfigSources, Vec<String>, String)> {
    let agent = agent_dir()?;
    let global_file = agent.join("settings.json");
    let mut notes = Vec::new();
    let global = match read_json(&global_file) {
        Ok(v) => v,
        Err(e) => {
            notes.push(format!(
                "global settings ({}): cannot be read ({e}); ignored",
                global_file.display()
            ));
            None
        }
    };
    let project_file = cwd.join(".pi/settings.json");
    let (project_trusted, trust_origin) = match trusted {
        Some(t) => (t, if t { "--trusted" } else { "--untrusted" }.to_string()),
        None => project_trust(&agent, cwd, global.as_ref()),
    };
    let env = |name: &str| std::env::var(name).ok();
    let mut sources = ConfigSources {
        global,
        // Its problems are the notes above.
        global_error: None,
        project: None,
        project_error: None,
        project_file: Some(project_file.display().to_string()),
        project_trusted,
        global_file: Some(global_file.display().to_string()),
        budget_config_env: env("PI_CONTEXT_BUDGET_CONFIG"),
        agent_dir: Some(agent.display().to_string()),
        state_dir: env("PI_CONTEXT_BUDGET_STATE_DIR"),
        cwd: Some(cwd.display().to_string()),
        wrapper: None,
        resume_check_env: env("PI_RESUME_CHECK"),
        budget_file: None,
        budget_file_error: None,
        guards_error: None,
        // The stores' places do not bear on the configuration `relay config` shows.
        questions_home: None,
        tmp_dir: None,
        uid: None,
    };
    // The budget file and the project's settings file, read as the addon reads them.
    if let Some(file) = sources.budget_file_path() {
        match read_text(Path::new(&file.path), MAX_BUDGET_FILE_BYTES) {
            Ok(text) => sources.budget_file = text,
            Err(e) => sources.budget_file_error = Some(e),
        }
    }
    // The project's file is read also when the project is not trusted: the CLI only reports
    // (that it is ignored, that it names packages), and the read cannot block.
    sources.set_project_text(read_text(&project_file, MAX_SETTINGS_FILE_BYTES));
    let trust = format!(
        "project settings ({}): {} ({trust_origin})",
        project_file.display(),
        match (
            sources.project.is_some() || sources.project_error.is_some(),
            project_trusted
        ) {
            (false, _) => "none",
            (true, true) => "apply: the project is trusted",
            (true, false) => "ignored: the project is not trusted",
        }
    );
    Ok((sources, notes, trust))
}

fn current_dir(cwd: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match cwd {
        Some(dir) => Ok(std::path::absolute(dir)?),
        None => Ok(std::env::current_dir()?),
    }
}

/// `relay config`.
pub fn config(req: ConfigRequest, json: bool, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let cwd = current_dir(req.cwd)?;
    let (sources, notes, trust) = sources_on_disk(&cwd, req.trusted)?;
    // Pi's default model (`defaultProvider`/`defaultModel`) when --model is not given.
    let settings_model = sources.global.as_ref().and_then(|g| {
        let provider = g.get("defaultProvider")?.as_str()?;
        let model = g.get("defaultModel")?.as_str()?;
        Some(format!("{provider}/{model}"))
    });
    let (model, model_origin) = match (&req.model, &settings_model) {
        (Some(m), _) => (Some(m.clone()), "--model"),
        (None, Some(m)) => (
            Some(m.clone()),
            "Pi's settings (defaultProvider/defaultModel)",
        ),
        (None, None) => (None, "--model (not given)"),
    };
    let window_origin = if req.window.is_some() {
        "--window"
    } else {
        "--window (not given)"
    };
    let query = ConfigQuery {
        model: model.as_deref(),
        context_window: req.window,
        model_origin,
        window_origin,
        hosted_subagent: req.subagent,
        role_origin: "--role (default main)",
        toggle: None,
        mode: None,
        session_pins: &[],
    };
    let mut report = effective_config(&sources, &query);
    report.warnings.splice(0..0, notes);
    if json {
        let doc = json!({ "report": report, "project": trust });
        writeln!(out, "{doc}")?;
    } else {
        out.write_all(render_effective_config(&report).as_bytes())?;
        writeln!(out, "{trust}")?;
    }
    Ok(Outcome::Done)
}

/// One check of `relay doctor`.
#[derive(Debug, serde::Serialize)]
struct Check {
    name: &'static str,
    ok: bool,
    /// A check that does not pass but is not needed to run Relay: reported, not counted.
    optional: bool,
    /// What was found.
    found: String,
    /// What to do, when it failed.
    fix: Option<String>,
}

/// The first executable file called `name` on PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| rustix::fs::access(p, rustix::fs::Access::EXEC_OK).is_ok() && p.is_file())
}

/// napi-rs's name for this platform (`linux-x64-gnu`), as the extension computes it.
fn triple() -> String {
    let os = std::env::consts::OS;
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let abi = match (os, cfg!(target_env = "musl")) {
        ("linux", true) => "-musl",
        ("linux", false) => "-gnu",
        _ => "",
    };
    format!("{os}-{arch}{abi}")
}

fn check_pi(pi: Option<PathBuf>) -> Check {
    let Some(pi) = pi.or_else(|| on_path("pi")) else {
        return Check {
            name: "pi",
            ok: false,
            optional: false,
            found: "no `pi` on PATH".into(),
            fix: Some(format!(
                "install Pi {} or newer and put `pi` on PATH (or name it with --pi)",
                relay_core::host::MIN_PI_VERSION
            )),
        };
    };
    let output = Command::new(&pi)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output();
    let version = match output {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .last()
            .unwrap_or("")
            .trim_start_matches('v')
            .to_string(),
        Ok(o) => {
            return Check {
                name: "pi",
                ok: false,
                optional: false,
                found: format!(
                    "{} --version failed ({}): {}",
                    pi.display(),
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
                fix: Some("repair or reinstall Pi".into()),
            }
        }
        Err(e) => {
            return Check {
                name: "pi",
                ok: false,
                optional: false,
                found: format!("{} cannot run: {e}", pi.display()),
                fix: Some("repair or reinstall Pi".into()),
            }
        }
    };
    match relay_core::host::pi_version_refusal(&version) {
        None => Check {
            name: "pi",
            ok: true,
            optional: false,
            found: format!("Pi {version} ({})", pi.display()),
            fix: None,
        },
        Some(refusal) => Check {
            name: "pi",
            ok: false,
            optional: false,
            found: format!("{} reports {version:?}", pi.display()),
            fix: Some(refusal.trim_start_matches("relay: ").to_string()),
        },
    }
}

/// The package name of an npm spec (`npm:` taken off): `name`, `name@range`, `@scope/name`,
/// `@scope/name@range`.
fn npm_name(spec: &str) -> &str {
    let spec = spec.trim();
    let cut = match spec.strip_prefix('@') {
        Some(rest) => rest.find('@').map(|i| i + 1),
        None => spec.find('@'),
    };
    cut.map_or(spec, |i| &spec[..i])
}

/// Whether Pi reads `source` as a git source (`git:…`, or an `https://`, `http://`, `ssh://` or
/// `git://` URL).
fn is_git_source(source: &str) -> bool {
    let lower = source.to_ascii_lowercase();
    lower.starts_with("git:")
        || ["https://", "http://", "ssh://", "git://"]
            .iter()
            .any(|p| lower.starts_with(p))
}

/// A local source as Pi resolves it: `~` is the home folder, a `file://` URL its path, a relative
/// path is relative to `base` (the folder of the scope's settings).
fn local_path(source: &str, base: &Path) -> PathBuf {
    let source = source.trim();
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    let path = if source == "~" {
        home().unwrap_or_else(|| PathBuf::from(source))
    } else if let (Some(rest), Some(home)) = (source.strip_prefix("~/"), home()) {
        home.join(rest)
    } else if let Some(rest) = source.strip_prefix("file://") {
        PathBuf::from(rest)
    } else {
        PathBuf::from(source)
    };
    let path = if path.is_absolute() {
        path
    } else {
        base.join(path)
    };
    // As Node's path.resolve: `.` and `..` taken lexically.
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The folders one level below `dir` (none when it cannot be read).
fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Whether `dir` holds Relay's package (its package.json names `pi-relay`).
fn is_relay_package(dir: &Path) -> bool {
    read_json(&dir.join("package.json"))
        .ok()
        .flatten()
        .and_then(|p| {
            p.get("name")
                .and_then(Value::as_str)
                .map(|n| n == "pi-relay")
        })
        .unwrap_or(false)
}

/// Where Pi would find Relay, as Pi resolves packages: the `packages` and `extensions` entries of
/// the global settings (scope folder: the agent folder) and, when the project is trusted, of the
/// project's `.pi/settings.json` (scope folder: `<project>/.pi`). An `npm:` source is installed in
/// the scope's npm tree (`<scope>/npm/node_modules/<name>`), a git source in the scope's git
/// folder (`<scope>/git/<host>/<owner>/<repo>`), anything else is a local path (a file is an
/// extension's entry: its package is the nearest folder above it that is one); the scope's
/// `extensions/` folder is searched as Pi discovers extensions there. Only Relay's own package
/// counts. Returns the folders found, in the order Pi's settings name them, and a note when an
/// untrusted project's settings name packages Pi will not load.
fn relay_package_dirs(
    agent: &Path,
    sources: &ConfigSources,
    cwd: &Path,
) -> (Vec<PathBuf>, Option<String>) {
    let project_base = cwd.join(".pi");
    let mut scopes = vec![(sources.global.as_ref(), agent.to_path_buf())];
    let mut note = None;
    if let Some(project) = sources.project.as_ref() {
        if sources.project_trusted {
            scopes.insert(0, (Some(project), project_base.clone()));
        } else if ["packages", "extensions"].iter().any(|k| {
            project
                .get(*k)
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        }) {
            note = Some(format!(
                "{} names packages, but the project is not trusted: Pi loads them only after trust is granted",
                project_base.join("settings.json").display()
            ));
        }
    }
    let mut dirs = Vec::new();
    for (settings, base) in scopes {
        let entries = ["packages", "extensions"].iter().flat_map(|key| {
            settings
                .and_then(|g| g.get(*key))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        });
        for entry in entries {
            let source = match &entry {
                Value::String(s) => s.clone(),
                Value::Object(o) => match o.get("source").and_then(Value::as_str) {
                    Some(s) => s.to_string(),
                    None => continue,
                },
                _ => continue,
            };
            let source = source.trim();
            if let Some(spec) = source.strip_prefix("npm:") {
                let name = npm_name(spec);
                if !name.is_empty() {
                    dirs.push(base.join("npm/node_modules").join(name));
                }
            } else if is_git_source(source) {
                for host in subdirs(&base.join("git")) {
                    for owner in subdirs(&host) {
                        dirs.extend(subdirs(&owner));
                    }
                }
            } else {
                let path = local_path(source, &base);
                if path.is_file() {
                    dirs.extend(path.ancestors().skip(1).take(4).map(Path::to_path_buf));
                } else {
                    dirs.push(path);
                }
            }
        }
        dirs.extend(subdirs(&base.join("extensions")));
    }
    let mut found: Vec<PathBuf> = Vec::new();
    for d in dirs {
        if is_relay_package(&d) && !found.contains(&d) {
            found.push(d);
        }
    }
    (found, note)
}

fn check_core(agent: &Path, sources: &ConfigSources, cwd: &Path) -> Check {
    let name = triple();
    if let Some(addon) = std::env::var_os("RELAY_ADDON").filter(|a| !a.is_empty()) {
        let addon = PathBuf::from(addon);
        return if addon.is_file() {
            Check {
                name: "core",
                ok: true,
                optional: false,
                found: format!("RELAY_ADDON={}", addon.display()),
                fix: None,
            }
        } else {
            Check {
                name: "core",
                ok: false,
                optional: false,
                found: format!("RELAY_ADDON={} is not a file", addon.display()),
                fix: Some("unset RELAY_ADDON or point it at a built relay.node".into()),
            }
        };
    }
    let (dirs, untrusted) = relay_package_dirs(agent, sources, cwd);
    if dirs.is_empty() {
        return Check {
            name: "core",
            ok: false,
            optional: false,
            found: format!(
                "Pi's settings ({}, and a trusted project's .pi/settings.json) name no pi-relay package or extension{}",
                agent.join("settings.json").display(),
                untrusted.map(|n| format!("; {n}")).unwrap_or_default()
            ),
            fix: Some(
                "install Relay into Pi: `pi install npm:pi-relay`, or `pi install /path/to/relay/extension` after `make build`"
                    .into(),
            ),
        };
    }
    let platform_package = format!("pi-relay-{name}");
    let file = format!("relay.{name}.node");
    let mut looked = Vec::new();
    for dir in &dirs {
        let mut candidates = vec![
            dir.join("native").join(&file),
            dir.join("node_modules").join(&platform_package).join(&file),
        ];
        // npm puts the optional dependency beside the package, too.
        if let Some(parent) = dir.parent() {
            candidates.push(parent.join(&platform_package).join(&file));
        }
        if let Some(found) = candidates.iter().find(|c| c.is_file()) {
            return Check {
                name: "core",
                ok: true,
                optional: false,
                found: format!("{} (for {name})", found.display()),
                fix: None,
            };
        }
        looked.extend(candidates);
    }
    Check {
        name: "core",
        ok: false,
        optional: false,
        found: format!(
            "no Relay core for {name}; looked at {}",
            looked
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        fix: Some(format!(
            "reinstall pi-relay with optional dependencies ({platform_package}), or build the core with `make build` in a Relay checkout, or set RELAY_ADDON"
        )),
    }
}

/// Whether `dir`, or the nearest folder above it that exists, lets this user create files.
fn writable(dir: &Path) -> Result<String, String> {
    let mut d = Some(dir);
    while let Some(cur) = d {
        if cur.exists() {
            if !cur.is_dir() {
                return Err(format!("{} is not a folder", cur.display()));
            }
            return match rustix::fs::access(cur, rustix::fs::Access::WRITE_OK) {
                Ok(()) if cur == dir => Ok(format!("{} (writable)", dir.display())),
                Ok(()) => Ok(format!(
                    "{} (absent; created on first use under {})",
                    dir.display(),
                    cur.display()
                )),
                Err(e) => Err(format!("{} is not writable ({e})", cur.display())),
            };
        }
        d = cur.parent();
    }
    Err(format!("no folder of {} exists", dir.display()))
}

/// `relay doctor`: exit 0 when every check passes but the optional ones, 1 otherwise.
pub fn doctor(
    pi: Option<PathBuf>,
    cwd: Option<PathBuf>,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let cwd = current_dir(cwd)?;
    let agent = agent_dir()?;
    let (sources, notes, _) = sources_on_disk(&cwd, None)?;
    let mut checks = vec![check_pi(pi), check_core(&agent, &sources, &cwd)];
    let report = effective_config(&sources, &ConfigQuery::default());
    let warnings: Vec<String> = notes.into_iter().chain(report.warnings).collect();
    checks.push(if warnings.is_empty() {
        Check {
            name: "settings",
            ok: true,
            optional: false,
            found: "every setting parses (`relay config` shows them)".into(),
            fix: None,
        }
    } else {
        Check {
            name: "settings",
            ok: false,
            optional: false,
            found: warnings.join("; "),
            fix: Some("correct or remove each key named (the default applies meanwhile)".into()),
        }
    });
    let state = sources
        .resolved_state_dir()
        .map(PathBuf::from)
        .unwrap_or_else(|| agent.join("context-budget"));
    for (name, dir, what) in [
        ("state folder", state, "PI_CONTEXT_BUDGET_STATE_DIR"),
        (
            "handoff folder",
            cwd.join(".ai-work/handoffs"),
            "the project folder",
        ),
    ] {
        checks.push(match writable(&dir) {
            Ok(found) => Check {
                name,
                ok: true,
                optional: false,
                found,
                fix: None,
            },
            Err(found) => Check {
                name,
                ok: false,
                optional: false,
                found,
                fix: Some(format!(
                    "make it writable for this user (or choose another with {what})"
                )),
            },
        });
    }
    checks.push(match on_path("pi-session") {
        Some(p) => Check {
            name: "pi-session",
            ok: true,
            optional: false,
            found: p.display().to_string(),
            fix: None,
        },
        None => Check {
            name: "pi-session",
            ok: false,
            optional: true,
            found: "no `pi-session` on PATH (optional: needed only for a relaunch in a fresh process)".into(),
            fix: Some(
                "`cargo install --path crates/relay-cli` in a Relay checkout installs relay and pi-session"
                    .into(),
            ),
        },
    });
    let failed = checks.iter().filter(|c| !c.ok && !c.optional).count();
    if json {
        writeln!(out, "{}", json!({ "checks": checks, "failed": failed }))?;
    } else {
        for c in &checks {
            writeln!(
                out,
                "{} {:<14} {}",
                match (c.ok, c.optional) {
                    (true, _) => "ok  ",
                    (false, true) => "note",
                    (false, false) => "FAIL",
                },
                c.name,
                c.found
            )?;
            if let Some(fix) = &c.fix {
                writeln!(out, "     {:<14} fix: {fix}", "")?;
            }
        }
    }
    Ok(if failed == 0 {
        Outcome::Done
    } else {
        Outcome::Nothing(format!(
            "{failed} check{} failed",
            if failed == 1 { "" } else { "s" }
        ))
    })
}
