// Settings precedence on the real Pi agent loop with Pi's real SettingsManager reading real files:
// `<agentDir>/settings.json` and `<cwd>/.pi/settings.json`. The project's `relay` values apply only
// when Pi trusts the project; the engine (not the extension) decides, and names the file and key
// path of every problem.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { fauxAssistantMessage, fauxProvider } from "@earendil-works/pi-ai";
import { createAgentSession, DefaultResourceLoader, ModelRuntime, SessionManager, SettingsManager } from "@earendil-works/pi-coding-agent";
import { captureStderr, RELAY, textOf } from "./harness.mjs";

/**
 * One session whose settings come from files on disk, as in the `pi` CLI. `project: undefined`
 * writes no project file. The body also gets Relay's status file after the first prompt.
 */
async function withFileSettings({ trusted, global, project }, body) {
	const root = mkdtempSync(join(tmpdir(), "relay-settings-"));
	const agentDir = join(root, "agent");
	const cwd = join(root, "work");
	mkdirSync(agentDir, { recursive: true });
	mkdirSync(join(cwd, ".pi"), { recursive: true });
	writeFileSync(join(agentDir, "settings.json"), JSON.stringify(global));
	if (project !== undefined) writeFileSync(join(cwd, ".pi", "settings.json"), JSON.stringify(project));
	const saved = {
		agentDir: process.env.PI_CODING_AGENT_DIR,
		stateDir: process.env.PI_CONTEXT_BUDGET_STATE_DIR,
		budgetConfig: process.env.PI_CONTEXT_BUDGET_CONFIG,
	};
	process.env.PI_CODING_AGENT_DIR = agentDir;
	process.env.PI_CONTEXT_BUDGET_STATE_DIR = join(agentDir, "context-budget");
	// No budget file: the settings' relay.budget applies.
	delete process.env.PI_CONTEXT_BUDGET_CONFIG;
	const faux = fauxProvider({ provider: "faux", models: [{ id: "faux-1", contextWindow: 128_000, maxTokens: 4096 }] });
	const requests = [];
	faux.setResponses([
		(context) => {
			requests.push(structuredClone(context.messages));
			return fauxAssistantMessage("ok");
		},
	]);
	const modelRuntime = await ModelRuntime.create({ authPath: join(agentDir, "auth.json"), modelsPath: null, refreshOnCreate: false });
	modelRuntime.registerNativeProvider(faux.provider);
	const settingsManager = SettingsManager.create(cwd, agentDir, { projectTrusted: trusted });
	const resourceLoader = new DefaultResourceLoader({
		cwd,
		agentDir,
		settingsManager,
		additionalExtensionPaths: [RELAY],
		noSkills: true,
		noPromptTemplates: true,
		noThemes: true,
		noContextFiles: true,
	});
	await resourceLoader.reload();
	const { session } = await createAgentSession({
		cwd,
		agentDir,
		model: modelRuntime.getModel("faux", "faux-1"),
		thinkingLevel: "off",
		modelRuntime,
		resourceLoader,
		sessionManager: SessionManager.inMemory(cwd),
		settingsManager,
		noTools: "builtin",
	});
	const errors = [];
	try {
		const stderr = await captureStderr(async () => {
			await session.bindExtensions({ onError: (e) => errors.push(e) });
			await session.prompt("hello");
		});
		const status = JSON.parse(
			readFileSync(join(agentDir, "context-budget", "status", `${session.sessionManager.getSessionId()}.json`), "utf8"),
		);
		await body({ requests, stderr, errors, settingsManager, status, session });
	} finally {
		await session.extensionRunner?.emit?.({ type: "session_shutdown", reason: "quit" });
		session.dispose();
		for (const [key, value] of [
			["PI_CODING_AGENT_DIR", saved.agentDir],
			["PI_CONTEXT_BUDGET_STATE_DIR", saved.stateDir],
			["PI_CONTEXT_BUDGET_CONFIG", saved.budgetConfig],
		]) {
			if (value === undefined) delete process.env[key];
			else process.env[key] = value;
		}
	}
}

const GLOBAL = { relay: { agentName: "global-agent", reminderMarginTokens: 1000 } };
// A valid project value (agentName) and an invalid one (budget.mode).
const PROJECT = { relay: { agentName: "project-agent", budget: { mode: "sometimes" } } };

/** The agent name in the boot block of the first provider request. */
const bootAgent = (requests) => {
	const boot = requests[0].map((m) => textOf(m.content)).find((t) => t.includes("<context_window>"));
	assert.ok(boot, `no boot block in the first request: ${JSON.stringify(requests[0])}`);
	return /^agent: (.*)$/m.exec(boot)?.[1];
};

test("an untrusted project's relay settings are ignored, values and problems alike", async () => {
	await withFileSettings({ trusted: false, global: GLOBAL, project: PROJECT }, async ({ requests, stderr, errors, settingsManager }) => {
		assert.equal(settingsManager.isProjectTrusted(), false);
		assert.equal(bootAgent(requests), "global-agent");
		assert.deepEqual(
			stderr.filter((l) => l.includes("relay.")),
			[],
			"nothing from the untrusted project is judged",
		);
		assert.deepEqual(errors, []);
	});
});

test("a trusted project's relay value wins per key, and its invalid value is reported naming the file and key path", async () => {
	await withFileSettings({ trusted: true, global: GLOBAL, project: PROJECT }, async ({ requests, stderr, errors, settingsManager }) => {
		assert.equal(settingsManager.isProjectTrusted(), true);
		assert.equal(bootAgent(requests), "project-agent");
		// Pi merged the same way: the project's agentName over the global one, the global margin kept.
		assert.deepEqual(settingsManager.getSettings().relay, { agentName: "project-agent", reminderMarginTokens: 1000, budget: { mode: "sometimes" } });
		const warnings = stderr.filter((l) => l.includes("relay.budget.mode"));
		assert.equal(warnings.length, 1, JSON.stringify(stderr));
		assert.match(warnings[0], /^relay: project settings \(\.pi\/settings\.json\): relay\.budget\.mode: must be "off", "observe" or "enforce", got "sometimes"/);
		assert.deepEqual(errors, []);
	});
});

// A project's default pins (`relay.pins`): in every window's boot block before the session's own
// when Pi trusts the project, named by `/relay pins` with their file, refused by `/relay unpin`;
// an untrusted project's are not in force.
const PROJECT_PIN = "PIN-2208: run make test before every commit.";
for (const trusted of [true, false]) {
	test(`a${trusted ? " trusted" : "n untrusted"} project's relay.pins ${trusted ? "stand" : "do not stand"} in the boot block`, async () => {
		await withFileSettings({ trusted, global: {}, project: { relay: { pins: [PROJECT_PIN] } } }, async ({ requests, errors, session }) => {
			const boot = requests[0].map((m) => textOf(m.content)).find((t) => t.includes("<context_window>"));
			const pinned = `<pinned_instructions count="1">\n<pin n="1">\n${PROJECT_PIN}\n</pin>\n</pinned_instructions>`;
			assert.equal(boot.includes(pinned), trusted, boot);
			assert.equal(boot.includes("PIN-2208"), trusted, boot);
			const said = (await captureStderr(() => session.prompt("/relay pins"))).join("\n");
			const unpin = (await captureStderr(() => session.prompt("/relay unpin 1"))).join("\n");
			if (trusted) {
				assert.match(said, /\n1\. PIN-2208: run make test before every commit\.  ← relay\.pins in project settings \(\.pi\/settings\.json\)/);
				assert.match(unpin, /pin 1 is a default pin from relay\.pins in project settings \(\.pi\/settings\.json\)/);
			} else {
				assert.match(said, /no pinned instructions/);
				assert.match(unpin, /there are no pins/);
			}
			assert.equal(session.sessionManager.getEntries().filter((e) => e.customType === "relay/pins").length, 0, "nothing recorded");
			assert.deepEqual(errors, []);
		});
	});
}

test("a global problem names the global file", async () => {
	await withFileSettings(
		{ trusted: true, global: { relay: { reminderMarginTokens: -5 } }, project: {} },
		async ({ stderr, errors }) => {
			const warnings = stderr.filter((l) => l.includes("relay.reminderMarginTokens"));
			assert.equal(warnings.length, 1, JSON.stringify(stderr));
			assert.match(warnings[0], /^relay: global settings \(.*\/agent\/settings\.json\): relay\.reminderMarginTokens: expected a whole number/);
			assert.deepEqual(errors, []);
		},
	);
});

// The budget policy inside the `relay` object follows the same precedence: global and project files,
// with and without trust, each case read by Pi's real SettingsManager from files on disk. The
// status file shows the budget mode and thresholds the engine resolved (faux-1: 128k window).
const G_BUDGET = { relay: { agentName: "global-agent", budget: { mode: "enforce", main: { hard: 100_000 } } } };
const P_BUDGET = { relay: { agentName: "project-agent", budget: { mode: "off", main: { soft: 80_000 } } } };
// Defaults derived from the window: usable = 128,000 - 16,384; hard = 90 % of it.
const DERIVED = [60_272, 75_340, 100_454];
const BUDGET_CASES = [
	{ name: "global file only, untrusted", trusted: false, global: G_BUDGET, project: undefined, agent: "global-agent", mode: "enforce", bands: [60_000, 75_000, 100_000] },
	{ name: "global file only, trusted", trusted: true, global: G_BUDGET, project: undefined, agent: "global-agent", mode: "enforce", bands: [60_000, 75_000, 100_000] },
	{ name: "both files, untrusted: the project is ignored", trusted: false, global: G_BUDGET, project: P_BUDGET, agent: "global-agent", mode: "enforce", bands: [60_000, 75_000, 100_000] },
	{
		name: "both files, trusted: the project wins per key, relay.budget merged at every depth",
		trusted: true,
		global: G_BUDGET,
		project: P_BUDGET,
		agent: "project-agent",
		mode: "off",
		// soft 80,000 (project) with hard 100,000 (global): handoff midway, as 75 % would not be above soft.
		bands: [80_000, 90_000, 100_000],
	},
	{ name: "project file only, trusted", trusted: true, global: {}, project: P_BUDGET, agent: "project-agent", mode: "off", bands: [80_000, 100_000, 133_333] },
	{ name: "project file only, untrusted: the defaults", trusted: false, global: {}, project: P_BUDGET, agent: "pi", mode: "observe", bands: DERIVED },
];
for (const c of BUDGET_CASES) {
	test(`relay and relay.budget from settings files: ${c.name}`, async () => {
		await withFileSettings(c, async ({ requests, stderr, errors, status }) => {
			assert.equal(bootAgent(requests), c.agent);
			assert.equal(status.configuredMode, c.mode);
			assert.deepEqual([status.thresholds.soft, status.thresholds.handoff, status.thresholds.hard], c.bands);
			assert.deepEqual(stderr.filter((l) => l.startsWith("relay:")), [], "no warning");
			assert.deepEqual(errors, []);
		});
	});
}

test("an out-of-order threshold set in a trusted project's relay.budget is a warning naming the file and both keys", async () => {
	const project = { relay: { budget: { models: { "faux/faux-1": { main: { soft: 50_000, handoff: 40_000 } } } } } };
	await withFileSettings({ trusted: true, global: G_BUDGET, project }, async ({ stderr, errors, status }) => {
		const key = 'relay.budget.models."faux/faux-1".main';
		assert.deepEqual(stderr.filter((l) => l.startsWith("relay:")), [
			`relay: project settings (.pi/settings.json): ${key}.soft: 50000 must not exceed ${key}.handoff (40000); the soft/handoff/hard values of ${key} are ignored (the next level applies: the role's values, else those derived from the window) and enforce runs as observe until this is fixed`,
		]);
		// The global role values apply; the invalid configuration does not enforce.
		assert.deepEqual([status.thresholds.soft, status.thresholds.handoff, status.thresholds.hard], [60_000, 75_000, 100_000]);
		assert.equal(status.configuredMode, "enforce");
		assert.equal(status.effectiveMode, "observe");
		assert.deepEqual(errors, []);
	});
});
