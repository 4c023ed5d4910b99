#!/usr/bin/env bash
# Outer syncs beside the inner steps (analysis/overlap.md): scenarios/dp-overlap.json
# (4 DiLoCo replicas, H = 10, 300 Mbps / 50 ms full mesh, cpu-profile compute) trained
# in seven arms at SEEDS seeds each (default 3: training.seed 1..3):
#   sync     delay_steps 0: the replicas wait for each exchange (DiLoCo as published)
#   delayed  delay_steps 10 = H: merged a round later (DiLoCoX's one-step delay)
#   eager    delay_steps 10, eager: the replica's own fresh Δ in place of its stale one
#   mix      delay_steps 2, local_weight 0.5: merged 2 steps later, half the local
#            weights kept (Streaming DiLoCo's overlap and mixing, one fragment)
#   broken   delayed with outer lr 1e-6: every round's work thrown away (the
#            comparison must tell it apart from the others)
#   mix0     delay_steps 0, local_weight 0.5: mix's mixing without its overlap
#   delayed-sgd  delayed with outer momentum 0: the staleness without Nesterov's
#            momentum adding it up
# then one report (each arm's mean ± 95 % Student-t interval, Welch's test against
# sync) and the plots. Runs: runs/overlap/ (RUNS=DIR for another place); rerunning
# skips what is done. JOBS trainings at a time (default 2), one thread each. The
# binaries are copied first (binaries.sh).
# STEPS steps per training (default 300). About 4 minutes per training on a 2-core CPU:
# 21 trainings, two at a time, ~80 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/experiments/binaries.sh
seeds=${SEEDS:-3} jobs=${JOBS:-2} steps=${STEPS:-300}
runs=${RUNS:-runs/overlap}
out=${OUT:-analysis/overlap}
mkdir -p "$runs" "$out"
arm() {  # arm NAME [--set ...]
  local name=$1
  shift
  OMP_NUM_THREADS=1 "$lowband" sweep scenarios/dp-overlap.json --seeds "$seeds" --jobs "$jobs" --threads 1 \
    --steps "$steps" "$@" \
    --out "$runs/$name" >"$runs/$name.log"
}
start=$(date +%s)
arm sync --set parallel.data_sync.delay_steps=0
arm delayed
arm eager --set parallel.data_sync.eager=true
arm mix --set parallel.data_sync.delay_steps=2 --set parallel.data_sync.local_weight=0.5
arm broken --set parallel.data_sync.outer_lr=0.000001
arm mix0 --set parallel.data_sync.delay_steps=0 --set parallel.data_sync.local_weight=0.5
arm delayed-sgd --set parallel.data_sync.outer_momentum=0
echo "trained in $(($(date +%s) - start)) s"
# The arms share the scenario's name: --labels names them.
labels=sync,delayed,eager,mix,broken,mix0,delayed-sgd
"$lowband" report "$runs"/{sync,delayed,eager,mix,broken,mix0,delayed-sgd} --labels $labels \
  --baseline "$runs/sync/dp-overlap-seed1" --out "$out/report.md"
"$lowband" plot "$runs"/{sync,delayed,eager,mix,broken,mix0,delayed-sgd} --labels $labels --format png --out "$out" >/dev/null
# Per arm: compute utilisation, simulated time and final validation loss (utilisation.py).
scripts/experiments/utilisation.py "$runs" sync delayed eager mix broken mix0 delayed-sgd >"$out/utilisation.md"
echo "wrote $out/report.md, $out/utilisation.md and the plots in $out/"
