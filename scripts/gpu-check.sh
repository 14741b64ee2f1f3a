#!/usr/bin/env bash
# gpu-check.sh: checks bench's GPU detection and device slots on a machine
# with NVIDIA GPUs (a manual check: tests and CI never need a GPU).
#
#   scripts/gpu-check.sh [BENCH_BINARY]     (default: bin/bench; build it
#                                            with `make build` or
#                                            CGO_ENABLED=0 go build -o bin/bench ./cmd/bench)
#
# It runs, each with --gpus all (nvidia-smi's GPUs):
#   1. bench run with 2 trial runners: each trial's gpu_id, device_slot and
#      CUDA_VISIBLE_DEVICES, and the GPU that nvidia-smi sees under that
#      CUDA_VISIBLE_DEVICES;
#   2. the same on a network worker (bench run --serve + bench worker
#      --connect --gpus all).
# and checks that every trial got one GPU of the machine, that
# CUDA_VISIBLE_DEVICES is its gpu_id, and that no two trials held one slot at
# once. Exit status 0 when all holds.
set -euo pipefail
BENCH=$(readlink -f "${1:-bin/bench}")
[ -x "$BENCH" ] || { echo "gpu-check: no bench binary at $BENCH" >&2; exit 2; }
command -v nvidia-smi >/dev/null || { echo "gpu-check: nvidia-smi is not on PATH" >&2; exit 2; }
echo "== nvidia-smi -L"; nvidia-smi -L
NGPU=$(nvidia-smi -L | grep -c '^GPU ')
W=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
cd "$W"
cat > tunables.jsonc <<'J'
{"g": {"cost": 1, "params": {"xv": {"type": "int", "range": [0, 100], "default": 50}}}}
J
cat > env.jsonc <<J
{"name": "gpu", "class": "mlos_bench.environments.local.LocalEnv",
 "include_tunables": ["tunables.jsonc"],
 "config": {"tunable_params": ["g"],
   "const_args": {"marker_dir": "$W/marks", "gpu_id": "", "device_slot": ""},
   "shell_env_params": ["xv", "trial_id", "marker_dir", "gpu_id", "device_slot"],
   "run": ["./run.sh"], "read_results_file": "results.csv"}}
J
cat > run.sh <<'J'
#!/bin/sh
set -e
seen=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | tr '\n' ' ')
echo "start $device_slot" >> "$marker_dir/slots"
echo "$trial_id|$gpu_id|$device_slot|$CUDA_VISIBLE_DEVICES|$seen" >> "$marker_dir/trials"
sleep 1
echo "end $device_slot" >> "$marker_dir/slots"
printf 'metric,value\nscore,%s\n' "$xv" > results.csv
J
chmod +x run.sh
cat > opt.jsonc <<'J'
{"class": "mlos_bench.optimizers.MlosCoreOptimizer", "config": {"optimizer_type": "RANDOM", "max_suggestions": 6, "seed": 3}}
J
check() { # $1: label
  local bad=0
  echo "== $1: trials (id|gpu_id|device_slot|CUDA_VISIBLE_DEVICES|GPUs nvidia-smi saw)"; cat marks/trials
  [ "$(wc -l < marks/trials)" -eq 6 ] || { echo "FAIL: $(wc -l < marks/trials) trials ran, want 6"; bad=1; }
  while IFS='|' read -r id gpu slot vis seen; do
    [ -n "$gpu" ] && [ "$gpu" = "$vis" ] || { echo "FAIL trial $id: gpu_id '$gpu' vs CUDA_VISIBLE_DEVICES '$vis'"; bad=1; }
    [ "$gpu" -lt "$NGPU" ] 2>/dev/null || { echo "FAIL trial $id: gpu_id '$gpu' is not one of the $NGPU GPUs"; bad=1; }
    [ "$(echo $seen | wc -w)" -eq 1 ] || { echo "FAIL trial $id: nvidia-smi saw '$seen' (want exactly one GPU)"; bad=1; }
  done < marks/trials
  awk '{ if ($1=="start") { if (held[$2]) { print "FAIL: slot " $2 " held twice"; bad=1 } held[$2]=1 } else held[$2]=0 } END { exit bad }' marks/slots || bad=1
  [ $bad -eq 0 ] && echo "OK: $1"
  return $bad
}
rc=0
mkdir marks
"$BENCH" run --environment env.jsonc --optimizer opt.jsonc --experiment_id gpu-local --no-progress \
  --gpus all --num_trial_runners 2 > local.log 2>&1 || { cat local.log; rc=1; }
check "bench run --gpus all" || rc=1
rm -rf marks; mkdir marks
printf 'tok-gpu-check\n' > token; chmod 600 token
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 18471)
"$BENCH" run --environment env.jsonc --optimizer opt.jsonc --experiment_id gpu-net --no-progress \
  --serve 127.0.0.1:$PORT --token-file token --no-local-trials > driver.log 2>&1 &
DRIVER=$!
for i in $(seq 100); do grep -q "serving experiment" driver.log && break; sleep 0.2; done
"$BENCH" worker --connect http://127.0.0.1:$PORT --token-file token --environment env.jsonc --no-progress \
  --gpus all --num_trial_runners 2 > worker.log 2>&1 || { cat worker.log; rc=1; }
wait $DRIVER || { cat driver.log; rc=1; }
check "bench worker --connect --gpus all" || rc=1
grep -h "trial runners\|slot" worker.log | head -5 || true
exit $rc
