#!/usr/bin/env bash
# Issue 14 part 4: a real training step over the emulated star (testbed.sh), timed
# against lowband's replay of the same recorded graph. Run as root from the repo root:
#
#   scripts/testbed/train-step.sh RATE_MBIT LINK_DELAY_MS OUT_DIR [REPS]
#   scripts/testbed/train-step.sh --collectives RATE_MBIT LINK_DELAY_MS OUT_DIR [SIZE]
#
# Brings up 4 hosts (RATE_MBIT, LINK_DELAY_MS one way per access link, 4 MiB send
# buffer) and runs `mpirun -np 4 lowband run scenarios/testbed-step.json` REPS times
# (default 3) with one rank per host namespace: mpirun starts in lbtb-h0 and Open
# MPI's remote shell (netns-rsh.sh) starts the daemons of lbtb-h1..3 in theirs;
# only the TCP BTL and the testbed's addresses are allowed, so every MPI byte between
# ranks crosses the emulated links. Each rep's directory OUT_DIR/rRATE-dDELAY-LABEL-REP/
# holds the trained run (ideal: the `ideal` model) and its --also-time-on twin
# testbed-step-tcp (lowband's TCP model); both replay the same recorded graphs with
# the compute measured in this run. Beside them: mpirun.log, links-{before,after}.json
# (the router's per-link byte counters), lo-{before,after}.json (the hosts' loopback
# counters), ss.txt (host 1's TCP sockets 8 s in) and mpi-options.txt.
#
# --collectives times lowband's MPI communicator alone on the same hosts (`lowband
# bench-comm --transport mpi`: all-reduce, all-gather and reduce-scatter of SIZE,
# default 13.2MB, the step's gradient buffer) into OUT_DIR/cRATE-dDELAY-LABEL/mpi.txt,
# and bench-comm's simulated times on the two scenarios' networks into ideal.txt, tcp.txt;
# COLLECTIVES="all_gather ..." (the order they run in) and ITERS (timed calls, default 3)
# change what is timed; the hosts' TCP counters (nstat) before and after are kept.
#
# SCENARIO=NAME (default testbed-step) trains scenarios/NAME.json and times it on
# scenarios/NAME-tcp.json too (testbed-step-sparseloco: 4 SparseLoCo replicas).
# LOWBAND_MPI_PROGRESS=0 runs the ranks without the MPI progress thread (comm/mpi.h).
# LOWBAND=path/to/lowband (default build-cpu/lowband). EAGER_LIMIT (bytes, default
# 16777216; 0: Open MPI's 64 KiB) sets Open MPI's TCP eager limit: a message above it
# waits for the receiver's clear-to-send, one path round trip the step graph does not
# have, in every round of every ring collective (at 1 Gbit/s, 10 ms this halved the
# step; analysis/network-fidelity/train-step.md). ALLGATHERV=ring (default) makes Open
# MPI's own all-gather a ring and ALLGATHERV=default leaves Open MPI's choice: both only
# matter to lowband binaries before the point-to-point ring collectives (comm/mpi.h),
# which called MPI_Allgatherv. MCA="--mca KEY VALUE ..." adds Open MPI parameters;
# LABEL (default: ALLGATHERV's value, then _eager when EAGER_LIMIT > 0) names the runs.
# Every load stays inside the namespaces and each mpirun is bounded by a timeout.
set -euo pipefail
mode=train
[ "${1:-}" = --collectives ] && { mode=collectives; shift; }
[ $# -ge 3 ] || { sed -n 5,6p "$0"; exit 2; }
rate=$1 delay=$2 out=$3 reps=${4:-3} size=${4:-13.2MB}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
lowband=$(realpath "${LOWBAND:-$root/build-cpu/lowband}")
mkdir -p "$out"
out=$(realpath "$out")
nodes=4
allgatherv=${ALLGATHERV:-ring}
case "$allgatherv" in
  ring) coll="--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allgatherv_algorithm 3" ;;
  default) coll="" ;;
  *) echo "ALLGATHERV must be ring or default" >&2; exit 2 ;;
esac
eager_limit=${EAGER_LIMIT:-16777216}
eager=""
[ "$eager_limit" -gt 0 ] &&
  eager="--mca btl_tcp_eager_limit $eager_limit --mca btl_tcp_max_send_size $eager_limit"
coll="$coll $eager ${MCA:-}"
scenario=${SCENARIO:-testbed-step}
progress=${LOWBAND_MPI_PROGRESS:-1}
[ -n "${LOWBAND_MPI_PROGRESS:-}" ] && coll="$coll -x LOWBAND_MPI_PROGRESS=$progress"
label=${LABEL:-$allgatherv$([ "$eager_limit" -gt 0 ] && echo _eager)}

# Host names lbtb-hI resolve to 10.14.I.2 inside the namespaces only
# (`ip netns exec` bind-mounts /etc/netns/NAME/hosts over /etc/hosts).
cleanup() {
  "$here/testbed.sh" down
  for ((i = 0; i < nodes; i++)); do rm -rf "/etc/netns/lbtb-h$i"; done
}
trap cleanup EXIT
"$here/testbed.sh" up $nodes "$rate" "$delay"
hostfile=$out/hostfile
: >"$hostfile"
for ((i = 0; i < nodes; i++)); do
  mkdir -p "/etc/netns/lbtb-h$i"
  { echo "127.0.0.1 localhost"; for ((j = 0; j < nodes; j++)); do echo "10.14.$j.2 lbtb-h$j"; done; } \
    >"/etc/netns/lbtb-h$i/hosts"
  echo "lbtb-h$i slots=1" >>"$hostfile"
done
# The delay lines share the 2 cores with 4 ranks: let them run first, so a packet's
# release time is not a rank's time slice late.
for pid in /run/lowband-testbed/h*.pid; do renice -n -10 -p "$(cat "$pid")" >/dev/null; done

# mpirun in lbtb-h0 (its own hostname), the other daemons through netns-rsh.sh.
# ob1 + tcp,self: no UCX or shared memory between the "hosts"; ranks that wait
# yield the CPU (4 ranks on 2 cores; Open MPI does not know they share them).
mpirun_in_testbed() {
  local mpi="mpirun --allow-run-as-root --hostfile $hostfile -np $nodes --map-by node --bind-to none \
    --mca plm_rsh_agent $here/netns-rsh.sh --mca pml ob1 --mca btl tcp,self \
    --mca btl_tcp_if_include 10.14.0.0/16 --mca oob_tcp_if_include 10.14.0.0/16 \
    --mca mpi_yield_when_idle 1 $coll -x OMP_NUM_THREADS=1 nice -n 5 $*"
  timeout 600 ip netns exec lbtb-h0 unshare --uts sh -c "hostname lbtb-h0 && exec $mpi"
}

# CWND_TRACE=1: the kernel's tcp_probe events whose window is 4 segments or less on
# the testbed's connections (bbr's PROBE_RTT, or a loss) into cwnd-collapses.txt,
# CLOCK_MONOTONIC seconds first, as mpi.txt's per-call lines (tcp-probe.sh).
if [ $mode = collectives ]; then
  dir=$out/c$rate-d$delay-$label
  mkdir -p "$dir"
  uptime >"$dir/uptime.txt"
  sets="--set network.bandwidth=${rate}Mbps --set network.latency=${delay}ms"
  what="--sizes $size --collectives ${COLLECTIVES:-all_reduce all_gather reduce_scatter}"
  nstat_all() { for ((i = 0; i < nodes; i++)); do echo "# lbtb-h$i"; ip netns exec lbtb-h$i nstat -az; done; }
  nstat_all >"$dir/nstat-before.txt"
  [ "${CWND_TRACE:-0}" = 1 ] && "$here/tcp-probe.sh" start 'snd_cwnd <= 4'
  (cd "$dir" && mpirun_in_testbed $lowband bench-comm --transport mpi $what --iters "${ITERS:-3}" --per-call) >"$dir/mpi.txt" 2>&1
  [ "${CWND_TRACE:-0}" = 1 ] && "$here/tcp-probe.sh" stop "$dir/cwnd-collapses.txt"
  nstat_all >"$dir/nstat-after.txt"
  "$lowband" bench-comm "$root/scenarios/$scenario.json" $sets $what >"$dir/ideal.txt"
  "$lowband" bench-comm "$root/scenarios/$scenario-tcp.json" $sets $what >"$dir/tcp.txt"
  grep -h -v '^#' "$dir/mpi.txt" "$dir/ideal.txt" "$dir/tcp.txt"
  exit 0
fi

for ((rep = 1; rep <= reps; rep++)); do
  dir=$out/r$rate-d$delay-$label-$rep
  rm -rf "$dir"
  mkdir -p "$dir"
  ip -n lbtb-sw -s -j link show >"$dir/links-before.json"
  for ((i = 0; i < nodes; i++)); do ip -n lbtb-h$i -s -j link show lo; done >"$dir/lo-before.json"
  uptime >"$dir/uptime.txt"
  echo "$allgatherv $coll LOWBAND_MPI_PROGRESS=$progress $scenario" >"$dir/mpi-options.txt"
  (sleep 8; ip netns exec lbtb-h1 ss -tni >"$dir/ss.txt" 2>&1) &
  sampler=$!
  (cd "$dir" && mpirun_in_testbed $lowband run $root/scenarios/$scenario.json \
    --set network.bandwidth=${rate}Mbps --set network.latency=${delay}ms \
    --also-time-on $root/scenarios/$scenario-tcp.json --out $dir/ideal) >"$dir/mpirun.log" 2>&1 ||
    { echo "mpirun failed, see $dir/mpirun.log" >&2; tail "$dir/mpirun.log" >&2; exit 1; }
  wait $sampler || true
  ip -n lbtb-sw -s -j link show >"$dir/links-after.json"
  for ((i = 0; i < nodes; i++)); do ip -n lbtb-h$i -s -j link show lo; done >"$dir/lo-after.json"
  echo "$dir: $(grep -c . "$dir/ideal/steps.jsonl") steps"
done
