#!/usr/bin/env bash
# Keyed recall (analysis/long-range-kv.md): a task whose answers only remote K/V carry,
# trained under each K/V codec on scenarios/long-range/long-range-recall.json (4 context ranks,
# zigzag, ring, full gradient all-reduce; only the codec differs between runs).
#   ARMS (default: all below), SEEDS (default "1 2"), STEPS (default: the scenario's),
#   SETS (more "key=value" overrides, space-separated, e.g. "training.recall_pairs=1").
# One training at a time, one thread: about 3-5 minutes each on a shared 2-core CPU.
# Rerunning skips finished runs. Writes $runs/report.md and $runs/plots/.
set -euo pipefail
cd "$(dirname "$0")/../.."
lowband=${LOWBAND:-build/lowband} runs=${RUNS:-runs/long-range}
seeds=${SEEDS:-1 2}
arms=${ARMS:-uncompressed drop topk-1entry mos mos-paper mos-wire topk-matched topk-matched-cold quantize-4 mos-fixed mos-random mos-no-warm-start mos-r1-2 mos-r8-16 topk-0.005 topk-0.06 mos-warm25 mos-warm100}
mkdir -p "$runs"

# MoS as kv-baselines (K 98 %, V 95 % removed: rank 3 / 6 of 128, WARMUP (default 100) warm-up
# steps, learned rotation), every layer compressed (compress_final_layer, so that top-k at the
# same bytes compresses the same layers), the paper's constraint (every rank attends to the
# reconstruction: owner_kv's default) or wire-only (mos-wire); mos-paper: the paper's setup, the
# final layer's K/V uncompressed. Top-k at MoS's bytes per compressed step (analysis/kv-baselines.md:
# f = 0.01764) after the same uncompressed warm-up (topk-matched) or from step 0 (topk-matched-cold);
# drop: nothing sent (the floor).
warmup=${WARMUP:-100}
mos="\"method\":\"mos\",\"k_ratio\":0.98,\"v_ratio\":0.95,\"warmup_steps\":$warmup,\"rotation\":\"learned\",\"weight_sync\":\"all_reduce\""
codec() {
  case $1 in
    uncompressed) echo '{"method":"none"}' ;;
    drop) echo '{"method":"drop","weight_sync":"all_reduce"}' ;;
    topk-1entry) echo '{"method":"topk","topk_fraction":1e-6,"weight_sync":"all_reduce"}' ;;  # 1 of 32768 per block
    mos) echo "{$mos,\"compress_final_layer\":true}" ;;
    mos-paper) echo "{$mos}" ;;
    mos-wire) echo "{$mos,\"compress_final_layer\":true,\"owner_kv\":\"exact\"}" ;;
    topk-matched) echo "{\"method\":\"topk\",\"topk_fraction\":0.01764,\"warmup_steps\":$warmup,\"weight_sync\":\"all_reduce\"}" ;;
    topk-matched-cold) echo '{"method":"topk","topk_fraction":0.01764,"weight_sync":"all_reduce"}' ;;
    quantize-4) echo '{"method":"quantize","bits":4,"weight_sync":"all_reduce"}' ;;
    # The bytes-versus-accuracy curve: MoS at other ranks (every layer), top-k at other fractions
    # (after the same warm-up).
    mos-r1-2) echo "{$mos,\"compress_final_layer\":true}" | sed 's/"k_ratio":0.98,"v_ratio":0.95/"k_rank":1,"v_rank":2/' ;;
    mos-r8-16) echo "{$mos,\"compress_final_layer\":true}" | sed 's/"k_ratio":0.98,"v_ratio":0.95/"k_rank":8,"v_rank":16/' ;;
    topk-0.005) echo "{\"method\":\"topk\",\"topk_fraction\":0.005,\"warmup_steps\":$warmup,\"weight_sync\":\"all_reduce\"}" ;;
    topk-0.06) echo "{\"method\":\"topk\",\"topk_fraction\":0.06,\"warmup_steps\":$warmup,\"weight_sync\":\"all_reduce\"}" ;;
    # The warm-up length (the same MoS, U0 fitted after 25 or 100 uncompressed steps instead of WARMUP).
    mos-warm25) echo "{$mos,\"compress_final_layer\":true,\"fit_during_lr_warmup\":true}" | sed 's/"warmup_steps":[0-9]*/"warmup_steps":25/' ;;
    mos-warm100) echo "{$mos,\"compress_final_layer\":true}" | sed 's/"warmup_steps":[0-9]*/"warmup_steps":100/' ;;
    mos-fixed) echo "{$mos,\"compress_final_layer\":true}" | sed 's/"learned"/"fixed"/' ;;
    mos-random) echo "{$mos,\"compress_final_layer\":true}" | sed 's/"learned"/"random"/' ;;
    mos-no-warm-start) echo "{$mos,\"compress_final_layer\":true,\"warm_start\":false}" | sed 's/"warmup_steps":[0-9]*/"warmup_steps":0/' ;;
    *) echo "unknown arm $1" >&2; exit 2 ;;
  esac
}

# A run is finished when its summary says all its steps are done or it diverged (a run killed
# part-way has a summary too: it is trained again from step 0).
finished() {
  [ -f "$1/summary.json" ] && python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))
sys.exit(0 if s.get("steps_done") == s.get("steps_planned") or s.get("diverged") else 1)' "$1/summary.json"
}

for seed in $seeds; do
  for arm in $arms; do
    dir="$runs/$arm-s$seed"
    finished "$dir" && continue
    rm -rf "$dir"
    extra=(); [ -n "${STEPS:-}" ] && extra=(--set training.steps="$STEPS")
    for kv in ${SETS:-}; do extra+=(--set "$kv"); done
    echo "training $dir"
    OMP_NUM_THREADS=1 nice -n 5 "$lowband" run scenarios/long-range/long-range-recall.json --out "$dir" \
      --set name="lr-$arm" --set training.seed="$seed" --set compression="$(codec "$arm")" "${extra[@]}" \
      > "$dir.log" 2>&1
  done
done

# The table with intervals (lowband report: each arm's remote-answer accuracy, its area and the
# steps to 0.9, mean ± 95 % t-interval over seeds, Welch's test against uncompressed) and the
# figures (lowband plot: accuracy per evaluation with a band over seeds; accuracy against the
# K/V bytes sent, the codecs' bytes-versus-accuracy curves), of every finished run asked for.
done=()
for arm in $arms; do
  for seed in $seeds; do
    finished "$runs/$arm-s$seed" && done+=("$runs/$arm-s$seed")
  done
done
[ ${#done[@]} -gt 0 ] || { echo "no finished runs in $runs" >&2; exit 1; }
"$lowband" report "${done[@]}" --out "$runs/report.md"
"$lowband" plot "${done[@]}" --out "$runs/plots" --format png >/dev/null
echo "long-range: $runs/report.md, $runs/plots/remote_accuracy_vs_step_seeds.png, remote_accuracy_vs_kv_bytes.png"
