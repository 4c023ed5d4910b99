#!/usr/bin/env bash
# The tables of analysis/measured-networks.md: the MoS paper's setting and the public
# SparseLoCo runs, estimated on the measured networks of scenarios/networks/ beside
# the networks their papers assumed. One `lowband estimate --json` per cell.
#   scripts/experiments/measured-networks.sh [LOWBAND]   (default: build/lowband, built first)
# About 60 estimates, a second or two each.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -ge 1 ]; then lowband=$1; else source scripts/experiments/binaries.sh; fi
exec python3 - "$lowband" <<'PY'
import sys

sys.path.insert(0, "scripts/experiments")
from estimate_cells import CEN, MOS, sec, tokens
from estimate_cells import est as estimate

LB = sys.argv[1]
AWS = "network=scenarios/networks/aws-8-regions.json"
HOME = "network=scenarios/networks/us-home-broadband.json"
TCP = ("network.model=tcp",)  # 4 MiB send buffer, cubic, warm connections: Linux's defaults
BIG_BUFFER = ("network.model=tcp", "network.tcp.send_buffer=64MiB")
# The ring through the regions in the order whose slowest hop is the fastest any ring's
# is (found by trying all 5040): Oregon, Virginia, London, Frankfurt, Ireland, Ohio,
# Seoul, Tokyo. It never crosses Europe-Asia; its slowest hop is Tokyo-Oregon, 0.523
# Gbps. Node order (0 Oregon ... 7 Ireland) crosses Seoul-London, 0.342 Gbps.
RING = ("parallel.placement=[0,1,5,6,7,2,4,3]",)
NETWORKS = [  # (name, sets), the first two as the papers assumed
    ("100 Gbps star (centralised)", ("network.bandwidth=100Gbps", "network.latency=10us")),
    ("300 Mbps / 10 ms star (the paper's decentralised)", ("network.bandwidth=300Mbps", "network.latency=10ms")),
    ("8 AWS regions, ideal", (AWS,)),
    ("8 AWS regions, ideal, ring ordered", (AWS,) + RING),
    ("8 AWS regions, tcp", (AWS,) + TCP),
    ("8 AWS regions, tcp, 64 MiB send buffer", (AWS,) + BIG_BUFFER),
    ("8 US homes (153.8 / 21.6 Mbps), ideal", (HOME,)),
]


def row(*cells):
    print("| " + " | ".join(cells) + " |")


def bound(r):
    return "%s s (%s)" % (sec(r["bound_seconds"]), r["bound_kind"])


print("## MoS paper setting: 8 context ranks, 131072-token sequences, A100-80GB\n")
print("`lowband estimate SCENARIO --json --set ...`; SCENARIO is `%s` (uncompressed, all-reduce weight sync)"
      " or `%s` (MoS K/V, sparse weight sync); the network's sets are in the first column.\n" % (CEN, MOS))
row("network", "uncompressed: step", "tokens/s", "bound", "MoS: step", "tokens/s", "bound", "MoS speed-up")
row(*["---"] * 8)
for name, sets in NETWORKS:
    u, m = estimate(LB, CEN, *sets), estimate(LB, MOS, *sets)
    row(name, sec(u["step_seconds"]) + " s", tokens(u["tokens_per_s"]), bound(u),
        sec(m["step_seconds"]) + " s", tokens(m["tokens_per_s"]), bound(m),
        "%.2f×" % (u["step_seconds"] / m["step_seconds"]))

SL = "scenarios/sparseloco-8b-replica-link.json"
# Eight replicas, one per node, each with the published runs' 320 sequences per inner step.
EIGHT = ("parallel.data=8", "training.batch_size=2560")
SL_NETWORKS = [
    ("500 / 110 Mbps star (the published participant's link)", ("network.nodes=8",)),
    ("8 AWS regions, ideal", (AWS,)),
    ("8 AWS regions, ideal, ring ordered", (AWS,) + RING),
    ("8 AWS regions, tcp", (AWS,) + TCP),
    ("8 AWS regions, tcp, 64 MiB send buffer", (AWS,) + BIG_BUFFER),
    ("8 US homes (153.8 / 21.6 Mbps), ideal", (HOME,)),
]
METHODS = [
    ("SparseLoCo (top-64/4096, 2-bit; ring all-gather)", ()),
    ("DiLoCo, float32 ring all-reduce", ('parallel.data_sync={"method": "diloco", "inner_steps": 30}',)),
]
print("\n## SparseLoCo runs: an 8B model, 8 replicas of 8 H100s (one per node), H = 30\n")
print("`lowband estimate %s --json --set parallel.data=8 --set training.batch_size=2560 --set ...`;"
      " DiLoCo sets `parallel.data_sync={\"method\": \"diloco\", \"inner_steps\": 30}`.\n" % SL)
row("network", "method", "inner step", "sync step", "comm per sync", "average step", "compute utilisation",
    "bound")
row(*["---"] * 8)
for name, sets in SL_NETWORKS:
    for method, msets in METHODS:
        r = estimate(LB, SL, *(EIGHT + sets + msets))
        row(name, method, sec(r["inner_step_seconds"]) + " s", sec(r["sync_step_seconds"]) + " s",
            sec(r["comm_per_sync_seconds"]) + " s", sec(r["step_seconds"]) + " s",
            "%.1f %%" % (100 * r["compute_utilisation"]), bound(r))
PY
