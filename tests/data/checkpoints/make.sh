#!/usr/bin/env bash
# Writes the checkpoint fixtures of tests/cli/test_old_checkpoints_cli.cpp with a
# given lowband binary (the one whose checkpoint format is to stay readable):
# per layout a tiny 6-step run killed right after its checkpoint at step 3
# (RUN_DIR: scenario.json, steps.jsonl, curve.csv, checkpoint.bin), and what
# that binary's `--resume` then wrote for steps 4..6 (after-resume.jsonl).
#
#   tests/data/checkpoints/make.sh BINARY     # from the repository root
set -euo pipefail
bin=$(realpath "$1")
# The sgemm path that rounds alike on every x86 CPU (AVX-512 ones too), as the test resumes.
export ONEDNN_MAX_CPU_ISA=AVX2 OMP_NUM_THREADS=2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -shared -fPIC -O2 -o "$work/kill.so" "$here/kill_after_checkpoint.c" -ldl
tiny=(model.layers=2 model.d_model=4 model.heads=1 model.kv_heads=1 model.ffn_hidden=8 model.seq_len=32
      training.batch_size=2 training.steps=6 training.checkpoint_every=3 training.eval_every=3
      training.eval_batches=1 devices.timing=profile)
declare -A fixtures=(
  [context-mos-sparse]="model.tie_embeddings=true parallel.context=2 network.nodes=2 compression.method=mos compression.k_rank=2
                        compression.v_rank=2 compression.warmup_steps=2 compression.fit_during_lr_warmup=true
                        compression.weight_sync=sparse
                        compression.sync_every=2 compression.sync_fraction=0.5"
  [context-sparse-grad]="model.tie_embeddings=true parallel.context=2 network.nodes=2 compression.weight_sync=sparse_grad"
  [pipeline-context-mos]="parallel.pipeline=2 parallel.context=2 parallel.microbatches=2 network.nodes=4
                          compression.method=mos compression.k_rank=2 compression.v_rank=2 compression.warmup_steps=2
                          compression.fit_during_lr_warmup=true"
  [data-diloco-pipelines]="parallel.data=2 parallel.pipeline=2 parallel.context=1 network.nodes=4
                           parallel.data_sync.method=diloco parallel.data_sync.inner_steps=2"
)
for name in "${!fixtures[@]}"; do
  args=()
  for s in "${tiny[@]}" ${fixtures[$name]}; do args+=(--set "$s"); done
  dir="$here/$name"
  rm -rf "$dir" "$work/resumed"
  LD_PRELOAD="$work/kill.so" "$bin" run "${args[@]}" --out "$dir" > /dev/null 2>&1 && {
    echo "$name: the run was not killed at its checkpoint" >&2
    exit 1
  }
  rm -f "$dir/.lock"
  cp -r "$dir" "$work/resumed"
  "$bin" run --resume "$work/resumed" > /dev/null
  tail -n +4 "$work/resumed/steps.jsonl" > "$dir/after-resume.jsonl"
  echo "$name: $(wc -l < "$dir/steps.jsonl") steps before the kill, $(wc -l < "$dir/after-resume.jsonl") after," \
       "checkpoint $(stat -c %s "$dir/checkpoint.bin") bytes"
done
