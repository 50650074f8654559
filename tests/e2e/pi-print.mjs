// The real `pi` CLI in print mode for the e2e tests: offline, with demo/'s faux provider as the
// model and Relay loaded from extension/, in a fresh folder (agent dir, cwd, sessions, Relay's
// state) per run.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
// RELAY_PI_CLI: another Pi release's cli.js (the Makefile runs these tests on each supported Pi).
export const PI = process.env.RELAY_PI_CLI ?? join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");

/**
 * A fresh folder for one Pi run: `agent` (Pi's agent folder, its settings.json holding
 * `settings`), `work` (the cwd), `sessions`, `state` (not created: Relay creates it) and
 * `scriptFile` (demo/faux-provider.ts's steps).
 */
export function piFolder({ prefix, settings = {}, script }) {
	const dir = mkdtempSync(join(tmpdir(), prefix));
	const [agent, work, sessions, state] = ["agent", "work", "sessions", "state"].map((d) => join(dir, d));
	for (const d of [agent, work, sessions]) mkdirSync(d, { recursive: true });
	writeFileSync(join(agent, "settings.json"), JSON.stringify(settings));
	const scriptFile = join(dir, "script.json");
	writeFileSync(scriptFile, JSON.stringify(script));
	return { dir, agent, work, sessions, state, scriptFile };
}

/** Pi's arguments for a scripted model and Relay, sessions in `sessions`. */
const piArgs = (sessions) => ["-ne", "-nbt", "--session-dir", sessions, "-e", join(ROOT, "demo/faux-provider.ts"), "-e", join(ROOT, "extension"), "--model", "faux/faux-1"];

/** `pi --mode rpc` in a fresh folder with a scripted model; the child and the folder's paths. */
export function spawnRpc({ script, prefix = "relay-rpc-" }) {
	const folder = piFolder({ prefix, script });
	const child = spawn(process.execPath, [PI, "--mode", "rpc", ...piArgs(folder.sessions)], {
		cwd: folder.work,
		env: { ...process.env, PI_CODING_AGENT_DIR: folder.agent, PI_OFFLINE: "1", RELAY_FAUX_SCRIPT: folder.scriptFile },
	});
	return { ...folder, child };
}

const jsonl = (file) => readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));

/**
 * Run `pi -p` with a scripted model (`script`, demo/faux-provider.ts's steps) in a window of
 * `window` tokens, Pi's `settings.json` holding `settings`. `env`: extra environment, an object
 * or a function of the run's folder. Returns spawnSync's result with the run's folder `dir`, its
 * `sessions` folder, the session `file` and its `lines`, the `events` Relay logged, and the
 * provider `requests` as the faux provider traced them on stderr.
 */
export function runPi({ script, prompts, window = 128000, settings = {}, extraArgs = [], env = {}, prefix = "relay-e2e-" }) {
	const { dir, agent, work, sessions, state, scriptFile } = piFolder({ prefix, settings, script });
	const result = spawnSync(
		process.execPath,
		[PI, "-p", ...piArgs(sessions), ...extraArgs, ...prompts],
		{
			cwd: work,
			encoding: "utf8",
			input: "",
			timeout: 60_000,
			env: {
				...process.env,
				PI_CODING_AGENT_DIR: agent,
				PI_CONTEXT_BUDGET_STATE_DIR: state,
				PI_OFFLINE: "1",
				RELAY_FAUX_SCRIPT: scriptFile,
				RELAY_FAUX_WINDOW: String(window),
				RELAY_FAUX_TRACE: "1",
				...(typeof env === "function" ? env(dir) : env),
			},
		},
	);
	const files = readdirSync(sessions, { recursive: true }).filter((f) => String(f).endsWith(".jsonl"));
	const file = files.length ? join(sessions, String(files[0])) : undefined;
	const lines = file ? jsonl(file) : [];
	const eventsFile = join(state, "events.jsonl");
	const events = existsSync(eventsFile) ? jsonl(eventsFile) : [];
	const requests = (result.stderr ?? "").split("── request ").slice(1);
	return { ...result, dir, sessions, file, lines, events, requests };
}
