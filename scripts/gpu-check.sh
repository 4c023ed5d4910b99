#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: runs every CUDA-versus-CPU test (kernels and
# the whole model) and the GPU benchmarks (cuBLAS GEMM at the step's shapes,
# tiled attention at T = 4096, a whole training step), the per-device backend
# tables, and the NCCL communicator (mpirun, one process per GPU: 1 process, and
# as many as there are GPUs when more than one) from a build directory
# (default: build/, made by scripts/build.sh).
#   scripts/gpu-check.sh [BUILD_DIR]
# Exits non-zero when a test fails or no GPU is usable. Prints medians of 5.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
for bin in test_kernels test_runtime test_comm_mpi bench_matmul bench_attention bench_model; do
  [[ -x $build/$bin ]] || { echo "gpu-check: $build/$bin missing (run scripts/build.sh)" >&2; exit 2; }
done
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
# The CUDA tests skip (and would pass) without a GPU: refuse to report that as a check.
probe=$("$build/test_kernels" --gtest_filter='Device.RoundTripsThroughDeviceMemory' 2>&1 || true)
if ! grep -q '^\[       OK \]' <<<"$probe"; then
  echo "gpu-check: no usable CUDA device:" >&2
  grep -i 'cuda\|skipped\|fail' <<<"$probe" >&2 || true
  exit 1
fi
"$build/test_kernels" --gtest_filter='*Cuda*:Device.*:DeviceBackends.*'
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l || echo 1)
mpi=(mpirun --oversubscribe --allow-run-as-root)
nps=(1)
((gpus > 1)) && nps+=("$gpus")
for np in "${nps[@]}"; do
  "${mpi[@]}" -np "$np" "$build/test_comm_mpi" --nccl || { rc=$?; [[ $rc == 77 ]] || exit $rc; }
done
"$build/test_runtime" --gtest_filter='*Cuda*'
bench_args=(--benchmark_repetitions=5 --benchmark_report_aggregates_only=true)
"$build/bench_matmul" --benchmark_filter='^cuda/' "${bench_args[@]}" | grep -v '_mean\|_stddev\|_cv'
"$build/bench_attention" --benchmark_filter='^cuda_' "${bench_args[@]}" | grep -v '_mean\|_stddev\|_cv'
"$build/bench_model" --benchmark_filter='_cuda' "${bench_args[@]}" | grep -v '_mean\|_stddev\|_cv'
