#!/usr/bin/env bash
# The quickstart's comparison with intervals (analysis/headline-seeds.md): its arms
# trained at SEEDS seeds each (default 5: training.seed 1..5), then one report with
# each arm's mean ± 95 % Student-t interval and Welch's test against the centralized
# arm, and the plots (a band per arm in val_loss_vs_time_seeds).
#   scripts/experiments/headline-seeds.sh [byte|gpt2]...   (default: byte)
# byte: the quickstart itself (data/tinyshakespeare.txt, byte-level).
# gpt2: the same model and text with GPT-2 tokens (model.vocab 50257; the embedding
#       and output layer then dominate the weight sync).
# Per seed: the uncompressed training timed on four networks (100 Gbps / 300 Mbps
# × 5 us / 2 ms access links: the centralized and decentralized arms, and the two
# mixed ones), the MoS one and the MoS + low-rank one, all at 300 Mbps, 2 ms, and a
# broken arm that the comparison must tell apart: K/V dropped (compression.method
# drop: nothing crosses, receivers attend to zeros).
# Runs: runs/headline-seeds/CORPUS/ (RUNS=DIR for another place); rerunning skips
# what is done (lowband sweep --out DIR resumes). Two trainings at a time
# (JOBS), one thread each. ARMS picks arms (default "uncompressed mos mos-lowrank
# drop"; uncompressed is the baseline, so always among them). The throughput-enabling
# settings of analysis/seed-claims.md, on MoS: mos-sparse-sync (a 5 % sparse weight
# sync every step instead of the full gradient all-reduce), mos-sparse-sync10 (the
# same every 10 steps), mos-8-in-flight (8 sequences per step, all in flight:
# batch_size 8, microbatches 8; 8x the tokens per step). OUT: where the report and
# plots go (default analysis/headline-seeds). On a 2-core CPU a
# byte training takes about 50 s, a gpt2 one about 5 min, and a gpt2 mos-lowrank
# one about 45 min (PowerSGD on the 50257-row embedding and output matrices, every
# step, on one thread).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build.sh --target lowband >/dev/null
lowband=build/lowband
seeds=${SEEDS:-5} jobs=${JOBS:-2}
corpora=("$@")
[ ${#corpora[@]} -gt 0 ] || corpora=(byte)
s=scenarios/quickstart
for corpus in "${corpora[@]}"; do
  case $corpus in
    byte) data=() ;;
    gpt2) data=(--set model.vocab=50257 --set training.tokenizer=gpt2) ;;
    *) echo "headline-seeds.sh: corpus must be byte or gpt2, got '$corpus'" >&2; exit 2 ;;
  esac
  runs=${RUNS:-runs/headline-seeds}/$corpus
  out=${OUT:-analysis/headline-seeds}/$corpus
  mkdir -p "$runs" "$out"
  sweep() {  # sweep NAME FILE [--set ...]: SEEDS seeds of FILE
    local name=$1 file=$2; shift 2
    OMP_NUM_THREADS=1 "$lowband" sweep "$file" --seeds "$seeds" --jobs "$jobs" --threads 1 "${data[@]}" "$@" \
      --out "$runs/$name" > "$runs/$name.log"
  }
  start=$(date +%s)
  dirs=()
  for arm in ${ARMS:-uncompressed mos mos-lowrank drop}; do
    case $arm in
      uncompressed) sweep uncompressed "$s/quickstart-decentralized-300mbps.json" \
                      --set network.bandwidth=100Gbps,300Mbps --set network.latency=5us,2ms ;;
      mos) sweep mos "$s/quickstart-mos-300mbps.json" ;;
      mos-lowrank) sweep mos-lowrank "$s/quickstart-mos-lowrank-300mbps.json" ;;
      mos-sparse-sync) sweep mos-sparse-sync "$s/quickstart-mos-300mbps.json" --set compression.weight_sync=sparse \
                         --set compression.sync_fraction=0.05 --set name=quickstart-mos-sparse-sync-300mbps ;;
      mos-sparse-sync10) sweep mos-sparse-sync10 "$s/quickstart-mos-300mbps.json" --set compression.weight_sync=sparse \
                           --set compression.sync_fraction=0.05 --set compression.sync_every=10 \
                           --set name=quickstart-mos-sparse-sync10-300mbps ;;
      mos-8-in-flight) sweep mos-8-in-flight "$s/quickstart-mos-300mbps.json" --set training.batch_size=8 \
                         --set parallel.microbatches=8 --set name=quickstart-mos-8-in-flight-300mbps ;;
      drop) sweep drop "$s/quickstart-mos-300mbps.json" --set 'compression={"method":"drop"}' \
              --set name=quickstart-drop-300mbps ;;
      *) echo "headline-seeds.sh: unknown arm '$arm'" >&2; exit 2 ;;
    esac
    dirs+=("$runs/$arm")
  done
  echo "headline-seeds ($corpus): trained in $(( $(date +%s) - start )) s" >&2
  # The baseline: the uncompressed arm at 100 Gbps, 5 us (seed 1's run directory).
  central=$(ls -d "$runs"/uncompressed/*-bw100Gbps-lat5us-seed1)
  "$lowband" report "${dirs[@]}" --baseline "$central" --out "$out/report.md" >/dev/null
  "$lowband" plot "${dirs[@]}" --out "$out" --format png >/dev/null
  echo "headline-seeds ($corpus): $out/report.md, $out/val_loss_vs_time_seeds.png" >&2
done
