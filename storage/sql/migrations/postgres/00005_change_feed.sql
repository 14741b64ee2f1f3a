-- bench storage schema, version 5: a change feed. Every change bench
-- makes to a trial (queued, claimed, started, finished, released, stop
-- requested, job recorded) gives it the next number of its experiment's
-- sequence, so that a reader asks for "the trials changed since N"
-- instead of reading every trial. mlos_bench reads the database as
-- before: bench_seq is nullable (trials written by mlos_bench have none)
-- and bench_feed is bench's own table.

-- +goose Up
-- bench_seq: the experiment's sequence number of the trial's last change
-- by bench (NULL: none since this version).
ALTER TABLE trial ADD COLUMN bench_seq BIGINT;
CREATE INDEX trial_bench_seq_idx ON trial (exp_id, bench_seq);
-- bench_feed: each experiment's last sequence number; its row is locked
-- by every writer of a change until commit, so that numbers become
-- visible in order.
CREATE TABLE bench_feed (
    exp_id TEXT NOT NULL PRIMARY KEY,
    seq    BIGINT NOT NULL
);

-- +goose Down
DROP TABLE bench_feed;
DROP INDEX trial_bench_seq_idx;
ALTER TABLE trial DROP COLUMN bench_seq;
