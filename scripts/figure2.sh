#!/usr/bin/env bash
# The MoS paper's Figure 2 at small scale, on a book corpus and a web-like corpus
# (scenarios/figure2/): per corpus one uncompressed training timed both as the
# centralized 100 Gbps run and as the decentralized 300 Mbps run (--also-time-on),
# and one MoS training; then plots and a report per corpus under analysis/figure2/.
# Needs ../shared/data beside the repository. About 5-10 minutes per training on a
# 2-core CPU. An interrupted training is resumed from its checkpoint when rerun.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -x build/lowband ] || scripts/build.sh --target lowband
lowband=build/lowband
runs=${FIGURE2_RUNS:-runs/figure2}
mkdir -p "$runs"

# Trains a scenario into $runs/<name> unless it already finished; resumes it when
# it has a checkpoint.
train() {
  local scenario=$1; shift
  local name; name=$(basename "$scenario" .json)
  local dir="$runs/$name"
  if [ -f "$dir/checkpoint.bin" ]; then
    "$lowband" run --resume "$dir"
  else
    "$lowband" run "$scenario" --out "$dir" "$@"
  fi
}

for corpus in book web; do
  s=scenarios/figure2/fig2-$corpus
  train "$s-centralized.json" --also-time-on "$s-decentralized.json"
  train "$s-mos.json"
  out=analysis/figure2/$corpus
  mkdir -p "$out"
  dirs=("$runs/fig2-$corpus-centralized" "$runs/fig2-$corpus-decentralized" "$runs/fig2-$corpus-mos")
  "$lowband" plot "${dirs[@]}" --out "$out" --format png
  "$lowband" report "${dirs[@]}" --baseline "$runs/fig2-$corpus-centralized" --out "$out/report.md"
done
