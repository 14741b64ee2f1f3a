#!/usr/bin/env bash
# The whole driver process's CPU while it idles on an experiment of 10,000
# stored trials (SQLite), for several builds in one run, the builds'
# order alternating from round to round:
#
#   scripts/bench-driver-idle-process.sh [ROUNDS [SECONDS [BASES]]]
#
# ROUNDS (default 3) rounds of SECONDS (default 20) of idling per build.
# BASES (default "482b609 8a9213d": main before issue 22's work, and main
# before detectOthers read the change feed; "" for none) are built in
# temporary git worktrees; "new" is the working tree. Each build seeds its own SQLite
# file with 10,000 finished trials (MockEnv, MockOptimizer: no process per
# trial), once; each round copies it and resumes the experiment with a
# budget of one more trial, whose script sleeps longer than the round. Once
# that trial has started (it touches a file), the driver's user+system CPU
# time is read from /proc/PID/stat at the start and the end of SECONDS: its
# CPU per second of idling, start-up excluded. Output: one line per
# measurement, then the median per build and its ratio to "new". The
# machine's load average is printed at the start and the end.
# IDLE_MODE=serve measures instead a driver that serves network workers
# and runs no trial itself (bench run --serve 127.0.0.1:0 --no-local-trials)
# with none connected: nothing runs, nothing is queued; SECONDS count from
# when it says it is serving.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '/^#   scripts/p' "$0" | sed 's/^#   /usage: /'; }
case ${1:-} in -h | --help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -le 3 ] || { usage >&2; exit 2; }
ROUNDS=${1:-3}
SECS=${2:-20}
BASES=${3-482b609 8a9213d}
MODE=${IDLE_MODE:-trial}
[[ $MODE == trial || $MODE == serve ]] || { echo "bench-driver-idle-process: IDLE_MODE must be 'trial' (default) or 'serve', got '$MODE'" >&2; exit 2; }
# Checked before anything is built (a minute or more per build).
if ! [[ $ROUNDS =~ ^[1-9][0-9]*$ && $SECS =~ ^[1-9][0-9]*$ ]]; then
  echo "bench-driver-idle-process: ROUNDS and SECONDS must be whole numbers >= 1, got '$ROUNDS' '$SECS'" >&2
  usage >&2
  exit 2
fi
for b in $BASES; do
  git rev-parse -q --verify "$b^{commit}" >/dev/null ||
    { echo "bench-driver-idle-process: BASES: '$b' is not a revision of this repository" >&2; exit 2; }
done
command -v sqlite3 >/dev/null || { echo "bench-driver-idle-process: needs the sqlite3 command (apt-get install sqlite3)" >&2; exit 2; }
root=$(pwd)
work=$(mktemp -d /tmp/bench-driver-idle.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for b in $BASES; do git -C "$root" worktree remove --force "$work/src-$b" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

builds="$BASES new"
echo "building $builds..." >&2
for b in $BASES; do
  git worktree add --detach "$work/src-$b" "$b" >/dev/null 2>&1
  (cd "$work/src-$b" && CGO_ENABLED=0 go build -o "$work/$b-bench" ./cmd/bench)
done
CGO_ENABLED=0 go build -o "$work/new-bench" ./cmd/bench

cfg=$work/cfg
mkdir -p "$cfg"
cat > "$cfg/tunables.jsonc" <<'J'
{"idle": {"cost": 1, "params": {"value": {"type": "int", "range": [0, 1000000], "default": 1}}}}
J
cat > "$cfg/seed-env.jsonc" <<'J'
{"name": "idle", "class": "mlos_bench.environments.mock_env.MockEnv", "include_tunables": ["tunables.jsonc"],
 "config": {"tunable_params": ["idle"], "mock_env_seed": -1}}
J
for n in 10000 10001; do
  cat > "$cfg/opt-$n.jsonc" <<J
{"class": "mlos_bench.optimizers.MockOptimizer", "config": {"optimization_targets": {"score": "min"}, "seed": 1, "max_suggestions": $n}}
J
done
storage() { echo "{\"class\": \"mlos_bench.storage.sql.storage.SqlStorage\", \"config\": {\"drivername\": \"sqlite\", \"database\": \"$1\"}}"; }

for b in $builds; do
  mkdir -p "$work/seed-$b"
  s=$(date +%s)
  (cd "$work/seed-$b" && "$work/$b-bench" --environment seed-env.jsonc --optimizer opt-10000.jsonc --config-path "$cfg" \
    --experiment_id idle --storage "$(storage "$work/seed-$b/db.sqlite")" \
    --no-progress --log_level WARNING > out 2> err) || { cat "$work/seed-$b/err" >&2; exit 1; }
  n=$(sqlite3 "$work/seed-$b/db.sqlite" "SELECT COUNT(*) FROM trial WHERE status = 'SUCCEEDED'")
  echo "seeded $b: $n trials in $(( $(date +%s) - s )) s" >&2
  [ "$n" = 10000 ] || { echo "seeding $b stored $n trials, not 10000" >&2; exit 1; }
done

hz=$(getconf CLK_TCK)
cputicks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
idle() { # $1 = build; prints CPU ms per second of idling
  local d="$work/run-$1"
  rm -rf "$d"; mkdir -p "$d"
  cp "$work/seed-$1/db.sqlite" "$d/db.sqlite"
  cat > "$cfg/idle-env-$1.jsonc" <<J
{"name": "idle", "class": "mlos_bench.environments.local.LocalEnv", "include_tunables": ["tunables.jsonc"],
 "config": {"tunable_params": ["idle"], "run": ["touch $d/started", "sleep $((SECS + 60))"]}}
J
  local serving=()
  if [ "$MODE" = serve ]; then
    echo "idle-bench-token-0123456789abcdef" > "$d/token"
    serving=(--serve 127.0.0.1:0 --token-file "$d/token" --no-local-trials)
  fi
  (cd "$d" && exec "$work/$1-bench" --environment "idle-env-$1.jsonc" --optimizer opt-10001.jsonc --config-path "$cfg" \
    --experiment_id idle --storage "$(storage "$d/db.sqlite")" --no-reuse "${serving[@]}" \
    --no-progress --log_level WARNING > out 2> err) &
  local pid=$!
  pids+=("$pid")
  local waited=0
  until [ -e "$d/started" ] || { [ "$MODE" = serve ] && grep -qs 'serving experiment' "$d/err"; }; do
    sleep 0.2
    waited=$((waited + 1))
    if [ "$waited" -gt 600 ] || ! kill -0 "$pid" 2>/dev/null; then
      echo "$1: the long trial did not start (or, IDLE_MODE=serve, the driver did not serve)" >&2; cat "$d/err" >&2; exit 1
    fi
  done
  sleep 2 # settle after the trial's start
  local a b
  a=$(cputicks "$pid")
  sleep "$SECS"
  b=$(cputicks "$pid")
  # Interrupted as by Ctrl-C: bench stops the trial's processes too.
  kill -INT "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  awk -v a="$a" -v b="$b" -v hz="$hz" -v s="$SECS" 'BEGIN { printf "%.2f\n", (b - a) * 1000 / hz / s }'
}

echo "idling: $MODE; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
out=$work/results
: > "$out"
set -- $builds
nb=$#
for r in $(seq "$ROUNDS"); do
  order=$builds
  if [ $((r % 2)) = 0 ]; then order=$(echo "$builds" | tr ' ' '\n' | tac | tr '\n' ' '); fi
  for b in $order; do
    v=$(idle "$b")
    echo "round $r $b $v CPU ms/s" | tee -a "$out"
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v builds="$builds" '
  { v[$3] = v[$3] " " $4 }
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    nb = split(builds, b, " ")
    m = median(v["new"])
    for (i = 1; i <= nb; i++) {
      x = median(v[b[i]])
      printf "%-8s median %.2f CPU ms per second of idling (%.3f%% of a core)", b[i], x, x / 10
      if (b[i] != "new" && m > 0) printf ", %.1fx new", x / m
      printf "\n"
    }
  }' "$out"
