#!/usr/bin/env bash
# Parallel throughput: experiments whose trials sleep 1s on 1, 4, 16 and 64
# trial runners (4 trials per runner, SQLite storage), each measured next to
# its baseline in the same run: a shell doing the same process launches in
# as many lanes. Per runner count and repetition it prints:
#   ideal-fraction        the ideal time (4s) over bench's time (1.0 is perfect)
#   shell-ideal-fraction  the same for the shell baseline (what the machine allows)
#   bench/shell           bench's time over the shell's
#   cpu-ms/trial          bench's own CPU time per trial (not the trials' processes)
#   build-ms              loading the configs and building the runners
#
#   scripts/bench-parallel.sh [COUNT]   COUNT repetitions of each (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-3}
go test -run XXX -bench ParallelThroughput -benchtime 1x -count "$count" ./launcher/ |
  awk '/^BenchmarkParallelThroughput/ {
         name=$1; sub(/^BenchmarkParallelThroughput\//, "", name); sub(/-[0-9]+$/, "", name)
         line = sprintf("%-12s", name)
         for (i = 4; i < NF; i += 2) line = line sprintf("  %s %s", $(i+1), $i)
         print line
       }'
