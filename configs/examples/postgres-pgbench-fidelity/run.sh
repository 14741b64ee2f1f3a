#!/bin/sh
# One pgbench run of pgbench_seconds seconds (the fidelity: the scheduler
# may set it per trial) against the server set up by
# ../postgres-pgbench/setup.sh. While it runs, pgbench's per-second
# progress (-P 1) becomes BENCH_PROGRESS lines: step = seconds elapsed,
# tps = the mean throughput so far (what the whole run reports at its end,
# so a pruner judges the same quantity at every step), tps_now = that
# second's throughput. At the end, tps and latency_ms go to results.csv.
set -eu
. "$(dirname "$0")/../postgres-pgbench/common.sh"
port=$(cat "$PGROOT/port")
seconds=${pgbench_seconds:?}
case "$seconds" in *[!0-9]*|'') echo "pgbench_seconds must be a whole number of seconds, got '$seconds'" >&2; exit 1 ;; esac
[ "$seconds" -ge 1 ] || { echo "pgbench_seconds must be at least 1" >&2; exit 1; }
rm -f pgbench.log
# pgbench prints its progress on stderr, one line a second; awk turns each
# into a progress line as it arrives (fflush) and keeps pgbench's whole
# output in pgbench.log.
as_pg "$BINDIR/pgbench" -h 127.0.0.1 -p "$port" -U postgres -n -c "${pgbench_clients:?}" -j 2 -T "$seconds" -P 1 postgres 2>&1 |
  awk '{ print > "pgbench.log" }
       /^progress: / { n++; sum += $4; printf "BENCH_PROGRESS step=%d tps=%.2f tps_now=%s\n", int($2 + 0.5), sum / n, $4; fflush() }'
tps=$(awk '/^tps = / {print $3; exit}' pgbench.log)
lat=$(awk '/^latency average = / {print $4; exit}' pgbench.log)
[ -n "$tps" ] || { echo "no tps in pgbench's output:" >&2; cat pgbench.log >&2; exit 1; }
printf 'metric,value\ntps,%s\nlatency_ms,%s\n' "$tps" "$lat" > results.csv
