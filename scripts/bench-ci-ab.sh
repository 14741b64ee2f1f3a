#!/usr/bin/env bash
# Wall-time false alarms and power of bench ci's A/B in one job, while a
# load generator changes the machine's load between and during runs.
#
#   scripts/bench-ci-ab.sh [JOBS [MAX_REPEAT]]     (default JOBS=20, MAX_REPEAT=100)
#
# Runs JOBS A/A jobs (baseline and candidate the same program) and JOBS
# A/B jobs whose candidate does 10% more work, each
#   bench ci --baseline-command ... --candidate-command ... --repeat auto
# with the threshold wall_s max_increase 3%, and counts the jobs that exit
# 1 (regression): false alarms in the A/A jobs, catches in the A/B ones,
# and the runs per side --repeat auto chose.
#
# The workload (bench/ciab/work) hashes a buffer, about 0.1 s on an idle
# core. The load generator (bench/ciab/load) sets a random number of busy
# goroutines, 0 to LOAD_MAX (default 1), every 0.45-2.1 s; it is local,
# bounded, and stops itself when this script exits (or after 30 min).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${1:-20}
MAXREP=${2:-100}
work=$(mktemp -d /tmp/bench-ci-ab.XXXXXX)
go build -o "$work/bench" ./cmd/bench
go build -o "$work/work" ./bench/ciab/work
go build -o "$work/load" ./bench/ciab/load
"$work/load" -max "${LOAD_MAX:-1}" -period 1.5s -duration 30m &
load=$!
trap 'kill "$load" 2>/dev/null || true; rm -rf "$work"' EXIT
printf '{"metrics": {"wall_s": {"max_increase": "3%%"}}}\n' > "$work/th.jsonc"
N=${WORK_N:-20000}

job() { # factor -> prints "exit runs"
  set +e
  "$work/bench" ci --thresholds "$work/th.jsonc" \
    --baseline-command "$work/work -n $N" --candidate-command "$work/work -n $N -factor $1" \
    --repeat auto --max-repeat "$MAXREP" > "$work/out" 2> "$work/err"
  code=$?
  set -e
  runs=$(sed -n 's/.*--repeat auto ran \([0-9]*\) runs per side.*/\1/p' "$work/err")
  change=$(sed -n 's/^bench ci: [A-Z]* *wall_s \[A\/B\]: \([^ ]*\) .*/\1/p' "$work/err")
  echo "$code $runs $change"
}

summary() { # label factor
  local alarms=0 runs=""
  for i in $(seq "$JOBS"); do
    read -r code n change < <(job "$2")
    [ "$code" = 1 ] && alarms=$((alarms + 1))
    [ "$code" -gt 1 ] && { echo "job failed (exit $code):"; cat "$work/err"; exit 2; }
    runs="$runs $n"
    echo "  $1 job $i: exit $code, $n runs per side, change $change" >&2
  done
  echo "$1: $alarms of $JOBS jobs exited 1 (regression); runs per side chosen by --repeat auto:$runs"
}

echo "bench ci A/B in one job, wall_s max_increase 3%, --repeat auto --max-repeat $MAXREP, load generator up to ${LOAD_MAX:-1} busy core(s); $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
summary "A/A (no change)" 1.0
summary "A/B (10% slower)" 1.1
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
