-- bench storage schema, version 3 (MySQL): trials that run on an execution
-- engine (Slurm, AWS Batch, an SSH host pool) keep the engine's job, so
-- that a restarted bench re-attaches to the running job instead of running
-- the trial again, and a relaunch repeats the same request.

-- +goose Up
-- engine: the engine's name (slurm, aws_batch, ssh, local).
ALTER TABLE trial ADD COLUMN engine LONGTEXT;
-- engine_job: the engine's reference to the trial's current job (JSON:
-- job id, host, files).
ALTER TABLE trial ADD COLUMN engine_job LONGTEXT;
-- engine_request: the exact request the job was submitted with (JSON,
-- without secrets).
ALTER TABLE trial ADD COLUMN engine_request LONGTEXT;
-- engine_submits: how many times the request was submitted (relaunches
-- of hung or lost jobs add one each).
ALTER TABLE trial ADD COLUMN engine_submits INTEGER;

-- +goose Down
ALTER TABLE trial DROP COLUMN engine_submits;
ALTER TABLE trial DROP COLUMN engine_request;
ALTER TABLE trial DROP COLUMN engine_job;
ALTER TABLE trial DROP COLUMN engine;
