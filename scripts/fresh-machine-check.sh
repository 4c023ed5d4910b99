#!/usr/bin/env bash
# The README's promise, checked: on a fresh Debian 12 machine, as root, the two
# commands `scripts/quickstart.sh` and `scripts/test.sh` pass with nothing
# installed by hand. Builds a minimal Debian 12 (bookworm) root file system with
# debootstrap, clones the committed HEAD into it (with ../shared beside it where
# this checkout has one, read-only), and runs both commands there as root.
#
#   scripts/fresh-machine-check.sh [--cuda] [--keep]
#
#   --cuda  make this machine's CUDA toolkit (/usr/local/cuda) visible inside, so the
#           CUDA kernels are compiled there too (GPU tests skip without a GPU)
#   --keep  leave the root file system for inspection (default: removed at the end)
#
# Only the committed HEAD is checked: commit first. Needs root and Debian's archive
# (the mirror this machine's apt uses). Downloaded .debs are cached in
# $LOWBAND_FRESH_CACHE (default /var/cache/lowband-fresh) so a second check downloads
# less; every package is still installed from scratch. Exit 0 only when both
# commands passed; 4 when the archive could not be reached (not a pass); else the
# failing command's status. The last line says which.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cuda=0 keep=0
for arg in "$@"; do
  case $arg in
    --cuda) cuda=1 ;;
    --keep) keep=1 ;;
    *) echo "fresh-machine-check: unknown argument '$arg' (use --cuda, --keep)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "fresh-machine-check: must run as root (debootstrap, chroot)" >&2; exit 2; }
if [ $cuda = 1 ] && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "fresh-machine-check: --cuda, but this machine has no /usr/local/cuda/bin/nvcc" >&2; exit 2
fi
variant=$([ $cuda = 1 ] && echo "with CUDA" || echo "without CUDA")
start=$(date +%s)
say() { printf '[fresh-machine %4ds] %s\n' $(( $(date +%s) - start )) "$*"; }
verdict() { say "$1"; exit "$2"; }

# The Debian mirror this machine's apt is set up with (deb822 or one-line format).
apt_uri() {  # $1: "debian" or "debian-security"
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
    grep -v '^\s*#' | grep -oE '(https?|file)://[^ ]+' | grep -E "/$1/?\$" | head -1 || true
}
mirror=$(apt_uri debian)
security=$(apt_uri debian-security)
[ -n "$mirror" ] || verdict "NOT RUN ($variant): no Debian mirror in this machine's apt sources" 2

command -v debootstrap >/dev/null || {
  say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; } ||
    verdict "NOT RUN ($variant): could not install debootstrap: Debian's archive unreachable?" 4
}

cache=${LOWBAND_FRESH_CACHE:-/var/cache/lowband-fresh}
mkdir -p "$cache/debootstrap" "$cache/apt-archives"
work=$(mktemp -d /var/tmp/lowband-fresh.XXXXXX)
rootfs=$work/rootfs
cleanup() {
  if [ $keep = 1 ]; then echo "fresh-machine-check: root file system kept at $rootfs" >&2
  else rm -rf --one-file-system "$work"; fi
}
trap cleanup EXIT

say "debootstrap --variant=minbase bookworm from $mirror"
if ! debootstrap --variant=minbase --cache-dir="$cache/debootstrap" bookworm "$rootfs" "$mirror" \
     >"$work/debootstrap.log" 2>&1; then
  tail -5 "$work/debootstrap.log" >&2
  if grep -qiE 'Failed getting release file|Couldn.t download|unable to (resolve|connect)|Temporary failure' "$work/debootstrap.log"; then
    verdict "NOT RUN ($variant): Debian's archive ($mirror) could not be reached: this is not a pass" 4
  fi
  verdict "FAILED ($variant): debootstrap failed (log above)" 1
fi
{
  echo "deb $mirror bookworm main"
  echo "deb $mirror bookworm-updates main"
  [ -n "$security" ] && echo "deb $security bookworm-security main"
} >"$rootfs/etc/apt/sources.list"
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"

# The committed HEAD, as a user's clone; ../shared beside it as CI has it.
mkdir -p "$rootfs/work"
git clone -q --no-hardlinks "$root" "$rootfs/work/lowband"
git -C "$rootfs/work/lowband" checkout -q "$(git -C "$root" rev-parse HEAD)"
say "cloned $(git -C "$root" rev-parse --short HEAD) into the new system"

shared=$(cd "$root/.." && pwd)/shared
# Inside a private mount namespace: every mount disappears with it, whatever happens.
inner=$(cat <<EOF
set -e
mount -t proc proc "$rootfs/proc"
mount --rbind /dev "$rootfs/dev"
mount --rbind /sys "$rootfs/sys"
mount --bind "$cache/apt-archives" "$rootfs/var/cache/apt/archives"
if [ -d "$shared" ]; then
  mkdir -p "$rootfs/work/shared"
  mount --bind "$shared" "$rootfs/work/shared"; mount -o remount,bind,ro "$rootfs/work/shared"
fi
if [ $cuda = 1 ]; then
  mkdir -p "$rootfs/usr/local/cuda"
  mount --bind "\$(readlink -f /usr/local/cuda)" "$rootfs/usr/local/cuda"
fi
run() {  # run NAME COMMAND: one README command, as root, in a login shell of the new system
  local t0=\$(date +%s) rc=0
  chroot "$rootfs" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb /bin/bash -c "cd /work/lowband && \$2" >"$work/\$1.log" 2>&1 || rc=\$?
  echo "\$1 \$rc \$(( \$(date +%s) - t0 ))"
  return \$rc
}
run quickstart scripts/quickstart.sh
run test scripts/test.sh
EOF
)
say "running scripts/quickstart.sh, then scripts/test.sh, as root in the new system ($variant)"
rc=0
unshare --mount --propagation private bash -c "$inner" >"$work/results" 2>"$work/mounts.log" || rc=$?
cat "$work/mounts.log" >&2
while read -r name status seconds; do
  say "$name: exit $status after ${seconds}s; last lines:"
  tail -n "$([ "$status" = 0 ] && echo 15 || echo 80)" "$work/$name.log" | sed 's/^/    /'
  # ctest's own summary, which the skipped tests' list can push out of the tail
  grep -E '^[0-9]+% tests passed|^Total Test time' "$work/$name.log" | sed 's/^/    /' || true
done <"$work/results"
if grep -qiE "Failed to fetch|Could not resolve|Unable to connect|Temporary failure resolving" "$work"/*.log 2>/dev/null &&
   [ $rc -ne 0 ]; then
  verdict "NOT RUN ($variant): Debian's archive could not be reached from the new system: this is not a pass" 4
fi
[ $rc -eq 0 ] || verdict "FAILED ($variant): a README command failed on a fresh Debian 12 system (exit $rc)" "$rc"
[ "$(wc -l <"$work/results")" -eq 2 ] || verdict "FAILED ($variant): not both README commands ran" 1
verdict "PASSED ($variant): both README commands on a fresh Debian 12 system, $(( $(date +%s) - start ))s in all" 0
