// The memory a fresh process needs for a session: opens a copy of the session file named on the
// command line with Relay loaded (tests/extension/harness.mjs), answers one prompt, and prints
// `{"heap":…,"rss":…}` (bytes, after a full GC). The soak compares its own memory at the end of
// the run with this: whatever the long-running process holds beyond it was kept by the run, not
// by the session (Pi's entries and Relay's mirror are what a reload rebuilds).
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { startSession } from "../extension/harness.mjs";

const [source, window] = process.argv.slice(2);
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc");
const root = mkdtempSync(join(tmpdir(), "relay-soak-fresh-"));
mkdirSync(join(root, "sessions"));
const file = join(root, "sessions", basename(source));
copyFileSync(source, file);
const t = await startSession({
	root,
	sessionFile: file,
	contextWindow: Number(window),
	settings: { compaction: { enabled: true, reserveTokens: 4_096, keepRecentTokens: 1 } },
	steps: ["Fresh process, same session."],
});
try {
	await t.session.prompt("One prompt in a fresh process.");
	gc();
	await new Promise((resolve) => setImmediate(resolve));
	gc();
	const m = process.memoryUsage();
	console.log(JSON.stringify({ heap: m.heapUsed, rss: m.rss }));
} finally {
	await t.dispose();
	rmSync(root, { recursive: true, force: true });
}
