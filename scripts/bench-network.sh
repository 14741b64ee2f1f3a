#!/usr/bin/env bash
# Network workers: per-trial overhead and 16-runner throughput of a driver
# (bench run --serve --no-local-trials) whose trials run on network workers
# (bench worker --connect), for two builds measured in the same run,
# interleaved REPS times (the machine's noise then hits both alike):
#
#   overhead    N trials (default 100) of a LocalEnv whose run step is one
#               trivial command (bench/overhead), one worker with one runner:
#               the driver's wall time per trial
#   throughput  64 trials that sleep 1 s on 4 workers of 4 runners (16
#               slots): the ideal time (4 s) over the driver's wall time
#
# and, as a reference of what the machine allows, the same two experiments
# run by the working tree's build on local runners (bench run, no serve):
# 1 runner, and 16 runners.
#
#   scripts/bench-network.sh [BASE [REPS [N]]]   BASE: the git revision of
#       the "before" build (default f72a462, before network workers became a
#       runner kind); the "after" build is the working tree. REPS default 3.
#
# It prints each repetition's figures and the medians of the per-repetition
# ratios after/before (below 1: the working tree is faster).
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:-f72a462}
REPS=${2:-3}
N=${3:-100}
work=$(mktemp -d /tmp/bench-network.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "building $BASE and the working tree..." >&2
mkdir -p "$work/src-before"
git archive "$BASE" | tar -xf - -C "$work/src-before"
(cd "$work/src-before" && go build -o "$work/before" ./cmd/bench)
go build -o "$work/after" ./cmd/bench

echo "tok-$RANDOM-$RANDOM" > "$work/token"
chmod 600 "$work/token"
mkdir -p "$work/cfg"
cat > "$work/cfg/sleep.jsonc" <<'EOF'
{
    "name": "sleep",
    "class": "mlos_bench.environments.local.LocalEnv",
    "include_tunables": ["overhead/tunables.jsonc"],
    "config": {
        "tunable_params": ["overhead"],
        "shell_env_params": ["value"],
        "run": ["sleep 1", "echo score=$value"],
        "results_stdout_pattern": "(score)=([0-9.]+)"
    }
}
EOF

now() { date +%s%N; }

# run BIN ENV TRIALS WORKERS RUNNERS: one experiment; prints the driver's
# wall time in ns.
run() {
  local bin=$1 env=$2 trials=$3 workers=$4 runners=$5 d="$work/run" addr
  rm -rf "$d"; mkdir -p "$d"
  local s; s=$(now)
  "$bin" --environment "$env" --optimizer overhead/optimizer.jsonc --config-path bench --config-path "$work/cfg" \
    --max_suggestions "$trials" --experiment_id net --no-progress --log_level WARNING \
    --storage "{\"class\": \"mlos_bench.storage.sql.storage.SqlStorage\", \"config\": {\"drivername\": \"sqlite\", \"database\": \"$d/db.sqlite\"}}" \
    --serve 127.0.0.1:0 --token-file "$work/token" --no-local-trials > "$d/driver.out" 2> "$d/driver.err" &
  local driver=$!
  pids+=("$driver")
  for _ in $(seq 600); do
    addr=$(sed -n 's/.*to workers at \(http:\/\/[^ ]*\).*/\1/p' "$d/driver.err" 2>/dev/null | head -1)
    [ -n "$addr" ] && break
    sleep 0.01
  done
  [ -n "$addr" ] || { cat "$d/driver.err" >&2; exit 1; }
  local ws=()
  for w in $(seq "$workers"); do
    "$bin" worker --connect "$addr" --token-file "$work/token" --environment "$env" --config-path bench --config-path "$work/cfg" \
      --num_trial_runners "$runners" --no-progress --log_level WARNING > "$d/w$w.out" 2> "$d/w$w.err" &
    ws+=($!)
    pids+=($!)
  done
  wait "$driver" || { echo "driver failed:" >&2; cat "$d/driver.err" >&2; exit 1; }
  local e; e=$(now)
  for w in "${ws[@]}"; do wait "$w" || true; done
  grep -q "$trials trials ($trials succeeded" "$d/driver.out" || { echo "not every trial succeeded:" >&2; cat "$d/driver.out" "$d/driver.err" >&2; exit 1; }
  echo $((e - s))
}

# local BIN ENV TRIALS RUNNERS: the experiment on local runners; prints the
# wall time in ns.
local_run() {
  local bin=$1 env=$2 trials=$3 runners=$4 d="$work/run"
  rm -rf "$d"; mkdir -p "$d"
  local s; s=$(now)
  "$bin" --environment "$env" --optimizer overhead/optimizer.jsonc --config-path bench --config-path "$work/cfg" \
    --max_suggestions "$trials" --experiment_id net --no-progress --log_level WARNING --num_trial_runners "$runners" \
    --storage "{\"class\": \"mlos_bench.storage.sql.storage.SqlStorage\", \"config\": {\"drivername\": \"sqlite\", \"database\": \"$d/db.sqlite\"}}" \
    > "$d/local.out" 2> "$d/local.err" || { cat "$d/local.err" >&2; exit 1; }
  echo $(($(now) - s))
}

: > "$work/rows"
for r in $(seq "$REPS"); do
  for b in before after; do
    o=$(run "$work/$b" overhead/env.jsonc "$N" 1 1)
    t=$(run "$work/$b" sleep.jsonc 64 4 4)
    echo "$r $b $o $t" >> "$work/rows"
    awk -v r="$r" -v b="$b" -v o="$o" -v t="$t" -v n="$N" 'BEGIN {
      printf "rep %d %-6s overhead %.3f s (%.2f ms/trial)  throughput %.3f s (ideal fraction %.2f)\n", r, b, o/1e9, o/1e6/n, t/1e9, 4e9/t }'
  done
  o=$(local_run "$work/after" overhead/env.jsonc "$N" 1)
  t=$(local_run "$work/after" sleep.jsonc 64 16)
  echo "$r local $o $t" >> "$work/rows"
  awk -v r="$r" -v o="$o" -v t="$t" -v n="$N" 'BEGIN {
    printf "rep %d local  overhead %.3f s (%.2f ms/trial)  throughput %.3f s (ideal fraction %.2f)  (after build, local runners)\n", r, o/1e9, o/1e6/n, t/1e9, 4e9/t }'
done

awk -v n="$N" '
  $2 == "before" { ob[$1] = $3; tb[$1] = $4 }
  $2 == "after"  { oa[$1] = $3; ta[$1] = $4 }
  $2 == "local"  { ol[$1] = $3; tl[$1] = $4 }
  function median(a, k,   i, j, t, b) {
    for (i = 1; i <= k; i++) b[i] = a[i]
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
    return (k % 2) ? b[(k + 1) / 2] : (b[k / 2] + b[k / 2 + 1]) / 2
  }
  END {
    k = 0
    for (r in ob) { k++; ro[k] = oa[r] / ob[r]; rt[k] = ta[r] / tb[r]; mob[k] = ob[r]; moa[k] = oa[r]; mtb[k] = tb[r]; mta[k] = ta[r]
                    rol[k] = oa[r] / ol[r]; rtl[k] = ta[r] / tl[r]; mol[k] = ol[r]; mtl[k] = tl[r] }
    printf "overhead (%d trials, 1 worker x 1 runner): before %.2f ms/trial, after %.2f ms/trial, after/before %.2f (median of %d ratios)\n", n, median(mob, k) / 1e6 / n, median(moa, k) / 1e6 / n, median(ro, k), k
    printf "throughput (64 x 1 s trials, 4 workers x 4 runners): before %.2f s (ideal fraction %.2f), after %.2f s (%.2f), after/before %.2f\n", median(mtb, k) / 1e9, 4e9 / median(mtb, k), median(mta, k) / 1e9, 4e9 / median(mta, k), median(rt, k)
    printf "reference, local runners (after build): overhead %.2f ms/trial (network after/local %.2f), 16 runners %.2f s (ideal fraction %.2f; network after/local %.2f)\n", median(mol, k) / 1e6 / n, median(rol, k), median(mtl, k) / 1e9, 4e9 / median(mtl, k), median(rtl, k)
  }' "$work/rows"
