// Records a golden session file: one `pi -p` run, offline, with the faux provider, of the
// Relay checkout at <relay-dir> (its extension/ and built core), through a scenario that makes
// Relay write every kind of record it puts into a session: notes (write, append), a window the
// model opened (new_context), a committed handoff (context_handoff under enforce) with its
// continuation, and an overflow recovered by a mechanical reset. The file (temporary paths
// replaced by /golden) goes to <out>; tests/golden/README.md says which Relay wrote each one, and
// crates/relay-io/tests/golden.rs reads them all with today's reader.
//
//   node_modules/.bin/node scripts/record-golden.mjs <relay-dir> <out.jsonl>
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const [relayDir, out] = process.argv.slice(2);
if (!relayDir || !out) throw new Error("usage: record-golden.mjs <relay-dir> <out.jsonl>");
const PI = join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");

const SCRIPT = [
	{ tool: "notes_write_file", args: { path: "task/plan.md", content: "GOLDEN-PLAN: fix parse_port\n- [ ] find the bug\n" }, tokens: 1000 },
	{ tool: "new_context", tokens: 2000 },
	{ tool: "notes_append_to_file", args: { path: "task/plan.md", content: "- [x] GOLDEN-STEP-2: off by one found\n" }, tokens: 3000 },
	{
		tool: "context_handoff",
		args: { goal: "GOLDEN-GOAL: parse_port accepts 65535", next_step: "GOLDEN-NEXT: add the test", facts: "GOLDEN-FACTS: compare with <=", user_constraints: "GOLDEN-RULE: keep api/ untouched." },
		tokens: 4000,
	},
	{ text: "GOLDEN-DONE-1" },
	{ error: "prompt is too long: 250000 tokens > 128000 maximum" },
	{ text: "GOLDEN-DONE-2" },
];

const dir = realpathSync(mkdtempSync(join(tmpdir(), "relay-golden-")));
try {
	const [agent, work, sessions, state] = ["agent", "work", "sessions", "state"].map((d) => join(dir, d));
	for (const d of [agent, work, sessions]) mkdirSync(d, { recursive: true });
	writeFileSync(
		join(agent, "settings.json"),
		JSON.stringify({ compaction: { enabled: true, keepRecentTokens: 1 }, relay: { budget: { mode: "enforce", main: { soft: 20_000, handoff: 30_000, hard: 60_000, minProgress: 1_000 } } } }),
	);
	writeFileSync(join(dir, "script.json"), JSON.stringify(SCRIPT));
	const run = spawnSync(
		process.execPath,
		[PI, "-p", "-ne", "-nbt", "--session-dir", sessions, "-e", join(ROOT, "demo/faux-provider.ts"), "-e", join(resolve(relayDir), "extension"), "--model", "faux/faux-1", "GOLDEN-REQ-1: fix parse_port.", "GOLDEN-REQ-2: and its test."],
		{
			cwd: work,
			encoding: "utf8",
			input: "",
			timeout: 120_000,
			env: { ...process.env, PI_CODING_AGENT_DIR: agent, PI_CONTEXT_BUDGET_STATE_DIR: state, PI_OFFLINE: "1", RELAY_FAUX_SCRIPT: join(dir, "script.json"), RELAY_FAUX_WINDOW: "128000" },
		},
	);
	if (run.status !== 0 || run.stdout.trim() !== "GOLDEN-DONE-2") throw new Error(`pi failed (${run.status}): ${run.stdout}\n${run.stderr}`);
	const [file] = readdirSync(sessions, { recursive: true }).filter((f) => String(f).endsWith(".jsonl"));
	const text = readFileSync(join(sessions, String(file)), "utf8").replaceAll(dir, "/golden");
	writeFileSync(out, text);
	console.log(`${out}: ${text.split("\n").filter(Boolean).length} lines`);
} finally {
	rmSync(dir, { recursive: true, force: true });
}
