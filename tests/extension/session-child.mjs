// Child process of session-damage.test.mjs (not a test file itself): on the real Pi agent loop,
// writes a note, then a handoff that commits, and kills itself with SIGKILL right after Pi wrote
// Relay's reset marker entry to the session file, before the compaction entry. The parent gives
// the root folder (RELAY_CHILD_ROOT) and reads the session file it leaves behind.
import { startSession, tool } from "./harness.mjs";
import { HANDOFF, enforce, WINDOW } from "./budget-helpers.mjs";

const root = process.env.RELAY_CHILD_ROOT;
process.env.PI_CONTEXT_BUDGET_STATE_DIR = `${root}/state/context-budget`;
const t = await startSession({
	root,
	contextWindow: WINDOW,
	settings: enforce(),
	steps: [
		{ ...tool("notes_write_file", { path: "plan.md", content: "NOTE-5150: the plan" }), tokens: 5_000 },
		{ text: "Noted.", tokens: 5_200 },
		{ ...tool("context_handoff", HANDOFF), tokens: 36_000 },
		"never reached",
	],
});
const append = t.sessionManager.appendCustomEntry.bind(t.sessionManager);
t.sessionManager.appendCustomEntry = (customType, data) => {
	const id = append(customType, data);
	if (customType === "relay/reset") {
		process.stdout.write(JSON.stringify({ file: t.sessionManager.getSessionFile(), marker: id }) + "\n");
		process.kill(process.pid, "SIGKILL");
	}
	return id;
};
await t.session.prompt("USER-PROMPT-1: write the plan.");
await t.session.prompt("USER-PROMPT-2: hand off now.");
process.stdout.write(JSON.stringify({ error: "the reset marker was never appended" }) + "\n");
