#!/usr/bin/env bash
# Every shipped scenario's estimate as one JSON line per point (every figure
# but the wall-clock ones), for comparing two builds: a change that
# must not move the estimate shows no difference.
#   scripts/estimate-all.sh [LOWBAND] > before.jsonl   # with the old build
#   scripts/estimate-all.sh [LOWBAND] > after.jsonl    # with the new one
#   diff before.jsonl after.jsonl && echo unchanged
set -euo pipefail
cd "$(dirname "$0")/.."
lowband=${1:-build/lowband}
find scenarios -name '*.json' ! -name '*.schema.json' | LC_ALL=C sort | while read -r f; do
  if out=$("$lowband" estimate --json "$f" 2>&1); then
    printf '%s\n' "$out" | python3 -c '
import json, sys
e = json.load(sys.stdin)
points = e["points"] if "points" in e else [e]
def strip(x):
    if isinstance(x, dict): return {k: strip(v) for k, v in x.items() if not k.endswith("wall_seconds")}
    if isinstance(x, list): return [strip(v) for v in x]
    return x
for p in points:
    print(json.dumps({**strip(p), "scenario": sys.argv[1]}, sort_keys=True))
' "$f"
  else
    printf '{"scenario": "%s", "refused": %s}\n' "$f" "$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))')"
  fi
done
