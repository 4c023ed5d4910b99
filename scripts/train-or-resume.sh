# Sourced by the experiment scripts (quickstart.sh, figure2.sh); needs $lowband and $runs.
# train NAME SCENARIO [ARGS...]: trains into $runs/NAME. A run with a checkpoint is
# resumed (a finished one says so and is left as it is) if it was started from the
# same resolved scenarios and arguments (a stamp of them beside it, $runs/.NAME.stamp);
# otherwise (none, or they changed since, e.g. a newer checkout's scenarios or
# defaults) it starts again.

# The scenario files as lowband resolves them (defaults filled in: a default changed
# in a newer lowband restarts the run) and the other arguments, as one line.
train_stamp() {
  local arg
  for arg in "$@"; do
    if [ -f "$arg" ]; then "$lowband" validate --resolved "$arg" | sha256sum | cut -d' ' -f1; else printf '%s\n' "$arg"; fi
  done | sha256sum | cut -d' ' -f1
}

# train_is_current NAME SCENARIO [ARGS...]: whether train would resume $runs/NAME. A
# run from before the stamps (none beside it) is resumed, unless TRAIN_RESTART_UNSTAMPED
# is set (quickstart.sh: its runs take minutes, and its scenarios have changed).
train_is_current() {
  local stamp="$runs/.$1.stamp"
  [ -f "$runs/$1/checkpoint.bin" ] || return 1
  if [ ! -f "$stamp" ]; then [ -z "${TRAIN_RESTART_UNSTAMPED:-}" ]; return; fi
  [ "$(cat "$stamp")" = "$(train_stamp "${@:2}")" ]
}

train() {
  local name=$1 dir="$runs/$1" scenario=$2
  if train_is_current "$@"; then
    "$lowband" run --resume "$dir"
  else
    rm -rf "$dir"
    train_stamp "${@:2}" > "$runs/.$name.stamp"
    shift 2
    "$lowband" run "$scenario" --out "$dir" "$@"
  fi
}
