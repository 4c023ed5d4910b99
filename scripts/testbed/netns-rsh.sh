#!/bin/sh
# Open MPI's remote shell (--mca plm_rsh_agent) for the testbed: "host" lbtb-hI is
# network namespace lbtb-hI. The daemon runs there in a UTS namespace of its own
# whose hostname is lbtb-hI, so Open MPI sees four nodes, not one (with one hostname
# it would pick shared memory between the ranks). Open MPI calls it as
# `agent HOST COMMAND...`, COMMAND a line for a remote shell.
set -eu
host=$1
shift
case "$host" in lbtb-h[0-9]*) ;; *) echo "netns-rsh: not a testbed host: $host" >&2; exit 1 ;; esac
exec ip netns exec "$host" unshare --uts sh -c "hostname $host && exec $*"
