-- bench storage schema, version 6: intermediate results of a running
-- trial (trial.Progress) are telemetry with a step. mlos_bench reads
-- trial_telemetry as before (exp_id, trial_id, ts, metric_id,
-- metric_value): step is nullable, and telemetry that is not progress
-- (read_telemetry_file, sampled CPU and memory) has none.

-- +goose Up
-- step: the trial's progress step the value was reported at (NULL: plain
-- telemetry).
ALTER TABLE trial_telemetry ADD COLUMN step INTEGER;

-- +goose Down
ALTER TABLE trial_telemetry DROP COLUMN step;
