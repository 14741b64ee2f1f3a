#!/usr/bin/env bash
# Parallel throughput: experiments whose trials sleep 1s on 1, 4, 16 and 64
# trial runners (4 waves of trials each, SQLite storage). Prints, per runner
# count, the throughput as a fraction of the ideal (the ratio of the waves'
# time to the measured time: 1.0 is perfect) and bench's own CPU time per
# trial (the bench process only, not the trials' shells).
#
#   scripts/bench-parallel.sh [COUNT]   COUNT repetitions of each (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-3}
go test -run XXX -bench ParallelThroughput -benchtime 1x -count "$count" ./launcher/ |
  awk '/^BenchmarkParallelThroughput/ {
         name=$1; sub(/^BenchmarkParallelThroughput\//, "", name); sub(/-[0-9]+$/, "", name)
         for (i = 2; i < NF; i++) { if ($(i+1) == "ideal-fraction") f[name] = f[name] " " $i; if ($(i+1) == "cpu-ms/trial") c[name] = c[name] " " $i }
         order[name] = 1
       }
       END {
         printf "%-12s %-30s %s\n", "runners", "ideal-fraction (each run)", "bench CPU ms/trial (each run)"
         n = split("runners=1 runners=4 runners=16 runners=64", names, " ")
         for (i = 1; i <= n; i++) if (names[i] in order) printf "%-12s %-30s %s\n", names[i], f[names[i]], c[names[i]]
       }'
