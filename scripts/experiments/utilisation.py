#!/usr/bin/env python3
"""Per arm of an experiment (RUNS/ARM/<seed run>/steps.jsonl): compute utilisation
(the fraction of a replica's time spent computing: each step's busiest rank's compute
over the run's simulated time), the simulated time, the final validation loss and,
where rounds closed without some replicas (parallel.data_sync.deadline_seconds,
quorum), the replicas dropped per round; mean ± 95 % Student-t interval over the
seeds, as a markdown table.

usage: utilisation.py [--compute-per-step S] RUNS ARM...

--compute-per-step S: a replica's compute per step (e.g. the estimate's
compute_seconds) instead of the busiest rank's (which is a slow replica's where one
is: its compute, not the others').
"""
import glob
import json
import math
import statistics
import sys

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def interval(xs):
    m = statistics.mean(xs)
    return m, (T975[len(xs) - 1] * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan"))


def main(runs, arms, compute_per_step=None):
    print("| arm | seeds | compute utilisation | simulated time (s) | final val loss | replicas dropped per round |")
    print("|---|---:|---:|---:|---:|---:|")
    for arm in arms:
        util, total, loss, dropped = [], [], [], []
        for run in sorted(glob.glob(f"{runs}/{arm}/*/steps.jsonl")):
            steps = [json.loads(line) for line in open(run)]
            total.append(steps[-1]["sim_total_seconds"])
            compute = (len(steps) * compute_per_step if compute_per_step is not None
                       else sum(s["compute_seconds"] for s in steps))
            util.append(compute / total[-1])
            loss.append(next(s["val_loss"] for s in reversed(steps) if s.get("val_loss") is not None))
            rounds = [len(s["round_late_replicas"]) for s in steps if "round_late_replicas" in s]
            if rounds:
                dropped.append(sum(rounds) / len(rounds))
        if not util:
            continue
        cells = [f"{m:.4g} ± {h:.2g}" for m, h in map(interval, (util, total, loss))]
        cells.append(f"{statistics.mean(dropped):.3g}" if dropped else "–")
        print(f"| {arm} | {len(util)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    args = sys.argv[1:]
    seconds = None
    if args[:1] == ["--compute-per-step"]:
        seconds, args = float(args[1]), args[2:]
    main(args[0], args[1:], seconds)
