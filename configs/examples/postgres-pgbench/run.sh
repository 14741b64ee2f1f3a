#!/bin/sh
# One pgbench run against the server; its throughput and latency become
# the trial's results.
set -eu
. "$(dirname "$0")/common.sh"
port=$(cat "$PGROOT/port")
out=$(as_pg "$BINDIR/pgbench" -h 127.0.0.1 -p "$port" -U postgres -n -c "${pgbench_clients:?}" -j 2 -T "${pgbench_seconds:?}" postgres 2>&1) ||
  { echo "$out" >&2; exit 1; }
tps=$(echo "$out" | awk '/^tps = / {print $3; exit}')
lat=$(echo "$out" | awk '/^latency average = / {print $4; exit}')
[ -n "$tps" ] || { echo "no tps in pgbench's output: $out" >&2; exit 1; }
printf 'metric,value\ntps,%s\nlatency_ms,%s\n' "$tps" "$lat" > results.csv
