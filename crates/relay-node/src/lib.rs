//! napi-rs binding: the `Engine` class the Pi extension holds. JSON strings cross the boundary in
//! both directions; errors come back as JS exceptions with a clear message (never a crash).
#![deny(clippy::all)]

use napi::bindgen_prelude::*;
use napi_derive::napi;
use relay_core::engine::{self, ConfigSources, Effect, GitFacts, Observation, ToolReply};
use relay_core::entry::{parse_entry, Entry, EntryKind};
use std::path::{Path, PathBuf};

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
    /// Problems found in entries Pi handed over, reported with the next hook's reply.
    warnings: Vec<String>,
    /// Where status and events are written (`PI_CONTEXT_BUDGET_STATE_DIR` or agentDir/context-budget).
    state_dir: Option<PathBuf>,
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
            warnings: Vec::new(),
            state_dir: None,
        }
    }

    /// Validate and apply configuration sources; returns a HookReply with one warning per problem.
    #[napi]
    pub fn configure(&mut self, json: String) -> Result<String> {
        let mut sources: ConfigSources =
            serde_json::from_str(&json).map_err(|e| invalid("configuration sources", e))?;
        // The budget policy file is re-read each time (startup and every input), as seed 004 does.
        if let Some(path) = sources.budget_config_path.clone() {
            match std::fs::read_to_string(&path) {
                Ok(text) => sources.budget_file = Some(text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => sources.budget_file_error = Some(e.to_string()),
            }
        }
        self.state_dir = sources.state_dir.as_deref().map(PathBuf::from);
        let mut reply = self.inner.configure_reply(&sources, &mut self.reported);
        self.execute(&mut reply.effects);
        serde_json::to_string(&reply).map_err(|e| invalid("reply", e))
    }

    /// Replace the mirror with a whole branch (JSON array of entries, root first).
    #[napi]
    pub fn resync(&mut self, session_id: String, entries_json: String) -> Result<()> {
        let entries = self
            .entries_of(&entries_json)
            .map_err(|e| invalid("branch entries", e))?;
        self.inner.resync(&session_id, &entries);
        Ok(())
    }

    /// Replace the mirror by reading the session file and taking the branch that ends at `leaf_id`.
    /// Returns false when the file does not contain that leaf (the caller then resyncs from Pi).
    #[napi]
    pub fn load_session_file(&mut self, session_id: String, path: String, leaf_id: String) -> bool {
        struct Replay<'a> {
            engine: &'a mut engine::Engine,
            session_id: &'a str,
            begun: bool,
        }
        impl relay_core::entry::BranchSink for Replay<'_> {
            fn begin(&mut self) {
                self.engine.begin_resync(self.session_id);
                self.begun = true;
            }
            fn entry(&mut self, entry: Entry) {
                self.engine.push_replayed(&entry);
            }
            fn entry_ref(&mut self, entry: &Entry) {
                self.engine.push_replayed(entry);
            }
        }
        let mut replay = Replay {
            engine: &mut self.inner,
            session_id: &session_id,
            begun: false,
        };
        let found =
            relay_io::session::stream_session_branch(Path::new(&path), &leaf_id, &mut replay);
        if replay.begun {
            replay.engine.end_resync();
        }
        matches!(found, Ok(true))
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
        let entries = self
            .entries_of(&entries_json)
            .map_err(|e| invalid("new entries", e))?;
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
        let mut reply = if name == "context_handoff" {
            self.handoff(&args, &moment)
        } else {
            self.inner.tool(&name, &args, &moment)
        };
        self.execute(&mut reply.effects);
        serde_json::to_string(&reply).map_err(|e| invalid("reply", e))
    }

    /// Feed one observation; returns a HookReply.
    #[napi]
    pub fn handle(&mut self, observation_json: String) -> Result<String> {
        let obs: Observation =
            serde_json::from_str(&observation_json).map_err(|e| invalid("observation", e))?;
        let mut reply = self.inner.handle(&obs);
        self.execute(&mut reply.effects);
        serde_json::to_string(&reply).map_err(|e| invalid("reply", e))
    }

    /// The tools' names, labels and descriptions.
    #[napi]
    pub fn tool_specs(&self) -> String {
        serde_json::to_string(&engine::tool_specs()).unwrap_or_else(|_| "[]".into())
    }
}

/// The fields every entry needs to keep its place on the branch.
#[derive(serde::Deserialize)]
struct Skeleton {
    #[serde(rename = "type")]
    entry_type: Option<String>,
    id: Option<String>,
    #[serde(rename = "parentId")]
    parent_id: Option<String>,
    timestamp: Option<String>,
}

impl JsEngine {
    /// Parse a JSON array of branch entries. An entry that does not parse keeps its place on the
    /// branch as an unknown entry (with a warning) instead of failing the whole batch, so that one
    /// odd entry never stops the mirror (or every later hook) from working.
    fn entries_of(&mut self, json: &str) -> std::result::Result<Vec<Entry>, serde_json::Error> {
        let raws: Vec<&serde_json::value::RawValue> = serde_json::from_str(json)?;
        let mut entries = Vec::with_capacity(raws.len());
        for (index, raw) in raws.into_iter().enumerate() {
            match parse_entry(raw.get()) {
                Ok(entry) => entries.push(entry),
                Err(error) => {
                    let skeleton: Option<Skeleton> = serde_json::from_str(raw.get()).ok();
                    match skeleton {
                        Some(Skeleton {
                            entry_type,
                            id: Some(id),
                            parent_id,
                            timestamp,
                        }) if !id.is_empty() => {
                            self.warnings.push(format!(
                                "relay: entry {id} could not be read ({error}); it is kept without content"
                            ));
                            entries.push(Entry {
                                id,
                                parent_id,
                                timestamp: timestamp.unwrap_or_default(),
                                kind: EntryKind::Unknown {
                                    entry_type: entry_type.unwrap_or_default(),
                                },
                            });
                        }
                        _ => self.warnings.push(format!(
                            "relay: branch element {index} has no usable id and was skipped ({error})"
                        )),
                    }
                }
            }
        }
        Ok(entries)
    }

    /// Perform the file effects here (telemetry and status) and leave the rest for the extension.
    /// A telemetry write failure never fails the hook: it becomes a warning on stderr.
    fn execute(&mut self, effects: &mut Vec<Effect>) {
        let session_id = self.inner.history().session_id().to_string();
        let mut kept = Vec::with_capacity(effects.len());
        for text in self.warnings.drain(..) {
            kept.push(Effect::Log { text });
        }
        for effect in effects.drain(..) {
            match effect {
                Effect::Telemetry { event } => {
                    if let Some(dir) = &self.state_dir {
                        if let Err(e) = relay_io::telemetry::append_event(dir, &event) {
                            kept.push(Effect::Log {
                                text: format!(
                                    "relay: cannot append to {}: {e}",
                                    relay_io::telemetry::events_path(dir).display()
                                ),
                            });
                        }
                    }
                }
                Effect::WriteStatus { status } => {
                    if let Some(dir) = &self.state_dir {
                        if let Err(e) = relay_io::telemetry::write_status(dir, &session_id, &status)
                        {
                            kept.push(Effect::Log {
                                text: format!(
                                    "relay: cannot write the status file in {}: {e}",
                                    dir.display()
                                ),
                            });
                        }
                    }
                }
                other => kept.push(other),
            }
        }
        *effects = kept;
    }

    /// `context_handoff`: validate, collect git facts, render, write the files, arm the commit.
    fn handoff(&mut self, args: &serde_json::Value, moment: &engine::Moment) -> ToolReply {
        let parsed = match self.inner.handoff_begin(args, moment) {
            Ok(parsed) => parsed,
            Err(reply) => return *reply,
        };
        let info = relay_io::git::git_state(Path::new(&moment.cwd));
        let git = GitFacts {
            repo_root: info.repo_root.clone(),
            branch: info.branch.clone(),
            head: info.head.clone(),
            state: info.state,
        };
        let root = PathBuf::from(info.repo_root.as_deref().unwrap_or(&moment.cwd));
        let session_id = self.inner.history().session_id().to_string();
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            ToolReply {
            text: format!("context_handoff: cannot {what}: {e}. Nothing was committed; the context stays as it is."),
            is_error: true,
            ..ToolReply::default()
        }
        };
        // A concurrent writer may take a sequence number: re-render with the next one.
        for _ in 0..5 {
            let n = match relay_io::handoff_files::next_sequence(&root, &session_id) {
                Ok(n) => n,
                Err(e) => return fail("choose a handoff file name", &e),
            };
            let path = relay_io::handoff_files::handoff_path(&root, &session_id, n);
            let path_text = path.display().to_string();
            let (markdown, sidecar, fingerprint) = match self
                .inner
                .handoff_render(&parsed, &git, &path_text, n, moment)
            {
                Ok(rendered) => rendered,
                Err(reply) => return *reply,
            };
            match relay_io::handoff_files::write_handoff(&root, &session_id, n, &markdown, &sidecar)
            {
                Ok(written) => {
                    return self.inner.handoff_written(
                        &written.display().to_string(),
                        markdown,
                        fingerprint,
                        moment,
                    );
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return fail(&format!("write {path_text}"), &e),
            }
        }
        fail(
            "find a free handoff file name",
            &"too many concurrent handoffs",
        )
    }
}
