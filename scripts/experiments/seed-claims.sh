#!/usr/bin/env bash
# analysis/seed-claims.md: one row per headline claim of the three seeds (the MoS paper's 56K /
# 2.7K / 55K tokens/s, its Figure 2 and Figure 3; Protocol Models' 80 Mbps matching 100 Gbps;
# SparseLoCo's ~12 s per sync), each from shipped scenarios and `lowband estimate --json`
# (grids where a row needs several points), python3 for the formatting. Prints the table's
# measured cells and, per claim, the figures the page's sections quote: first commodity
# internet (one access link per node, topology star, at 10 / 25 / 50 ms), then the per-peer
# assumptions (topology full_mesh) with what they mean per node, (nodes - 1) x the link.
#   scripts/experiments/seed-claims.sh [LOWBAND]   (default build/lowband)
# About 60 calls of `lowband estimate --json`, 20 of them grids: under a minute on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 - "${1:-build/lowband}" <<'PY'
import json
import sys

sys.path.insert(0, "scripts/experiments")
from estimate_cells import CEN, DEC, MESH, MOS, SPARSE10, sec, tokens
from estimate_cells import est as estimate

LB = sys.argv[1]
F3C = "scenarios/mos-fig3-pp-cp-centralized-100gbps.json"
F3D = "scenarios/mos-fig3-pp-cp-decentralized-300mbps.json"
F3M = "scenarios/mos-fig3-pp-cp-compressed-300mbps.json"
PPC = "scenarios/paper-pp-3b-centralized-100gbps.json"
PPD = "scenarios/paper-pp-3b-decentralized-300mbps.json"
PPS = "scenarios/paper-pp-3b-subspace-300mbps.json"
SLR = "scenarios/sparseloco-8b-rank-link-relay.json"
SLK = "scenarios/sparseloco-8b-rank-link.json"
SLA = "scenarios/sparseloco-8b-replica-link.json"
LAT = "network.latency=10ms,25ms,50ms"  # commodity internet: one access link per node, these latencies
ALLC = "compression.compress_final_layer=true"  # every layer's K/V compressed: not the paper's setup
DIRECT = "parallel.all_reduce=direct"  # every all-reduce to every peer at once, not around a ring
SUMMARY = "docs/design.md's summary of the paper, not the paper's tables"  # where the MoS paper's numbers come from
FLIGHT8 = ("training.batch_size=8", "parallel.microbatches=8")  # 8 sequences per step, all in flight


def command(scenario, *sets):  # as the table's last column writes it
    return "`lowband estimate %s%s`" % (scenario, "".join(" --set " + s for s in sets))


def est(scenario, *sets):
    return estimate(LB, scenario, *sets)


def pct(a, b):
    return "%.0f %%" % (100 * a / b)


def at(points, **axes):  # the grid point whose settings match
    for p in points:
        if all(p["settings"][k.replace("__", ".")] == v for k, v in axes.items()):
            return p
    raise KeyError(axes)


def show(label, r):
    print("- %s: %s tokens/s (step %s s); bound %s s (%s: %s), at most %s tokens/s; step/bound %.2f"
          % (label, tokens(r["tokens_per_s"]), sec(r["step_seconds"]), sec(r["bound_seconds"]), r["bound_kind"],
             r["busiest_link"] if r["bound_kind"] == "bandwidth" else "critical path",
             tokens(r["max_tokens_per_s"]), r["step_over_bound"]))


def kinds(r):  # the busiest link's bytes by kind, MB
    return ", ".join("%s %.1f MB" % (k, v / 1e6) for k, v in sorted(r["busiest_link_bytes_by_kind"].items())
                     if v >= 5e4)


def bps(s):  # "300Mbps" -> 3e8
    for unit, f in (("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("Kbps", 1e3)):
        if s.endswith(unit):
            return float(s[:-len(unit)]) * f
    raise ValueError(s)


def rate(x):  # bits/s as the page writes it: 300 Mbps, 2.1 Gbps, 28 Gbps
    if x >= 1e9:
        return ("%.3g Gbps" % (x / 1e9))
    return "%.3g Mbps" % (x / 1e6)


def per_node(link, nodes):  # full_mesh: every node has nodes - 1 links of this bandwidth, out and in
    return rate((nodes - 1) * bps(link))


def lat3(g, key="tokens_per_s", f=tokens):  # a latency grid's three points, "a / b / c"
    return " / ".join(f(at(g, network__latency=l)[key]) for l in ("10ms", "25ms", "50ms"))


def bound3(g):  # the bound of a latency grid: one figure if the three agree
    b = [at(g, network__latency=l) for l in ("10ms", "25ms", "50ms")]
    if len(set(round(p["max_tokens_per_s"]) for p in b)) == 1:
        return "≤ %s (%s: %s, %s s)" % (tokens(b[0]["max_tokens_per_s"]), b[0]["bound_kind"], b[0]["busiest_link"],
                                        sec(b[0]["bound_seconds"]))
    return "≤ %s (%s)" % (" / ".join(tokens(p["max_tokens_per_s"]) for p in b),
                          " / ".join(p["bound_kind"] for p in b))


def need(r, target_tokens_per_s):  # the access link that lets the busiest link's bytes reach the target
    return 8 * r["busiest_link_bytes"] / (r["tokens_per_step"] / target_tokens_per_s)


def lat_grid(label, g):
    for p in g:
        show("%s, %s" % (label, p["settings"]["network.latency"]), p)


rows = []
N8, N32 = 8, 32

print("## Per link and per node\n")
print("A full mesh of N nodes gives each node N - 1 links; a node sends (and receives) up to (N - 1) x the link.")
for what, link, n in (("MoS 800M, 8 nodes", "300Mbps", N8), ("", "350Mbps", N8), ("", "375Mbps", N8),
                      ("", "400Mbps", N8), ("", "500Mbps", N8), ("", "1Gbps", N8), ("", "2Gbps", N8),
                      ("", "3.5Gbps", N8), ("", "4Gbps", N8), ("", "100Gbps", N8),
                      ("Figure 3, 32 nodes", "300Mbps", N32), ("", "2Gbps", N32), ("", "4Gbps", N32)):
    print("- %s%s per peer link: %s per node (%d links)" % (what + ": " if what else "", link, per_node(link, n), n - 1))

# 1. MoS, centralised 56K.
print("\n## 1. MoS centralised, 56K tokens/s\n")
c = est(CEN)
C1 = (CEN, "network.topology=star,full_mesh", "parallel.exchange=ring,all_gather")
g = est(*C1)
cm = at(g, network__topology="full_mesh", parallel__exchange="all_gather")
show("shipped (star, 100 Gbps per node, 5 us, ring)", c)
show("full_mesh, all_gather (100 Gbps per peer link = %s per node)" % per_node("100Gbps", N8), cm)
C1L = (CEN, LAT)
c1l = est(*C1L)
lat_grid("star, 100 Gbps per node, ring", c1l)
rows.append(("MoS paper, throughput table: centralised, 100 Gbps (800M, 132K tokens, 8×A100)", "56K (%s)" % SUMMARY,
             "not a commodity claim (100 Gbps per node); at 10 / 25 / 50 ms instead of 5 µs: %s" % lat3(c1l),
             "as shipped (5 µs): %s, %s s: ≤ %s, possible; at 10 / 25 / 50 ms: %s"
             % (c["bound_kind"], sec(c["bound_seconds"]), tokens(c["max_tokens_per_s"]), bound3(c1l)),
             "%s as shipped (%s below the paper): the 100 Gbps it states" % (tokens(c["tokens_per_s"]),
                                                                             pct(56000 - c["tokens_per_s"], 56000)),
             "%s (100 Gbps per peer = %s per node, all-gather)" % (tokens(cm["tokens_per_s"]), per_node("100Gbps", N8)),
             command(*C1L) + "; " + command(*C1)))

# 2. MoS, uncompressed at 300 Mbps ~2.7K.
print("\n## 2. MoS decentralised uncompressed, ~2.7K tokens/s\n")
d = est(DEC)
show("shipped (star, 300 Mbps per node, 10 ms, ring, all-reduce every step)", d)
C2L = (DEC, LAT)
d2l = est(*C2L)
lat_grid("star, 300 Mbps per node", d2l)
print("- star: %s carries %s; the bound lets 2.7K through at %s per node" % (d["busiest_link"], kinds(d),
                                                                            rate(need(d, 2700))))
C2S = (DEC, "network.bandwidth=3Gbps,3.25Gbps,3.5Gbps", "network.latency=25ms")
g = est(*C2S)
for p in g:
    show("star, %s per node, 25 ms" % p["settings"]["network.bandwidth"], p)
d35 = at(g, network__bandwidth="3.5Gbps")
C2 = (DEC,) + MESH + SPARSE10 + ("network.bandwidth=300Mbps,350Mbps,375Mbps,400Mbps",)
g = est(*C2)
for p in g:
    show("full_mesh, all_gather, sparse 5 %% every 10 steps, %s per peer link (%s per node)"
         % (p["settings"]["network.bandwidth"], per_node(p["settings"]["network.bandwidth"], N8)), p)
d300, d375 = at(g, network__bandwidth="300Mbps"), at(g, network__bandwidth="375Mbps")
print("- 300 Mbps per peer: %s carries %s; each rank sends %.2f GB per step"
      % (d300["busiest_link"], kinds(d300), d300["bytes_per_rank_per_step"]["total"] / 1e9))
rows.append(("MoS paper, throughput table: decentralised, 300 Mbps, uncompressed", "~2.7K (%s)" % SUMMARY,
             "%s (shipped: `mos-paper-decentralized-300mbps`)" % lat3(d2l),
             "%s: impossible" % bound3(d2l),
             "≥ %s per node lets the bound reach it; lowband: %s at 3.5 Gbps, 25 ms"
             % (rate(need(d, 2700)), tokens(d35["tokens_per_s"])),
             "%s at 300 Mbps per peer = %s per node (≤ %s; all-gather, sparse sync 5 %% every 10 steps, never trained); "
             "%s at 375 Mbps per peer = %s per node"
             % (tokens(d300["tokens_per_s"]), per_node("300Mbps", N8), tokens(d300["max_tokens_per_s"]),
                tokens(d375["tokens_per_s"]), per_node("375Mbps", N8)),
             command(*C2L) + "; " + command(*C2S) + "; " + command(*C2)))

# 3. MoS at 300 Mbps, 55K.
print("\n## 3. MoS decentralised with MoS, 55K tokens/s\n")
m = est(MOS)
show("shipped (star, 300 Mbps per node, 10 ms, ring, sparse sync every step, final layer uncompressed)", m)
mall = est(MOS, ALLC)
show("the same, every layer compressed (not the paper's setup)", mall)
C3L = (MOS, LAT)
m3l = est(*C3L)
lat_grid("star, 300 Mbps per node", m3l)
m3la = est(MOS, LAT, ALLC)
lat_grid("star, 300 Mbps per node, every layer compressed", m3la)
m10 = est(MOS, "compression.sync_every=10")
show("star, sparse sync every 10 steps", m10)
print("- shipped, %s: %s; K/V + dK/dV alone %.1f s" % (m["busiest_link"], kinds(m),
      (m["busiest_link_bytes_by_kind"]["kv"] + m["busiest_link_bytes_by_kind"]["dkv"]) / m["busiest_link_bandwidth_bytes_per_s"]))
print("- the bound lets 55K through at %s per node (shipped, sync every step), %s (sync every 10 steps)"
      % (rate(need(m, 55000)), rate(need(m10, 55000))))
mring = est(MOS, "network.bandwidth=100Gbps", "network.latency=25ms")
show("star, ring (shipped), 100 Gbps per node, 25 ms: the ring's latency cap", mring)
C3S = (MOS, "parallel.exchange=all_gather", DIRECT, "compression.sync_every=10") + FLIGHT8 + (
    "network.bandwidth=2.1Gbps,8Gbps,14Gbps,28Gbps,40Gbps", "network.latency=25ms")
g = est(*C3S)
for p in g:
    show("star, all_gather, direct, sync every 10 steps, 8 in flight, %s per node, 25 ms"
         % p["settings"]["network.bandwidth"], p)
s28 = at(g, network__bandwidth="28Gbps")
s8 = at(g, network__bandwidth="8Gbps")
C3 = (MOS,) + MESH + ("compression.sync_every=1,10", "network.bandwidth=300Mbps,3.5Gbps,4Gbps",
                      "network.latency=10ms,1ms")
g = est(*C3)
for p in g:
    show("full_mesh, all_gather, sync every %s step(s), %s per peer (%s per node), %s"
         % (p["settings"]["compression.sync_every"], p["settings"]["network.bandwidth"],
            per_node(p["settings"]["network.bandwidth"], N8), p["settings"]["network.latency"]), p)
MP = dict((("%s/%s/%s" % (p["settings"]["compression.sync_every"], p["settings"]["network.bandwidth"],
                          p["settings"]["network.latency"])), p) for p in g)
mp1, mp10, m4 = MP["1/300Mbps/10ms"], MP["10/300Mbps/10ms"], MP["10/4Gbps/1ms"]
print("- per peer, sync every step, %s: %s (grad_sync %.2f s)" % (mp1["busiest_link"], kinds(mp1),
      mp1["busiest_link_bytes_by_kind"]["grad_sync"] / mp1["busiest_link_bandwidth_bytes_per_s"]))
md1, md10 = est(MOS, *MESH, DIRECT), est(MOS, *MESH, "compression.sync_every=10", DIRECT)
show("full_mesh, all_gather, sync every step, direct", md1)
show("full_mesh, all_gather, sync every 10 steps, direct", md10)
for sets, label in (((), "sync every step"), (("compression.sync_every=10",), "sync every 10 steps"),
                    ((DIRECT,), "sync every step, direct"), (("compression.sync_every=10", DIRECT),
                                                            "sync every 10 steps, direct")):
    show("full_mesh, all_gather, %s, every layer compressed" % label, est(MOS, *MESH, *sets, ALLC))
mno = est(MOS, *MESH, "compression.sync_every=10", "parallel.overlap=false")
print("- per peer, sync every 10 steps, 300 Mbps, 10 ms, parallel.overlap=false: %s tokens/s (step %s s, %.1f %% longer)"
      % (tokens(mno["tokens_per_s"]), sec(mno["step_seconds"]), 100 * (mno["step_seconds"] / mp10["step_seconds"] - 1)))
kv_all = mall["bytes_per_rank_per_step"]["kv"] / 8 / 7  # one compressed layer's K/V per peer link
print("- each peer link of the per-peer case carries per step %.1f MB of K/V (and as much dK/dV): %.1f MB for the"
      " uncompressed final layer and %.2f MB for each of the 7 compressed layers (every layer compressed: 8 × %.2f MB)"
      % (mp10["busiest_link_bytes_by_kind"]["kv"] / 1e6, (mp10["busiest_link_bytes_by_kind"]["kv"] - 7 * kv_all) / 1e6,
         kv_all / 1e6, kv_all / 1e6))
# Sequences in flight: 8 sequences per step, 1..8 of them interleaved layer by layer on each rank.
C3F = (MOS,) + MESH + (DIRECT, "compression.sync_every=1,10", "training.batch_size=8",
                       "parallel.microbatches=1,2,4,8")
gf = est(*C3F)
for p in gf:
    show("full_mesh, all_gather, direct, 8 sequences per step, %s in flight, sync every %s step(s)"
         % (p["settings"]["parallel.microbatches"], p["settings"]["compression.sync_every"]), p)
best = at(gf, compression__sync_every=10, parallel__microbatches=8)
one = at(gf, compression__sync_every=10, parallel__microbatches=1)
gfa = est(*(C3F + (ALLC,)))
for p in gfa:
    if str(p["settings"]["compression.sync_every"]) == "10":
        show("the same, %s in flight, sync every 10 steps, every layer compressed" % p["settings"]["parallel.microbatches"], p)
C3B = (MOS,) + MESH + (DIRECT, "compression.sync_every=10") + FLIGHT8 + (
    "network.bandwidth=1Gbps,1.5Gbps,2Gbps,3Gbps,4Gbps",)
gb = est(*C3B)
for p in gb:
    show("the same, 8 in flight, sync every 10 steps, %s per peer link (%s per node)"
         % (p["settings"]["network.bandwidth"], per_node(p["settings"]["network.bandwidth"], N8)), p)
b4 = at(gb, network__bandwidth="4Gbps")
rows.append(("MoS paper, throughput table: decentralised, 300 Mbps, MoS (K 98 %, V 95 %; final layer uncompressed)", "55K (%s)" % SUMMARY,
             "%s (shipped: `mos-paper-mos-300mbps`, sync every step; every layer compressed, not the paper's setup: %s)"
             % (lat3(m3l), lat3(m3la)),
             "%s: impossible" % bound3(m3l),
             "≥ %s per node lets the bound reach it; lowband: %s at 28 Gbps, 25 ms (%s at 8 Gbps; all-gather, "
             "direct all-reduce, sync 5 %% every 10 steps and 8 sequences in flight, both never trained)"
             % (rate(need(m, 55000)), tokens(s28["tokens_per_s"]), tokens(s8["tokens_per_s"])),
             "%s at 300 Mbps per peer = %s per node (≤ %s; sync every step); %s with 8 in flight and the sync every "
             "10 steps (≤ %s); %s at 4 Gbps per peer = %s per node with them"
             % (tokens(mp1["tokens_per_s"]), per_node("300Mbps", N8), tokens(mp1["max_tokens_per_s"]),
                tokens(best["tokens_per_s"]), tokens(best["max_tokens_per_s"]), tokens(b4["tokens_per_s"]),
                per_node("4Gbps", N8)),
             command(*C3L) + "; " + command(*C3S) + "; " + command(*C3F) + "; " + command(*C3B)))

# 4. Figure 2: MoS on par with centralised in wall-clock time (600 steps, 100 warm-up steps).
print("\n## 4. Figure 2, MoS on par with centralised in wall-clock time\n")
C4 = (DEC, "compression.weight_sync=sparse", "compression.sync_fraction=0.05")  # a MoS warm-up step
w = est(*C4)
show("MoS warm-up step (uncompressed K/V, sparse sync every step, star, 10 ms)", w)
C4L = C4 + (LAT,)
w4l = est(*C4L)
lat_grid("MoS warm-up step, star, 300 Mbps per node", w4l)


def run_time(warm, comp, warm_steps=100, steps=600):
    return warm_steps * warm + (steps - warm_steps) * comp


t_cen = 600 * c["step_seconds"]
for l in ("10ms", "25ms", "50ms"):
    wl, ml, mla = at(w4l, network__latency=l), at(m3l, network__latency=l), at(m3la, network__latency=l)
    t, b, ta = (run_time(wl["step_seconds"], ml["step_seconds"]), run_time(wl["bound_seconds"], ml["bound_seconds"]),
                run_time(wl["step_seconds"], mla["step_seconds"]))
    print("- star, 300 Mbps per node, %s: MoS's 600 steps %.2f h = %.1f× centralised (bound %.2f h, %.1f×); "
          "every layer compressed %.2f h, %.1f×" % (l, t / 3600, t / t_cen, b / 3600, b / t_cen, ta / 3600, ta / t_cen))
t_mos = run_time(w["step_seconds"], m["step_seconds"])
b_mos = run_time(w["bound_seconds"], m["bound_seconds"])
F2 = [run_time(at(w4l, network__latency=l)["step_seconds"], at(m3l, network__latency=l)["step_seconds"]) / t_cen
      for l in ("10ms", "25ms", "50ms")]
mp4 = MP["1/4Gbps/1ms"]
show("MoS compressed step, full_mesh, all_gather, sync every step, 4 Gbps per peer (28 Gbps per node), 1 ms", mp4)
t_dc = run_time(c["step_seconds"], mp1["step_seconds"])
t_dc4 = run_time(c["step_seconds"], mp4["step_seconds"])
print("- the 100 warm-up steps on the star, 10 ms: %.1f h" % (100 * w["step_seconds"] / 3600))
print("- 600 steps centralised: %.1f min; MoS as projected (100 warm-up steps at the warm-up step, 500 at the"
      " shipped compressed step): %.2f h, %.1f× centralised; its bound (the same steps at their bounds): %.2f h, %.1f×"
      % (t_cen / 60, t_mos / 3600, t_mos / t_cen, b_mos / 3600, b_mos / t_cen))
print("- warm-up at the centralised step, compressed steps with a link per peer, all-gather, sync every step:"
      " 300 Mbps per peer (2.1 Gbps per node) %.1f min (%.2f×), 4 Gbps per peer (28 Gbps per node) / 1 ms %.1f min (%.2f×)"
      % (t_dc / 60, t_dc / t_cen, t_dc4 / 60, t_dc4 / t_cen))
scen = json.load(open(MOS))
ws, ns = scen["compression"]["warmup_steps"], scen["training"]["steps"]
t_p = run_time(w["step_seconds"], m["step_seconds"], ws, ns)
print("- the paper-scale scenario's warm-up fraction instead (%d of %d steps, %.0f %%), warm-up over 300 Mbps, shipped"
      " steps: %.1f× centralised" % (ws, ns, 100.0 * ws / ns, t_p / (ns * c["step_seconds"])))
rows.append(("MoS paper, Figure 2: MoS on par with centralised in wall-clock time (600 steps, 100 warm-up)",
             "≈ 1× centralised's time (%s)" % SUMMARY,
             "%s (%.1f h at 10 ms, against %.1f min centralised)"
             % (" / ".join("%.1f×" % x for x in F2), t_mos / 3600, t_cen / 60),
             "≥ %.1f× (%.1f h at 10 ms): impossible" % (b_mos / t_cen, b_mos / 3600),
             "the warm-up at datacenter speed (its 100 steps need ≥ %.1f h at 300 Mbps per node), then row 3's rates "
             "for the compressed steps" % (100 * w["bound_seconds"] / 3600),
             "%.2f× at 300 Mbps per peer = 2.1 Gbps per node, %.2f× at 4 Gbps per peer = 28 Gbps per node, 1 ms (both "
             "with the 100 warm-up steps at datacenter speed, all-gather, sync every step)" % (t_dc / t_cen, t_dc4 / t_cen),
             command(*C4L) + " (the warm-up steps) with row 3's"))

# 5. Figure 3: pipeline x context, 3.1B on 32 A100.
print("\n## 5. Figure 3, pipeline × context (3.1B, 8 stages × 4 context ranks, 32×A100)\n")
f3c, f3d, f3m = est(F3C), est(F3D), est(F3M)
show("centralised 100 Gbps", f3c)
show("decentralised 300 Mbps, uncompressed", f3d)
show("compressed 300 Mbps (MoS K/V, rank-25 subspace boundaries), star, 10 ms", f3m)
f3ma = est(F3M, ALLC)
show("the same, every layer compressed (not the paper's setup)", f3ma)
C5L = (F3M, LAT)
f5l = est(*C5L)
lat_grid("compressed, star, 300 Mbps per node", f5l)
f5la = est(F3M, LAT, ALLC)
lat_grid("compressed, star, 300 Mbps per node, every layer compressed", f5la)
f5cl = est(F3C, LAT)
lat_grid("centralised, star, 100 Gbps per node", f5cl)
print("- star, %s: %s; parity's %s tokens/s lets the bound through at %s per node"
      % (f3m["busiest_link"], kinds(f3m), tokens(f3c["tokens_per_s"]), rate(need(f3m, f3c["tokens_per_s"]))))
C5S = (F3M, "network.bandwidth=4.4Gbps,10Gbps,25Gbps,100Gbps", "network.latency=25ms", "parallel.exchange=ring,all_gather")
g = est(*C5S)
for p in g:
    show("compressed, star, %s, %s per node, 25 ms" % (p["settings"]["parallel.exchange"], p["settings"]["network.bandwidth"]), p)
f25 = at(g, network__bandwidth="25Gbps", parallel__exchange="ring")
f100 = at(g, network__bandwidth="100Gbps", parallel__exchange="all_gather")
C5 = (F3M,) + MESH + ("network.bandwidth=300Mbps,2Gbps,4Gbps", "network.latency=1ms,10ms")
g = est(*C5)
f3p = at(g, network__bandwidth="300Mbps", network__latency="10ms")
for p in g:
    show("compressed, full_mesh, all_gather, %s per peer (%s per node), %s" % (
        p["settings"]["network.bandwidth"], per_node(p["settings"]["network.bandwidth"], N32),
        p["settings"]["network.latency"]), p)
f3p4 = at(g, network__bandwidth="4Gbps", network__latency="1ms")
f3pa = est(F3M, *MESH, ALLC)
show("compressed, full_mesh, all_gather, 300 Mbps, 10 ms, every layer compressed", f3pa)
gs = f3p["busiest_link_bytes_by_kind"]["grad_sync"]
f3pd = est(F3M, *MESH, DIRECT)
show("compressed, full_mesh, all_gather, 300Mbps, 10ms, parallel.all_reduce direct", f3pd)
print("- per-peer busiest link (%s): grad_sync %.2f GB = %.1f s of its %.1f s; K/V + dK/dV %.2f GB"
      % (f3p["busiest_link"], gs / 1e9, gs / f3p["busiest_link_bandwidth_bytes_per_s"], f3p["busiest_link_seconds"],
         (f3p["busiest_link_bytes_by_kind"]["kv"] + f3p["busiest_link_bytes_by_kind"]["dkv"]) / 1e9))
# The stages' weight sync compressed (compression.weight_sync over each stage's context ranks).
for sync in (SPARSE10, ("compression.weight_sync=sparse_grad", "compression.sync_fraction=0.05"),
             ("compression.weight_sync=topk_grad", "compression.sync_fraction=0.05"),
             ("compression.weight_sync=lowrank_grad", "compression.sync_fraction=0.05")):
    for net, where in (((), "star"), (MESH, "full_mesh, all_gather")):
        show("compressed, %s, %s" % (where, ", ".join(x.replace("compression.", "") for x in sync)),
             est(F3M, *sync, *net))
f3s = est(F3M, *SPARSE10, *MESH)  # (cached: the loop's)
rows.append(("MoS paper, Figure 3: pipeline × context (3B, 32×A100), compressed ≈ centralised",
             "near parity (no figure in docs/design.md's summary)",
             "%s = %s of centralised %s (shipped: `mos-fig3-pp-cp-compressed-300mbps`, 10 ms; every layer "
             "compressed: %s)" % (lat3(f5l), pct(f3m["tokens_per_s"], f3c["tokens_per_s"]), tokens(f3c["tokens_per_s"]),
                                  lat3(f5la)),
             "%s, %s of centralised: impossible" % (bound3(f5l), pct(f3m["max_tokens_per_s"], f3c["tokens_per_s"])),
             "≥ %s per node lets the bound reach it; lowband: %s (%s) at 25 Gbps, 25 ms; %s at 100 Gbps (all-gather); "
             "centralised itself at 25 ms: %s"
             % (rate(need(f3m, f3c["tokens_per_s"])), tokens(f25["tokens_per_s"]),
                pct(f25["tokens_per_s"], f3c["tokens_per_s"]), tokens(f100["tokens_per_s"]),
                tokens(at(f5cl, network__latency="25ms")["tokens_per_s"])),
             "%s (%s) at 300 Mbps per peer = %s per node (≤ %s); %s (%s) with the stages' weights synced sparsely "
             "(5 %% every 10 steps, never trained); %s (%s) at 4 Gbps per peer = %s per node, 1 ms"
             % (tokens(f3p["tokens_per_s"]), pct(f3p["tokens_per_s"], f3c["tokens_per_s"]), per_node("300Mbps", N32),
                tokens(f3p["max_tokens_per_s"]),
                tokens(f3s["tokens_per_s"]), pct(f3s["tokens_per_s"], f3c["tokens_per_s"]),
                tokens(f3p4["tokens_per_s"]), pct(f3p4["tokens_per_s"], f3c["tokens_per_s"]), per_node("4Gbps", N32)),
             command(*C5L) + "; " + command(*C5S) + "; " + command(*C5)))

# 6. Protocol Models: 80 Mbps matching 100 Gbps.
print("\n## 6. Protocol Models, 80 Mbps matching 100 Gbps (3.1B, 8 stages, 8×A100)\n")
pc = est(PPC)
show("centralised 100 Gbps, 1F1B", pc)
pd = est(PPD, "network.bandwidth=80Mbps")
show("uncompressed, 80 Mbps star, 1F1B", pd)
C6 = (PPS, "network.bandwidth=80Mbps", "parallel.schedule=1f1b,gpipe", "network.latency=10ms,25ms,50ms,1ms,0ms")
g = est(*C6)
for p in g:
    show("subspace rank 25, 80 Mbps star, %s, %s" % (p["settings"]["parallel.schedule"], p["settings"]["network.latency"]), p)
ps = at(g, parallel__schedule="1f1b", network__latency="10ms")
print("- subspace at 80 Mbps: %s carries %s (%.2f s)" % (ps["busiest_link"], kinds(ps), ps["busiest_link_seconds"]))
g1 = [p for p in g if p["settings"]["parallel.schedule"] == "1f1b"]
gg = [p for p in g if p["settings"]["parallel.schedule"] == "gpipe"]
pg1 = at(g, parallel__schedule="gpipe", network__latency="1ms")
rows.append(("Protocol Models (arXiv 2506.01260), abstract: 80 Mbps matching 100 Gbps (subspace boundaries, up to 99 % compressed)",
             "parity (abstract)",
             "1F1B %s = %s of centralised %s (shipped: `paper-pp-3b-subspace-300mbps` at 80 Mbps); GPipe %s"
             % (lat3(g1), pct(ps["tokens_per_s"], pc["tokens_per_s"]), tokens(pc["tokens_per_s"]), lat3(gg)),
             "1F1B %s; GPipe %s: parity possible at 10 ms, not at 25 or 50 ms under 1F1B" % (bound3(g1), bound3(gg)),
             "80 Mbps per node is enough for the bound; lowband: %s (%s) under GPipe at 1 ms"
             % (tokens(pg1["tokens_per_s"]), pct(pg1["tokens_per_s"], pc["tokens_per_s"])),
             "none (the scenario is a star: one 80 Mbps link per node)", command(*C6)))

# 7. SparseLoCo: ~12 s per sync (8B, 15-20 replicas of 8 GPUs, H = 30, 500/110 Mb/s).
print("\n## 7. SparseLoCo, ~12 s per sync (8B, R = 15-20 replicas, H = 30, 500 / 110 Mb/s)\n")
R15 = ("parallel.data=15", "training.batch_size=4800")
RELAY = ("network.overrides.0.bandwidth=100Gbps", "network.overrides.0.latency=10ms")
sl = {("b", "relay", 20): est(SLR),
      ("b", "relay", 15): est(SLR, *R15, "network.nodes=121", "network.overrides.0.node=120",
                              "parallel.data_sync.relay_node=120"),
      ("b", "ring", 20): est(SLK),
      ("b", "ring", 15): est(SLK, *R15, "network.nodes=120"),
      ("a", "ring", 20): est(SLA),
      ("a", "ring", 15): est(SLA, *R15, "network.nodes=15"),
      ("a", "relay", 20): est(SLA, "parallel.data_sync.exchange=relay", "network.nodes=21",
                              "network.overrides.0.node=20", *RELAY),
      ("a", "relay", 15): est(SLA, *R15, "parallel.data_sync.exchange=relay", "network.nodes=16",
                              "network.overrides.0.node=15", *RELAY)}
bound = {}
for (pl, ex, R), r in sorted(sl.items()):
    # No exchange in which every holder of a part receives the other R - 1 holders' messages beats
    # (R - 1) x the largest part over the 500 Mb/s downlink (or the part over the 110 Mb/s uplink).
    s = max(r["part_message_bytes"]) if pl == "b" else r["message_bytes_per_replica"]
    bound[pl, R] = max((R - 1) * s / 62.5e6, s / 13.75e6)
    print("- (%s) %s, R = %d: comm per sync %s s (largest message %.1f MB; download bound %s s)"
          % ("one link per GPU rank" if pl == "b" else "one link per replica", ex, R, sec(r["comm_per_sync_seconds"]),
             s / 1e6, sec(bound[pl, R])))
C7L = (SLA, LAT)
a7l = est(*C7L)
for p in a7l:
    print("- (a) one 500/110 Mb/s link per replica, ring, R = 20, %s: comm per sync %s s"
          % (p["settings"]["network.latency"], sec(p["comm_per_sync_seconds"])))
b7l = est(SLR, LAT)
for p in b7l:
    print("- (b) one link per GPU rank, relay, R = 20, %s: comm per sync %s s"
          % (p["settings"]["network.latency"], sec(p["comm_per_sync_seconds"])))
msg = sl["a", "ring", 20]["message_bytes_per_replica"]
down = {R: 8 * (R - 1) * msg / 12 for R in (15, 20)}
up = 8 * msg / 12
print("- (a) for 12 s per sync, a replica's link must bring in (R - 1) x %.1f MB in 12 s: %s (R = 15) to %s (R = 20) down,"
      " and send %.1f MB in 12 s: %s up" % (msg / 1e6, rate(down[15]), rate(down[20]), msg / 1e6, rate(up)))
print("- (b) per 8-GPU participant: 8 access links = %s down, %s up; the relay's link 100 Gbps"
      % (rate(8 * 500e6), rate(8 * 110e6)))
rows.append(("SparseLoCo, the public 8B runs: ≈12 s of communication per sync (15–20 replicas of 8 GPUs, 500 / 110 Mb/s per participant)",
             "≈12 s (as analysis/sparseloco-estimate.md reports the public runs)",
             "one 500/110 Mb/s link per replica: %s s (ring, R = 20); %s–%s s with a relay on a 100 Gb/s link (R = 15–20, 10 ms)"
             % (lat3(a7l, "comm_per_sync_seconds", sec), sec(sl["a", "relay", 15]["comm_per_sync_seconds"]),
                sec(sl["a", "relay", 20]["comm_per_sync_seconds"])),
             "≥ %s–%s s, R − 1 messages of %.0f MB down one 500 Mb/s link: impossible"
             % (sec(bound["a", 15]), sec(bound["a", 20]), msg / 1e6),
             "≥ %.2f–%s down and %s up per replica (arithmetic)" % (down[15] / 1e9, rate(down[20]), rate(up)),
             "one link per GPU rank = %s down / %s up per 8-GPU participant, relay on 100 Gb/s: %s–%s s "
             "(`sparseloco-8b-rank-link-relay`, R = 15–20; %s s at 10 / 25 / 50 ms, R = 20; bound ≥ %s–%s s)"
             % (rate(8 * 500e6), rate(8 * 110e6), sec(sl["b", "relay", 15]["comm_per_sync_seconds"]),
                sec(sl["b", "relay", 20]["comm_per_sync_seconds"]), lat3(b7l, "comm_per_sync_seconds", sec),
                sec(bound["b", 15]), sec(bound["b", 20])),
             command(*C7L) + "; " + command(SLR, LAT) + " (R = 15 and the other placements in §7)"))

print("\n## The table\n")
print("| claim | paper | commodity internet: star, one link per node at the claim's bandwidth, 10 / 25 / 50 ms "
      "| bound there | per node to reach the claim | a link per peer (per-node total) | commands |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
from estimate_cells import _cache
print("\n(%d calls of `lowband estimate --json`, %d of them grids)"
      % (len(_cache), sum(1 for v in _cache.values() if isinstance(v, list))))
PY
