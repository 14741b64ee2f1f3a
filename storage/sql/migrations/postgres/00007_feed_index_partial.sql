-- bench storage schema, version 7: the change feed's index covers only
-- the trials bench stamped. With trial_bench_seq_idx on (exp_id,
-- bench_seq) for every row, PostgreSQL checked each foreign key to trial
-- (trial_param, trial_status, trial_result, trial_telemetry inserts) by
-- scanning that index for the experiment's id and filtering on trial_id:
-- a scan of every trial of the experiment per inserted row, so each
-- trial's writes got slower as the experiment grew. A partial index
-- (bench_seq IS NOT NULL) cannot serve a lookup by (exp_id, trial_id);
-- Changes' range on bench_seq implies it, so the feed still uses it.

-- +goose Up
DROP INDEX trial_bench_seq_idx;
CREATE INDEX trial_bench_seq_idx ON trial (exp_id, bench_seq) WHERE bench_seq IS NOT NULL;

-- +goose Down
DROP INDEX trial_bench_seq_idx;
CREATE INDEX trial_bench_seq_idx ON trial (exp_id, bench_seq);
