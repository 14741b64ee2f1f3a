#!/usr/bin/env bash
# Startup cost: wall time of `bench validate` (over the built-in configs and
# the examples) and `bench run --help`, against `true` and `/bin/sh -c true`
# as baselines measured in the same run. Uses hyperfine when installed
# (Debian package hyperfine), else a simple loop.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/bench-startup.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/bench" ./cmd/bench
B="$work/bench"
if command -v hyperfine >/dev/null; then
  hyperfine -N --warmup 3 --runs 30 "/bin/sh -c true" "$B run --help" "$B validate configs/builtin configs/examples"
  exit 0
fi
N=30
measure() {
  local start end
  start=$(date +%s%N)
  for _ in $(seq $N); do "$@" >/dev/null 2>&1 || true; done
  end=$(date +%s%N)
  echo $(( (end - start) / N / 1000 ))
}
base=$(measure /bin/sh -c true)
help=$(measure "$B" run --help)
val=$(measure "$B" validate configs/builtin configs/examples)
awk -v base="$base" -v help="$help" -v val="$val" 'BEGIN {
  printf "/bin/sh -c true:          %8.2f ms\n", base/1000
  printf "bench run --help:         %8.2f ms (%.1fx sh)\n", help/1000, help/base
  printf "bench validate (builtin): %8.2f ms (%.1fx sh)\n", val/1000, val/base
}'
