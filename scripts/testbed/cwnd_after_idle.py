#!/usr/bin/env python3
"""A warm connection's cwnd, ssthresh and RTO (ss -ti) before and after idle gaps, and
the time of each message after the gap: why an idle restart costs what it costs
(analysis/network-fidelity/tcp-states.md). Run in host 0 of a 2-host testbed with
tcpbench.py serving on host 1 and tcp_slow_start_after_idle=1:

  testbed.sh exec 0 python3 scripts/testbed/cwnd_after_idle.py BYTES GAP_S CC
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tcpbench as tb  # noqa: E402

FIELDS = ("cwnd", "ssthresh", "rto", "rtt", "retrans", "lost", "bytes_retrans")


def ss():
    out = subprocess.run(["ss", "-tin", "dst", "10.14.1.2"], capture_output=True, text=True).stdout
    return " ".join(w for w in out.split() if w.split(":")[0] in FIELDS)


def main():
    size, gap, cc = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    s = tb.connect("10.14.1.2:5201", cc)
    payload = memoryview(bytearray(size))
    for _ in range(4):  # back to back with the receiver's reply between: warm
        tb.one_transfer(s, payload)
    print("warm  ", ss())
    for _ in range(3):
        time.sleep(gap)
        t0 = tb.now_ns()
        t1 = tb.one_transfer(s, payload)
        print("after ", f"{(t1 - t0) / 1e9:.4f}s", ss(), flush=True)


if __name__ == "__main__":
    sys.exit(main())
