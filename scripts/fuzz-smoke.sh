#!/usr/bin/env bash
# Fuzzing smoke test (CI): builds the libFuzzer targets (tests/fuzz/) with clang,
# ASan and UBSan into build-fuzz/, then runs each for RUNS inputs (default 4000,
# seconds): the scenario loader and --set parsing seeded with scenarios/, the
# grid flags of sweep and estimate (axes, sweep sections) from the same seeds, the
# checkpoint and .u16 readers from a few seeds. A crash, leak, hang (10 s) or an
# error other than InputError fails it, leaving the input in build-fuzz/crashes/.
# A long local run: RUNS=1000000 scripts/fuzz-smoke.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-4000}
build="$root/build-fuzz"
"$root/scripts/install-deps.sh" --fuzz
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLOWBAND_CUDA=OFF -DLOWBAND_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz_scenario fuzz_checkpoint fuzz_sweep_grid >/dev/null

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus/scenario" "$corpus/checkpoint" "$corpus/sweep_grid" "$build/crashes"
find "$root/scenarios" -name '*.json' -exec cp {} "$corpus/scenario/" \;
printf '0network.bandwidth=1Gbps\n' | tr 0 '\0' >"$corpus/scenario/set-only"
cp "$corpus/scenario/"* "$corpus/sweep_grid/"
printf '{"sweep": {"training.seed": [1, 2]}}\000network.bandwidth=80Mbps,1Gbps\ncompression.method=none,mos\n' \
  >"$corpus/sweep_grid/axes"
printf '\001LBCKPT\r\n\002\0\0\0\0\0\0\0' >"$corpus/checkpoint/header"
printf '\002LBCKPT\r\n\002\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0' >"$corpus/checkpoint/fixed-header"
printf '\000\001\000\377\377' >"$corpus/checkpoint/tokens"

for target in scenario checkpoint sweep_grid; do
  log="$build/crashes/fuzz_$target.log"
  if ! (cd "$build/crashes" && "$build/fuzz_$target" -runs="$runs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
          -print_final_stats=1 "$corpus/$target" >"$log" 2>&1); then
    tail -40 "$log"
    echo "fuzz_$target FAILED: the input is in $build/crashes/" >&2
    exit 1
  fi
  echo "fuzz_$target: $(grep -E '^Done [0-9]+ runs' "$log" | tail -1), $(grep -E '^stat::peak_rss_mb' "$log")"
done
