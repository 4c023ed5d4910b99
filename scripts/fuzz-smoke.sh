#!/usr/bin/env bash
# Fuzzing smoke test (CI): builds the libFuzzer targets (tests/fuzz/) with clang,
# ASan and UBSan into build-fuzz/, then runs each for RUNS inputs (default 4000,
# seconds): the scenario loader and --set parsing seeded with scenarios/, the
# grid flags of sweep and estimate (axes, sweep sections) from the same seeds, the
# checkpoint and .u16 readers from a few seeds, and every subcommand's flags
# (fuzz_cli_flags: an argv, checked and not run) from a few command lines. A crash,
# leak, hang (10 s) or an error other than InputError (or, for the command line,
# CLI11's parse errors) fails it, leaving the input in build-fuzz/crashes/.
# The scenario targets take tests/fuzz/scenario.dict (the newer sections' words).
# A long local run: RUNS=1000000 scripts/fuzz-smoke.sh (TARGETS="scenario ..." for some)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-4000}
build="$root/build-fuzz"
"$root/scripts/install-deps.sh" --fuzz
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLOWBAND_CUDA=OFF -DLOWBAND_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz_scenario fuzz_checkpoint fuzz_sweep_grid \
  fuzz_cli_flags >/dev/null

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus/scenario" "$corpus/checkpoint" "$corpus/sweep_grid" "$corpus/cli_flags" "$build/crashes"
find "$root/scenarios" -name '*.json' -exec cp {} "$corpus/scenario/" \;
printf '0network.bandwidth=1Gbps\n' | tr 0 '\0' >"$corpus/scenario/set-only"
# The newer sections from shipped scenarios plus --set lines: a changing network with
# restarts and a random walk, the recall task's text form, sequences in flight.
{ cat "$root/scenarios/quickstart-changing-network.json"
  printf '\000network.restart={"stall_timeout": "30s", "relaunch": "1min"}\n'
  printf 'network.dynamics.3={"node": 3, "bandwidth": {"random_walk": {"seed": 1, "sigma": 0.1, "min": 0.5}}}\n'
} >"$corpus/scenario/dynamics-restart"
{ cat "$root/scenarios/quickstart.json"
  printf '\000network.dynamics=[{"bandwidth": {"daily": {"low": 0.5, "period": "1min", "sample": "5s"}}}, '
  printf '{"node": 1, "latency": {"random_walk": {"seed": 2, "sigma": 0.2, "max": 3}}}, '
  printf '{"node": 2, "speed": {"steps": [["5s", 0.5], ["9s", 1]]}}, '
  printf '{"node": 3, "state": {"outages": {"seed": 4, "mean_up": "30s", "mean_down": "2s"}}}]\n'
  printf 'network.restart={"stall_timeout": "1s", "relaunch": "2s"}\n'; } >"$corpus/scenario/every-trace-kind"
{ cat "$root/scenarios/long-range/long-range-recall.json"
  printf '\000training.recall_form=text\ntraining.recall_pairs=2\n'; } >"$corpus/scenario/recall-text"
{ cat "$root/scenarios/quickstart.json"; printf '\000training.batch_size=4\nparallel.microbatches=4\n'; } \
  >"$corpus/scenario/in-flight"
cp "$root/tests/fuzz/regressions/scenario-"* "$corpus/scenario/"  # inputs that once failed, kept as seeds
cp "$corpus/scenario/"* "$corpus/sweep_grid/"
printf '{"sweep": {"training.seed": [1, 2]}}\000network.bandwidth=80Mbps,1Gbps\ncompression.method=none,mos\n' \
  >"$corpus/sweep_grid/axes"
printf '\001LBCKPT\r\n\002\0\0\0\0\0\0\0' >"$corpus/checkpoint/header"
printf '\002LBCKPT\r\n\002\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0' >"$corpus/checkpoint/fixed-header"
printf '\000\001\000\377\377' >"$corpus/checkpoint/tokens"
# Command lines: one argument per NUL-separated piece.
printf 'estimate\000--builtin\000default\000--set\000network.bandwidth=1Gbps' >"$corpus/cli_flags/estimate"
printf 'estimate\000--set\000network.bandwidth=80Mbps,1Gbps\000--plot\000x.svg' >"$corpus/cli_flags/estimate-grid"
printf 'run\000--builtin\000default\000--threads\0005' >"$corpus/cli_flags/run"
printf 'run\000--resume\000dir\000--steps\00010' >"$corpus/cli_flags/run-resume"
printf 'sweep\000--builtin\000default\000--set\000training.seed=1,2\000--jobs\0002\000--dry-run' \
  >"$corpus/cli_flags/sweep"
printf 'sweep\000--builtin\000default\000--set\000training.seed=1,2\000--launcher\000slurm\000--dry-run\000--jobs\0002\000--partition\000p\000--sbatch=--qos=x' \
  >"$corpus/cli_flags/sweep-slurm"
printf 'sweep\000--resume\000dir\000--training\0002\000--threads\0001' >"$corpus/cli_flags/sweep-training"
printf 'report\000dir\000--target-loss\000-1' >"$corpus/cli_flags/report"
printf 'report\000dir\000--answer-threshold\0001.5\000--out\000r.md' >"$corpus/cli_flags/report-answers"
printf 'estimate\000scenarios/quickstart-changing-network.json\000--steps\00020\000--csv\000x.csv' \
  >"$corpus/cli_flags/estimate-steps"
printf 'bench-comm\000--transport\000in-process\000--ranks\0002048' >"$corpus/cli_flags/bench-comm"
printf 'bench-comm\000--builtin\000default\000--sizes\0001KB,0B\000--pair\0000,1' >"$corpus/cli_flags/bench-comm-sim"
printf 'plot\000x\000--format\000png,gif' >"$corpus/cli_flags/plot"
printf 'tokenize\000in.txt\000--tokenizer\000byte\000--out\000out.u16' >"$corpus/cli_flags/tokenize"
printf 'validate\000--builtin\000nope' >"$corpus/cli_flags/validate"
printf 'scenario-docs\000--root\000.' >"$corpus/cli_flags/scenario-docs"

for target in ${TARGETS:-scenario checkpoint sweep_grid cli_flags}; do
  log="$build/crashes/fuzz_$target.log"
  dict=()
  case $target in scenario|sweep_grid) dict=(-dict="$root/tests/fuzz/scenario.dict") ;; esac
  if ! (cd "$build/crashes" && "$build/fuzz_$target" "${dict[@]}" -runs="$runs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
          -print_final_stats=1 "$corpus/$target" >"$log" 2>&1); then
    tail -40 "$log"
    echo "fuzz_$target FAILED: the input is in $build/crashes/" >&2
    exit 1
  fi
  echo "fuzz_$target: $(grep -E '^Done [0-9]+ runs' "$log" | tail -1), $(grep -E '^stat::peak_rss_mb' "$log")"
done
