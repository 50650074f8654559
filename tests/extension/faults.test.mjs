// Faults under the real Pi agent loop: a full disk and a read-only folder under Relay's state
// folder and the handoff folder. The handoff still resets the window (the next window starts from
// it), the user is told once, and nothing throws into Pi. The faults are real mounts (a 64 KiB
// tmpfs filled to the last byte, a tmpfs mounted read-only), made by faults-child.mjs in a mount
// namespace of its own: `unshare --mount` as root, `unshare --map-root-user --mount` (a user
// namespace) otherwise, so no root is needed. Where neither works the test fails and says what to
// enable; it never skips.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { GOAL, NEXT } from "./budget-helpers.mjs";

const CHILD = fileURLToPath(new URL("./faults-child.mjs", import.meta.url));
const PI_VERSION = fileURLToPath(new URL("../pi-version.mjs", import.meta.url));

/** How to get a mount namespace here: `unshare`'s options, the first that works. */
function namespaceOptions() {
	const candidates = process.getuid?.() === 0 ? [["--mount"], ["--map-root-user", "--mount"]] : [["--map-root-user", "--mount"]];
	const failures = [];
	for (const options of candidates) {
		const probe = spawnSync("unshare", [...options, "true"], { encoding: "utf8" });
		if (probe.error?.code === "ENOENT") {
			assert.fail("the fault tests need `unshare` (util-linux) to mount a tmpfs in a namespace of their own: install util-linux");
		}
		if (probe.status === 0) return options;
		failures.push(`unshare ${options.join(" ")}: ${(probe.stderr || probe.error?.message || `exit ${probe.status}`).trim()}`);
	}
	assert.fail(
		"the fault tests cannot mount a tmpfs: they need a mount namespace, which takes root or unprivileged user " +
			"namespaces. Run them as root, or enable user namespaces (sysctl kernel.unprivileged_userns_clone=1 where " +
			"that key exists, user.max_user_namespaces > 0, and on Ubuntu 23.10+ " +
			"kernel.apparmor_restrict_unprivileged_userns=0). Tried:\n" +
			failures.join("\n"),
	);
}

/** Runs one scenario of faults-child.mjs in its own mount namespace; returns what it saw. */
function runScenario(name) {
	const options = namespaceOptions();
	// On another Pi release (RELAY_PI_PREFIX, `make test-extension`'s second pass) the child resolves Pi there too.
	const imports = process.env.RELAY_PI_PREFIX ? ["--import", PI_VERSION] : [];
	const child = spawnSync("unshare", [...options, process.execPath, ...imports, CHILD, name], { encoding: "utf8", timeout: 120_000 });
	assert.equal(child.signal, null, `the child was killed by ${child.signal}; stderr:\n${child.stderr}`);
	assert.equal(child.status, 0, `unshare ${options.join(" ")}: exit ${child.status}; stderr:\n${child.stderr}`);
	const result = JSON.parse(child.stdout.trim().split("\n").at(-1));
	if (result.setupError) assert.fail(`unshare ${options.join(" ")}: ${result.setupError}`);
	rmSync(result.root, { recursive: true, force: true });
	return { ...result, childStderr: child.stderr };
}

/** The handoff reset the window although none of Relay's files could be written. */
function assertResetDespite(r, expected) {
	// The reset happened, from the handoff.
	assert.deepEqual(r.compactionSources, ["handoff"], "the handoff reset the window");
	assert.match(r.freshRequest, /<handoff>[\s\S]*GOAL-7731[\s\S]*NEXT-4410[\s\S]*<\/handoff>/, "the next window starts from the handoff");
	assert.ok(r.freshRequest.includes(GOAL) && r.freshRequest.includes(NEXT));
	assert.equal(r.lastText, "Resumed from the handoff kept in the session.");

	// The model is told the file is missing; the tool did not fail.
	assert.equal(r.handoffResults.length, 1);
	const [result] = r.handoffResults;
	assert.equal(result.isError, false, result.text);
	const reply = JSON.parse(result.text);
	assert.equal(reply.written, false);
	assert.match(reply.saved, expected);
	assert.deepEqual(r.handoffFiles, [], "no handoff file, no half file, no temp file");
	assert.deepEqual(
		r.handoffMountFiles.filter((n) => n !== "filler" && n !== "handoffs"),
		[],
	);

	// The user is told once, as a warning, and nothing else reached stderr or Pi's errors.
	assert.equal(r.notices.length, 1, JSON.stringify(r.notices));
	assert.equal(r.notices[0].level, "warning");
	assert.match(r.notices[0].text, expected);
	assert.match(r.notices[0].text, /not reported again/);
	assert.deepEqual(
		r.stderr.filter((l) => l.includes("relay")),
		[],
		"no further reports",
	);
	assert.deepEqual(r.piErrors, []);
	// No event reached the log, and no half line either (a full disk may leave it empty).
	assert.equal(r.log, "");
}

test("disk full: the handoff still resets the window, the user is told once, nothing throws", () => {
	const r = runScenario("full");
	assert.deepEqual(r.probes, ["ENOSPC", "ENOSPC"], "the disks are really full");
	assertResetDespite(r, /No space left on device/);
});

test("read-only folders: the handoff still resets the window, the user is told once, nothing throws", () => {
	const r = runScenario("readonly");
	assert.deepEqual(r.probes, ["EROFS", "EROFS"], "the folders are really read-only");
	assertResetDespite(r, /Read-only file system/);
});
