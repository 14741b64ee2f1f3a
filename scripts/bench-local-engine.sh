#!/usr/bin/env bash
# Per-job time of the local engine: N trials (default 10) whose run is a
# one-line script, as jobs of the local engine (detached bench exec-trial
# processes) on SLOTS slots (default 1), with the default poll_interval
# (1 s), for two bench binaries run in turn REPEAT times (default 5): A
# (this tree, or $BENCH) and B ($BASELINE, e.g. a build of an earlier
# commit). Prints each run's wall time, the medians, per-job times and the
# ratio A/B of the medians.
#
#   BASELINE=/tmp/bench-old scripts/bench-local-engine.sh [N [SLOTS [REPEAT]]]
#
# Build the baseline with e.g.
#   git worktree add /tmp/old 482b609 && (cd /tmp/old && go build -o /tmp/bench-old ./cmd/bench)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10}
SLOTS=${2:-1}
REPEAT=${3:-5}
[ -n "${BASELINE:-}" ] || { echo "bench-local-engine.sh: set BASELINE to the bench binary to compare with" >&2; exit 2; }
work=$(mktemp -d /tmp/bench-local-engine.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -n "${BENCH:-}" ]; then
  A=$BENCH
else
  A="$work/bench"
  go build -o "$A" ./cmd/bench
fi
cat >"$work/tunables.jsonc" <<'J'
{"g": {"cost": 1, "params": {"xv": {"type": "int", "range": [0, 1000], "default": 50}}}}
J
cat >"$work/env.jsonc" <<'J'
{"name": "le", "class": "mlos_bench.environments.local.LocalEnv", "include_tunables": ["tunables.jsonc"],
 "config": {"tunable_params": ["g"], "shell_env_params": ["xv"], "run": ["./trial.sh"], "read_results_file": "results.csv"}}
J
printf '#!/bin/sh\nprintf "metric,value\\nscore,%%s\\n" "$xv" > results.csv\n' >"$work/trial.sh"
chmod 755 "$work/trial.sh"
echo "{\"class\": \"mlos_bench.optimizers.MlosCoreOptimizer\", \"config\": {\"optimizer_type\": \"RANDOM\", \"max_suggestions\": $N, \"seed\": 3}}" >"$work/opt.jsonc"
echo "{\"class\": \"bench.engines.LocalEngine\", \"config\": {\"max_jobs\": $SLOTS}}" >"$work/engine.jsonc"

# once BIN: one fresh experiment; prints its wall seconds.
once() {
  rm -rf "$work/bench.sqlite" "$work/.bench"
  local s e
  s=$(date +%s%N)
  (cd "$work" && "$1" --environment env.jsonc --optimizer opt.jsonc --engine engine.jsonc \
    --experiment_id LE --no-progress >"$work/out" 2>&1) || { cat "$work/out" >&2; exit 1; }
  e=$(date +%s%N)
  awk -v d=$((e - s)) 'BEGIN { printf "%.3f\n", d / 1e9 }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "local engine: $N trials on $SLOTS slot(s), poll_interval 1s; A=$A B=$BASELINE; $REPEAT runs each, in turn" >&2
: >"$work/a"
: >"$work/b"
for _ in $(seq 1 "$REPEAT"); do
  once "$A" >>"$work/a"
  once "$BASELINE" >>"$work/b"
done
ma=$(median <"$work/a")
mb=$(median <"$work/b")
echo "A runs (s): $(tr '\n' ' ' <"$work/a")"
echo "B runs (s): $(tr '\n' ' ' <"$work/b")"
awk -v a="$ma" -v b="$mb" -v n="$N" -v s="$SLOTS" 'BEGIN {
  printf "median wall: A %.3f s, B %.3f s; per job (wall x slots / trials): A %.3f s, B %.3f s; A/B %.3f\n", a, b, a * s / n, b * s / n, a / b }'
