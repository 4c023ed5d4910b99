#!/usr/bin/env bash
# Pipeline-parallel training with compressed stage boundaries (analysis/pipeline-compression.md):
# scenarios/pp-small.json (4 stages, d_model 256, tinyshakespeare) trained once per boundary codec
# and timed on 80 and 200 Mbps, 50 ms links (a sweep over network.bandwidth). Two lanes of one
# training each use the 2 cores: about 17 minutes (30 CPU-minutes) on a 2-core CPU. Rerunning
# skips finished points. Prints one table per network; TARGET=LOSS for another target validation loss.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build-cpu/lowband ] || { cmake -S . -B build-cpu -DLOWBAND_CUDA=OFF -DCMAKE_BUILD_TYPE=Release -G Ninja && cmake --build build-cpu --target lowband; }
lowband=build-cpu/lowband runs=${RUNS:-runs/pipeline-compression}
mkdir -p "$runs" analysis/pipeline-compression
sweep() {  # sweep NAME [--set KEY=VALUE...]: one training per point, timed on both networks
  local name=$1; shift
  nice -n 5 "$lowband" sweep scenarios/pp-small.json --out "$runs/$name" --jobs 1 --threads 1 \
    --set name="pp-$name" --set network.bandwidth=80Mbps,200Mbps "$@" > "$runs/$name.log" 2>&1
}
b=compression.boundary
( sweep subspace --set $b.method=subspace --set $b.rank=2,8,40
  sweep quantize --set $b.method=quantize --set $b.bits=4 ) &
( sweep none
  sweep lowrank --set $b.method=lowrank --set $b.rank=2,8,40
  sweep topk --set $b.method=topk --set $b.topk_fraction=0.05 ) &
wait

target=${TARGET:-1.95}  # the uncompressed run's validation loss at ~63 % of its 500 steps
for bw in 80Mbps 200Mbps; do  # loss vs simulated time and vs step, one figure per network
  "$lowband" plot "$runs"/{none,subspace,lowrank,topk,quantize}/*-bw$bw* --out "$runs/plots-$bw" --format png --target-loss "$target" > /dev/null
  for f in loss_vs_time loss_vs_step val_loss_vs_time_log; do cp "$runs/plots-$bw/$f.png" "analysis/pipeline-compression/$f-${bw,,}.png"; done
done
python3 scripts/experiments/pipeline-compression-table.py "$runs" "$target"
