#!/usr/bin/env python3
"""The tables of analysis/pipeline-compression.md from the run directories of
pipeline-compression.sh: per network, each boundary codec's final validation loss,
steps and simulated seconds to a target validation loss (linear between evaluations,
as `lowband report` does), seconds per step and the boundary bytes saved as measured."""
import csv, json, pathlib, sys

runs, target = pathlib.Path(sys.argv[1]), float(sys.argv[2])
ORDER = ["none", "subspace", "lowrank", "topk", "quantize"]

def first_below(curve):  # (step, sim seconds) where val loss first reaches target, or None
    prev = None
    for r in curve:
        if r["val_loss"] == "":
            continue
        step, t, loss = int(r["step"]), float(r["sim_seconds"]), float(r["val_loss"])
        if loss <= target:
            if prev is None or prev[2] == loss:
                return step, t
            f = (prev[2] - target) / (prev[2] - loss)
            return prev[0] + f * (step - prev[0]), prev[1] + f * (t - prev[1])
        prev = (step, t, loss)
    return None

rows = {}
for summary in runs.glob("*/*/summary.json"):
    d = summary.parent
    s, sc = json.loads(summary.read_text()), json.loads((d / "scenario.json").read_text())
    b = sc["compression"]["boundary"]
    label = b["method"] + {"subspace": f" k={b.get('rank')}", "lowrank": f" k={b.get('rank')}",
                           "topk": f" {b.get('topk_fraction')}", "quantize": f" {b.get('bits')}-bit"}.get(b["method"], "")
    hit = first_below(list(csv.DictReader(open(d / "curve.csv"))))
    key = (ORDER.index(b["method"]), b.get("rank", 0) and -b["rank"])
    rows.setdefault(sc["network"]["bandwidth"], []).append((key, label, s, hit))

for bw in sorted(rows, key=lambda x: float(x.rstrip("Mbps"))):
    base = next((h for k, _, _, h in rows[bw] if k[0] == 0), None)
    print(f"\n### {bw}, 50 ms links (target validation loss {target})\n")
    print("| boundary | bytes saved (measured) | final val loss | steps to target | sim time to target | s/step | time to target ÷ uncompressed |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for _, label, s, hit in sorted(rows[bw], key=lambda r: r[0]):
        steps = f"{hit[0]:.0f}" if hit else f"not in {s['steps_done']}"
        t = f"{hit[1]:.1f} s" if hit else "—"
        ratio = f"{hit[1] / base[1]:.2f}" if hit and base else "—"
        print(f"| {label} | {100 * s['boundary_bytes_saved_fraction']:.1f} % | {s['final_val_loss']:.4f} (step {s['steps_done']}) "
              f"| {steps} | {t} | {s['sim_seconds_per_step']:.3f} | {ratio} |")
