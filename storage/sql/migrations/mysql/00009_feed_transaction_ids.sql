-- bench storage schema, version 9: on PostgreSQL the change feed numbers
-- changes with transaction ids and drops bench_feed (see
-- postgres/00009). MySQL and MariaDB keep bench_feed: InnoDB tells neither
-- a transaction its own id nor a reader the oldest open transaction
-- without the PROCESS privilege (information_schema.INNODB_TRX), so a
-- reader could not know which numbers are final. Nothing changes here;
-- the version keeps the dialects' numbering in step.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
