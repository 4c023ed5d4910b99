#!/usr/bin/env bash
# analysis/network-dynamics.md: the MoS paper's setting (8 context ranks, 300 Mbps star,
# uncompressed and MoS, its 10,000 steps) and a SparseLoCo setting (20 replicas of an 8B
# model, 500 Mbps, its 3,000 steps) on a constant network and under three changes:
#   daily-dips      every link: a daily cosine down to 0.3 of nominal at 20h, times seeded
#                   dips to 0.1 (mean 1 h apart, mean 5 min long)
#   node-lost-10min node 2 down from 1 h to 1 h 10 min
#   node-slow-1h    node 2 at half speed from 1 h to 2 h
#   node-lost-10min-restart  node-lost-10min under network.restart: a 5 min watchdog, a
#                   3 min relaunch, a checkpoint about every hour (training.checkpoint_every:
#                   3600 s over the nominal step, rounded)
# Each cell is `lowband estimate --json` of the scenario with --set network.dynamics=<JSON>:
# the layout's steps replayed back to back on the run's clock (changing_network section),
# under each network.message_order (concurrent: a rank's messages to a peer share the path;
# fifo: they queue on one stream per peer and kind).
# The network changes time, never what a step computes, so a run reaches its target loss at
# the same step on every network: the time for the scenario's steps is its time to target.
#   scripts/experiments/network-dynamics.sh [LOWBAND]   (default build/lowband)
# 24 estimates on a changing network, 16 of them 10,000 MoS-paper steps: about 9 min on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 - "${1:-build/lowband}" <<'PY'
import json
import sys

sys.path.insert(0, "scripts/experiments")
from estimate_cells import DEC, MOS, est, sec

LB = sys.argv[1]
SLA = "scenarios/sparseloco-8b-replica-link.json"
CONDITIONS = {
    "daily-dips": [
        {"bandwidth": {"daily": {"low": 0.3, "low_at": "20h", "period": "24h", "sample": "10min"}}},
        {"bandwidth": {"outages": {"seed": 1, "mean_up": "1h", "mean_down": "5min", "value": 0.1}}},
    ],
    "node-lost-10min": [{"node": 2, "state": {"steps": [["1h", 0], ["70min", 1]]}}],
    "node-slow-1h": [{"node": 2, "speed": {"steps": [["1h", 0.5], ["2h", 1]]}}],
}
CONDITIONS["node-lost-10min-restart"] = CONDITIONS["node-lost-10min"]
RESTART = {"stall_timeout": "5min", "relaunch": "3min"}
SETTINGS = [("MoS paper, uncompressed", DEC), ("MoS paper, MoS", MOS), ("SparseLoCo 8B, 20 replicas", SLA)]


def hours(s):
    return "%.2f h" % (s / 3600)


print("| setting | message order | steps | constant | " + " | ".join(CONDITIONS) + " |")
print("|---|---|---:|---:|" + "---:|" * len(CONDITIONS))
for label, scenario in SETTINGS:
    for order in ("concurrent", "fifo"):
        base = est(LB, scenario, "network.message_order=" + order)
        cells = []
        for name, dynamics in CONDITIONS.items():
            sets = ["network.message_order=" + order, "network.dynamics=" + json.dumps(dynamics, separators=(",", ":"))]
            if name.endswith("-restart"):
                every = max(1, round(3600 / base["step_seconds"]))
                sets += ["network.restart=" + json.dumps(RESTART, separators=(",", ":")),
                         "training.checkpoint_every=%d" % every]
            c = est(LB, scenario, *sets)["changing_network"]
            restarts = "; %d restart%s, checkpoint every %d steps" % (
                c["restarts"], "" if c["restarts"] == 1 else "s", every) if "restarts" in c else ""
            cells.append("%s (+%s, +%.1f %%; slowest step %s s%s)" % (
                hours(c["total_seconds"]), hours(c["lost_seconds"]),
                100 * c["lost_seconds"] / c["nominal_total_seconds"], sec(c["slowest_step_seconds"]), restarts))
            steps, nominal = c["steps"], c["nominal_total_seconds"]
        print("| %s | %s | %d | %s (%s s/step) | %s |" % (label, order, steps, hours(nominal), sec(base["step_seconds"]),
                                                     " | ".join(cells)))
PY
