# Sourced by experiment scripts, from the repository root: builds lowband and
# lowband-replay and copies them to a directory removed on exit, so that a
# rebuild while the experiment runs does not change what it runs. Sets $lowband.
scripts/build.sh --target lowband lowband-replay >/dev/null
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
cp build/lowband build/lowband-replay "$bin/"
lowband=$bin/lowband
