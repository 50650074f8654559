// `/relay stats` on the real Pi agent loop: the ledger of the branch the engine mirrors, after a
// reset, a window whose provider reported no usage, and a navigation back into the first window.
// Its text is compared with tests/extension/snapshots/relay-stats*.txt (session and window ids
// replaced); UPDATE_SNAPSHOTS=1 rewrites them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { captureStderr, startSession, tool } from "./harness.mjs";

const SNAPSHOTS = fileURLToPath(new URL("./snapshots/", import.meta.url));

/** `text` against the snapshot `name` (written when absent or with UPDATE_SNAPSHOTS=1). */
function matchesSnapshot(text, name) {
	const file = join(SNAPSHOTS, name);
	if (process.env.UPDATE_SNAPSHOTS === "1" || !existsSync(file)) {
		mkdirSync(SNAPSHOTS, { recursive: true });
		writeFileSync(file, text);
		if (process.env.UPDATE_SNAPSHOTS !== "1") assert.fail(`wrote the new snapshot ${file}: check it and run again`);
		return;
	}
	assert.equal(text, readFileSync(file, "utf8"), `snapshot ${name}`);
}

/** A provider's usage: the counts and Pi's cost. */
const usage = (input, cacheRead, cacheWrite, output, cost) => ({
	input,
	output,
	cacheRead,
	cacheWrite,
	totalTokens: input + output + cacheRead + cacheWrite,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: cost },
});
const NO_USAGE = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

/** The ledger text of `/relay stats` (one notification), ids made stable. */
async function stats(t) {
	const lines = await captureStderr(() => t.session.prompt("/relay stats"));
	const text = lines.find((l) => l.startsWith("relay stats · session "));
	assert.ok(text, `no ledger in:\n${lines.join("\n")}`);
	const sessionId = t.sessionManager.getSessionId();
	let stable = text.replaceAll(sessionId, "<session>");
	// Window ids of the branch, oldest first, each as a stand-in of the same width.
	const ids = t.sessionManager
		.getBranch()
		.filter((e) => e.type === "compaction")
		.map((e) => e.details.windowId.split(":").at(-1));
	ids.forEach((id, i) => (stable = stable.replaceAll(id, `window#${i + 2}`)));
	return stable;
}

/** The assistant messages' usage on Pi's branch, summed by hand per window. */
function byHand(t) {
	const windows = [[]];
	for (const e of t.sessionManager.getBranch()) {
		if (e.type === "compaction") windows.push([]);
		else if (e.type === "message" && e.message.role === "assistant") windows.at(-1).push(e.message.usage);
	}
	return windows.map((us) => ({
		requests: us.length,
		input: us.reduce((n, u) => n + u.input, 0),
		cacheRead: us.reduce((n, u) => n + u.cacheRead, 0),
		cacheWrite: us.reduce((n, u) => n + u.cacheWrite, 0),
		output: us.reduce((n, u) => n + u.output, 0),
	}));
}

/** The row of window `n` (1-based) or `total`, split into its cells. */
const row = (text, first) =>
	text
		.split("\n")
		.find((l) => new RegExp(`^\\s*${first}\\s{2,}`).test(l))
		?.trim()
		.split(/\s{2,}/);

test("/relay stats: each window's requests, the provider's tokens and Pi's cost, how it ended, and the totals", async () => {
	const t = await startSession({
		steps: [
			{ ...tool("notes_write_file", { path: "plan.md", content: "next: step 2" }), tokens: usage(1200, 0, 3000, 120, 0.0152) },
			{ text: "Step 1 done.", tokens: usage(40, 4100, 300, 80, 0.0031) },
			{ ...tool("new_context"), tokens: usage(25, 4300, 90, 60, 0.0024) },
			{ text: "Resumed from plan.md.", tokens: NO_USAGE },
			{ text: "Step 2 done.", tokens: usage(10, 2900, 500, 45, 0.0019) },
		],
	});
	try {
		await t.session.prompt("Do step 1.");
		await t.session.prompt("Reset.");
		await t.session.prompt("Do step 2.");
		const text = await stats(t);
		matchesSnapshot(text, "relay-stats.txt");
		// The same figures as the branch's assistant messages, summed by hand.
		const hand = byHand(t);
		assert.equal(hand.length, 2);
		for (const [i, w] of hand.entries()) {
			const cells = row(text, String(i + 1));
			assert.equal(cells[2].split(" ")[0], String(w.requests));
		}
		const [root, second] = hand;
		assert.deepEqual(row(text, "1").slice(3, 7), [root.input, root.cacheRead, root.cacheWrite, root.output].map((n) => n.toLocaleString("en-US")));
		assert.deepEqual(row(text, "2").slice(3, 7), [second.input, second.cacheRead, second.cacheWrite, second.output].map((n) => n.toLocaleString("en-US")));
		const [compaction] = t.sessionManager.getBranch().filter((e) => e.type === "compaction");
		assert.equal(row(text, "1").at(-1), compaction.tokensBefore.toLocaleString("en-US"), "Pi's estimate at the boundary");
		assert.match(text, /Window 2 \(window#2\): Pi recorded no usage for 1 of its 2 requests\./);
	} finally {
		await t.dispose();
	}
});

test("/relay stats follows the branch: after /tree back into the first window, the second window is gone", async () => {
	const t = await startSession({
		steps: [
			{ text: "Step 1 done.", tokens: usage(40, 4100, 300, 80, 0.0031) },
			{ ...tool("new_context"), tokens: usage(25, 4300, 90, 60, 0.0024) },
			{ text: "Resumed.", tokens: usage(10, 2900, 500, 45, 0.0019) },
		],
	});
	try {
		await t.session.prompt("Do step 1.");
		const firstAnswer = t.sessionManager.getLeafId();
		await t.session.prompt("Reset.");
		assert.match(await stats(t), /^2 windows · 3 requests/m);
		await t.session.navigateTree(firstAnswer);
		const text = await stats(t);
		assert.match(text, /^1 window · 1 request · 0 Relay resets/m, text);
		assert.deepEqual(row(text, "1").slice(2, 8), ["1", "40", "4,100", "300", "80", "$0.0031"]);
	} finally {
		await t.dispose();
	}
});
