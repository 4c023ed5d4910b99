#!/usr/bin/env python3
"""tcp-states.csv (scripts/testbed/measure.py states) against the tcp model's closed
forms (sim/tcp_model.h, written out again below; tests/sim/test_tcp_states.cpp pins the
C++ to the same hand-worked values). Prints the markdown table of tcp-states.md.

  analysis/network-fidelity/tcp_states.py [CSV...]   (default: tcp-states.csv, tcp-states-1g.csv)
"""
import collections
import csv
import math
import os
import statistics
import sys

PAYLOAD = 1448 / 1514
IW = 10 * 1448
MIN_RTO = 0.2
FRACTION = {"cubic": 0.66, "bbr": 0.61}  # tcp_window_bytes


def window(cc, sndbuf):
    return FRACTION[cc] * sndbuf


def rate(B, rtt, W):  # tcp_rate_bytes_per_s
    return min(B * PAYLOAD, W / rtt)


def sending(S, line, rtt, w):  # sending_seconds: one burst of w per round trip
    if w >= line * rtt or S <= w:
        return S / line
    rounds = math.ceil(S / w) - 1
    return rounds * rtt + (S - rounds * w) / line


def warm_in_window(S, B, L, w, W):  # warm_seconds_in_window
    line, rtt = B * PAYLOAD, 2 * L
    return max(L + sending(S, line, rtt, w), S / rate(B, rtt, W))


def startup(S, r, rtt, w):  # tcp_startup_seconds (open connection, window w)
    pipe = r * rtt
    exit_w = max(IW, pipe)
    sent = elapsed = 0.0
    while sent < S:
        if w >= pipe:
            elapsed += (S - sent) / r
            break
        if w >= exit_w:
            rounds = math.ceil((S - sent) / w)
            elapsed += (rounds - 1) * rtt + ((S - sent) - (rounds - 1) * w) / r
            break
        chunk = min(w, S - sent)
        sent += chunk
        if sent >= S:
            elapsed += chunk / r
            break
        elapsed += rtt
        w = min(2 * w, exit_w)
    return max(0.0, elapsed - S / r)


def after_idle(w, pipe, idle, rtt, cc):  # tcp_window_after_idle_bytes
    rto = rtt + MIN_RTO
    if cc == "bbr" or not idle > rto:
        return w
    return max(min(IW, w), min(w, pipe) / 2 ** (math.ceil(idle / rto) - 1))


def model(case, cc, B, L, sndbuf, S, gap, msg):
    W = window(cc, sndbuf)
    T = warm_in_window(S, B, L, W, W)
    if case == "idle":
        # The sender's last byte left L before it arrived; the reply took L back; then
        # the gap: idle = gap + 2L. The window before was the pipe (warm).
        r = rate(B, 2 * L, W)
        w = after_idle(math.inf, B * PAYLOAD * 2 * L, gap + 2 * L, 2 * L, cc)
        return T + startup(S, r, 2 * L, w)
    if case == "back_to_back" and msg == 2:  # tcp_backlog_increment_seconds
        w = min(W, max(IW, S)) if cc == "cubic" else W
        return T + warm_in_window(2 * S, B, L, w, W) - warm_in_window(S, B, L, w, W)
    return T


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    paths = sys.argv[1:] or [os.path.join(here, n) for n in ("tcp-states.csv", "tcp-states-1g.csv")]
    runs = collections.defaultdict(list)
    loads = collections.defaultdict(list)
    for path in paths:
        for r in csv.DictReader(open(path)):
            key = (r["case"], int(r["rate_mbit"]), int(r["path_delay_ms"]), r["cc"], int(r["size_bytes"]),
                   float(r["gap_s"]), int(r["msg"]), int(r["sndbuf_max_bytes"]), os.path.basename(path))
            runs[key].append(float(r["seconds"]))
            loads[key].append(float(r["loadavg_1min"]))
    print("| case | rate, delay | cc | size | gap (s) | msg | file | measured (s) | spread | load | tcp (s) | error |")
    print("|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    within = total = 0
    by_case = collections.defaultdict(lambda: [0, 0])
    for key in sorted(runs):
        case, mbit, ms, cc, S, gap, msg, sndbuf, name = key
        v = runs[key]
        measured = statistics.median(v)
        m = model(case, cc, mbit * 1e6 / 8, ms / 1e3, sndbuf, S, gap, msg)
        err = m / measured - 1
        total += 1
        within += abs(err) <= 0.10
        tally = by_case[f"{case}, {mbit} Mbit/s, {cc}, {name[:-4]}"]
        tally[0] += abs(err) <= 0.10
        tally[1] += 1
        print(f"| {case} | {mbit} Mbit/s, {ms} ms | {cc} | {S >> 20} MiB | {gap:.1f} | {msg} | {name[:-4]} | {measured:.4f} | "
              f"{max(v) / min(v) - 1:.0%} | {statistics.median(loads[key]):.1f} | {m:.4f} | {err:+.1%} |")
    print(f"\n{within} of {total} cases within 10 %.\n")
    print("| cases | within 10 % |")
    print("|---|---:|")
    for name, (ok, n) in sorted(by_case.items()):
        print(f"| {name} | {ok} of {n} |")


if __name__ == "__main__":
    main()
