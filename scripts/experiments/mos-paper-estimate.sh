#!/usr/bin/env bash
# Every table of analysis/mos_paper_estimate.md, as markdown rows: one
# `lowband estimate --json` per cell (the three scenarios/mos-paper-*.json with the
# page's --set overrides), python3 for the formatting. Also the figures §2, §3 and §6
# quote outside the tables (the coarse per-link bound, the naive model).
#   scripts/experiments/mos-paper-estimate.sh [LOWBAND]   (default build/lowband)
# About 100 estimates, under a second each.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 - "${1:-build/lowband}" <<'PY'
import sys

sys.path.insert(0, "scripts/experiments")
from estimate_cells import CEN, DEC, MESH, MOS, sec, tokens
from estimate_cells import est as estimate

LB = sys.argv[1]
NOOV = ("parallel.overlap=false",)
ALL_REDUCE = ("compression.weight_sync=all_reduce",)
EVERY10 = ("compression.sync_every=10",)
UNC_SPARSE10 = ("compression.weight_sync=sparse", "compression.sync_fraction=0.05",
                "compression.sync_every=10")


def est(scenario, *sets):
    return estimate(LB, scenario, *sets)


def tok(r):  # a result's tokens/s as the page writes it
    return tokens(r["tokens_per_s"])


def cell(r):
    return "%s (%s s)" % (tok(r), sec(r["step_seconds"]))


def row(*cells):
    print("| " + " | ".join(cells) + " |")


def head(*cols, right=0, align=None):
    row(*cols)
    print(align or "|" + "---|" * (len(cols) - right) + "---:|" * right)


print("## 1. The three scenarios as shipped\n")
head("scenario", "step (s)", "tokens/s", "paper", "compute (s)", "exposed comm (s)",
     "kv / dkv / grad_sync sent per rank (GB)", "MFU", align="|---|---:|---:|---:|---:|---:|---|---:|")
for label, f, paper in (("centralized-100gbps", CEN, "56K"), ("decentralized-300mbps", DEC, "~2.7K"),
                        ("mos-300mbps (sparse sync 5 %, every step)", MOS, "55K")):
    r = est(f)
    b = r["bytes_per_rank_per_step"]
    row(label, sec(r["step_seconds"]), "**%s**" % tok(r), paper, sec(r["compute_seconds"]),
        sec(r["exposed_comm_seconds"]), " / ".join("%.3g" % (b[k] / 1e9) for k in ("kv", "dkv", "grad_sync")),
        "%.1f %%" % (100 * r["mfu"]))
r = est(MOS)
print("\nMoS K/V bytes: %.2f %% of uncompressed (%.1f %% saved)"
      % (100 * r["kv_bytes_ratio"], 100 * r["kv_bytes_saved_fraction"]))

print("\n## 2. Which network assumption reproduces the paper (300 Mbps, 10 ms)\n")
cols = ((DEC, ()), (DEC, UNC_SPARSE10), (MOS, ALL_REDUCE), (MOS, ()), (MOS, EVERY10))
rows = (("star (one NIC per node)", "ring", "yes", ()),
        ("star", "ring", "no", NOOV),
        ("star", "all_gather", "yes", ("parallel.exchange=all_gather",)),
        ("full_mesh (a link per peer)", "ring", "yes", ("network.topology=full_mesh",)),
        ("full_mesh", "all_gather", "yes", MESH),
        ("full_mesh", "all_gather", "no", MESH + NOOV))
best = {c: max((est(cols[c][0], *(cols[c][1] + o)) for *_, o in rows), key=lambda r: r["tokens_per_s"])
        for c in (1, 4)}  # the best sparse /10 case, uncompressed and MoS, in bold
head("topology", "exchange", "overlap", "uncompressed, all-reduce", "uncompressed, sparse /10",
     "MoS, all-reduce", "MoS, sparse /1 (shipped)", "MoS, sparse /10", right=5)
for topo, exch, ov, o in rows:
    cells = []
    for c, (f, s) in enumerate(cols):
        r = est(f, *(s + o))
        cells.append("**%s**" % cell(r) if best.get(c) is r else cell(r))
    row(topo, exch, ov, *cells)
print("\nCoarse bound (arithmetic from the replayed bytes: the busiest rank's bytes spread over"
      " its 7 links at 37.5 MB/s, hidden anywhere in the step):")
for label, f, s in (("MoS, sparse sync every 10 steps", MOS, EVERY10), ("MoS, sparse sync every step", MOS, ()),
                    ("uncompressed, sparse sync every 10 steps", DEC, UNC_SPARSE10)):
    r = est(f, *s)
    total = r["bytes_per_rank_per_step"]["total"]
    t = total / (7 * 37.5e6)
    size = "%.4g GB" % (total / 1e9) if total >= 1e10 else "%.4g MB" % (total / 1e6)
    print("- %s: %s per rank, %.3g s over 7 links, compute %.3g s -> %s tokens/s"
          % (label, size, t, r["compute_seconds"],
             tok({"tokens_per_s": r["tokens_per_step"] / max(t, r["compute_seconds"])})))

print("\n## 3. What it takes to reach 55K with MoS\n")
print("MoS, sparse sync every 10 steps; tokens/s by link bandwidth and latency.\n")
lat_rows = (("full_mesh", "all_gather", MESH), ("star", "ring", ()))
bws = ("300Mbps", "1Gbps", "2Gbps", "4Gbps", "10Gbps")
head("topology", "exchange", "latency", "300 Mbps", "1 Gbps", "2 Gbps", "4 Gbps", "10 Gbps", right=5)
for topo, exch, o in lat_rows:
    for lat in ("10ms", "1ms", "0ms"):
        row(topo, exch, "0" if lat == "0ms" else lat.replace("ms", " ms"),
            *(tok(est(MOS, *(EVERY10 + o + ("network.bandwidth=" + bw, "network.latency=" + lat)))) for bw in bws))
print("\nBeside the table:")
for label, o, bw, lat in (("full_mesh, all_gather", MESH, "3.5Gbps", "1ms"), ("star, ring", (), "6Gbps", "1ms"),
                          ("full_mesh, all_gather", MESH, "10Gbps", "10ms"), ("full_mesh, all_gather", MESH, "10Gbps", "0ms"),
                          ("full_mesh, all_gather", MESH, "100Gbps", "10ms"), ("star, ring", (), "100Gbps", "10ms")):
    r = est(MOS, *(EVERY10 + o + ("network.bandwidth=" + bw, "network.latency=" + lat)))
    print("- %s, %s, %s: %s (%s s)" % (label, bw, lat, tok(r), sec(r["step_seconds"])))
print("\nUncompressed, weight all-reduce every step:\n")
bws = ("300Mbps", "1Gbps", "10Gbps", "100Gbps")
head("topology", "exchange", "latency", "300 Mbps", "1 Gbps", "10 Gbps", "100 Gbps", right=4)
for topo, exch, o in lat_rows:
    for lat in ("10ms", "0ms"):
        row(topo, exch, "0" if lat == "0ms" else lat.replace("ms", " ms"),
            *(tok(est(DEC, *(o + ("network.bandwidth=" + bw, "network.latency=" + lat)))) for bw in bws))

print("\n## 4. Overlap where it matters\n")
head("scenario", "overrides", "overlap", "no overlap", right=2)
for label, f, o, shown in (("centralized-100gbps", CEN, (), "(as shipped)"),
                           ("decentralized-300mbps", DEC, ("network.bandwidth=10Gbps",), "network.bandwidth=10Gbps"),
                           ("decentralized-300mbps", DEC, ("network.bandwidth=10Gbps",) + MESH,
                            "10Gbps, full_mesh, all_gather"),
                           ("mos-300mbps", MOS, ("network.bandwidth=1Gbps",) + MESH, "1Gbps, full_mesh, all_gather")):
    row(label, shown, tok(est(f, *o)), tok(est(f, *(o + NOOV))))

print("\n## 5. The `tcp` network model\n")
head("scenario", "overrides", "tokens/s (step)", right=1)
for label, f in (("centralized-100gbps", CEN), ("decentralized-300mbps", DEC), ("mos-300mbps", MOS)):
    for o, shown in (((), "(as shipped)"), (MESH, "full_mesh, all_gather")):
        row(label, shown, cell(est(f, *(("network.model=tcp",) + o))))

print("\n## 6. The naive model\n")
r = est(DEC, *NOOV)
print("decentralized-300mbps, parallel.overlap=false: step %.1f s, exposed communication %.1f s,"
      " %s tokens/s, compute %.3g s, %.3g GB sent per rank"
      % (r["step_seconds"], r["exposed_comm_seconds"], tok(r), r["compute_seconds"],
         r["bytes_per_rank_per_step"]["total"] / 1e9))
PY
