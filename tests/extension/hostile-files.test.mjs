// Hostile configuration files on the real Pi agent loop (issue 34, item 5): every file Relay reads
// on Pi's behalf may be replaced by a FIFO, a device or a huge file, by a command the model runs
// (`mkfifo .pi/settings.json`) or by a repository. Relay must never block Pi's thread on one nor
// read it without bound: each is refused with one warning naming the file, Pi goes on, and an
// untrusted project's settings file is never opened at all.
//
// A FIFO that Relay opened blocking would hold Pi's thread for good, and a test waiting on it
// would hang instead of failing: each FIFO has a watchdog, a process that opens and closes it
// (read and write, which never blocks) every WATCHDOG_S seconds, so that a blocked read ends.
// The watchdog orders nothing the test asserts: each step must end within INPUT_MS of wall-clock
// time (`inTime`), far less than WATCHDOG_S, so a step that waited for the watchdog fails. (A
// thread blocked in a read runs no timer, so `within` alone cannot tell: the step ends once the
// watchdog let the read go.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { captureStderr, fifoWithWatchdog, inTime as inTimeOf, startSession } from "./harness.mjs";

const WATCHDOG_S = 10;
/** How long one input may take before the test calls Pi frozen. */
const INPUT_MS = 5000;
const MIB = 1024 * 1024;

/** Put a hostile `kind` of file at `file`: "fifo", "zero" (a link to /dev/zero) or "oversize". */
function plant(kind, file, content = "{}") {
	if (kind === "fifo") return fifoWithWatchdog(file, WATCHDOG_S);
	if (kind === "zero") symlinkSync("/dev/zero", file);
	// Valid JSON, one byte over the 1 MiB cap.
	if (kind === "oversize") writeFileSync(file, content + " ".repeat(MIB + 1 - content.length));
	return () => {};
}

const WHAT = { fifo: "a FIFO", zero: "a link to /dev/zero", oversize: "larger than 1 MiB" };

const WHY = {
	fifo: "a FIFO, not a regular file",
	zero: "a character device, not a regular file",
	oversize: "larger than the 1 MiB limit",
};

/** `step()`'s result; it must settle within INPUT_MS of wall-clock time. */
const inTime = (step, what) => inTimeOf(step, INPUT_MS, what);

/** Two inputs, each bounded; the `relay:` lines they printed. */
async function twoInputs(t) {
	const stderr = await captureStderr(async () => {
		await inTime(() => t.session.prompt("First input after the file changed."), "the first input after the file changed");
		await inTime(() => t.session.prompt("Second input."), "the second input");
	});
	return stderr.filter((line) => line.startsWith("relay:"));
}

for (const kind of ["fifo", "zero", "oversize"]) {
	test(`a trusted project's .pi/settings.json that becomes ${WHAT[kind]} during the session gives one warning naming it, and Pi goes on`, async () => {
		const t = await startSession({ steps: ["one", "two", "three"] });
		let stop = () => {};
		try {
			await t.session.prompt("Before.");
			mkdirSync(join(t.cwd, ".pi"), { recursive: true });
			// The oversize file sets a value that would show if it were read.
			stop = plant(kind, join(t.cwd, ".pi", "settings.json"), '{"relay":{"enabled":false}}');
			const lines = await twoInputs(t);
			assert.deepEqual(lines, [`relay: project settings (.pi/settings.json): cannot be read (${WHY[kind]}); ignored`]);
			assert.equal(t.requests.length, 3, "every input reached the model");
		} finally {
			stop();
			await t.dispose();
		}
	});

	test(`a budget file (context-budget.json) that becomes ${WHAT[kind]} during the session gives one warning naming it, and Pi goes on`, async () => {
		const t = await startSession({ steps: ["one", "two", "three"] });
		let stop = () => {};
		try {
			await t.session.prompt("Before.");
			const file = join(t.agentDir, "context-budget.json");
			stop = plant(kind, file, '{"mode":"enforce"}');
			const lines = await twoInputs(t);
			assert.deepEqual(lines, [`relay: ${file}: cannot read the budget configuration (${WHY[kind]}); using safe observe mode`]);
			assert.equal(t.requests.length, 3, "every input reached the model");
		} finally {
			stop();
			await t.dispose();
		}
	});
}

for (const kind of ["fifo", "zero"]) {
	test(`an untrusted project's .pi/settings.json that is ${kind === "zero" ? "a link to /dev/zero" : "a FIFO"} is never opened: no warning, and Pi goes on`, async () => {
		const root = mkdtempSync(join(tmpdir(), "relay-test-"));
		mkdirSync(join(root, "work", ".pi"), { recursive: true });
		const stop = plant(kind, join(root, "work", ".pi", "settings.json"));
		let t, starting;
		try {
			const lines = await captureStderr(async () => {
				t = await inTime(() => (starting = startSession({ root, projectTrusted: false, steps: ["one", "two"] })), "the session start");
				await inTime(() => t.session.prompt("First."), "the first input");
				await inTime(() => t.session.prompt("Second."), "the second input");
			});
			assert.deepEqual(
				lines.filter((line) => line.startsWith("relay:")),
				[],
				"an untrusted project's file is not Relay's to read",
			);
			assert.equal(t.requests.length, 2);
		} finally {
			stop();
			// A start that failed its bound still ends, and is disposed of (its environment too).
			await (t ?? (await starting?.catch(() => undefined)))?.dispose();
		}
	});
}

test("a guard library (lib/guards.ts) that is a FIFO does not hold Pi's start-up: one warning naming it, and the guard is unavailable", async () => {
	const root = mkdtempSync(join(tmpdir(), "relay-test-"));
	const file = join(root, "agent", "lib", "guards.ts");
	mkdirSync(join(root, "agent", "lib"), { recursive: true });
	const stop = plant("fifo", file);
	let t, starting;
	try {
		const lines = await captureStderr(async () => {
			t = await inTime(() => (starting = startSession({ root, steps: ["one", "two"] })), "the session start");
			await inTime(() => t.session.prompt("First."), "the first input");
			await inTime(() => t.session.prompt("Second."), "the second input");
		});
		assert.deepEqual(
			lines.filter((line) => line.startsWith("relay:")),
			[`relay: guard library (${file}): not loaded (a FIFO, not a regular file); the context guard is unavailable`],
		);
		assert.equal(t.requests.length, 2);
	} finally {
		stop();
		await (t ?? (await starting?.catch(() => undefined)))?.dispose();
	}
});
