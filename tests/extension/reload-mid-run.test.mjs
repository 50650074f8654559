// A /reload inside a run, on the real Pi agent loop. Pi 1.6 refuses a reload while the run is
// active (`AgentSession.reload`: "Wait for the current response to finish before reloading."); Pi
// 1.3's does not check, so an SDK host, or an extension command in RPC mode (which runs at once,
// even while the agent streams), reloads inside the run, and Relay's new engine starts there
// (`session_start` with `runActive`). The budget policy asks for a handoff once per run: the idle
// request the engine before the reload sent is read back from the branch, and the run's next
// settle point does not ask again.
import { test } from "node:test";
import assert from "node:assert/strict";
import { VERSION } from "@earendil-works/pi-coding-agent";
import { ofType, startSession } from "./harness.mjs";
import { budgetEnv, enforce, newRoot, WINDOW } from "./budget-helpers.mjs";

const PENDING_WORK = Symbol.for("relay.pending-work");
// Below the soft threshold but above idleMinTokens: only the idle path can act.
const IDLE_MIN = 10_000;
const LARGE = 15_000;

test("a reload inside a run after Relay's idle handoff request: Pi 1.6 refuses it; on Pi 1.3 the new engine does not ask a second time in the run", async () => {
	const root = newRoot();
	const env = budgetEnv(root);
	globalThis[PENDING_WORK] = () => 1;
	const attempts = [];
	let t;
	// Reloads once, at the turn end of the model's answer to the handoff request (the run goes on
	// to its settle point after it).
	const reloader = (pi) => {
		pi.on("turn_end", async () => {
			if (!t || attempts.length > 0) return;
			if (ofType(t, "custom_message", "relay/handoff-request").length === 0) return;
			try {
				await t.session.reload();
				attempts.push("reloaded");
			} catch (e) {
				attempts.push(e.message);
			}
		});
	};
	t = await startSession({
		root,
		contextWindow: WINDOW,
		settings: enforce({ idleMinTokens: IDLE_MIN }),
		extraFactories: [reloader],
		steps: [
			{ text: "Started.", tokens: 5_000 },
			{ text: "Waiting for the job.", tokens: LARGE },
			// The answer to the idle request: no handoff, the job is still running.
			{ text: "The job is still running; nothing to hand off yet.", tokens: LARGE + 100 },
			// The third prompt's answer, and the answer to its own idle request.
			{ text: "Checked: still running.", tokens: LARGE + 200 },
			{ text: "Still running.", tokens: LARGE + 300 },
		],
	});
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("Run the job and wait for it.");
		assert.equal(attempts.length, 1, "a reload was attempted inside the run");
		const [major, minor] = VERSION.split(".").map(Number);
		if (major > 1 || minor >= 6) assert.match(attempts[0], /Wait for the current response to finish before reloading/);
		else assert.equal(attempts[0], "reloaded");

		const asks = ofType(t, "custom_message", "relay/handoff-request");
		assert.equal(asks.length, 1, "one handoff request in the run");
		assert.match(asks[0].content, /work is still pending/);
		assert.equal(asks[0].details.idle, true, "the request is marked as the idle one");
		assert.equal(t.requests.length, 3, "the run made three requests: the prompt's, the request's, none after");
		assert.equal(ofType(t, "compaction").length, 0);
		const requested = env.events().filter((e) => e.event === "idle_handoff_requested");
		assert.equal(requested.length, 1, "the new engine logged no second request");

		// The next run is a new one: its settle point may ask again.
		await t.session.prompt("Check again.");
		assert.equal(ofType(t, "custom_message", "relay/handoff-request").length, 2, "a new run asks again");
		assert.deepEqual(t.errors, []);
	} finally {
		delete globalThis[PENDING_WORK];
		await t.dispose();
		env.restore();
	}
});
