#!/usr/bin/env bash
# Protocol Models' "up to 99 %" boundary compression at a width where 99 % still leaves rank >= 5
# (analysis/pipeline-rank.md, issue 24 item 3): scenarios/pp-small.json widened to d_model 512
# (8 heads, SwiGLU 1376), 4 stages of one layer, seq_len 128, batch 8 in 4 microbatches, 200 steps,
# on tinyshakespeare; uncompressed vs subspace rank 51 (1 - 52/512 = 89.8 %) vs rank 5
# (1 - 6/512 = 98.8 %), timed on 80 Mbps, 50 ms full-mesh links. Two lanes on 2 cores:
# about 10 minutes wall. Rerunning skips finished points. TARGET=LOSS for another target loss.
set -euo pipefail
cd "$(dirname "$0")/../.."
lowband=${LOWBAND:-build/lowband} runs=${RUNS:-runs/pipeline-rank}
mkdir -p "$runs" analysis/pipeline-rank
sweep() {  # sweep NAME [--set KEY=VALUE...]: one training per point
  local name=$1; shift
  nice -n 10 "$lowband" sweep scenarios/pp-small.json --out "$runs/$name" --jobs 1 --threads 1 \
    --set name="pp-d512-$name" --set model.d_model=512 --set model.heads=8 --set model.kv_heads=8 \
    --set model.ffn_hidden=1376 --set model.seq_len=128 --set training.steps=200 \
    --set training.eval_every=20 --set training.eval_batches=4 --set network.bandwidth=80Mbps "$@" \
    > "$runs/$name.log" 2>&1
}
b=compression.boundary
sweep subspace --set $b.method=subspace --set $b.rank=51,5 &
sweep none &
wait

target=${TARGET:-2.2}  # the uncompressed run reaches it at step 114 of 200
"$lowband" plot "$runs"/{none,subspace}/pp-* --out "$runs/plots" --format png --target-loss "$target" > /dev/null
for f in loss_vs_time loss_vs_step val_loss_vs_time_log; do cp "$runs/plots/$f.png" "analysis/pipeline-rank/$f.png"; done
python3 scripts/experiments/pipeline-compression-table.py "$runs" "$target"
