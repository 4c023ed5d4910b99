#!/usr/bin/env bash
# The kernel's tcp:tcp_probe events (one per segment a socket receives: its window,
# the receiver's window, snd_nxt/snd_una, srtt) for the testbed's addresses. As root:
#
#   scripts/testbed/tcp-probe.sh start [FILTER]   e.g. 'snd_cwnd <= 4', 'dport == 5201'
#   ... the transfers to watch ...
#   scripts/testbed/tcp-probe.sh stop OUT          one line per event: CLOCK_MONOTONIC
#                                                  seconds, then tcp_probe's fields
# The trace is the host's (tracefs is not per namespace); only 10.14.x.x sources are kept.
set -euo pipefail
t=/sys/kernel/tracing
[ -d $t/events ] || mount -t tracefs nodev $t
case "${1:-}" in
  start)
    echo mono >$t/trace_clock
    echo 65536 >$t/buffer_size_kb  # per CPU; a 64 MiB transfer is about 50,000 events
    echo "${2:-0}" >$t/events/tcp/tcp_probe/filter
    echo >$t/trace
    echo 1 >$t/events/tcp/tcp_probe/enable
    ;;
  stop)
    [ $# -ge 2 ] || { sed -n 5,7p "$0"; exit 2; }
    echo 0 >$t/events/tcp/tcp_probe/enable
    { grep -o '[0-9.]*: tcp_probe: .*' $t/trace | grep ' src=10\.14\.' || true; } |
      sed -e 's/^\([0-9.]*\): tcp_probe: family=[A-Z_0-9]* /\1 /' -e 's/ sock_cookie=.*//' >"$2"
    echo 1408 >$t/buffer_size_kb
    ;;
  *) sed -n 5,7p "$0"; exit 2 ;;
esac
