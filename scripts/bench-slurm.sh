#!/usr/bin/env bash
# Slurm engine throughput: an experiment of 64 trials that each sleep 2 s,
# run as Slurm jobs on 8 slots (max_jobs 8), against the ideal 64*2/8 = 16 s.
# It needs a Slurm cluster whose nodes share this machine's /tmp (the test
# cluster of scripts/testenv/slurm.sh: `eval "$(scripts/testenv/slurm.sh up
# DIR)"`), or set BENCH_SLURM_TMP to a shared folder and
# BENCH_TEST_SLURM_PARTITION to a partition.
#
# The baseline, measured in the same run: the same experiment on the local
# engine (detached bench exec-trial processes, 8 at once, no Slurm).
#
# It prints the wall times, the ideal fractions and Slurm's wall time over
# the baseline's, then where each Slurm trial's
# time went, as means per trial from precise file times:
#   submit->start   bench wrote the batch script .. Slurm created the job's
#                   log on the node (sbatch, scheduling, job launch): Slurm
#   start->script   job start .. the trial's script started (bench
#                   exec-trial loading the configs, the environment's setup)
#   script          the trial's own 2 s
#   script->outcome the script ended .. the outcome file was written (bench
#                   exec-trial: results, teardown)
#   driver          the rest of each slot's time: the driver noticing the
#                   outcome file (poll_interval; the engine does not wait
#                   for Slurm's job completion), fetching, storing, the next
#                   suggestion, writing and submitting the next job
# and the same submit->start from Slurm's own SubmitTime/StartTime (whole
# seconds; their mean is unbiased over many jobs).
#
#   scripts/bench-slurm.sh            TRIALS=64 SLOTS=8 SLEEP=2 POLL=250ms
set -euo pipefail
cd "$(dirname "$0")/.."
n=${TRIALS:-64}
slots=${SLOTS:-8}
sleep_s=${SLEEP:-2}
poll=${POLL:-250ms}
command -v sbatch >/dev/null || { echo "bench-slurm.sh: no sbatch: start a test cluster with scripts/testenv/slurm.sh up DIR" >&2; exit 1; }

work=$(mktemp -d "${BENCH_SLURM_TMP:-/tmp}/bench-slurm.XXXXXX")
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
go build -o "$work/bench" ./cmd/bench

exp="slurmbench-$$"
partition=""
[ -n "${BENCH_TEST_SLURM_PARTITION:-}" ] && partition="\"partition\": \"$BENCH_TEST_SLURM_PARTITION\","
cat >"$work/tunables.jsonc" <<EOF
{"g": {"cost": 1, "params": {"xv": {"type": "int", "range": [0, 1000000], "default": 500000}}}}
EOF
cat >"$work/env.jsonc" <<EOF
{
  "name": "slurm-bench",
  "class": "mlos_bench.environments.local.LocalEnv",
  "include_tunables": ["tunables.jsonc"],
  "config": {
    "tunable_params": ["g"],
    "const_args": {"times": "$work/times"},
    "shell_env_params": ["xv", "trial_id", "times"],
    "run": ["./run.sh"],
    "read_results_file": "results.csv"
  }
}
EOF
cat >"$work/run.sh" <<EOF
#!/bin/sh
s=\$(date +%s.%N)
sleep $sleep_s
printf 'metric,value\nscore,%s\n' "\$xv" > results.csv
echo "\$trial_id \$s \$(date +%s.%N)" >> "\$times"
EOF
chmod 755 "$work/run.sh"
cat >"$work/opt.jsonc" <<EOF
{"class": "mlos_bench.optimizers.MlosCoreOptimizer", "config": {"optimizer_type": "RANDOM", "max_suggestions": $n, "seed": 3}}
EOF
cat >"$work/engine.jsonc" <<EOF
{"class": "bench.engines.SlurmEngine", "config": {$partition "max_jobs": $slots, "time_limit": "10", "poll_interval": "$poll"}}
EOF
cat >"$work/local.jsonc" <<EOF
{"class": "bench.engines.LocalEngine", "config": {"max_jobs": $slots, "poll_interval": "$poll"}}
EOF

# run_exp ENGINE EXPERIMENT: runs the experiment, prints its wall time.
run_exp() {
  local a b
  a=$(date +%s.%N)
  if ! (cd "$work" && ./bench --environment env.jsonc --optimizer opt.jsonc --engine "$1" \
    --experiment_id "$2" --no-progress) >"$work/$2.log" 2>&1; then
    cat "$work/$2.log" >&2
    exit 1
  fi
  b=$(date +%s.%N)
  awk -v a="$a" -v b="$b" 'BEGIN { print b - a }'
}

echo "bench-slurm.sh: $n trials of ${sleep_s}s on $slots slots (poll_interval $poll): local engine, then Slurm" >&2
base_wall=$(run_exp local.jsonc "local-$exp")
: >"$work/times"
wall=$(run_exp engine.jsonc "$exp")

jobs="$work/.bench/slurm/$exp"
# One line per trial: id submit start script_start script_end outcome slurm_submit slurm_start
: >"$work/rows"
while read -r id s e; do
  base="$jobs/bench-$exp-$id.0"
  [ -f "$base.sh" ] || continue
  echo "$id $(stat -c %.9Y "$base.sh") $(stat -c %.9W "$base.log") $s $e $(stat -c %.9Y "$base.outcome.json")" >>"$work/rows"
done <"$work/times"
# Slurm's own times (the controller keeps finished jobs for MinJobAge).
scontrol show job -o 2>/dev/null | tr ' ' '\n' | awk -v p="bench-$exp-" '
  /^JobName=/ { name = substr($0, 9) }
  /^SubmitTime=/ { sub_t = substr($0, 12) }
  /^StartTime=/ { if (index(name, p) == 1) print substr(name, length(p) + 1), sub_t, substr($0, 11) }' |
  while read -r id st sta; do
    echo "$id $(date -d "$st" +%s) $(date -d "$sta" +%s)"
  done >"$work/slurmtimes"

awk -v wall="$wall" -v base="$base_wall" -v n="$n" -v slots="$slots" -v sl="$sleep_s" '
  FNR == NR { ss[$1] = $3 - $2; sk++; next }
  {
    k++; sub_start += $3 - $2; start_script += $4 - $3; script += $5 - $4; script_out += $6 - $5
    total += $6 - $2
    if ($1 in ss) { slurm += ss[$1]; sn++ }
  }
  END {
    ideal = n * sl / slots
    printf "local engine (baseline): wall %.2f s, ideal %.2f s: ideal fraction %.3f\n", base, ideal, ideal / base
    printf "Slurm engine:            wall %.2f s, ideal %.2f s: ideal fraction %.3f (overhead %.2f s)\n", wall, ideal, ideal / wall, wall - ideal
    printf "Slurm/local wall time:   %.2f\n", wall / base
    printf "Slurm engine, per trial (mean of %d):\n", k
    driver = wall * slots / k - total / k
    printf "  submit->start    %6.3f s  (Slurm: sbatch, scheduling, launch; Slurm own SubmitTime->StartTime %.3f s over %d jobs)\n", sub_start / k, (sn ? slurm / sn : -1), sn
    printf "  start->script    %6.3f s  (bench exec-trial startup, environment setup)\n", start_script / k
    printf "  script           %6.3f s  (the trial itself)\n", script / k
    printf "  script->outcome  %6.3f s  (bench exec-trial finishing)\n", script_out / k
    printf "  driver           %6.3f s  (noticing the outcome: poll_interval; fetch, store, next suggestion, next sbatch call)\n", driver
    o = wall * slots / k - script / k
    printf "shares of the per-trial overhead (%.3f s): Slurm submit->start %.0f%%, bench far side %.0f%%, bench driver %.0f%%\n",
      o, 100 * (sub_start / k) / o, 100 * ((start_script + script_out) / k) / o, 100 * driver / o
  }' "$work/slurmtimes" "$work/rows"
