-- bench storage schema, version 8: on SQLite the change feed no longer
-- takes its numbers from bench_feed (see sqlite/00008). PostgreSQL, MySQL
-- and MariaDB still do, with the same tables: nothing changes here; the
-- version keeps the dialects' numbering in step.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
