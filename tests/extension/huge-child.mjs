// Child process of huge-output.test.mjs (not a test file itself): loads the session file named by
// RELAY_HUGE_FILE into Relay's engine the way Pi's session_start does for a large file
// (loadSessionFileInBackground, off the event loop), asks the history tools about it and prints
// their answers with the process's peak memory (VmHWM).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const file = process.env.RELAY_HUGE_FILE;
const peakKiB = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))[1]);
const require = createRequire(import.meta.url);
const { Engine } = require(fileURLToPath(new URL("../../extension/native/relay.linux-x64-gnu.node", import.meta.url)));
const moment = JSON.stringify({ nowMs: 1_000, tzOffsetMinutes: 0, usage: null, model: null, contextWindow: null, hasPendingMessages: false, cwd: "/nowhere", subagent: false });
const engine = new Engine();
const started = Date.now();
// The event loop stays free while the worker reads: count its ticks.
let ticks = 0;
const ticker = setInterval(() => ticks++, 10);
const found = await engine.loadSessionFileInBackground("HUGE", file, "m0000004").run();
clearInterval(ticker);
const installed = engine.finishLoad();
const call = (name, args) => JSON.parse(engine.tool(name, JSON.stringify(args), moment));
const windows = call("history_list_windows", {}).text;
const windowId = /"window_id":"([^"]+)"/.exec(windows)[1];
const items = call("history_list_items", { window_id: windowId, max_chars_per_item: 200, recent_first: false }).text;
const page = call("history_read_item", { window_id: windowId, item_id: "m0000003", offset_chars: JSON.parse(items).items[2].total_chars - 100, limit_chars: 200 }).text;
const search = call("history_search_contents", { query: "NEEDLE-AT-THE-END-7070" }).text;
process.stdout.write(JSON.stringify({ found, installed, ticks, ms: Date.now() - started, items, page, search, peakKiB: peakKiB() }) + "\n");
