-- bench storage schema, version 9: on PostgreSQL the change feed numbers
-- changes with transaction ids and drops bench_feed (see
-- postgres/00009). SQLite numbers them as since version 8 (the
-- experiment's largest number plus one, one writer at a time): nothing
-- changes here; the version keeps the dialects' numbering in step.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
