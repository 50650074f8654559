//! Whole-engine property test: generated Pi sessions are run through the engine's one door,
//! [`Engine::handle`] (`Input` in, `Output` out, the real types of `relay_core::engine`), by a
//! small Pi-like host, and the invariants users rely on are checked after every input and after
//! every session-level action. docs/reliability.md ("The whole-engine property test") says what
//! it covers. Here: the generated sessions and the host; jobs.rs: the door, the jobs and the
//! loads; checks.rs: the invariants; cases.rs: the regressions, the open defects (ignored) and
//! the generator's reach.
//!
//! # The host model
//!
//! [`Host`] plays Pi plus the extension's driver. It owns the session branch (every entry built
//! as Pi's JSON, kept raw for the door and parsed with [`parse_entry`] for the checks), feeds the
//! engine what Pi appended (`Input::Feed` of the raw entries before every hook and tool; a
//! navigation is a `truncate` feed), turns each Pi event into an observation *deserialised from
//! JSON* (so the test also checks what the wire contract accepts), and executes what the engine
//! answers:
//!
//! - **jobs**: every job an output asks for is answered with `Input::Done` after the
//!   output's appends were made and fed; each job's fate is generated: done with a plausible
//!   value of its kind (git, stores, facts, resume check, stale check, handoff number, handoff
//!   file), failed, failed at its deadline, aborted (Pi's abort signal: the run then ends
//!   aborted), or, for a handoff file, its number taken by another writer;
//! - **loads**: a `/reload` opens the session with no file, with a small file (`run_now` load) or
//!   a large one (a background load job); the host has no session file (relay-core has no IO),
//!   so every load comes back empty (done `false`, failed or aborted) and the engine must ask for
//!   the branch (`needsBranch`), which the host then sends (`Input::Resync`); a resume resyncs at
//!   once;
//! - `send` effects: a boot block while idle is appended at once; a `triggerTurn:false` message is
//!   held until the turn ends; a steer goes into the next request of the run (and adds one);
//! - `reset` results: from `turn_end`/`agent_before_settle` the marker entry, the compaction entry
//!   and the hidden continuation (`continue: true`, one more request); from
//!   `session_before_compact` the marker and the compaction (the adapter drops the continuation),
//!   or, when the generated run says so, Pi fails to append it and reports
//!   `session_compact_failed`;
//! - `cancel`: Pi records `session_compact_failed`; no result while Relay is off: Pi's own
//!   summarizer appends its compaction;
//! - `block`: the tool does not run; Pi hands the model an error result;
//! - `continue`: the hidden message is appended and the run makes one more request.
//!
//! Pi's own behaviour is modelled on the verified Pi 1.6 host facts: the threshold check runs
//! between turns, after `agent_end` and before a prompt (`tokens > window - reserve`, only with
//! usage newer than the latest compaction, never right after a compaction); an overflow error
//! appends a `context_edit` and is hooked once (`willRetry: true`) until the next user message; an
//! answer larger than the window is hooked as an overflow Pi will not retry; a transient provider
//! error ends the turn with `error` and Pi's auto-retry sends the same request again; the user's
//! steer during a turn is a user message in the next request; an aborted run skips
//! `agent_before_settle`; `terminate` ends the tool loop when every result in the batch sets it;
//! configuration is read at `session_start` and at every `input`.
//!
//! # The invariants
//!
//! - **the door**: no input panics; every `op` an output hands out is answered, and the next
//!   output's `op` is a new one or none (the engine never waits twice on one operation, and an
//!   operation ends within a bounded number of answers); an output is refused only while the
//!   engine waits for the branch; after every feed the output's `tip` is the branch's last entry;
//!   every output serialises;
//! - **one reset per settle point**: a reset from `turn_end`/`agent_before_settle` needs a request
//!   no earlier reset consumed (`new_context` scheduled, a handoff committed, a forced reset, a
//!   borrowed turn); compaction hooks answer with their own reset; attempt ids are fresh and window
//!   ids unique on the branch;
//! - **one continuation per reset**: a window holds at most one hidden continuation, right after
//!   its compaction; none from a compaction hook or while the user has a prompt queued; at most one
//!   handoff request (`continue`) per run;
//! - **one borrowed turn per window**, only while a run streams, only from a threshold hook;
//! - **no user message dropped or replayed**: no text the engine produces carries a user prompt,
//!   except the boot block of an automatic or manual reset, which repeats exactly the ended
//!   window's newest prompts (up to eight, labelled as earlier input; a window without prompts
//!   repeats those of the newest earlier window that has some), and of a reset answering an
//!   overflow Pi retries, which also restates the window's last prompt as the dropped request;
//!   every prompt is on the branch as a user message at most once;
//! - **a failed reset is never silent**: a reset Pi does not append gets a warning and a message
//!   to the model;
//! - **observe and off never change the session**: no block, no handoff request, no handoff or
//!   forced reset, `context_handoff` writes nothing, no UI notice outside `/relay`, telemetry only as
//!   `would_*` (observe) or none (off);
//! - **disabled never acts**: no message, no entry, no hook result, no handoff written;
//! - **a blocked tool never runs**, and `context_handoff` is never blocked;
//! - **every record is versioned**: each entry Relay writes (window marker, `relay/*` custom entry
//!   or custom message) carries `v` = `relay_core::records::VERSION`;
//! - **the mirror is a projection of the branch**: after every action the engine's windows, items
//!   and notes (as its tools show them), its `/relay` status and its `get_context_remaining` equal
//!   those of a fresh engine configured and resynced from the branch; after a `/reload` or a
//!   resume, the new engine answers `/relay` status and `get_context_remaining` as the engine
//!   that lived through the session did.
//!
//! Cases: `RELAY_PROPTEST_CASES` (default [`DEFAULT_CASES`] for `cargo test`; `make test` sets
//! 5,000). A failing case's seed is printed and kept in `main.proptest-regressions` next to this
//! file, which runs first every time (support/props.rs).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;

use proptest::prelude::*;
use relay_core::engine::{
    ConfigSources, Effect, Engine, HookResult, Input, Marker, Moment, Observation, Output,
    ResetPlan, ToolReply, ToolStub, BOOT_TYPE, CLEARING_TYPE, CONTINUE_TASK_TYPE, CONTINUE_TYPE,
    HANDOFF_REQUEST_TYPE, HANDOFF_TYPE, REMINDER_TYPE, RESET_FAILED_TYPE, RESET_MARKER_TYPE,
    STEER_TYPE,
};
use relay_core::entry::{parse_entry, Entry, EntryKind, ModelRef};
use relay_core::notes::NOTE_CUSTOM_TYPE;
use serde_json::{json, Value};

#[path = "../support/branch.rs"]
mod branch;
#[path = "../support/props.rs"]
mod props;
use branch::{marker, prompts_in};

/// The case count of `cargo test` (`RELAY_PROPTEST_CASES` overrides it).
const DEFAULT_CASES: u32 = 64;
/// The model's question back to the user: an early stop by Relay's rule.
const ASK: &str = "What should I do next?";
const CWD: &str = "/work/project";
const RESERVE: u64 = 16_384;
/// `idleMinTokens` of the generated sessions.
const IDLE_MIN_TOKENS: u64 = 8_000;
/// The operator's resume check (`PI_RESUME_CHECK`): a committed handoff and the window it opens
/// run it as a job.
const RESUME_CHECK: &str = "make check";

/// What one input (and the operation it started) answered, every step's effects together.
#[derive(Debug, Default)]
struct Answered {
    effects: Vec<Effect>,
    result: Option<HookResult>,
    continue_run: Option<bool>,
    /// The entries the final output asks to append (an operation's earlier appends are made and
    /// fed before its `Done`).
    appends: Vec<Marker>,
    reply: Option<ToolReply>,
    /// The stubs an output sent (a `context` hook's, when they changed).
    stubs: Option<Vec<ToolStub>>,
}

/// The output as JSON: it must serialise (the binding hands it to the extension as JSON), and a
/// steer is the one delivery the engine asks for.
fn wire(out: &Output) -> Result<Value, String> {
    let value = serde_json::to_value(out).map_err(|e| format!("output does not serialise: {e}"))?;
    for effect in value["effects"].as_array().into_iter().flatten() {
        if effect["kind"] == "send" {
            ensure(effect.get("deliverAs").is_none_or(|d| d == "steer"), || {
                format!("unexpected delivery: {effect}")
            })?;
        }
    }
    ensure(value.get("result") != Some(&Value::Null), || {
        "`result: null` (TypeScript expects the key absent)".to_string()
    })?;
    Ok(value)
}

fn ensure(cond: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}

macro_rules! check {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

mod cases;
mod checks;
mod jobs;
use jobs::{Fate, OpenKind};

// ---------------------------------------------------------------------------------------------
// Generated sessions
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    Observe,
    Enforce,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Observe => "observe",
            Mode::Enforce => "enforce",
        }
    }
}

/// Lines of a `bash` result (12 characters each): about 1,000 tokens.
const BASH_LINES: usize = 330;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Settings {
    enabled: bool,
    mode: Mode,
    max_handoffs: u32,
}

#[derive(Debug, Clone)]
enum Tool {
    /// A tool Relay does not own (Pi's `bash`).
    Bash {
        fails: bool,
    },
    NotesWrite {
        path: u8,
        empty: bool,
    },
    NotesAppend {
        path: u8,
    },
    NotesRead {
        path: u8,
    },
    /// Invalid arguments: a tool error, nothing persisted.
    NotesBad,
    NewContext,
    Handoff {
        repeat: bool,
    },
    HistorySearch {
        prompt: u8,
    },
    Remaining,
    ListWindows,
}

#[derive(Debug, Clone)]
enum Reply {
    /// A final answer: the run ends unless something asks for another request.
    Text,
    /// A question back to the user (an early stop): the run ends unless something asks for
    /// another request, such as Relay's one continuation in a window a reset opened.
    Ask,
    /// Tool calls: the loop goes on unless every result terminates.
    Tools(Vec<Tool>),
    /// `prompt is too long`: Pi omits the attempt and hooks the overflow (willRetry) once.
    OverflowError,
    /// An answer larger than the window: Pi hooks an overflow it will not retry.
    OverflowLate,
    /// A transient provider error (`overloaded`): the turn ends with `error`; when `retried`,
    /// Pi's auto-retry sends the same request again.
    TransientError { retried: bool },
}

#[derive(Debug, Clone)]
struct Turn {
    reply: Reply,
    /// The assistant usage, in thousandths of the context window.
    usage_permille: u64,
    /// A compaction Pi starts at this turn's boundary fails after the hook (aborted, error).
    compaction_fails: bool,
    /// The user steers while this turn streams: a user message in the run's next request.
    steer: bool,
}

#[derive(Debug, Clone, Default)]
struct Run {
    turns: Vec<Turn>,
    /// The user aborts at this turn (its answer is cut off).
    abort_at: Option<usize>,
    /// The user queues a follow-up while this turn streams.
    queue_at: Option<usize>,
    /// A pre-prompt compaction fails after the hook.
    pre_compaction_fails: bool,
    /// `/reload` while this request is about to be sent (Pi 1.3's `AgentSession.reload` does
    /// not wait for the run to end; 1.6's refuses): the new engine starts inside the run.
    reload_at: Option<(usize, OpenKind)>,
}

#[derive(Debug, Clone)]
enum Action {
    Prompt(Run),
    /// `/reload`: a new engine, configured and opened as `open` says, then resynced.
    Reload {
        open: OpenKind,
    },
    /// `/resume` of this session: a new engine resynced from the branch at once.
    Resume,
    /// `/tree`: the leaf moves `back` entries towards the root (past the root: empty branch).
    Navigate {
        back: usize,
    },
    /// `/relay <args>`.
    Command(&'static str),
    /// settings.json changes; the engine reads it at the next input or reload.
    Settings(Settings),
    /// The user's `/compact` while idle.
    Compact {
        fails: bool,
    },
    /// Time passes.
    Wait {
        minutes: i64,
    },
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        prop_oneof![6 => Just(true), 1 => Just(false)],
        prop_oneof![1 => Just(Mode::Off), 2 => Just(Mode::Observe), 4 => Just(Mode::Enforce)],
        prop_oneof![Just(1u32), Just(2), Just(10)],
    )
        .prop_map(|(enabled, mode, max_handoffs)| Settings {
            enabled,
            mode,
            max_handoffs,
        })
}

fn tool() -> impl Strategy<Value = Tool> {
    prop_oneof![
        4 => any::<bool>().prop_map(|fails| Tool::Bash { fails }),
        3 => (0u8..3, prop::bool::weighted(0.15)).prop_map(|(path, empty)| Tool::NotesWrite { path, empty }),
        2 => (0u8..3).prop_map(|path| Tool::NotesAppend { path }),
        1 => (0u8..3).prop_map(|path| Tool::NotesRead { path }),
        1 => Just(Tool::NotesBad),
        3 => Just(Tool::NewContext),
        3 => prop::bool::weighted(0.2).prop_map(|repeat| Tool::Handoff { repeat }),
        1 => (0u8..8).prop_map(|prompt| Tool::HistorySearch { prompt }),
        1 => Just(Tool::Remaining),
        1 => Just(Tool::ListWindows),
    ]
}

fn turn() -> impl Strategy<Value = Turn> {
    let reply = prop_oneof![
        3 => Just(Reply::Text),
        1 => Just(Reply::Ask),
        8 => prop::collection::vec(tool(), 1..3).prop_map(Reply::Tools),
        1 => Just(Reply::OverflowError),
        1 => Just(Reply::OverflowLate),
        1 => any::<bool>().prop_map(|retried| Reply::TransientError { retried }),
    ];
    // Usage spread over every line: reminder, soft, handoff, hard, Pi's threshold, the window.
    let usage = prop_oneof![
        3 => 0u64..450,
        3 => 450u64..750,
        3 => 750u64..900,
        2 => 900u64..1000,
    ];
    (
        reply,
        usage,
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(reply, usage_permille, compaction_fails, steer)| Turn {
            reply,
            usage_permille,
            compaction_fails,
            // Mostly while the turn crosses a line (the reminder, the handoff threshold).
            steer: steer && usage_permille >= 450,
        })
}

fn run() -> impl Strategy<Value = Run> {
    (
        prop::collection::vec(turn(), 1..7),
        prop::option::weighted(0.12, 0usize..7),
        prop::option::weighted(0.12, 0usize..7),
        prop::bool::weighted(0.1),
        prop::option::weighted(0.05, (0usize..7, jobs::open_kind())),
    )
        .prop_map(
            |(turns, abort_at, queue_at, pre_compaction_fails, reload_at)| Run {
                turns,
                abort_at,
                queue_at,
                pre_compaction_fails,
                reload_at,
            },
        )
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        14 => run().prop_map(Action::Prompt),
        1 => jobs::open_kind().prop_map(|open| Action::Reload { open }),
        1 => Just(Action::Resume),
        2 => (1usize..12).prop_map(|back| Action::Navigate { back }),
        2 => prop_oneof![Just("on"), Just("off"), Just(""), Just("status"), Just("bogus")].prop_map(Action::Command),
        2 => settings().prop_map(Action::Settings),
        1 => prop::bool::weighted(0.2).prop_map(|fails| Action::Compact { fails }),
        1 => prop_oneof![Just(1i64), Just(20), Just(90)].prop_map(|minutes| Action::Wait { minutes }),
    ]
}

// ---------------------------------------------------------------------------------------------
// The host: Pi plus the adapter
// ---------------------------------------------------------------------------------------------

/// Where a hook was called from, for the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hook {
    SessionStart,
    SessionTree,
    SessionShutdown,
    BeforeAgentStart,
    Context,
    ToolCall,
    ToolResult,
    TurnEnd,
    AgentEnd,
    BeforeSettle,
    Settled,
    CompactFailed,
    BeforeCompact,
    Command,
    Input,
}

impl Hook {
    fn name(self) -> &'static str {
        match self {
            Hook::SessionStart => "session_start",
            Hook::SessionTree => "session_tree",
            Hook::SessionShutdown => "session_shutdown",
            Hook::BeforeAgentStart => "before_agent_start",
            Hook::Context => "context",
            Hook::ToolCall => "tool_call",
            Hook::ToolResult => "tool_result",
            Hook::TurnEnd => "turn_end",
            Hook::AgentEnd => "agent_end",
            Hook::BeforeSettle => "agent_before_settle",
            Hook::Settled => "agent_settled",
            Hook::CompactFailed => "session_compact_failed",
            Hook::BeforeCompact => "session_before_compact",
            Hook::Command => "command",
            Hook::Input => "input",
        }
    }
}

/// A session id per host: `/relay on|off` is remembered per session for the process (the engine
/// a `/reload` re-creates applies it again), and the cases run in one process.
fn session_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("0190a1b2-props-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

struct Host {
    engine: Engine,
    sid: String,
    window: u64,
    branch: Vec<Entry>,
    /// Each branch entry as Pi's JSON, as the driver feeds it.
    raws: Vec<String>,
    /// A navigation not fed yet: drop every entry after this one (`None`: all).
    pending_truncate: Option<Option<String>>,
    // ----- the door -----
    /// How the session's jobs end, cycled.
    fates: Vec<Fate>,
    fate_at: usize,
    /// A job was aborted (Pi's abort signal): the run ends aborted at its next step.
    aborting: bool,
    /// The last output said `needsBranch`.
    waiting_for_branch: bool,
    /// The last output's tip.
    last_tip: Option<String>,
    /// The model is a router (virtual) model that declares the same window as the two physical
    /// models it routes to (`faux-1` on even prompts, `faux-2` on odd ones), and the model the
    /// engine's last output (not a feed's) named, whose window the moment reports.
    router: bool,
    answered: Option<ModelRef>,
    /// The window's stubs as the engine last sent them: what the host puts in place of cleared
    /// tool results (it keeps them while an output sends none; a new engine starts without).
    stubs_held: Vec<ToolStub>,
    /// Operations and jobs this engine handed out.
    ops_seen: BTreeSet<u64>,
    jobs_seen: BTreeSet<u64>,
    /// The user's steers, delivered in the run's next request.
    user_steers: Vec<String>,
    /// Pi's auto-retry of a transient error is due after `agent_end`.
    retry_pending: bool,
    /// How many branch entries the engine has been given.
    mirrored: usize,
    next_id: u64,
    now_ms: i64,
    /// settings.json now, and what the engine last read.
    settings: Settings,
    applied: Settings,
    /// `/relay on|off` of this runtime.
    toggle: Option<bool>,
    // ----- the run -----
    streaming: bool,
    /// Steers waiting for the next request of this run.
    steers: Vec<(String, Value)>,
    /// `triggerTurn: false` messages held until the turn ends: (customType, content, details).
    held: Vec<(String, String, Value)>,
    /// The user's queued follow-up.
    followup: Option<String>,
    /// Pi's one overflow recovery is available (re-armed by a user message or a good answer).
    overflow_armed: bool,
    /// The last answer was larger than the window: Pi hooks an overflow it will not retry.
    late_overflow: bool,
    /// The current window was opened by Relay's overflow reset and no user message or
    /// successful answer came since: Relay's one reset-and-retry is spent, so another overflow
    /// reset would be a loop.
    relay_retry_spent: bool,
    prompts: u32,
    calls: u32,
    handoffs: u32,
    // ----- what the checks remember -----
    /// A request arrived that no reset has consumed yet.
    fresh_request: bool,
    /// Handoff requests (`continue`) in this run.
    run_continues: u32,
    /// `context_handoff` promised the model a reset at the end of this turn.
    promised_commit: bool,
    /// The open handoff request of this run (or of the window since) is the idle one: the engine
    /// sent the idle continuation and no new prompt or reset ended it since.
    idle_requested: bool,
    /// Compaction entries allowed to restate a user prompt (overflow resets Pi retries).
    restating: HashSet<String>,
    blocked: HashSet<String>,
    executed: HashSet<String>,
    /// The enforced policy committed a handoff or forced a reset that is not installed yet:
    /// nothing but `context_handoff` may run until it is (or the policy says it was dropped).
    reset_owed: bool,
    trace: Vec<String>,
}

impl Host {
    fn new(window: u64, settings: Settings, fates: Vec<Fate>) -> Result<Self, String> {
        let mut host = Host {
            engine: Engine::new(),
            sid: session_id(),
            window,
            branch: Vec::new(),
            raws: Vec::new(),
            pending_truncate: None,
            fates: if fates.is_empty() {
                vec![Fate::Done]
            } else {
                fates
            },
            fate_at: 0,
            aborting: false,
            waiting_for_branch: false,
            last_tip: None,
            router: window.is_multiple_of(2),
            answered: None,
            stubs_held: Vec::new(),
            ops_seen: BTreeSet::new(),
            jobs_seen: BTreeSet::new(),
            user_steers: Vec::new(),
            retry_pending: false,
            mirrored: 0,
            next_id: 0,
            now_ms: 1_764_450_000_000,
            settings,
            applied: settings,
            toggle: None,
            streaming: false,
            steers: Vec::new(),
            held: Vec::new(),
            followup: None,
            overflow_armed: true,
            late_overflow: false,
            relay_retry_spent: false,
            prompts: 0,
            calls: 0,
            handoffs: 0,
            fresh_request: false,
            run_continues: 0,
            promised_commit: false,
            idle_requested: false,
            restating: HashSet::new(),
            blocked: HashSet::new(),
            reset_owed: false,
            executed: HashSet::new(),
            trace: Vec::new(),
        };
        host.start("startup", None)?;
        Ok(host)
    }

    // ----- settings and state the host expects -----

    fn enabled(&self) -> bool {
        self.toggle.unwrap_or(self.applied.enabled)
    }

    /// The reference of the reset guard: the engine's branch has a compaction, and after the
    /// newest one no user message and no successful tool result other than Relay's two reset
    /// tools.
    fn idle_since_reset(&self) -> bool {
        let seen = self.branch.get(..self.mirrored).unwrap_or(&self.branch);
        let Some(start) = seen
            .iter()
            .rposition(|e| matches!(e.kind, EntryKind::Compaction { .. }))
        else {
            return false;
        };
        !seen[start..].iter().any(|e| match &e.kind {
            EntryKind::Message(m) if m.role == "user" => true,
            EntryKind::Message(m) if m.role == "toolResult" => {
                !m.is_error
                    && !matches!(
                        m.tool_name.as_deref(),
                        Some("new_context" | "context_handoff")
                    )
            }
            _ => false,
        })
    }

    fn enforcing(&self) -> bool {
        self.enabled() && self.applied.mode == Mode::Enforce
    }

    fn sources(settings: Settings) -> ConfigSources {
        let value = json!({
            "global": {
                "relay": {
                    "enabled": settings.enabled,
                    "budget": {
                        "mode": settings.mode.as_str(),
                        "maxHandoffsPerSession": settings.max_handoffs,
                        // Small enough that a queued follow-up at a settle point asks for an idle
                        // handoff (the one handoff request of its run).
                        "idleMinTokens": IDLE_MIN_TOKENS,
                    },
                    // Clearings happen in these sessions: a low trigger, little to free.
                    "clearToolResults": { "triggerTokens": 8_000, "keep": 2, "clearAtLeast": 1_000 },
                },
                "compaction": { "reserveTokens": RESERVE },
            },
            "projectFile": null,
            "projectTrusted": false,
            "stateDir": "/state",
            "cwd": CWD,
            "resumeCheckEnv": RESUME_CHECK,
            // The stores' places: the subagent task directory is named from these.
            "tmpDir": "/tmp",
            "uid": 1000,
        });
        serde_json::from_value(value).expect("configuration sources deserialise")
    }

    /// The adapter's `configure`: at session start and at every input.
    fn configure(&mut self) -> Result<(), String> {
        let reply = self.call(Input::Configure {
            sources: Box::new(Self::sources(self.settings)),
        })?;
        // Valid settings change nothing but which tools are declared (the memory tool, said at
        // the first configuration).
        check!(
            reply.result.is_none()
                && reply
                    .effects
                    .iter()
                    .all(|fx| matches!(fx, relay_core::engine::Effect::ActiveTools { .. })),
            "valid settings produced {:?}",
            reply
        );
        self.applied = self.settings;
        Ok(())
    }

    /// `session_start`: a full sync of the mirror, configuration, then the hook.
    fn start(&mut self, reason: &str, open: Option<OpenKind>) -> Result<(), String> {
        self.engine = Engine::new();
        self.stubs_held.clear();
        self.ops_seen.clear();
        self.jobs_seen.clear();
        self.waiting_for_branch = false;
        self.pending_truncate = None;
        self.mirrored = self.branch.len();
        self.reset_owed = false;
        // `/relay on|off` stays: the process remembers it for the session.
        self.configure()?;
        self.open(open)?;
        if self.enabled() && self.window_owes_retry() {
            self.fresh_request = true;
        }
        let run_active = self.streaming;
        self.hook(
            Hook::SessionStart,
            json!({ "reason": reason, "runActive": run_active }),
        )?;
        Ok(())
    }

    // ----- the branch -----

    fn entry(&mut self, mut body: Value) -> String {
        self.next_id += 1;
        let id = format!("{:08x}", self.next_id);
        body["id"] = json!(id);
        body["parentId"] = json!(self.branch.last().map(|e| e.id.clone()));
        body["timestamp"] = json!("2025-11-29T21:00:00.000Z");
        let raw = body.to_string();
        let entry = parse_entry(&raw).expect("a Pi entry parses");
        self.branch.push(entry);
        self.raws.push(raw);
        id
    }

    fn custom(&mut self, custom_type: &str, data: &Value) -> String {
        self.entry(json!({"type": "custom", "customType": custom_type, "data": data}))
    }

    fn custom_message(
        &mut self,
        custom_type: &str,
        content: &str,
        display: bool,
        details: &Value,
    ) -> String {
        self.entry(json!({
            "type": "custom_message", "customType": custom_type, "content": content,
            "display": display, "details": details,
        }))
    }

    fn user(&mut self, text: &str) -> String {
        self.overflow_armed = true;
        self.relay_retry_spent = false;
        self.entry(json!({"type": "message", "message": {"role": "user", "content": text}}))
    }

    fn assistant(&mut self, content: Value, stop: &str, usage: u64) -> String {
        if !matches!(stop, "error" | "length") {
            self.relay_retry_spent = false;
        }
        let model = if self.prompts.is_multiple_of(2) {
            "faux-1"
        } else {
            "faux-2"
        };
        self.entry(json!({"type": "message", "message": {
            "role": "assistant", "content": content, "stopReason": stop,
            "provider": "faux", "model": model,
            "usage": {"input": usage, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": usage},
        }}))
    }

    fn compaction(&mut self, summary: &str, first_kept: &str, details: &Value) -> String {
        self.reset_owed = false;
        self.entry(json!({
            "type": "compaction", "summary": summary, "firstKeptEntryId": first_kept,
            "tokensBefore": 1000, "details": details, "fromHook": true,
        }))
    }

    /// Index of the first entry of the current window (the latest compaction, or 0).
    /// The current window holds the notice of a rejected window-full reset: the engine owes it a
    /// retry (a reset request no reset has consumed yet).
    fn window_owes_retry(&self) -> bool {
        self.branch[self.window_start()..].iter().any(|e| {
            matches!(&e.kind, EntryKind::CustomMessage { custom_type, details, .. }
                if custom_type == RESET_FAILED_TYPE && details["retry"] == true)
        })
    }

    fn window_start(&self) -> usize {
        self.branch
            .iter()
            .rposition(|e| matches!(e.kind, EntryKind::Compaction { .. }))
            .unwrap_or(0)
    }

    /// Pi's context estimate: the last valid assistant usage after the latest compaction plus
    /// chars/4 of later messages; `None` after a compaction until an answer reports usage.
    fn pi_tokens(&self) -> Option<u64> {
        let mut trailing = 0;
        for e in self.branch.iter().rev() {
            match &e.kind {
                EntryKind::Compaction { .. } => return None,
                EntryKind::Message(m)
                    if m.role == "assistant"
                        && !matches!(m.stop_reason.as_deref(), Some("aborted" | "error"))
                        && m.usage_total.unwrap_or(0) > 0 =>
                {
                    return Some(m.usage_total.unwrap_or(0) + trailing)
                }
                // Pi counts each message's characters as `estimate_chars` states them (the
                // decoder's table test checks that against Pi's estimator kind by kind).
                EntryKind::Message(m) => trailing += m.estimate_chars.div_ceil(4),
                EntryKind::CustomMessage { estimate_chars, .. } => {
                    trailing += estimate_chars.div_ceil(4)
                }
                _ => {}
            }
        }
        Some(trailing)
    }

    /// The largest usage an answer reported in the current window.
    fn window_usage(&self) -> u64 {
        self.branch[self.window_start()..]
            .iter()
            .filter_map(|e| match &e.kind {
                EntryKind::Message(m) if m.role == "assistant" => m.usage_total,
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// Pi's automatic threshold check (compaction enabled, reserve 16,384).
    fn over_threshold(&self) -> bool {
        let after_compaction = matches!(
            self.branch.last().map(|e| &e.kind),
            Some(EntryKind::Compaction { .. })
        );
        !after_compaction
            && self
                .pi_tokens()
                .is_some_and(|t| t > self.window.saturating_sub(RESERVE))
    }

    // ----- the adapter -----

    fn moment_json(&self, with_usage: bool) -> Value {
        let usage = if with_usage {
            json!({ "tokens": self.pi_tokens(), "contextWindow": self.window })
        } else {
            Value::Null
        };
        json!({
            "nowMs": self.now_ms,
            "tzOffsetMinutes": 60,
            "usage": usage,
            "model": if self.router { "router/auto" } else { "faux/faux-1" },
            "contextWindow": self.window,
            "api": if self.router { "pi-virtual" } else { "faux" },
            "answeredWindow": (self.router && self.answered.is_some()).then_some(self.window),
            "hasPendingMessages": self.queued(),
            // A host integration reporting background work during every third prompt's run: with
            // enough context its settle point asks for an idle handoff.
            "pendingWork": u32::from(self.prompts % 3 == 2),
            "cwd": CWD,
            "subagent": false,
        })
    }

    fn tick(&mut self) {
        self.now_ms += 1_000;
    }

    /// One hook: sync, observe (built from JSON), check the reply, run its effects.
    fn hook(&mut self, hook: Hook, extra: Value) -> Result<Answered, String> {
        self.tick();
        self.sync()?;
        let mut event = json!({ "type": hook.name() });
        if let Value::Object(extra) = &extra {
            for (k, v) in extra {
                // Pi reports these, but the engine's wire takes no reason for session start and
                // shutdown (the trace keeps them for reading).
                let dropped = matches!(
                    (hook, k.as_str()),
                    (Hook::SessionStart | Hook::SessionShutdown, "reason")
                );
                if !dropped {
                    event[k] = v.clone();
                }
            }
        }
        let obs = json!({ "moment": self.moment_json(false), "event": event });
        let observation: Observation = serde_json::from_value(obs.clone())
            .map_err(|e| format!("the wire rejects the observation {obs}: {e}"))?;
        let enabled_before = self.enabled();
        let out = self.call(Input::Hook { observation })?;
        check!(
            out.refused.is_none(),
            "{} was refused: {:?}",
            hook.name(),
            out.refused
        );
        let reply = self.drive(out, false)?;
        let mut line = format!(
            "{}{}",
            hook.name(),
            if extra.is_null() {
                String::new()
            } else {
                format!(" {extra}")
            }
        );
        if let Some(r) = &reply.result {
            let _ = write!(line, " -> {}", result_name(r));
        }
        for e in &reply.effects {
            if let Some(s) = effect_name(e) {
                let _ = write!(line, " +{s}");
            }
        }
        self.trace.push(line);
        if hook == Hook::Command {
            match extra["args"].as_str() {
                Some("on") => self.toggle = Some(true),
                Some("off") => self.toggle = Some(false),
                _ => {}
            }
            if enabled_before != self.enabled() {
                self.reset_owed = false;
            }
            if !enabled_before && self.enabled() && self.window_owes_retry() {
                self.fresh_request = true;
            }
        }
        self.check_hook(hook, &extra, &reply, enabled_before)?;
        // The adapter appends the hook's entries first, then runs its effects.
        for marker in &reply.appends {
            self.custom(&marker.custom_type, &marker.data);
        }
        self.run_effects(hook, &reply.effects)?;
        Ok(reply)
    }

    fn run_effects(&mut self, hook: Hook, effects: &[Effect]) -> Result<(), String> {
        for effect in effects {
            let value = serde_json::to_value(effect).expect("effects serialise");
            match value["kind"].as_str() {
                Some("send") => {
                    let custom_type = value["customType"].as_str().unwrap_or_default().to_string();
                    let content = value["content"].as_str().unwrap_or_default().to_string();
                    let details = value.get("details").cloned().unwrap_or(Value::Null);
                    let trigger = value["triggerTurn"].as_bool() == Some(true);
                    if trigger {
                        // Only a steer into the running run: an idle trigger would start a nested
                        // run and make Pi's pending prompt reject.
                        check!(
                            self.streaming,
                            "{}: a triggering message while idle: {value}",
                            hook.name()
                        );
                        self.steers.push((content, details));
                    } else if self.streaming {
                        self.held.push((custom_type, content, details));
                    } else {
                        let display = value["display"].as_bool() == Some(true);
                        self.custom_message(&custom_type, &content, display, &details);
                    }
                }
                Some("append") => {
                    let custom_type = value["customType"].as_str().unwrap_or_default().to_string();
                    self.custom(&custom_type, &value["data"]);
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A tool the model called, through the door (`context_handoff` is an operation with jobs).
    fn tool(&mut self, call_id: &str, name: &str, args: &Value) -> Result<ToolReply, String> {
        self.tick();
        self.sync()?;
        let moment: Moment = serde_json::from_value(self.moment_json(true))
            .map_err(|e| format!("the wire rejects the tool moment: {e}"))?;
        let out = self.call(Input::Tool {
            call_id: call_id.into(),
            name: name.into(),
            args: args.clone(),
            moment,
        })?;
        check!(
            out.refused.is_none(),
            "{name} was refused: {:?}",
            out.refused
        );
        let answered = self.drive(out, true)?;
        let Some(reply) = answered.reply else {
            return Err(format!("{name} ended without a reply"));
        };
        self.trace.push(format!(
            "  tool {name} -> {}{}{}",
            if reply.is_error { "error" } else { "ok" },
            if reply.terminate { " terminate" } else { "" },
            answered
                .appends
                .iter()
                .map(|p| format!(" persist {}", p.custom_type))
                .collect::<String>()
        ));
        check!(
            reply.effects.is_empty() && reply.persist.is_none(),
            "the door left effects or a persist inside the tool reply"
        );
        self.check_tool(name, &reply, &answered.effects, &answered.appends)?;
        for persist in &answered.appends {
            self.custom(&persist.custom_type, &persist.data);
        }
        self.sync()?;
        self.run_effects(Hook::ToolCall, &answered.effects)?;
        Ok(reply)
    }

    // ----- Pi -----

    /// Install a reset the way `resetDrafts` does: marker via appendEntry, then the compaction
    /// (and the continuation for a boundary draft).
    /// A reset `hook` answered: what the adapter returns to Pi as `continue` (no other
    /// extension here) agrees with the plan's continuation, and the reset is applied. Whether
    /// the run goes on.
    fn apply_reset(
        &mut self,
        hook: &str,
        answered: &Answered,
        plan: &ResetPlan,
    ) -> Result<bool, String> {
        let go_on = answered.continue_run == Some(true);
        check!(
            go_on == plan.continuation.is_some(),
            "{hook}'s reset says continue {:?} with continuation {}",
            answered.continue_run,
            plan.continuation.is_some()
        );
        self.install(plan, true, false);
        Ok(go_on)
    }

    fn install(&mut self, plan: &ResetPlan, continuation: bool, restates: bool) {
        // An applied reset ends the idle request.
        self.idle_requested = false;
        let marker_id = self.custom(&plan.marker.custom_type, &plan.marker.data);
        let details = serde_json::to_value(&plan.details).expect("the window marker serialises");
        let id = self.compaction(&plan.summary, &marker_id, &details);
        self.relay_retry_spent = plan.details.source.as_deref() == Some("overflow");
        if restates {
            self.restating.insert(id);
        }
        if continuation {
            if let Some(c) = &plan.continuation {
                self.custom_message(&c.custom_type, &c.content, false, &c.details);
            }
        }
    }

    /// `session_before_compact` and what Pi does with its answer. Returns whether a compaction
    /// entry was appended.
    fn compact(&mut self, reason: &str, will_retry: bool, fails: bool) -> Result<bool, String> {
        // A reset the engine owed before this compaction is still owed if it fails.
        let owed_before = self.fresh_request;
        let reply = self.hook(
            Hook::BeforeCompact,
            json!({ "reason": reason, "willRetry": will_retry }),
        )?;
        match reply.result {
            Some(HookResult::Cancel) => {
                if reason == "threshold" {
                    // A crossing is a request: the window is full (it may reset at the next
                    // boundary when the window already had its borrowed turn).
                    self.fresh_request = true;
                }
                self.hook(
                    Hook::CompactFailed,
                    json!({ "reason": reason, "aborted": true }),
                )?;
                Ok(false)
            }
            Some(HookResult::Reset { plan }) => {
                check!(
                    !(reason == "overflow" && self.relay_retry_spent),
                    "a second overflow reset in a window whose one reset-and-retry is spent"
                );
                if fails {
                    // The adapter appended the marker inside the hook; Pi then drops the result.
                    self.custom(&plan.marker.custom_type, &plan.marker.data);
                    let failed = self.hook(Hook::CompactFailed, Value::Null)?;
                    // A failed reset is never silent: the user is warned and the model told.
                    let kinds: Vec<Value> = failed
                        .effects
                        .iter()
                        .map(|e| serde_json::to_value(e).expect("effects serialise"))
                        .collect();
                    check!(
                        kinds
                            .iter()
                            .any(|e| e["kind"] == "notify" && e["level"] == "warning")
                            && kinds.iter().any(
                                |e| e["kind"] == "send" && e["customType"] == RESET_FAILED_TYPE
                            ),
                        "a failed reset went unreported: {kinds:?}"
                    );
                    if owed_before
                        || matches!(
                            plan.details.source.as_deref(),
                            Some("fallback" | "threshold" | "overflow")
                        )
                    {
                        // The window is still full: the engine owes it a retry (a failed reset,
                        // the user's `/compact` too, consumes nothing it owed before).
                        self.fresh_request = true;
                    }
                    Ok(false)
                } else {
                    let restates = reason == "overflow" && will_retry;
                    self.install(&plan, false, restates);
                    Ok(true)
                }
            }
            None => {
                // Pi's own summarizer.
                if fails {
                    self.hook(Hook::CompactFailed, Value::Null)?;
                    Ok(false)
                } else {
                    let kept = self.branch.last().map(|e| e.id.clone()).unwrap_or_default();
                    self.compaction("Pi's summary of the conversation.", &kept, &Value::Null);
                    Ok(true)
                }
            }
            Some(other) => Err(format!("session_before_compact answered with {other:?}")),
        }
    }

    /// Deliver what waits for the next request: steers and the queued follow-up.
    fn deliver(&mut self) {
        for (steer, details) in std::mem::take(&mut self.steers) {
            self.custom_message(STEER_TYPE, &steer, true, &details);
        }
        for text in std::mem::take(&mut self.user_steers) {
            self.user(&text);
        }
        if let Some(text) = self.followup.take() {
            self.user(&text);
        }
    }

    /// The user has a message queued (a steer or a follow-up): `hasPendingMessages`.
    fn queued(&self) -> bool {
        self.followup.is_some() || !self.user_steers.is_empty()
    }

    fn flush_held(&mut self) {
        for (custom_type, content, details) in std::mem::take(&mut self.held) {
            self.custom_message(&custom_type, &content, true, &details);
        }
    }

    fn tool_call(&mut self, tool: &Tool) -> (String, Value) {
        let path = |p: &u8| format!("plan/note-{p}.md");
        self.calls += 1;
        let n = self.calls;
        match tool {
            Tool::Bash { fails } => (
                "bash".into(),
                json!({ "command": if *fails { "false" } else { "true" } }),
            ),
            Tool::NotesWrite { path: p, empty } => (
                "notes_write_file".into(),
                json!({ "path": path(p), "content": if *empty { String::new() } else { format!("note body {n}\nline two\n") } }),
            ),
            Tool::NotesAppend { path: p } => (
                "notes_append_to_file".into(),
                json!({ "path": path(p), "content": format!("appended {n}\n") }),
            ),
            Tool::NotesRead { path: p } => ("notes_read_file".into(), json!({ "path": path(p) })),
            Tool::NotesBad => (
                "notes_write_file".into(),
                json!({ "path": "../escape.md", "content": "x" }),
            ),
            Tool::NewContext => ("new_context".into(), json!({})),
            Tool::Handoff { repeat } => {
                let k = if *repeat { 0 } else { n };
                (
                    "context_handoff".into(),
                    json!({
                        "goal": format!("finish task number {k} of the plan"),
                        "next_step": format!("run step {k} of the checklist"),
                        "facts": format!("steps before {k} are committed and tested"),
                    }),
                )
            }
            Tool::HistorySearch { prompt } => (
                "history_search_contents".into(),
                json!({ "query": marker(u32::from(*prompt) + 1) }),
            ),
            Tool::Remaining => ("get_context_remaining".into(), json!({})),
            Tool::ListWindows => ("history_list_windows".into(), json!({})),
        }
    }

    /// One user prompt, from `input` to `agent_settled`, in Pi's event order.
    fn prompt(&mut self, run: &Run) -> Result<(), String> {
        self.prompts += 1;
        let text = format!("please do the work {}", marker(self.prompts));
        self.trace
            .push(format!("== prompt {}", marker(self.prompts)));
        self.configure()?;
        // Pi's `input`, before the run: after `idleMinutes` the engine resets first, through Pi's
        // compaction (a job of the input's operation, pi_compaction in jobs.rs).
        self.hook(Hook::Input, Value::Null)?;
        self.streaming = true;
        self.run_continues = 0;
        // A new external run ends the idle request.
        self.idle_requested = false;
        if self.over_threshold() {
            self.compact("threshold", false, run.pre_compaction_fails)?;
        }
        self.hook(Hook::BeforeAgentStart, Value::Null)?;
        self.user(&text);
        let limit = run.turns.len() + 12;
        let mut index = 0;
        let mut aborted = false;
        let mut errored = false;
        let mut reloaded = false;
        'run: loop {
            // One agent_start … agent_end loop.
            loop {
                check!(index < limit, "the run never settles ({limit} requests)");
                if let Some((at, open)) = run.reload_at {
                    if at == index && !reloaded {
                        reloaded = true;
                        self.trace
                            .push(format!("== reload mid-run (open: {open:?})"));
                        self.restart("reload", Some(open))?;
                    }
                }
                self.deliver();
                self.hook(Hook::Context, Value::Null)?;
                // Past the script the model answers briefly, in a context as small as a fresh
                // window's (a continuation after a reset, a borrowed turn, a queued message).
                let turn = run.turns.get(index).cloned().unwrap_or(Turn {
                    reply: Reply::Text,
                    usage_permille: 50,
                    compaction_fails: false,
                    steer: false,
                });
                // Within a window the context only grows: an answer reports at least the usage
                // of the window's previous answer.
                let usage = (self.window * turn.usage_permille / 1000 + 1).max(self.window_usage());
                // The user's Esc, or Pi's abort signal that stopped the request's checks.
                if run.abort_at == Some(index) || std::mem::take(&mut self.aborting) {
                    self.assistant(json!([{"type": "text", "text": "partial"}]), "aborted", 0);
                    self.flush_held();
                    self.promised_commit = false;
                    self.hook(
                        Hook::TurnEnd,
                        json!({ "outcome": "aborted", "toolResults": 0 }),
                    )?;
                    aborted = true;
                    break;
                }
                if run.queue_at == Some(index) && self.followup.is_none() {
                    self.prompts += 1;
                    self.followup = Some(format!("and also {}", marker(self.prompts)));
                    self.trace
                        .push(format!("== queued {}", marker(self.prompts)));
                }
                index += 1;
                let mut more = false;
                let mut tool_results = 0;
                let mut overflow_retry = false;
                match &turn.reply {
                    Reply::Text => {
                        self.assistant(
                            json!([{"type": "text", "text": format!("done {index}")}]),
                            "stop",
                            usage,
                        );
                        self.overflow_armed = true;
                    }
                    Reply::Ask => {
                        self.assistant(json!([{"type": "text", "text": ASK}]), "stop", usage);
                        self.overflow_armed = true;
                    }
                    Reply::OverflowLate => {
                        let over = self.window + 1_000;
                        self.assistant(
                            json!([{"type": "text", "text": "a very long answer"}]),
                            "stop",
                            over,
                        );
                        self.late_overflow = true;
                    }
                    Reply::TransientError { retried } => {
                        self.entry(json!({"type": "message", "message": {
                            "role": "assistant", "content": [], "stopReason": "error",
                            "errorMessage": "529 overloaded_error: Overloaded",
                        }}));
                        errored = true;
                        self.retry_pending = *retried;
                    }
                    Reply::OverflowError => {
                        let failed = self.entry(json!({"type": "message", "message": {
                            "role": "assistant", "content": [], "stopReason": "error",
                            "errorMessage": "prompt is too long: 300000 tokens > 200000 maximum",
                        }}));
                        self.entry(json!({"type": "context_edit", "targetId": failed, "replacement": null}));
                        if self.overflow_armed {
                            self.overflow_armed = false;
                            overflow_retry =
                                self.compact("overflow", true, turn.compaction_fails)?;
                        } else {
                            // Pi gives up after its one attempt and calls no hook.
                            self.hook(
                                Hook::CompactFailed,
                                json!({ "reason": "overflow", "aborted": false }),
                            )?;
                        }
                        if !overflow_retry {
                            errored = true;
                        }
                    }
                    Reply::Tools(tools) => {
                        let calls: Vec<(String, Value, String)> = tools
                            .iter()
                            .map(|t| {
                                let (name, args) = self.tool_call(t);
                                (name, args, format!("call_{}", self.calls))
                            })
                            .collect();
                        let blocks: Vec<Value> = calls
                            .iter()
                            .map(|(name, args, id)| json!({"type": "toolCall", "id": id, "name": name, "arguments": args}))
                            .collect();
                        self.assistant(Value::Array(blocks), "toolUse", usage);
                        self.overflow_armed = true;
                        let mut all_terminate = true;
                        for (name, args, id) in &calls {
                            let reply = self.hook(
                                Hook::ToolCall,
                                json!({ "toolName": name, "toolCallId": id }),
                            )?;
                            let (text, is_error, terminate) = match reply.result {
                                Some(HookResult::Block { reason, terminate }) => {
                                    self.blocked.insert(id.clone());
                                    (reason, true, terminate)
                                }
                                _ => {
                                    check!(!self.blocked.contains(id), "blocked call {id} runs");
                                    check!(
                                        name == "context_handoff" || !self.reset_owed,
                                        "{name} runs while a budget reset is owed"
                                    );
                                    self.executed.insert(id.clone());
                                    if name == "bash" {
                                        // Large enough that old results are worth a clearing.
                                        let fails = args["command"] == "false";
                                        (
                                            format!(
                                                "ok {id}\n{}",
                                                "output line\n".repeat(BASH_LINES)
                                            ),
                                            fails,
                                            false,
                                        )
                                    } else {
                                        let r = self.tool(id, name, args)?;
                                        (r.text, r.is_error, r.terminate)
                                    }
                                }
                            };
                            all_terminate &= terminate;
                            self.entry(json!({"type": "message", "message": {
                                "role": "toolResult", "toolCallId": id, "toolName": name,
                                "content": [{"type": "text", "text": text}], "isError": is_error,
                            }}));
                            self.hook(
                                Hook::ToolResult,
                                json!({ "toolName": name, "toolCallId": id, "isError": is_error }),
                            )?;
                            if self.aborting {
                                // Pi's abort signal: the batch stops here.
                                break;
                            }
                        }
                        more = !all_terminate;
                        tool_results = calls.len();
                    }
                }
                if std::mem::take(&mut self.aborting) {
                    self.flush_held();
                    self.promised_commit = false;
                    self.hook(
                        Hook::TurnEnd,
                        json!({ "outcome": "aborted", "toolResults": tool_results }),
                    )?;
                    aborted = true;
                    break;
                }
                if turn.steer && !errored {
                    self.prompts += 1;
                    let steer = format!("steer: and also {}", marker(self.prompts));
                    self.trace
                        .push(format!("== steer {}", marker(self.prompts)));
                    self.user_steers.push(steer);
                }
                self.flush_held();
                let outcome = if errored { "error" } else { "completed" };
                let end = self.hook(
                    Hook::TurnEnd,
                    json!({ "outcome": outcome, "toolResults": tool_results }),
                )?;
                if std::mem::take(&mut self.promised_commit) {
                    // context_handoff told the model the context resets at the end of this turn.
                    let source = match &end.result {
                        Some(HookResult::Reset { plan }) => plan.details.source.clone(),
                        _ => None,
                    };
                    // A handoff commits as a handoff reset, or as the idle reset when it was
                    // written after the idle request (a threshold crossed meanwhile makes it a
                    // budget handoff again); never idle without that request.
                    let idle = self.idle_requested && source.as_deref() == Some("idle");
                    check!(
                        source.as_deref() == Some("handoff") || idle,
                        "context_handoff promised a reset at this turn's end; turn_end answered {:?}",
                        end.result.as_ref().map(result_name)
                    );
                }
                if let Some(HookResult::Reset { plan }) = &end.result {
                    more |= self.apply_reset("turn_end", &end, plan)?;
                }
                if let Some(HookResult::Clear { record }) = &end.result {
                    // Pi appends the draft: the record that holds the stubs.
                    self.entry(json!({"type": "custom", "customType": record.custom_type, "data": record.data}));
                }
                more |= overflow_retry || !self.steers.is_empty() || self.queued();
                if errored || !more {
                    break;
                }
                // Between turns: Pi's threshold check after the tool results.
                if self.over_threshold() {
                    self.compact("threshold", false, turn.compaction_fails)?;
                }
            }
            self.hook(Hook::AgentEnd, Value::Null)?;
            if aborted {
                break 'run;
            }
            // After agent_end: Pi's overflow or threshold check.
            if std::mem::take(&mut self.late_overflow) {
                self.compact("overflow", false, false)?;
            } else if !errored && self.over_threshold() {
                self.compact("threshold", false, false)?;
            }
            if std::mem::take(&mut self.retry_pending) {
                // Pi's auto-retry: the same request again, in a new agent loop.
                self.trace.push("== retry".into());
                errored = false;
                continue 'run;
            }
            if !self.steers.is_empty() || self.queued() {
                errored = false;
                continue 'run;
            }
            let outcome = if errored { "error" } else { "completed" };
            let settle = self.hook(Hook::BeforeSettle, json!({ "outcome": outcome }))?;
            match &settle.result {
                Some(HookResult::Continue { continuation }) => {
                    self.custom_message(
                        &continuation.custom_type,
                        &continuation.content,
                        false,
                        &continuation.details,
                    );
                    errored = false;
                    continue 'run;
                }
                Some(HookResult::Reset { plan }) => {
                    let go_on = self.apply_reset("agent_before_settle", &settle, plan)?;
                    if go_on {
                        errored = false;
                        continue 'run;
                    }
                }
                _ => {}
            }
            break;
        }
        self.flush_held();
        self.streaming = false;
        self.steers.clear();
        // An abort hands a queued message back to the editor: it never reaches the branch.
        self.followup = None;
        self.user_steers.clear();
        self.retry_pending = false;
        self.aborting = false;
        self.promised_commit = false;
        self.hook(Hook::Settled, json!({ "aborted": aborted }))?;
        Ok(())
    }

    fn act(&mut self, action: &Action) -> Result<(), String> {
        match action {
            Action::Prompt(run) => self.prompt(run)?,
            Action::Reload { open } => {
                self.trace.push(format!("== reload (open: {open:?})"));
                self.restart("reload", Some(*open))?;
            }
            Action::Resume => {
                self.trace.push("== resume".into());
                self.restart("resume", None)?;
            }
            Action::Navigate { back } => {
                let keep = self.branch.len().saturating_sub(*back);
                self.trace.push(format!(
                    "== navigate to entry {keep} of {}",
                    self.branch.len()
                ));
                let mirrored_ids: Vec<String> = self.branch[..self.mirrored]
                    .iter()
                    .map(|e| e.id.clone())
                    .collect();
                self.branch.truncate(keep);
                self.raws.truncate(keep);
                // The driver walks back from the new leaf to an entry the mirror knows (`known`)
                // and truncates after it, in the next feed; entries it does not know yet are
                // appended by the same feed.
                self.known(&mirrored_ids)?;
                if keep <= self.mirrored {
                    self.pending_truncate = Some(self.branch.last().map(|e| e.id.clone()));
                    self.mirrored = keep;
                }
                self.reset_owed = false;
                self.hook(Hook::SessionTree, Value::Null)?;
                // The policy starts over from the new branch: no request open.
                self.idle_requested = false;
                if self.enabled() && self.window_owes_retry() {
                    self.fresh_request = true;
                }
            }
            Action::Command(args) => {
                self.hook(Hook::Command, json!({ "args": args }))?;
            }
            Action::Settings(settings) => {
                self.trace.push(format!("== settings {settings:?}"));
                self.settings = *settings;
            }
            Action::Compact { fails } => {
                // Pi refuses before the hook: "Already compacted", "Nothing to compact".
                let refused = self.branch.is_empty()
                    || matches!(
                        self.branch.last().map(|e| &e.kind),
                        Some(EntryKind::Compaction { .. })
                    );
                if !refused {
                    self.trace.push("== /compact".into());
                    self.compact("manual", false, *fails)?;
                }
            }
            Action::Wait { minutes } => self.now_ms += minutes * 60_000,
        }
        self.check_state()
    }

    /// A user message stands on the branch after its latest handoff request (or there is none).
    fn user_message_since_request(&self) -> bool {
        let request = self.branch.iter().rposition(|e| {
            matches!(&e.kind, EntryKind::CustomMessage { custom_type, .. }
                if custom_type == HANDOFF_REQUEST_TYPE)
        });
        let user = self
            .branch
            .iter()
            .rposition(|e| matches!(&e.kind, EntryKind::Message(m) if m.role == "user"));
        request.is_none_or(|r| user.is_some_and(|u| u > r))
    }

    /// `/reload` or a resume: the engine that lived through the session goes, a new one is
    /// configured, opened and resynced from the branch; it answers `/relay` status and
    /// `get_context_remaining` as the old one did.
    fn restart(&mut self, reason: &str, open: Option<OpenKind>) -> Result<(), String> {
        self.sync()?;
        // Both engines read the settings as they are now (the live one would at its next input).
        self.configure()?;
        let mut old = std::mem::take(&mut self.engine);
        let lived = jobs::answers(&mut old, self);
        self.engine = old;
        self.hook(Hook::SessionShutdown, json!({ "reason": reason }))?;
        let before_start = self.branch.len();
        self.start(reason, open)?;
        // A new engine: its policy state is the branch's. Idle, no request is open. Inside a
        // run it reads the run's handoff request back from the branch, the run taken to begin at
        // the latest user message (a steer or a follow-up is one, as a prompt is): a request
        // before it ends there, as a new prompt would end it.
        if !self.streaming || self.user_message_since_request() {
            self.idle_requested = false;
            self.run_continues = 0;
        }
        if self.branch.len() == before_start {
            let mut new = std::mem::take(&mut self.engine);
            let fresh = jobs::answers(&mut new, self);
            self.engine = new;
            check!(
                lived == fresh,
                "after {reason} the engine answers {fresh:?}, the one that lived through it {lived:?}"
            );
        }
        Ok(())
    }
}

fn result_name(r: &HookResult) -> String {
    match r {
        HookResult::Cancel => "cancel".into(),
        HookResult::Block { .. } => "block".into(),
        HookResult::Reset { plan } => format!(
            "reset({}{})",
            plan.details.source.as_deref().unwrap_or("?"),
            if plan.continuation.is_some() {
                "+continuation"
            } else {
                ""
            }
        ),
        HookResult::Continue { continuation } if continuation.custom_type == CONTINUE_TASK_TYPE => {
            "task-continuation".into()
        }
        HookResult::Continue { .. } => "continue".into(),
        HookResult::Compact { .. } => "compact".into(),
        HookResult::Clear { record } => format!(
            "clear({})",
            record.data["stubs"].as_array().map_or(0, Vec::len)
        ),
    }
}

fn effect_name(e: &relay_core::engine::Effect) -> Option<String> {
    let v = serde_json::to_value(e).ok()?;
    match v["kind"].as_str()? {
        "send" => Some(format!("send({})", v["customType"].as_str()?)),
        "notify" => Some("notify".into()),
        "telemetry" => Some(format!("event({})", v["event"]["event"].as_str()?)),
        "append" => Some("append".into()),
        _ => None,
    }
}

/// Run one generated session; a failure carries the last events of the trace.
fn session(
    window: u64,
    settings: Settings,
    fates: Vec<Fate>,
    actions: &[Action],
) -> Result<(), String> {
    let mut host = Host::new(window, settings, fates)?;
    let outcome = host.check_state().and_then(|()| {
        for action in actions {
            host.act(action)?;
        }
        Ok(())
    });
    outcome.map_err(|e| {
        let tail: Vec<&str> = host
            .trace
            .iter()
            .rev()
            .take(40)
            .rev()
            .map(String::as_str)
            .collect();
        format!(
            "{e}\n--- last events (window {window}, settings {settings:?}) ---\n{}",
            tail.join("\n")
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: props::cases(DEFAULT_CASES),
        failure_persistence: props::kept(),
        max_shrink_iters: 20_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_engine_keeps_its_invariants_in_generated_pi_sessions(
        window in prop_oneof![Just(50_000u64), Just(100_000), Just(200_000)],
        settings in settings(),
        fates in jobs::fates(),
        actions in prop::collection::vec(action(), 1..30),
    ) {
        session(window, settings, fates, &actions).map_err(TestCaseError::fail)?;
    }
}
