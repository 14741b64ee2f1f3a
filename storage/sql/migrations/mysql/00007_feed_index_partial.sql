-- bench storage schema, version 7: on PostgreSQL and SQLite the change
-- feed's index becomes partial (bench_seq IS NOT NULL), so that foreign-
-- key checks on trial cannot pick it (see postgres/00007). MySQL and
-- MariaDB have no partial indexes, and InnoDB checks a foreign key with
-- the index it was created with, so nothing changes here; the version
-- keeps the dialects' numbering in step.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
