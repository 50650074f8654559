// End to end: the real `pi` CLI in print mode, offline, with the faux provider extension from
// demo/, then the `relay` CLI reading the session file Pi wrote.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { ROOT, runPi, spawnRpc } from "./pi-print.mjs";

const RELAY = join(ROOT, "target/release/relay");

const textOfMessage = (message) => (message?.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("");

function relay(...args) {
	return spawnSync(RELAY, args, { encoding: "utf8" });
}

test("pi -p: an explicit reset rolls into a second window and continues on stdout", () => {
	const run = runPi({
		script: [
			{ tool: "notes_write_file", args: { path: "plan.md", content: "step 1 done; next: step 2" } },
			{ tool: "new_context" },
			{ tool: "notes_read_file", args: { path: "plan.md" } },
			{ text: "resumed in window 2 from plan.md" },
		],
		prompts: ["Do the task in two windows."],
	});
	assert.equal(run.status, 0, run.stderr);
	assert.equal(run.stdout.trim(), "resumed in window 2 from plan.md");
	const compactions = run.lines.filter((l) => l.type === "compaction");
	assert.equal(compactions.length, 1);
	assert.equal(compactions[0].details.relay, "window");
	assert.match(compactions[0].details.windowId, /^pcw:[^:]+:[0-9a-f]{8}$/);
	assert.match(compactions[0].summary, /plan\.md/, "the boot block lists the note");
	const continuations = run.lines.filter((l) => l.type === "custom_message" && l.customType === "relay/continue");
	assert.equal(continuations.length, 1, "exactly one hidden continuation");
	const boots = run.lines.filter((l) => l.type === "custom_message" && l.customType === "relay/boot");
	assert.equal(boots.length, 1, "one root boot block");

	// The relay CLI reads the file pi wrote.
	const windows = relay("windows", run.file, "--json");
	assert.equal(windows.status, 0, windows.stderr);
	assert.equal(JSON.parse(windows.stdout).windows.length, 2);
	const search = relay("search", "two windows", run.sessions);
	assert.equal(search.status, 0, search.stderr);
	assert.match(search.stdout, /Do the task in two windows/);
	const human = relay("windows", run.file);
	assert.match(human.stdout, /:root/);
});

test("pi -p: the resume check runs before the handoff is written and before the new window's first request", () => {
	const budget = { mode: "enforce", main: { soft: 20_000, handoff: 30_000, hard: 60_000, minProgress: 1_000 } };
	const run = runPi({
		script: [
			{ text: "Started.", tokens: 5_000 },
			{ tool: "context_handoff", args: { goal: "GOAL-1: ship", next_step: "NEXT-2: test", facts: "FACTS-3: built" }, tokens: 6_000 },
			{ text: "resumed after the check" },
		],
		prompts: ["Start.", "Hand off."],
		window: 200_000,
		settings: { compaction: { enabled: false }, relay: { budget } },
		// Counts its runs in <dir>/runs (the session cwd is <dir>/work).
		env: { PI_RESUME_CHECK: 'n=$(( $(cat ../runs 2>/dev/null || echo 0) + 1 )); echo $n > ../runs; echo "CHECK-E2E-$n in $PWD"; exit 1' },
	});
	assert.equal(run.status, 0, run.stderr);
	assert.equal(run.stdout.trim(), "resumed after the check");
	const work = join(run.dir, "work");
	// Before the handoff: its file has the result, the failure visible.
	const results = run.lines.filter((l) => l.type === "message" && l.message.role === "toolResult");
	const handoff = JSON.parse(textOfMessage(results.at(-1).message));
	const md = readFileSync(handoff.path, "utf8");
	assert.match(md, /## Resume check\n\n[\s\S]*\(from PI_RESUME_CHECK\)\nExit: 1 \(the check failed\)[\s\S]*CHECK-E2E-1 in /);
	assert.ok(md.includes(`CHECK-E2E-1 in ${work}`), md);
	// After the reset: recorded once for the new window, and carried by its first request, right
	// after the boot block.
	const [compaction] = run.lines.filter((l) => l.type === "compaction");
	const records = run.lines.filter((l) => l.type === "custom" && l.customType === "relay/resume-check");
	assert.equal(records.length, 1);
	assert.equal(records[0].data.windowId, compaction.details.windowId);
	assert.equal(records[0].data.result.output.head, `CHECK-E2E-2 in ${work}\n`, "a second, fresh run");
	assert.equal(readFileSync(join(run.dir, "runs"), "utf8").trim(), "2", "once per boundary");
	const requests = run.stderr.split("── request ").slice(1);
	const fresh = requests[2];
	assert.ok(fresh, run.stderr);
	const [summary, check, continuation] = fresh
		.split("\n")
		.slice(1)
		.map((l) => l.trim())
		.filter((l) => l && !l.startsWith("system"));
	assert.match(summary, /^user +The conversation history before this point was compacted/);
	assert.match(check, /^user +<resume_check> Relay ran the operator's resume check after the context reset/);
	assert.match(continuation, /^user +Your handoff was committed/);
	assert.ok(!requests[1].includes("<resume_check>"), "the old window never saw it");
});

test("relay CLI exits 2 with a clear message on unreadable input", () => {
	const r = relay("windows", "/nonexistent/session.jsonl");
	assert.equal(r.status, 2);
	assert.match(r.stderr, /nonexistent\/session\.jsonl/);
});

test("pi -p: a threshold crossing mid-run borrows one note-taking turn, resets, and continues on stdout", () => {
	const run = runPi({
		window: 100000,
		settings: { compaction: { enabled: true, keepRecentTokens: 1 } },
		script: [
			{ tool: "notes_append_to_file", args: { path: "log.md", content: "step A done\n" }, tokens: 90000 },
			// The borrowed turn: the window resets as it ends.
			{ tool: "notes_write_file", args: { path: "state.md", content: "A done; next B" } },
			{ text: "continued with B in the new window" },
		],
		prompts: ["Do A, then B."],
	});
	assert.equal(run.status, 0, run.stderr);
	assert.equal(run.stdout.trim(), "continued with B in the new window");
	const steers = run.lines.filter((l) => l.type === "custom_message" && l.customType === "relay/notes-steer");
	assert.equal(steers.length, 1);
	const compactions = run.lines.filter((l) => l.type === "compaction");
	assert.equal(compactions.length, 1);
	assert.equal(compactions[0].details.source, "fallback");
	assert.match(compactions[0].summary, /state\.md/);
	assert.equal(run.lines.filter((l) => l.type === "custom_message" && l.customType === "relay/continue").length, 1);
	// The model saw three requests and Pi's summarizer none.
	assert.equal((run.stderr.match(/── request \d+/g) ?? []).length, 3);
});

test("pi --mode json: the reset and its continuation appear in the event stream", () => {
	const run = runPi({
		script: [{ tool: "new_context" }, { text: "json mode continued" }],
		prompts: ["Reset in json mode."],
		extraArgs: ["--mode", "json"],
	});
	assert.equal(run.status, 0, run.stderr);
	const events = run.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
	// The reset's three entries reach the stream in order, then the continuation runs as a second
	// agent loop whose answer is the last assistant message.
	const appended = events.filter((e) => e.type === "entry_appended").map((e) => e.entry.customType ?? e.entry.type);
	assert.deepEqual(appended, ["relay/reset", "compaction", "relay/continue"], JSON.stringify(appended));
	const resetAt = events.findIndex((e) => e.type === "entry_appended");
	const after = events.slice(resetAt);
	assert.ok(after.some((e) => e.type === "agent_start"), "a new agent loop after the reset");
	const answers = events.filter((e) => e.type === "message_end" && e.message?.role === "assistant");
	assert.equal(textOfMessage(answers.at(-1)?.message), "json mode continued");
	assert.ok(events.indexOf(answers.at(-1)) > resetAt, "the continuation answers after the reset");
	assert.equal(run.lines.filter((l) => l.type === "compaction").length, 1);
});

test("pi --mode rpc: new_context resets and continues inside one prompt command", async () => {
	const { child, sessions } = spawnRpc({ script: [{ tool: "new_context" }, { text: "rpc mode continued" }], prefix: "relay-rpc-" });
	const events = [];
	let buffer = "";
	const settled = new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`no agent_settled; events: ${events.map((e) => e.type).join(",")}`)), 30_000);
		child.stdout.on("data", (chunk) => {
			buffer += chunk;
			let nl;
			while ((nl = buffer.indexOf("\n")) >= 0) {
				const line = buffer.slice(0, nl).replace(/\r$/, "");
				buffer = buffer.slice(nl + 1);
				if (!line) continue;
				const record = JSON.parse(line);
				events.push(record);
				if (record.type === "agent_settled") {
					clearTimeout(timer);
					resolve();
				}
			}
		});
	});
	child.stdin.write(JSON.stringify({ id: "p1", type: "prompt", message: "Reset over RPC." }) + "\n");
	try {
		await settled;
	} finally {
		child.kill();
	}
	const response = events.find((e) => e.type === "response" && e.id === "p1");
	assert.equal(response?.success, true);
	const file = readdirSync(sessions, { recursive: true }).find((f) => String(f).endsWith(".jsonl"));
	const lines = readFileSync(join(sessions, String(file)), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
	assert.equal(lines.filter((l) => l.type === "compaction").length, 1);
	assert.equal(lines.filter((l) => l.type === "custom_message" && l.customType === "relay/continue").length, 1);
	const last = lines.at(-1);
	assert.equal(last.message?.content?.[0]?.text, "rpc mode continued");
});

test("pi -p: enforce mode from a budget file commits a handoff at the threshold and continues from it", () => {
	const run = runPi({
		window: 200000,
		settings: { compaction: { enabled: false } },
		env: (dir) => {
			const config = join(dir, "context-budget.json");
			writeFileSync(config, JSON.stringify({ mode: "enforce", main: { soft: 20000, handoff: 30000, hard: 60000, minProgress: 1000 } }));
			return { PI_CONTEXT_BUDGET_CONFIG: config, PI_CONTEXT_BUDGET_STATE_DIR: join(dir, "state") };
		},
		script: [
			{ text: "floor set", tokens: 5000 },
			// Past the handoff threshold: every tool but context_handoff is blocked.
			{ tool: "notes_write_file", args: { path: "x.md", content: "late work" }, tokens: 35000 },
			{
				tool: "context_handoff",
				args: { goal: "GOAL-E2E-1: port the importer", next_step: "NEXT-E2E-2: run the importer tests", facts: "FACTS-E2E-3: parser done", user_constraints: "Never touch api/." },
				tokens: 36000,
			},
			{ text: "resumed from the handoff in window 2" },
		],
		prompts: ["Start the importer port.", "Keep going."],
	});
	assert.equal(run.status, 0, run.stderr);
	assert.equal(run.stdout.trim(), "resumed from the handoff in window 2");
	const results = run.lines.filter((l) => l.type === "message" && l.message.role === "toolResult");
	const blocked = results.find((l) => l.message.toolName === "notes_write_file");
	assert.equal(blocked.message.isError, true, "the late tool was blocked");
	assert.match(textOfMessage(blocked.message), /context_handoff/);
	const handoff = results.find((l) => l.message.toolName === "context_handoff");
	assert.equal(JSON.parse(textOfMessage(handoff.message)).written, true);
	const compactions = run.lines.filter((l) => l.type === "compaction");
	assert.equal(compactions.length, 1, "one committed handoff");
	assert.equal(compactions[0].details.source, "handoff");
	assert.match(compactions[0].summary, /<handoff>[\s\S]*GOAL-E2E-1[\s\S]*NEXT-E2E-2[\s\S]*Never touch api\/\.[\s\S]*<\/handoff>/);
	const handoffFile = compactions[0].details.handoffPath;
	assert.match(readFileSync(handoffFile, "utf8"), /GOAL-E2E-1/, "the handoff file exists where the compaction says");
	// After the reset: one hidden continuation, then the model's answer, in the new window.
	const at = run.lines.indexOf(compactions[0]);
	const after = run.lines.slice(at + 1);
	assert.equal(after.filter((l) => l.type === "custom_message" && l.customType === "relay/continue").length, 1);
	assert.equal(textOfMessage(after.findLast((l) => l.type === "message" && l.message.role === "assistant").message), "resumed from the handoff in window 2");
	// The request after the reset held only the boot block with the handoff and the continuation.
	const requests = run.stderr.split("── request ").slice(1);
	assert.equal(requests.length, 4);
	assert.match(requests[3], /the model sees 3 messages/);
	assert.ok(!requests[3].includes("floor set"), "the old window is gone from the request");
});

test("pi -p: a new window that starts past Pi's threshold is not reset again (one reset, one warning)", () => {
	// Window 24,000 with Pi's default reserve: Pi's threshold is 7,616 tokens. The first window
	// crosses it and resets once; the new window's first request is already past it (as a large
	// system prompt or Pi 1.3's faux provider, which counts input twice, make it), so a second reset
	// would open the same window again.
	const run = runPi({
		window: 24000,
		settings: { compaction: { enabled: true, keepRecentTokens: 1 } },
		script: [
			{ tool: "notes_append_to_file", args: { path: "log.md", content: "step A done\n" }, tokens: 9000 },
			// The borrowed turn: the window resets as it ends.
			{ tool: "notes_write_file", args: { path: "state.md", content: "A done; next B" }, tokens: 9100 },
			{ tool: "notes_read_file", args: { path: "state.md" }, tokens: 9400 },
			{ tool: "notes_read_file", args: { path: "log.md" }, tokens: 9500 },
			{ text: "B done in the second window", tokens: 9600 },
		],
		prompts: ["Do A, then B."],
	});
	assert.equal(run.status, 0, run.stderr);
	assert.equal(run.stdout.trim(), "B done in the second window");
	assert.equal(run.lines.filter((l) => l.type === "compaction").length, 1, "one reset, not one per window");
	assert.equal(run.lines.filter((l) => l.type === "custom_message" && l.customType === "relay/notes-steer").length, 1);
	assert.equal((run.stderr.match(/this context window began at 9400 tokens/g) ?? []).length, 1, run.stderr);
	assert.equal((run.stderr.match(/── request \d+/g) ?? []).length, 5);
});

test("pi -p: the low-context reminder is queued where the model reads it and never hides the final answer", () => {
	// Window 100,000: after the first answer 20,000 tokens are left, below Pi's reserve plus
	// Relay's margin, so the reminder is due. It goes in after the tool result (before the next
	// request); the final answer stays the last message, which is what print mode prints.
	const run = runPi({
		window: 100000,
		script: [
			{ tool: "notes_read_file", args: { path: "plan.md" }, tokens: 80000 },
			{ text: "the final answer", tokens: 80100 },
		],
		prompts: ["Go."],
	});
	assert.equal(run.status, 0, run.stderr);
	assert.equal(run.stdout.trim(), "the final answer");
	const kinds = run.lines.map((l) => (l.type === "message" ? l.message.role : l.customType ?? l.type));
	assert.deepEqual(kinds.slice(-4), ["assistant", "toolResult", "relay/reminder", "assistant"]);
	assert.match(run.stderr, /── request 2[^]*context_window_guidance> This context window is running low/, "the second request carries the reminder");
});

// ── the relay CLI as a daily tool, on the files a real run leaves ─────────────────────────────

/** The width and height from a PNG's IHDR chunk. */
function pngSize(file) {
	const b = readFileSync(file);
	assert.equal(b.subarray(1, 4).toString("latin1"), "PNG");
	return [b.readUInt32BE(16), b.readUInt32BE(20)];
}

test("relay sessions, notes, handoffs and timeline read what a real handoff run left", () => {
	const run = runPi({
		window: 200000,
		settings: { compaction: { enabled: false }, relay: { budget: { mode: "enforce", main: { soft: 20000, handoff: 30000, hard: 60000, minProgress: 1000 } } } },
		script: [
			{ tool: "notes_write_file", args: { path: "plan/steps.md", content: "1. port\n2. test\n" }, tokens: 5000 },
			{ text: "planned", tokens: 8000 },
			{ tool: "context_handoff", args: { goal: "GOAL-CLI: port", next_step: "NEXT-CLI: test", facts: "FACTS-CLI: planned" }, tokens: 32000 },
			{ text: "resumed", tokens: 6000 },
		],
		prompts: ["Port the importer.", "Hand off."],
	});
	assert.equal(run.status, 0, run.stderr);
	const [compaction] = run.lines.filter((l) => l.type === "compaction");
	assert.equal(compaction.details.kind, "handoff");

	const sessions = relay("sessions", run.sessions, "--json");
	assert.equal(sessions.status, 0, sessions.stderr);
	const [s] = JSON.parse(sessions.stdout);
	assert.equal(s.file, run.file);
	assert.equal(s.windows, 2);
	assert.equal(s.title, "Port the importer.");
	assert.equal(s.bytes, readFileSync(run.file).length);

	const notes = relay("notes", run.file, "--path", "plan/steps.md");
	assert.equal(notes.status, 0, notes.stderr);
	assert.equal(notes.stdout, "1. port\n2. test\n");
	const exported = join(run.dir, "exported");
	assert.equal(relay("notes", run.file, "--export", exported).status, 0);
	assert.equal(readFileSync(join(exported, "plan/steps.md"), "utf8"), "1. port\n2. test\n");

	const handoffs = relay("handoffs", "--dir", join(run.dir, "work"), "--json");
	assert.equal(handoffs.status, 0, handoffs.stderr);
	const [h] = JSON.parse(handoffs.stdout);
	assert.equal(h.path, compaction.details.handoffPath);
	assert.equal(h.goal, "GOAL-CLI: port");
	const shown = relay("handoffs", "show", "latest", "--dir", join(run.dir, "work"));
	assert.equal(shown.stdout, readFileSync(compaction.details.handoffPath, "utf8"));

	const png = join(run.dir, "timeline.png");
	const timeline = relay("timeline", run.file, "-o", png, "--window", "200000", "--json");
	assert.equal(timeline.status, 0, timeline.stderr);
	const summary = JSON.parse(timeline.stdout);
	assert.deepEqual(summary.requests.map((r) => r.tokens), [5000, 8000, 32000, 6000]);
	assert.equal(summary.markers.length, 1);
	assert.equal(summary.markers[0].window_id, compaction.details.windowId);
	assert.equal(summary.markers[0].after_request, 3);
	assert.equal(summary.markers[0].tokens_before, compaction.tokensBefore);
	assert.deepEqual(pngSize(png), [1200, 680]);
});

test("relay stats on a session the real pi CLI made: the token totals are the sums of the assistant messages' usage", () => {
	const run = runPi({
		script: [
			{ tool: "notes_write_file", args: { path: "plan.md", content: "step 1 done; next: step 2" }, usage: { cost: { total: 0.0125 } } },
			{ text: "step 1 done" },
			{ tool: "new_context" },
			{ tool: "notes_read_file", args: { path: "plan.md" }, usage: { cost: { total: 0.0031 } } },
			{ text: "step 2 done" },
		],
		prompts: ["Do step 1.", "Go on."],
	});
	assert.equal(run.status, 0, run.stderr);
	// By hand: every assistant message's usage on the branch (the file is one branch here), cut at
	// the compaction.
	const entries = run.lines.filter((l) => l.type !== "session");
	const windows = [[]];
	for (const e of entries) {
		if (e.type === "compaction") windows.push([]);
		else if (e.type === "message" && e.message.role === "assistant") windows.at(-1).push(e.message.usage);
	}
	const sum = (usages, f) => usages.reduce((n, u) => n + f(u), 0);
	const byHand = (usages) => ({
		input: sum(usages, (u) => u.input),
		cache_read: sum(usages, (u) => u.cacheRead),
		cache_write: sum(usages, (u) => u.cacheWrite),
		output: sum(usages, (u) => u.output),
	});
	const all = windows.flat();
	assert.equal(windows.length, 2);
	assert.ok(byHand(all).cache_read + byHand(all).cache_write > 0, "the faux provider reports its prompt as cache reads and writes");

	const stats = relay("stats", run.file, "--json");
	assert.equal(stats.status, 0, stats.stderr);
	const ledger = JSON.parse(stats.stdout);
	assert.equal(ledger.totals.requests, all.length);
	assert.deepEqual(ledger.totals.tokens, byHand(all));
	assert.deepEqual(ledger.windows.map((w) => w.tokens), windows.map(byHand));
	assert.deepEqual(ledger.windows.map((w) => w.requests), windows.map((w) => w.length));
	assert.ok(Math.abs(ledger.totals.cost - sum(all, (u) => u.cost.total)) < 1e-12, `${ledger.totals.cost}`);
	const [compaction] = run.lines.filter((l) => l.type === "compaction");
	assert.deepEqual(ledger.windows.map((w) => w.window_id.split(":").at(-1)), ["root", compaction.details.windowId.split(":").at(-1)]);
	assert.deepEqual(ledger.windows[0].ended, { kind: "reset", commit: null, source: "new_context", at: compaction.timestamp });
	assert.equal(ledger.windows[0].pi_summary_input, compaction.tokensBefore);
	assert.equal(ledger.windows[1].ended.kind, "open");
	assert.equal(ledger.totals.pi_summary_input, compaction.tokensBefore);

	const text = relay("stats", run.file);
	assert.equal(text.status, 0, text.stderr);
	const total = text.stdout.split("\n").find((l) => l.trimStart().startsWith("total"));
	const t = byHand(all);
	const n = (x) => x.toLocaleString("en-US");
	assert.deepEqual(total.trim().split(/\s+/), ["total", String(all.length), n(t.input), n(t.cache_read), n(t.cache_write), n(t.output), `$${ledger.totals.cost.toFixed(4)}`, "—", n(compaction.tokensBefore)]);
});

test("relay sessions: the title is Pi's session name when the session has one", async () => {
	const { SessionManager } = await import("@earendil-works/pi-coding-agent");
	const dir = mkdtempSync(join(tmpdir(), "relay-sessions-"));
	const agent = join(dir, "agent");
	const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 1500, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
	const assistant = (text) => ({ role: "assistant", content: [{ type: "text", text }], api: "faux", provider: "faux", model: "faux-1", usage, stopReason: "stop", timestamp: Date.now() });
	const make = (first, name) => {
		const sm = SessionManager.create(join(dir, "work"), join(agent, "sessions", "--work--"));
		sm.appendMessage({ role: "user", content: first, timestamp: Date.now() });
		sm.appendMessage(assistant("ok"));
		if (name) sm.appendSessionInfo(name);
		return sm.getSessionFile();
	};
	const unnamed = make("a first message that is much longer than the sixty characters a title may hold");
	const named = make("the first message", "Importer port");
	// The default folder: $PI_CODING_AGENT_DIR/sessions, as Pi's getAgentDir() resolves it.
	const r = spawnSync(RELAY, ["sessions", "--json"], { encoding: "utf8", env: { ...process.env, PI_CODING_AGENT_DIR: agent } });
	assert.equal(r.status, 0, r.stderr);
	const byFile = Object.fromEntries(JSON.parse(r.stdout).map((s) => [s.file, s]));
	assert.equal(byFile[named].title, "Importer port");
	assert.equal(byFile[named].title_from, "name");
	assert.equal(byFile[unnamed].title, "a first message that is much longer than the sixty characte…");
	assert.equal(byFile[unnamed].title_from, "first_message");
	const text = spawnSync(RELAY, ["sessions"], { encoding: "utf8", env: { ...process.env, PI_CODING_AGENT_DIR: agent } });
	assert.match(text.stdout, /^LAST ACTIVITY +WINDOWS +SIZE +TITLE +FILE\n/);
	assert.match(text.stdout, /Importer port/);
});

test("relay status: a running pi is running by its pid, and gone once it exits", async () => {
	const { child, agent, work } = spawnRpc({ script: [{ tool: "new_context" }, { text: "status continued" }], prefix: "relay-status-" });
	const exited = new Promise((resolve) => child.on("exit", resolve));
	let buffer = "";
	const settled = new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error("no agent_settled")), 30_000);
		child.stdout.on("data", (chunk) => {
			buffer += chunk;
			if (buffer.includes('"type":"agent_settled"')) {
				clearTimeout(timer);
				resolve();
			}
		});
	});
	child.stdin.write(JSON.stringify({ id: "p1", type: "prompt", message: "Reset." }) + "\n");
	const env = { ...process.env, PI_CODING_AGENT_DIR: agent };
	delete env.PI_CONTEXT_BUDGET_STATE_DIR;
	try {
		await settled;
		const r = spawnSync(RELAY, ["status", "--json"], { encoding: "utf8", env });
		assert.equal(r.status, 0, r.stderr);
		const [s] = JSON.parse(r.stdout);
		assert.equal(s.pid, child.pid);
		assert.equal(s.running, true);
		assert.equal(s.cwd, work);
		assert.equal(s.windowCount, 2);
	} finally {
		child.kill();
	}
	await exited;
	const after = spawnSync(RELAY, ["status"], { encoding: "utf8", env });
	assert.equal(after.status, 1, "nothing running");
	assert.match(after.stderr, /no running Relay session/);
	const all = spawnSync(RELAY, ["status", "--all", "--json"], { encoding: "utf8", env });
	const [gone] = JSON.parse(all.stdout);
	assert.equal(gone.pid, child.pid);
	assert.equal(gone.running, false);
});
