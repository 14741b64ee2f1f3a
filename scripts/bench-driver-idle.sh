#!/usr/bin/env bash
# The CPU an idle driver spends once a second to learn of other processes'
# results, on an experiment of 10,000 finished trials (SQLite): before the
# storage change feed (a scan of every trial) and after (the trials changed
# since the last poll), measured in one run, and their ratio.
#   scripts/bench-driver-idle.sh [benchtime, default 20x]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(go test -count=1 ./schedulers/ -run '^$' -bench 'BenchmarkDriverIdlePoll' -benchtime "${1:-20x}" 2>/dev/null | grep '^BenchmarkDriverIdlePoll/')
echo "$out"
echo "$out" | awk '
  /\/scan/ { scan = $3 }
  /\/feed/ { feed = $3 }
  END {
    if (scan == "" || feed == "") { print "bench-driver-idle: missing results" > "/dev/stderr"; exit 1 }
    printf "idle poll (1/s), 10,000 trials: scan %.3f ms, feed %.3f ms per poll = %.2f%% vs %.4f%% of a core; scan/feed = %.0fx\n",
      scan / 1e6, feed / 1e6, scan / 1e7, feed / 1e7, scan / feed
  }'
