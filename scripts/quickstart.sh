#!/usr/bin/env bash
# One command: install what is missing, build, and run the main job on the
# built-in default scenario (no GPU, no download).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" --target lowband
cd "$root"
# Train the built-in default scenario (4 context-parallel ranks on a modelled
# 300 Mbps star, about a minute on two cores) and write its run directory under runs/.
exec "$root/build/lowband" run
