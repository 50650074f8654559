# Relay: `make demo` and `make test` do all set-up on a fresh machine (Rust + npm + system Node).
SHELL := /bin/bash
NODE := $(CURDIR)/node_modules/.bin/node
NAPI := $(CURDIR)/node_modules/@napi-rs/cli/dist/cli.js
TSC := $(CURDIR)/node_modules/typescript/bin/tsc
STAMP := node_modules/.relay-installed

.PHONY: all deps build addon test-addon cli typecheck demo check test test-rust test-extension test-e2e lint bench bench-host bench-windows bench-arms bench-long clean pi-versions package fuzz soak

all: build

$(STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@$(NODE) -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a<22||(a===22&&b<19)) { console.error("relay: need Node >= 22.19 from the node@22 devDependency, got "+process.version); process.exit(1) }'
	touch $@

deps: $(STAMP)

# The other Pi releases the tests run on (tests/pi-versions/<v>/package.json pins each): 1.3, the
# oldest Relay supports, 0.87, one it must refuse, and the oh-my-pi fork (omp), refused by name.
# Installed beside the workspace, no lockfile.
PI_OLD := tests/pi-versions/1.3
PI_TOO_OLD := tests/pi-versions/0.87
PI_FORK := tests/pi-versions/omp
PI_VERSION_STAMPS := $(PI_OLD)/node_modules/.installed $(PI_TOO_OLD)/node_modules/.installed $(PI_FORK)/node_modules/.installed

tests/pi-versions/%/node_modules/.installed: tests/pi-versions/%/package.json
	cd $(dir $<) && npm install --no-package-lock --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

pi-versions: $(PI_VERSION_STAMPS)

addon: deps
	$(NODE) $(NAPI) build --platform --release --manifest-path crates/relay-node/Cargo.toml \
	  --package-json-path crates/relay-node/package.json --output-dir extension/native --js relay.cjs --dts relay.d.ts

# A second addon for the panic-boundary tests only, with the test-panic feature (RELAY_TEST_PANIC
# makes a named entry point panic). Never in extension/native/, which is what users load; built in
# its own target folder so that it never displaces the release build.
TEST_ADDON_DIR := target/test-addon

test-addon: deps
	$(NODE) $(NAPI) build --features test-panic --manifest-path crates/relay-node/Cargo.toml \
	  --package-json-path crates/relay-node/package.json --target-dir $(TEST_ADDON_DIR)/build \
	  --output-dir $(TEST_ADDON_DIR) --dts relay.d.ts

# Both binaries of relay-cli: target/release/relay and target/release/pi-session.
cli:
	cargo build --release -p relay-cli --bins

typecheck: deps
	$(NODE) $(TSC) -p extension/tsconfig.json --noEmit

build: addon cli typecheck

# The npm tarballs a Pi user installs (dist/): pi-relay and this machine's platform package.
package: build
	$(NODE) scripts/package.mjs

demo: build
	bash demo/run.sh

test-rust:
	cargo test --workspace

# Each suite runs on the workspace's Pi (1.6) and again on the oldest supported one (1.3).
test-extension: build test-addon pi-versions
	RELAY_TEST_ADDON=$(CURDIR)/$(TEST_ADDON_DIR)/relay.node $(NODE) --test --test-concurrency=1 tests/extension/*.test.mjs
	@echo "== the extension tests again on Pi 1.3"
	RELAY_PI_PREFIX=$(CURDIR)/$(PI_OLD) RELAY_TEST_ADDON=$(CURDIR)/$(TEST_ADDON_DIR)/relay.node \
	  $(NODE) --import ./tests/pi-version.mjs --test --test-concurrency=1 tests/extension/*.test.mjs

test-e2e: build pi-versions package
	$(NODE) --test --test-concurrency=1 tests/e2e/*.test.mjs
	@echo "== the end-to-end tests again on Pi 1.3"
	RELAY_PI_PREFIX=$(CURDIR)/$(PI_OLD) RELAY_PI_CLI=$(CURDIR)/$(PI_OLD)/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js \
	  $(NODE) --import ./tests/pi-version.mjs --test --test-concurrency=1 tests/e2e/*.test.mjs

# Fuzzing (fuzz/README.md): every target one after another, each for FUZZ_RUNS executions (or
# FUZZ_SECONDS, when set and not 0), from the committed seeds and minimized corpus. The growing
# corpus, crash files, logs and the build stay in FUZZ_DIR, outside the repository. Needs the
# nightly toolchain; installs the pinned cargo-fuzz when it is missing. FUZZ_TARGETS="config"
# runs one target. Inputs are at most FUZZ_MAX_LEN bytes: the generators build the big cases
# (1 MB notes, 48 KiB handoff fields, 100,000-character arguments) from a few bytes, so a longer
# input only slows a run down. The targets in FUZZ_NO_TRACE_COMPARES are built without
# comparison tracing (3-4x faster: their generators pick the edge values themselves), in a target
# directory of their own so that neither build invalidates the other. The runs take spare CPU
# only (FUZZ_NICE).
CARGO_FUZZ_VERSION := 0.13.2
FUZZ_TARGETS ?= session_line note_replay config handoff tool_args
FUZZ_RUNS ?= 10000000
FUZZ_SECONDS ?= 0
FUZZ_MAX_LEN ?= 4096
FUZZ_NICE ?= nice -n 19
FUZZ_NO_TRACE_COMPARES ?= note_replay config handoff
FUZZ_DIR ?= /tmp/relay-fuzz

fuzz:
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version $(CARGO_FUZZ_VERSION) --locked
	@set -eo pipefail; cd fuzz; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/artifacts; \
	  build=; dir=target; \
	  case " $(FUZZ_NO_TRACE_COMPARES) " in *" $$t "*) build=--no-trace-compares; dir=target-ntc;; esac; \
	  echo "== fuzz $$t: $(FUZZ_RUNS) runs (max $(FUZZ_SECONDS) s, 0 = no limit) $$build"; \
	  CARGO_TARGET_DIR=$(FUZZ_DIR)/$$dir $(FUZZ_NICE) cargo +nightly fuzz run -a -s none $$build $$t \
	    $(FUZZ_DIR)/corpus/$$t seeds/$$t minimized/$$t -- \
	    -runs=$(FUZZ_RUNS) -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN) \
	    -timeout=10 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_DIR)/artifacts/$$t- 2>&1 | tee $(FUZZ_DIR)/$$t.log; \
	done

# The long soak (tests/soak/soak.mjs, README "Soak"): one generated session of SOAK_TURNS turns
# through the real Pi loop with Relay, then every invariant checked on its JSONL, memory and the
# engine's time per hook by quarter. `make test` runs 300 turns of it (tests/extension/soak.test.mjs).
# SOAK_SEED picks the session (default: a new one each run, printed); SOAK_REPORT keeps the figures.
SOAK_TURNS ?= 5000
SOAK_SEED ?= $(shell date +%s)
SOAK_REPORT ?= /tmp/relay-soak-report.json

soak: build
	SOAK_TURNS=$(SOAK_TURNS) SOAK_SEED=$(SOAK_SEED) SOAK_REPORT=$(SOAK_REPORT) \
	  nice -n 19 $(NODE) --test --test-concurrency=1 tests/extension/soak.test.mjs

# Lint first: a formatting, clippy or type error fails in seconds, before the long test runs.
# The whole-engine and scheduler property tests run TEST_PROPTEST_CASES cases each here
# (RELAY_PROPTEST_CASES, crates/relay-core/tests/support/props.rs), more than `make check` and a
# plain `cargo test` (2,000 for the engine, 1,000 and 500 for the scheduler).
TEST_PROPTEST_CASES ?= 5000
test: export RELAY_PROPTEST_CASES = $(TEST_PROPTEST_CASES)
test: lint build test-rust test-extension test-e2e

# The quick tier while developing (docs/development.md): lint, the Rust tests and the extension
# tests on the workspace's Pi only, without CHECK_SLOW. `make test` stays the whole suite.
CHECK_SLOW := tests/extension/soak.test.mjs tests/extension/huge-output.test.mjs
CHECK_EXTENSION := $(filter-out $(CHECK_SLOW),$(wildcard tests/extension/*.test.mjs))

check: lint build test-addon test-rust
	RELAY_TEST_ADDON=$(CURDIR)/$(TEST_ADDON_DIR)/relay.node $(NODE) --test --test-concurrency=1 $(CHECK_EXTENSION)

lint: typecheck
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

# The engine alone (cargo bench, bench/engine.mjs) and one reset (bench/reset.mjs). What a user
# feels inside the real `pi` process is `make bench-host`.
bench: build
	cargo bench -p relay-core
	$(NODE) --expose-gc bench/engine.mjs
	$(NODE) bench/reset.mjs
	@echo "Relay inside the real pi CLI, against the TypeScript baseline: make bench-host"

# The real `pi -p` CLI on the generated 256 MiB session (RELAY_BENCH_MB=16 for a quick run), Relay
# and the TypeScript baseline between timing probes; prints the table, medians and the machine.
# Then what resuming costs: whole run, time to the first request, the run's end and peak RSS for
# bare Pi, an empty extension (without and with Pi's boundary hooks) and Relay, on the 256 MiB and
# a 25 MiB session (bench/resume.mjs).
bench-host: build
	$(NODE) bench/host.mjs
	$(NODE) bench/resume.mjs

# Tool-result clearing off and on over one long scripted run through the real Pi loop (issue 26):
# resets, request sizes, input tokens and the cache-priced bill side by side.
bench-windows: build
	$(NODE) bench/windows.mjs

# Relay against Pi's own summary compaction and observation masking on one scripted long task
# through the real Pi loop (issue 37): four arms, three seeds, the table with medians and ranges.
# RELAY_BENCH_CALLS, _SEEDS, _ARMS, _WINDOW make a quicker or other run (bench/README.md).
bench-arms: build
	$(NODE) bench/arms.mjs

# The cost of one turn as the session grows (1k to 100k branch entries), bare Pi, an extension
# with Relay's hooks doing nothing, and Relay, through the real Pi loop (issue 36): a table and
# bench/long-<date>.svg.
bench-long: build
	$(NODE) bench/long.mjs

clean:
	cargo clean
	rm -rf node_modules extension/native/*.node extension/native/relay.cjs .demo dist tests/pi-versions/*/node_modules
