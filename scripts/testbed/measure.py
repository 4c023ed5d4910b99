#!/usr/bin/env python3
"""Measures real Linux TCP on the emulated star (testbed.sh) and writes CSVs of every
run (medians are taken by the analysis): point-to-point, incast (2 and 3 flows into
one host) and a 4-host ring all-gather / all-reduce. Run as root from the repo root:

  scripts/testbed/measure.py p2p|incast|ring|states|loss OUT.csv [--quick]

states: the connection states of sim/tcp_model.h (analysis/network-fidelity/tcp-states.md):
warm vs idle (a gap before each message, tcp_slow_start_after_idle=1 on the sender),
two messages written back to back, and bbr's window on warm transfers.

loss: warm point-to-point messages over links that drop packets at random (testbed.sh
LOSS: each access link, each direction, one segment per packet), cubic and bbr, at
100 Mbit/s with 25 and 100 ms one-way paths and a 16 MiB send buffer (the window
never limits); cubic's messages long enough for 8 loss events, bbr's 64 MiB.
LOSS_REPS (default 5) timed messages per case.

Delays are one-way *path* delays: each of the two access links a message crosses
gets half. RATES, DELAYS, SIZES_MIB (comma lists) keep only those values of the p2p
and ring grids, for a rerun of some cases (STATES_RATES does so for states). RENICE=1
(or STATES_RENICE=1) runs the delay lines at nice -10, ahead of the senders. Every load is bounded by subprocess timeouts and stays on 10.14.0.0/24
inside the testbed's namespaces.
"""
import csv
import itertools
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED = os.path.join(HERE, "testbed.sh")
BENCH = os.path.join(HERE, "tcpbench.py")
MIB = 1 << 20
REPS = 3


def sh(*args, timeout=60):
    subprocess.run(args, check=True, timeout=timeout)


def up(nodes, rate_mbit, path_delay_ms, sndbuf):
    sh(TESTBED, "up", str(nodes), str(rate_mbit), str(path_delay_ms / 2), str(sndbuf))
    if os.environ.get("RENICE") or os.environ.get("STATES_RENICE"):  # the delay lines before everything else
        for i in range(nodes):
            with open(f"/run/lowband-testbed/h{i}.pid") as f:
                sh("renice", "-n", "-10", "-p", f.read().strip())


def in_host(i, *args):
    return [TESTBED, "exec", str(i), "python3", BENCH, *args]


def serve(i):
    return subprocess.Popen(in_host(i, "serve", "5201"), stdout=subprocess.DEVNULL)


def ideal_seconds(size, rate_mbit, path_delay_ms):
    return size * 8 / (rate_mbit * 1e6) + path_delay_ms / 1e3


def runs(cmd, timeout):
    out = subprocess.run(cmd, check=True, timeout=timeout, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def only(name, values):
    """The grid's values that the comma list in $name keeps (all when unset)."""
    keep = os.environ.get(name)
    return values if not keep else [v for v in values if str(v) in keep.split(",")]


def warmups(size):
    return min(16, max(2, math.ceil(16 * MIB / size)))


def p2p(writer, quick):
    rates = [100, 300, 1000]
    delays = [1, 10, 25]
    sizes = [1 * MIB, 8 * MIB, 64 * MIB]
    sndbufs = [4 * MIB, 16 * MIB]
    ccs = ["cubic", "bbr"]
    if quick:
        rates, delays, sizes, sndbufs, ccs = [1000], [25], [8 * MIB], [4 * MIB], ["cubic"]
    rates, delays = only("RATES", rates), only("DELAYS", delays)
    sizes = [s * MIB for s in only("SIZES_MIB", [s // MIB for s in sizes])]
    for sndbuf, rate, delay in itertools.product(sndbufs, rates, delays):
        up(2, rate, delay, sndbuf)
        server = serve(1)
        time.sleep(0.3)
        try:
            for cc, size in itertools.product(ccs, sizes):
                t = ideal_seconds(size, rate, delay)
                budget = 30 + 40 * t
                for conn in ["fresh", "reused"]:
                    extra = ["--fresh"] if conn == "fresh" else ["--reused", "--warmup", str(warmups(size))]
                    load = os.getloadavg()[0]
                    for r in runs(in_host(0, "send", "10.14.1.2:5201", str(size), "--cc", cc, "--reps", str(REPS),
                                          *extra), budget):
                        writer.writerow([rate, delay, sndbuf, cc, conn, size, r["rep"], f"{r['seconds']:.6f}",
                                         f"{load:.2f}"])
        finally:
            server.kill()
            server.wait()
    return ["rate_mbit", "path_delay_ms", "sndbuf_max_bytes", "cc", "conn", "size_bytes", "rep", "seconds",
            "loadavg_1min"]


def incast(writer, quick):
    configs = list(itertools.product([100, 1000], [1, 25], [8 * MIB, 64 * MIB], ["cubic", "bbr"], [2, 3]))
    if quick:
        configs = [(1000, 25, 8 * MIB, "cubic", 2)]
    for rate, delay, size, cc, flows in configs:
        up(flows + 1, rate, delay, 4 * MIB)
        server = serve(0)
        time.sleep(0.3)
        try:
            t = ideal_seconds(size * flows, rate, delay)
            load = os.getloadavg()[0]
            for rep in range(REPS):
                # Warm connections (each warmed alone-ish before start), then all flows at once.
                w = warmups(size)
                start = time.monotonic_ns() + int((1 + 2 * w * flows * ideal_seconds(size, rate, delay)) * 1e9)
                procs = [subprocess.Popen(in_host(i, "send", "10.14.0.2:5201", str(size), "--cc", cc, "--reused",
                                                  "--warmup", str(w), "--reps", "1", "--start-at", str(start)),
                                          stdout=subprocess.PIPE, text=True) for i in range(1, flows + 1)]
                ends = []
                for p in procs:
                    out, _ = p.communicate(timeout=60 + 40 * t * w)
                    ends.append(json.loads(out.splitlines()[0])["end_ns"])
                writer.writerow([rate, delay, cc, flows, size, rep, f"{(max(ends) - start) / 1e9:.6f}",
                                 f"{(min(ends) - start) / 1e9:.6f}", f"{load:.2f}"])
        finally:
            server.kill()
            server.wait()
    return ["rate_mbit", "path_delay_ms", "cc", "flows", "size_bytes_per_flow", "rep", "seconds_last",
            "seconds_first", "loadavg_1min"]


def ring(writer, quick):
    configs = [(r, d, s, cc) for r, d, s, cc in itertools.product([100, 1000], [1, 25], [8 * MIB, 64 * MIB],
                                                                   ["cubic", "bbr"]) if not (r == 100 and s > 8 * MIB)]
    if quick:
        configs = [(1000, 25, 8 * MIB, "cubic")]
    configs = [c for c in configs if c[0] in only("RATES", [c[0]]) and c[1] in only("DELAYS", [c[1]])
               and c[2] // MIB in only("SIZES_MIB", [c[2] // MIB])]
    hosts = ",".join(f"10.14.{i}.2" for i in range(4))
    for rate, delay, size, cc in configs:
        up(4, rate, delay, 4 * MIB)
        for op in ["all_gather", "all_reduce"]:
            rounds = 3 * (2 if op == "all_reduce" else 1)
            t = rounds * ideal_seconds(size / 4, rate, delay)
            period = 3 * t + 0.5
            reps = REPS + 1  # rep 0: connections open but never used
            start = time.monotonic_ns() + int(1.5e9)
            load = os.getloadavg()[0]
            procs = [subprocess.Popen(in_host(i, "ring", str(i), hosts, str(size), "--op", op, "--cc", cc, "--reps",
                                              str(reps), "--start-at", str(start), "--period", str(period)),
                                      stdout=subprocess.PIPE, text=True) for i in range(4)]
            per_rep = [[] for _ in range(reps)]
            for p in procs:
                out, _ = p.communicate(timeout=10 + reps * period + 30)
                for line in out.splitlines():
                    r = json.loads(line)
                    per_rep[r["rep"]].append(r["seconds"])
            for rep, secs in enumerate(per_rep):
                writer.writerow([rate, delay, cc, op, size, "cold" if rep == 0 else "warm", rep,
                                 f"{max(secs):.6f}", f"{load:.2f}"])
    return ["rate_mbit", "path_delay_ms", "cc", "op", "size_bytes", "conn", "rep", "seconds", "loadavg_1min"]


def states(writer, quick):
    """Rows: case warm | idle (gap_s idle before each message) | back_to_back (msg 1 and 2,
    both timed from when they were written together) | bbr_window (warm, the window cap)."""
    rates = [int(r) for r in os.environ.get("STATES_RATES", "100,1000").split(",")]
    setups = list(itertools.product(rates, [1, 10, 25]))
    if quick:
        setups = [(1000, 25)]
    for rate, delay in setups:
        up(2, rate, delay, 4 * MIB)
        server = serve(1)
        time.sleep(0.3)

        def run(cc, size, case, extra, gap=0.0):
            budget = 30 + 40 * ideal_seconds(size, rate, delay) * (REPS + warmups(size)) + REPS * gap
            load = os.getloadavg()[0]
            for r in runs(in_host(0, "send", "10.14.1.2:5201", str(size), "--cc", cc, "--reps", str(REPS),
                                  "--reused", "--warmup", str(warmups(size)), *extra), budget):
                row = [rate, delay, 4 * MIB, cc, case, f"{gap:.2f}", size, r["rep"]]
                writer.writerow(row + [1, f"{r['seconds']:.6f}", f"{load:.2f}"])
                if "seconds_second" in r:
                    writer.writerow(row + [2, f"{r['seconds_second']:.6f}", f"{load:.2f}"])

        try:
            for size in [1 * MIB, 8 * MIB]:
                run("cubic", size, "warm", [])
            sh(TESTBED, "exec", "0", "sysctl", "-q", "-w", "net.ipv4.tcp_slow_start_after_idle=1")
            for size, gap in itertools.product([1 * MIB, 8 * MIB], [0.5, 1.0]):
                run("cubic", size, "idle", ["--gap", str(gap)], gap)
            run("bbr", 8 * MIB, "idle", ["--gap", "1.0"], 1.0)
            sh(TESTBED, "exec", "0", "sysctl", "-q", "-w", "net.ipv4.tcp_slow_start_after_idle=0")
            if rate == 1000 and delay == 25:
                for cc, size in itertools.product(["cubic", "bbr"], [1 * MIB, 8 * MIB]):
                    run(cc, size, "back_to_back", ["--back-to-back"])
            sizes = [8 * MIB, 64 * MIB] if rate == 100 else [8 * MIB, 16 * MIB, 32 * MIB, 64 * MIB]
            for cc, size in itertools.product(["bbr", "cubic"] if rate == 1000 else ["bbr"], sizes):
                run(cc, size, "bbr_window" if cc == "bbr" else "cubic_window", [])
        finally:
            server.kill()
            server.wait()
    return ["rate_mbit", "path_delay_ms", "sndbuf_max_bytes", "cc", "case", "gap_s", "size_bytes", "rep", "msg",
            "seconds", "loadavg_1min"]


def loss(writer, quick):
    rate, sndbuf = 100, 16 * MIB
    delays = only("DELAYS", [25, 100])
    losses = only("LOSSES", [0.0001, 0.001, 0.01])
    ccs = only("CCS", ["cubic", "bbr"])
    reps = 2 if quick else int(os.environ.get("LOSS_REPS", "5"))
    if quick:
        delays, losses = delays[:1], losses[1:2]
    # cubic: messages long enough for 8 loss events (the closed forms are steady
    # rates), in MiB, a power of two; bbr: 64 MiB, some seconds at its rate.
    def cubic_mib(p):
        path_loss = 1 - (1 - p) ** 2
        return 2 ** math.ceil(math.log2(8 / path_loss * 1448 / MIB))
    for delay, p in itertools.product(delays, losses):
        os.environ["LOSS"] = str(p)
        try:
            up(2, rate, delay, sndbuf)
        finally:
            del os.environ["LOSS"]
        server = serve(1)
        time.sleep(0.3)
        try:
            for cc in ccs:
                size = 64 * MIB if cc == "bbr" else cubic_mib(p) * MIB
                budget = 120 + 60 * (reps + 1) * size / (0.3e6 / 8)
                load = os.getloadavg()[0]
                for r in runs(in_host(0, "send", "10.14.1.2:5201", str(size), "--cc", cc, "--reps", str(reps),
                                      "--reused", "--warmup", "1"), budget):
                    writer.writerow([rate, delay, sndbuf, p, cc, size, r["rep"], f"{r['seconds']:.6f}", f"{load:.2f}"])
        finally:
            server.kill()
            server.wait()
    return ["rate_mbit", "path_delay_ms", "sndbuf_max_bytes", "link_loss", "cc", "size_bytes", "rep", "seconds",
            "loadavg_1min"]


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("p2p", "incast", "ring", "states", "loss"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, out = sys.argv[1], sys.argv[2]
    quick = "--quick" in sys.argv[3:]
    tmp = out + ".partial"
    with open(tmp, "w", newline="") as f:
        rows = []

        class Keep:
            def writerow(self, row):
                rows.append(row)
                f.write(",".join(map(str, row)) + "\n")
                f.flush()

        header = {"p2p": p2p, "incast": incast, "ring": ring, "states": states, "loss": loss}[kind](Keep(), quick)
    try:
        with open(out + ".new", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
        os.replace(out + ".new", out)
        os.remove(tmp)
    finally:
        sh(TESTBED, "down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
