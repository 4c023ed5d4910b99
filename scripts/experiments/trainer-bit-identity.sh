#!/usr/bin/env bash
# Short runs of every layout the trainer trains, reduced to the numbers that must
# not move when the trainer's code is reorganised: per step the train loss,
# gradient norm, learning rate, simulated step seconds, bytes and validation
# losses, and the summary's final losses (written with Python's repr: bit for bit).
#
#   scripts/experiments/trainer-bit-identity.sh BINARY OUT_FILE          # record one
#   scripts/experiments/trainer-bit-identity.sh --compare OLD_BIN NEW_BIN  # record both, diff
#
# Run from the repository root (the scenarios name data/ relatively). --compare
# exits 1, printing the differing lines, unless the two record the same numbers.
set -euo pipefail
if [[ ${1:-} == --compare ]]; then
  records=$(mktemp -d)
  trap 'rm -rf "$records"' EXIT
  "$0" "$2" "$records/old"
  "$0" "$3" "$records/new"
  diff "$records/old" "$records/new"
  echo "bit for bit the same: $(wc -l < "$records/new") lines"
  exit 0
fi
bin=$(realpath "$1")
out=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# training.steps rather than --steps: the same schedule for binaries before and after
# run --steps came to set training.steps (issue 28), so --compare works across it.
common=(--set training.steps=6 --set devices.timing=profile --set training.checkpoint_every=3)
tiny_pp=(--set parallel.pipeline=2 --set parallel.context=2 --set parallel.microbatches=2 --set "parallel.stage_layers=[2,2]")
cases=(
  "default|"
  "quickstart|scenarios/quickstart.json"
  "pp-small|scenarios/pp-small.json"
  "dp-small|scenarios/dp-small.json"
  "hetero-sparseloco-small|scenarios/hetero-sparseloco-small.json"
  "mos-context|scenarios/quickstart.json --set compression.method=mos --set compression.k_ratio=0.98 --set compression.v_ratio=0.95 --set compression.warmup_steps=2 --set compression.fit_during_lr_warmup=true"
  "pipeline-x-context|scenarios/pp-small.json ${tiny_pp[*]}"
  "sparse-weight-sync|scenarios/quickstart.json --set compression.weight_sync=sparse --set compression.sync_every=2"
  "sparse-grad-sync|scenarios/quickstart.json --set compression.weight_sync=sparse_grad"
)
: > "$out"
for c in "${cases[@]}"; do
  name=${c%%|*}
  args=${c#*|}
  # shellcheck disable=SC2086  # args are words on purpose
  "$bin" run $args "${common[@]}" --out "$work/$name" > "$work/$name.log" 2>&1 || {
    echo "$name: run failed" >&2
    cat "$work/$name.log" >&2
    exit 1
  }
  python3 - "$work/$name" "$name" >> "$out" <<'EOF'
import json, sys
d, name = sys.argv[1], sys.argv[2]
keys = ["train_loss", "grad_norm", "lr", "sim_step_seconds", "weight_sync", "val_loss",
        "val_loss_per_replica", "bytes_sent_per_rank", "bytes_sent_all_ranks"]
for line in open(d + "/steps.jsonl"):
    s = json.loads(line)
    print(name, s["step"], " ".join(f"{k}={s[k]!r}" for k in keys if k in s))
summary = json.load(open(d + "/summary.json"))
print(name, "summary", " ".join(f"{k}={summary[k]!r}" for k in sorted(summary) if "loss" in k))
EOF
done
echo "recorded $(wc -l < "$out") lines into $out"
