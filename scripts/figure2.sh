#!/usr/bin/env bash
# The MoS paper's Figure 2 at small scale, on a book corpus and a web-like corpus
# (scenarios/figure2/): per corpus one uncompressed training timed both as the
# centralized 100 Gbps run and as the decentralized 300 Mbps run (--also-time-on),
# and one MoS training; then plots and a report per corpus under analysis/figure2/.
# Gets its corpora with scripts/get-data.sh. About 5-10 minutes per training on a
# 2-core CPU. An interrupted training is resumed from its checkpoint when rerun.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -x build/lowband ] || scripts/build.sh --target lowband
scripts/get-data.sh gutenberg_nltk13.txt wikitext2_raw_test.txt
lowband=build/lowband
runs=${FIGURE2_RUNS:-runs/figure2}
mkdir -p "$runs"

. "$root/scripts/train-or-resume.sh"

for corpus in book web; do
  s=scenarios/figure2/fig2-$corpus
  train "fig2-$corpus-centralized" "$s-centralized.json" --also-time-on "$s-decentralized.json"
  train "fig2-$corpus-mos" "$s-mos.json"
  out=analysis/figure2/$corpus
  mkdir -p "$out"
  dirs=("$runs/fig2-$corpus-centralized" "$runs/fig2-$corpus-decentralized" "$runs/fig2-$corpus-mos")
  "$lowband" plot "${dirs[@]}" --out "$out" --format png
  "$lowband" report "${dirs[@]}" --baseline "$runs/fig2-$corpus-centralized" --out "$out/report.md"
done

# The ablations of analysis/figure2.md (FIGURE2_ABLATIONS=1): what the sparse weight
# sync and the warm start each cost on the book corpus.
if [ "${FIGURE2_ABLATIONS:-0}" = 1 ]; then
  s=scenarios/figure2/fig2-book
  train fig2-book-mos-allreduce "$s-mos.json" --set compression.weight_sync=all_reduce
  train fig2-book-uncompressed-sparse "$s-centralized.json" --set compression.weight_sync=sparse
  train fig2-book-mos-no-warm-start "$s-mos.json" --set compression.warm_start=false --set compression.warmup_steps=0
  # How much of each tensor the sparse sync averages per step (the paper's 5 % is the run above).
  train fig2-book-mos-sync-0.25 "$s-mos.json" --set compression.sync_fraction=0.25
  train fig2-book-mos-sync-1 "$s-mos.json" --set compression.sync_fraction=1
fi
