#!/usr/bin/env python3
"""The table of analysis/hetero-selective.md from the run directories of
hetero-selective.sh: per run the validation loss at a few steps, the bytes all ranks
sent (steps.jsonl "bytes_sent_all_ranks", by kind), the simulated time; and per rank K
selective against uniform at equal bytes and at equal simulated time: each one's validation
loss interpolated at the smaller of the two runs' final counts (linear between evaluations).
Two losses per evaluation: the replicas' mean (what lowband reports), and the synchronised
model's, replica 0's (a dense replica holds the weights the outer steps produce; a
compressing replica holds their projection; in uniform runs all replicas are equal after an
outer step, and every evaluation here follows one; in the reference arrangement, "-ref-",
all replicas hold the same weights after an outer step)."""
import json, pathlib, sys

runs = pathlib.Path(sys.argv[1])
NAMES = ["dense", "selective-k64", "uniform-k64", "selective-k16", "uniform-k16", "selective-k1", "uniform-k1",
         "selective-ref-k16", "uniform-ref-k16", "selective-ref-k1", "uniform-ref-k1"]
AT_STEPS = [100, 200, 400]

def load(name):
    d = runs / name
    steps = [json.loads(l) for l in (d / "steps.jsonl").read_text().splitlines() if l.strip()]
    total, kinds, val = 0.0, {}, []  # val: (cumulative bytes, sim seconds, step, mean loss, model loss)
    for s in steps:
        for k, b in s["bytes_sent_all_ranks"].items():
            kinds[k] = kinds.get(k, 0.0) + b
        total += s["bytes_sent_all_ranks"]["total"]
        if "val_loss" in s:
            model = s.get("val_loss_per_replica", [s["val_loss"]])[0]
            val.append((total, s["sim_total_seconds"], s["step"], s["val_loss"], model))
    return {"summary": json.loads((d / "summary.json").read_text()), "kinds": kinds, "val": val}

def at(val, x, index, loss=3):  # loss column at x of column `index` (0 bytes, 1 seconds), linear
    prev = None
    for v in val:
        if v[index] >= x:
            if prev is None or v[index] == prev[index]:
                return v[loss]
            f = (x - prev[index]) / (v[index] - prev[index])
            return prev[loss] + f * (v[loss] - prev[loss])
        prev = v
    return None

data = {n: load(n) for n in NAMES if (runs / n / "summary.json").exists()}
mb = lambda b: f"{b / 1e6:.1f}"
print("| run | val loss @100 / @200 / @400 steps (replicas' mean) | synchronised model's @400 | boundary bytes (act + act_grad, MB) | pseudo_grad (MB) | all ranks (MB) | simulated time |")
print("|---|---|---:|---:|---:|---:|---:|")
for n, r in data.items():
    by_step = {v[2]: v[3] for v in r["val"]}
    losses = " / ".join(f"{by_step[s]:.4f}" if s in by_step else "—" for s in AT_STEPS)
    k = r["kinds"]
    print(f"| {n} | {losses} | {r['val'][-1][4]:.4f} | {mb(k.get('act', 0) + k.get('act_grad', 0))} | {mb(k.get('pseudo_grad', 0))} "
          f"| {mb(k['total'])} | {r['summary']['sim_total_seconds']:.1f} s |")

for loss, what in [(3, "replicas' mean"), (4, "synchronised model")]:
    print(f"\n**{what}**\n")
    print("| arrangement | rank K (bytes removed) | equal bytes (MB, all ranks) | selective | uniform | uniform − selective | equal time (s) | selective | uniform | uniform − selective |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (arrangement, ref), (k, removed) in [(a, b) for a in [("constrained", ""), ("reference", "ref-")]
                                            for b in [(64, "74.8 %"), (16, "93.6 %"), (1, "99.4 %")]]:
        s, u = data.get(f"selective-{ref}k{k}"), data.get(f"uniform-{ref}k{k}")
        if not s or not u:
            continue
        b = min(s["val"][-1][0], u["val"][-1][0])
        t = min(s["val"][-1][1], u["val"][-1][1])
        ls, lu = at(s["val"], b, 0, loss), at(u["val"], b, 0, loss)
        ts, tu = at(s["val"], t, 1, loss), at(u["val"], t, 1, loss)
        print(f"| {arrangement} | {k} ({removed}) | {mb(b)} | {ls:.4f} | {lu:.4f} | {lu - ls:+.4f} | {t:.1f} | {ts:.4f} | {tu:.4f} | {tu - ts:+.4f} |")
