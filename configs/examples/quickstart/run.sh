#!/bin/sh
# Run the workload with the trial's tunable values (environment variables
# set by bench from shell_env_params).
set -e
exec ./shipit -level "$level" -block-kb "$block_kb" -workers "$workers" \
    -format "$format" -size-mb "$size_mb" -link-mbps "$link_mbps" \
    -results results.csv -telemetry telemetry.csv
