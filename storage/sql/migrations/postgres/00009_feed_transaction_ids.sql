-- bench storage schema, version 9: on PostgreSQL a change's number is the
-- id of the transaction that made it (pg_current_xact_id(), written by the
-- trial's own statement), and a reader's bound is its snapshot's xmin:
-- every transaction with a smaller id has ended, so nothing can commit a
-- number below it later. Writers no longer take a number from bench_feed
-- under its row lock, which made every writer of an experiment wait for
-- the one before it to commit; the table goes.
--
-- The numbers already given stay in trial.bench_seq: no change is
-- numbered from bench_feed after this version, so such a trial is returned
-- by a poll from 0 and at most once more, by the poll whose range holds
-- its old number (usually none: a counter stays below the ids of the
-- transactions that took its numbers), never missed; its next change gets
-- a transaction id. A bench of version 8 refuses this database
-- (ErrSchemaTooNew); one that was running already fails on the missing
-- bench_feed at its next change or poll instead of numbering changes the
-- other way.

-- +goose Up
DROP TABLE bench_feed;

-- +goose Down
-- A bench of version 8 takes the next number from bench_feed: continue
-- after the largest one given (a transaction id).
CREATE TABLE bench_feed (
    exp_id TEXT NOT NULL PRIMARY KEY,
    seq    BIGINT NOT NULL
);
INSERT INTO bench_feed (exp_id, seq)
SELECT exp_id, MAX(bench_seq) FROM trial WHERE bench_seq IS NOT NULL GROUP BY exp_id;
