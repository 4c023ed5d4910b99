#!/usr/bin/env bash
# Issue 27: a real training step against its replay over the testbed's grid, in one
# command (as root, from the repository root):
#
#   scripts/testbed/step-grid.sh OUT_DIR [ROUNDS]
#
# ROUNDS (default 3) rounds, each going through 100 Mbit/s 1 ms, 1 Gbit/s 10 ms and
# 300 Mbit/s 25 ms per access link with, one after another (so the machine's load
# falls alike on each): the context-parallel step (testbed-step) with the MPI
# progress thread, the same without it (LOWBAND_MPI_PROGRESS=0), and 4 SparseLoCo
# replicas (testbed-step-sparseloco), then the collectives alone (13.2 MB); the
# tables give medians over the rounds. Every testbed session holds
# /run/lowband-testbed.lock, so another user of the testbed waits instead of
# tearing it down. Ends with train_step.py's tables,
# its CSVs written as analysis/network-fidelity/train-step-progress*.csv.
# LOWBAND=path/to/lowband (default build/lowband, copied into OUT_DIR first so a
# rebuild during the grid does not change the binary under test).
set -euo pipefail
[ $# -ge 1 ] || { sed -n 5p "$0"; exit 2; }
out=$1 rounds=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$out"
cp "${LOWBAND:-$root/build/lowband}" "$out/lowband"
tb() { flock /run/lowband-testbed.lock env LOWBAND="$out/lowband" "$@"; }
points=("100 1" "1000 10" "300 25")
for ((round = 1; round <= rounds; round++)); do
  for point in "${points[@]}"; do
    set -- $point
    tb LABEL=progress "$here/train-step.sh" "$1" "$2" "$out/round$round" 1
    tb LABEL=noprogress LOWBAND_MPI_PROGRESS=0 "$here/train-step.sh" "$1" "$2" "$out/round$round" 1
    tb LABEL=sparseloco SCENARIO=testbed-step-sparseloco "$here/train-step.sh" "$1" "$2" "$out/round$round" 1
    tb LABEL=progress "$here/train-step.sh" --collectives "$1" "$2" "$out/collectives/round$round"
  done
done
python3 "$root/analysis/network-fidelity/train_step.py" "$out" "$out/collectives" --csv train-step-progress.csv
