#!/usr/bin/env bash
# SSH pool throughput: N trials (default 64) that each sleep 2 s, run by the
# SSH pool engine on two hosts with 4 slots each (8 in all), the two hosts
# being the loopback sshd of scripts/testenv/sshd.sh (started here when
# BENCH_TEST_SSH_PORT2 is not set). Measured in the same run:
#
#   ideal          N x 2 s / 8 slots (16 s for 64 trials)
#   bench          bench run --engine ssh-pool: wall time, ideal-fraction
#                  (ideal / wall; 1.0 is perfect)
#   local engine   the same experiment on the local engine (8 detached
#                  bench exec-trial processes on this machine): bench's own
#                  cost without SSH
#   ssh baseline   8 lanes of `ssh host 'sleep 2'` (N/8 each, new
#                  connection each time): what SSH itself allows
#
# and where a trial's slot time goes beyond the 2 s sleep (median and p90
# over the trials, from the job files' timestamps on the hosts, which are
# this machine):
#
#   launch         request written -> the detached job started (SFTP
#                  writes, the setsid launch)
#   exec-trial     the far side's bench exec-trial beyond the sleep
#                  (process start, config loading, environment, outcome)
#   driver         the rest of the slot's time per trial: noticing the end
#                  (poll_interval), fetching, storing, the optimizer's next
#                  suggestion, the next submission: (8 x wall - sum of job
#                  times) / N
#
#   scripts/bench-sshpool.sh [N [POLL]]   (default N=64, POLL=200ms)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-64}
POLL=${2:-200ms}
SLEEP=2
work=$(mktemp -d /tmp/bench-sshpool.XXXXXX)
chmod 755 "$work"
fixture=""
cleanup() {
  [ -n "$fixture" ] && scripts/testenv/sshd.sh down "$work/env" >/dev/null 2>&1 || true
  [ -n "${wd_abs:-}" ] && rm -rf "$wd_abs"
  rm -rf "$work"
}
trap cleanup EXIT

if [ -z "${BENCH_TEST_SSH_PORT2:-}" ]; then
  mkdir -p "$work/env" && chmod 755 "$work/env"
  eval "$(scripts/testenv/sshd.sh up "$work/env")"
  fixture=1
fi
user=$BENCH_TEST_SSH_USER
home=$(getent passwd "$user" | cut -d: -f6)
wd=".bench/bench-sshpool-$$"
wd_abs="$home/$wd"

B="$work/bench"
go build -o "$B" ./cmd/bench

# The experiment, readable by the hosts' login.
exp="$work/exp"
mkdir -p "$exp" && chmod 777 "$exp"
cat >"$exp/tunables.jsonc" <<'EOF'
{"g": {"cost": 1, "params": {"xv": {"type": "int", "range": [0, 1000000], "default": 500}}}}
EOF
cat >"$exp/env.jsonc" <<'EOF'
{"name": "sleep", "class": "mlos_bench.environments.local.LocalEnv",
 "include_tunables": ["tunables.jsonc"],
 "config": {"tunable_params": ["g"], "shell_env_params": ["xv"],
   "run": ["run.sh"], "read_results_file": "results.csv"}}
EOF
cat >"$exp/run.sh" <<EOF
#!/bin/sh
sleep $SLEEP
printf 'metric,value\nscore,%s\n' "\$xv" > results.csv
EOF
chmod 755 "$exp/run.sh"
cat >"$exp/opt.jsonc" <<EOF
{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
 "config": {"optimizer_type": "RANDOM", "max_suggestions": $N, "seed": 3}}
EOF
cat >"$exp/engine.jsonc" <<EOF
{"class": "bench.engines.SSHPoolEngine",
 "config": {
   "hosts": [
     {"host": "$user@$BENCH_TEST_SSH_HOST:$BENCH_TEST_SSH_PORT", "key_file": "$BENCH_TEST_SSH_KEY", "slots": 4, "workdir": "$wd/h1"},
     {"host": "$user@$BENCH_TEST_SSH_HOST:$BENCH_TEST_SSH_PORT2", "key_file": "$BENCH_TEST_SSH_KEY", "slots": 4, "workdir": "$wd/h2"}
   ],
   "known_hosts_file": "$BENCH_TEST_SSH_KNOWN_HOSTS",
   "upload_bench": true,
   "poll_interval": "$POLL"
 }}
EOF

cat >"$exp/local.jsonc" <<EOF
{"class": "bench.engines.LocalEngine", "config": {"max_jobs": 8, "poll_interval": "$POLL"}}
EOF

now() { date +%s%N; }

# Upload the binary once (not measured): one trial.
(cd "$exp" && "$B" --environment env.jsonc --optimizer opt.jsonc --engine engine.jsonc --max_suggestions 1 \
  --experiment_id warm --no-progress --log_level WARNING >/dev/null 2>"$work/warm.err") || { cat "$work/warm.err" >&2; exit 1; }
rm -rf "$wd_abs"/h*/bench-warm-*

s=$(now)
(cd "$exp" && "$B" --environment env.jsonc --optimizer opt.jsonc --engine engine.jsonc \
  --experiment_id sp --no-progress --log_level WARNING >"$work/bench.out" 2>"$work/bench.err") || { cat "$work/bench.err" >&2; exit 1; }
bench_ns=$(( $(now) - s ))
ok=$(grep -c '"status":"SUCCEEDED"' "$wd_abs"/h*/bench-sp-*.outcome.json | awk -F: '{s += $2} END {print s}')
[ "$ok" = "$N" ] || { echo "only $ok of $N outcomes SUCCEEDED" >&2; cat "$work/bench.err" >&2; exit 1; }

s=$(now)
(cd "$exp" && "$B" --environment env.jsonc --optimizer opt.jsonc --engine local.jsonc \
  --experiment_id lo --no-progress --log_level WARNING >"$work/local.out" 2>"$work/local.err") || { cat "$work/local.err" >&2; exit 1; }
local_ns=$(( $(now) - s ))

# Baseline: 8 lanes of ssh 'sleep 2', N/8 each.
lane() {
  local port=$1
  for _ in $(seq $(( N / 8 ))); do
    ssh -q -i "$BENCH_TEST_SSH_KEY" -p "$port" -o BatchMode=yes -o IdentitiesOnly=yes \
      -o UserKnownHostsFile="$BENCH_TEST_SSH_KNOWN_HOSTS" -o StrictHostKeyChecking=yes \
      "$user@$BENCH_TEST_SSH_HOST" "sleep $SLEEP" </dev/null
  done
}
s=$(now)
for i in 1 2 3 4; do lane "$BENCH_TEST_SSH_PORT" & lane "$BENCH_TEST_SSH_PORT2" & done
wait
ssh_ns=$(( $(now) - s ))

# Per-job timestamps: request written, job started, job ended.
for r in "$wd_abs"/h*/bench-sp-*.run; do
  base=${r%.run}
  printf '%s %s %s\n' "$(stat -c %.9Y "$base.request.json")" "$(stat -c %.9Y "$r/started")" "$(stat -c %.9Y "$r/exit")"
done >"$work/times"

awk -v n="$N" -v sl="$SLEEP" -v bench="$bench_ns" -v sshb="$ssh_ns" -v loc="$local_ns" '
  function pct(a, k, p,   i, j, t) {
    for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
    return a[int((k - 1) * p) + 1]
  }
  { launch[NR] = ($2 - $1) * 1000; exec[NR] = ($3 - $2 - sl) * 1000; job += $3 - $1 }
  END {
    ideal = n * sl / 8; b = bench / 1e9; s = sshb / 1e9; l = loc / 1e9
    printf "trials %d x %d s on 2 hosts x 4 slots; ideal %.1f s\n", n, sl, ideal
    printf "bench (ssh pool)  %6.2f s  ideal-fraction %.3f\n", b, ideal / b
    printf "local engine      %6.2f s  ideal-fraction %.3f\n", l, ideal / l
    printf "ssh baseline      %6.2f s  ideal-fraction %.3f  (8 lanes of ssh host sleep %d)\n", s, ideal / s, sl
    printf "ssh pool / local engine  %.3f   ssh pool / ssh baseline  %.3f\n", b / l, b / s
    printf "per trial beyond the %d s sleep (median / p90):\n", sl
    printf "  launch      %7.1f / %7.1f ms  request written -> job started\n", pct(launch, NR, 0.5), pct(launch, NR, 0.9)
    printf "  exec-trial  %7.1f / %7.1f ms  far-side bench beyond the sleep\n", pct(exec, NR, 0.5), pct(exec, NR, 0.9)
    printf "  driver      %7.1f ms (mean)      slot time not in a job: (8 x wall - sum of jobs) / N\n", (8 * b - job) / n * 1000
  }' "$work/times"
