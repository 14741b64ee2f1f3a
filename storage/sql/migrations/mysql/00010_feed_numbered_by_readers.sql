-- bench storage schema, version 10 (MySQL and MariaDB only): the change
-- feed's numbers are given by its readers. Writers leave a changed trial
-- pending (bench_seq NULL) and take no bench_feed lock; a reader numbers
-- the experiment's pending trials under bench_feed's row lock before it
-- reads (storage/sql/feed.go). The tables and the index stay as they are:
-- the version exists so that a bench of version 9, whose readers would
-- not see pending changes, refuses the database rather than miss them.
-- SQLite and PostgreSQL have no version 10.

-- +goose Up
SELECT 1;

-- +goose Down
-- Back to version 9, where a reader reads only numbered changes: every
-- pending trial of an experiment with a bench_feed row gets its next
-- number (experiments without one have only never-numbered trials, read
-- from 0 as version 9 does).
UPDATE bench_feed f SET seq = seq + 1
WHERE EXISTS (SELECT 1 FROM trial t WHERE t.exp_id = f.exp_id AND t.bench_seq IS NULL);
UPDATE trial t JOIN bench_feed f ON f.exp_id = t.exp_id SET t.bench_seq = f.seq
WHERE t.bench_seq IS NULL;
