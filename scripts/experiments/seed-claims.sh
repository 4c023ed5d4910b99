#!/usr/bin/env bash
# analysis/seed-claims.md: one row per headline claim of the three seeds (the MoS paper's 56K /
# 2.7K / 55K tokens/s, its Figure 2 and Figure 3; Protocol Models' 80 Mbps matching 100 Gbps;
# SparseLoCo's ~12 s per sync), each from shipped scenarios and `lowband estimate --json`
# (grids where a row needs several points), python3 for the formatting. Prints the table's
# measured cells and, per claim, the figures the page's sections quote.
#   scripts/experiments/seed-claims.sh [LOWBAND]   (default build/lowband)
# 38 calls of `lowband estimate --json`, 7 of them grids: about 21 s on 2 cores.
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


rows = []

# 1. MoS, centralised 56K.
print("## 1. MoS centralised, 56K tokens/s\n")
c = est(CEN)
C1 = (CEN, "network.topology=star,full_mesh", "parallel.exchange=ring,all_gather")
g = est(*C1)
cm = at(g, network__topology="full_mesh", parallel__exchange="all_gather")
show("shipped (star, ring)", c)
show("full_mesh, all_gather", cm)
rows.append(("MoS paper, throughput table: centralised, 100 Gbps (800M, 132K tokens, 8×A100)", "56K tokens/s",
             "%s (`mos-paper-centralized-100gbps`)" % tokens(c["tokens_per_s"]),
             "%s bound %s s, ≤ %s: possible" % (c["bound_kind"], sec(c["bound_seconds"]), tokens(c["max_tokens_per_s"])),
             "reached within %.0f %% as shipped; %s with a link per peer and a direct all-gather"
             % (100 * (1 - c["tokens_per_s"] / 56000), tokens(cm["tokens_per_s"])), command(*C1)))

# 2. MoS, uncompressed at 300 Mbps ~2.7K.
print("\n## 2. MoS decentralised uncompressed, ~2.7K tokens/s\n")
d = est(DEC)
show("shipped (star, ring, all-reduce every step)", d)
C2 = (DEC,) + MESH + SPARSE10 + ("network.bandwidth=300Mbps,350Mbps,375Mbps,400Mbps",)
g = est(*C2)
for p in g:
    show("full_mesh, all_gather, sparse 5 %% every 10 steps, %s per peer link" % p["settings"]["network.bandwidth"], p)
d300, d375 = at(g, network__bandwidth="300Mbps"), at(g, network__bandwidth="375Mbps")
print("- 300 Mbps per peer: %s carries %s; each rank sends %.2f GB per step"
      % (d300["busiest_link"], kinds(d300), d300["bytes_per_rank_per_step"]["total"] / 1e9))
rows.append(("MoS paper, throughput table: decentralised, 300 Mbps, uncompressed", "~2.7K",
             "%s (`mos-paper-decentralized-300mbps`: star)" % tokens(d["tokens_per_s"]),
             "star: ≤ %s (busiest link %s s): impossible; a link per peer, all-gather, sparse sync /10: ≤ %s: impossible"
             % (tokens(d["max_tokens_per_s"]), sec(d["busiest_link_seconds"]), tokens(d300["max_tokens_per_s"])),
             "not reached at 300 Mbps: %s with a link per peer, all-gather, sparse sync every 10 steps; "
             "%s at 375 Mbps per peer link" % (tokens(d300["tokens_per_s"]), tokens(d375["tokens_per_s"])), command(*C2)))

# 3. MoS at 300 Mbps, 55K.
print("\n## 3. MoS decentralised with MoS, 55K tokens/s\n")
m = est(MOS)
show("shipped (star, ring, sparse sync every step)", m)
m10 = est(MOS, "compression.sync_every=10")
show("star, sparse sync every 10 steps", m10)
C3 = (MOS,) + MESH + ("compression.sync_every=1,10", "network.bandwidth=300Mbps,3.5Gbps,4Gbps",
                      "network.latency=10ms,1ms")
g = est(*C3)
for p in g:
    show("full_mesh, all_gather, sync every %s step(s), %s, %s"
         % (p["settings"]["compression.sync_every"], p["settings"]["network.bandwidth"],
            p["settings"]["network.latency"]), p)
MP = dict((("%s/%s/%s" % (p["settings"]["compression.sync_every"], p["settings"]["network.bandwidth"],
                          p["settings"]["network.latency"])), p) for p in g)
mp1, mp10, m4 = MP["1/300Mbps/10ms"], MP["10/300Mbps/10ms"], MP["10/4Gbps/1ms"]
print("- shipped, %s: %s; K/V + dK/dV alone %.1f s" % (m["busiest_link"], kinds(m),
      (m["busiest_link_bytes_by_kind"]["kv"] + m["busiest_link_bytes_by_kind"]["dkv"]) / m["busiest_link_bandwidth_bytes_per_s"]))
DIRECT = "parallel.all_reduce=direct"  # grad_sync to every peer at once, not around the ring
md1, md10 = est(MOS, *MESH, DIRECT), est(MOS, *MESH, "compression.sync_every=10", DIRECT)
print("- per peer, sync every step, %s: %s (grad_sync %.2f s)" % (mp1["busiest_link"], kinds(mp1),
      mp1["busiest_link_bytes_by_kind"]["grad_sync"] / mp1["busiest_link_bandwidth_bytes_per_s"]))
show("full_mesh, all_gather, sync every step, parallel.all_reduce direct", md1)
show("full_mesh, all_gather, sync every 10 steps, parallel.all_reduce direct", md10)
mno = est(MOS, *MESH, "compression.sync_every=10", "parallel.overlap=false")
print("- per peer, sync every 10 steps, 300 Mbps, 10 ms, parallel.overlap=false: %s tokens/s (step %s s, %.1f %% longer)"
      % (tokens(mno["tokens_per_s"]), sec(mno["step_seconds"]), 100 * (mno["step_seconds"] / mp10["step_seconds"] - 1)))
print("- per layer and direction, each peer link of the per-peer case carries %.2f MB of K/V (or dK/dV)"
      % (mp10["bytes_per_rank_per_step"]["kv"] / 8 / 7 / 1e6))
# Sequences in flight: 8 sequences per step, 1..8 of them interleaved layer by layer on each rank.
C3F = (MOS,) + MESH + (DIRECT, "compression.sync_every=1,10", "training.batch_size=8",
                       "parallel.microbatches=1,2,4,8")
gf = est(*C3F)
for p in gf:
    show("full_mesh, all_gather, direct, 8 sequences per step, %s in flight, sync every %s step(s)"
         % (p["settings"]["parallel.microbatches"], p["settings"]["compression.sync_every"]), p)
best = at(gf, compression__sync_every=10, parallel__microbatches=8)
fifo = est(MOS, *MESH, DIRECT, "compression.sync_every=10", "training.batch_size=8", "parallel.microbatches=8",
           "network.message_order=fifo")
show("the same, 8 in flight, sync every 10 steps, network.message_order fifo", fifo)
C3B = (MOS,) + MESH + (DIRECT, "compression.sync_every=10", "training.batch_size=8", "parallel.microbatches=8",
                       "network.bandwidth=350Mbps,400Mbps,500Mbps")
gb = est(*C3B)
for p in gb:
    show("the same, 8 in flight, sync every 10 steps, %s per peer link" % p["settings"]["network.bandwidth"], p)
b400 = at(gb, network__bandwidth="400Mbps")
rows.append(("MoS paper, throughput table: decentralised, 300 Mbps, MoS (K 98 %, V 95 %)", "55K",
             "%s (`mos-paper-mos-300mbps`: star, sync every step)" % tokens(m["tokens_per_s"]),
             "star: ≤ %s: impossible; a link per peer: ≤ %s with the sync every step ring all-reduced, ≤ %s direct "
             "(impossible either way), ≤ %s with it every 10 steps (possible)"
             % (tokens(m["max_tokens_per_s"]), tokens(mp1["max_tokens_per_s"]), tokens(md1["max_tokens_per_s"]),
                tokens(mp10["max_tokens_per_s"])),
             "not reached at 300 Mbps: best %s (%.0f %% of it: a link per peer, all-gather, direct all-reduce, "
             "sync every 10 steps, 8 sequences per step all in flight; %.2f× its bound; one in flight: %s); "
             "%s at 400 Mbps per peer link with them; with one sequence in flight %s at 4 Gbps and 1 ms"
             % (tokens(best["tokens_per_s"]), 100 * best["tokens_per_s"] / 55000, best["step_over_bound"],
                tokens(md10["tokens_per_s"]), tokens(b400["tokens_per_s"]), tokens(m4["tokens_per_s"])),
             command(*C3F) + "; " + command(*C3B) + "; " + command(*C3)))

# 4. Figure 2: MoS on par with centralised in wall-clock time (600 steps, 100 warm-up steps).
print("\n## 4. Figure 2, MoS on par with centralised in wall-clock time\n")
C4 = (DEC, "compression.weight_sync=sparse", "compression.sync_fraction=0.05")  # a MoS warm-up step
w = est(*C4)
show("MoS warm-up step (uncompressed K/V, sparse sync every step, star)", w)
mp4 = MP["1/4Gbps/1ms"]
show("MoS compressed step, full_mesh, all_gather, sync every step, 4 Gbps, 1 ms (row 3's grid)", mp4)


def run_time(warm, comp, warm_steps=100, steps=600):
    return warm_steps * warm + (steps - warm_steps) * comp


t_cen = 600 * c["step_seconds"]
t_mos = run_time(w["step_seconds"], m["step_seconds"])
b_mos = run_time(w["bound_seconds"], m["bound_seconds"])
t_dc = run_time(c["step_seconds"], mp1["step_seconds"])
t_dc4 = run_time(c["step_seconds"], mp4["step_seconds"])
print("- the 100 warm-up steps on the star: %.1f h" % (100 * w["step_seconds"] / 3600))
print("- 600 steps centralised: %.1f min; MoS as projected (100 warm-up steps at the warm-up step, 500 at the"
      " shipped compressed step): %.2f h, %.1f× centralised; its bound (the same steps at their bounds): %.2f h, %.1f×"
      % (t_cen / 60, t_mos / 3600, t_mos / t_cen, b_mos / 3600, b_mos / t_cen))
print("- warm-up at the centralised step, compressed steps with a link per peer, all-gather, sync every step:"
      " 300 Mbps %.1f min (%.2f×), 4 Gbps / 1 ms %.1f min (%.2f×)"
      % (t_dc / 60, t_dc / t_cen, t_dc4 / 60, t_dc4 / t_cen))
scen = json.load(open(MOS))
ws, ns = scen["compression"]["warmup_steps"], scen["training"]["steps"]
t_p = run_time(w["step_seconds"], m["step_seconds"], ws, ns)
print("- the paper-scale scenario's warm-up fraction instead (%d of %d steps, %.0f %%), warm-up over 300 Mbps, shipped"
      " steps: %.1f× centralised" % (ws, ns, 100.0 * ws / ns, t_p / (ns * c["step_seconds"])))
rows.append(("MoS paper, Figure 2: MoS on par with centralised in wall-clock time", "≈ 1× centralised's time",
             "%.1f× (600 steps: %.1f h against %.1f min; losses trained 2026-11-22, figure2.md)"
             % (t_mos / t_cen, t_mos / 3600, t_cen / 60),
             "star: ≥ %.1f h for the 600 steps (%.1f×): impossible" % (b_mos / 3600, b_mos / t_cen),
             "not reached at 300 Mbps: %.2f× with the 100 warm-up steps at datacenter speed and a link per peer, all-gather;"
             " %.2f× at 4 Gbps per peer link, 1 ms" % (t_dc / t_cen, t_dc4 / t_cen),
             command(*C4) + " (a warm-up step) with rows 1 and 3's"))

# 5. Figure 3: pipeline x context, 3.1B on 32 A100.
print("\n## 5. Figure 3, pipeline × context (3.1B, 8 stages × 4 context ranks, 32×A100)\n")
f3c, f3d, f3m = est(F3C), est(F3D), est(F3M)
show("centralised 100 Gbps", f3c)
show("decentralised 300 Mbps, uncompressed", f3d)
show("compressed 300 Mbps (MoS K/V, rank-25 subspace boundaries), star", f3m)
C5 = (F3M,) + MESH + ("network.bandwidth=300Mbps,2Gbps,4Gbps", "network.latency=1ms,10ms")
g = est(*C5)
f3p = at(g, network__bandwidth="300Mbps", network__latency="10ms")
for p in g:
    show("compressed, full_mesh, all_gather, %s, %s" % (p["settings"]["network.bandwidth"],
                                                       p["settings"]["network.latency"]), p)
f3p4 = at(g, network__bandwidth="4Gbps", network__latency="1ms")
print("- star, %s: %s" % (f3m["busiest_link"], kinds(f3m)))
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
rows.append(("MoS paper, Figure 3: pipeline × context (3B, 32×A100), compressed ≈ centralised", "near parity (no figure in docs/design.md; the 800M table has 55K against 56K)",
             "%s = %s of centralised %s (`mos-fig3-pp-cp-compressed-300mbps`, `-centralized-100gbps`)" % (tokens(f3m["tokens_per_s"]), pct(f3m["tokens_per_s"], f3c["tokens_per_s"]),
                                                                  tokens(f3c["tokens_per_s"])),
             "star: ≤ %s (%s): impossible; a link per peer: ≤ %s (%s): impossible with the dense stage all-reduce, "
             "≤ %s (%s) with a sparse one: possible"
             % (tokens(f3m["max_tokens_per_s"]), pct(f3m["max_tokens_per_s"], f3c["tokens_per_s"]),
                tokens(f3p["max_tokens_per_s"]), pct(f3p["max_tokens_per_s"], f3c["tokens_per_s"]),
                tokens(f3s["max_tokens_per_s"]), pct(f3s["max_tokens_per_s"], f3c["tokens_per_s"])),
             "not reached at 300 Mbps: %s (%s) with a link per peer and all-gather, %s (%s) with the stages' weights "
             "synced sparsely (5 %% every 10 steps); %s (%s) at 4 Gbps per peer link, 1 ms"
             % (tokens(f3p["tokens_per_s"]), pct(f3p["tokens_per_s"], f3c["tokens_per_s"]),
                tokens(f3s["tokens_per_s"]), pct(f3s["tokens_per_s"], f3c["tokens_per_s"]),
                tokens(f3p4["tokens_per_s"]), pct(f3p4["tokens_per_s"], f3c["tokens_per_s"])),
             command(*C5) + "; " + command(F3M, *SPARSE10, *MESH)))

# 6. Protocol Models: 80 Mbps matching 100 Gbps.
print("\n## 6. Protocol Models, 80 Mbps matching 100 Gbps (3.1B, 8 stages, 8×A100)\n")
pc = est(PPC)
show("centralised 100 Gbps, 1F1B", pc)
pd = est(PPD, "network.bandwidth=80Mbps")
show("uncompressed, 80 Mbps star, 1F1B", pd)
C6 = (PPS, "network.bandwidth=80Mbps", "parallel.schedule=1f1b,gpipe", "network.latency=25ms,10ms,1ms,0ms")
g = est(*C6)
for p in g:
    show("subspace rank 25, 80 Mbps star, %s, %s" % (p["settings"]["parallel.schedule"], p["settings"]["network.latency"]), p)
ps = at(g, parallel__schedule="1f1b", network__latency="10ms")
print("- subspace at 80 Mbps: %s carries %s (%.2f s)" % (ps["busiest_link"], kinds(ps), ps["busiest_link_seconds"]))
pg = at(g, parallel__schedule="gpipe", network__latency="10ms")
pg1 = at(g, parallel__schedule="gpipe", network__latency="1ms")
rows.append(("Protocol Models (arXiv 2506.01260), abstract: 80 Mbps matching 100 Gbps (subspace boundaries, up to 99 % compressed)", "parity (abstract)",
             "%s = %s of centralised %s (`paper-pp-3b-subspace-300mbps` at 80 Mbps, 1F1B, 10 ms)"
             % (tokens(ps["tokens_per_s"]), pct(ps["tokens_per_s"], pc["tokens_per_s"]), tokens(pc["tokens_per_s"])),
             "%s: ≤ %s (busiest link %s s of a %s s step bound): possible"
             % (ps["bound_kind"], tokens(ps["max_tokens_per_s"]), sec(ps["busiest_link_seconds"]), sec(ps["bound_seconds"])),
             "not reached at 10 ms: %s (%s) under GPipe; %s (%s) under GPipe at 1 ms"
             % (tokens(pg["tokens_per_s"]), pct(pg["tokens_per_s"], pc["tokens_per_s"]),
                tokens(pg1["tokens_per_s"]), pct(pg1["tokens_per_s"], pc["tokens_per_s"])), command(*C6)))

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
rows.append(("SparseLoCo, the public 8B runs: ≈12 s of communication per sync (15–20 replicas of 8 GPUs, 500 / 110 Mb/s)", "≈12 s",
             "%s–%s s (`sparseloco-8b-rank-link-relay`, R = 15–20)"
             % (sec(sl["b", "relay", 15]["comm_per_sync_seconds"]), sec(sl["b", "relay", 20]["comm_per_sync_seconds"])),
             "every message to every holder: one link per GPU rank ≥ %s–%s s (possible); one link per replica ≥ %s–%s s (impossible)"
             % (sec(bound["b", 15]), sec(bound["b", 20]), sec(bound["a", 15]), sec(bound["a", 20])),
             "reached with one link per GPU rank and an upload-once relay (link ≥ 80 Gb/s); the ring all-gather: %s–%s s"
             % (sec(sl["b", "ring", 15]["comm_per_sync_seconds"]), sec(sl["b", "ring", 20]["comm_per_sync_seconds"])),
             command(SLR) + " (R = 20; R = 15 and the other placements in §7)"))

print("\n## The table\n")
print("| claim | paper | lowband, the paper's setup | bound on that network | what reaches it | command |")
print("|---|---|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
PY
