package main

import (
	"crypto/sha256"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mlosBenchSQLite writes an SQLite file as mlos_bench 0.6.2 creates it
// (its storage/sql/schema.py, revision f83fb8ae7fc4) with one experiment of
// two finished trials.
func mlosBenchSQLite(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{
		`CREATE TABLE experiment (exp_id VARCHAR(512) NOT NULL, description VARCHAR(1024), root_env_config VARCHAR(1024) NOT NULL,
			git_repo VARCHAR(1024) NOT NULL, git_commit VARCHAR(40) NOT NULL, PRIMARY KEY (exp_id))`,
		`CREATE TABLE objectives (exp_id VARCHAR(512) NOT NULL, optimization_target VARCHAR(512) NOT NULL,
			optimization_direction VARCHAR(4) NOT NULL, weight FLOAT, PRIMARY KEY (exp_id, optimization_target), FOREIGN KEY(exp_id) REFERENCES experiment (exp_id))`,
		`CREATE TABLE config (config_id INTEGER NOT NULL, config_hash VARCHAR(64) NOT NULL, PRIMARY KEY (config_id), UNIQUE (config_hash))`,
		`CREATE TABLE trial (exp_id VARCHAR(512) NOT NULL, trial_id INTEGER NOT NULL, config_id INTEGER NOT NULL, trial_runner_id INTEGER,
			ts_start DATETIME NOT NULL, ts_end DATETIME, status VARCHAR(16) NOT NULL, PRIMARY KEY (exp_id, trial_id),
			FOREIGN KEY(exp_id) REFERENCES experiment (exp_id), FOREIGN KEY(config_id) REFERENCES config (config_id))`,
		`CREATE TABLE config_param (config_id INTEGER NOT NULL, param_id VARCHAR(512) NOT NULL, param_value VARCHAR(1024),
			PRIMARY KEY (config_id, param_id), FOREIGN KEY(config_id) REFERENCES config (config_id))`,
		`CREATE TABLE trial_param (exp_id VARCHAR(512) NOT NULL, trial_id INTEGER NOT NULL, param_id VARCHAR(512) NOT NULL,
			param_value VARCHAR(1024), PRIMARY KEY (exp_id, trial_id, param_id), FOREIGN KEY(exp_id, trial_id) REFERENCES trial (exp_id, trial_id))`,
		`CREATE TABLE trial_status (exp_id VARCHAR(512) NOT NULL, trial_id INTEGER NOT NULL, ts DATETIME NOT NULL,
			status VARCHAR(16) NOT NULL, UNIQUE (exp_id, trial_id, ts), FOREIGN KEY(exp_id, trial_id) REFERENCES trial (exp_id, trial_id))`,
		`CREATE TABLE trial_result (exp_id VARCHAR(512) NOT NULL, trial_id INTEGER NOT NULL, metric_id VARCHAR(512) NOT NULL,
			metric_value VARCHAR(255), PRIMARY KEY (exp_id, trial_id, metric_id), FOREIGN KEY(exp_id, trial_id) REFERENCES trial (exp_id, trial_id))`,
		`CREATE TABLE trial_telemetry (exp_id VARCHAR(512) NOT NULL, trial_id INTEGER NOT NULL, ts DATETIME NOT NULL,
			metric_id VARCHAR(512) NOT NULL, metric_value VARCHAR(255), UNIQUE (exp_id, trial_id, ts, metric_id),
			FOREIGN KEY(exp_id, trial_id) REFERENCES trial (exp_id, trial_id))`,
		`CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))`,
		`INSERT INTO alembic_version (version_num) VALUES ('f83fb8ae7fc4')`,
		`INSERT INTO experiment VALUES ('mlos-exp', 'by mlos_bench', 'env.jsonc', 'https://example.com/repo', 'aa3bf9c2c52bd5f8c7e6cb4f9a6af2d7a5c1f1e0')`,
		`INSERT INTO objectives VALUES ('mlos-exp', 'score', 'min', NULL)`,
		`INSERT INTO config VALUES (1, 'h1'), (2, 'h2')`,
		`INSERT INTO config_param VALUES (1, 'x', '10'), (1, 'ratio', '0.0'), (2, 'x', '20'), (2, 'ratio', '0.5')`,
		`INSERT INTO trial VALUES ('mlos-exp', 1, 1, 1, '2026-01-02 03:04:05.000000', '2026-01-02 03:04:15.000000', 'SUCCEEDED'),
			('mlos-exp', 2, 2, 1, '2026-01-02 03:05:05.000000', '2026-01-02 03:05:15.000000', 'SUCCEEDED')`,
		`INSERT INTO trial_status VALUES ('mlos-exp', 1, '2026-01-02 03:04:15.000000', 'SUCCEEDED'), ('mlos-exp', 2, '2026-01-02 03:05:15.000000', 'SUCCEEDED')`,
		`INSERT INTO trial_result VALUES ('mlos-exp', 1, 'score', '12.5'), ('mlos-exp', 2, 'score', '7.25')`,
		`INSERT INTO trial_telemetry VALUES ('mlos-exp', 1, '2026-01-02 03:04:10.000000', 'cpu', '0.5')`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestReadOnlyCommandsKeepMlosDatabase: bench results (and --list), show,
// export, plot and report read an mlos_bench database without changing
// its schema or bytes; bench run of it would adopt it.
func TestReadOnlyCommandsKeepMlosDatabase(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "mlos_bench.sqlite")
	mlosBenchSQLite(t, db)
	write(t, dir, "storage.jsonc", `{"class": "mlos_bench.storage.sql.storage.SqlStorage", "config": {"drivername": "sqlite", "database": "`+db+`"}}`, 0o644)
	sum := func() [32]byte {
		b, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(b)
	}
	before := sum()
	st := []string{"--storage", "storage.jsonc"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"results", "--list"}, "mlos-exp"},
		{[]string{"results", "--experiment", "mlos-exp"}, "12.5"},
		{[]string{"show", "2", "--experiment", "mlos-exp"}, "7.25"},
		{[]string{"export", "mlos-exp", "--format", "json"}, `"config.ratio": 0.0`},
		{[]string{"plot", "mlos-exp", "-o", filepath.Join(dir, "plots")}, ""},
		{[]string{"report", "mlos-exp", "-o", filepath.Join(dir, "report.html")}, ""},
	} {
		r := runBench(t, dir, append(tc.args, st...)...)
		if r.code != 0 || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("bench %s: exit %d\n%s%s", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr)
		}
		if sum() != before {
			t.Fatalf("bench %s changed the mlos_bench database", strings.Join(tc.args, " "))
		}
	}
	for _, f := range []string{db + "-wal", db + "-shm"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s left behind (WAL mode)", f)
		}
	}
}
