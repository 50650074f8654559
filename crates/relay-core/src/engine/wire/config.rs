//! The configuration the host hands in: the raw sources ([`ConfigSources`]) and the facts of
//! the files and the wrapper they name ([`WrapperFacts`], [`BudgetFilePath`]), with the caps on
//! the files the binding reads for the engine.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The raw configuration sources the adapter collects. Which value wins is decided here, the way
/// Pi merges its own settings (`settings::SettingsLayers` in relay-core).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ConfigSources {
    /// Pi's settings object for this runtime (`pi.getSettings()`, or the global `settings.json`
    /// on a Pi without it), unmerged with anything by the extension.
    #[cfg_attr(test, ts(type = "unknown"))]
    pub global: Option<Value>,
    /// Why the global settings file could not be read, when the extension read it itself (a Pi
    /// without `getSettings()`).
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub global_error: Option<String>,
    /// The project's `.pi/settings.json` as it is on disk, or `None` when there is none or the
    /// project is not trusted (the binding reads it, [`ConfigSources::project_file_to_read`];
    /// never sent by the extension).
    #[serde(skip)]
    pub project: Option<Value>,
    /// Why the project's settings file could not be read or parsed (set by the reader, never
    /// sent by the extension).
    #[serde(skip)]
    pub project_error: Option<String>,
    /// Where the project's settings file is (`<cwd>/.pi/settings.json`): read by the binding
    /// only when the project is trusted.
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub project_file: Option<String>,
    /// `ctx.isProjectTrusted()`: only a trusted project's settings apply, and only a trusted
    /// project's settings file is opened at all.
    pub project_trusted: bool,
    /// Path of Pi's global settings file, to name it in warnings.
    pub global_file: Option<String>,
    /// `PI_CONTEXT_BUDGET_CONFIG` as the process has it (`null` when unset): names the budget
    /// policy file explicitly. Which file applies is decided by [`ConfigSources::budget_file_path`].
    pub budget_config_env: Option<String>,
    /// Pi's agent directory (`getAgentDir()`: `PI_CODING_AGENT_DIR`, else `~/.pi/agent`), home of
    /// the default budget policy file `context-budget.json`.
    pub agent_dir: Option<String>,
    /// `PI_CONTEXT_BUDGET_STATE_DIR` as the process has it: where status and events go; unset or
    /// empty, `<agent dir>/context-budget` ([`ConfigSources::resolved_state_dir`]).
    pub state_dir: Option<String>,
    pub cwd: Option<String>,
    /// The pi-session wrapper's variables and this process's identity, for the engine to decide
    /// whether this runtime owns the wrapper ([`super::wrapper`]). `null`: not collected.
    #[serde(default)]
    pub wrapper: Option<WrapperFacts>,
    /// `PI_RESUME_CHECK` as the process has it (the operator's resume check command).
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub resume_check_env: Option<String>,
    /// The budget policy file's contents, when it exists and could be read (the binding reads
    /// it; never sent by the extension).
    #[serde(skip)]
    pub budget_file: Option<String>,
    /// Why the budget policy file could not be read (an absent file leaves this and
    /// `budget_file` empty).
    #[serde(skip)]
    pub budget_file_error: Option<String>,
    /// Why the guard library (`<agent dir>/lib/guards.ts`) was not loaded, when it exists and
    /// was refused (not a regular file, too large, or its import did not finish in time).
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub guards_error: Option<String>,
    /// `PI_QUESTIONS_HOME` as the process has it: the pending-questions store's home (else under
    /// the agent directory).
    #[serde(default)]
    pub questions_home: Option<String>,
    /// The OS temporary directory (`os.tmpdir()`), where pi-subagents keeps its task folders.
    #[serde(default)]
    pub tmp_dir: Option<String>,
    /// The process's user id (`process.getuid()`), `null` where there is none.
    #[serde(default)]
    pub uid: Option<u32>,
}

/// The largest settings file (global or project `settings.json`) Relay reads; a larger one is
/// refused with a warning naming it, and its settings are ignored.
pub const MAX_SETTINGS_FILE_BYTES: u64 = 1024 * 1024;
/// The largest budget policy file (`context-budget.json`) Relay reads; a larger one is refused
/// like an unreadable one (safe observe mode and a warning naming it).
pub const MAX_BUDGET_FILE_BYTES: u64 = 1024 * 1024;
/// The largest relaunch key file read (a key is 64 hex digits); symbolic links are not followed.
pub const MAX_RELAUNCH_KEY_BYTES: u64 = 4096;
/// The largest guard library (`<agent dir>/lib/guards.ts`) the host may import.
pub const MAX_GUARDS_BYTES: u64 = 1024 * 1024;

/// What a [`crate::engine::Work::Vet`] job found at its path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Vetted {
    /// Nothing there.
    Missing,
    /// A regular file within the cap.
    Regular,
    /// Something else, or a file too large or unreadable: `why`.
    Refused { why: String },
}

/// Facts about the pi-session wrapper as this process sees them (the extension collects them;
/// the engine decides ownership from them and the hosting rule).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct WrapperFacts {
    /// `PI_RELAUNCH_MARKER`: the exact marker path the wrapper gave this launch.
    pub relaunch_marker: Option<String>,
    /// `PI_SESSION_WRAPPER`.
    pub wrapper: Option<String>,
    /// `PI_SESSION_WRAPPER_PID`, as the environment has it (a string, judged by the engine).
    pub wrapper_pid: Option<String>,
    /// `PI_SESSION_LAUNCH_ID`: the launch's nonce.
    pub launch_id: Option<String>,
    /// `process.pid`.
    pub pid: u32,
    /// `process.ppid`: the wrapper, when Pi is the wrapper's own child.
    pub ppid: u32,
    /// `getSessionFile()` (`null` in memory).
    pub session_file: Option<String>,
    /// `PI_RELAUNCH_KEY_FILE`: where the wrapper put this launch's key (the binding takes it
    /// from there once per process and removes the file: relay-io `relaunch::take_key`).
    #[serde(default)]
    pub relaunch_key_file: Option<String>,
    /// The key that file held (64 hex digits), which signs the marker. Never shown, and never
    /// sent by the extension: set by the binding's reader.
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub relaunch_key: Option<RelaunchKey>,
    /// Why the key file could not be read (set by the reader, like the key).
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub relaunch_key_error: Option<String>,
}

/// The pi-session wrapper's relaunch key for this launch, as the binding read it. It is never
/// shown: `Debug` and serialization give `[redacted]`, so neither the status file, an event, a
/// log line nor an error can carry it.
#[derive(Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(transparent)]
pub struct RelaunchKey(String);

impl RelaunchKey {
    pub fn new(hex: impl Into<String>) -> Self {
        RelaunchKey(hex.into())
    }

    /// The key's text, for the one place that signs with it (the binding).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Exactly 64 lowercase hex digits (32 bytes), as the wrapper writes it.
    pub fn is_well_formed(&self) -> bool {
        self.0.len() == 64
            && self
                .0
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }
}

impl std::fmt::Debug for RelaunchKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl Serialize for RelaunchKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("[redacted]")
    }
}

/// The budget policy file Relay reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetFilePath {
    pub path: String,
    /// Named by `PI_CONTEXT_BUDGET_CONFIG`: its absence is a warning. The default file
    /// (`<agent dir>/context-budget.json`) may be absent silently.
    pub explicit: bool,
}

/// Where Relay's status files and events go: `env` (`PI_CONTEXT_BUDGET_STATE_DIR`) when set and
/// not empty, else `<agent dir>/context-budget`; `None` without either. The one rule the
/// extension and the CLI share.
pub fn state_dir(env: Option<&str>, agent_dir: Option<&str>) -> Option<String> {
    if let Some(dir) = env.filter(|d| !d.is_empty()) {
        return Some(dir.to_string());
    }
    let dir = agent_dir.filter(|d| !d.is_empty())?;
    let sep = if dir.ends_with('/') { "" } else { "/" };
    Some(format!("{dir}{sep}context-budget"))
}

impl ConfigSources {
    /// Pi's settings layers as these sources hold them (global, then the trusted project's).
    pub fn settings_layers(&self) -> crate::settings::SettingsLayers {
        crate::settings::SettingsLayers::merge(
            self.global.as_ref(),
            self.global_error.as_deref(),
            self.project.as_ref(),
            self.project_trusted,
            self.project_error.as_deref(),
            self.global_file.as_deref(),
        )
    }

    /// Where status and events go (see [`state_dir`]).
    pub fn resolved_state_dir(&self) -> Option<String> {
        state_dir(self.state_dir.as_deref(), self.agent_dir.as_deref())
    }

    /// The project settings file the host is to read: only a trusted project's (an untrusted
    /// project's file is never opened, as in Pi).
    pub fn project_file_to_read(&self) -> Option<&str> {
        self.project_file
            .as_deref()
            .filter(|f| self.project_trusted && !f.is_empty())
    }

    /// Take what the host read of the project settings file: its text (`Ok(None)`: no file), or
    /// why it was refused or could not be read. Parses it as Pi does (an empty file is `{}`).
    pub fn set_project_text(&mut self, read: Result<Option<String>, String>) {
        (self.project, self.project_error) = match read {
            Ok(None) => (None, None),
            Ok(Some(text)) if text.trim().is_empty() => {
                (Some(Value::Object(Default::default())), None)
            }
            Ok(Some(text)) => match serde_json::from_str(&text) {
                Ok(v) => (Some(v), None),
                Err(e) => (None, Some(e.to_string())),
            },
            Err(why) => (None, Some(why)),
        };
    }

    /// `PI_CONTEXT_BUDGET_CONFIG` when it is set and not empty, else `<agent dir>/context-budget.json`
    /// (seed 004), else none.
    pub fn budget_file_path(&self) -> Option<BudgetFilePath> {
        if let Some(path) = self.budget_config_env.as_deref().filter(|p| !p.is_empty()) {
            return Some(BudgetFilePath {
                path: path.to_string(),
                explicit: true,
            });
        }
        let dir = self.agent_dir.as_deref().filter(|d| !d.is_empty())?;
        let sep = if dir.ends_with('/') { "" } else { "/" };
        Some(BudgetFilePath {
            path: format!("{dir}{sep}context-budget.json"),
            explicit: false,
        })
    }
}
