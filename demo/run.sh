#!/usr/bin/env bash
# The Relay demo: the real `pi` CLI in print mode, offline, with a scripted model. A task rolls over
# into a second context window and picks up from its notes; then the `relay` CLI reads the session.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NODE=$ROOT/node_modules/.bin/node
PI=$ROOT/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js
RELAY=$ROOT/target/release/relay
DEMO=$ROOT/.demo
rm -rf "$DEMO"
mkdir -p "$DEMO/agent" "$DEMO/work" "$DEMO/sessions"

say() { printf '\n\033[1m%s\033[0m\n' "$*"; }

say "1. pi -p runs a scripted task; the model writes a note, calls new_context, and continues in window 2"
echo "   (each request below is exactly what the model saw; old messages vanish after the reset)"
(
  cd "$DEMO/work"
  PI_CODING_AGENT_DIR=$DEMO/agent PI_OFFLINE=1 RELAY_FAUX_SCRIPT=$ROOT/demo/script.json RELAY_FAUX_TRACE=1 \
    "$NODE" "$PI" -p -ne -nbt --session-dir "$DEMO/sessions" \
      -e "$ROOT/demo/faux-provider.ts" -e "$ROOT/extension" --model faux/faux-1 \
      "The port parser rejects 65535. Find the bug in parse_port and fix it." </dev/null
) > "$DEMO/stdout.txt" 2> "$DEMO/stderr.txt" || { cat "$DEMO/stderr.txt"; exit 1; }
cat "$DEMO/stderr.txt"
say "2. The final answer pi printed on stdout"
cat "$DEMO/stdout.txt"

FILE=$(find "$DEMO/sessions" -name '*.jsonl' | head -1)
say "3. Window 2's boot block carries window 1's last actions (<in_progress>, no model call)"
"$NODE" -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const summary = lines.filter((l) => l.type === "compaction").map((l) => l.summary).pop() ?? "";
  const section = summary.match(/<in_progress [\s\S]*?<\/in_progress>/);
  if (!section) { console.error("no <in_progress> section in window 2"); process.exit(1); }
  console.log(section[0]);
' "$FILE"
say "4. relay windows <session file>"
"$RELAY" windows "$FILE"
say "5. relay search parse_port <sessions folder>  (every window stays searchable)"
"$RELAY" search parse_port "$DEMO/sessions"
say "6. relay stats <session file>  (what each window cost)"
"$RELAY" stats "$FILE"
say "Session file: $FILE"
