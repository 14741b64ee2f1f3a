#!/usr/bin/env bash
# The CPU an idle driver spends once a second to learn of other processes'
# results, on an experiment of 10,000 finished trials (SQLite): before the
# storage change feed (a scan of every trial) and after (the trials changed
# since the last poll), measured in one run, and their ratio; the look for
# other processes' trials of a driver alone on its experiment, before (a
# count of every trial by status) and after (the change feed); then the
# whole once-a-second part of the idle driver's tick, with and without other
# processes on the experiment. scripts/bench-driver-idle-process.sh measures
# the whole driver process instead, old builds against the working tree.
#   scripts/bench-driver-idle.sh [benchtime, default 20x]
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: scripts/bench-driver-idle.sh [BENCHTIME]   (default 20x: N or Nx iterations, or a duration such as 10s)"; }
case ${1:-} in -h | --help) usage; exit 0 ;; esac
[ $# -le 1 ] || { usage >&2; exit 2; }
bt=${1:-20x}
[[ $bt =~ ^[0-9]+$ ]] && bt=${bt}x # a bare count of iterations, as the docs write it
if ! [[ $bt =~ ^[1-9][0-9]*x$ || $bt =~ ^[0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h)$ ]]; then
  echo "bench-driver-idle: BENCHTIME must be a count (20, 20x) or a duration (10s), got '$bt'" >&2
  usage >&2
  exit 2
fi
# go test's own output is shown when it fails or gives no results (a
# build error, a failing benchmark), not swallowed.
raw=$(go test -count=1 ./schedulers/ -run '^$' -bench 'BenchmarkDriverIdlePoll' -benchtime "$bt" 2>&1) ||
  { echo "$raw" >&2; echo "bench-driver-idle: go test failed" >&2; exit 1; }
out=$(echo "$raw" | grep '^BenchmarkDriverIdlePoll/') ||
  { echo "$raw" >&2; echo "bench-driver-idle: no BenchmarkDriverIdlePoll results" >&2; exit 1; }
echo "$out"
echo "$out" | awk '
  /\/scan/ { scan = $3 }
  /\/feed/ { feed = $3 }
  /\/tick-others/ { others = $3 }
  /\/tick-alone/ { alone = $3 }
  /\/detect-counts/ { dcounts = $3 }
  /\/detect-feed/ { dfeed = $3 }
  END {
    if (scan == "" || feed == "") { print "bench-driver-idle: missing results" > "/dev/stderr"; exit 1 }
    printf "idle poll (1/s), 10,000 trials: scan %.3f ms, feed %.3f ms per poll = %.2f%% vs %.4f%% of a core; scan/feed = %.0fx\n",
      scan / 1e6, feed / 1e6, scan / 1e7, feed / 1e7, scan / feed
    if (dcounts != "" && dfeed != "")
      printf "alone, look for other processes (1/s): counts %.3f ms, feed %.3f ms = %.3f%% vs %.4f%% of a core; counts/feed = %.0fx\n",
        dcounts / 1e6, dfeed / 1e6, dcounts / 1e7, dfeed / 1e7, dcounts / dfeed
    if (others != "" && alone != "")
      printf "whole once-a-second tick: %.3f ms with other processes (%.4f%% of a core), %.3f ms alone (%.4f%%)\n",
        others / 1e6, others / 1e7, alone / 1e6, alone / 1e7
  }'
