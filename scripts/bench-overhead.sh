#!/usr/bin/env bash
# Framework overhead: N trials of a LocalEnv whose run step is one trivial
# command (`echo score=$x`), against a shell loop doing the same process
# launches (one `sh -c` per trial) and appending a line to a file — both
# measured in the same run. Prints both wall times and their ratio.
#
#   scripts/bench-overhead.sh [N]      (default N=200)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
work=$(mktemp -d /tmp/bench-overhead.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/bench" ./cmd/bench

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.6f", b - a }'; }

# Baseline: the same number of process launches, each appending its line.
start=$(now)
for i in $(seq "$N"); do
  /bin/sh -c "echo score=$i" >> "$work/loop.txt"
done
loop=$(elapsed "$start")

# bench: N trials with SQLite storage in the work folder.
start=$(now)
"$work/bench" --environment overhead/env.jsonc --optimizer overhead/optimizer.jsonc \
  --config-path bench --max_suggestions "$N" --experiment_id overhead \
  --storage "{\"class\": \"mlos_bench.storage.sql.storage.SqlStorage\", \"config\": {\"drivername\": \"sqlite\", \"database\": \"$work/bench.sqlite\"}}" \
  --no-progress --log_level WARNING > "$work/bench.out" 2> "$work/bench.err" || { cat "$work/bench.err" >&2; exit 1; }
bench=$(elapsed "$start")

awk -v n="$N" -v loop="$loop" -v bench="$bench" -v lines="$(grep -c . "$work/loop.txt")" 'BEGIN {
  printf "trials:            %d\n", n
  printf "shell loop:        %.3f s (%.2f ms/trial, %d lines)\n", loop, loop*1000/n, lines
  printf "bench:             %.3f s (%.2f ms/trial)\n", bench, bench*1000/n
  printf "ratio bench/loop:  %.2f\n", bench/loop
}'
