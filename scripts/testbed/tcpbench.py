#!/usr/bin/env python3
"""Timed TCP transfers between testbed hosts (scripts/testbed/testbed.sh).

Every namespace on one machine shares CLOCK_MONOTONIC, so a transfer is timed from
the sender's start (before connect() for a fresh connection, before the first byte
for a reused one) to the moment the receiver has read the last byte: the receiver
sends that time back. This is what lowband simulates as one message.

  tcpbench.py serve PORT
  tcpbench.py send HOST:PORT BYTES --cc cubic --fresh|--reused --reps N [--start-at NS]
                 [--gap S]          reused: each timed message after S seconds of idle
                 [--back-to-back]   reused: two messages ready at once, each timed from then
  tcpbench.py ring RANK HOST,HOST,... BYTES --op all_gather|all_reduce --cc C --reps N --start-at NS --period S

Output: one JSON object per timed transfer (or collective) on stdout.
"""
import argparse
import json
import socket
import struct
import sys
import threading
import time

CHUNK = 1 << 22


def now_ns():
    return time.monotonic_ns()


def sleep_until(t_ns):
    while True:
        left = t_ns - now_ns()
        if left <= 0:
            return
        time.sleep(min(left / 1e9, 0.05) if left > 2e6 else 0)


def recv_exact(sock, view):
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:], min(CHUNK, len(view) - got))
        if n == 0:
            raise ConnectionError("peer closed")
        got += n


def recv_discard(sock, nbytes, buf):
    view = memoryview(buf)
    left = nbytes
    while left:
        n = sock.recv_into(view, min(len(buf), left))
        if n == 0:
            raise ConnectionError("peer closed")
        left -= n


def serve(port):
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("0.0.0.0", port))
    lsock.listen(64)

    def handle(conn):
        buf = bytearray(CHUNK)
        head = bytearray(8)
        with conn:
            try:
                while True:
                    recv_exact(conn, memoryview(head))
                    (nbytes,) = struct.unpack("<Q", head)
                    recv_discard(conn, nbytes, buf)
                    conn.sendall(struct.pack("<q", now_ns()))
            except (ConnectionError, OSError):
                pass

    while True:
        conn, _ = lsock.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def connect(addr, cc):
    host, port = addr.rsplit(":", 1)
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.connect((host, int(port)))
    return s


def one_transfer(s, payload):
    s.sendall(struct.pack("<Q", len(payload)))
    s.sendall(payload)
    back = bytearray(8)
    recv_exact(s, memoryview(back))
    return struct.unpack("<q", back)[0]


def send(args):
    payload = memoryview(bytearray(args.bytes))
    if args.fresh:
        if args.start_at:
            sleep_until(args.start_at)
        for rep in range(args.reps):
            t0 = now_ns() if not args.start_at or rep else args.start_at
            s = connect(args.to, args.cc)
            t1 = one_transfer(s, payload)
            s.close()
            print(json.dumps({"rep": rep, "conn": "fresh", "seconds": (t1 - t0) / 1e9, "end_ns": t1}), flush=True)
    else:
        s = connect(args.to, args.cc)
        for _ in range(args.warmup):  # back to back: the window grows and stays open
            one_transfer(s, payload)
        if args.start_at:
            sleep_until(args.start_at)
        for rep in range(args.reps):
            if args.gap:  # the connection idles (nothing in flight) before the timed message
                time.sleep(args.gap)
            t0 = args.start_at if args.start_at and not rep else now_ns()
            if args.back_to_back:
                # Both written at once, as two isends to one peer: the second's bytes queue
                # behind the first's in the send buffer. The receiver answers each.
                head = struct.pack("<Q", len(payload))
                s.sendall(head)
                s.sendall(payload)
                s.sendall(head)
                s.sendall(payload)
                back = bytearray(16)
                recv_exact(s, memoryview(back))
                t1, t2 = struct.unpack("<qq", back)
                print(json.dumps({"rep": rep, "conn": "back_to_back", "seconds": (t1 - t0) / 1e9,
                                  "seconds_second": (t2 - t0) / 1e9, "end_ns": t2}), flush=True)
                continue
            t1 = one_transfer(s, payload)
            print(json.dumps({"rep": rep, "conn": "reused", "seconds": (t1 - t0) / 1e9, "end_ns": t1}), flush=True)
        s.close()


def ring(args):
    """The ring schedule of sim/collectives.h: in each round every rank sends one
    S/p chunk to its successor and receives one from its predecessor; the next round
    starts when both are done. all_reduce is reduce-scatter then all-gather (2(p-1)
    rounds; the reduction's arithmetic is not done, only its traffic)."""
    hosts = args.hosts.split(",")
    p = len(hosts)
    me = args.rank
    chunk = args.bytes // p
    rounds = (p - 1) * (2 if args.op == "all_reduce" else 1)
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("0.0.0.0", args.port))
    lsock.listen(1)
    accepted = {}
    t = threading.Thread(target=lambda: accepted.setdefault("c", lsock.accept()[0]))
    t.start()
    deadline = time.time() + 10
    while True:
        try:
            out = connect(f"{hosts[(me + 1) % p]}:{args.port}", args.cc)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)
    t.join()
    inc = accepted["c"]
    payload = memoryview(bytearray(chunk))
    buf = bytearray(chunk)
    for rep in range(args.reps):
        start = args.start_at + int(rep * args.period * 1e9)
        sleep_until(start)
        for _ in range(rounds):
            sender = threading.Thread(target=out.sendall, args=(payload,))
            sender.start()
            recv_exact(inc, memoryview(buf))
            sender.join()
        end = now_ns()
        print(json.dumps({"rep": rep, "rank": me, "seconds": (end - start) / 1e9}), flush=True)
    out.close()
    inc.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("serve")
    a.add_argument("port", type=int)
    a = sub.add_parser("send")
    a.add_argument("to")
    a.add_argument("bytes", type=int)
    a.add_argument("--cc", default="cubic")
    g = a.add_mutually_exclusive_group(required=True)
    g.add_argument("--fresh", action="store_true")
    g.add_argument("--reused", action="store_true")
    a.add_argument("--reps", type=int, default=3)
    a.add_argument("--warmup", type=int, default=2)
    a.add_argument("--start-at", type=int, default=0, help="CLOCK_MONOTONIC ns to start at (incast)")
    a.add_argument("--gap", type=float, default=0, help="reused: seconds idle before each timed message")
    a.add_argument("--back-to-back", action="store_true", help="reused: time two messages written together")
    a = sub.add_parser("ring")
    a.add_argument("rank", type=int)
    a.add_argument("hosts")
    a.add_argument("bytes", type=int)
    a.add_argument("--op", choices=["all_gather", "all_reduce"], required=True)
    a.add_argument("--cc", default="cubic")
    a.add_argument("--port", type=int, default=5301)
    a.add_argument("--reps", type=int, default=4)
    a.add_argument("--start-at", type=int, required=True)
    a.add_argument("--period", type=float, required=True, help="seconds between rep starts")
    args = ap.parse_args()
    if args.cmd == "serve":
        serve(args.port)
    elif args.cmd == "send":
        send(args)
    else:
        ring(args)


if __name__ == "__main__":
    sys.exit(main())
