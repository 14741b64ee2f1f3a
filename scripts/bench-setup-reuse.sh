#!/usr/bin/env bash
# Reuse of setup work (bench_reuse_setup): N trials (default 30) of
# configs/examples/setup-reuse, whose build (a BUILD_S-second sleep,
# default 2) depends only on build_opt (3 values) and whose run is quick,
# once with every build run (--bench_reuse_setup false, mlos_bench's
# behaviour) and once with reuse, with the same optimizer seed. Prints the
# wall time of each, the builds that ran, and the ratio. Both runs use
# --no-reuse, so that a configuration suggested twice runs twice instead
# of copying the first trial's results (dedup): every trial runs.
#
#   scripts/bench-setup-reuse.sh [N [RUNNERS]]     (default N=30, RUNNERS=1)
#
# With RUNNERS > 1 the trials run in parallel and the dispatcher prefers
# a runner already built for a trial's build_opt. BENCH=path/to/binary
# measures that binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-30}
RUNNERS=${2:-1}
BUILD_S=${BUILD_S:-2}
work=$(mktemp -d /tmp/bench-setup-reuse.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -n "${BENCH:-}" ]; then
  B=$BENCH
else
  B="$work/bench"
  go build -o "$B" ./cmd/bench
fi
st="{\"class\": \"mlos_bench.storage.sql.storage.SqlStorage\", \"config\": {\"drivername\": \"sqlite\", \"database\": \"$work/bench.sqlite\"}}"

now() { date +%s%N; }

# run LABEL [options...]: one experiment; prints "LABEL seconds builds".
run() {
  local label=$1
  shift
  local s e
  s=$(now)
  "$B" --config configs/examples/setup-reuse/cli.jsonc --storage "$st" \
    --experiment_id "$label" --max_suggestions "$N" --num_trial_runners "$RUNNERS" \
    --build_root "$work/build-$label" --build_s "$BUILD_S" \
    --no-reuse --no-progress --log_level WARNING "$@" > "$work/$label.out" 2> "$work/$label.err" ||
    { cat "$work/$label.err" >&2; exit 1; }
  e=$(( $(now) - s ))
  "$B" results --storage "$st" --experiment "$label" --format csv > "$work/$label.csv"
  # Builds that ran: trials with a measured setup of the build child.
  local builds
  builds=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "result.bench.build.setup.wall_s") c = i; next }
                    c && $c != "" { n++ } END { print n + 0 }' "$work/$label.csv")
  # The configurations in trial order, to check both runs tried the same.
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^config\./) cols[++k] = i; next }
           { line = ""; for (j = 1; j <= k; j++) line = line "," $cols[j]; print line }' "$work/$label.csv" > "$work/$label.configs"
  echo "$label $e $builds"
}

echo "setup reuse: $N trials, $RUNNERS runner(s), build ${BUILD_S}s, run quick (configs/examples/setup-reuse)" >&2
off=$(run without --bench_reuse_setup false)
on=$(run with)
same=no
cmp -s "$work/without.configs" "$work/with.configs" && same=yes
# How often build_opt changes from one trial to the next (trial order):
# with one runner, reuse runs 1 + that many builds.
changes=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "config.build_opt") c = i; next }
                   NR > 2 && $c != prev { n++ } { prev = $c } END { print n + 0 }' "$work/with.csv")
printf '%s\n%s\n' "$off" "$on" | awk -v n="$N" -v same="$same" -v changes="$changes" '
  { t[$1] = $2 / 1e9; b[$1] = $3 }
  END {
    printf "without reuse:  %7.2f s  (%d builds for %d trials)\n", t["without"], b["without"], n
    printf "with reuse:     %7.2f s  (%d builds for %d trials)\n", t["with"], b["with"], n
    printf "ratio with/without: %.2f  (speed-up %.2fx)\n", t["with"] / t["without"], t["without"] / t["with"]
    printf "same configurations in the same order: %s; build_opt changed %d times between consecutive trials\n", same, changes
  }'
