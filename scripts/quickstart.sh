#!/usr/bin/env bash
# One command: install what is missing, build, and answer the project's question on
# a small model trained here on real text (data/tinyshakespeare.txt, committed; no
# GPU, no download): how long does training take, in simulated wall-clock time,
# centralized at 100 Gbps, decentralized at 300 Mbps, and decentralized at 300 Mbps
# with what crosses the links compressed: the K/V by mixtures of subspaces, then
# the weight sync too (low-rank gradients)?
#
# Three trainings (scenarios/quickstart/): the uncompressed one, timed on both
# networks (train once, re-time: its losses do not depend on the network), the MoS
# one and the MoS + low-rank one. Then a table (lowband report) and
# loss-versus-time plots (lowband plot). Output: runs/quickstart/
# (QUICKSTART_RUNS=DIR for another place). Rerunning resumes what was interrupted
# and redraws the table.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" --target lowband
cd "$root"
lowband=build/lowband
runs=${QUICKSTART_RUNS:-runs/quickstart}
mkdir -p "$runs"

. "$root/scripts/train-or-resume.sh"
TRAIN_RESTART_UNSTAMPED=1  # runs from an older quickstart start again

s=scenarios/quickstart
start=$(date +%s)
# The decentralized run is the centralized training re-timed: it is redone with it.
central=(centralized-100gbps "$s/quickstart-centralized-100gbps.json" --also-time-on "$s/quickstart-decentralized-300mbps.json")
train_is_current "${central[@]}" || rm -rf "$runs/quickstart-decentralized-300mbps"
train "${central[@]}"
train mos-300mbps "$s/quickstart-mos-300mbps.json"
train mos-lowrank-300mbps "$s/quickstart-mos-lowrank-300mbps.json"
trained=$(( $(date +%s) - start ))

dirs=("$runs/centralized-100gbps" "$runs/quickstart-decentralized-300mbps" "$runs/mos-300mbps"
      "$runs/mos-lowrank-300mbps")
echo
echo "== Centralized 100 Gbps vs decentralized 300 Mbps: uncompressed, MoS K/V, MoS K/V + low-rank weight sync (trained here in ${trained}s) =="
"$lowband" report "${dirs[@]}" --baseline "$runs/centralized-100gbps" --out "$runs/report.md" >/dev/null
cat "$runs/report.md"
echo
echo "One seed per arm: no interval, so a difference here may be seed-to-seed noise."
echo "scripts/experiments/headline-seeds.sh trains each arm at 5 seeds and gives intervals (analysis/headline-seeds.md)."
if command -v gnuplot >/dev/null || [ -n "${LOWBAND_GNUPLOT:-}" ]; then
  "$lowband" plot "${dirs[@]}" --out "$runs/plots" --format png,svg >/dev/null
  echo "Loss vs simulated wall-clock time: $runs/plots/loss_vs_time.png (and $runs/plots/)"
fi
echo "Table: $runs/report.md. Run directories: ${dirs[*]}"
