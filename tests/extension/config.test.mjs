// Configuration on the real Pi agent loop (SDK AgentSession or AgentSessionRuntime, Pi's real
// SettingsManager, the faux provider): partial threshold overrides, small windows, Pi's per-model
// compaction reserve and a model switch, the budget file (named, default, re-read on each input),
// `~` in enforceCwds, two sessions in one process with declared roles, and resumed/forked sessions.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { createAgentSession, DefaultResourceLoader, SessionManager, SettingsManager } from "@earendil-works/pi-coding-agent";
import { captureStderr, fauxRuntime, readJsonl, scriptedModel, startRuntime, textOf, tool } from "./harness.mjs";

/**
 * Run `body` with these environment variables (`undefined` unsets one) and restore them after.
 * Relay reads PI_CODING_AGENT_DIR (through Pi's getAgentDir()), PI_CONTEXT_BUDGET_CONFIG and
 * PI_CONTEXT_BUDGET_STATE_DIR.
 */
async function withEnv(vars, body) {
	const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
	for (const [k, v] of Object.entries(vars)) {
		if (v === undefined) delete process.env[k];
		else process.env[k] = v;
	}
	try {
		return await body();
	} finally {
		for (const [k, v] of Object.entries(saved)) {
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
		}
	}
}

/** A test folder: `agent/` (Pi's agent dir), `work/` (the cwd), `state/` (Relay's status and events). */
function folder() {
	const root = mkdtempSync(join(tmpdir(), "relay-config-"));
	const dirs = { root, agentDir: join(root, "agent"), cwd: join(root, "work"), stateDir: join(root, "state"), sessions: join(root, "sessions") };
	mkdirSync(dirs.agentDir, { recursive: true });
	mkdirSync(dirs.cwd, { recursive: true });
	return dirs;
}

/** The environment of a test folder: its agent dir and state dir, no budget file named. */
const envOf = (dirs, extra = {}) => ({
	PI_CODING_AGENT_DIR: dirs.agentDir,
	PI_CONTEXT_BUDGET_STATE_DIR: dirs.stateDir,
	PI_CONTEXT_BUDGET_CONFIG: undefined,
	...extra,
});

/** The faux model and script of one session (harness.mjs's scriptedModel), a 200k window unless `models` says otherwise. */
const scripted = (script = {}) => scriptedModel({ contextWindow: 200_000, ...script });

/**
 * One SDK session. `settings` (an object) gives Pi an in-memory SettingsManager; without it Pi's
 * SettingsManager reads `<agentDir>/settings.json` and `<cwd>/.pi/settings.json` (trusted or not).
 */
async function session(dirs, { settings, trusted = false, persist = false, ...script } = {}) {
	const s = scripted(script);
	const modelRuntime = await fauxRuntime(dirs.agentDir, s.faux);
	const settingsManager = settings
		? SettingsManager.inMemory({ retry: { enabled: false }, ...settings })
		: SettingsManager.create(dirs.cwd, dirs.agentDir, { projectTrusted: trusted });
	const resourceLoader = new DefaultResourceLoader({ cwd: dirs.cwd, agentDir: dirs.agentDir, settingsManager, ...s.loaderOptions });
	await resourceLoader.reload();
	const sessionManager = persist ? SessionManager.create(dirs.cwd, dirs.sessions) : SessionManager.inMemory(dirs.cwd);
	const { session, extensionsResult } = await createAgentSession({
		cwd: dirs.cwd,
		agentDir: dirs.agentDir,
		model: modelRuntime.getModel("faux", "faux-1"),
		thinkingLevel: "off",
		modelRuntime,
		resourceLoader,
		sessionManager,
		settingsManager,
		noTools: "builtin",
	});
	assert.deepEqual(extensionsResult.errors, []);
	const errors = [];
	await session.bindExtensions({ onError: (e) => errors.push(e) });
	let ended = false;
	return {
		...s,
		session,
		modelRuntime,
		errors,
		sessionId: () => session.sessionManager.getSessionId(),
		/** Pi's shutdown (releases the hosting marker), then dispose; a second call does nothing. */
		async end() {
			if (ended) return;
			ended = true;
			await session.extensionRunner.emit({ type: "session_shutdown", reason: "quit" });
			session.dispose();
		},
	};
}

/** Relay's status file of a session (written at session start and whenever a run settles). */
function status(dirs, sessionId) {
	return JSON.parse(readFileSync(join(dirs.stateDir, "status", `${sessionId}.json`), "utf8"));
}

function events(dirs) {
	const file = join(dirs.stateDir, "events.jsonl");
	return existsSync(file) ? readJsonl(file) : [];
}

/** The results of one tool, in order, from the session's branch. */
function results(t, name) {
	return t.session.sessionManager
		.getBranch()
		.filter((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === name)
		.map((e) => ({ text: textOf(e.message.content), isError: e.message.isError }));
}

const bands = (s) => [s.thresholds.soft, s.thresholds.handoff, s.thresholds.hard];

test("the settings reference's per-model example (docs/settings.md) (hard 150000 only) gives three bands, and the real loop crosses soft and handoff at the derived values", async () => {
	const dirs = folder();
	// docs/settings.md's example, verbatim but for the model key.
	writeFileSync(
		join(dirs.agentDir, "context-budget.json"),
		JSON.stringify({
			mode: "enforce",
			main: { soft: 300000, handoff: 400000, hard: 600000, minProgress: 50000 },
			subagent: { soft: 150000, handoff: 200000, hard: 300000, minProgress: 25000 },
			models: { "faux/faux-1": { main: { hard: 150000 } } },
			maxHandoffsPerSession: 10,
			loop: { maxHandoffsWithoutProgress: 2, withinTurns: 8 },
		}),
	);
	await withEnv(envOf(dirs), async () => {
		const note = (n) => tool("notes_write_file", { path: `n${n}.md`, content: "x" });
		let t;
		const stderr = await captureStderr(async () => {
			t = await session(dirs, {
				settings: { compaction: { enabled: false } },
				steps: [
					{ text: "Started.", tokens: 5_000 },
					{ ...note(1), tokens: 88_000 },
					{ ...note(2), tokens: 90_000 },
					{ ...note(3), tokens: 111_000 },
					{ ...note(4), tokens: 112_500 },
					{ text: "Stopping here.", tokens: 112_600 },
					{ text: "Understood.", tokens: 112_700 },
				],
			});
			await t.session.prompt("Start.");
			await t.session.prompt("Work.");
		});
		try {
			assert.deepEqual(stderr.filter((l) => l.startsWith("relay:") && !l.includes("Context budget")), [], "no configuration warning");
			const s = status(dirs, t.sessionId());
			assert.deepEqual(s.thresholds, { soft: 90_000, handoff: 112_500, hard: 150_000, minProgress: 50_000 });
			assert.equal(s.effectiveMode, "enforce");
			const crossings = events(dirs)
				.filter((e) => e.event === "threshold_crossed")
				.map((e) => [e.threshold, e.tokens, e.limit]);
			assert.deepEqual(crossings, [
				["soft", 90_000, 90_000],
				["handoff", 112_500, 112_500],
			]);
			assert.deepEqual(
				results(t, "notes_write_file").map((r) => r.isError),
				[false, false, false, true],
				"only the call at the derived handoff threshold is blocked",
			);
			assert.match(results(t, "notes_write_file")[3].text, /context_handoff/);
		} finally {
			await t.end();
		}
	});
});

test("a 16k window: the first requests get no reminder, the one after usage crosses the scaled threshold does", async () => {
	const dirs = folder();
	await withEnv(envOf(dirs), async () => {
		const note = (n) => tool("notes_write_file", { path: `n${n}.md`, content: "x" });
		// Reserve 4,096 + margin 24,576 is more than the window; the margin counts at most a quarter
		// of it: the reminder fires at 4,096 + 4,096 = 8,192 tokens left. Pi compacts only above
		// 16,384 - 4,096 = 12,288 tokens.
		const t = await session(dirs, {
			settings: { compaction: { reserveTokens: 4_096 } },
			models: [{ id: "faux-1", contextWindow: 16_384 }],
			steps: [{ text: "Hello.", tokens: 2_000 }, { ...note(1), tokens: 7_000 }, { ...note(2), tokens: 9_000 }, { ...note(3), tokens: 9_500 }, "Done."],
		});
		try {
			await t.session.prompt("One.");
			await t.session.prompt("Two.");
			const reminded = t.requests.map((r) => r.some((m) => textOf(m.content).includes("This context window is running low")));
			// Queued at the end of the turn that used 9,000 tokens, so the very next request reads it.
			assert.deepEqual(reminded, [false, false, false, true, true], "the reminder follows the turn that used 9,000 tokens");
			const reminders = t.session.sessionManager.getBranch().filter((e) => e.type === "custom_message" && e.customType === "relay/reminder");
			assert.equal(reminders.length, 1);
			assert.match(textOf(reminders[0].content), /about 3,\d{3} tokens remain/);
		} finally {
			await t.end();
		}
	});
});

test("Pi's per-model reserve (compaction.modelOverrides) sets get_context_remaining, /relay and the derived thresholds, and follows a model switch", async () => {
	const dirs = folder();
	writeFileSync(
		join(dirs.agentDir, "settings.json"),
		JSON.stringify({
			retry: { enabled: false },
			compaction: {
				reserveTokens: 10_000,
				modelOverrides: {
					"faux/faux-1": { reserveTokens: 30_000 },
					"faux/faux-2": { reserveTokens: 50_000 },
					"faux/faux-3": { reserveTokens: -1 },
				},
			},
		}),
	);
	await withEnv(envOf(dirs), async () => {
		let t;
		const stderr = await captureStderr(async () => {
			t = await session(dirs, {
				models: [
					{ id: "faux-1", contextWindow: 200_000 },
					{ id: "faux-2", contextWindow: 200_000 },
				],
				steps: [{ ...tool("get_context_remaining"), tokens: 100_000 }, { text: "Noted.", tokens: 100_100 }],
			});
			await t.session.prompt("How much is left?");
			await t.session.prompt("/relay");
		});
		try {
			assert.deepEqual(
				results(t, "get_context_remaining").map((r) => JSON.parse(r.text)),
				[{ remaining_tokens: 70_000 }],
				"200,000 - 100,000 - faux-1's reserve 30,000",
			);
			assert.equal(status(dirs, t.sessionId()).model, "faux/faux-1");
			// usable = 200,000 - 30,000; hard = 90 % of it.
			assert.deepEqual(bands(status(dirs, t.sessionId())), [91_800, 114_750, 153_000]);
			assert.ok(stderr.some((l) => l.includes("before the 30,000-token reserve")), stderr.join("\n"));
			const warnings = stderr.filter((l) => l.includes("modelOverrides"));
			assert.deepEqual(warnings, [
				`relay: global settings (${join(dirs.agentDir, "settings.json")}): compaction.modelOverrides["faux/faux-3"].reserveTokens: expected a non-negative whole number, got -1; using compaction.reserveTokens (10000) for faux/faux-3`,
			]);

			await t.session.setModel(t.modelRuntime.getModel("faux", "faux-2"));
			t.script({ ...tool("get_context_remaining"), tokens: 100_000 }, { text: "Noted again.", tokens: 100_100 });
			const after = await captureStderr(async () => {
				await t.session.prompt("And now?");
				await t.session.prompt("/relay");
			});
			assert.deepEqual(
				results(t, "get_context_remaining").map((r) => JSON.parse(r.text)),
				[{ remaining_tokens: 70_000 }, { remaining_tokens: 50_000 }],
				"faux-2's reserve is 50,000",
			);
			assert.equal(status(dirs, t.sessionId()).model, "faux/faux-2");
			assert.deepEqual(bands(status(dirs, t.sessionId())), [81_000, 101_250, 135_000]);
			assert.ok(after.some((l) => l.includes("before the 50,000-token reserve")), after.join("\n"));
		} finally {
			await t.end();
		}
	});
});

test("PI_CONTEXT_BUDGET_CONFIG naming a missing file: the defaults and a warning naming it, not relay.budget; a missing default file is silent", async () => {
	const settings = { relay: { budget: { mode: "enforce", main: { hard: 100_000 } } } };
	const dirs = folder();
	const missing = join(dirs.root, "no-such-budget.json");
	await withEnv(envOf(dirs, { PI_CONTEXT_BUDGET_CONFIG: missing }), async () => {
		let t;
		const stderr = await captureStderr(async () => {
			t = await session(dirs, { settings, steps: ["Hi."] });
			await t.session.prompt("Hello.");
			await t.session.prompt("Again.");
		});
		try {
			assert.deepEqual(stderr.filter((l) => l.includes(missing)), [
				`relay: ${missing}: PI_CONTEXT_BUDGET_CONFIG names this file, which does not exist; using the default budget configuration (observe mode), not relay.budget`,
			]);
			const s = status(dirs, t.sessionId());
			assert.equal(s.configuredMode, "observe");
			assert.notEqual(s.thresholds.hard, 100_000, "relay.budget does not apply");
		} finally {
			await t.end();
		}
	});
	const other = folder();
	await withEnv(envOf(other), async () => {
		let t;
		const stderr = await captureStderr(async () => {
			t = await session(other, { settings, steps: ["Hi."] });
			await t.session.prompt("Hello.");
		});
		try {
			assert.deepEqual(stderr.filter((l) => l.startsWith("relay:")), [], "no warning for the absent default file");
			const s = status(other, t.sessionId());
			assert.equal(s.configuredMode, "enforce");
			assert.equal(s.thresholds.hard, 100_000);
		} finally {
			await t.end();
		}
	});
});

test("the default budget file is <PI_CODING_AGENT_DIR>/context-budget.json, re-read on every input", async () => {
	const dirs = folder();
	const file = join(dirs.agentDir, "context-budget.json");
	writeFileSync(file, JSON.stringify({ mode: "observe", main: { hard: 100_000 } }));
	await withEnv(envOf(dirs), async () => {
		const note = (n) => tool("notes_write_file", { path: `n${n}.md`, content: "x" });
		const t = await session(dirs, {
			// The file wins over the settings' relay.budget.
			settings: { compaction: { enabled: false }, relay: { budget: { mode: "off" } } },
			steps: [{ text: "Warm.", tokens: 2_000 }, { ...note(1), tokens: 40_000 }, { text: "One done.", tokens: 40_100 }],
		});
		try {
			await t.session.prompt("Warm up.");
			await t.session.prompt("Write one.");
			let s = status(dirs, t.sessionId());
			assert.equal(s.configuredMode, "observe");
			assert.deepEqual(bands(s), [60_000, 75_000, 100_000]);
			assert.equal(results(t, "notes_write_file")[0].isError, false);

			// Between two prompts: the next input reads the changed file.
			writeFileSync(file, JSON.stringify({ mode: "enforce", main: { hard: 50_000 } }));
			t.script({ ...note(2), tokens: 41_000 }, { text: "Blocked, stopping.", tokens: 41_100 }, { text: "Understood.", tokens: 41_200 });
			await t.session.prompt("Write two.");
			s = status(dirs, t.sessionId());
			assert.equal(s.configuredMode, "enforce");
			assert.equal(s.effectiveMode, "enforce");
			assert.deepEqual(bands(s), [30_000, 37_500, 50_000]);
			const second = results(t, "notes_write_file")[1];
			assert.equal(second.isError, true, "41,000 tokens is past the new handoff threshold 37,500");
			assert.match(second.text, /context_handoff/);
		} finally {
			await t.end();
		}
	});
});

test("`~` in enforceCwds is a warning naming the file, key path and index, and is never matched", async () => {
	const dirs = folder();
	const file = join(dirs.agentDir, "context-budget.json");
	// HOME is the folder holding the cwd: an expanded `~/work` would be exactly the cwd.
	writeFileSync(file, JSON.stringify({ mode: "enforce", enforceCwds: ["~/work"] }));
	await withEnv(envOf(dirs, { HOME: dirs.root }), async () => {
		let t;
		const stderr = await captureStderr(async () => {
			t = await session(dirs, { steps: ["Hi."], settings: {} });
			await t.session.prompt("Hello.");
		});
		try {
			assert.deepEqual(stderr.filter((l) => l.includes("enforceCwds")), [
				`relay: ${file}: enforceCwds[0]: must be an absolute path or glob starting with '/', got "~/work" (no tilde expansion)`,
			]);
			const s = status(dirs, t.sessionId());
			assert.equal(s.configuredMode, "enforce");
			assert.equal(s.effectiveMode, "observe");
		} finally {
			await t.end();
		}
	});
});

test("two sessions in one process: declared roles win over the hosting rule, each uses its own settings, and ending one changes nothing in the other", async () => {
	const dirs = folder();
	const budget = (mode) => ({ mode, main: { hard: 90_000 }, subagent: { hard: 30_000 } });
	await withEnv(envOf(dirs), async () => {
		// The first session bound would be main by the hosting rule; it declares itself a subagent.
		const a = await session(dirs, { settings: { relay: { role: "subagent", budget: budget("enforce") } }, steps: ["A."] });
		const b = await session(dirs, { settings: { relay: { role: "main", budget: budget("observe") } }, steps: ["B.", "B again."] });
		try {
			await a.session.prompt("a");
			await b.session.prompt("b");
			const sa = status(dirs, a.sessionId());
			const sb = status(dirs, b.sessionId());
			assert.deepEqual([sa.role, sa.configuredMode, sa.thresholds.hard], ["subagent", "enforce", 30_000]);
			assert.deepEqual([sb.role, sb.configuredMode, sb.thresholds.hard], ["main", "observe", 90_000]);
			await a.end();
			await b.session.prompt("b again");
			const later = status(dirs, b.sessionId());
			assert.ok(later.updatedAt > sb.updatedAt, "the status was written again");
			assert.deepEqual([later.role, later.configuredMode, later.thresholds.hard], ["main", "observe", 90_000]);
		} finally {
			await a.end();
			await b.end();
		}

		// Without a declaration the hosting rule decides: the second session bound is a subagent,
		// and stays one when the first ends.
		const c = await session(dirs, { settings: { relay: { budget: budget("observe") } }, steps: ["C."] });
		const d = await session(dirs, { settings: { relay: { budget: budget("enforce") } }, steps: ["D.", "D again."] });
		try {
			await c.session.prompt("c");
			await d.session.prompt("d");
			assert.deepEqual([status(dirs, c.sessionId()).role, status(dirs, c.sessionId()).thresholds.hard], ["main", 90_000]);
			const sd = status(dirs, d.sessionId());
			assert.deepEqual([sd.role, sd.configuredMode, sd.thresholds.hard], ["subagent", "enforce", 30_000]);
			await c.end();
			await d.session.prompt("d again");
			const later = status(dirs, d.sessionId());
			assert.ok(later.updatedAt > sd.updatedAt);
			assert.deepEqual([later.role, later.configuredMode, later.thresholds.hard], ["subagent", "enforce", 30_000]);
		} finally {
			await c.end();
			await d.end();
		}
	});
});

test("a resumed, a forked and a new session of an AgentSessionRuntime stay main (the hosting marker is released at shutdown)", async () => {
	const dirs = folder();
	writeFileSync(join(dirs.agentDir, "settings.json"), JSON.stringify({ retry: { enabled: false }, relay: { budget: { main: { hard: 90_000 }, subagent: { hard: 30_000 } } } }));
	await withEnv(envOf(dirs), async () => {
		const s = scripted({ steps: ["First answer.", "After resume.", "After fork.", "After new."] });
		const modelRuntime = await fauxRuntime(dirs.agentDir, s.faux);
		const errors = [];
		const runtime = await startRuntime({ cwd: dirs.cwd, agentDir: dirs.agentDir, sessionDir: dirs.sessions, modelRuntime, loaderOptions: s.loaderOptions, errors });
		const role = () => {
			const st = status(dirs, runtime.session.sessionManager.getSessionId());
			return [st.role, st.thresholds.hard];
		};
		try {
			await runtime.session.prompt("Hello.");
			assert.deepEqual(role(), ["main", 90_000]);
			const file = runtime.session.sessionFile;
			const firstUser = runtime.session.sessionManager.getBranch().find((e) => e.type === "message" && e.message.role === "user");

			await runtime.switchSession(file);
			await runtime.session.prompt("Resumed.");
			assert.deepEqual(role(), ["main", 90_000], "resumed");

			const before = runtime.session.sessionManager.getSessionId();
			await runtime.fork(firstUser.id, { position: "at" });
			assert.notEqual(runtime.session.sessionManager.getSessionId(), before, "a new session file");
			await runtime.session.prompt("Forked.");
			assert.deepEqual(role(), ["main", 90_000], "forked");

			await runtime.newSession();
			await runtime.session.prompt("New.");
			assert.deepEqual(role(), ["main", 90_000], "new");
			assert.deepEqual(errors, []);
		} finally {
			await runtime.dispose();
		}
	});
});

test("an invalid budget file that says mode \"off\" stays off: its errors are reported, nothing is observed or enforced (issue 24, item 8)", async () => {
	const dirs = folder();
	const file = join(dirs.agentDir, "context-budget.json");
	writeFileSync(file, JSON.stringify({ mode: "off", main: { soft: 0 } }));
	await withEnv(envOf(dirs), async () => {
		const note = tool("notes_write_file", { path: "n.md", content: "x" });
		let t;
		const stderr = await captureStderr(async () => {
			t = await session(dirs, {
				settings: { compaction: { enabled: false } },
				steps: [{ text: "Warm.", tokens: 2_000 }, { ...note, tokens: 900_000 }, { text: "Done.", tokens: 900_100 }],
			});
			await t.session.prompt("Warm up.");
			await t.session.prompt("Write it.");
		});
		try {
			assert.ok(stderr.some((l) => l.includes(file) && l.includes("main.soft")), `the error names the file and key: ${stderr.join("\n")}`);
			const s = status(dirs, t.sessionId());
			assert.equal(s.configuredMode, "off");
			assert.equal(s.effectiveMode, "off", "the explicit off wins over the invalid value's observe");
			assert.equal(results(t, "notes_write_file")[0].isError, false, "nothing is blocked");
			const logged = events(dirs).map((e) => e.event);
			assert.ok(logged.length > 0, "the event log is written");
			assert.ok(!logged.some((e) => e.startsWith("would_")), `no observe preview either: ${logged.join(",")}`);
		} finally {
			await t.end();
		}
	});
});

test("/relay config prints every setting in force for the current model with where it came from, and the warnings", async () => {
	const dirs = folder();
	const globalFile = join(dirs.agentDir, "settings.json");
	writeFileSync(
		globalFile,
		JSON.stringify({
			retry: { enabled: false },
			compaction: { modelOverrides: { "faux/faux-1": { reserveTokens: 30_000 } } },
			relay: { reminderMarginTokens: 8_000, budget: { mode: "enforce", idleMinutes: 20, loop: { withinTurns: "x" } } },
		}),
	);
	mkdirSync(join(dirs.cwd, ".pi"), { recursive: true });
	writeFileSync(join(dirs.cwd, ".pi", "settings.json"), JSON.stringify({ relay: { budget: { main: { hard: 120_000 } } } }));
	await withEnv(envOf(dirs), async () => {
		let t;
		const stderr = await captureStderr(async () => {
			t = await session(dirs, { trusted: true, steps: [{ text: "Hi.", tokens: 50_000 }] });
			await t.session.prompt("Hello.");
			await t.session.prompt("/relay config");
		});
		try {
			const text = stderr.join("\n");
			const row = (key) => {
				const line = text.split("\n").find((l) => l.trimStart().startsWith(`${key} `));
				assert.ok(line, `no ${key} row in:\n${text}`);
				return line.replace(/\s+/g, " ").trim();
			};
			assert.ok(text.includes("relay config: model faux/faux-1, window 200,000 tokens, role main"), text);
			assert.equal(row("reserve"), `reserve 30,000 tokens ← compaction.modelOverrides["faux/faux-1"].reserveTokens in global settings (${globalFile})`);
			assert.equal(row("hard"), "hard 120,000 tokens ← relay.budget.main.hard in project settings (.pi/settings.json)");
			assert.equal(row("soft"), "soft 72,000 tokens ← derived from the given values (soft 60 %, handoff 75 % of hard)");
			assert.equal(row("mode"), `mode observe (configured enforce: invalid configuration (1 invalid value)) ← relay.budget.mode in global settings (${globalFile})`);
			assert.equal(row("idleMinutes"), `idleMinutes 20 ← relay.budget.idleMinutes in global settings (${globalFile})`);
			assert.equal(row("state folder"), `state folder ${dirs.stateDir} ← environment (PI_CONTEXT_BUDGET_STATE_DIR)`);
			assert.match(row("wrapper"), /^wrapper not owned: not started by pi-session/);
			assert.equal(row("relay.reminderMarginTokens"), `relay.reminderMarginTokens 8000 ← global settings (${globalFile})`);
			assert.ok(text.includes(`Warnings (1):\n  - global settings (${globalFile}): relay.budget.loop.withinTurns: must be a positive integer, got "x"`), text);
		} finally {
			await t.end();
		}
	});
});
