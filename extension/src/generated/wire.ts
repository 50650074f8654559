// GENERATED from crates/relay-core/src/engine/wire.rs by the `generated_wire` test (ts-rs).
// Do not edit: change the Rust types, then run
//   UPDATE_GENERATED=1 cargo test -p relay-core generated_wire
// Inputs (Observation, Moment, ConfigSources) are rejected by the engine when they carry a
// field that is not declared here.

/**
 * One Pi hook as the engine sees it: `{moment: {…}, event: {type, …}}`.
 */
export type Observation = { moment: Moment, event: Event };

/**
 * Facts every observation carries (and, alone, every tool call). Pi computes them; the engine
 * judges them.
 */
export type Moment = {
	/**
	 * `Date.now()`: the engine has no clock of its own.
	 */
	nowMs: number,
	/**
	 * The local time zone's offset from UTC, for the timestamps the model reads.
	 */
	tzOffsetMinutes: number,
	/**
	 * Pi's own usage figure. Only tools send it (`getContextUsage()` walks the branch); hooks send
	 * `null` and the engine uses its incremental estimate.
	 */
	usage: Usage | null,
	/**
	 * `provider/modelId` of the current model.
	 */
	model: string | null,
	/**
	 * The current model's declared context window (`ctx.model.contextWindow`). The engine's
	 * door replaces it by the window whose limits apply (`Engine::limits_window`): under a
	 * router, the answered model's. `null` or 0: unknown (read through [`Moment::window`]).
	 */
	contextWindow: number | null,
	/**
	 * The current model's `api` (`ctx.model.api`). Pi's router (virtual) models have the tag
	 * [`ROUTER_API`]: for them Pi reads the window of the physical model that answered last.
	 */
	api: string | null,
	/**
	 * The declared context window of the model the engine's last output named
	 * (`Output::answeredModel`, `ctx.modelRegistry.find(provider, model)`): `null` when it named
	 * none or the registry has no such model.
	 */
	answeredWindow: number | null,
	/**
	 * `ctx.hasPendingMessages()`: the user has a prompt queued.
	 */
	hasPendingMessages: boolean,
	/**
	 * Background work the session still waits for (jobs, watches, subagents), as a host
	 * integration reports it: the extension reads the process-wide
	 * `globalThis[Symbol.for("relay.pending-work")]` function (a count; absent = 0), whatever
	 * number it returned: anything but a positive integer counts as none ([`count_of`]). With a
	 * large context, pending work at the settle point asks for an idle handoff.
	 */
	pendingWork: number,
	cwd: string,
	/**
	 * The shared guard library's `isGuardOff("context")` at this moment (`<agent dir>/lib/guards.ts`,
	 * consulted live): `off` turns the budget policy effectively off. `unavailable` when the
	 * library is absent or cannot answer.
	 */
	contextGuard: GuardState,
	/**
	 * This runtime was bound while another Relay runtime was already bound in the same process
	 * (an SDK child session): the hosting rule's answer. The budget policy then uses the
	 * `subagent` thresholds, unless `relay.role` declares the session's role.
	 */
	subagent: boolean,
};

/**
 * Pi's context usage as `ctx.getContextUsage()` reports it.
 */
export type Usage = {
	/**
	 * `null` while Pi cannot estimate it (right after a reset, before the next reply with usage).
	 */
	tokens: number | null,
	contextWindow: number,
};

/**
 * The Pi event an observation reports, tagged by `type` (the Pi hook's name).
 */
export type Event =
	| { "type": "session_start", runActive: boolean }
	| { "type": "session_tree" }
	| { "type": "session_shutdown" }
	| { "type": "input" }
	| { "type": "compact_error", attempt: number, errorMessage: string }
	| { "type": "before_agent_start" }
	| { "type": "context" }
	| { "type": "tool_call", toolName: string, toolCallId: string }
	| { "type": "tool_result", toolName: string, toolCallId: string, isError: boolean }
	| { "type": "turn_start" }
	| { "type": "message_end", message: unknown }
	| {
		"type": "turn_end",
		/**
		 * How many tool results the turn produced (blocked calls included): a turn with none is
		 * the model trying to stop; with some, the run goes on to another request.
		 */
		toolResults: number,
		/**
		 * Pi's `outcome` of the turn (`completed`, `aborted` or `error`); absent means completed.
		 */
		outcome?: string,
		/**
		 * Pi's `continue` as the hook's earlier handlers left it (another extension asked the
		 * run to go on): the engine's answer keeps it ([`HookReply::continue_run`]).
		 */
		continue: boolean,
		/**
		 * The run's abort signal fired (`ctx.signal.aborted`): a turn the user aborted while a
		 * tool ran still reports `completed`, and the engine reads it as aborted.
		 */
		aborted: boolean,
	}
	| { "type": "agent_end" }
	| {
		"type": "agent_before_settle",
		/**
		 * Pi's `outcome` of the run: `completed`, `aborted` or `error`.
		 */
		outcome: string | null,
		/**
		 * The records the `pi-jobs.liveManagers` registry lists (absent: no registry). The
		 * engine counts this session's pending ones as pending work for the idle handoff.
		 */
		jobs?: unknown[],
		/**
		 * Pi's `continue` as the hook's earlier handlers left it (another extension asked the
		 * run to go on): the engine's answer keeps it ([`HookReply::continue_run`]).
		 */
		continue: boolean,
	}
	| { "type": "agent_settled", aborted: boolean }
	| {
		"type": "session_compact_failed",
		/**
		 * `manual`, `threshold` or `overflow`.
		 */
		reason?: string,
		aborted: boolean,
		/**
		 * Pi's `errorMessage` (e.g. "Compaction failed: Nothing to compact (session too small)");
		 * absent for a cancellation. Relay classifies it (benign, transient or persistent).
		 */
		errorMessage?: string,
	}
	| {
		"type": "session_before_compact",
		/**
		 * `manual`, `threshold` or `overflow`.
		 */
		reason: string,
		willRetry: boolean,
		/**
		 * The user's `/compact <instructions>`, when given.
		 */
		customInstructions?: string,
	}
	| {
		"type": "session_before_tree",
		/**
		 * The user chose to summarize the branch being left.
		 */
		userWantsSummary: boolean,
		/**
		 * The `type` of each entry Pi would summarize (`preparation.entriesToSummarize`): its
		 * compaction entries are window resets.
		 */
		summarizing: Array<string>,
	}
	| { "type": "command", args: string };

/**
 * The raw configuration sources the adapter collects. Which value wins is decided here, the way
 * Pi merges its own settings (`settings::SettingsLayers` in relay-core).
 */
export type ConfigSources = {
	/**
	 * Pi's settings object for this runtime (`pi.getSettings()`, or the global `settings.json`
	 * on a Pi without it), unmerged with anything by the extension.
	 */
	global: unknown,
	/**
	 * Why the global settings file could not be read, when the extension read it itself (a Pi
	 * without `getSettings()`).
	 */
	globalError?: string,
	/**
	 * Where the project's settings file is (`<cwd>/.pi/settings.json`): read by the binding
	 * only when the project is trusted.
	 */
	projectFile?: string,
	/**
	 * `ctx.isProjectTrusted()`: only a trusted project's settings apply, and only a trusted
	 * project's settings file is opened at all.
	 */
	projectTrusted: boolean,
	/**
	 * Path of Pi's global settings file, to name it in warnings.
	 */
	globalFile: string | null,
	/**
	 * `PI_CONTEXT_BUDGET_CONFIG` as the process has it (`null` when unset): names the budget
	 * policy file explicitly. Which file applies is decided by [`ConfigSources::budget_file_path`].
	 */
	budgetConfigEnv: string | null,
	/**
	 * Pi's agent directory (`getAgentDir()`: `PI_CODING_AGENT_DIR`, else `~/.pi/agent`), home of
	 * the default budget policy file `context-budget.json`.
	 */
	agentDir: string | null,
	/**
	 * `PI_CONTEXT_BUDGET_STATE_DIR` as the process has it: where status and events go; unset or
	 * empty, `<agent dir>/context-budget` ([`ConfigSources::resolved_state_dir`]).
	 */
	stateDir: string | null,
	cwd: string | null,
	/**
	 * The pi-session wrapper's variables and this process's identity, for the engine to decide
	 * whether this runtime owns the wrapper ([`super::wrapper`]). `null`: not collected.
	 */
	wrapper: WrapperFacts | null,
	/**
	 * `PI_RESUME_CHECK` as the process has it (the operator's resume check command).
	 */
	resumeCheckEnv?: string,
	/**
	 * Why the guard library (`<agent dir>/lib/guards.ts`) was not loaded, when it exists and
	 * was refused (not a regular file, too large, or its import did not finish in time).
	 */
	guardsError?: string,
	/**
	 * `PI_QUESTIONS_HOME` as the process has it: the pending-questions store's home (else under
	 * the agent directory).
	 */
	questionsHome: string | null,
	/**
	 * The OS temporary directory (`os.tmpdir()`), where pi-subagents keeps its task folders.
	 */
	tmpDir: string | null,
	/**
	 * The process's user id (`process.getuid()`), `null` where there is none.
	 */
	uid: number | null,
};

/**
 * Facts about the pi-session wrapper as this process sees them (the extension collects them;
 * the engine decides ownership from them and the hosting rule).
 */
export type WrapperFacts = {
	/**
	 * `PI_RELAUNCH_MARKER`: the exact marker path the wrapper gave this launch.
	 */
	relaunchMarker: string | null,
	/**
	 * `PI_SESSION_WRAPPER`.
	 */
	wrapper: string | null,
	/**
	 * `PI_SESSION_WRAPPER_PID`, as the environment has it (a string, judged by the engine).
	 */
	wrapperPid: string | null,
	/**
	 * `PI_SESSION_LAUNCH_ID`: the launch's nonce.
	 */
	launchId: string | null,
	/**
	 * `process.pid`.
	 */
	pid: number,
	/**
	 * `process.ppid`: the wrapper, when Pi is the wrapper's own child.
	 */
	ppid: number,
	/**
	 * `getSessionFile()` (`null` in memory).
	 */
	sessionFile: string | null,
	/**
	 * `PI_RELAUNCH_KEY_FILE`: where the wrapper put this launch's key (the binding takes it
	 * from there once per process and removes the file: relay-io `relaunch::take_key`).
	 */
	relaunchKeyFile: string | null,
};

/**
 * The engine's answer to an observation (and to `configure`).
 */
export type HookReply = {
	effects: Array<Effect>,
	result?: HookResult,
	/**
	 * What a boundary hook (`turn_end`, `agent_before_settle`) returns as Pi's `continue` beside
	 * its `result` ([`Event::continue_with`]).
	 */
	continue?: boolean,
};

/**
 * What the current hook must return to Pi.
 */
export type HookResult =
	| { "kind": "cancel" }
	| { "kind": "block", reason: string, terminate: boolean }
	| { "kind": "reset", plan: ResetPlan }
	| { "kind": "continue", continuation: Continuation }
	| { "kind": "clear", record: Marker }
	| { "kind": "compact", attempt: number };

/**
 * Something the adapter must do through Pi's API, in order.
 */
export type Effect =
	| {
		"kind": "send",
		customType: string,
		content: string,
		display: boolean,
		triggerTurn: boolean,
		deliverAs?: DeliverAs,
		/**
		 * `details` of the persisted custom message.
		 */
		details?: unknown,
	}
	| { "kind": "notify", text: string, level: NotifyLevel }
	| { "kind": "status", text: string | null }
	| { "kind": "log", text: string }
	| { "kind": "shutdown" }
	| { "kind": "writeRelaunchMarker", path: string, marker: unknown }
	| { "kind": "removeRelaunchMarker", path: string }
	| { "kind": "telemetry", event: unknown }
	| { "kind": "writeStatus", status: unknown }
	| { "kind": "activeTools", withhold: Array<string>, restore: Array<string> };

/**
 * `ctx.ui.notify` level.
 */
export type NotifyLevel = "info" | "warning";

/**
 * `deliverAs` of `pi.sendMessage`.
 */
export type DeliverAs = "steer";

/**
 * A reset as the adapter installs it: marker entry, compaction entry, optional hidden continuation.
 * On the wire only the marker: the compaction and the continuation go as the output's `drafts`
 * ([`super::door::Draft::of`]), so the next boot block crosses once.
 */
export type ResetPlan = {
	/**
	 * Appended first; its entry id is the compaction's `firstKeptEntryId` (retains nothing old).
	 */
	marker: Marker,
};

/**
 * A `custom` entry for `pi.appendEntry(customType, data)`; `data` is one of the typed records
 * of [`crate::records`].
 */
export type Marker = { customType: string, data: unknown };

/**
 * A hidden `custom_message` boundary draft (`display: false`).
 */
export type Continuation = {
	customType: string,
	content: string,
	/**
	 * The message's `details` (`{v}`, [`crate::records::MessageDetails`]).
	 */
	details: unknown,
};

/**
 * A cleared tool result's stub in a request: the `toolResult` message answering `call` (the
 * `nth` such message of the request, counted from 0) gets `[{type: "text", text}]` as its content.
 */
export type ToolStub = { call: string, nth: number, text: string };

/**
 * A tool's answer: the text the model reads, plus what the adapter must persist first.
 */
export type ToolReply = {
	text: string,
	isError: boolean,
	/**
	 * End the model's turn after this tool batch (Pi's `terminate`).
	 */
	terminate?: boolean,
	/**
	 * An entry to append before the result returns (a note operation, a handoff record).
	 */
	persist?: Marker,
	effects?: Array<Effect>,
};

/**
 * One tool as the extension registers it: name, label, description and the JSON Schema of its
 * parameters (derived from the argument structs in [`crate::args`], the one source).
 */
export type ToolSpec = {
	name: string,
	label: string,
	description: string,
	parameters: object,
	/**
	 * The tool asks for the handoff's git metadata (a `git` job) before it answers.
	 */
	collectsGit: boolean,
	/**
	 * The tool's moment carries Pi's own usage (`getContextUsage()`, which walks the branch):
	 * only the tools that report the exact figure. Every other tool is judged by the engine's
	 * incremental estimate.
	 */
	usesPiUsage: boolean,
	/**
	 * The tool reads the texts of earlier windows (the history tools): called while a large
	 * session's earlier windows still load (`historyComplete()` false), it waits for them.
	 */
	needsHistory: boolean,
};

/**
 * A command the host registers: its name, description and argument completions.
 */
export type CommandSpec = {
	name: string,
	description: string,
	/**
	 * The arguments offered for completion (those starting with what the user typed).
	 */
	completions: Array<string>,
};

/**
 * What the extension knows of the operator's resume check: facts only, never a decision. The
 * engine picks the command (`env` when non-empty, else `resumeChecks[sessionName]`) and whether
 * it runs at all.
 */
export type ResumeFacts = {
	/**
	 * `PI_RESUME_CHECK` as the process has it (`null` when unset).
	 */
	env: string | null,
	/**
	 * `ctx.sessionManager.getSessionName()` (`null` when the session has no name).
	 */
	sessionName: string | null,
};

/**
 * A message the `context` hook inserts into the request it is building, at `index` of the
 * visible messages (`{role: "custom", customType, content, display: false, timestamp}`). The
 * same message at the same place in every request of the window keeps the prompt cache.
 */
export type ContextMessage = { index: number, customType: string, content: string, timestamp: number };

/**
 * The answer of the shared guard library for the `context` guard.
 */
export type GuardState = "unavailable" | "on" | "off";

/**
 * Everything a handoff's integration sections are made from.
 */
export type IntegrationFacts = {
	/**
	 * The records the `pi-jobs.liveManagers` managers list, copied as JSON; `null` when the
	 * process has no such registry (or it could not be read).
	 */
	jobs: unknown[] | null,
	/**
	 * The `pi-subagents:manager` records (`listAgents()`, else `getRecord` of the task
	 * directory's ids); `null` when neither is available.
	 */
	subagents: unknown[] | null,
	/**
	 * What relay-io read from disk; `null` when it was not collected.
	 */
	stores: StoreContents | null,
};

/**
 * What relay-io read from the stores on disk (`null` = the store is absent or unreadable).
 */
export type StoreContents = {
	/**
	 * The latest revision of each of the newest item directories, newest first.
	 */
	questions: unknown[] | null,
	/**
	 * Question items that could not be read or parsed.
	 */
	questionsCorrupt: number,
	/**
	 * The claim registry's lines, in file order.
	 */
	claims: unknown[] | null,
	/**
	 * Registry lines that are not JSON objects.
	 */
	claimsCorrupt: number,
	/**
	 * Subagent ids found as `<id>.output` in this session's task directory.
	 */
	taskIds: Array<string> | null,
};

/**
 * What the extension knows of the stores' places (facts only).
 */
export type StoreFacts = {
	/**
	 * Pi's agent directory (`getAgentDir()`).
	 */
	agentDir: string | null,
	/**
	 * `PI_QUESTIONS_HOME` as the process has it.
	 */
	questionsHome: string | null,
	/**
	 * The OS temporary directory (`os.tmpdir()`).
	 */
	tmpDir: string | null,
	/**
	 * The process's user id (`process.getuid()`), `null` where there is none.
	 */
	uid: number | null,
	sessionId: string,
	cwd: string,
};

/**
 * Everything the host hands the engine, tagged by `type`.
 */
export type Input =
	| {
		"type": "describe",
		/**
		 * The host package's `VERSION`.
		 */
		piVersion: string,
		/**
		 * The host package's `CONFIG_DIR_NAME` (Pi: `.pi`; the oh-my-pi fork: `.omp`).
		 */
		configDir: string,
		/**
		 * The JavaScript runtime and its version (`node 22.19.0`, `bun 1.4.5`).
		 */
		runtime: string,
		/**
		 * `PI_RELAUNCH_KEY_FILE`: the host takes the launch's key from it (once per process,
		 * the file removed); the key reaches the engine in [`Input::Configure`].
		 */
		relaunchKeyFile?: string,
	}
	| { "type": "guards", agentDir: string }
	| { "type": "configure", sources: ConfigSources }
	| {
		"type": "open",
		sessionId: string,
		file: string | null,
		/**
		 * The file's size in bytes as the host found it (`null`: no regular file there).
		 */
		size: number | null,
		leaf: string | null,
		/**
		 * A large file may load on the pool (its current window first); false: at once (a
		 * reload after a failure).
		 */
		background: boolean,
		/**
		 * The tip of this file's read ahead ([`Input::Prefetch`]) when Pi's leaf descends from
		 * it (the host walked back from the leaf along Pi's branch and met it: Pi appended entries at start-up,
		 * such as a thinking level): what was read is installed, and the entries after it come
		 * with the next feed as usual.
		 */
		readAhead?: string,
	}
	| {
		"type": "prefetch",
		file: string,
		/**
		 * The file's size in bytes as the host found it.
		 */
		size: number,
	}
	| { "type": "close" }
	| { "type": "history" }
	| { "type": "resync", sessionId: string, entries: unknown[] }
	| { "type": "known", ids: Array<string> }
	| { "type": "hook", observation: Observation }
	| { "type": "tool", callId: string, name: string, args: unknown, moment: Moment }
	| { "type": "prepare", tool: string, args: unknown }
	| { "type": "schema_refused", tool: string, message: string }
	| { "type": "done", op: number, results: Array<JobResult>, moment: Moment }
	| { "type": "failed", hook: string, message: string };

/**
 * Everything the engine answers.
 */
export type Output = {
	/**
	 * Effects to execute in order.
	 */
	effects: Array<Effect>,
	/**
	 * What the hook returns to Pi.
	 */
	result?: HookResult,
	/**
	 * What a boundary hook returns as Pi's `continue` beside `result`.
	 */
	continue?: boolean,
	/**
	 * A tool's answer (the tool is done).
	 */
	reply?: ToolReply,
	/**
	 * Custom messages to insert into the request of a `context` hook, each at its index.
	 */
	messages: Array<ContextMessage>,
	/**
	 * The stubs that replace the current window's cleared tool results in the requests of a
	 * `context` hook (each the result answering its call; empty: none), sent when they differ
	 * from the set the host last received, which holds while this is absent.
	 */
	stubs?: Array<ToolStub>,
	/**
	 * Entries to append to the session (`pi.appendEntry`), in order, before anything else.
	 */
	appends: Array<Marker>,
	/**
	 * The entries a `clear`, `continue` or `reset` result adds to Pi's boundary drafts, as Pi's
	 * drafts (a reset's compaction keeps from its marker: see [`Draft::Compaction`]).
	 */
	drafts: Array<Draft>,
	/**
	 * Work to run off Pi's event loop.
	 */
	jobs: Array<Job>,
	/**
	 * The operation that waits for `Done` (its jobs' results, or only its appends).
	 */
	op?: number,
	/**
	 * The newest entry the mirror holds.
	 */
	tip: string | null,
	/**
	 * The physical model whose window the engine needs in the next inputs' `answeredWindow`:
	 * the branch's latest successful answer's (`null`: none). Only read under a router model.
	 */
	answeredModel: ModelRef | null,
	/**
	 * The host must send the whole branch ([`Input::Resync`]) before anything else.
	 */
	needsBranch: boolean,
	/**
	 * The mirror holds every window's texts (false while a large session's earlier windows are
	 * skimmed: the history tools and a navigation wait for the whole history).
	 */
	historyComplete: boolean,
	/**
	 * The boundary hooks the engine needs until an output says otherwise: the host subscribes to
	 * Pi's `turn_end` / `agent_before_settle` only while their flag is set (Pi builds a preview
	 * of the whole branch for every boundary that has a subscriber).
	 */
	boundary: BoundaryHooks,
	/**
	 * The whole history's load, to run in the background: the hook does not wait for it, only
	 * what reads earlier windows does; its result comes back as `Done` with the job's id as `op`.
	 */
	historyLoad?: Job,
	/**
	 * The answer of a query input (`describe`, `prepare`, `schema_refused`, `known`, a read
	 * ahead's `done`).
	 */
	value?: Answer,
};

/**
 * Which of Pi's boundary hooks the engine has something to decide at, as its state stands
 * (`engine/boundary.rs`). Both are needed unless the engine knows the window is quiet.
 */
export type BoundaryHooks = {
	/**
	 * `turn_end`.
	 */
	turnEnd: boolean,
	/**
	 * `agent_before_settle`.
	 */
	settle: boolean,
};

/**
 * A physical model by Pi's names: `provider` and model id (`ctx.modelRegistry.find(provider,
 * model)`).
 */
export type ModelRef = { provider: string, model: string };

/**
 * One entry of Pi's boundary drafts (`SessionBoundaryDraft`), as the engine adds it.
 */
export type Draft =
	| { "type": "custom", customType: string, data: unknown }
	| {
		"type": "custom_message",
		customType: string,
		content: string,
		display: boolean,
		details: unknown,
	}
	| { "type": "compaction", summary: string, details: unknown };

/**
 * One piece of work for the host.
 */
export type Job = {
	id: number,
	/**
	 * When the host stops waiting (milliseconds since the epoch): the job then failed.
	 */
	deadlineMs: number,
	work: Work,
};

/**
 * What a job does. `facts` is the host's own (in-process registries, Pi's session name); every
 * other kind runs in the addon on the libuv pool, reads only regular files and never blocks
 * Pi's event loop.
 */
export type Work =
	| { "kind": "git", cwd: string, files?: Array<string> }
	| {
		"kind": "stores",
		questionsHome: string | null,
		claimsFile: string | null,
		taskDir: string | null,
	}
	| { "kind": "facts", sessionName: boolean, registries: boolean, taskIds?: Array<string> }
	| { "kind": "resumeCheck", command: string, source: string, cwd: string }
	| { "kind": "staleCheck", record: unknown }
	| { "kind": "handoffNumber", root: string, sessionId: string }
	| {
		"kind": "writeHandoff",
		root: string,
		sessionId: string,
		sequence: number,
		markdown: string,
		sidecar: unknown,
	}
	| {
		"kind": "load",
		file: string,
		/**
		 * The session's id (`null`: read from the file's header).
		 */
		sessionId: string | null,
		leaf: string | null,
		pass: LoadPass,
	}
	| { "kind": "compact" }
	| { "kind": "vet", path: string, cap: number };

/**
 * A job's result, as the host hands it back.
 */
export type JobResult = { id: number, outcome: JobOutcome };

/**
 * How a job ended.
 */
export type JobOutcome =
	| { "kind": "done", value: unknown, atMs: number }
	| { "kind": "failed", error: string, exists: boolean }
	| { "kind": "aborted" };

/**
 * What `describe` answers.
 */
export type Description = {
	/**
	 * Why this Pi cannot run Relay (`null`: it can).
	 */
	refusal: string | null,
	tools: Array<ToolSpec>,
	/**
	 * The custom message types Pi's TUI shows with Relay's one line.
	 */
	renderedTypes: Array<string>,
	/**
	 * The `api` of Pi's router (virtual) models ([`crate::engine::wire::ROUTER_API`]): only
	 * under one does the host look up `answeredWindow` (a registry lookup it spares every other
	 * input).
	 */
	routerApi: string,
	/**
	 * The `/relay` command.
	 */
	command: CommandSpec,
	/**
	 * The Pi hooks the host translates alike (see [`HookSpec`]); the session's start and end,
	 * `input` and the command are the host's own.
	 */
	hooks: Array<HookSpec>,
	/**
	 * What the host answers for a hook or tool when the engine itself cannot (the last resort
	 * after a failure the engine could not answer), by the hook's or tool's name; `""`: any
	 * other. A compaction hook is cancelled (Pi's summarizer never runs behind Relay's back),
	 * a tool fails, and the engine waits for the whole branch.
	 */
	lastResort: { [key in string]: Output },
};

/**
 * One Pi hook the host subscribes to and translates: the event's fields the engine reads,
 * copied as Pi names them (a field without a value is left out), what the hook waits for, and
 * how the engine's output becomes the hook's return value.
 */
export type HookSpec = {
	/**
	 * Pi's event name, which is also the engine's event type.
	 */
	name: string,
	/**
	 * The event's fields the engine reads as they are (the host adds the facts it computes).
	 */
	fields: Array<string>,
	/**
	 * What the hook waits for before the engine sees it.
	 */
	waits: HookWaits,
	/**
	 * How the engine's output returns to Pi.
	 */
	answer: HookAnswer,
	/**
	 * Served under the run's abort signal (Esc ends the wait for its jobs).
	 */
	abortable: boolean,
	/**
	 * Subscribed only while the engine's outputs say it needs it (`boundary`).
	 */
	boundary: boolean,
};

/**
 * What a hook waits for before it is served.
 */
export type HookWaits = "window" | "history";

/**
 * How the engine's output becomes the hook's return value.
 */
export type HookAnswer = "observe" | "cancel" | "block" | "request" | "boundary" | "compaction";

/**
 * What a `facts` job gives back (each field only when asked for).
 */
export type HostFacts = { sessionName?: string, jobs?: unknown[] | null, subagents?: unknown[] | null };

/**
 * The answer of a query input.
 */
export type Answer =
	| Description
	| { args: unknown }
	| { error?: string }
	| number
	| null
	| { tip: string | null }
	| { file: string | null, error: string | null };

/**
 * Which part of a session a load job reads.
 */
export type LoadPass = "current" | "rest" | "all";

/**
 * What Pi appended since the engine's tip, as the host walks it from Pi's leaf: `truncate` drops
 * every entry after `after` first (a navigation; `after: null` drops all), `append` are the new
 * entries, root first. Each entry is parsed on its own, so one that does not parse keeps its
 * place as an unknown entry with a warning.
 */
export type Feed = { truncate?: boolean, after?: string, append?: unknown[] };
