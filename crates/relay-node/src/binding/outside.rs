//! What the binding does outside the engine on Pi's thread: the relaunch marker's signed write,
//! the `/relay on|off` a `/reload` hands the new engine, and the configuration files read as
//! something that cannot block.

use std::path::PathBuf;
use std::sync::Mutex;

use relay_core::engine::{self, ConfigSources};

/// Sign and write the pi-session relaunch marker (relay-io checks the handoff and launch prompt
/// files first). The error says why; it never contains the key.
pub(super) fn write_relaunch_marker(
    path: &str,
    marker: &engine::files::RelaunchMarker,
    key: &engine::RelaunchKey,
) -> Result<(), String> {
    let key = relay_io::relaunch::Key::from_hex(key.expose())
        .ok_or_else(|| "the relaunch key is not 64 hex digits".to_string())?;
    relay_io::relaunch::write_marker(std::path::Path::new(path), &key, marker)
}

/// The user's last `/relay on|off` per session, for this process: the addon outlives the
/// engines a `/reload` re-creates (the library is loaded once), so the new engine is handed the
/// toggle again. A restart of Pi, or another session, starts from the `relay.enabled` setting.
pub(super) fn toggles() -> &'static Mutex<std::collections::HashMap<String, String>> {
    static TOGGLES: std::sync::OnceLock<Mutex<std::collections::HashMap<String, String>>> =
        std::sync::OnceLock::new();
    TOGGLES.get_or_init(|| Mutex::new(std::collections::HashMap::new()))
}

pub(super) fn remember_toggle(session: &str, args: &str) {
    let mut map = match toggles().lock() {
        Ok(map) => map,
        Err(poisoned) => poisoned.into_inner(),
    };
    map.insert(session.to_string(), args.to_string());
}

pub(super) fn recall_toggle(session: &str) -> Option<String> {
    let map = match toggles().lock() {
        Ok(map) => map,
        Err(poisoned) => poisoned.into_inner(),
    };
    map.get(session).cloned()
}

/// Read the files the configuration names: the budget policy file, and the project's settings
/// file when the project is trusted (never opened otherwise). On Pi's thread, so each is read as
/// something that cannot block: opened without blocking, only a regular file, within its cap
/// (`relay_io::fsx::read_small_text`); a FIFO, a device or an oversize file is refused and
/// reported by the engine as unreadable, naming the file.
pub(super) fn read_config_files(sources: &mut ConfigSources) {
    use relay_core::engine::wire::{MAX_BUDGET_FILE_BYTES, MAX_SETTINGS_FILE_BYTES};
    use relay_io::fsx::read_small_text;
    if let Some(file) = sources.budget_file_path() {
        match read_small_text(
            std::path::Path::new(&file.path),
            MAX_BUDGET_FILE_BYTES,
            true,
        ) {
            Ok(text) => sources.budget_file = text,
            Err(e) => sources.budget_file_error = Some(e.to_string()),
        }
    }
    if let Some(file) = sources.project_file_to_read().map(PathBuf::from) {
        let read = read_small_text(&file, MAX_SETTINGS_FILE_BYTES, true).map_err(|e| e.to_string());
        sources.set_project_text(read);
    }
}
