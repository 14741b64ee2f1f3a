-- bench storage schema, version 4 (MySQL): notes recorded with an
-- experiment, such as a run that turned SSH host-key checking off
-- (ssh_insecure_ignore_host_key), so that whoever reads the results later
-- knows how they were obtained.

-- +goose Up
-- notes: a JSON array of strings; each note is kept once, in the order
-- it was first recorded (NULL: none).
ALTER TABLE experiment ADD COLUMN notes LONGTEXT;

-- +goose Down
ALTER TABLE experiment DROP COLUMN notes;
