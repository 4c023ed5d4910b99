#!/usr/bin/env bash
# Installs the Debian 12 packages lowband builds against, if any is missing.
# Run as root (or with sudo available). Idempotent: does nothing when all are present.
set -euo pipefail
packages=(
  build-essential cmake pkg-config
  libsimgrid-dev          # the network simulator
  nlohmann-json3-dev      # scenario files and outputs
  libcli11-dev            # command line
  libdnnl-dev             # oneDNN: the CPU GEMM (see kernels/README.md for why)
  ocl-icd-opencl-dev      # oneDNN's CMake package config requires OpenCL (only a Recommends of libdnnl-dev)
  libomp-dev              # one OpenMP runtime for our loops and oneDNN's
  libgtest-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin  # comm/mpi.h: one rank per process under mpirun
  gnuplot-nox             # plots
  libnetfilter-queue-dev iptables iputils-ping  # the network testbed (scripts/testbed/)
  slurmctld slurmd slurm-client munge iproute2  # a single-node Slurm for the cluster sweep test (tests/cli/slurm/)
)
# scripts/fuzz-smoke.sh asks for clang and its libFuzzer runtime: install-deps.sh --fuzz
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang libclang-rt-14-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "lowband: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
