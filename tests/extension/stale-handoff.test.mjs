// Stale handoffs (issue 14, part 4) on the real Pi agent loop, in a real git repository: a
// committed handoff records HEAD, the branch, the uncommitted files and a stamp of every file it
// tells the next window to read; when the workspace changes between the handoff and the new
// window's first request, that request carries a <stale_handoff> message saying what changed
// (commits landed, branch switched, a listed file changed, one gone, the uncommitted set), at the
// same place in every request of the window. When nothing changed, the window is checked all the
// same (a record on the branch) and nothing is shown.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { joined, ofType, resultsOf, startSession, textOf, tool } from "./harness.mjs";
import { budgetEnv, enforce, HANDOFF, newRoot, WINDOW } from "./budget-helpers.mjs";

function git(cwd, ...args) {
	return execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", ...args], {
		cwd,
		encoding: "utf8",
		env: { ...process.env, GIT_CEILING_DIRECTORIES: join(cwd, "..") },
	}).trim();
}

/** The repository the session works in: two committed files on `trunk`, `notes.md` modified. */
function initRepo(cwd) {
	git(cwd, "init", "-q", "-b", "trunk");
	writeFileSync(join(cwd, "parser.rs"), "fn parse() {}\n");
	writeFileSync(join(cwd, "notes.md"), "# notes\n");
	git(cwd, "add", "parser.rs", "notes.md");
	git(cwd, "commit", "-q", "-m", "first");
	writeFileSync(join(cwd, "notes.md"), "# notes\nuncommitted line\n");
}

/**
 * Start, hand off (listing two files to read), run `between` right after the handoff's tool
 * result (before the reset and the new window's first request), then one more prompt.
 */
async function scenario(between) {
	const root = newRoot();
	const env = budgetEnv(root);
	const onHandoff = (pi) => {
		pi.on("tool_result", (event, ctx) => {
			if (event.toolName === "context_handoff" && !event.isError) between(ctx.cwd);
			return undefined;
		});
	};
	const t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce(),
		extraFactories: [onHandoff],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ ...tool("context_handoff", { ...HANDOFF, files_to_read: ["parser.rs", "notes.md", "docs/plan.md"] }), tokens: 6_000 },
			{ text: "Resumed.", tokens: 7_000 },
			{ text: "Still in window two.", tokens: 7_500 },
		],
	});
	initRepo(t.cwd);
	await t.session.prompt("Start.");
	await t.session.prompt("Hand off now.");
	await t.session.prompt("Next step, please.");
	return { t, env };
}

const staleMessages = (request) => request.filter((m) => m.role === "user" && textOf(m.content).includes("<stale_handoff>"));

test("the new window's first request says which commits landed, the branch switch, the changed and vanished files and the uncommitted set", async () => {
	const { t, env } = await scenario((cwd) => {
		git(cwd, "checkout", "-q", "-b", "rework");
		writeFileSync(join(cwd, "parser.rs"), "fn parse() { todo!() }\n");
		git(cwd, "commit", "-q", "-am", "landed: parser rework");
		rmSync(join(cwd, "notes.md"));
	});
	try {
		const [handoff] = resultsOf(t, "context_handoff");
		assert.equal(handoff.isError, false, handoff.text);
		assert.equal(ofType(t, "compaction").length, 1, "the handoff committed");
		// The sidecar holds what was recorded: HEAD, branch, the uncommitted file, the stamps.
		const sidecar = JSON.parse(readFileSync(JSON.parse(handoff.text).path.replace(/\.md$/, ".json"), "utf8"));
		assert.equal(sidecar.workspace.branch, "trunk");
		assert.equal(sidecar.workspace.head, sidecar.git.head);
		assert.deepEqual(sidecar.workspace.dirty.files.map((f) => [f.status, f.path]), [[" M", "notes.md"]]);
		assert.deepEqual(sidecar.workspace.files.map((f) => [f.path, f.stamp.kind]), [["parser.rs", "file"], ["notes.md", "file"], ["docs/plan.md", "missing"]]);

		const first = t.requests[2];
		const [stale] = staleMessages(first);
		assert.ok(stale, joined(first));
		const text = textOf(stale.content);
		assert.equal(first.filter((m) => m.role !== "system").indexOf(stale), 1, "right after the boot block");
		assert.ok(text.includes("- Branch: trunk at the handoff, rework now."), text);
		assert.match(text, /: 1 commit\(s\) landed since the handoff, newest first:\n {2}- [0-9a-f]+ landed: parser rework\n/);
		assert.ok(text.includes("- Files to read that changed since the handoff (1):\n  - parser.rs\n"), text);
		assert.ok(text.includes("- Files to read that no longer exist (1):\n  - notes.md\n"), text);
		assert.ok(text.includes("- Uncommitted then and now, changed since the handoff (1):\n  - notes.md"), text);
		assert.ok(!text.includes("docs/plan.md"), "missing then and now: no change");
		assert.ok(Buffer.byteLength(text) <= 4096);
		// Every later request of the window carries it at the same place (cache-stable).
		const later = t.requests[3];
		assert.deepEqual(later.slice(0, first.length), first, "the window's first request is the head of the next one");
		// Recorded once on the branch, for the new window.
		const records = ofType(t, "custom", "relay/stale-check");
		assert.equal(records.length, 1);
		assert.equal(records[0].data.windowId, ofType(t, "compaction")[0].details.windowId);
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
		env.restore();
	}
});

test("nothing changed since the handoff: the window is checked and its requests carry no stale-handoff message", async () => {
	const { t, env } = await scenario(() => {});
	try {
		assert.equal(ofType(t, "compaction").length, 1, "the handoff committed");
		assert.equal(staleMessages(t.requests[2]).length, 0, joined(t.requests[2]));
		assert.equal(staleMessages(t.requests[3]).length, 0);
		const records = ofType(t, "custom", "relay/stale-check");
		assert.equal(records.length, 1, "checked once, recorded so that a reload does not check again");
		assert.equal(records[0].data.report.git.kind, "compared");
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
		env.restore();
	}
});
