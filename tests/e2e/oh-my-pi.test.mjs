// Relay in the oh-my-pi fork (`@oh-my-pi/pi-coding-agent`, the `omp` command on Bun): omp maps
// Relay's imports of Pi's package onto its own and reports its own version (18.x), so the version
// check alone would let Relay in. Relay refuses by name, once, and omp goes on without it. The
// fork and Bun are installed by the Makefile (tests/pi-versions/omp/).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FORK = join(ROOT, "tests/pi-versions/omp/node_modules");
const OMP = join(FORK, "@oh-my-pi/pi-coding-agent/dist/cli.js");

/** Bun's binary for this machine, from the platform package npm installed beside `bun`. */
function bunBinary() {
	const oven = join(FORK, "@oven");
	const found = existsSync(oven) ? readdirSync(oven).map((d) => join(oven, d, "bin/bun")).find((b) => existsSync(b)) : undefined;
	assert.ok(found, `no Bun binary under ${oven}: run \`make pi-versions\`, which installs it`);
	return found;
}

test("omp -p with Relay: Relay refuses to load, naming oh-my-pi and the supported hosts, and omp runs without it", () => {
	assert.ok(existsSync(OMP), `${OMP} is missing: run \`make pi-versions\`, which installs it`);
	const bun = bunBinary();
	const { version } = JSON.parse(readFileSync(join(FORK, "@oh-my-pi/pi-coding-agent/package.json"), "utf8"));
	const bunVersion = spawnSync(bun, ["--version"], { encoding: "utf8" }).stdout.trim();
	const home = mkdtempSync(join(tmpdir(), "relay-omp-"));
	const work = join(home, "work");
	mkdirSync(work);
	const env = { ...process.env, HOME: home, PI_OFFLINE: "1" };
	for (const name of ["PI_CODING_AGENT_DIR", "OMP_PROFILE", "PI_PROFILE", "PI_CONFIG_DIR"]) delete env[name];
	const run = spawnSync(bun, [OMP, "-p", "-e", join(ROOT, "extension"), "Hello."], { cwd: work, encoding: "utf8", input: "", timeout: 120_000, env });
	const refusal = `relay: this host is oh-my-pi (@oh-my-pi/pi-coding-agent), a fork of Pi: version ${version}, settings folder ".omp", runtime bun ${bunVersion}. Relay supports only Pi (@earendil-works/pi-coding-agent) 1.3.0 or newer on Node.js, the hosts it is tested on; it is not loaded (the host runs without it). Run Relay under \`pi\`.`;
	const output = `${run.stdout}\n${run.stderr}`;
	assert.equal(output.split(refusal).length - 1, 1, `the refusal, once:\n${output}`);
	// omp goes on without Relay: it reaches its own model selection (no model is configured here).
	assert.match(output, /No models available/, output);
	assert.doesNotMatch(output, /Failed to load extension/, output);
});
