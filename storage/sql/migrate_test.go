package sql

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// migrateTo moves the schema of s to version (up or down) with goose.
func migrateTo(t *testing.T, s *Store, version int64) {
	t.Helper()
	p, err := s.provider()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cur, err := p.GetDBVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cur < version {
		_, err = p.UpTo(ctx, version)
	} else {
		_, err = p.DownTo(ctx, version)
	}
	if err != nil {
		t.Fatalf("migrate from version %d to %d: %v", cur, version, err)
	}
	if cur, err = p.GetDBVersion(ctx); err != nil || cur != version {
		t.Fatalf("schema version %d, %v; want %d", cur, err, version)
	}
}

// v1Columns are the tables and columns of schema version 1, each table
// with the columns that order its rows.
var v1Columns = []struct{ table, cols, order string }{
	{"experiment", "exp_id, description, root_env_config, git_repo, git_commit, ts_start, ts_end, status, driver_name, driver_pid", "exp_id"},
	{"objectives", "exp_id, optimization_target, ordinal, optimization_direction, weight", "exp_id, optimization_target"},
	{"config", "config_id, config_hash", "config_id"},
	{"config_param", "config_id, param_id, param_value", "config_id, param_id"},
	{"trial", "exp_id, trial_id, config_id, trial_runner_id, ts_start, ts_end, status, failure_reason", "exp_id, trial_id"},
	{"trial_param", "exp_id, trial_id, param_id, param_value", "exp_id, trial_id, param_id"},
	{"trial_status", "id, exp_id, trial_id, ts, status", "id"},
	{"trial_result", "exp_id, trial_id, metric_id, metric_value", "exp_id, trial_id, metric_id"},
	{"trial_telemetry", "exp_id, trial_id, ts, metric_id, metric_value", "exp_id, trial_id, ts, metric_id"},
	{"trial_output", "exp_id, trial_id, seq, phase, env_name, line, command, exit_code, stdout, stderr, truncated, ts_start, duration_ns", "exp_id, trial_id, seq"},
}

// dumpV1 returns every row of the version-1 columns, as text.
func dumpV1(t *testing.T, db *dbsql.DB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, tc := range v1Columns {
		rows, err := db.Query(`SELECT ` + tc.cols + ` FROM ` + tc.table + ` ORDER BY ` + tc.order)
		if err != nil {
			t.Fatalf("dump %s: %v", tc.table, err)
		}
		n := len(strings.Split(tc.cols, ","))
		for rows.Next() {
			vals := make([]any, n)
			ptrs := make([]any, n)
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%#v|", v)
			}
			out[tc.table] = append(out[tc.table], b.String())
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestMigrationUpgrade: a database written with schema version 1 is
// upgraded by Open; every old row reads back unchanged and the new columns
// are empty. Going down to version 1 and up again keeps the rows too.
func TestMigrationUpgrade(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg := b.fresh(t)
		cfg.LazySchemaCreate = true
		cfg.Logger = quiet
		old, err := Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer old.Close()
		migrateTo(t, old, 1)

		// Version-1 rows, written with version-1 SQL.
		ts := func(sec int) any { return old.dialect.ts(at(sec)) }
		stmts := []struct {
			q    string
			args []any
		}{
			{`INSERT INTO experiment (exp_id, description, root_env_config, git_repo, git_commit, ts_start, ts_end, status, driver_name, driver_pid)
				VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)`, []any{"old", "made by v1", "env.jsonc", "repo", "c0ffee", ts(0), "RUNNING", "host1", 42}},
			{`INSERT INTO objectives (exp_id, optimization_target, ordinal, optimization_direction, weight) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)`,
				[]any{"old", "score", 0, "min", nil, "old", "tput", 1, "max", 2.0}},
			{`INSERT INTO config (config_id, config_hash) VALUES (?, ?), (?, ?)`, []any{7, "hashA", 8, "hashB"}},
			{`INSERT INTO config_param (config_id, param_id, param_value) VALUES (?, ?, ?), (?, ?, ?), (?, ?, ?)`,
				[]any{7, "x", "1", 7, "y", "a", 8, "x", "2"}},
			{`INSERT INTO trial (exp_id, trial_id, config_id, trial_runner_id, ts_start, ts_end, status, failure_reason) VALUES
				(?, 1, 7, 1, ?, ?, 'SUCCEEDED', NULL), (?, 2, 8, 2, ?, ?, 'FAILED', 'run: exit status 3'),
				(?, 3, 7, NULL, ?, NULL, 'PENDING', NULL), (?, 4, 8, 1, ?, NULL, 'RUNNING', NULL)`,
				[]any{"old", ts(1), ts(5), "old", ts(2), ts(6), "old", ts(7), "old", ts(8)}},
			{`INSERT INTO trial_param (exp_id, trial_id, param_id, param_value) VALUES (?, 1, 'repeat_i', '1'), (?, 1, 'optimizer', 'mock'), (?, 3, 'repeat_i', '2')`,
				[]any{"old", "old", "old"}},
			{`INSERT INTO trial_status (exp_id, trial_id, ts, status) VALUES (?, 1, ?, 'PENDING'), (?, 1, ?, 'SUCCEEDED'), (?, 2, ?, 'PENDING'),
				(?, 2, ?, 'FAILED'), (?, 3, ?, 'PENDING'), (?, 4, ?, 'PENDING'), (?, 4, ?, 'RUNNING')`,
				[]any{"old", ts(1), "old", ts(5), "old", ts(2), "old", ts(6), "old", ts(7), "old", ts(8), "old", ts(9)}},
			{`INSERT INTO trial_result (exp_id, trial_id, metric_id, metric_value) VALUES (?, 1, 'score', '1.5'), (?, 1, 'note', 'ok'), (?, 1, 'none', NULL)`,
				[]any{"old", "old", "old"}},
			{`INSERT INTO trial_telemetry (exp_id, trial_id, ts, metric_id, metric_value) VALUES (?, 1, ?, 'cpu', '0.5'), (?, 1, ?, 'cpu', '0.75')`,
				[]any{"old", ts(2), "old", ts(3)}},
			{`INSERT INTO trial_output (exp_id, trial_id, seq, phase, env_name, line, command, exit_code, stdout, stderr, truncated, ts_start, duration_ns)
				VALUES (?, 1, 0, 'run', 'env', 0, 'echo hi', 0, 'hi', '', ?, ?, 1500), (?, 2, 0, 'run', 'env', 1, 'false', 3, '', 'boom', ?, NULL, 7)`,
				[]any{"old", true, ts(2), "old", false}},
		}
		for _, st := range stmts {
			if _, err := old.DB().ExecContext(ctx, old.dialect.rebind(st.q), st.args...); err != nil {
				t.Fatalf("%s: %v", st.q, err)
			}
		}
		before := dumpV1(t, old.DB())
		if len(before) != len(v1Columns) || len(before["trial"]) != 4 || len(before["trial_status"]) != 7 {
			t.Fatalf("version-1 dump: %v", before)
		}
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}

		// The new code opens (and upgrades) it.
		cfg.LazySchemaCreate = false
		s := open(t, cfg)
		cur, latest, err := s.SchemaVersion(ctx)
		if err != nil || cur != latest || cur < 2 {
			t.Fatalf("SchemaVersion after upgrade = %d, %d, %v", cur, latest, err)
		}
		if diff := cmp.Diff(before, dumpV1(t, s.DB())); diff != "" {
			t.Errorf("version-1 rows changed by the upgrade (-before +after):\n%s", diff)
		}
		for q, want := range map[string]int{
			`SELECT COUNT(*) FROM trial WHERE owner IS NULL AND lease_until IS NULL AND retry_of IS NULL AND reused_exp_id IS NULL
				AND reused_trial_id IS NULL AND stop_requested IS NULL`: 4,
			`SELECT COUNT(*) FROM experiment WHERE stop_requested IS NULL`: 1,
			`SELECT COUNT(*) FROM trial_output WHERE NOT timed_out`:        2,
		} {
			if n := count(t, s, q); n != want {
				t.Errorf("%s: %d, want %d", q, n, want)
			}
		}

		// And reads it back through the API as it was written.
		exp, err := s.LoadExperiment(ctx, "old")
		if err != nil {
			t.Fatal(err)
		}
		info := exp.Info()
		wantInfo := storage.ExperimentInfo{ID: "old", Description: "made by v1", RootEnvConfig: "env.jsonc", GitRepo: "repo", GitCommit: "c0ffee",
			Objectives: []storage.Objective{{Name: "score", Direction: "min"}, {Name: "tput", Direction: "max", Weight: 2}},
			Status:     trial.RUNNING, TsStart: us(0), DriverName: "host1", DriverPID: 42}
		if diff := cmp.Diff(wantInfo, info); diff != "" {
			t.Errorf("experiment (-want +got):\n%s", diff)
		}
		trials, err := exp.Trials(ctx, storage.TrialFilter{})
		if err != nil {
			t.Fatal(err)
		}
		pA, pB := map[string]string{"x": "1", "y": "a"}, map[string]string{"x": "2"}
		wantTrials := []storage.Trial{
			{ExperimentID: "old", ID: 1, ConfigID: 7, ConfigHash: "hashA", TrialRunnerID: 1, Status: trial.SUCCEEDED, TsStart: us(1), TsEnd: us(5),
				Params: pA, Metadata: map[string]string{"repeat_i": "1", "optimizer": "mock"}, Results: storage.Metrics{"score": 1.5, "note": "ok", "none": nil}},
			{ExperimentID: "old", ID: 2, ConfigID: 8, ConfigHash: "hashB", TrialRunnerID: 2, Status: trial.FAILED, TsStart: us(2), TsEnd: us(6),
				Params: pB, Metadata: map[string]string{}, Results: storage.Metrics{}, FailureReason: "run: exit status 3"},
			{ExperimentID: "old", ID: 3, ConfigID: 7, ConfigHash: "hashA", Status: trial.PENDING, TsStart: us(7),
				Params: pA, Metadata: map[string]string{"repeat_i": "2"}},
			{ExperimentID: "old", ID: 4, ConfigID: 8, ConfigHash: "hashB", TrialRunnerID: 1, Status: trial.RUNNING, TsStart: us(8),
				Params: pB, Metadata: map[string]string{}},
		}
		if diff := cmp.Diff(wantTrials, trials); diff != "" {
			t.Errorf("trials (-want +got):\n%s", diff)
		}
		d := mustDetail(t, exp, 1)
		wantOutput := []storage.Output{{Phase: "run", Env: "env", Command: "echo hi", Stdout: "hi", Truncated: true, Start: us(2), Duration: 1500}}
		wantTel := []storage.Telemetry{{Ts: us(2), Metric: "cpu", Value: 0.5}, {Ts: us(3), Metric: "cpu", Value: 0.75}}
		wantHist := []storage.StatusChange{{Ts: us(1), Status: trial.PENDING}, {Ts: us(5), Status: trial.SUCCEEDED}}
		if diff := cmp.Diff(wantOutput, d.Output); diff != "" {
			t.Errorf("output (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantTel, d.Telemetry); diff != "" {
			t.Errorf("telemetry (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantHist, d.History); diff != "" {
			t.Errorf("history (-want +got):\n%s", diff)
		}
		if d := mustDetail(t, exp, 2); len(d.Output) != 1 || d.Output[0].ExitCode != 3 || d.Output[0].Stderr != "boom" || d.Output[0].TimedOut || !d.Output[0].Start.IsZero() {
			t.Errorf("output of trial 2: %+v", d.Output)
		}

		// The upgraded database works: its old pending trials can be
		// claimed, and new trials continue its ids.
		w := exp.WithOwner("w1", time.Minute)
		claimed, err := w.Claim(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int{3, 4}, ids(claimed)); diff != "" {
			t.Errorf("claimed (-want +got):\n%s", diff)
		}
		if tr := mustTrial(t, exp, map[string]string{"x": "9"}); tr.ID != 5 {
			t.Errorf("new trial id %d, want 5", tr.ID)
		}

		// Down to version 1 and up again: the old rows are still there.
		down := cfg
		down.LazySchemaCreate = true
		s2 := open(t, down)
		migrateTo(t, s2, 1)
		after := dumpV1(t, s2.DB())
		for _, table := range []string{"experiment", "objectives", "trial_output", "trial_result", "trial_telemetry"} {
			if diff := cmp.Diff(before[table], after[table]); diff != "" {
				t.Errorf("%s changed going down (-before +after):\n%s", table, diff)
			}
		}
		migrateTo(t, s2, latest)
	})
}

func us(sec int) time.Time { return at(sec).Truncate(time.Microsecond) }
