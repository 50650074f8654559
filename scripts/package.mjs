// `make package`: the npm tarballs a Pi user installs, the napi-rs way. One Pi package (pi-relay,
// from extension/) lists one platform package per target as optionalDependencies; npm installs the
// one matching the machine, and napi-rs's generated loader (extension/native/relay.cjs, shipped in
// pi-relay) loads its addon for extension/src/native.ts. This script packs pi-relay and the
// platform package of this machine (built by `make build`) into dist/; the release workflow
// (.github/workflows/release.yml) builds the others.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DIST = join(ROOT, "dist");
const STAGE = join(ROOT, "target", "package");

/** napi-rs's target name for this machine: `<platform>-<arch>[-<abi>]`. */
export function triple() {
	const abi =
		process.platform === "linux" ? (process.report?.getReport()?.header?.glibcVersionRuntime ? "-gnu" : "-musl") : "";
	return `${process.platform}-${process.arch}${abi}`;
}

/** The newest glibc symbol version a shared object needs (`GLIBC_2.34`), read from its bytes. */
export function glibcNeeded(file) {
	const text = readFileSync(file).toString("latin1");
	const versions = [...text.matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
	versions.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
	const newest = versions.at(-1);
	return newest ? `${newest[0]}.${newest[1]}` : null;
}

const TARGETS = {
	"linux-x64-gnu": { os: "linux", cpu: "x64", libc: "glibc" },
	"linux-arm64-gnu": { os: "linux", cpu: "arm64", libc: "glibc" },
	"darwin-arm64": { os: "darwin", cpu: "arm64" },
	"darwin-x64": { os: "darwin", cpu: "x64" },
	// No Windows target: the core needs Unix (relay-io's compile_error! says so on Windows).
};

function pack(dir) {
	const out = execFileSync("npm", ["pack", "--pack-destination", DIST, "--json"], { cwd: dir, encoding: "utf8" });
	return join(DIST, JSON.parse(out)[0].filename);
}

function main() {
	const here = triple();
	const target = TARGETS[here];
	if (!target) throw new Error(`relay: no package target for ${here}; the targets are ${Object.keys(TARGETS).join(", ")}`);
	const extension = JSON.parse(readFileSync(join(ROOT, "extension", "package.json"), "utf8"));
	const version = extension.version;
	for (const name of Object.keys(TARGETS)) {
		const want = extension.optionalDependencies?.[`pi-relay-${name}`];
		if (want !== version) throw new Error(`relay: extension/package.json optionalDependencies["pi-relay-${name}"] is ${want}, expected ${version}`);
	}
	rmSync(DIST, { recursive: true, force: true });
	mkdirSync(DIST, { recursive: true });

	const addon = join(ROOT, "extension", "native", `relay.${here}.node`);
	const stage = join(STAGE, `pi-relay-${here}`);
	rmSync(stage, { recursive: true, force: true });
	mkdirSync(stage, { recursive: true });
	copyFileSync(addon, join(stage, `relay.${here}.node`));
	// npm packs a package's LICENSE whatever `files` lists: the platform package gets the root's.
	copyFileSync(join(ROOT, "LICENSE"), join(stage, "LICENSE"));
	const glibc = target.libc === "glibc" ? glibcNeeded(addon) : null;
	const needs = glibc ? ` Needs glibc ${glibc} or later.` : "";
	writeFileSync(
		join(stage, "package.json"),
		`${JSON.stringify(
			{
				name: `pi-relay-${here}`,
				version,
				description: `The prebuilt Relay core for ${here}.${needs}`,
				license: extension.license,
				os: [target.os],
				cpu: [target.cpu],
				...(target.libc ? { libc: [target.libc] } : {}),
				main: `relay.${here}.node`,
				files: [`relay.${here}.node`],
			},
			null,
			2,
		)}\n`,
	);
	writeFileSync(join(stage, "README.md"), `# pi-relay-${here}\n\nThe prebuilt native core of pi-relay (Relay for the Pi coding agent) for ${here}.${needs} Install pi-relay, not this package.\n`);
	const platform = pack(stage);
	const main = pack(join(ROOT, "extension"));
	console.log(JSON.stringify({ triple: here, glibc, packages: [main, platform] }, null, 2));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
