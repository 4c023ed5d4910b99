#!/usr/bin/env bash
# Puts the corpora too large to commit into data/ (see data/README.md), each kept
# only when its SHA-256 matches data/SHA256SUMS:
#   scripts/get-data.sh [gutenberg_nltk13.txt] [wikitext2_raw_test.txt]   (default: both)
# A copy in ../shared/data (the team's machines) is used when its checksum matches;
# otherwise the public archive is downloaded and the file rebuilt from it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data=$root/data
shared=$root/../shared/data
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(gutenberg_nltk13.txt wikitext2_raw_test.txt)

want_sum() { awk -v f="$1" '$2 == f {print $1}' "$data/SHA256SUMS"; }
has_sum() { [ -f "$2" ] && [ "$(sha256sum "$2" | cut -d' ' -f1)" = "$(want_sum "$1")" ]; }

need_tools() {  # curl and unzip, from Debian, for a download
  command -v curl >/dev/null && command -v unzip >/dev/null && return
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends curl unzip ca-certificates >/dev/null
}

# build NAME OUT: downloads NAME's public archive and writes the corpus to OUT.
build() {
  local tmp; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  need_tools
  case $1 in
    gutenberg_nltk13.txt)
      curl -fsSL -o "$tmp/g.zip" https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/gutenberg.zip
      unzip -q "$tmp/g.zip" -d "$tmp"
      local first=1 book
      for book in austen-emma austen-persuasion austen-sense blake-poems chesterton-ball chesterton-brown \
                  chesterton-thursday melville-moby_dick milton-paradise shakespeare-caesar \
                  shakespeare-hamlet shakespeare-macbeth whitman-leaves; do
        [ $first = 1 ] || printf '<|endoftext|>\n'
        first=0
        tr -d '\r' <"$tmp/gutenberg/$book.txt"
      done >"$2" ;;
    wikitext2_raw_test.txt)
      curl -fsSL -o "$tmp/w.zip" https://wikitext.smerity.com/wikitext-2-raw-v1.zip
      unzip -q "$tmp/w.zip" -d "$tmp"
      grep -v '^[[:space:]]*$' "$tmp/wikitext-2-raw/wiki.test.raw" >"$2" ;;
    *) echo "get-data: unknown corpus '$1' (see data/README.md)" >&2; return 2 ;;
  esac
}

for name in "${files[@]}"; do
  [ -n "$(want_sum "$name")" ] || { echo "get-data: no checksum for '$name' in data/SHA256SUMS" >&2; exit 2; }
  if has_sum "$name" "$data/$name"; then echo "get-data: data/$name is present"; continue; fi
  tmp_out="$data/.$name.tmp"
  if has_sum "$name" "$shared/$name"; then
    cp "$shared/$name" "$tmp_out"
    echo "get-data: data/$name copied from ../shared/data"
  else
    echo "get-data: downloading and rebuilding data/$name"
    build "$name" "$tmp_out" || { rm -f "$tmp_out"; echo "get-data: could not download $name" >&2; exit 1; }
  fi
  if ! has_sum "$name" "$tmp_out"; then
    rm -f "$tmp_out"
    echo "get-data: data/$name: SHA-256 differs from data/SHA256SUMS; nothing kept" >&2; exit 1
  fi
  chmod 0444 "$tmp_out" && mv "$tmp_out" "$data/$name"
done
