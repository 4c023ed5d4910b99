# Sourced by the experiment scripts (quickstart.sh, figure2.sh); needs $lowband and $runs.
# train NAME SCENARIO [ARGS...]: trains into $runs/NAME. A run with a checkpoint is
# resumed (a finished one says so and is left as it is); one without starts again.
train() {
  local dir="$runs/$1" scenario=$2; shift 2
  if [ -f "$dir/checkpoint.bin" ]; then
    "$lowband" run --resume "$dir"
  else
    rm -rf "$dir"
    "$lowband" run "$scenario" --out "$dir" "$@"
  fi
}
