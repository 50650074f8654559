// Child process of huge-output.test.mjs (not a test file itself): loads the session file named by
// RELAY_HUGE_FILE into Relay's engine the way Pi's session_start does for a large file
// (a load job on the libuv pool, off the event loop), asks the history tools about it and prints
// their answers with the process's peak memory (VmHWM).
import { readFileSync } from "node:fs";
import { addon, callTool, loadInBackground } from "./door.mjs";

const file = process.env.RELAY_HUGE_FILE;
const peakKiB = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))[1]);
const { Engine } = addon();
const engine = new Engine();
const started = Date.now();
// The event loop stays free while the worker reads: count its ticks.
let ticks = 0;
const ticker = setInterval(() => ticks++, 10);
const { found, next } = await loadInBackground(engine, "HUGE", file, "m0000004");
clearInterval(ticker);
const installed = found && next.tip === "m0000004";
const call = (name, args) => callTool(engine, name, args);
const windows = call("history_list_windows", {}).text;
const windowId = /"window_id":"([^"]+)"/.exec(windows)[1];
const items = call("history_list_items", { window_id: windowId, max_chars_per_item: 200, recent_first: false }).text;
const page = call("history_read_item", { window_id: windowId, item_id: "m0000003", offset_chars: JSON.parse(items).items[2].total_chars - 100, limit_chars: 200 }).text;
const search = call("history_search_contents", { query: "NEEDLE-AT-THE-END-7070" }).text;
process.stdout.write(JSON.stringify({ found, installed, ticks, ms: Date.now() - started, items, page, search, peakKiB: peakKiB() }) + "\n");
