// End to end (issue 26, items 3 and 4): the real `pi` CLI in print mode, offline, with the faux
// model of demo/. Thirteen tool outputs of about 12,000 tokens each in a 200,000-token window, with
// relay.clearToolResults {enabled, triggerTokens 100,000, keep 3, clearAtLeast 50,000}: the run
// needs no reset, old outputs give way to stubs (Pi context_edit entries), consecutive requests
// share their prefix byte for byte except at a clearing, the session file keeps every output
// whole, a resumed session sends the same request, a stub reads back through history_read_item,
// and `relay timeline` shows the clearing.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PI = process.env.RELAY_PI_CLI ?? join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");
const RELAY_CLI = join(ROOT, "target/release/relay");
const SETTINGS = { relay: { clearToolResults: { enabled: true, triggerTokens: 100_000, keep: 3, clearAtLeast: 50_000 } } };
const PAGES = 13;

/** What fetch_page returns (tests/e2e/fixtures/fetch-page.ts). */
function pageText(n, chars = 48_000) {
	const head = `PAGE-${n} `;
	return head + `row ${n}: some listing text; `.repeat(Math.ceil(chars / 20)).slice(0, chars - head.length);
}

const textOf = (content) => (typeof content === "string" ? content : (content ?? []).map((b) => (b.type === "text" ? b.text : "")).join(""));

function runPi(dir, script, prompts, extra = []) {
	const [agent, work, sessions, state] = ["agent", "work", "sessions", "state"].map((d) => join(dir, d));
	for (const d of [agent, work, sessions]) mkdirSync(d, { recursive: true });
	writeFileSync(join(agent, "settings.json"), JSON.stringify(SETTINGS));
	const scriptFile = join(dir, `script-${Date.now()}-${Math.random()}.json`);
	const dump = `${scriptFile}.requests.jsonl`;
	writeFileSync(scriptFile, JSON.stringify(script));
	const result = spawnSync(
		process.execPath,
		[PI, "-p", "-ne", "-nbt", "--session-dir", sessions, ...extra, "-e", join(ROOT, "demo/faux-provider.ts"),
			"-e", join(ROOT, "tests/e2e/fixtures/fetch-page.ts"), "-e", join(ROOT, "extension"), "--model", "faux/faux-1", ...prompts],
		{
			cwd: work,
			encoding: "utf8",
			input: "",
			timeout: 120_000,
			maxBuffer: 64 * 1024 * 1024,
			env: {
				...process.env,
				PI_CODING_AGENT_DIR: agent,
				PI_CONTEXT_BUDGET_STATE_DIR: state,
				PI_OFFLINE: "1",
				RELAY_FAUX_SCRIPT: scriptFile,
				RELAY_FAUX_WINDOW: "200000",
				RELAY_FAUX_DUMP: dump,
			},
		},
	);
	const [file] = readdirSync(sessions, { recursive: true }).filter((f) => String(f).endsWith(".jsonl"));
	const path = file ? join(sessions, String(file)) : undefined;
	const lines = path ? readFileSync(path, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
	const requests = existsSync(dump) ? readFileSync(dump, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
	return { ...result, path, lines, requests };
}

/** Whether request `a`'s messages are, byte for byte, the first messages of request `b`. */
const isPrefix = (a, b) => a.length <= b.length && a.every((m, i) => JSON.stringify(m) === JSON.stringify(b[i]));

test("pi -p: thirteen 12k-token outputs in a 200k window are cleared without a reset, cache-friendly, and read back", (t) => {
	const dir = mkdtempSync(join(tmpdir(), "relay-e2e-clearing-"));
	const fetches = Array.from({ length: PAGES }, (_, i) => ({ tool: "fetch_page", args: { n: i + 1 } }));
	const run = runPi(dir, [...fetches, { text: "All pages fetched." }], ["Fetch the thirteen pages."]);
	assert.equal(run.status, 0, run.stderr);
	assert.equal(run.stdout.trim(), "All pages fetched.");
	assert.equal(run.requests.length, PAGES + 1);

	// No reset: the whole run is one window.
	assert.equal(run.lines.filter((l) => l.type === "compaction").length, 0, "no reset");

	// The last request holds at most 60 % of the outputs whole; the others are stubs.
	const last = run.requests.at(-1);
	const results = last.filter((m) => m.role === "toolResult").map((m) => textOf(m.content));
	assert.equal(results.length, PAGES);
	const whole = results.filter((t, i) => t === pageText(i + 1));
	const stubs = results.filter((t) => t.startsWith("[Relay cleared this fetch_page result"));
	assert.ok(whole.length <= 0.6 * PAGES, `${whole.length} of ${PAGES} outputs whole in the last request`);
	assert.equal(whole.length + stubs.length, PAGES);
	assert.ok(results.slice(-3).every((t, i) => t === pageText(PAGES - 2 + i)), "the newest three stay whole");

	// Between clearings consecutive requests share their prefix byte for byte: at most three
	// breaks over the run, one per clearing.
	let breaks = 0;
	for (let i = 1; i < run.requests.length; i++) if (!isPrefix(run.requests[i - 1], run.requests[i])) breaks++;
	const clearings = run.lines.filter((l) => l.type === "custom" && l.customType === "relay/clear-tool-results");
	assert.ok(clearings.length >= 1 && breaks <= 3, `${breaks} prefix breaks, ${clearings.length} clearings`);
	assert.equal(breaks, clearings.length, "a prefix breaks only at a clearing");
	for (const c of clearings) assert.ok(c.data.tokensFreed >= 50_000, JSON.stringify(c.data));
	t.diagnostic(`${whole.length} of ${PAGES} outputs whole in the last request, ${breaks} prefix breaks, clearings freeing ${clearings.map((c) => c.data.tokensFreed).join(", ")} tokens`);

	// Every output is still whole in the session file.
	const saved = run.lines.filter((l) => l.type === "message" && l.message.toolName === "fetch_page").map((l) => textOf(l.message.content));
	assert.deepEqual(saved, Array.from({ length: PAGES }, (_, i) => pageText(i + 1)));
	// The stubs live in the clearings' records (no context_edit entry: Pi would walk the branch for each).
	assert.equal(run.lines.filter((l) => l.type === "context_edit").length, 0);
	assert.equal(clearings.flatMap((c) => c.data.stubs).length, stubs.length);

	// Resumed, the session sends the same request (plus the answer and the new prompt), and the
	// model follows the first stub back to the whole output.
	const firstCleared = results.findIndex((t) => t.startsWith("[Relay cleared")) + 1;
	const resumed = runPi(dir, [{ followStub: true, args: { limit_chars: 50_000 } }, { text: "Read it back." }], ["Show me the first cleared page again."], ["--session", run.path]);
	assert.equal(resumed.status, 0, resumed.stderr);
	assert.ok(isPrefix(last, resumed.requests[0]), "the resumed session's first request starts with the last one");
	const readBack = resumed.lines.filter((l) => l.type === "message" && l.message.role === "toolResult" && l.message.toolName === "history_read_item");
	assert.equal(readBack.length, 1);
	assert.equal(readBack[0].message.isError, false, textOf(readBack[0].message.content).slice(0, 300));
	assert.ok(textOf(readBack[0].message.content).includes(pageText(firstCleared)), "the whole output reads back");

	// relay timeline shows the clearing.
	if (existsSync(RELAY_CLI)) {
		const timeline = spawnSync(RELAY_CLI, ["timeline", run.path, "-o", join(dir, "t.svg"), "--json"], { encoding: "utf8" });
		assert.equal(timeline.status, 0, timeline.stderr);
		const summary = JSON.parse(timeline.stdout);
		// Every clearing on the branch, the resumed run's included (its read-back may start one).
		const all = resumed.lines.filter((l) => l.type === "custom" && l.customType === "relay/clear-tool-results");
		assert.deepEqual(summary.clearings.map((c) => c.tokens_freed), all.map((c) => c.data.tokensFreed));
		assert.match(readFileSync(join(dir, "t.svg"), "utf8"), /class="clearing"/);
	}
});
