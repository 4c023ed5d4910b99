#!/usr/bin/env bash
# Selective vs uniform boundary compression (analysis/hetero-selective.md; arXiv 2601.02360):
# scenarios/hetero-selective.json (4 SparseLoCo replicas of a 4-layer byte-level model on
# tinyshakespeare: 2 fast single-node replicas, 2 replicas of 4 weak nodes in a pipeline over
# 100 Mbps links) trained once per arm:
#   dense              no replica compresses (the reference);
#   selective-kK       only the weak replicas compress their boundaries (subspace rank K);
#   uniform-kK         every replica compresses: the fast replicas become 4-stage pipelines
#                      inside their 10 Gbps cluster with the same rank-K boundaries.
# K = 64, 16, 1 of d_model 256 (74.8 %, 93.6 %, 99.4 % of the boundary bytes removed).
# Those arms keep a compressing replica's weights in span(U) (boundary method subspace). The
# reference arrangement (boundary method embedding_residual: no weight constraint, the
# boundary projects x minus a snapshot of the embedding, re-taken after each outer step):
#   selective-ref-kK, uniform-ref-kK   as above, K = 16 and 1.
# Two trainings at a time, one thread each: about 80 minutes on a 2-core CPU. Rerunning skips
# finished runs; ARMS="name ..." trains only those. Prints a table; plots go to
# analysis/hetero-selective/.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build-cpu/lowband ] || { cmake -S . -B build-cpu -DLOWBAND_CUDA=OFF -DCMAKE_BUILD_TYPE=Release && cmake --build build-cpu --target lowband; }
lowband=build-cpu/lowband runs=${RUNS:-runs/hetero-selective} steps=${STEPS:-400}
mkdir -p "$runs" analysis/hetero-selective
train() {  # train NAME --set ...: one run, skipped when finished
  local name=$1; shift
  [ -f "$runs/$name/summary.json" ] && return 0
  rm -rf "${runs:?}/$name"
  OMP_NUM_THREADS=1 nice -n 5 "$lowband" run scenarios/hetero-selective.json --out "$runs/$name" \
    --set name="$name" --set training.steps="$steps" "$@" > "$runs/$name.log" 2>&1
}
uniform=(--set parallel.replicas.0='{"pipeline":4,"nodes":[0,1,2,3],"compress_boundaries":true}'
         --set parallel.replicas.1='{"pipeline":4,"nodes":[4,5,6,7],"compress_boundaries":true}')
ref=(--set compression.boundary.method=embedding_residual)
declare -A arms=(
  [dense]="--set parallel.replicas.2.compress_boundaries=false --set parallel.replicas.3.compress_boundaries=false"
  [selective-k64]="--set compression.boundary.rank=64" [uniform-k64]="--set compression.boundary.rank=64 U"
  [selective-k16]="--set compression.boundary.rank=16" [uniform-k16]="--set compression.boundary.rank=16 U"
  [selective-k1]="--set compression.boundary.rank=1" [uniform-k1]="--set compression.boundary.rank=1 U"
  [selective-ref-k16]="--set compression.boundary.rank=16 R" [uniform-ref-k16]="--set compression.boundary.rank=16 R U"
  [selective-ref-k1]="--set compression.boundary.rank=1 R" [uniform-ref-k1]="--set compression.boundary.rank=1 R U"
)
order=(dense selective-ref-k1 uniform-ref-k1 selective-k1 selective-ref-k16 uniform-ref-k16 selective-k16 uniform-k1
       selective-k64 uniform-k64 uniform-k16)
read -r -a chosen <<< "${ARMS:-${order[*]}}"
train_arm() {  # the arm's --set flags; U: every replica compresses; R: the reference arrangement
  local name=$1 flags=() word
  for word in ${arms[$name]}; do
    case $word in U) flags+=("${uniform[@]}") ;; R) flags+=("${ref[@]}") ;; *) flags+=("$word") ;; esac
  done
  train "$name" "${flags[@]}"
}
( for i in "${!chosen[@]}"; do (( i % 2 == 0 )) && train_arm "${chosen[$i]}"; done ) &
( for i in "${!chosen[@]}"; do (( i % 2 == 1 )) && train_arm "${chosen[$i]}"; done ) &
wait
names=()
for n in "${order[@]}"; do [ -f "$runs/$n/summary.json" ] && names+=("$n"); done
"$lowband" plot "${names[@]/#/$runs/}" --out "$runs/plots" --format png > /dev/null
for f in loss_vs_bytes loss_vs_time loss_vs_step; do cp "$runs/plots/$f.png" "analysis/hetero-selective/$f.png"; done
"$lowband" report "${names[@]/#/$runs/}"
python3 scripts/experiments/hetero-selective-table.py "$runs"
