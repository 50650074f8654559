// Window resets on the real Pi agent loop: new_context, the borrowed-turn fallback, overflow, the
// idle pre-prompt crossing, consecutive windows, queued follow-ups, aborts, /relay off, /compact.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { captureStderr, joined, ofType, outsideInProgress, readJsonl, roles, startSession, textOf, tool, within } from "./harness.mjs";
import { budgetEnv } from "./budget-helpers.mjs";

// Pi starts its own summarizer only on threshold crossings it can compact; a tiny keep makes any
// window compactable (pi-host-facts.md §5).
const COMPACTABLE = { compaction: { enabled: true, keepRecentTokens: 1 } };

test("new_context: the next request holds only the boot block and one hidden continuation", async () => {
	const t = await startSession({
		steps: [
			"Working on OLD-TOPIC.",
			tool("notes_write_file", { path: "plan.md", content: "next: step 2" }),
			tool("new_context"),
			"Resumed from plan.md.",
		],
	});
	try {
		await t.session.prompt("Start OLD-TOPIC.");
		await t.session.prompt("Write a note, then reset.");
		assert.equal(t.requests.length, 4, "the reset needs no extra model call beyond the continuation");
		const fresh = t.requests[3];
		assert.deepEqual(roles(fresh), ["user", "user"], "boot block envelope + continuation");
		assert.match(textOf(fresh.filter((m) => m.role === "user")[1].content), /fresh context window you asked for/);
		const text = joined(fresh);
		assert.match(text, /<context_window>/);
		assert.match(text, /plan\.md/, "the notes index lists the note");
		assert.ok(!outsideInProgress(text).includes("OLD-TOPIC"), "old conversation is out of the provider context");
		assert.match(text, /<last_words>\nWorking on OLD-TOPIC\.\n<\/last_words>/, "but for the model's last words");
		assert.equal(ofType(t, "compaction").length, 1);
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 1);
		const details = ofType(t, "compaction")[0].details;
		assert.equal(details.relay, "window");
		assert.match(details.windowId, /^pcw:.+:[0-9a-f]{8}$/);
		assert.match(details.previousWindowId, /:root$/);
		// The old conversation stays in the session.
		assert.ok(t.sessionManager.getBranch().some((e) => e.type === "message" && textOf(e.message.content).includes("OLD-TOPIC")));
	} finally {
		await t.dispose();
	}
});

test("new_context twice in one run reports the pending reset and resets once", async () => {
	const t = await startSession({
		steps: [{ tools: [tool("new_context"), tool("new_context")] }, "continued"],
	});
	try {
		await t.session.prompt("Reset twice.");
		const results = t.toolResults().filter((r) => r.toolName === "new_context");
		assert.equal(results.length, 2);
		assert.match(results[1].text, /already pending/);
		assert.equal(ofType(t, "compaction").length, 1);
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 1);
	} finally {
		await t.dispose();
	}
});

test("consecutive resets open distinct windows that name their predecessors", async () => {
	const t = await startSession({
		steps: [tool("new_context"), "window two", tool("new_context"), "window three"],
	});
	try {
		await t.session.prompt("First reset.");
		await t.session.prompt("Second reset.");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 2);
		const [a, b] = compactions.map((c) => c.details);
		assert.notEqual(a.windowId, b.windowId);
		assert.equal(b.previousWindowId, a.windowId);
		assert.match(compactions[1].summary, new RegExp(`previous_window_id: ${b.previousWindowId}`));
		assert.match(compactions[1].summary, /first_window_id: pcw:.+:root/);
	} finally {
		await t.dispose();
	}
});

test("threshold crossing mid-run: one borrowed note-taking turn, no summarizer, then a reset at its end and one continuation", async () => {
	const t = await startSession({
		contextWindow: 100_000,
		settings: COMPACTABLE,
		steps: [
			{ ...tool("notes_append_to_file", { path: "log.md", content: "did step A\n" }), tokens: 90_000 },
			// The borrowed turn: the reset follows as soon as it ends.
			tool("notes_write_file", { path: "state.md", content: "A done; next B" }),
			"Continuing with B from state.md.",
		],
	});
	try {
		await t.session.prompt("Do A then B.");
		const steers = ofType(t, "custom_message", "relay/notes-steer");
		assert.equal(steers.length, 1, "exactly one borrowed turn");
		// The borrowed turn's request carries the steer.
		assert.match(joined(t.requests[1]), /will be reset as soon as you finish this turn/);
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1, "exactly one reset");
		assert.equal(compactions[0].details.source, "fallback");
		assert.match(compactions[0].summary, /state\.md/);
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 1);
		assert.equal(t.requests.length, 3, "no summarizer call, no turn after the borrowed one in the old window");
		assert.deepEqual(roles(t.requests[2]), ["user", "user"]);
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
	}
});

test("overflow resets at once and restates the dropped request", async () => {
	const t = await startSession({
		contextWindow: 100_000,
		settings: COMPACTABLE,
		steps: ["First answer.", { error: "prompt is too long: 250000 tokens > 100000 maximum" }, "Recovered in a fresh window."],
	});
	try {
		await t.session.prompt("First question.");
		await t.session.prompt("Please refactor the MODULE-X loader.");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1);
		assert.equal(compactions[0].details.source, "overflow");
		assert.match(compactions[0].summary, /<pending_user_request>[\s\S]*MODULE-X[\s\S]*<\/pending_user_request>/);
		assert.equal(ofType(t, "custom_message", "relay/notes-steer").length, 0, "overflow never borrows a turn");
		const retry = t.requests.at(-1);
		assert.match(textOf(retry.find((m) => m.role === "user").content), /<context_window>/);
		assert.match(joined(retry), /MODULE-X/);
		const last = t.sessionManager.getBranch().at(-1);
		assert.equal(textOf(last.message.content), "Recovered in a fresh window.");
	} finally {
		await t.dispose();
	}
});

test("a crossing found before a new prompt resets directly, without a borrowed turn", async () => {
	// The first session runs with Pi's compaction off and ends far above the threshold.
	const first = await startSession({
		contextWindow: 100_000,
		settings: { compaction: { enabled: false } },
		steps: [{ text: "Big answer.", tokens: 95_000 }],
	});
	await first.session.prompt("Produce a big answer.");
	const file = first.sessionManager.getSessionFile();
	await first.dispose();

	const t = await startSession({
		root: first.root,
		sessionFile: file,
		contextWindow: 100_000,
		settings: COMPACTABLE,
		steps: ["Answer in the fresh window."],
	});
	try {
		await t.session.prompt("Next question.");
		assert.equal(ofType(t, "custom_message", "relay/notes-steer").length, 0);
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1);
		assert.equal(compactions[0].details.source, "threshold");
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 0, "the user's prompt is the continuation");
		const request = t.requests.at(-1);
		assert.deepEqual(roles(request), ["user", "user"]);
		assert.match(textOf(request.at(-1).content), /Next question/);
	} finally {
		await t.dispose();
	}
});

test("a follow-up queued during the run is delivered once, before the reset", async () => {
	let t;
	t = await startSession({
		steps: [
			() => {
				t.session.followUp("QUEUED-FOLLOWUP please");
				return tool("new_context");
			},
			"Answering the follow-up.",
			"Continuing after the reset.",
		],
	});
	try {
		await t.session.prompt("Reset with a queued follow-up.");
		const users = t.sessionManager
			.getBranch()
			.filter((e) => e.type === "message" && e.message.role === "user" && textOf(e.message.content).includes("QUEUED-FOLLOWUP"));
		assert.equal(users.length, 1, "the follow-up is neither dropped nor replayed");
		assert.equal(ofType(t, "compaction").length, 1);
		const branch = t.sessionManager.getBranch();
		const followIdx = branch.indexOf(users[0]);
		const compactIdx = branch.findIndex((e) => e.type === "compaction");
		assert.ok(followIdx < compactIdx, "delivered before the reset");
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 1, "one continuation after the reset");
	} finally {
		await t.dispose();
	}
});

test("a user abort clears the pending reset: no reset, no continuation", async () => {
	let t;
	const started = Promise.withResolvers();
	const scheduled = Promise.withResolvers();
	const slowTool = (pi) => {
		pi.registerTool({
			name: "slow_tool",
			label: "slow",
			description: "waits until aborted",
			parameters: { type: "object", properties: {} },
			async execute(_id, _params, signal) {
				assert.ok(signal, "Pi hands the tool an abort signal");
				const aborted = new Promise((resolve) => signal.addEventListener("abort", resolve));
				started.resolve();
				await aborted;
				return { content: [{ type: "text", text: "stopped" }], details: {} };
			},
		});
		// The reset request is really pending when the user aborts: new_context answered first.
		pi.on("tool_result", (event) => {
			if (event.toolName === "new_context") scheduled.resolve(textOf(event.content));
		});
	};
	t = await startSession({
		extraFactories: [slowTool],
		steps: [{ tools: [tool("new_context"), tool("slow_tool")] }, "after abort"],
	});
	try {
		const running = t.session.prompt("Reset and wait.");
		await within(started.promise, 10_000, "slow_tool to start");
		const answer = await within(scheduled.promise, 10_000, "new_context's result");
		assert.match(answer, /as soon as this run settles/, "the reset was scheduled");
		await t.session.abort();
		await running.catch(() => {});
		assert.equal(ofType(t, "compaction").length, 0, "no reset after an abort");
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 0);
		await t.session.prompt("Carry on.");
		assert.equal(ofType(t, "compaction").length, 0, "the next run does not inherit the aborted request");
	} finally {
		await t.dispose();
	}
});

test("/compact is answered with a reset and spends no model call", async () => {
	const t = await startSession({ settings: COMPACTABLE, steps: ["One.", "Two."] });
	try {
		await t.session.prompt("First.");
		const before = t.requests.length;
		await t.session.compact();
		assert.equal(t.requests.length, before, "no summary request");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1);
		assert.equal(compactions[0].details.source, "manual");
		assert.match(compactions[0].summary, /<context_window>/);
		await t.session.prompt("Second.");
		assert.deepEqual(roles(t.requests.at(-1)), ["user", "user"]);
		assert.match(joined(t.requests.at(-1)), /<context_window>[\s\S]*Second\./);
	} finally {
		await t.dispose();
	}
});

test("/relay off restores Pi's own compaction; /relay on brings Relay back", async () => {
	const t = await startSession({ settings: COMPACTABLE, steps: ["One.", "PI-SUMMARY of the conversation", "PI-SUMMARY of the turn prefix"] });
	try {
		await t.session.prompt("First.");
		await t.session.prompt("/relay off");
		await t.session.compact();
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1);
		assert.match(compactions[0].summary, /PI-SUMMARY/, "Pi's summarizer produced this compaction");
		assert.equal(compactions[0].details?.relay, undefined);
		t.rescript(tool("new_context"), "no reset while off");
		await t.session.prompt("Try a reset while off.");
		const result = t.toolResults().findLast((r) => r.toolName === "new_context");
		assert.ok(result, "new_context ran while Relay was off");
		assert.equal(result.isError, true);
		assert.match(result.text, /off/);
		await t.session.prompt("/relay on");
		t.script(tool("new_context"), "fresh");
		await t.session.prompt("Reset now.");
		assert.equal(ofType(t, "compaction").length, 2);
	} finally {
		await t.dispose();
	}
});

test("reloading the JSONL after resets shows the same windows and no duplicate boot block", async () => {
	const t = await startSession({ steps: [tool("new_context"), "w2", tool("new_context"), "w3"] });
	await t.session.prompt("Reset one.");
	await t.session.prompt("Reset two.");
	const file = t.sessionManager.getSessionFile();
	await t.dispose();
	const again = await startSession({ root: t.root, sessionFile: file, steps: [tool("history_list_windows", { recent_first: false }), "ok"] });
	try {
		await again.session.prompt("List windows.");
		const windows = JSON.parse(again.toolResults().at(-1).text).windows;
		assert.equal(windows.length, 3);
		const lines = readJsonl(file);
		assert.equal(lines.filter((l) => l.type === "custom_message" && l.customType === "relay/boot").length, 1);
		assert.equal(lines.filter((l) => l.type === "compaction").length, 2);
	} finally {
		await again.dispose();
	}
});

test("an overflow Pi does not retry (the reply came) resets without restating an answered request", async () => {
	const t = await startSession({
		contextWindow: 100_000,
		settings: COMPACTABLE,
		// A reply whose input exceeded the window: Pi's silent-overflow case, not retried.
		steps: ["First answer.", { text: "A complete answer to ANSWERED-REQ.", tokens: { input: 150_000, totalTokens: 150_100 } }, "Next answer."],
	});
	try {
		await t.session.prompt("First question.");
		await t.session.prompt("Please handle ANSWERED-REQ.");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1);
		assert.equal(compactions[0].details.source, "overflow");
		assert.ok(!/<pending_user_request>/.test(compactions[0].summary), "nothing is pending: the request was answered");
	} finally {
		await t.dispose();
	}
});

/** A tool that runs until the run is aborted; `started` resolves once it is running. */
function slowToolFactory() {
	let started = Promise.withResolvers();
	const factory = (pi) => {
		pi.registerTool({
			name: "slow_tool",
			label: "slow",
			description: "waits until aborted",
			parameters: { type: "object", properties: {} },
			async execute(_id, _params, signal) {
				const aborted = new Promise((resolve) => signal.addEventListener("abort", resolve));
				started.resolve();
				await aborted;
				return { content: [{ type: "text", text: "stopped" }], details: {} };
			},
		});
	};
	return { factory, started: () => started.promise, rearm: () => (started = Promise.withResolvers()) };
}

test("a window that borrowed its turn never borrows a second one, also after /reload", async () => {
	const slow = slowToolFactory();
	const t = await startSession({
		contextWindow: 100_000,
		settings: COMPACTABLE,
		extraFactories: [slow.factory],
		steps: [
			// Crosses Pi's threshold (90,000 > 100,000 - 16,384) between turns: the borrowed turn.
			{ ...tool("notes_append_to_file", { path: "log.md", content: "step A\n" }), tokens: 90_000 },
			// The note-taking turn runs a tool the user interrupts: no reset, the window goes on.
			{ ...tool("slow_tool"), tokens: 10_000 },
		],
	});
	try {
		const running = t.session.prompt("Do A.");
		await within(slow.started(), 10_000, "the borrowed turn's tool to start");
		await t.session.abort();
		await running.catch(() => {});
		assert.equal(ofType(t, "custom_message", "relay/notes-steer").length, 1, "the window borrowed its turn");
		assert.equal(ofType(t, "compaction").length, 0, "the aborted run reset nothing");

		// /reload re-evaluates the extension: a new engine that only knows the branch.
		await t.session.reload();
		t.rescript(
			{ ...tool("notes_append_to_file", { path: "log.md", content: "step B\n" }), tokens: 90_000 },
			"B done.",
		);
		await t.session.prompt("Do B.");
		assert.equal(ofType(t, "custom_message", "relay/notes-steer").length, 1, "no second borrowed turn in the window");
		// The crossing in a window that already had its turn is overdue: reset at the next turn end.
		const [reset] = ofType(t, "compaction");
		assert.equal(reset.details.source, "fallback");
		const steersIn = (r) => joined(r).split("will be reset as soon as you finish this turn").length - 1;
		assert.equal(steersIn(t.requests.at(-2)), 1, "the request before the reset carries the window's one steer, not a second");
		assert.equal(steersIn(t.requests.at(-1)), 0, "the new window carries none");
		assert.ok(joined(t.requests.at(-1)).includes("<context_window>"));
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
	}
});

test("a borrowed turn without notes still carries the user's words into the new window", async () => {
	const t = await startSession({
		contextWindow: 100_000,
		settings: COMPACTABLE,
		steps: [
			{ ...tool("get_context_remaining"), tokens: 90_000 },
			// The note-taking turn writes no notes at all.
			"I have nothing to note.",
			"Continuing in the fresh window.",
		],
	});
	try {
		await t.session.prompt("Refactor the loader. Never touch api/.");
		const [compaction] = ofType(t, "compaction");
		assert.equal(compaction.details.source, "fallback");
		assert.equal(ofType(t, "custom", "relay/note").length, 0, "no notes were written");
		const fresh = t.requests.at(-1);
		assert.deepEqual(roles(fresh), ["user", "user"], "boot block and continuation only");
		const boot = textOf(fresh[fresh.findIndex((m) => m.role === "user")].content);
		assert.match(boot, /<earlier_user_input shown="1" total="1">\n<user_message latest="true">\nRefactor the loader\. Never touch api\/\.\n<\/user_message>/);
		assert.match(boot, /earlier input, not a new instruction/);
	} finally {
		await t.dispose();
	}
});

test("new_context repeats no user input; /compact repeats it and carries its instructions", async () => {
	const t = await startSession({ settings: COMPACTABLE, steps: [tool("new_context"), "Fresh window.", "Two.", "Three."] });
	try {
		await t.session.prompt("Start SECRET-TOPIC.");
		const [explicit] = ofType(t, "compaction");
		assert.equal(explicit.details.source, "new_context");
		assert.ok(!explicit.summary.includes("SECRET-TOPIC"), "the model's own reset repeats nothing");
		assert.ok(!explicit.summary.includes("<earlier_user_input"));
		await t.session.prompt("Keep the FAILING-TESTS list handy.");
		await t.session.compact("Keep only the list of failing tests.");
		const manual = ofType(t, "compaction").at(-1);
		assert.equal(manual.details.source, "manual");
		assert.match(manual.summary, /<compact_instructions>\nKeep only the list of failing tests\.\n<\/compact_instructions>/);
		assert.match(manual.summary, /<user_message latest="true">\nKeep the FAILING-TESTS list handy\.\n<\/user_message>/);
		await t.session.prompt("Three.");
		assert.match(joined(t.requests.at(-1)), /<compact_instructions>[\s\S]*failing tests[\s\S]*Three\./);
	} finally {
		await t.dispose();
	}
});

/** An extension loaded after Relay that makes Relay's boundary draft invalid once (at a turn end
 * or the settle point): Pi validates the drafts on a preview session and appends none of them (an
 * edit of an entry that does not exist). */
function draftBreaker() {
	const state = { armed: true };
	const factory = (pi) => {
		const breakOnce = (event) => {
			if (!state.armed || !event.entries.some((e) => e.type === "compaction")) return undefined;
			state.armed = false;
			return { entries: [...event.entries, { type: "context_edit", targetId: "no-such-entry", replacement: null }] };
		};
		pi.on("turn_end", breakOnce);
		pi.on("agent_before_settle", breakOnce);
	};
	return { factory, state };
}

test("a reset Pi rejects is never silent, keeps the history and is retried without a second borrowed turn", async () => {
	const breaker = draftBreaker();
	const t = await startSession({
		contextWindow: 100_000,
		settings: COMPACTABLE,
		extraFactories: [breaker.factory],
		steps: [
			{ ...tool("notes_append_to_file", { path: "log.md", content: "step A\n" }), tokens: 90_000 },
			"Notes written.",
			{ ...tool("get_context_remaining"), tokens: 91_000 },
			"Answered the next prompt.",
			"Continuing in the fresh window.",
		],
	});
	try {
		const stderr = await captureStderr(() => t.session.prompt("Do A. Never touch api/."));
		assert.equal(breaker.state.armed, false, "the breaker saw Relay's reset");
		assert.ok(t.errors.some((e) => /Invalid boundary entries/.test(e.error)), JSON.stringify(t.errors));
		assert.equal(ofType(t, "compaction").length, 0, "Pi appended no reset");
		assert.ok(stderr.some((l) => /relay: the context window was not reset \(Pi did not apply Relay's fallback reset/.test(l)), stderr.join("\n"));
		const failed = ofType(t, "custom_message", "relay/reset-failed");
		assert.equal(failed.length, 1);
		assert.match(textOf(failed[0].content), /The context window was NOT reset/);
		// History is intact: the prompt and the borrowed turn are still in the window.
		const texts = t.sessionManager.getBranch().map((e) => (e.type === "message" ? textOf(e.message.content) : ""));
		assert.ok(texts.includes("Do A. Never touch api/.") && texts.includes("Notes written."));

		await t.session.prompt("Next question.");
		assert.match(joined(t.requests[2]), /The context window was NOT reset/, "the model read that the window did not reset");
		assert.equal(ofType(t, "custom_message", "relay/notes-steer").length, 1, "the retry borrowed no second turn");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1, "the next run's settle point reset the window");
		assert.equal(compactions[0].details.source, "fallback");
		assert.match(compactions[0].summary, /Never touch api\/[\s\S]*Next question\./, "both user messages, oldest first");
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Continuing in the fresh window.");
	} finally {
		await t.dispose();
	}
});

test("a /compact another extension cancels is reported to the user and changes nothing", async () => {
	const veto = (pi) => pi.on("session_before_compact", () => ({ cancel: true }));
	const t = await startSession({ settings: COMPACTABLE, extraFactories: [veto], steps: ["One.", "Two."] });
	try {
		await t.session.prompt("First.");
		const stderr = await captureStderr(async () => {
			await assert.rejects(t.session.compact(), /cancel/i);
		});
		assert.ok(stderr.some((l) => /not reset \(Pi did not apply Relay's manual reset[\s\S]*run \/compact again/.test(l)), stderr.join("\n"));
		assert.equal(ofType(t, "compaction").length, 0);
		assert.equal(ofType(t, "custom_message", "relay/reset-failed").length, 1);
		await t.session.prompt("Second.");
		assert.equal(ofType(t, "compaction").length, 0, "a rejected /compact is not retried behind the user's back");
	} finally {
		await t.dispose();
	}
});

test("/relay off survives /reload in the same process", async () => {
	const t = await startSession({ settings: COMPACTABLE, steps: ["One.", "PI-SUMMARY of the conversation", "PI-SUMMARY of the turn prefix"] });
	try {
		await t.session.prompt("First.");
		await t.session.prompt("/relay off");
		const stderr = await captureStderr(() => t.session.reload());
		assert.ok(stderr.some((l) => /relay: off/.test(l)), "the reloaded Relay says it is still off");
		await t.session.compact();
		const [compaction] = ofType(t, "compaction");
		assert.match(compaction.summary, /PI-SUMMARY/, "Pi's own compaction applies after the reload");
		assert.equal(compaction.details?.relay, undefined);
		await t.session.prompt("/relay on");
		await t.session.reload();
		t.rescript(tool("new_context"), "fresh");
		await t.session.prompt("Reset now.");
		assert.equal(ofType(t, "compaction").at(-1).details.source, "new_context", "on survives the reload too");
	} finally {
		await t.dispose();
	}
});

test("with Pi's compaction.enabled false, Relay never resets on its own; the reminder, new_context and /compact still work", async () => {
	const t = await startSession({
		contextWindow: 100_000,
		settings: { compaction: { enabled: false, keepRecentTokens: 1 } },
		steps: [{ ...tool("get_context_remaining"), tokens: 90_000 }, "Still here.", tool("new_context"), "Fresh window.", "After compact."],
	});
	try {
		await t.session.prompt("Work past the threshold.");
		assert.equal(ofType(t, "custom_message", "relay/notes-steer").length, 0, "no borrowed turn: Pi never calls the threshold hook");
		assert.equal(ofType(t, "compaction").length, 0);
		assert.equal(ofType(t, "custom_message", "relay/reminder").length, 1, "the low-budget reminder still comes");
		await t.session.prompt("Reset now.");
		assert.equal(ofType(t, "compaction").at(-1).details.source, "new_context");
		await t.session.prompt("And compact.");
		await t.session.compact();
		assert.equal(ofType(t, "compaction").at(-1).details.source, "manual");
	} finally {
		await t.dispose();
	}
});

test("/tree with a summary across a reset is cancelled with a notice; within a window or without a summary it proceeds", async () => {
	const t = await startSession({ settings: COMPACTABLE, steps: ["Answer one.", tool("new_context"), "Window two.", "BRANCH-SUMMARY of the window-two detour"] });
	try {
		await t.session.prompt("One.");
		const target = t.sessionManager.getBranch().find((e) => e.type === "message" && textOf(e.message.content) === "Answer one.");
		await t.session.prompt("Reset.");
		assert.equal(ofType(t, "compaction").length, 1);
		const leaf = t.sessionManager.getLeafId();
		const before = t.requests.length;
		let result;
		const stderr = await captureStderr(async () => {
			result = await t.session.navigateTree(target.id, { summarize: true });
		});
		assert.equal(result.cancelled, true);
		assert.equal(t.sessionManager.getLeafId(), leaf, "the navigation did not happen");
		assert.equal(t.requests.length, before, "Pi's summarizer was never called");
		assert.ok(stderr.some((l) => /navigation cancelled[\s\S]*over 1 context window that a reset already ended/.test(l)), stderr.join("\n"));
		// Inside the current window, Pi's summarizer is Pi's business.
		t.rescript("Window two, second answer.", "BRANCH-SUMMARY of the detour");
		const inWindow = t.sessionManager.getLeafId();
		await t.session.prompt("Detour.");
		const ok = await t.session.navigateTree(inWindow, { summarize: true });
		assert.equal(ok.cancelled, false);
		assert.match(ofType(t, "branch_summary").at(-1).summary, /BRANCH-SUMMARY/);
		// Without a summary, crossing the reset is fine.
		const plain = await t.session.navigateTree(target.id, { summarize: false });
		assert.equal(plain.cancelled, false);
		assert.equal(t.sessionManager.getLeafId(), target.id);
	} finally {
		await t.dispose();
	}
});

/** Point Relay's budget files at a temp folder (no config file: the settings decide). */
function budgetFiles(root) {
	return budgetEnv(root).restore;
}

test("a follow-up queued while a handoff commits does not postpone the reset and is delivered once, after it", async () => {
	const root = mkdtempSync(join(tmpdir(), "relay-queued-"));
	const restore = budgetFiles(root);
	let t;
	t = await startSession({
		root,
		contextWindow: 200_000,
		settings: {
			compaction: { enabled: false },
			relay: { budget: { mode: "enforce", main: { soft: 20_000, handoff: 30_000, hard: 60_000, minProgress: 1_000 } } },
		},
		steps: [
			{ text: "Floor set.", tokens: 5_000 },
			() => {
				// The user queues a follow-up while the model writes its handoff.
				t.session.followUp("QUEUED-FOLLOWUP please also update the changelog");
				return { ...tool("context_handoff", { goal: "GOAL-1", next_step: "NEXT-1", facts: "FACTS-1" }), tokens: 36_000 };
			},
			// The tool batch's own next turn runs in the new window, on the boot block (the handoff).
			"Resumed from the handoff.",
			// Pi delivers a follow-up when the run would stop: then it is answered.
			"Answering the follow-up in the fresh window.",
		],
	});
	try {
		await t.session.prompt("Start.");
		await t.session.prompt("Keep going.");
		const branch = t.sessionManager.getBranch();
		const followups = branch.filter((e) => e.type === "message" && e.message.role === "user" && textOf(e.message.content).includes("QUEUED-FOLLOWUP"));
		assert.equal(followups.length, 1, "delivered once, neither dropped nor replayed");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1, "the queued follow-up did not postpone the reset");
		assert.equal(compactions[0].details.source, "handoff");
		assert.ok(branch.indexOf(compactions[0]) < branch.indexOf(followups[0]), "the follow-up opens the new window");
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 0, "no hidden continuation beside a queued prompt");
		assert.ok(!t.requests.slice(0, 2).some((r) => joined(r).includes("QUEUED-FOLLOWUP")), "not delivered into the old window");
		assert.deepEqual(roles(t.requests[2]), ["user"], "the new window's first request: the boot block with the handoff");
		const fresh = t.requests.at(-1);
		assert.match(joined(fresh), /<handoff>[\s\S]*GOAL-1[\s\S]*QUEUED-FOLLOWUP/);
		assert.equal(t.requests.length, 4);
		assert.equal(textOf(branch.at(-1).message.content), "Answering the follow-up in the fresh window.");
	} finally {
		await t.dispose();
		restore();
	}
});

test("a steering message sent during a run is delivered once, before the reset", async () => {
	let t;
	t = await startSession({
		steps: [
			() => {
				t.session.steer("STEER-NOW use the v2 API");
				return tool("new_context");
			},
			"Noted the steer.",
			"Continuing after the reset.",
		],
	});
	try {
		await t.session.prompt("Reset with a steer on the way.");
		const branch = t.sessionManager.getBranch();
		const steers = branch.filter((e) => e.type === "message" && e.message.role === "user" && textOf(e.message.content).includes("STEER-NOW"));
		assert.equal(steers.length, 1, "the steer is neither dropped nor replayed");
		const compactionAt = branch.findIndex((e) => e.type === "compaction");
		assert.ok(compactionAt > 0, "the reset happened");
		assert.ok(branch.indexOf(steers[0]) < compactionAt, "delivered before the reset");
		assert.match(joined(t.requests[1]), /STEER-NOW/, "the model saw the steer in the old window");
		assert.ok(!joined(t.requests.at(-1)).includes("STEER-NOW"), "the new window does not replay it");
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 1);
	} finally {
		await t.dispose();
	}
});

// Issue 24, item 12: the model was told a new window is coming; a provider error that ends the run
// (here the request after the batch that called new_context) must not drop that reset. It is installed before the user's next input
// runs (Pi's compaction started from `input`), so the next request is the new window.
test("new_context whose run ends in a provider error resets before the next input runs", async () => {
	const t = await startSession({
		settings: COMPACTABLE,
		steps: [
			"Working on ERRORED-TOPIC.",
			// A sibling that does not terminate: the run goes on in the old window and fails there.
			{ tools: [tool("notes_write_file", { path: "plan.md", content: "next: step 2" }), tool("new_context")] },
			{ error: "500 Internal Server Error: upstream connect error" },
			"Answered in the fresh window.",
		],
	});
	try {
		await t.session.prompt("Start ERRORED-TOPIC.");
		await t.session.prompt("Reset the window, then go on.");
		assert.equal(ofType(t, "compaction").length, 0, "the failed run installs nothing");
		assert.equal(t.requests.length, 3);
		await t.session.prompt("NEXT-INPUT-5151: go on.");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1);
		assert.equal(compactions[0].details.source, "new_context");
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 0, "the user's input is the continuation");
		assert.equal(t.requests.length, 4, "no summarizer call, no extra continuation request");
		const fresh = t.requests[3];
		assert.match(textOf(fresh.find((m) => m.role === "user").content), /<context_window>/);
		assert.match(joined(fresh), /NEXT-INPUT-5151/);
		assert.ok(!outsideInProgress(joined(fresh)).includes("ERRORED-TOPIC"), "the old window is out of the provider context");
		assert.match(joined(fresh), /<last_words>\nWorking on ERRORED-TOPIC\.\n<\/last_words>/, "but for the model's last words");
		assert.match(joined(fresh), /plan\.md/, "the notes index lists the note");
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Answered in the fresh window.");
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
	}
});

// Issue 24, item 9: the steer says the window "will be reset as soon as you finish this turn". A
// model that ignores it and calls another tool in its borrowed turn is reset when that turn ends:
// the next request is the new window, not one more turn of the full old one.
test("a borrowed turn spent on other work resets at its own turn end, not one turn later", async () => {
	const t = await startSession({
		contextWindow: 40_000,
		settings: COMPACTABLE,
		steps: [
			{ ...tool("get_context_remaining"), tokens: 30_000 },
			// The borrowed turn: no notes, more work.
			{ ...tool("get_context_remaining"), tokens: 36_000 },
			"Continued in the new window.",
			"never requested",
		],
	});
	try {
		await t.session.prompt("Read everything about OLD-WINDOW-TOPIC.");
		assert.equal(ofType(t, "custom_message", "relay/notes-steer").length, 1, "one borrowed turn");
		assert.match(joined(t.requests[1]), /will be reset as soon as you finish this turn/);
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 1);
		assert.equal(compactions[0].details.source, "fallback");
		assert.equal(t.requests.length, 3, "the request after the borrowed turn is the new window's continuation");
		assert.deepEqual(roles(t.requests[2]), ["user", "user"]);
		assert.match(joined(t.requests[2]), /<context_window>/);
		// The user's words travel in the boot block; the old window's turns do not.
		assert.match(joined(t.requests[2]), /<earlier_user_input[\s\S]*OLD-WINDOW-TOPIC/);
		assert.equal(ofType(t, "custom_message", "relay/continue").length, 1);
		assert.equal(textOf(t.sessionManager.getBranch().at(-1).message.content), "Continued in the new window.");
		assert.equal(t.errors.length, 0, JSON.stringify(t.errors));
	} finally {
		await t.dispose();
	}
});
