//! napi-rs binding: the `Engine` class the Pi extension holds. JSON strings cross the boundary in
//! both directions; errors come back as JS exceptions with a clear message (never a crash).
#![deny(clippy::all)]

use napi::bindgen_prelude::*;
use napi_derive::napi;
use relay_core::engine::{self, ConfigSources, Observation};
use relay_core::entry::{parse_entries, Entry};

fn invalid(what: &str, err: impl std::fmt::Display) -> Error {
    Error::new(Status::InvalidArg, format!("relay: invalid {what}: {err}"))
}

#[napi]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The engine held by the extension: branch mirror plus every decision.
#[napi(js_name = "Engine")]
pub struct JsEngine {
    inner: engine::Engine,
    reported: Vec<String>,
}

impl Default for JsEngine {
    fn default() -> Self {
        Self::new()
    }
}

#[napi]
impl JsEngine {
    #[napi(constructor)]
    pub fn new() -> Self {
        JsEngine {
            inner: engine::Engine::new(),
            reported: Vec::new(),
        }
    }

    /// Validate and apply configuration sources; returns a HookReply with one warning per problem.
    #[napi]
    pub fn configure(&mut self, json: String) -> Result<String> {
        let sources: ConfigSources =
            serde_json::from_str(&json).map_err(|e| invalid("configuration sources", e))?;
        let reply = self.inner.configure_reply(&sources, &mut self.reported);
        serde_json::to_string(&reply).map_err(|e| invalid("reply", e))
    }

    /// Replace the mirror with a whole branch (JSON array of entries, root first).
    #[napi]
    pub fn resync(&mut self, session_id: String, entries_json: String) -> Result<()> {
        let entries = parse_entries(&entries_json).map_err(|e| invalid("branch entries", e))?;
        self.inner.resync(&session_id, &entries);
        Ok(())
    }

    /// Replace the mirror by reading the session file and taking the branch that ends at `leaf_id`.
    /// Returns false when the file does not contain that leaf (the caller then resyncs from Pi).
    #[napi]
    pub fn load_session_file(&mut self, session_id: String, path: String, leaf_id: String) -> bool {
        let Ok(parsed) = relay_io::read_session(std::path::Path::new(&path)) else {
            return false;
        };
        let indices = relay_core::entry::branch_indices(&parsed.entries, Some(&leaf_id));
        match indices.last() {
            Some(&last) if parsed.entries[last].id == leaf_id => {}
            _ => return false,
        }
        let branch: Vec<Entry> = {
            let mut entries = parsed.entries;
            let mut keep = vec![false; entries.len()];
            for &i in &indices {
                keep[i] = true;
            }
            let mut k = keep.into_iter();
            entries.retain(|_| k.next().unwrap_or(false));
            entries
        };
        self.inner.resync(&session_id, &branch);
        true
    }

    #[napi]
    pub fn has_entry(&self, id: String) -> bool {
        self.inner.contains(&id)
    }

    #[napi]
    pub fn tip_id(&self) -> Option<String> {
        self.inner.tip().map(str::to_string)
    }

    #[napi]
    pub fn truncate_after(&mut self, id: Option<String>) {
        self.inner.truncate_after(id.as_deref());
    }

    /// Append entries that follow the tip (JSON array, root first).
    #[napi]
    pub fn append(&mut self, entries_json: String) -> Result<()> {
        let entries = parse_entries(&entries_json).map_err(|e| invalid("new entries", e))?;
        self.inner.append(&entries);
        Ok(())
    }

    /// Run a tool; returns a ToolReply.
    #[napi]
    pub fn tool(
        &mut self,
        name: String,
        args_json: String,
        observation_json: String,
    ) -> Result<String> {
        let args: serde_json::Value =
            serde_json::from_str(&args_json).map_err(|e| invalid("tool arguments", e))?;
        let moment: engine::Moment =
            serde_json::from_str(&observation_json).map_err(|e| invalid("tool observation", e))?;
        let reply = self.inner.tool(&name, &args, &moment);
        serde_json::to_string(&reply).map_err(|e| invalid("reply", e))
    }

    /// Feed one observation; returns a HookReply.
    #[napi]
    pub fn handle(&mut self, observation_json: String) -> Result<String> {
        let obs: Observation =
            serde_json::from_str(&observation_json).map_err(|e| invalid("observation", e))?;
        let reply = self.inner.handle(&obs);
        serde_json::to_string(&reply).map_err(|e| invalid("reply", e))
    }

    /// The tools' names, labels and descriptions.
    #[napi]
    pub fn tool_specs(&self) -> String {
        serde_json::to_string(&engine::tool_specs()).unwrap_or_else(|_| "[]".into())
    }
}
