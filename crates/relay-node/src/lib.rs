//! napi-rs binding: the addon's whole surface. One door into the engine and one job runner:
//!
//! - `Engine` with `handle(input, feed?)`: an `Input` JSON (relay-core's `engine::door`) and,
//!   optionally, what Pi appended since the engine's tip; answers the `Output` JSON;
//! - `runJob(job)`: a `Job` the output asked for, run on the libuv pool (never on Pi's event
//!   loop), resolving to its outcome JSON; a module function, not an `Engine` method, because
//!   napi-rs keeps the borrow of the object whose method returned an `AsyncTask` until it
//!   settles, and every other engine call would fail meanwhile;
//! - `messageLine(customType, content)`: the one line Pi's TUI shows for a Relay message (its
//!   renderers have no engine); `version()`.
//!
//! Every entry point catches panics twice over: `#[napi(catch_unwind)]` around napi's own
//! argument and result conversion, and the binding's guard around the work (see `binding`). The
//! job runner and the panic boundary are relay-io's (`relay_io::jobs`, `relay_io::boundary`), so
//! the CLI and the Rust tests use them too.
#![deny(
    clippy::all,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod binding;

use relay_io::{boundary, jobs};

use binding::{Binding, Failure};
use napi::bindgen_prelude::*;
use napi::{Env, Task};
use napi_derive::napi;

fn to_js(failure: Failure) -> Error {
    match failure {
        Failure::Invalid(text) => Error::new(Status::InvalidArg, text),
        Failure::Panic(text) => Error::new(Status::GenericFailure, text),
    }
}

#[napi(catch_unwind)]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The one line Pi's TUI shows for a Relay message (`null` for a type that is not Relay's).
#[napi(catch_unwind)]
pub fn message_line(custom_type: String, content: String) -> Option<String> {
    relay_core::engine::tui::message_line(&custom_type, &content)
}

/// The engine held by the extension: branch mirror plus every decision.
#[napi(js_name = "Engine")]
pub struct JsEngine {
    b: Binding,
}

impl Default for JsEngine {
    fn default() -> Self {
        Self::new()
    }
}

#[napi]
impl JsEngine {
    #[napi(constructor, catch_unwind)]
    pub fn new() -> Self {
        boundary::quiet_panics();
        JsEngine { b: Binding::new() }
    }

    /// The one door: `input` is an `Input` JSON, `feed` (optional) a `Feed` of what Pi appended
    /// since the engine's tip; returns the `Output` JSON.
    #[napi(catch_unwind)]
    pub fn handle(&mut self, input: String, feed: Option<String>) -> Result<String> {
        self.b.handle_input(&input, feed.as_deref()).map_err(to_js)
    }
}

/// Run a `Job` JSON the engine asked for on the libuv thread pool: a promise of its outcome JSON
/// (`done`, `failed`, never a rejection for work that went wrong). Never blocks the event loop.
#[napi(catch_unwind, ts_return_type = "Promise<string>")]
pub fn run_job(job: String) -> AsyncTask<RunJob> {
    AsyncTask::new(RunJob { job })
}

/// The work of `runJob` on a worker thread.
pub struct RunJob {
    job: String,
}

impl Task for RunJob {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> Result<String> {
        // Runs on a libuv worker: `jobs::run` catches panics itself.
        jobs::run(&self.job).map_err(|text| Error::new(Status::InvalidArg, text))
    }

    fn resolve(&mut self, _env: Env, output: String) -> Result<String> {
        Ok(output)
    }
}
