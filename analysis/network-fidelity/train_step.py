#!/usr/bin/env python3
"""Collects scripts/testbed/train-step.sh's run directories into train-step.csv (one
row per training step) and its --collectives directories into
train-step-collectives.csv, and prints train-step.md's two tables:

  analysis/network-fidelity/train_step.py RUNS_DIR [COLLECTIVES_DIR] [--csv NAME]
RUNS_DIR is searched recursively (rounds of train-step.sh in subdirectories are
repetitions of their own; - for none: the collectives alone); --csv NAME writes NAME
and NAME's -collectives twin here instead of train-step.csv (a later experiment's runs
beside the earlier ones). Sessions timed with --per-call (train-step.sh since
2026-11-29) also give NAME's -calls twin: one row per timed call, and whether a
window collapse (CWND_TRACE=1: bbr's PROBE_RTT) fell inside it.

real_seconds is rank 0's train_step wall time minus record_wall_seconds (gathering the
ranks' logs to build the step graph, bookkeeping the replayed graph does not contain).
Medians are over steps 3.. (steps 1 and 2 open the MPI connections and warm the
caches) of every repetition; the ratio is simulated / real per step, then the median.
"""
import csv
import glob
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WARMUP_STEPS = 2
FIELDS = ["rate_mbit", "link_delay_ms", "mpi", "rep", "step", "real_seconds", "wall_seconds",
          "record_wall_seconds", "sim_ideal_seconds", "sim_tcp_seconds", "compute_seconds",
          "bytes_sent_per_rank", "after_replay", "run_uplink_bytes", "run_lo_bytes", "loadavg_1min"]


def steps(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def link_bytes(before, after, key):
    b = {x["ifname"]: x["stats64"][key]["bytes"] for x in json.load(open(before))}
    a = {x["ifname"]: x["stats64"][key]["bytes"] for x in json.load(open(after))}
    return {name: a[name] - b[name] for name in a}


def lo_bytes(before, after):
    def total(path):  # one JSON array per host, one after another
        text, at, n, decoder = open(path).read(), 0, 0, json.JSONDecoder()
        while text[at:].strip():
            at += len(text[at:]) - len(text[at:].lstrip())
            host, at = decoder.raw_decode(text, at)
            n += sum(x["stats64"]["rx"]["bytes"] for x in host)
        return n
    return total(after) - total(before)


def rows_of(run, root):
    m = re.search(r"r(\d+)-d([\d.]+)-(\w+)-(\d+)$", run)
    rate, delay, alg = m.group(1), m.group(2), m.group(3)
    rep = os.path.relpath(run, root)  # round and repetition
    # the --also-time-on twin: the one other run directory beside ideal
    twin = [d for d in glob.glob(f"{run}/*/steps.jsonl") if not d.startswith(f"{run}/ideal/")]
    ideal, tcp = steps(f"{run}/ideal/steps.jsonl"), steps(twin[0])
    log = open(f"{run}/mpirun.log").read()
    # rank 0 replays after each progress line; the step after it starts late on rank 0
    flushed = {int(n) for n in re.findall(r"^step (\d+)/\d+", log, re.M)}
    uplinks = link_bytes(f"{run}/links-before.json", f"{run}/links-after.json", "rx")
    uplink = statistics.mean(v for k, v in uplinks.items() if k.startswith("p"))
    lo = lo_bytes(f"{run}/lo-before.json", f"{run}/lo-after.json")
    load = open(f"{run}/uptime.txt").read().split("load average:")[1].split(",")[0].strip()
    out = []
    for a, b in zip(ideal, tcp):
        out.append({"rate_mbit": rate, "link_delay_ms": delay, "mpi": alg, "rep": rep, "step": a["step"],
                    "real_seconds": f"{a['wall_seconds'] - a['record_wall_seconds']:.4f}",
                    "wall_seconds": f"{a['wall_seconds']:.4f}",
                    "record_wall_seconds": f"{a['record_wall_seconds']:.4f}",
                    "sim_ideal_seconds": f"{a['sim_step_seconds']:.4f}", "sim_tcp_seconds": f"{b['sim_step_seconds']:.4f}",
                    "compute_seconds": f"{a['compute_seconds']:.4f}",
                    "bytes_sent_per_rank": int(a["bytes_sent_per_rank"]["total"]),
                    "after_replay": int(a["step"] - 1 in flushed), "run_uplink_bytes": int(uplink),
                    "run_lo_bytes": lo, "loadavg_1min": load})
    return out


def table(rows):
    configs = {}
    for r in rows:
        configs.setdefault((int(r["rate_mbit"]), float(r["link_delay_ms"]), r["mpi"]), []).append(r)
    print("| rate | link delay | Open MPI | steps | real (s) | spread of reps | `ideal` (s) | ideal / real "
          "| `tcp` (s) | tcp / real | tcp / real, summed | compute (s) | load |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (rate, delay, alg), rs in sorted(configs.items(), key=lambda kv: (kv[0][2] != "ring", kv[0][1], kv[0][0])):
        use = [r for r in rs if int(r["step"]) > WARMUP_STEPS]
        med = lambda key: statistics.median(float(r[key]) for r in use)
        ratio = lambda key: statistics.median(float(r[key]) / float(r["real_seconds"]) for r in use)
        reps = {}
        for r in use:
            reps.setdefault(r["rep"], []).append(float(r["real_seconds"]))
        per_rep = [statistics.median(v) for v in reps.values()]
        loads = sorted(float(r["loadavg_1min"]) for r in rs)
        # steps that differ (SparseLoCo's inner and sync steps): the whole span's ratio
        summed = sum(float(r["sim_tcp_seconds"]) for r in use) / sum(float(r["real_seconds"]) for r in use)
        print(f"| {rate} Mbit/s | {delay:g} ms | {alg} | {len(use)} | {med('real_seconds'):.3f} "
              f"| {min(per_rep):.3f}–{max(per_rep):.3f} | {med('sim_ideal_seconds'):.3f} | {ratio('sim_ideal_seconds'):.2f} "
              f"| {med('sim_tcp_seconds'):.3f} | {ratio('sim_tcp_seconds'):.2f} | {summed:.2f} | {med('compute_seconds'):.3f} "
              f"| {loads[0]:.1f}–{loads[-1]:.1f} |")


def bench_rows(path, time_column, scale):
    """(collective, seconds) from a bench-comm table: mpi rows give microseconds, simulated ones ms."""
    out = {}
    for line in open(path):
        cols = line.split()
        if len(cols) <= time_column or not cols[0].isdigit():  # headers, Open MPI warnings
            continue
        name = cols[3] if time_column == 5 else cols[1]
        out[name] = float(cols[time_column]) * scale
    return out


def bench_calls(path):
    """{collective: [(started_s, seconds), ...]} from bench-comm --per-call lines (none in older sessions)."""
    out = {}
    for line in open(path):
        m = re.match(r"#\s+(\w+) call \d+: ([\d.]+) us \(slowest rank\), started at ([\d.]+) s", line)
        if m:
            out.setdefault(m.group(1), []).append((float(m.group(3)), float(m.group(2)) * 1e-6))
    return out


def window_collapses(path):
    """CLOCK_MONOTONIC times of tcp_probe events with a window of <= 4 segments (CWND_TRACE=1), or None."""
    if not os.path.exists(path):
        return None
    return [float(line.split()[0]) for line in open(path) if line.strip()]


def collectives(root, collectives_csv):
    """One CSV row per session (cRATE-dDELAY-LABEL, found at any depth: step-grid.sh writes one per round);
    the table gives per point the median real time, the median of tcp / real and the sessions' spread."""
    rows, calls_of = [], {}  # calls_of[(session, collective)]: [(started_s, seconds, collapse inside or "")]
    for d in sorted(glob.glob(os.path.join(root, "**", "c*-d*-*"), recursive=True)):
        m = re.search(r"c(\d+)-d([\d.]+)-(\w+)$", d)
        if not m or not os.path.exists(f"{d}/tcp.txt"):
            continue
        mpi = bench_rows(f"{d}/mpi.txt", 5, 1e-6)
        ideal, tcp = bench_rows(f"{d}/ideal.txt", 3, 1e-3), bench_rows(f"{d}/tcp.txt", 3, 1e-3)
        calls, collapses = bench_calls(f"{d}/mpi.txt"), window_collapses(f"{d}/cwnd-collapses.txt")
        load = open(f"{d}/uptime.txt").read().split("load average:")[1].split(",")[0].strip()
        session = os.path.relpath(d, root)
        for name in ("all_reduce", "all_gather", "reduce_scatter"):
            mine = calls.get(name, [])
            inside = [("" if collapses is None else int(any(t0 <= t <= t0 + s for t in collapses))) for t0, s in mine]
            calls_of[(session, name)] = [(t0, s, hit) for (t0, s), hit in zip(mine, inside)]
            hit = "" if collapses is None else sum(inside)
            rows.append({"rate_mbit": m.group(1), "link_delay_ms": m.group(2), "mpi": m.group(3),
                         "collective": name, "bytes": 13200000, "real_seconds": f"{mpi[name]:.4f}",
                         "real_call_median_seconds": f"{statistics.median(s for _, s in mine):.4f}" if mine else "",
                         "calls": len(mine) or "", "calls_in_window_collapse": hit,
                         "sim_ideal_seconds": f"{ideal[name]:.4f}", "sim_tcp_seconds": f"{tcp[name]:.4f}",
                         "loadavg_1min": load, "session": session})
    key = lambda r: (float(r["link_delay_ms"]), int(r["rate_mbit"]), r["mpi"] != "default", r["mpi"], r["collective"])
    rows.sort(key=key)
    with open(os.path.join(HERE, collectives_csv), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    call_rows = [{"session": r["session"], "collective": r["collective"], "call": i, "started_monotonic_s": f"{t0:.6f}",
                  "seconds": f"{s:.6f}", "window_collapse_inside": hit}
                 for r in rows for i, (t0, s, hit) in enumerate(calls_of[(r["session"], r["collective"])])]
    if call_rows:
        with open(os.path.join(HERE, collectives_csv.replace("-collectives.csv", "-calls.csv")), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(call_rows[0]))
            w.writeheader()
            w.writerows(call_rows)
    per_call = all(r["calls"] for r in rows)
    print("\n| rate | link delay | Open MPI | collective | sessions | real (s), median | spread | `ideal` (s) "
          "| `tcp` (s) | tcp / real, median |" + (" one call (s), median | tcp / one call | calls in a window collapse |"
                                                  if per_call else "") + " load |")
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if per_call else "") + "---:|")
    points = {}
    for r in rows:
        points.setdefault(key(r), []).append(r)
    for use in points.values():
        r, real = use[0], sorted(float(u["real_seconds"]) for u in use)
        ratio = statistics.median(float(u["sim_tcp_seconds"]) / float(u["real_seconds"]) for u in use)
        loads = sorted(float(u["loadavg_1min"]) for u in use)
        one_call = ""
        if per_call:  # the median over every session's calls
            median = statistics.median(s for u in use for _, s, _ in calls_of[(u["session"], u["collective"])])
            hits = [u["calls_in_window_collapse"] for u in use]
            one_call = (f" {median:.3f} | {float(r['sim_tcp_seconds']) / median:.2f} | "
                        + (f"{sum(hits)} of {sum(u['calls'] for u in use)} |" if "" not in hits else "— |"))
        print(f"| {r['rate_mbit']} Mbit/s | {r['link_delay_ms']} ms | {r['mpi']} | {r['collective']} | {len(use)} "
              f"| {statistics.median(real):.3f} | {real[0]:.3f}–{real[-1]:.3f} | {float(r['sim_ideal_seconds']):.3f} "
              f"| {float(r['sim_tcp_seconds']):.3f} | {ratio:.2f} |{one_call} {loads[0]:.1f}–{loads[-1]:.1f} |")


def main():
    args = sys.argv[1:]
    csv_name = "train-step.csv"
    if "--csv" in args:
        at = args.index("--csv")
        csv_name = args[at + 1]
        del args[at:at + 2]
    if not args:
        sys.exit(__doc__)
    if args[0] == "-":
        if len(args) > 1:
            collectives(args[1], csv_name.replace(".csv", "-collectives.csv"))
        return
    out = os.path.join(HERE, csv_name)
    runs = sorted(d for d in glob.glob(os.path.join(args[0], "**", "r*-d*-*-*"), recursive=True) if os.path.isdir(d))
    rows = []
    for run in runs:
        if os.path.exists(f"{run}/links-after.json"):  # a finished rep
            rows += rows_of(run, args[0])
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    table(rows)
    if len(args) > 1:
        collectives(args[1], csv_name.replace(".csv", "-collectives.csv"))


if __name__ == "__main__":
    main()
