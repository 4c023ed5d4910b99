#!/usr/bin/env bash
# Replicas that may miss a round, beside the methods that do not wait
# (analysis/partial.md): scenarios/dp-partial.json (4 DiLoCo replicas, H = 10,
# 300 Mbps / 50 ms full mesh; node 3 at 0.4x compute throughout, node 1 down from
# 20 s to 35 s) trained in nine arms at SEEDS seeds each (default 3: training.seed 1..3):
#   sync         DiLoCo as published: every round waits for every replica
#   deadline-0.2 a round closes 0.2 s after its first replica is ready (the slow
#                replica, 0.65 s behind, misses every round)
#   deadline-1   ... 1 s after (the slow replica makes it; a replica that is down does not)
#   quorum-3     a round closes when 3 replicas are ready (no deadline to wait out)
#   quorum-3-400 the same for 400 steps: about sync's simulated time
#   delayed      delay_steps 10 = H: each exchange merged a round later
#   eager        delayed, with the replica's own fresh Δ in place of its stale one
#   streaming-2  fragments 2: half the model synced every 5 steps
#   streaming-4  fragments 4
#   broken       sync with outer lr 1e-6: every round's work thrown away (the
#                comparison must tell it apart from the others)
# then one report (each arm's mean ± 95 % Student-t interval, Welch's test against
# sync), the plots, and utilisation.md (utilisation.py: a fast replica's compute
# utilisation, the simulated time, the final loss, the replicas dropped per round). Runs: runs/partial/
# (RUNS=DIR for another place); rerunning skips what is done. JOBS trainings at a
# time (default 2), one thread each; the binaries are copied first (binaries.sh). STEPS steps per
# training (default 200; quorum-3-400 takes 400). About 2.5 minutes per 200-step training on a 2-core CPU: 27
# trainings and three of 400 steps, two at a time, ~55 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/experiments/binaries.sh
seeds=${SEEDS:-3} jobs=${JOBS:-2} steps=${STEPS:-200}
runs=${RUNS:-runs/partial}
out=${OUT:-analysis/partial}
mkdir -p "$runs" "$out"
sync=parallel.data_sync
arms=(sync deadline-0.2 deadline-1 quorum-3 quorum-3-400 delayed eager streaming-2 streaming-4 broken)
sets() {  # the arm's --set flags
  case $1 in
    sync) ;;
    deadline-0.2) echo "--set $sync.deadline_seconds=0.2" ;;
    deadline-1) echo "--set $sync.deadline_seconds=1" ;;
    quorum-3) echo "--set $sync.quorum=3" ;;
    quorum-3-400) echo "--set $sync.quorum=3 --steps 400" ;;
    delayed) echo "--set $sync.delay_steps=10" ;;
    eager) echo "--set $sync.delay_steps=10 --set $sync.eager=true" ;;
    streaming-2) echo "--set $sync.fragments=2" ;;
    streaming-4) echo "--set $sync.fragments=4" ;;
    broken) echo "--set $sync.outer_lr=0.000001" ;;
  esac
}
start=$(date +%s)
for arm in "${arms[@]}"; do
  # shellcheck disable=SC2046  # the flags split as words
  OMP_NUM_THREADS=1 "$lowband" sweep scenarios/dp-partial.json --seeds "$seeds" --jobs "$jobs" --threads 1 \
    $(sets "$arm" | grep -q -- --steps || echo --steps "$steps") $(sets "$arm") --out "$runs/$arm" >"$runs/$arm.log"
done
echo "trained in $(($(date +%s) - start)) s"
dirs=()
for arm in "${arms[@]}"; do dirs+=("$runs/$arm"); done
# The arms share the scenario's name: --labels names them.
labels=$(IFS=,; echo "${arms[*]}")
"$lowband" report "${dirs[@]}" --labels "$labels" --baseline "$runs/sync/dp-partial-seed1" --out "$out/report.md"
# The plot of each arm's mean and band (one series per arm; the per-run ones hold 30).
plots=$(mktemp -d)
"$lowband" plot "${dirs[@]}" --labels "$labels" --format png --out "$plots" >/dev/null
cp "$plots/val_loss_vs_time_seeds.png" "$out/"
rm -rf "$plots"
# Utilisation: a fast replica's compute per step (the estimate's, inner and outer
# averaged over the period) times the steps, over each run's time; the busiest
# rank's would be the slow replica's.
compute=$("$lowband" estimate scenarios/dp-partial.json --json |
  python3 -c "import json, sys; print(json.load(sys.stdin)['compute_seconds'])")
scripts/experiments/utilisation.py --compute-per-step "$compute" "$runs" "${arms[@]}" >"$out/utilisation.md"
echo "wrote $out/report.md, $out/utilisation.md and the plots in $out/"
