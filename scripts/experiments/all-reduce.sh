#!/usr/bin/env bash
# analysis/all-reduce.md: parallel.all_reduce ring against direct in `lowband estimate`,
# on the shipped scenarios' own networks and on a full mesh (one link per pair of
# nodes, K/V all-gathered: scripts/experiments/estimate_cells.py's MESH).
#   scripts/experiments/all-reduce.sh [LOWBAND]   (default build/lowband; about 2 min)
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 - "${1:-build/lowband}" <<'PY'
import sys

sys.path.insert(0, "scripts/experiments")
from estimate_cells import DEC, MESH, MOS, est, sec, tokens

LB = sys.argv[1]
ROWS = [
    ("MoS paper, uncompressed", DEC, ()),
    ("MoS paper, MoS", MOS, ()),
    ("MoS paper, uncompressed", DEC, MESH),
    ("MoS paper, MoS", MOS, MESH),
    ("MoS paper, MoS, weights synced every 10 steps", MOS, MESH + ("compression.sync_every=10",)),
    ("Figure 3, pipeline x context, compressed", "scenarios/mos-fig3-pp-cp-compressed-300mbps.json", ()),
    ("Figure 3, pipeline x context, compressed", "scenarios/mos-fig3-pp-cp-compressed-300mbps.json", MESH),
    ("dp-small (4 replicas)", "scenarios/dp-small.json", ()),
    ("full-mesh-heterogeneous", "scenarios/full-mesh-heterogeneous.json", ()),
]
print("| scenario | network | ring: step, tokens/s | direct: step, tokens/s | direct / ring |")
print("|---|---|---:|---:|---:|")
for label, scenario, sets in ROWS:
    ring = est(LB, scenario, *sets, "parallel.all_reduce=ring")
    direct = est(LB, scenario, *sets, "parallel.all_reduce=direct")
    network = "its own (%s)" % ring["network"].split(",")[0] if not sets else "full mesh" + (
        ", K/V all-gathered" if "parallel.exchange=all_gather" in sets else "")
    print("| %s | %s | %s s, %s | %s s, %s | %.2f× |" % (
        label, network, sec(ring["step_seconds"]), tokens(ring["tokens_per_s"]), sec(direct["step_seconds"]),
        tokens(direct["tokens_per_s"]), direct["tokens_per_s"] / ring["tokens_per_s"]))
PY
