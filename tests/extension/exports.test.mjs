// The addon's surface is the one door (ARCHITECTURE.md, "A request through the door"): the exports and
// the Engine's methods are exactly the documented list, so a new feature cannot grow a method.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const addon = require(fileURLToPath(new URL("../../extension/native/relay.linux-x64-gnu.node", import.meta.url)));
const architecture = readFileSync(fileURLToPath(new URL("../../ARCHITECTURE.md", import.meta.url)), "utf8");

test("the addon exports exactly what ARCHITECTURE.md lists", () => {
	const listed = /The addon's exports \(checked by `tests\/extension\/exports\.test\.mjs`\): ([^\n]+)\n([^\n]*)/.exec(architecture);
	assert.ok(listed, "ARCHITECTURE.md lists the addon's exports");
	const text = `${listed[1]} ${listed[2]}`;
	const [top, prototype] = text.split("(prototype:");
	const names = (part) => [...part.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]).sort();
	assert.deepEqual(Object.keys(addon).sort(), names(top));
	assert.deepEqual(Object.getOwnPropertyNames(addon.Engine.prototype).sort(), names(prototype));
});
