//! What the addon's `Engine` does, free of napi so that `cargo test` covers it; `lib.rs` only
//! converts arguments, results and errors. The binding decides nothing: it parses the input,
//! hands it to [`relay_core::engine::Engine::handle`], does the output's file effects
//! ([`relay_io::effects`]), stops the jobs nobody waits for, runs a job the output needs before
//! the call returns, and answers the output's JSON.
//!
//! **Panic boundary and resync.** Every call runs inside [`Binding::guarded`]. A panic there is
//! caught and answered by the engine's failure policy ([`Input::Failed`]: a compaction hook is
//! cancelled while Relay's windows are on; the user is told once). The engine that panicked may
//! hold a half-updated mirror or state, so it is dropped: [`engine::Engine::restarted`] takes its
//! place, with the last configuration and `/relay on|off`, and refuses hooks, tools and feeds
//! until the extension has sent it the whole branch (its output says `needsBranch`).

use relay_core::engine::{self, Feed, Input, JobOutcome, JobResult, Moment, Observation, Output};
use relay_io::{boundary, effects, jobs};

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The caller handed over something that does not parse, or the engine refused it.
    Invalid(String),
    /// A panic was caught; the engine was replaced and waits for a full resync.
    Panic(String),
}

impl Failure {
    pub fn text(&self) -> &str {
        match self {
            Failure::Invalid(text) | Failure::Panic(text) => text,
        }
    }
}

fn invalid(what: &str, err: impl std::fmt::Display) -> Failure {
    Failure::Invalid(format!("relay: invalid {what}: {err}"))
}

/// The state behind one addon `Engine`.
pub struct Binding {
    inner: engine::Engine,
    files: effects::Files,
}

/// Where a new engine's job ids start: each engine of the process numbers its jobs in a range of
/// its own (2^40 ids; 8,191 ranges stay below JavaScript's exact integers), as the job runner's
/// tables are shared by every engine of the process.
fn fresh_ids() -> u64 {
    static ENGINES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    (ENGINES.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 8_191 + 1) << 40
}

impl Default for Binding {
    fn default() -> Self {
        Binding {
            inner: engine::Engine::new().with_ids_after(fresh_ids()),
            files: effects::Files::default(),
        }
    }
}

/// What an input is about, for error texts and the failure policy: a hook's event type, a
/// tool's name, else the input's type.
fn input_label(input_json: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Tag {
        #[serde(rename = "type")]
        kind: String,
    }
    #[derive(serde::Deserialize)]
    struct Obs {
        event: Tag,
    }
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(rename = "type")]
        kind: String,
        observation: Option<Obs>,
        name: Option<String>,
    }
    match serde_json::from_str::<Head>(input_json) {
        Ok(Head {
            observation: Some(o),
            ..
        }) => o.event.kind,
        Ok(Head {
            name: Some(name), ..
        }) => name,
        Ok(head) if head.kind == "open" => "loading the session".into(),
        Ok(head) => head.kind,
        Err(_) => "?".into(),
    }
}

impl Binding {
    pub fn new() -> Self {
        Self::default()
    }

    /// Run `f` as the body of method `method` (`detail`: what it was working on, for the error
    /// text). A panic is caught, the engine replaced (see the module documentation) and the
    /// panic answered as [`Failure::Panic`].
    pub fn guarded<T>(
        &mut self,
        method: &str,
        detail: &dyn Fn() -> String,
        f: impl FnOnce(&mut Self) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        match boundary::catch(|| {
            boundary::inject(method, detail);
            f(self)
        }) {
            Ok(result) => result,
            Err(text) => {
                let what = detail();
                let place = if what.is_empty() {
                    method.to_string()
                } else {
                    format!("{method} ({what})")
                };
                let recovered = self.recover();
                let message = format!("relay: internal error in {place}: {text}. {recovered}");
                let session = self.inner.session_id().to_string();
                self.files.error_event("hook", &session, &message);
                Err(Failure::Panic(message))
            }
        }
    }

    /// Replace the engine after a panic: a new one with the last good configuration and toggle.
    fn recover(&mut self) -> &'static str {
        let old = &self.inner;
        match boundary::catch(|| old.restarted()) {
            Ok(fresh) => {
                self.inner = fresh;
                "Relay restarted its engine and reloads the session branch before the next event"
            }
            Err(_) => {
                // A range of its own: the old engine's jobs may still run.
                self.inner = engine::Engine::waiting_for_branch().with_ids_after(fresh_ids());
                "Relay restarted its engine with the default configuration and reloads the session branch before the next event"
            }
        }
    }

    /// The one door: feed what Pi appended (`feed_json`: a [`Feed`]), then handle one
    /// [`Input`] and answer with its [`Output`] JSON. A panic is answered by the engine's failure
    /// policy after the engine was replaced; only input that does not parse, or that the engine
    /// refuses, is an error.
    pub fn handle_input(
        &mut self,
        input_json: &str,
        feed_json: Option<&str>,
    ) -> Result<String, Failure> {
        let label = input_label(input_json);
        let result = self.guarded("handle", &|| label.clone(), |b| {
            let mut fed = Vec::new();
            if let Some(feed) = feed_json {
                let feed: Feed = serde_json::from_str(feed).map_err(|e| invalid("feed", e))?;
                let out = b.inner.handle(Input::Feed(feed));
                fed = b.settle(out, None)?.effects;
            }
            let input: Input = serde_json::from_str(input_json).map_err(|e| invalid("input", e))?;
            let mut out = b.call(input)?;
            fed.append(&mut out.effects);
            out.effects = fed;
            Ok(out)
        });
        let out = match result {
            Ok(out) => out,
            Err(Failure::Panic(text)) => {
                let failed = Input::Failed {
                    hook: label.clone(),
                    message: text,
                };
                let compaction = label == "session_before_compact";
                let inner = &mut self.inner;
                boundary::catch(|| inner.handle(failed)).unwrap_or_else(|_| Output {
                    result: compaction.then_some(engine::HookResult::Cancel),
                    needs_branch: true,
                    ..Output::default()
                })
            }
            Err(other) => return Err(other),
        };
        serde_json::to_string(&out).map_err(|e| invalid("output", e))
    }

    /// Hand `input` to the engine with what only the host has: the relaunch key taken (at
    /// `describe`), the configuration files read, a load's branch taken from the runner; then
    /// settle its output.
    fn call(&mut self, mut input: Input) -> Result<Output, Failure> {
        match &mut input {
            Input::Describe {
                relaunch_key_file: Some(file),
                ..
            } => drop(relay_io::relaunch::take_key(file)),
            Input::Configure { sources } => self.files.configure(sources),
            Input::Done {
                results, loaded, ..
            } => {
                for result in results.iter() {
                    match result.outcome {
                        // The engine has the result (a handoff's files are its now).
                        JobOutcome::Done { .. } => jobs::settled(result.id),
                        // Pi's abort or the host's deadline: nobody waits for the job, so its
                        // work stops too (a resume check's group is killed, a handoff write
                        // leaves no file).
                        JobOutcome::Aborted | JobOutcome::Failed { .. } => jobs::cancel(result.id),
                    }
                    if let Some(branch) = jobs::take_loaded(result.id) {
                        loaded.0.push((result.id, branch));
                    }
                }
            }
            _ => {}
        }
        let observation = match &input {
            Input::Hook { observation } => Some(observation.clone()),
            _ => None,
        };
        let out = self.inner.handle(input);
        self.settle(out, observation.as_ref())
    }

    /// Do what an output asks of the host itself: a refusal fails the call, superseded jobs
    /// stop, the file effects are done (a relaunch marker that could not be written goes back
    /// to the engine), and a job to run now runs, its result going straight back in.
    fn settle(
        &mut self,
        mut out: Output,
        observation: Option<&Observation>,
    ) -> Result<Output, Failure> {
        if let Some(text) = out.refused.take() {
            return Err(Failure::Invalid(text));
        }
        for id in out.cancel.drain(..) {
            jobs::cancel(id);
        }
        let session = self.inner.session_id().to_string();
        let executed = self
            .files
            .execute(std::mem::take(&mut out.effects), &session);
        out.effects = executed.effects;
        let mut more: Vec<Output> = executed
            .failed_writes
            .into_iter()
            .map(|text| self.inner.handle(Input::WriteFailed { text }))
            .collect();
        if let (Some(why), Some(observation)) = (executed.relaunch_unwritten, observation) {
            // No relaunch: the engine resets in-process at this same settle point instead.
            more.push(self.inner.handle(Input::RelaunchUnwritten {
                why,
                observation: observation.clone(),
            }));
        }
        if let Some(job) = out.run_now.take() {
            let outcome = jobs::execute(&job);
            more.push(
                self.inner.handle(Input::Done {
                    op: job.id,
                    results: vec![JobResult {
                        id: job.id,
                        outcome,
                    }],
                    moment: Moment::default(),
                    loaded: engine::Loaded(
                        jobs::take_loaded(job.id)
                            .map(|b| vec![(job.id, b)])
                            .unwrap_or_default(),
                    ),
                }),
            );
        }
        for next in more {
            let mut next = self.settle(next, None)?;
            out.effects.append(&mut next.effects);
            if out.result.is_none() {
                out.result = next.result;
                out.drafts = next.drafts;
                out.continue_run = next.continue_run;
            }
            out.value = out.value.or(next.value);
            out.tip = next.tip;
            out.answered_model = next.answered_model;
            out.needs_branch = next.needs_branch;
            out.history_complete = next.history_complete;
            out.boundary = next.boundary;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_core::engine::door::WAITING;
    use relay_core::engine::BACKGROUND_LOAD_BYTES;
    use relay_io::effects::write_relaunch_marker;
    use serde_json::{json, Value};
    use std::path::{Path, PathBuf};

    fn entry(id: &str, parent: Option<&str>, text: &str) -> Value {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
               "message": {"role": "user", "content": [{"type": "text", "text": text}]}})
    }

    fn moment() -> Value {
        json!({"nowMs": 1_000, "tzOffsetMinutes": 0, "usage": null, "model": null,
            "contextWindow": null, "hasPendingMessages": false, "cwd": "/nowhere", "subagent": false})
    }

    /// A tool call's moment (a tool takes no event).
    fn tool_moment() -> String {
        moment().to_string()
    }

    fn observation(kind: &str, extra: Value) -> String {
        let mut event = json!({"type": kind});
        if let (Some(o), Value::Object(e)) = (event.as_object_mut(), extra) {
            o.extend(e);
        }
        json!({"moment": moment(), "event": event}).to_string()
    }

    /// A load job the door handed out; its outcome is kept by [`run_load`] for the `done` that
    /// [`Binding::finish_load`] sends.
    struct LoadJob {
        job: Value,
    }

    thread_local! {
        static RAN: std::cell::RefCell<Option<(u64, Value)>> = const { std::cell::RefCell::new(None) };
    }

    /// Run a load job as the pool would; true when the file held the branch.
    fn run_load(job: &LoadJob) -> Result<bool, Failure> {
        let outcome: Value =
            serde_json::from_str(&jobs::run(&job.job.to_string()).map_err(Failure::Invalid)?)
                .unwrap();
        let found = outcome["value"] == json!(true);
        RAN.with(|r| *r.borrow_mut() = Some((job.job["id"].as_u64().unwrap(), outcome)));
        Ok(found)
    }

    fn size(path: &str) -> u64 {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    }

    /// The calls of the tests, each through the one door.
    impl Binding {
        fn out(&mut self, input: Value) -> Result<Value, Failure> {
            self.handle_input(&input.to_string(), None)
                .map(|s| serde_json::from_str(&s).unwrap())
        }

        /// What the mirror holds (`known` asks nothing of it).
        fn state(&mut self) -> Value {
            self.out(json!({"type": "known", "ids": []})).unwrap()
        }

        fn tip_id(&mut self) -> Result<Option<String>, Failure> {
            Ok(self.state()["tip"].as_str().map(str::to_string))
        }

        fn needs_resync(&mut self) -> bool {
            self.state()["needsBranch"] == json!(true)
        }

        fn history_complete(&mut self) -> Result<bool, Failure> {
            Ok(self.state()["historyComplete"] == json!(true))
        }

        fn resync(&mut self, session_id: &str, entries_json: &str) -> Result<(), Failure> {
            let entries: Value = serde_json::from_str(entries_json).unwrap();
            self.out(json!({"type": "resync", "sessionId": session_id, "entries": entries}))
                .map(drop)
        }

        fn configure(&mut self, sources_json: &str) -> Result<String, Failure> {
            let sources: Value =
                serde_json::from_str(sources_json).map_err(|e| invalid("sources", e))?;
            self.out(json!({"type": "configure", "sources": sources}))
                .map(|v| v.to_string())
        }

        fn append(&mut self, entries_json: &str) -> Result<(), Failure> {
            let feed = format!(r#"{{"append":{entries_json}}}"#);
            let input = json!({"type": "known", "ids": []}).to_string();
            self.handle_input(&input, Some(&feed)).map(drop)
        }

        fn truncate_after(&mut self, id: Option<&str>) -> Result<(), Failure> {
            let feed = json!({"truncate": true, "after": id}).to_string();
            let input = json!({"type": "known", "ids": []}).to_string();
            self.handle_input(&input, Some(&feed)).map(drop)
        }

        /// A session opened at once (as a reload after a failure does): whether it loaded.
        fn load_session_file(
            &mut self,
            session_id: &str,
            path: &str,
            leaf: &str,
        ) -> Result<bool, Failure> {
            let out = self.out(
                json!({"type": "open", "sessionId": session_id, "file": path,
                "size": size(path), "leaf": leaf, "background": false}),
            )?;
            Ok(out["needsBranch"] == json!(false))
        }

        /// A session opened in the background: its load job, when it has one.
        fn begin_load(
            &mut self,
            session_id: &str,
            path: &str,
            leaf: &str,
        ) -> Result<Option<LoadJob>, Failure> {
            let out = self.out(
                json!({"type": "open", "sessionId": session_id, "file": path,
                "size": size(path), "leaf": leaf, "background": true}),
            )?;
            Ok(out["jobs"]
                .as_array()
                .and_then(|j| j.first())
                .map(|job| LoadJob { job: job.clone() }))
        }

        /// The `done` of the load job run last: true when it installed a branch.
        fn finish_load(&mut self) -> Result<bool, Failure> {
            let Some((id, outcome)) = RAN.with(|r| r.borrow_mut().take()) else {
                return Ok(false);
            };
            let out = self.out(
                json!({"type": "done", "op": id, "results": [{"id": id, "outcome": outcome}],
                "moment": moment()}),
            )?;
            Ok(out["needsBranch"] == json!(false) && outcome["value"] == json!(true))
        }

        /// The whole history's load, when the engine hands it out.
        fn begin_complete(&mut self) -> Result<Option<LoadJob>, Failure> {
            let out = self.out(json!({"type": "history"}))?;
            Ok(out
                .get("historyLoad")
                .map(|job| LoadJob { job: job.clone() }))
        }

        fn finish_complete(&mut self) -> Result<bool, Failure> {
            Ok(self.finish_load()? && self.history_complete()?)
        }

        fn tool(
            &mut self,
            name: &str,
            args_json: &str,
            moment_json: &str,
            _: Option<&str>,
            _: Option<&str>,
            _: Option<&str>,
        ) -> Result<String, Failure> {
            let input = json!({
                "type": "tool", "callId": "t", "name": name,
                "args": serde_json::from_str::<Value>(args_json).unwrap(),
                "moment": serde_json::from_str::<Value>(moment_json).unwrap(),
            });
            let out: Value =
                serde_json::from_str(&self.handle_input(&input.to_string(), None)?).unwrap();
            Ok(out["reply"].to_string())
        }

        fn handle(&mut self, observation_json: &str) -> Result<String, Failure> {
            let observation = serde_json::from_str::<Value>(observation_json)
                .map_err(|e| invalid("observation", e))?;
            let input = json!({"type": "hook", "observation": observation});
            let out: Value =
                serde_json::from_str(&self.handle_input(&input.to_string(), None)?).unwrap();
            // What the hook answers (the mirror's own facts, tip and completeness, apart).
            Ok(json!({"effects": out["effects"], "result": out.get("result"), "messages": out["messages"]}).to_string())
        }
    }

    fn tool_text(reply: &str) -> String {
        let v: Value = serde_json::from_str(reply).unwrap();
        v["text"].as_str().unwrap().to_string()
    }

    fn branch() -> String {
        json!([
            entry("a1", None, "first NEEDLE-1"),
            entry("a2", Some("a1"), "second")
        ])
        .to_string()
    }

    /// A session file of at least `bytes` bytes: a header, then a linear chain of user messages
    /// `m0`, `m1`, … whose texts are `fill` (the first also holds `NEEDLE-FIRST`).
    fn session_file(dir: &Path, bytes: usize) -> (PathBuf, String) {
        let fill = "lorem ipsum dolor sit amet ".repeat(150);
        let mut text = json!({"type": "session", "version": 3, "id": "S", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/nowhere"}).to_string();
        text.push('\n');
        let mut parent: Option<String> = None;
        let mut n = 0;
        while text.len() < bytes {
            let id = format!("m{n}");
            let body = if n == 0 {
                format!("NEEDLE-FIRST {fill}")
            } else {
                fill.clone()
            };
            text.push_str(&entry(&id, parent.as_deref(), &body).to_string());
            text.push('\n');
            parent = Some(id);
            n += 1;
        }
        let path = dir.join("session.jsonl");
        std::fs::write(&path, text).unwrap();
        (path, parent.unwrap())
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("relay-node-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_relaunch_marker_is_signed_and_a_failed_write_says_why_without_the_key() {
        let dir = scratch("relaunch-marker");
        let handoff = dir.join("h.md");
        std::fs::write(&handoff, "# Handoff\n").unwrap();
        let hex = "0f".repeat(32);
        let key = engine::RelaunchKey::new(hex.clone());
        let marker = engine::files::RelaunchMarker {
            cwd: "/w".into(),
            launch_prompt: None,
            handoff: handoff.to_string_lossy().into_owned(),
            session_file: None,
        };
        let path = dir.join("1-m.json");
        write_relaunch_marker(&path.to_string_lossy(), &marker, &key).unwrap();
        let k = relay_io::relaunch::Key::from_hex(&hex).unwrap();
        let opened = relay_io::relaunch::open(&k, &std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(opened.handoff, handoff.to_string_lossy());
        // A marker folder that cannot exist (below a regular file): the write fails.
        let blocked = handoff.join("1-m.json");
        let why = write_relaunch_marker(&blocked.to_string_lossy(), &marker, &key).unwrap_err();
        assert!(
            why.starts_with(&format!(
                "cannot write the relaunch marker {}: ",
                blocked.display()
            )),
            "{why}"
        );
        assert!(!why.contains(&hex));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `describe` takes the relaunch key (the file removed, the key in no answer); `configure`
    /// hands the engine that key, which the extension can neither send nor see.
    #[test]
    fn describe_takes_the_relaunch_key_and_configure_hands_it_to_the_engine_only() {
        let dir = scratch("relaunch-key");
        let file = dir.join("7-n.key");
        let hex = "5a".repeat(32);
        std::fs::write(&file, &hex).unwrap();
        let mut b = Binding::new();
        let described = b
            .handle_input(
                &json!({"type": "describe", "piVersion": "1.6.0", "configDir": ".pi",
                    "runtime": "node 22.19.0", "relaunchKeyFile": file})
                .to_string(),
                None,
            )
            .unwrap();
        assert!(!file.exists(), "the key file is removed at describe");
        assert!(!described.contains(&hex));
        let wrapper = json!({"relaunchMarker": "/m/7-n.json", "wrapper": "pi-session",
            "wrapperPid": "7", "launchId": "n", "pid": 8, "ppid": 7, "sessionFile": null,
            "relaunchKeyFile": file});
        let sources = |wrapper: Value| {
            json!({"global": {}, "projectTrusted": false, "globalFile": null,
                "budgetConfigEnv": null, "agentDir": null, "stateDir": null, "cwd": null,
                "wrapper": wrapper})
            .to_string()
        };
        let configured = b.configure(&sources(wrapper.clone())).unwrap();
        assert!(!configured.contains(&hex));
        let mut sources_in = serde_json::from_str(&sources(wrapper.clone())).unwrap();
        relay_io::effects::read_config_files(&mut sources_in);
        let w: engine::WrapperFacts = sources_in.wrapper.unwrap();
        assert_eq!(
            w.relaunch_key.as_ref().map(|k| k.expose()),
            Some(hex.as_str())
        );
        assert_eq!(w.relaunch_key_error, None);
        assert!(!serde_json::to_string(&w).unwrap().contains(&hex));
        // The extension cannot hand in a key of its own.
        let mut forged = wrapper;
        forged["relaunchKey"] = json!(hex);
        let err = b.configure(&sources(forged)).unwrap_err();
        assert!(
            err.text().contains("unknown field `relaunchKey`"),
            "{err:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `guards` is answered by a vet the engine asks for and the binding runs before the call
    /// returns: no library, a refused one, one to import.
    #[test]
    fn the_guard_library_is_vetted_before_the_call_returns() {
        let dir = scratch("guards");
        let mut b = Binding::new();
        let ask = |b: &mut Binding| {
            b.out(json!({"type": "guards", "agentDir": dir})).unwrap()["value"].clone()
        };
        assert_eq!(ask(&mut b), json!({"file": null, "error": null}));
        let lib = dir.join("lib");
        std::fs::create_dir_all(&lib).unwrap();
        let file = lib.join("guards.ts");
        std::fs::create_dir(&file).unwrap();
        let path = file.to_string_lossy().into_owned();
        assert_eq!(
            ask(&mut b),
            json!({"file": path, "error": "a directory, not a regular file"})
        );
        std::fs::remove_dir(&file).unwrap();
        std::fs::write(&file, "export const isGuardOff = () => false;\n").unwrap();
        assert_eq!(ask(&mut b), json!({"file": path, "error": null}));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_background_load_installs_the_state_a_load_at_once_gives() {
        let dir = scratch("bg-load");
        let (path, leaf) = session_file(&dir, BACKGROUND_LOAD_BYTES as usize + 1);
        let path = path.display().to_string();
        let mut at_once = Binding::new();
        assert!(at_once.load_session_file("S", &path, &leaf).unwrap());

        let mut b = Binding::new();
        b.resync("S", &branch()).unwrap();
        let job = b
            .begin_load("S", &path, &leaf)
            .unwrap()
            .expect("a large file loads in the background");
        // Until the branch is installed the engine keeps the mirror it had.
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));
        assert!(run_load(&job).unwrap());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));
        assert!(b.finish_load().unwrap());
        assert_eq!(b.tip_id().unwrap(), at_once.tip_id().unwrap());
        assert!(!b.finish_load().unwrap(), "a branch is installed once");
        for (name, args) in [
            ("history_list_windows", json!({})),
            ("history_search_contents", json!({"query": "NEEDLE-FIRST"})),
        ] {
            let args = args.to_string();
            assert_eq!(
                tool_text(
                    &b.tool(name, &args, &tool_moment(), None, None, None)
                        .unwrap()
                ),
                tool_text(
                    &at_once
                        .tool(name, &args, &tool_moment(), None, None, None)
                        .unwrap()
                ),
                "{name}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The whole load keeps the items' places in the file, not their texts; a file rewritten in
    /// place afterwards is caught when a text is read back: the tool says so and the binding asks
    /// for the branch again, after which the history reads the file as it is now.
    #[test]
    fn a_background_load_reads_texts_back_and_a_rewritten_file_is_loaded_again() {
        let dir = scratch("bg-lines");
        let (path, leaf) = session_file(&dir, BACKGROUND_LOAD_BYTES as usize + 1);
        let path_text = path.display().to_string();
        let mut b = Binding::new();
        b.resync("S", &branch()).unwrap();
        let job = b.begin_load("S", &path_text, &leaf).unwrap().unwrap();
        assert!(run_load(&job).unwrap());
        assert!(b.finish_load().unwrap());
        let history = b.inner.history();
        assert!(history.text_bytes() > BACKGROUND_LOAD_BYTES as usize / 2);
        assert_eq!(history.held_text_bytes(), 0, "no text held in memory");
        let search = |b: &mut Binding, q: &str| {
            let args = json!({"query": q}).to_string();
            let out = b.tool(
                "history_search_contents",
                &args,
                &tool_moment(),
                None,
                None,
                None,
            );
            serde_json::from_str::<Value>(&out.unwrap()).unwrap()
        };
        let found = search(&mut b, "NEEDLE-FIRST");
        assert_eq!(found["isError"], false, "{found}");
        assert!(
            found["text"]
                .as_str()
                .unwrap()
                .contains("\"item_id\":\"m0\""),
            "{found}"
        );
        assert!(!b.needs_resync());

        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("NEEDLE-FIRST", "NEEDLE-FIXED", 1)).unwrap();
        let failed = search(&mut b, "NEEDLE-FIRST");
        assert_eq!(failed["isError"], true, "{failed}");
        assert!(
            failed["text"]
                .as_str()
                .unwrap()
                .contains("the session file changed since it was loaded: the line of entry m0"),
            "{failed}"
        );
        assert!(b.needs_resync(), "the branch is asked for again");
        assert!(b.load_session_file("S", &path_text, &leaf).unwrap());
        let again = search(&mut b, "NEEDLE-FIXED");
        assert!(
            again["text"]
                .as_str()
                .unwrap()
                .contains("\"item_id\":\"m0\""),
            "{again}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A large session with windows: user questions and assistant answers (with usage), a
    /// compaction every 300 entries, a note written in the first window; the leaf's id.
    fn windowed_session(dir: &Path, bytes: usize) -> (PathBuf, String) {
        let fill = "lorem ipsum dolor sit amet ".repeat(150);
        let mut text = json!({"type": "session", "version": 3, "id": "S", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/nowhere"}).to_string();
        text.push('\n');
        let mut parent: Option<String> = None;
        let mut n = 0;
        while text.len() < bytes {
            let id = format!("m{n}");
            let ts = "2026-01-01T00:00:00.000Z";
            let line = if n % 300 == 299 {
                json!({"type": "compaction", "id": id, "parentId": parent, "timestamp": ts,
                       "summary": format!("summary {n}"), "firstKeptEntryId": parent, "tokensBefore": 1000})
            } else if n == 5 {
                json!({"type": "custom", "id": id, "parentId": parent, "timestamp": ts, "customType": "relay/note",
                       "data": {"kind": "write", "path": "plan.md", "content": "the plan", "atMs": 5}})
            } else if n % 2 == 1 {
                json!({"type": "message", "id": id, "parentId": parent, "timestamp": ts,
                       "message": {"role": "assistant", "content": [{"type": "text", "text": format!("answer {n} {fill}")}],
                                   "usage": {"totalTokens": 1000 + n}, "stopReason": "stop"}})
            } else {
                let body = if n == 0 {
                    format!("NEEDLE-FIRST {fill}")
                } else {
                    format!("question {n} {fill}")
                };
                entry(&id, parent.as_deref(), &body)
            };
            text.push_str(&line.to_string());
            text.push('\n');
            parent = Some(id);
            n += 1;
        }
        let path = dir.join("windowed.jsonl");
        std::fs::write(&path, text).unwrap();
        (path, parent.unwrap())
    }

    #[test]
    fn a_skimmed_load_answers_the_hooks_as_a_whole_load_and_completes_to_a_fresh_load() {
        let dir = scratch("bg-tail");
        let (path, leaf) = windowed_session(&dir, BACKGROUND_LOAD_BYTES as usize + 1);
        let path = path.display().to_string();
        let mut whole = Binding::new();
        assert!(whole.load_session_file("S", &path, &leaf).unwrap());
        assert!(whole.history_complete().unwrap());

        let mut b = Binding::new();
        let job = b.begin_load("S", &path, &leaf).unwrap().unwrap();
        assert!(run_load(&job).unwrap());
        assert!(b.finish_load().unwrap());
        assert!(
            !b.history_complete().unwrap(),
            "the earlier windows are skimmed"
        );
        // Everything a hook reads is the branch's: the usage estimate, the windows, the notes.
        let estimated = json!({"nowMs": 1_000, "tzOffsetMinutes": 0, "usage": null, "model": "faux/m",
            "contextWindow": 200_000, "hasPendingMessages": false, "cwd": "/nowhere", "subagent": false}).to_string();
        let status = observation("command", json!({"args": "status"}));
        let same = |b: &mut Binding, whole: &mut Binding| {
            assert_eq!(
                tool_text(
                    &b.tool("get_context_remaining", "{}", &estimated, None, None, None)
                        .unwrap()
                ),
                tool_text(
                    &whole
                        .tool("get_context_remaining", "{}", &estimated, None, None, None)
                        .unwrap()
                ),
            );
            assert_eq!(
                tool_text(
                    &b.tool(
                        "notes_list_files_by_prefix",
                        "{}",
                        &estimated,
                        None,
                        None,
                        None
                    )
                    .unwrap()
                ),
                tool_text(
                    &whole
                        .tool(
                            "notes_list_files_by_prefix",
                            "{}",
                            &estimated,
                            None,
                            None,
                            None
                        )
                        .unwrap()
                ),
            );
            assert_eq!(b.handle(&status).unwrap(), whole.handle(&status).unwrap());
        };
        same(&mut b, &mut whole);
        // A history tool never answers from the skimmed part.
        let early: Value = serde_json::from_str(
            &b.tool(
                "history_search_contents",
                r#"{"query":"NEEDLE-FIRST"}"#,
                &tool_moment(),
                None,
                None,
                None,
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(early["isError"], true, "{early}");
        assert!(
            early["text"].as_str().unwrap().contains("still loading"),
            "{early}"
        );

        // Pi goes on while the whole file loads: entries appended, a navigation back, more.
        let fresh = json!([
            entry("n1", Some(&leaf), "new NEEDLE-NEW"),
            entry("n2", Some("n1"), "newer")
        ])
        .to_string();
        let after_nav = json!([entry("n3", Some("n1"), "other NEEDLE-NAV")]).to_string();
        let job = b
            .begin_complete()
            .unwrap()
            .expect("a whole load completes the history");
        for e in [&mut b, &mut whole] {
            e.append(&fresh).unwrap();
            e.truncate_after(Some("n1")).unwrap();
            e.append(&after_nav).unwrap();
        }
        assert!(run_load(&job).unwrap());
        assert!(b.finish_complete().unwrap());
        assert!(b.history_complete().unwrap());
        assert!(!b.finish_complete().unwrap(), "swapped once");
        same(&mut b, &mut whole);
        for (name, args) in [
            ("history_list_windows", json!({})),
            ("history_search_contents", json!({"query": "NEEDLE-FIRST"})),
            ("history_search_contents", json!({"query": "NEEDLE"})),
            ("history_list_items", json!({"limit": 50})),
        ] {
            let args = args.to_string();
            assert_eq!(
                tool_text(
                    &b.tool(name, &args, &tool_moment(), None, None, None)
                        .unwrap()
                ),
                tool_text(
                    &whole
                        .tool(name, &args, &tool_moment(), None, None, None)
                        .unwrap()
                ),
                "{name}"
            );
        }
        // And the whole-load side equals a fresh load of the final branch.
        let mut fresh_load = Binding::new();
        let final_branch: Vec<Value> = {
            let text = std::fs::read_to_string(&path).unwrap();
            let mut v: Vec<Value> = text
                .lines()
                .skip(1)
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            v.push(entry("n1", Some(&leaf), "new NEEDLE-NEW"));
            v.push(entry("n3", Some("n1"), "other NEEDLE-NAV"));
            v
        };
        fresh_load
            .resync("S", &Value::Array(final_branch).to_string())
            .unwrap();
        let args = json!({"query": "NEEDLE"}).to_string();
        assert_eq!(
            tool_text(
                &b.tool(
                    "history_search_contents",
                    &args,
                    &tool_moment(),
                    None,
                    None,
                    None
                )
                .unwrap()
            ),
            tool_text(
                &fresh_load
                    .tool(
                        "history_search_contents",
                        &args,
                        &tool_moment(),
                        None,
                        None,
                        None
                    )
                    .unwrap()
            ),
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_resync_while_the_history_completes_drops_the_whole_load() {
        let dir = scratch("bg-tail-resync");
        let (path, leaf) = windowed_session(&dir, BACKGROUND_LOAD_BYTES as usize + 1);
        let path = path.display().to_string();
        let mut b = Binding::new();
        let job = b.begin_load("S", &path, &leaf).unwrap().unwrap();
        assert!(run_load(&job).unwrap());
        assert!(b.finish_load().unwrap());
        let job = b.begin_complete().unwrap().unwrap();
        b.resync("S", &branch()).unwrap();
        assert!(b.history_complete().unwrap(), "a resync is whole");
        assert!(
            !run_load(&job).unwrap(),
            "the superseded load stops and gives nothing"
        );
        assert!(
            !b.finish_complete().unwrap(),
            "the superseded load is not swapped in"
        );
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));
        assert!(b.begin_complete().unwrap().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A session file named on Pi's command line is read ahead of `session_start`: the `open`
    /// of that file at its last entry installs what was read, with no job and the same state as
    /// a load at open; an `open` at another leaf, or before the read is back, drops it and loads
    /// as usual; a small file is not read ahead.
    #[test]
    fn a_session_read_ahead_of_session_start_is_what_its_open_installs_and_nothing_else() {
        let dir = scratch("prefetch");
        let (path, leaf) = windowed_session(&dir, BACKGROUND_LOAD_BYTES as usize + 1);
        let file = path.display().to_string();
        let door = |b: &mut Binding, input: Value| -> Value {
            serde_json::from_str(&b.handle_input(&input.to_string(), None).unwrap()).unwrap()
        };
        let run = |job: &Value| -> Value {
            let outcome: Value =
                serde_json::from_str(&jobs::run(&job.to_string()).unwrap()).unwrap();
            json!({"type": "done", "op": job["id"], "results": [{"id": job["id"], "outcome": outcome}], "moment": moment()})
        };
        let open = |leaf: &str| json!({"type": "open", "sessionId": "S", "file": file, "size": size(&file), "leaf": leaf, "background": true});
        let read_ahead = |b: &mut Binding| {
            let out = door(
                b,
                json!({"type": "prefetch", "file": file, "size": size(&file)}),
            );
            assert_eq!(out["jobs"][0]["work"]["pass"], "current", "{out}");
            assert_eq!(out["op"], out["jobs"][0]["id"]);
            out["jobs"][0].clone()
        };

        // Read ahead, then opened at the file's last entry: no job, the branch is in.
        let mut b = Binding::new();
        let job = read_ahead(&mut b);
        let back = door(&mut b, run(&job));
        assert_eq!(back.get("op"), None, "{back}");
        assert_eq!(
            back["value"],
            json!({"tip": leaf}),
            "it read up to the file's last entry"
        );
        let opened = door(&mut b, open(&leaf));
        assert_eq!(opened["jobs"], json!([]), "{opened}");
        assert_eq!(opened.get("op"), None, "{opened}");
        assert_eq!(opened["needsBranch"], false);
        assert_eq!(
            opened["historyComplete"], false,
            "the earlier windows are skimmed"
        );
        assert_eq!(opened["tip"], json!(leaf));
        // The same state as the session loaded at open.
        let mut usual = Binding::new();
        let first = door(&mut usual, open(&leaf));
        door(&mut usual, run(&first["jobs"][0]));
        let estimated = json!({"nowMs": 1_000, "tzOffsetMinutes": 0, "usage": null, "model": "faux/m",
            "contextWindow": 200_000, "hasPendingMessages": false, "cwd": "/nowhere", "subagent": false}).to_string();
        for tool in ["get_context_remaining", "notes_list_files_by_prefix"] {
            let answer = |b: &mut Binding| {
                tool_text(&b.tool(tool, "{}", &estimated, None, None, None).unwrap())
            };
            assert_eq!(answer(&mut b), answer(&mut usual), "{tool}");
        }
        let status = observation("command", json!({"args": "status"}));
        assert_eq!(b.handle(&status).unwrap(), usual.handle(&status).unwrap());
        // Its whole history loads as a load at open's does.
        let history = door(&mut b, json!({"type": "history"}));
        assert_eq!(history["historyLoad"]["work"]["pass"], "rest");
        let complete = door(&mut b, run(&history["historyLoad"]));
        assert_eq!(complete["historyComplete"], true, "{complete}");

        // Pi appended an entry at start-up (a thinking level) after the read: the host walked
        // back from Pi's leaf to the tip read ahead and names it; the feed brings the rest.
        let mut b = Binding::new();
        let job = read_ahead(&mut b);
        door(&mut b, run(&job));
        let mut appended = open("t1");
        appended["readAhead"] = json!(leaf);
        let opened = door(&mut b, appended);
        assert_eq!(opened["jobs"], json!([]), "{opened}");
        assert_eq!(opened["tip"], json!(leaf));
        let t1 = json!({"type": "thinking_level_change", "id": "t1", "parentId": leaf,
            "timestamp": "2026-01-01T00:00:00.000Z", "thinkingLevel": "off"});
        let fed = b
            .handle_input(
                &json!({"type": "hook", "observation": serde_json::from_str::<Value>(&observation("session_start", json!({"runActive": false}))).unwrap()}).to_string(),
                Some(&json!({"append": [t1]}).to_string()),
            )
            .unwrap();
        let fed: Value = serde_json::from_str(&fed).unwrap();
        assert_eq!(fed["tip"], "t1", "{fed}");
        assert_eq!(fed["needsBranch"], false);

        // Opened at another leaf, named by no read ahead (Pi navigated since): the usual load.
        let mut b = Binding::new();
        let job = read_ahead(&mut b);
        door(&mut b, run(&job));
        let opened = door(&mut b, open("m1"));
        assert_eq!(opened["jobs"][0]["work"]["pass"], "current", "{opened}");
        door(&mut b, run(&opened["jobs"][0]));
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("m1"));

        // Opened before the read ahead is back: dropped, the usual load; its late result is ignored.
        let mut b = Binding::new();
        let job = read_ahead(&mut b);
        let opened = door(&mut b, open(&leaf));
        assert_eq!(opened["jobs"].as_array().map(Vec::len), Some(1), "{opened}");
        assert_ne!(opened["jobs"][0]["id"], job["id"]);
        let late = door(&mut b, run(&job));
        assert_eq!(late.get("op"), None, "{late}");
        assert_eq!(
            late["tip"],
            Value::Null,
            "nothing installed from the dropped read"
        );
        door(&mut b, run(&opened["jobs"][0]));
        assert_eq!(b.tip_id().unwrap().as_deref(), Some(leaf.as_str()));

        // A small file is not read ahead.
        let small = dir.join("small.jsonl");
        std::fs::write(&small, "{\"type\":\"session\",\"id\":\"T\"}\n").unwrap();
        let out = door(
            &mut Binding::new(),
            json!({"type": "prefetch", "file": small.display().to_string(), "size": size(&small.display().to_string())}),
        );
        assert_eq!(out["jobs"], json!([]), "{out}");
        assert_eq!(out.get("op"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Through the one door, as the extension drives it: the first pass's `Done` asks for no
    /// whole load (a `pi -p` run never starts one); the first settle (or `history`) hands it out
    /// once, as a background job reading the branch up to the mirror's tip, which holds what Pi
    /// wrote to the file since; what is fed while it runs is replayed on it.
    #[test]
    fn the_whole_history_loads_at_the_first_settle_or_when_asked_up_to_the_tip() {
        let dir = scratch("bg-deferred");
        let (path, leaf) = windowed_session(&dir, BACKGROUND_LOAD_BYTES as usize + 1);
        let mut b = Binding::new();
        let door = |b: &mut Binding, input: Value, feed: Option<Value>| -> Value {
            let feed = feed.map(|f| f.to_string());
            serde_json::from_str(&b.handle_input(&input.to_string(), feed.as_deref()).unwrap())
                .unwrap()
        };
        let run = |job: &Value| -> Value {
            let outcome: Value =
                serde_json::from_str(&jobs::run(&job.to_string()).unwrap()).unwrap();
            json!({"type": "done", "op": job["id"], "results": [{"id": job["id"], "outcome": outcome}], "moment": moment()})
        };
        let open = json!({"type": "open", "sessionId": "S", "file": path.display().to_string(), "size": size(&path.display().to_string()), "leaf": leaf, "background": true});
        let first = door(&mut b, open, None);
        assert_eq!(first["jobs"][0]["work"]["pass"], "current");
        let installed = door(&mut b, run(&first["jobs"][0]), None);
        assert_eq!(
            installed["historyComplete"], false,
            "the earlier windows are skimmed"
        );
        assert_eq!(installed.get("op"), None, "{installed}");
        assert_eq!(
            installed.get("historyLoad"),
            None,
            "no whole load until it is needed"
        );
        assert_eq!(installed["jobs"], json!([]));
        let started = door(
            &mut b,
            json!({"type": "hook", "observation": serde_json::from_str::<Value>(&observation("session_start", json!({"runActive": false}))).unwrap()}),
            None,
        );
        assert_eq!(started.get("historyLoad"), None);

        // Pi appends to the file as it goes (a resumed session's file is written at once).
        let pi_writes = |e: &Value| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            writeln!(f, "{e}").unwrap();
        };
        let n1 = entry("n1", Some(&leaf), "the run's own NEEDLE-RUN");
        pi_writes(&n1);
        let settled = observation("agent_settled", json!({"aborted": false}));
        let settled: Value = serde_json::from_str(&settled).unwrap();
        let out = door(
            &mut b,
            json!({"type": "hook", "observation": settled}),
            Some(json!({"append": [n1]})),
        );
        let whole = out["historyLoad"].clone();
        assert_eq!(whole["work"]["pass"], "rest", "{out}");
        assert_eq!(out.get("op"), None, "the hook does not wait for it");
        let again = door(&mut b, json!({"type": "history"}), None);
        assert_eq!(again.get("historyLoad"), None, "one whole load at a time");
        // Fed while the whole load runs (journalled), not in the file the load reads.
        let n2 = entry("n2", Some("n1"), "fed meanwhile NEEDLE-LATE");
        door(
            &mut b,
            json!({"type": "known", "ids": []}),
            Some(json!({"append": [n2]})),
        );
        let done = door(&mut b, run(&whole), None);
        assert_eq!(done["historyComplete"], true, "{done}");
        assert_eq!(done["needsBranch"], false);
        assert_eq!(done["tip"], "n2");
        for needle in ["NEEDLE-FIRST", "NEEDLE-RUN", "NEEDLE-LATE"] {
            let found = b
                .tool(
                    "history_search_contents",
                    &json!({"query": needle}).to_string(),
                    &tool_moment(),
                    None,
                    None,
                    None,
                )
                .unwrap();
            assert!(
                !found.contains("still loading") && found.contains("\\\"item_id\\\""),
                "{needle}: {found}"
            );
        }
        let after = door(&mut b, json!({"type": "history"}), None);
        assert_eq!(after.get("historyLoad"), None, "the history is complete");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_history_input_starts_the_whole_load_and_a_tip_missing_from_the_file_reloads() {
        let dir = scratch("bg-asked");
        let (path, leaf) = windowed_session(&dir, BACKGROUND_LOAD_BYTES as usize + 1);
        let path_text = path.display().to_string();
        let mut b = Binding::new();
        let job = b.begin_load("S", &path_text, &leaf).unwrap().unwrap();
        assert!(run_load(&job).unwrap());
        assert!(b.finish_load().unwrap());
        // An entry Pi never wrote to the file: the whole load cannot find the tip.
        b.append(&json!([entry("ghost", Some(&leaf), "never written")]).to_string())
            .unwrap();
        let out: Value =
            serde_json::from_str(&b.handle_input(r#"{"type":"history"}"#, None).unwrap()).unwrap();
        let whole = &out["historyLoad"];
        let outcome: Value = serde_json::from_str(&jobs::run(&whole.to_string()).unwrap()).unwrap();
        assert_eq!(outcome["value"], false, "{outcome}");
        let done = json!({"type": "done", "op": whole["id"], "results": [{"id": whole["id"], "outcome": outcome}], "moment": moment()});
        let done: Value =
            serde_json::from_str(&b.handle_input(&done.to_string(), None).unwrap()).unwrap();
        assert_eq!(
            done["needsBranch"], true,
            "the branch is asked for in full: {done}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn pi_shutting_down_stops_the_whole_load_nobody_waits_for() {
        let dir = scratch("bg-shutdown");
        let (path, leaf) = windowed_session(&dir, BACKGROUND_LOAD_BYTES as usize + 1);
        let path = path.display().to_string();
        let mut b = Binding::new();
        let job = b.begin_load("S", &path, &leaf).unwrap().unwrap();
        assert!(run_load(&job).unwrap());
        assert!(b.finish_load().unwrap());
        let whole = b.begin_complete().unwrap().unwrap();
        b.handle(&observation("session_shutdown", json!({})))
            .unwrap();
        assert!(!run_load(&whole).unwrap(), "the load stops at once");
        assert!(!b.finish_complete().unwrap());
        assert!(
            !b.needs_resync(),
            "nothing is reloaded for a session that ended"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_small_file_loads_at_once_and_a_superseded_or_missing_load_installs_nothing() {
        let dir = scratch("bg-small");
        let (small, small_leaf) = session_file(&dir, 10_000);
        let mut b = Binding::new();
        assert!(b
            .begin_load("S", &small.display().to_string(), &small_leaf)
            .unwrap()
            .is_none());
        assert!(b
            .begin_load("S", "/no/such/file.jsonl", "x")
            .unwrap()
            .is_none());

        let (path, leaf) = session_file(&dir, BACKGROUND_LOAD_BYTES as usize + 1);
        let path = path.display().to_string();
        // A resync while the load runs is newer than the load: the load stops and is dropped.
        let job = b.begin_load("S", &path, &leaf).unwrap().unwrap();
        b.resync("S", &branch()).unwrap();
        assert!(!run_load(&job).unwrap());
        assert!(!b.finish_load().unwrap());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));
        // A newer load supersedes an older one.
        let old = b.begin_load("S", &path, &leaf).unwrap().unwrap();
        let new = b.begin_load("S", &path, "m3").unwrap().unwrap();
        assert!(!run_load(&old).unwrap(), "the older load stops");
        assert!(run_load(&new).unwrap());
        assert!(b.finish_load().unwrap());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("m3"));
        // A leaf the file does not hold: nothing to install, the mirror is kept.
        let job = b.begin_load("S", &path, "nowhere").unwrap().unwrap();
        assert!(!run_load(&job).unwrap());
        assert!(!b.finish_load().unwrap());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("m3"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_caught_panic_replaces_the_engine_and_work_waits_for_a_full_resync() {
        let mut b = Binding::new();
        b.configure(
            &json!({"global": {"relay": {"enabled": true}}, "projectTrusted": false}).to_string(),
        )
        .unwrap();
        b.resync("S", &branch()).unwrap();
        b.handle(&observation("command", json!({"args": "off"})))
            .unwrap();
        assert!(!b.inner.enabled());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));

        let failure = b
            .guarded("handle", &|| "turn_end".into(), |_| -> Result<(), _> {
                panic!("deliberate")
            })
            .unwrap_err();
        let Failure::Panic(text) = &failure else {
            panic!("{failure:?}")
        };
        assert!(
            text.starts_with("relay: internal error in handle (turn_end): deliberate"),
            "{text}"
        );
        assert!(text.contains("reloads the session branch"), "{text}");

        // A new engine: empty mirror, the toggle kept, and no decision before the resync.
        assert!(b.needs_resync());
        assert_eq!(b.tip_id().unwrap(), None);
        assert!(!b.inner.enabled(), "/relay off survives the restart");
        for refused in [
            b.handle(&observation("context", json!({}))).map(|_| ()),
            b.tool(
                "history_list_windows",
                "{}",
                &tool_moment(),
                None,
                None,
                None,
            )
            .map(|_| ()),
            b.append("[]"),
            b.truncate_after(None),
        ] {
            assert_eq!(refused, Err(Failure::Invalid(WAITING.into())));
        }

        b.resync("S", &branch()).unwrap();
        assert!(!b.needs_resync());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));
        let found = b
            .tool(
                "history_search_contents",
                &json!({"query": "NEEDLE-1"}).to_string(),
                &tool_moment(),
                None,
                None,
                None,
            )
            .unwrap();
        assert!(tool_text(&found).contains("NEEDLE-1"), "{found}");
        b.handle(&observation("context", json!({}))).unwrap();
    }

    #[test]
    fn errors_name_the_input_and_the_event_type_of_a_hook() {
        let hook = json!({"type": "hook", "observation": serde_json::from_str::<Value>(
            &observation("turn_end", json!({}))).unwrap()});
        assert_eq!(input_label(&hook.to_string()), "turn_end");
        assert_eq!(
            input_label(r#"{"type": "tool", "name": "new_context"}"#),
            "new_context"
        );
        assert_eq!(input_label(r#"{"type": "known", "ids": []}"#), "known");
        assert_eq!(input_label(r#"{"type": "open"}"#), "loading the session");
        assert_eq!(input_label("{"), "?");
    }

    #[test]
    fn a_panic_in_the_first_configuration_leaves_the_defaults() {
        let mut b = Binding::new();
        let failure = b
            .guarded("configure", &String::new, |_| -> Result<(), _> {
                panic!("in configure")
            })
            .unwrap_err();
        assert!(
            failure
                .text()
                .starts_with("relay: internal error in configure: in configure"),
            "{failure:?}"
        );
        assert!(b.needs_resync());
        assert!(b.inner.enabled(), "defaults");
        assert!(b.load_session_file("S", "/no/such/file.jsonl", "x").is_ok());
        assert!(b.needs_resync(), "a load that found nothing is no resync");
        b.resync("S", "[]").unwrap();
        assert!(!b.needs_resync());
    }

    #[test]
    fn a_feed_that_does_not_follow_the_tip_asks_for_the_whole_branch() {
        let mut b = Binding::new();
        b.resync("S", &branch()).unwrap();
        let stray = json!({"append": [entry("x1", Some("elsewhere"), "stray")]}).to_string();
        let hook = json!({"type": "hook", "observation": serde_json::from_str::<Value>(
            &observation("context", json!({}))).unwrap()})
        .to_string();
        let err = b.handle_input(&hook, Some(&stray)).unwrap_err();
        assert_eq!(
            err,
            Failure::Invalid(
                "relay: entry x1 does not follow the mirror's tip (a2); the session is reloaded from Pi"
                    .into()
            )
        );
        assert!(b.needs_resync());
        assert_eq!(
            b.tip_id().unwrap().as_deref(),
            Some("a2"),
            "nothing was appended"
        );
        let follows = json!({"append": [entry("a3", Some("a2"), "next")]}).to_string();
        b.resync("S", &branch()).unwrap();
        let out: Value =
            serde_json::from_str(&b.handle_input(&hook, Some(&follows)).unwrap()).unwrap();
        assert_eq!(out["tip"], "a3");
        assert_eq!(out["needsBranch"], false);
    }

    #[test]
    fn invalid_input_is_an_error_not_a_restart() {
        let mut b = Binding::new();
        b.resync("S", &branch()).unwrap();
        assert!(matches!(b.handle("{"), Err(Failure::Invalid(_))));
        assert!(matches!(b.append("nope"), Err(Failure::Invalid(_))));
        assert!(!b.needs_resync());
        assert_eq!(b.tip_id().unwrap().as_deref(), Some("a2"));
    }

    #[test]
    fn git_facts_round_trip_and_a_missing_collection_is_unknown() {
        let dir = std::env::temp_dir().join(format!("relay-node-git-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Already past the deadline: nothing runs, the facts say unknown.
        let job = json!({"id": 1, "deadlineMs": 0, "work": {"kind": "git", "cwd": dir}});
        let outcome: Value = serde_json::from_str(&jobs::run(&job.to_string()).unwrap()).unwrap();
        assert_eq!(outcome["kind"], "done");
        assert_eq!(
            outcome["value"],
            json!({"repoRoot": null, "branch": null, "head": null, "state": "unknown"})
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_resume_check_job_gives_its_result_and_a_malformed_job_is_an_error() {
        let dir = std::env::temp_dir().join(format!("relay-node-resume-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let job = json!({"id": 2, "deadlineMs": i64::MAX, "work": {
            "kind": "resumeCheck", "command": "echo checked; exit 4",
            "source": "PI_RESUME_CHECK", "cwd": dir}});
        let outcome: Value = serde_json::from_str(&jobs::run(&job.to_string()).unwrap()).unwrap();
        assert_eq!(outcome["kind"], "done");
        assert_eq!(
            outcome["value"]["status"],
            json!({"kind": "exited", "code": 4})
        );
        assert_eq!(outcome["value"]["output"]["head"], "checked\n");
        assert!(outcome["atMs"].as_i64().unwrap() > 0);
        let err = jobs::run(r#"{"id": 3, "deadlineMs": 0, "work": {"kind": "nope"}}"#).unwrap_err();
        assert!(
            err.starts_with("relay: invalid job: unknown variant `nope`"),
            "{err}"
        );
        // A host job is refused by the addon, as a failure, not a crash.
        let facts = json!({"id": 4, "deadlineMs": 0, "work": {"kind": "facts",
            "sessionName": true, "registries": false}});
        let outcome: Value = serde_json::from_str(&jobs::run(&facts.to_string()).unwrap()).unwrap();
        assert_eq!(outcome["kind"], "failed");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
