#!/usr/bin/env bash
# How heavy is bench's first build? Builds ./cmd/bench as the README does
# (CGO_ENABLED=0 go build) on a cold build cache (a fresh GOCACHE; modules
# already downloaded, so no network time is counted), with
# -debug-actiongraph, and reports per build: wall time, peak memory
# (/usr/bin/time), binary size, and from the action graph the number of
# packages compiled, the summed compile time and the heaviest packages
# (scripts/buildweight).
#
#   scripts/bench-build.sh              # the working tree
#   scripts/bench-build.sh BASE [NEW]   # git revisions BASE and NEW (default:
#                                       # the working tree), built one after
#                                       # the other in the same run, with ratios
#
# The machine's load moves wall times a lot: the script prints the load
# average before each build; compare builds of one run only. The summed
# CPU time of the compile commands is the steadier figure.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

tmp=$(mktemp -d /tmp/bench-build.XXXXXX)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

# tree REV DIR: the sources of REV ("" = the working tree) in DIR.
tree() {
  mkdir -p "$2"
  if [ -z "$1" ]; then
    git ls-files -z --cached --others --exclude-standard |
      while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
      tar --null -T - -cf - | tar -xf - -C "$2"
  else
    git archive "$1" | tar -xf - -C "$2"
  fi
}

timer=()
if [ -x /usr/bin/time ]; then timer=(/usr/bin/time -f '%e %M' -o "$tmp/time"); fi

# build NAME REV
build() {
  local name=$1 rev=$2 src="$tmp/$1"
  tree "$rev" "$src"
  echo "== $name (${rev:-working tree}): load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  (cd "$src" && GOCACHE="$tmp/cache-$name" CGO_ENABLED=0 "${timer[@]}" \
    go build -debug-actiongraph="$tmp/$name.json" -o "$tmp/$name.bin" ./cmd/bench)
  local size wall="?" rss="?"
  size=$(stat -c %s "$tmp/$name.bin")
  if [ -f "$tmp/time" ]; then read -r wall rss < "$tmp/time"; rm -f "$tmp/time"; fi
  printf '%s: wall %s s, peak RSS %s MB, binary %.1f MB (%s bytes)\n' \
    "$name" "$wall" "$([ "$rss" = "?" ] && echo "?" || echo $((rss / 1024)))" "$(awk -v s="$size" 'BEGIN{print s/1e6}')" "$size" | tee -a "$tmp/summary"
  echo "   load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$tmp/summary"
  graphs+=("$name=$tmp/$name.json")
}

graphs=()
if [ $# -ge 1 ]; then
  build base "$1"
  build new "${2:-}"
else
  build tree ""
fi
echo "== summary" >&2
cat "$tmp/summary"
(cd "$root" && go run ./scripts/buildweight "${graphs[@]}")
