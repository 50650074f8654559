// `node --import ./tests/pi-version.mjs`: with RELAY_PI_PREFIX set to a folder holding another Pi
// release (tests/pi-versions/<v>/), every import of Pi's packages (and typebox) by the tests
// resolves there instead of the workspace's node_modules. Relay itself gets the same Pi: the SDK
// hands its own modules to the extensions it loads.
import { register } from "node:module";
import { pathToFileURL } from "node:url";

const prefix = process.env.RELAY_PI_PREFIX;
if (prefix) {
	const base = pathToFileURL(prefix.endsWith("/") ? prefix : `${prefix}/`).href;
	register(new URL("./pi-version-hooks.mjs", import.meta.url), { data: { base } });
}
