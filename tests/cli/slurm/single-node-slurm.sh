#!/usr/bin/env bash
# A throwaway single-node Slurm cluster for tests/cli/test_slurm_cluster_cli.cpp (Debian 12,
# slurm 22.05.8, munge 0.5.15), without systemd: munged, slurmctld and slurmd with everything (munge
# key and socket, slurm.conf, state, spool, logs, pid files) in one directory, removed at the end.
# Measured here: up to an idle node in 0.1-1.2 s, down in under 1 s.
#
#   source single-node-slurm.sh     # defines slurm_up, slurm_down (scripts/install-deps.sh installs Slurm)
#   dir=$(mktemp -d); slurm_up "$dir"   # exports SLURM_CONF=$dir/slurm.conf; waits for node idle
#   ... sbatch / squeue / scancel ...
#   slurm_down "$dir"               # cancel jobs, stop daemons, rm -rf "$dir"
#
# Must run as root (SlurmUser=root, SlurmdUser=root). Env knobs: SLURM_UP_TIMEOUT (s, default 60),
# SLURM_CTLD_PORT / SLURMD_PORT (default: first free pair from 6817 upwards).

_slurm_port_busy() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

_slurm_log() { echo "[slurm] $*" >&2; }

# slurm_up DIR: start munged, slurmctld, slurmd with all files in DIR (created if missing).
slurm_up() {
    local dir=${1:?usage: slurm_up DIR} timeout=${SLURM_UP_TIMEOUT:-60}
    local host cpus mem ctld_port slurmd_port i state=
    [ "$(id -u)" = 0 ] || { _slurm_log "must run as root"; return 1; }
    mkdir -p "$dir" && dir=$(cd "$dir" && pwd) || return 1
    # munged refuses a socket whose directory is not executable by all ("Socket is inaccessible"),
    # and refuses group/world-writable dirs; mktemp -d gives 0700, so open it up to 0755.
    chmod 0755 "$dir"
    mkdir -p "$dir/state" "$dir/spool" "$dir/log"

    # --- munge: private key + socket in DIR; runs fine as root without --force ---
    if [ ! -s "$dir/munge.key" ]; then
        if command -v mungekey >/dev/null; then
            mungekey --create --keyfile="$dir/munge.key" --bits=1024 || return 1
        else
            dd if=/dev/urandom of="$dir/munge.key" bs=128 count=1 status=none || return 1
        fi
        chmod 0400 "$dir/munge.key"
    fi
    munged --key-file="$dir/munge.key" --socket="$dir/munge.sock" \
           --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" \
           --seed-file="$dir/munged.seed" </dev/null >>"$dir/log/munged.out" 2>&1 ||
        { _slurm_log "munged failed:"; cat "$dir/log/munged.out" "$dir/log/munged.log" >&2; return 1; }
    for i in $(seq 50); do [ -S "$dir/munge.sock" ] && break; sleep 0.1; done
    munge -S "$dir/munge.sock" -n | unmunge -S "$dir/munge.sock" >/dev/null ||
        { _slurm_log "munge self-test failed"; return 1; }

    # --- slurm.conf ---
    host=$(hostname -s)
    cpus=$(slurmd -C | sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' | head -1)
    mem=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -1)
    mem=$(( mem * 9 / 10 ))          # a bit below what slurmd -C reports
    ctld_port=${SLURM_CTLD_PORT:-}; slurmd_port=${SLURMD_PORT:-}
    if [ -z "$ctld_port" ]; then
        ctld_port=6817
        while _slurm_port_busy "$ctld_port" || _slurm_port_busy $((ctld_port + 1)); do
            ctld_port=$((ctld_port + 2))
        done
    fi
    slurmd_port=${slurmd_port:-$((ctld_port + 1))}
    cat >"$dir/slurm.conf" <<EOF
ClusterName=throwaway
# NodeAddr / controller address pinned to 127.0.0.1 so a hostname missing from /etc/hosts does not matter
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$dir/plugstack.conf
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
MailProg=/bin/true
# keep finished jobs visible to squeue -t all / scontrol show job for 10 minutes (no sacct here)
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    : >"$dir/plugstack.conf"
    export SLURM_CONF="$dir/slurm.conf"

    # --- daemons (they daemonize themselves and write pid files into DIR) ---
    slurmctld -f "$SLURM_CONF" </dev/null >>"$dir/log/slurmctld.out" 2>&1 ||
        { _slurm_log "slurmctld failed"; tail -n 20 "$dir/log/slurmctld.out" "$dir/log/slurmctld.log" >&2; return 1; }
    slurmd -f "$SLURM_CONF" -N "$host" </dev/null >>"$dir/log/slurmd.out" 2>&1 ||
        { _slurm_log "slurmd failed"; tail -n 20 "$dir/log/slurmd.out" "$dir/log/slurmd.log" >&2; return 1; }

    for i in $(seq $((timeout * 5))); do
        state=$(sinfo -h -n "$host" -o '%T' 2>/dev/null)
        [ "$state" = idle ] && { _slurm_log "node $host idle (SLURM_CONF=$SLURM_CONF)"; return 0; }
        sleep 0.2
    done
    _slurm_log "node not idle after ${timeout}s (state='$state')"
    tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2
    return 1
}

# pid from a pid file, if that process is alive (zombies count as dead: daemons are reparented to
# PID 1, and in a container PID 1 may reap them late)
_slurm_pid() {
    local pid st
    pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] || return 1
    st=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1) || return 1
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ] && echo "$pid"
}

# slurm_down DIR [keep]: cancel all jobs, stop slurmd/slurmctld/munged, remove DIR (unless 2nd arg = keep).
slurm_down() {
    local dir=${1:?usage: slurm_down DIR} keep=${2:-} i p pid pids
    [ -d "$dir" ] || return 0
    dir=$(cd "$dir" && pwd)
    export SLURM_CONF="$dir/slurm.conf"
    if _slurm_pid "$dir/slurmctld.pid" >/dev/null; then
        # slurmstepd (running jobs) survives slurmd shutdown, so cancel and wait for the queue to drain first
        squeue -h -o '%A' 2>/dev/null | xargs -r scancel 2>/dev/null
        for i in $(seq 100); do [ -z "$(squeue -h -o '%A' 2>/dev/null)" ] && break; sleep 0.2; done
        scontrol shutdown >/dev/null 2>&1    # stops slurmctld and slurmd
    fi
    for p in slurmd slurmctld munged; do
        pid=$(_slurm_pid "$dir/$p.pid") || continue
        [ "$p" = munged ] && kill -TERM "$pid" 2>/dev/null
        for i in $(seq 50); do _slurm_pid "$dir/$p.pid" >/dev/null || break; sleep 0.2; done
        pid=$(_slurm_pid "$dir/$p.pid") || continue
        kill -TERM "$pid" 2>/dev/null; sleep 1
        pid=$(_slurm_pid "$dir/$p.pid") && kill -KILL "$pid" 2>/dev/null
    done
    # last sweep: any process (e.g. a stray slurmstepd) that still holds a file inside DIR
    pids=$(for p in /proc/[0-9]*; do
               ls -l "$p/fd" 2>/dev/null | grep -q -- "-> $dir/" && echo "${p#/proc/}"
           done)
    [ -n "$pids" ] && { _slurm_log "killing leftovers: $pids"; kill -KILL $pids 2>/dev/null; }
    unset SLURM_CONF
    [ "$keep" = keep ] || rm -rf "$dir"
}
