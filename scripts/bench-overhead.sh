#!/usr/bin/env bash
# Framework overhead: N trials of a LocalEnv whose run step is one trivial
# command (`echo score=$x`), against a shell loop doing the same process
# launches (one `sh -c` per trial) and appending a line to a file. The two
# are measured in the same run, interleaved REPS times (the machine's noise
# then hits both alike); the figure is the median of the per-pair ratios.
#
#   scripts/bench-overhead.sh [N [REPS]]      (default N=200, REPS=5)
#
# BENCH=path/to/binary measures that binary instead of building one;
# STORAGE=memory uses an in-memory SQLite database (no file I/O).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
REPS=${2:-5}
work=$(mktemp -d /tmp/bench-overhead.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -n "${BENCH:-}" ]; then
  B=$BENCH
else
  B="$work/bench"
  go build -o "$B" ./cmd/bench
fi

now() { date +%s%N; }

# Baseline: the same number of process launches, each appending its line.
loop() {
  for i in $(seq "$N"); do
    /bin/sh -c "echo score=$i" >> "$work/loop.txt"
  done
}

db="$work/bench.sqlite"
[ "${STORAGE:-}" = memory ] && db=":memory:"
# bench: N trials with SQLite storage in the work folder (a new experiment
# each time).
runbench() {
  "$B" --environment overhead/env.jsonc --optimizer overhead/optimizer.jsonc \
    --config-path bench --max_suggestions "$N" --experiment_id overhead \
    --storage "{\"class\": \"mlos_bench.storage.sql.storage.SqlStorage\", \"config\": {\"drivername\": \"sqlite\", \"database\": \"$db\"}}" \
    --no-progress --log_level WARNING > "$work/bench.out" 2> "$work/bench.err" || { cat "$work/bench.err" >&2; exit 1; }
}

clean() { rm -f "$work/loop.txt" "$work"/bench.sqlite*; sync; }
clean; loop; runbench # warm the caches
: > "$work/pairs"
for r in $(seq "$REPS"); do
  clean
  s=$(now); loop; l=$(( $(now) - s ))
  s=$(now); runbench; b=$(( $(now) - s ))
  [ "$(grep -c . "$work/loop.txt")" = "$N" ] || { echo "loop wrote a wrong line count" >&2; exit 1; }
  echo "$l $b" >> "$work/pairs"
done

awk -v n="$N" '
  { loop[NR] = $1 / 1e9; bench[NR] = $2 / 1e9; ratio[NR] = $2 / $1
    printf "rep %d: shell loop %.3f s, bench %.3f s, ratio %.2f\n", NR, loop[NR], bench[NR], ratio[NR] }
  function median(a, k,   i, j, t, b) {
    for (i = 1; i <= k; i++) b[i] = a[i]
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
    return (k % 2) ? b[(k + 1) / 2] : (b[k / 2] + b[k / 2 + 1]) / 2
  }
  END {
    ml = median(loop, NR); mb = median(bench, NR); mr = median(ratio, NR)
    printf "trials:            %d (%d interleaved repetitions)\n", n, NR
    printf "shell loop:        %.3f s median (%.2f ms/trial)\n", ml, ml * 1000 / n
    printf "bench:             %.3f s median (%.2f ms/trial)\n", mb, mb * 1000 / n
    printf "ratio bench/loop:  %.2f (median of the per-repetition ratios)\n", mr
  }' "$work/pairs"
