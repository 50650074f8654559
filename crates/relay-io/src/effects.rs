//! The file effects of an engine output, done by the host on its own thread: Relay's event log,
//! the status file and the relaunch marker (each a small write), and the configuration files read
//! before the engine sees the configuration. Everything else in an output is the extension's.
//!
//! A failed write never fails the hook: it goes back to the engine
//! ([`relay_core::engine::Input::WriteFailed`]), which tells the user of the first one, and a
//! status failure is also an `error` event (once) when the event log can still be written. A relaunch marker that could not be written is handed back: the host tells
//! the engine ([`relay_core::engine::Input::RelaunchUnwritten`]), which resets in-process instead.

use std::path::{Path, PathBuf};

use relay_core::engine::files::{RelaunchMarker, TelemetryEvent, TelemetryLine};
use relay_core::engine::{ConfigSources, Effect, RelaunchKey};

use crate::jobs::now_ms;

/// Where Relay's files go.
#[derive(Debug, Default)]
pub struct Files {
    /// `PI_CONTEXT_BUDGET_STATE_DIR`, or agentDir/context-budget (from the configuration).
    state_dir: Option<PathBuf>,
    /// A failed status write was logged as an `error` event (once: the log is not flooded).
    status_failure_logged: bool,
}

/// What [`Files::execute`] leaves: the effects for the extension, the writes that failed (for
/// the engine), and why the relaunch marker could not be written (then no `shutdown` is among
/// the effects).
#[derive(Debug, Default)]
pub struct Executed {
    pub effects: Vec<Effect>,
    pub failed_writes: Vec<String>,
    pub relaunch_unwritten: Option<String>,
}

impl Files {
    /// Read the files `sources` names (see [`read_config_files`]) and remember the state folder.
    pub fn configure(&mut self, sources: &mut ConfigSources) {
        read_config_files(sources);
        self.state_dir = sources.resolved_state_dir().map(PathBuf::from);
    }

    /// Append an `error` event (`kind`: hook, config, telemetry) to events.jsonl; a failure to do
    /// so is reported once through [`Files::execute`]'s path.
    pub fn error_event(&mut self, kind: &str, session_id: &str, message: &str) {
        let Some(dir) = &self.state_dir else { return };
        let event = TelemetryLine {
            ts: Some(now_ms()),
            session_id: session_id.to_string(),
            window_id: None,
            mode: None,
            would: false,
            event: TelemetryEvent::Error {
                kind: kind.to_string(),
                path: None,
                message: message.to_string(),
            },
        };
        // An unwritable event log is reported once by `execute`.
        let _ = crate::telemetry::append_event(dir, &event);
    }

    /// Perform the file effects among `effects` (of session `session_id`) and keep the rest.
    pub fn execute(&mut self, effects: Vec<Effect>, session_id: &str) -> Executed {
        let mut done = Executed {
            effects: Vec::with_capacity(effects.len()),
            ..Executed::default()
        };
        for effect in effects {
            match effect {
                Effect::WriteRelaunchMarker { path, marker, key } => {
                    if let Err(why) = write_relaunch_marker(&path, &marker, &key) {
                        // The engine's `relaunch_failed` event and warning say why.
                        done.relaunch_unwritten = Some(why);
                    }
                }
                Effect::RemoveRelaunchMarker { path } => {
                    let _ = std::fs::remove_file(path);
                }
                // Pi is only asked to shut down for a relaunch once its marker is written.
                Effect::Shutdown if done.relaunch_unwritten.is_some() => {}
                Effect::Telemetry { mut event } => {
                    // Events made without a clock (configuration problems) get their time here.
                    event.ts.get_or_insert_with(now_ms);
                    let failed = self.state_dir.as_ref().and_then(|dir| {
                        crate::telemetry::append_event(dir, &event).err().map(|e| {
                            format!(
                                "relay: cannot append to {}: {e}",
                                crate::telemetry::events_path(dir).display()
                            )
                        })
                    });
                    done.failed_writes.extend(failed);
                }
                Effect::WriteStatus { mut status } => {
                    status.pid = Some(std::process::id());
                    let failed = self.state_dir.as_ref().and_then(|dir| {
                        crate::telemetry::write_status(dir, session_id, &status)
                            .err()
                            .map(|e| {
                                format!(
                                    "relay: cannot write the status file in {}: {e}",
                                    dir.display()
                                )
                            })
                    });
                    if let Some(text) = failed {
                        if !self.status_failure_logged {
                            self.status_failure_logged = true;
                            self.error_event("telemetry", session_id, &text);
                        }
                        done.failed_writes.push(text);
                    }
                }
                other => done.effects.push(other),
            }
        }
        done
    }
}

/// Sign and write the pi-session relaunch marker (the handoff and launch prompt files are
/// checked first). The error says why; it never contains the key.
pub fn write_relaunch_marker(
    path: &str,
    marker: &RelaunchMarker,
    key: &RelaunchKey,
) -> Result<(), String> {
    let key = crate::relaunch::Key::from_hex(key.expose())
        .ok_or_else(|| "the relaunch key is not 64 hex digits".to_string())?;
    crate::relaunch::write_marker(Path::new(path), &key, marker)
}

/// Read the files the configuration names: the budget policy file, the project's settings file
/// when the project is trusted (never opened otherwise), and the relaunch key file
/// ([`crate::relaunch::take_key`]). On Pi's thread, so each is read as
/// something that cannot block: opened without blocking, only a regular file, within its cap
/// ([`crate::fsx::read_small_text`]); a FIFO, a device or an oversize file is refused and
/// reported by the engine as unreadable, naming the file.
pub fn read_config_files(sources: &mut ConfigSources) {
    use crate::fsx::read_small_text;
    use relay_core::engine::wire::{MAX_BUDGET_FILE_BYTES, MAX_SETTINGS_FILE_BYTES};
    if let Some(file) = sources.budget_file_path() {
        match read_small_text(Path::new(&file.path), MAX_BUDGET_FILE_BYTES, true) {
            Ok(text) => sources.budget_file = text,
            Err(e) => sources.budget_file_error = Some(e.to_string()),
        }
    }
    if let Some(file) = sources.project_file_to_read().map(PathBuf::from) {
        let read = read_small_text(&file, MAX_SETTINGS_FILE_BYTES, true).map_err(|e| e.to_string());
        sources.set_project_text(read);
    }
    // The launch's key, taken when the runtime was described (else now; once per process).
    if let Some(wrapper) = sources.wrapper.as_mut() {
        if let Some(file) = wrapper
            .relaunch_key_file
            .as_deref()
            .filter(|f| !f.is_empty())
        {
            match crate::relaunch::take_key(file) {
                Ok(key) => wrapper.relaunch_key = Some(key),
                Err(why) => wrapper.relaunch_key_error = Some(why),
            }
        }
    }
}
