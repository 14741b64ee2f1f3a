-- bench storage schema, version 8: on SQLite the change feed takes no
-- number from bench_feed. Write transactions run one at a time here, so a
-- changed trial's number is the experiment's largest bench_seq plus one,
-- computed in the trial's own statement from the last entry of
-- trial_bench_seq_idx, and a reader's bound is that largest number: no
-- statement and no row lock of the feed's own per transaction. bench_feed
-- stays (empty for new experiments; readers no longer use it). Nothing in
-- the tables changes: the version tells a bench that still takes numbers
-- from bench_feed (schema version 7) that this database is newer than it
-- knows, so the two never number one experiment's changes at once.

-- +goose Up
SELECT 1;

-- +goose Down
-- A bench of version 7 takes the next number from bench_feed: continue
-- after the largest one given.
INSERT OR REPLACE INTO bench_feed (exp_id, seq)
SELECT exp_id, MAX(bench_seq) FROM trial WHERE bench_seq IS NOT NULL GROUP BY exp_id;
