#!/usr/bin/env bash
# Issue 23: how `lowband estimate` scales with ranks. Wall time (median of REPEAT
# runs), peak RSS and the replay's share, for the MoS paper scenario as shipped,
# at 64..512 context ranks on its star, at 128 ranks on a full mesh with the
# all-gather exchange, and a 64-replica SparseLoCo of 4-stage pipelines.
#   scripts/experiments/estimate-scaling.sh [LOWBAND...]   (default build/lowband)
# Several binaries: one column block per binary, same cases, same machine.
# REPEAT (default 3) runs per case; cases over 60 s run once. CASES=... picks some.
set -euo pipefail
cd "$(dirname "$0")/../.."
bins=("$@"); [ ${#bins[@]} -eq 0 ] && bins=(build/lowband)
repeat=${REPEAT:-3}
mos=scenarios/mos-paper-mos-300mbps.json
declare -A args
args[mos-8]="$mos"
for p in 64 128 256 512; do
  args[mos-$p]="$mos --set parallel.context=$p --set network.nodes=$p"
done
args[mos-mesh-allgather-128]="$mos --set parallel.context=128 --set network.nodes=128 --set network.topology=full_mesh --set parallel.exchange=all_gather"
args[sparseloco-64x4]="scenarios/sparseloco-8b-rank-link.json --set parallel.data=64 --set parallel.pipeline=4 --set network.nodes=256 --set training.batch_size=20480"
cases=${CASES:-"mos-8 mos-64 mos-128 mos-256 mos-512 mos-mesh-allgather-128 sparseloco-64x4"}

one_run() {  # prints "wall_s rss_mb replay_s step_s"
  local out; out=$(mktemp)
  /usr/bin/time -f '%e %M' -o "$out.time" "$1" estimate ${args[$2]} --json > "$out"
  python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); wall, kb = open(sys.argv[1] + ".time").read().split()[-2:]
print(wall, int(kb) // 1024, r["replay_wall_seconds"], repr(r["step_seconds"]))
PY
  rm -f "$out" "$out.time"
}

printf '%-24s' case; for b in "${bins[@]}"; do printf ' | %-40s' "$b: wall s, peak MB, replay s"; done; printf ' | step_seconds\n'
for c in $cases; do
  printf '%-24s' "$c"; steps=""
  for b in "${bins[@]}"; do
    runs=(); first=$(one_run "$b" "$c"); runs+=("$first")
    if [ "$(echo "$first" | awk '{print ($1 < 60)}')" = 1 ]; then
      for ((i = 1; i < repeat; i++)); do runs+=("$(one_run "$b" "$c")"); done
    fi
    med=$(printf '%s\n' "${runs[@]}" | sort -g | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}')
    printf ' | %-40s' "$(echo "$med" | awk -v n=${#runs[@]} '{printf "%.2f (%d runs), %d, %.2f", $1, n, $2, $3}')"
    steps="$steps $(echo "$med" | awk '{print $4}')"
  done
  printf ' |%s\n' "$steps"
done
