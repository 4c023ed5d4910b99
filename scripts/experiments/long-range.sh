#!/usr/bin/env bash
# Keyed recall (analysis/long-range-kv.md): a task whose answers only remote K/V carry,
# trained under each K/V codec on scenarios/long-range/long-range-recall.json (4 context ranks,
# zigzag, ring, full gradient all-reduce; only the codec differs between runs).
#   ARMS (default: all below), SEEDS (default "1 2"), STEPS (default: the scenario's),
#   SETS (more "key=value" overrides, space-separated, e.g. "training.recall_pairs=1").
# One training at a time, one thread: about 3-5 minutes each on a shared 2-core CPU.
# Rerunning skips finished runs. Writes the table to stdout and $runs/table.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
lowband=${LOWBAND:-build/lowband} runs=${RUNS:-runs/long-range}
seeds=${SEEDS:-1 2}
arms=${ARMS:-uncompressed drop topk-1entry mos mos-paper mos-wire topk-matched topk-matched-cold quantize-4 mos-fixed mos-random mos-no-warm-start}
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
    mos-fixed) echo "{$mos,\"compress_final_layer\":true}" | sed 's/"learned"/"fixed"/' ;;
    mos-random) echo "{$mos,\"compress_final_layer\":true}" | sed 's/"learned"/"random"/' ;;
    mos-no-warm-start) echo "{$mos,\"compress_final_layer\":true,\"warm_start\":false}" | sed 's/"warmup_steps":[0-9]*/"warmup_steps":0/' ;;
    *) echo "unknown arm $1" >&2; exit 2 ;;
  esac
}

for seed in $seeds; do
  for arm in $arms; do
    dir="$runs/$arm-s$seed"
    [ -f "$dir/summary.json" ] && continue
    rm -rf "$dir"
    extra=(); [ -n "${STEPS:-}" ] && extra=(--set training.steps="$STEPS")
    for kv in ${SETS:-}; do extra+=(--set "$kv"); done
    echo "training $dir"
    OMP_NUM_THREADS=1 nice -n 5 "$lowband" run scenarios/long-range/long-range-recall.json --out "$dir" \
      --set name="lr-$arm" --set training.seed="$seed" --set compression="$(codec "$arm")" "${extra[@]}" \
      > "$dir.log" 2>&1
  done
done

# Remote-answer accuracy at each evaluation (mean over seeds, each seed in brackets), the final
# remote loss and local (control) accuracy, bytes saved, and whether every rank attended to the
# same K/V (kv_owner_receiver_error_max: 0 for mos; "—" where the owner attends to its exact K/V).
# Writes $runs/table.md, $runs/remote-accuracy.csv and, with gnuplot, $runs/remote-accuracy.png.
python3 - "$runs" "$seeds" "$arms" <<'EOF2' | tee "$runs/table.md"
import json, os, sys
runs, seeds, arms = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def evals(arm, s):
    rows = [json.loads(l) for l in open(f"{runs}/{arm}-s{s}/steps.jsonl")]
    return {r["step"]: r for r in rows if "val_answer_remote_accuracy" in r}
done = [a for a in arms if all(os.path.exists(f"{runs}/{a}-s{s}/summary.json") for s in seeds)]
steps = sorted(evals(done[0], seeds[0])) if done else []
print("| arm | " + " | ".join(f"remote acc. @{t}" for t in steps) + " | remote loss (final) | local acc. (final) "
      "| K/V bytes saved (run) | owner/receiver K/V error, max |")
print("|---|" + "---:|" * (len(steps) + 4))
curves = {}
for arm in done:
    ev = [evals(arm, s) for s in seeds]
    summ = [json.load(open(f"{runs}/{arm}-s{s}/summary.json")) for s in seeds]
    mean = lambda xs: sum(xs) / len(xs)
    cells = []
    for t in steps:
        acc = [e[t]["val_answer_remote_accuracy"] for e in ev]
        curves.setdefault(arm, []).append((t, mean(acc)))
        cells.append(f"{mean(acc):.2f} [" + ", ".join(f"{a:.2f}" for a in acc) + "]")
    saved = summ[0].get("kv_bytes_saved_fraction")
    agree = [x.get("kv_owner_receiver_error_max") for x in summ]
    print(f"| {arm} | " + " | ".join(cells)
          + f" | {mean([x['final_val_answer_remote_loss'] for x in summ]):.3f}"
          + f" | {mean([x['final_val_answer_local_accuracy'] for x in summ]):.3f} | "
          + (f"{100 * saved:.2f} %" if saved is not None else "—") + " | "
          + ("—" if None in agree else f"{max(agree):.2g}") + " |")
with open(f"{runs}/remote-accuracy.csv", "w") as f:
    f.write("step," + ",".join(curves) + "\n")
    for i, t in enumerate(steps):
        f.write(f"{t}," + ",".join(f"{curves[a][i][1]:.4f}" for a in curves) + "\n")
EOF2
if command -v gnuplot >/dev/null && [ -s "$runs/remote-accuracy.csv" ]; then
  n=$(head -1 "$runs/remote-accuracy.csv" | tr ',' '\n' | wc -l)
  gnuplot -e "set terminal pngcairo noenhanced size 1280,720 font 'sans,12'; set output '$runs/remote-accuracy.png';
    set linetype 9 lc rgb 'brown' pt 10; set linetype 10 lc rgb 'gray30' pt 12; set linetype cycle 10;
    set datafile separator ','; set key outside right; set xlabel 'training step'; set yrange [0:1.05];
    set ylabel 'validation accuracy on remote answers (chance 0.1)'; set grid;
    set title 'Keyed recall: answers only remote K/V carry (mean of seeds $seeds)';
    plot for [i=2:$n] '$runs/remote-accuracy.csv' using 1:i with linespoints lw 2 title columnheader(i)"
fi
