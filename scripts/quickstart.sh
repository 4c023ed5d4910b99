#!/usr/bin/env bash
# One command: install what is missing, build, and run the main job on the
# built-in default scenario (no GPU, no download).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" --target lowband
exec "$root/build/lowband" estimate --builtin default
