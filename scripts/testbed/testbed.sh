#!/usr/bin/env bash
# An emulated star network on this machine, as lowband's "star" topology models it:
# N hosts, each a network namespace lbtb-hI (address 10.14.I.2) with one access link
# (a veth pair) to a router namespace lbtb-sw. Every access link has rate R and one-way
# latency d in each direction, so a message crosses two links: path latency 2d,
# bottleneck R. The kernel here has no sch_netem, so the router sends each packet
# through scripts/testbed/delayline.cpp on NFQUEUE: host I's uplink is queue 2I
# (PREROUTING, arriving from host I), its downlink queue 2I+1 (POSTROUTING, leaving to
# host I). The delay is in the router, not in the hosts: a packet held in the
# sender's own output hook still counts against its socket, and TCP small queues then
# throttles the flow to a few packets per delay. Run as root.
#
#   testbed.sh up NODES RATE_MBIT LINK_DELAY_MS [SNDBUF_MAX_BYTES]
#   testbed.sh down
#   testbed.sh exec I CMD...      run CMD in host I's namespace
#
# LOSS=P (environment) drops each packet at random with probability P on every
# access link, each direction (a path of two links loses 1 - (1 - P)^2), and keeps
# every packet to one segment (gso_max_segs 1 on both ends of each link) so that a
# drop is one segment's, as on a real path.
# SNDBUF_MAX_BYTES is the third field of net.ipv4.tcp_wmem in every host (Linux's
# default is 4 MiB); tcp_rmem's maximum is 64 MiB so the receiver never limits.
# tcp_no_metrics_save=1: a fresh connection does not inherit the last one's ssthresh;
# tcp_slow_start_after_idle=0: a reused connection idle between rounds stays warm.
# Congestion control is chosen per socket (TCP_CONGESTION): outside the initial
# namespace only the host's allowed list may be set as a namespace default.
# Nothing leaves the namespaces: hosts route only 10.14.0.0/16, to the router.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
state=/run/lowband-testbed
# DELAYLINE=build-cpu/delayline uses CMake's build (target delayline); otherwise g++ builds it here.
delayline=${DELAYLINE:-$state/delayline}

down() {
  if [ -d $state ]; then
    for pid in $state/*.pid; do
      [ -e "$pid" ] || continue
      kill "$(cat "$pid")" 2>/dev/null || true
      rm -f "$pid"
    done
  fi
  for ns in $(ip netns list | awk '/^lbtb-/ {print $1}'); do ip netns del "$ns"; done
}

build_delayline() {
  mkdir -p $state
  if [ ! -x "$delayline" ] || [ "$here/delayline.cpp" -nt "$delayline" ]; then
    g++ -O2 -std=c++17 -Wall -o "$delayline" "$here/delayline.cpp" -lnetfilter_queue -lnfnetlink
  fi
}

up() {
  local nodes=$1 rate=$2 delay=$3 sndbuf=${4:-4194304}
  down
  build_delayline
  ip netns add lbtb-sw
  ip netns exec lbtb-sw sysctl -q -w net.ipv4.ip_forward=1
  for ((i = 0; i < nodes; i++)); do
    local ns=lbtb-h$i
    ip netns add $ns
    ip -n $ns link set lo up
    ip link add eth0 netns $ns type veth peer name p$i netns lbtb-sw
    ip -n lbtb-sw addr add 10.14.$i.1/24 dev p$i
    ip -n lbtb-sw link set p$i up
    ip -n $ns addr add 10.14.$i.2/24 dev eth0
    ip -n $ns link set eth0 up
    ip -n $ns route add 10.14.0.0/16 via 10.14.$i.1
    ip netns exec $ns sysctl -q -w net.ipv4.tcp_wmem="4096 16384 $sndbuf" \
      net.ipv4.tcp_rmem="4096 131072 67108864" \
      net.ipv4.tcp_no_metrics_save=1 net.ipv4.tcp_slow_start_after_idle=0
    # xt NFQUEUE: this kernel's nftables has no native queue expression.
    ip netns exec lbtb-sw iptables -t mangle -A PREROUTING -i p$i -j NFQUEUE --queue-num $((2 * i))
    ip netns exec lbtb-sw iptables -t mangle -A POSTROUTING -o p$i -j NFQUEUE --queue-num $((2 * i + 1))
    if [ "${LOSS:-0}" != 0 ]; then
      ip -n $ns link set dev eth0 gso_max_segs 1
      ip -n lbtb-sw link set dev p$i gso_max_segs 1
    fi
    ip netns exec lbtb-sw "$delayline" --up $((2 * i)) --down $((2 * i + 1)) --rate-mbit "$rate" \
      --delay-ms "$delay" --loss "${LOSS:-0}" --seed $((i + 1)) 2>$state/h$i.log &
    echo $! >$state/h$i.pid
  done
  sleep 0.3  # the queues bind before the first packet
  for ((i = 0; i < nodes; i++)); do
    kill -0 "$(cat $state/h$i.pid)" || { cat $state/h$i.log; exit 1; }
  done
}

case "${1:-}" in
  up) shift; [ $# -ge 3 ] || { sed -n 10,12p "$0"; exit 2; }; up "$@" ;;
  down) down ;;
  exec) shift; ns=lbtb-h$1; shift; exec ip netns exec "$ns" "$@" ;;
  *) sed -n 10,12p "$0"; exit 2 ;;
esac
