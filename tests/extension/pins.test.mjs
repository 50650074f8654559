// The user's pinned instructions (`/relay pin`, `/relay pins`, `/relay unpin`) on the real Pi agent
// loop: a pin stands verbatim in the boot block of every window a reset opens, across automatic
// resets, twenty user messages, a /reload and a resume, until `/relay unpin` removes it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { captureStderr, joined, ofType, startSession, tool } from "./harness.mjs";

// Pi starts its own summarizer only on threshold crossings it can compact; a tiny keep makes any
// window compactable (pi-host-facts.md §5).
const COMPACTABLE = { compaction: { enabled: true, keepRecentTokens: 1 } };

const PIN = "PIN-4417: never push to main; open a pull request instead.";
const PINNED = `<pinned_instructions count="1">\n<pin n="1">\n${PIN}\n</pin>\n</pinned_instructions>\n<recent_notes`;

/** One automatic reset: a reply past the threshold, the borrowed note-taking turn, the continuation. */
const crossing = (tag) => [
	{ ...tool("notes_append_to_file", { path: "log.md", content: `did ${tag}\n` }), tokens: 90_000 },
	tool("notes_write_file", { path: "state.md", content: `${tag} done` }),
	`Continuing after ${tag}.`,
];

/** The notifications `/relay <args>` printed. */
const relay = async (t, args) => (await captureStderr(() => t.session.prompt(`/relay ${args}`))).join("\n");

/** The requests sent since `from`, each the first of its window when it follows a reset. */
const since = (t, from) => t.requests.slice(from);

test("a pin stands in every later window's boot block across automatic resets, twenty messages, a /reload and a resume, until /relay unpin", async () => {
	const chatter = Array.from({ length: 20 }, (_, i) => `Answer ${i + 1}.`);
	const t = await startSession({
		contextWindow: 100_000,
		settings: COMPACTABLE,
		steps: [...crossing("A"), ...crossing("B"), ...chatter, ...crossing("C")],
	});
	let resumed;
	try {
		const said = await relay(t, `pin ${PIN}`);
		assert.match(said, /pinned as 1 of 10/);
		const records = ofType(t, "custom", "relay/pins");
		assert.equal(records.length, 1);
		assert.deepEqual(records[0].data, { v: 1, pins: [PIN] });

		await t.session.prompt("Do A.");
		const afterA = t.requests.length;
		await t.session.prompt("Do B.");
		for (let i = 1; i <= 20; i++) await t.session.prompt(`Message ${i}.`);
		assert.equal(ofType(t, "compaction").length, 2, "two automatic resets");
		for (const c of ofType(t, "compaction")) {
			assert.equal(c.details.source, "fallback");
			assert.ok(c.summary.includes(PINNED), "the boot block holds the pin before the notes index");
		}
		// Every request of the second and third windows carries it (the same bytes each time).
		const later = since(t, afterA - 1);
		assert.ok(later.length >= 22);
		for (const request of later) assert.ok(joined(request).includes(PINNED));

		await t.session.reload();
		assert.match(await relay(t, "pins"), /1 of 10 pinned instructions[\s\S]*\n1\. PIN-4417: never push to main/);
		assert.match(await relay(t, "status"), /\npins: 1 \(/);
		await t.session.prompt("Do C.");
		const compactions = ofType(t, "compaction");
		assert.equal(compactions.length, 3, "a third automatic reset after the reload");
		assert.ok(compactions[2].summary.includes(PINNED));
		assert.ok(joined(t.requests.at(-1)).includes(PINNED));
		const file = t.sessionManager.getSessionFile();
		await t.dispose();

		// A resume of the same session file: the pin comes back from the branch; unpinned, the next
		// window's boot block leaves it out.
		resumed = await startSession({
			root: t.root,
			sessionFile: file,
			contextWindow: 100_000,
			settings: COMPACTABLE,
			steps: [...crossing("D"), ...crossing("E")],
		});
		await resumed.session.prompt("Do D.");
		assert.ok(ofType(resumed, "compaction").at(-1).summary.includes(PINNED));
		assert.ok(joined(resumed.requests.at(-1)).includes(PINNED));
		assert.match(await relay(resumed, "unpin 1"), /unpinned 1 \("PIN-4417/);
		await resumed.session.prompt("Do E.");
		const last = ofType(resumed, "compaction");
		assert.equal(last.length, 5);
		assert.ok(!last[4].summary.includes("pinned_instructions"), "unpinned: not in the next boot block");
		assert.ok(!joined(resumed.requests.at(-1)).includes("PIN-4417"));
		assert.match(await relay(resumed, "pins"), /no pinned instructions/);
		assert.equal(t.errors.length + resumed.errors.length, 0, JSON.stringify([...t.errors, ...resumed.errors]));
	} finally {
		await (resumed ?? t).dispose();
	}
});

test("a pin past a limit is refused with the limit named, and nothing is recorded", async () => {
	const t = await startSession({ steps: [] });
	try {
		assert.match(await relay(t, `pin ${"x".repeat(501)}`), /at most 500 characters and this one has 501/);
		for (let i = 1; i <= 10; i++) assert.match(await relay(t, `pin rule ${i}`), new RegExp(`pinned as ${i} of 10`));
		assert.match(await relay(t, "pin rule 11"), /at most 10 pins, and 10 are pinned/);
		assert.match(await relay(t, "unpin 11"), /"11" is not a pin number; \/relay unpin takes 1 to 10/);
		assert.equal(ofType(t, "custom", "relay/pins").length, 10);
		assert.deepEqual(ofType(t, "custom", "relay/pins").at(-1).data.pins, Array.from({ length: 10 }, (_, i) => `rule ${i + 1}`));
	} finally {
		await t.dispose();
	}
});
