package sql

import (
	"context"
	"crypto/sha256"
	dbsql "database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// The layouts of mlos_bench's databases, written as SQLAlchemy creates
// them from mlos_bench's storage/sql/schema.py (create_all), with the
// revision Alembic stamps.
type mlosVersion struct {
	name        string
	revision    string // alembic_version ("": no table)
	trialRunner bool   // trial.trial_runner_id
	expRun      bool   // experiment.ts_start, ts_end, status, driver_name, driver_pid
	// trialTZ: trial.ts_start/ts_end are timestamps with time zone
	// (mlos_bench 0.6.0 declared them without).
	trialTZ bool
}

var mlosVersions = []mlosVersion{
	{name: "0.6.0", revision: ""},
	{name: "0.6.2", revision: "f83fb8ae7fc4", trialRunner: true, trialTZ: true},
	{name: "main", revision: "b61aa446e724", trialRunner: true, expRun: true, trialTZ: true},
}

// mlosDDL is the schema of mlos_bench version v in dialect d ("sqlite" or
// "postgres").
func mlosDDL(d string, v mlosVersion) []string {
	ts, tsz, float, serial := "DATETIME", "DATETIME", "FLOAT", "INTEGER NOT NULL"
	if d == "postgres" {
		ts, tsz, float, serial = "TIMESTAMP WITHOUT TIME ZONE", "TIMESTAMP WITH TIME ZONE", "FLOAT", "SERIAL NOT NULL"
	}
	trialTS := ts
	if v.trialTZ {
		trialTS = tsz
	}
	exp := ""
	if v.expRun {
		exp = fmt.Sprintf("ts_start %s, ts_end %s, status VARCHAR(16), driver_name VARCHAR(40), driver_pid INTEGER,", tsz, tsz)
	}
	runner := ""
	if v.trialRunner {
		runner = "trial_runner_id INTEGER,"
	}
	stmts := []string{
		`CREATE TABLE experiment (exp_id VARCHAR(512) NOT NULL, description VARCHAR(1024), root_env_config VARCHAR(1024) NOT NULL,
			git_repo VARCHAR(1024) NOT NULL, git_commit VARCHAR(40) NOT NULL, ` + exp + ` PRIMARY KEY (exp_id))`,
		`CREATE TABLE objectives (exp_id VARCHAR(512) NOT NULL, optimization_target VARCHAR(512) NOT NULL,
			optimization_direction VARCHAR(4) NOT NULL, weight ` + float + `,
			PRIMARY KEY (exp_id, optimization_target), FOREIGN KEY(exp_id) REFERENCES experiment (exp_id))`,
		`CREATE TABLE config (config_id ` + serial + `, config_hash VARCHAR(64) NOT NULL, PRIMARY KEY (config_id), UNIQUE (config_hash))`,
		`CREATE TABLE trial (exp_id VARCHAR(512) NOT NULL, trial_id INTEGER NOT NULL, config_id INTEGER NOT NULL, ` + runner + `
			ts_start ` + trialTS + ` NOT NULL, ts_end ` + trialTS + `, status VARCHAR(16) NOT NULL,
			PRIMARY KEY (exp_id, trial_id), FOREIGN KEY(exp_id) REFERENCES experiment (exp_id),
			FOREIGN KEY(config_id) REFERENCES config (config_id))`,
		`CREATE TABLE config_param (config_id INTEGER NOT NULL, param_id VARCHAR(512) NOT NULL, param_value VARCHAR(1024),
			PRIMARY KEY (config_id, param_id), FOREIGN KEY(config_id) REFERENCES config (config_id))`,
		`CREATE TABLE trial_param (exp_id VARCHAR(512) NOT NULL, trial_id INTEGER NOT NULL, param_id VARCHAR(512) NOT NULL,
			param_value VARCHAR(1024), PRIMARY KEY (exp_id, trial_id, param_id),
			FOREIGN KEY(exp_id, trial_id) REFERENCES trial (exp_id, trial_id))`,
		`CREATE TABLE trial_status (exp_id VARCHAR(512) NOT NULL, trial_id INTEGER NOT NULL, ts ` + tsz + ` NOT NULL,
			status VARCHAR(16) NOT NULL, UNIQUE (exp_id, trial_id, ts),
			FOREIGN KEY(exp_id, trial_id) REFERENCES trial (exp_id, trial_id))`,
		`CREATE TABLE trial_result (exp_id VARCHAR(512) NOT NULL, trial_id INTEGER NOT NULL, metric_id VARCHAR(512) NOT NULL,
			metric_value VARCHAR(255), PRIMARY KEY (exp_id, trial_id, metric_id),
			FOREIGN KEY(exp_id, trial_id) REFERENCES trial (exp_id, trial_id))`,
		`CREATE TABLE trial_telemetry (exp_id VARCHAR(512) NOT NULL, trial_id INTEGER NOT NULL, ts ` + tsz + ` NOT NULL,
			metric_id VARCHAR(512) NOT NULL, metric_value VARCHAR(255), UNIQUE (exp_id, trial_id, ts, metric_id),
			FOREIGN KEY(exp_id, trial_id) REFERENCES trial (exp_id, trial_id))`,
	}
	if v.revision != "" {
		stmts = append(stmts,
			`CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))`,
			`INSERT INTO alembic_version (version_num) VALUES ('`+v.revision+`')`)
	}
	return stmts
}

// mlosTS formats a time as SQLAlchemy stores a DateTime in SQLite (and as
// a PostgreSQL literal).
func mlosTS(d string, t time.Time) string {
	s := t.UTC().Format("2006-01-02 15:04:05.000000")
	if d == "postgres" {
		s += "+00"
	}
	return s
}

var mlosT0 = time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)

// mlosData are the rows mlos_bench writes for experiment "mlos-exp"
// (objective score:min): trials 1 and 2 SUCCEEDED, 3 FAILED, 4 PENDING
// (queued, not started), each with its trial config, status history,
// results and telemetry as mlos_bench's Experiment and Trial store them.
func mlosData(d string, v mlosVersion) []string {
	at := func(sec int) string { return "'" + mlosTS(d, mlosT0.Add(time.Duration(sec)*time.Second)) + "'" }
	stmts := []string{
		`INSERT INTO experiment (exp_id, description, root_env_config, git_repo, git_commit)
			VALUES ('mlos-exp', 'an mlos_bench experiment', 'environments/root.jsonc', 'https://github.com/example/bench-env', 'aa3bf9c2c52bd5f8c7e6cb4f9a6af2d7a5c1f1e0')`,
		`INSERT INTO objectives (exp_id, optimization_target, optimization_direction) VALUES ('mlos-exp', 'score', 'min')`,
	}
	for c := 1; c <= 3; c++ {
		stmts = append(stmts,
			fmt.Sprintf(`INSERT INTO config (config_hash) VALUES ('%064x')`, c),
			fmt.Sprintf(`INSERT INTO config_param (config_id, param_id, param_value) VALUES (%d, 'x', '%d'), (%d, 'mode', 'fast')`, c, c*10, c))
	}
	type tr struct {
		id, config, start, end int
		status                 string
		score                  string
	}
	for _, t := range []tr{{1, 1, 0, 10, "SUCCEEDED", "12.5"}, {2, 2, 20, 30, "SUCCEEDED", "7.25"}, {3, 3, 40, 50, "FAILED", ""}, {4, 1, 60, 0, "PENDING", ""}} {
		cols, vals := "exp_id, trial_id, config_id, ts_start, status", fmt.Sprintf("'mlos-exp', %d, %d, %s, 'PENDING'", t.id, t.config, at(t.start))
		if v.trialRunner && t.status != "PENDING" {
			cols, vals = cols+", trial_runner_id", vals+", 1"
		}
		stmts = append(stmts,
			`INSERT INTO trial (`+cols+`) VALUES (`+vals+`)`,
			fmt.Sprintf(`INSERT INTO trial_param (exp_id, trial_id, param_id, param_value) VALUES
				('mlos-exp', %d, 'optimizer', 'MlosCoreOptimizer'), ('mlos-exp', %d, 'repeat_i', '1'),
				('mlos-exp', %d, 'is_defaults', '%s'), ('mlos-exp', %d, 'opt_target_0', 'score'), ('mlos-exp', %d, 'opt_direction_0', 'min')`,
				t.id, t.id, t.id, map[bool]string{true: "True", false: "False"}[t.id == 1], t.id, t.id))
		if t.status == "PENDING" {
			continue
		}
		stmts = append(stmts,
			fmt.Sprintf(`INSERT INTO trial_status (exp_id, trial_id, ts, status) VALUES ('mlos-exp', %d, %s, 'RUNNING')`, t.id, at(t.start+1)),
			fmt.Sprintf(`UPDATE trial SET status = 'RUNNING', ts_start = %s WHERE exp_id = 'mlos-exp' AND trial_id = %d`, at(t.start+1), t.id),
			fmt.Sprintf(`INSERT INTO trial_telemetry (exp_id, trial_id, ts, metric_id, metric_value) VALUES ('mlos-exp', %d, %s, 'cpu', '0.5')`, t.id, at(t.start+5)),
			fmt.Sprintf(`INSERT INTO trial_status (exp_id, trial_id, ts, status) VALUES ('mlos-exp', %d, %s, '%s')`, t.id, at(t.end), t.status),
			fmt.Sprintf(`UPDATE trial SET status = '%s', ts_end = %s WHERE exp_id = 'mlos-exp' AND trial_id = %d`, t.status, at(t.end), t.id))
		if t.score != "" {
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO trial_result (exp_id, trial_id, metric_id, metric_value) VALUES ('mlos-exp', %d, 'score', '%s')`, t.id, t.score))
		}
	}
	return stmts
}

// rawDB connects to the database of cfg without bench's Store.
func rawDB(t *testing.T, b backend, cfg storage.Config) *dbsql.DB {
	t.Helper()
	var (
		db  *dbsql.DB
		err error
	)
	if b.name == "sqlite" {
		db, err = dbsql.Open("sqlite", "file:"+uriPath(cfg.Database)+"?_pragma=foreign_keys(1)")
	} else {
		u, perr := url.Parse(testenv.Get(t, "BENCH_TEST_PG_URL"))
		if perr != nil {
			t.Fatal(perr)
		}
		u.Path = "/" + cfg.Database
		db, err = dbsql.Open("pgx", u.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func execAll(t *testing.T, db *dbsql.DB, stmts []string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// mlosDB makes a database of mlos_bench version v holding mlosData.
func mlosDB(t *testing.T, b backend, v mlosVersion) (storage.Config, *dbsql.DB) {
	t.Helper()
	cfg := b.fresh(t)
	db := rawDB(t, b, cfg)
	execAll(t, db, mlosDDL(b.name, v))
	execAll(t, db, mlosData(b.name, v))
	return cfg, db
}

// columns lists the columns of a table.
func columns(t *testing.T, b backend, db *dbsql.DB, table string) []string {
	t.Helper()
	q := `SELECT name FROM pragma_table_info('` + table + `')`
	if b.name == "postgres" {
		q = `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '` + table + `'`
	}
	var out []string
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func tableNames(t *testing.T, b backend, db *dbsql.DB) []string {
	t.Helper()
	q := `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`
	if b.name == "postgres" {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name`
	}
	return queryStrings(t, db, q)
}

// queryStrings runs q and returns each row's columns as text joined by "|".
func queryStrings(t *testing.T, db *dbsql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			switch x := v.(type) {
			case nil:
				parts[i] = "NULL"
			case []byte:
				parts[i] = string(x)
			case time.Time:
				parts[i] = x.UTC().Format(time.RFC3339Nano)
			default:
				parts[i] = fmt.Sprint(x)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// mlosSnapshot is what mlos_bench sees of the database: its tables, with
// only its columns, in a fixed order (trial 4, which bench runs, aside).
func mlosSnapshot(t *testing.T, db *dbsql.DB, v mlosVersion) map[string][]string {
	t.Helper()
	runner := ""
	if v.trialRunner {
		runner = ", trial_runner_id"
	}
	// (bench records its driver and the end of the experiment in
	// experiment.ts_end, status, driver_name and driver_pid when they exist.)
	snap := map[string][]string{
		"experiment":      queryStrings(t, db, `SELECT exp_id, description, root_env_config, git_repo, git_commit FROM experiment ORDER BY exp_id`),
		"objectives":      queryStrings(t, db, `SELECT exp_id, optimization_target, optimization_direction, weight FROM objectives ORDER BY 1, 2`),
		"config":          queryStrings(t, db, `SELECT config_id, config_hash FROM config WHERE config_id <= 3 ORDER BY 1`),
		"config_param":    queryStrings(t, db, `SELECT config_id, param_id, param_value FROM config_param WHERE config_id <= 3 ORDER BY 1, 2`),
		"trial":           queryStrings(t, db, `SELECT exp_id, trial_id, config_id, ts_start, ts_end, status`+runner+` FROM trial WHERE trial_id <= 3 ORDER BY 1, 2`),
		"trial_param":     queryStrings(t, db, `SELECT exp_id, trial_id, param_id, param_value FROM trial_param WHERE trial_id <= 4 ORDER BY 1, 2, 3`),
		"trial_status":    queryStrings(t, db, `SELECT exp_id, trial_id, ts, status FROM trial_status WHERE trial_id <= 3 ORDER BY 1, 2, 3`),
		"trial_result":    queryStrings(t, db, `SELECT exp_id, trial_id, metric_id, metric_value FROM trial_result WHERE trial_id <= 3 ORDER BY 1, 2, 3`),
		"trial_telemetry": queryStrings(t, db, `SELECT exp_id, trial_id, ts, metric_id, metric_value FROM trial_telemetry WHERE trial_id <= 3 ORDER BY 1, 2, 3, 4`),
	}
	if v.revision != "" {
		snap["alembic_version"] = queryStrings(t, db, `SELECT version_num FROM alembic_version`)
	}
	return snap
}

// TestMlosBenchDatabase opens databases written by mlos_bench 0.6.0, 0.6.2
// and its main branch, lists and resumes their experiment, and checks that
// what mlos_bench reads is still there, as mlos_bench reads it.
func TestMlosBenchDatabase(t *testing.T) {
	forEachMlos(t, func(t *testing.T, b backend) {
		for _, v := range mlosVersions {
			t.Run(v.name, func(t *testing.T) {
				testMlosBenchDatabase(t, b, v)
			})
		}
	})
}

func testMlosBenchDatabase(t *testing.T, b backend, v mlosVersion) {
	ctx := context.Background()
	cfg, db := mlosDB(t, b, v)
	before := mlosSnapshot(t, db, v)

	// Opening it used to fail with "table experiment already exists".
	var logs logBuffer
	cfg.Logger = logs.logger()
	s := open(t, cfg)
	if !strings.Contains(logs.String(), "adopted an mlos_bench database") {
		t.Errorf("no adoption logged:\n%s", logs.String())
	}
	if cur, latest, err := s.SchemaVersion(ctx); err != nil || cur != latest {
		t.Fatalf("schema version %d/%d, %v", cur, latest, err)
	}
	want := layout{mlos: true, noTrialRunner: !v.trialRunner, noExpRun: !v.expRun}
	if s.layout != want {
		t.Errorf("layout = %+v, want %+v", s.layout, want)
	}

	// bench results / bench show.
	sums, err := s.Experiments(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums[0].ID != "mlos-exp" || sums[0].Trials[trial.SUCCEEDED] != 2 || sums[0].Trials[trial.FAILED] != 1 || sums[0].Trials[trial.PENDING] != 1 {
		t.Fatalf("Experiments = %+v", sums)
	}
	if got := sums[0].Objectives; len(got) != 1 || got[0].Name != "score" || got[0].Direction != "min" {
		t.Errorf("objectives = %+v", got)
	}
	if sums[0].GitCommit != "aa3bf9c2c52bd5f8c7e6cb4f9a6af2d7a5c1f1e0" || sums[0].RootEnvConfig != "environments/root.jsonc" {
		t.Errorf("experiment info = %+v", sums[0].ExperimentInfo)
	}
	ro, err := s.LoadExperiment(ctx, "mlos-exp")
	if err != nil {
		t.Fatal(err)
	}
	d, err := ro.Trial(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != trial.SUCCEEDED || d.Params["x"] != "20" || d.Params["mode"] != "fast" || d.Metadata["optimizer"] != "MlosCoreOptimizer" ||
		!d.TsEnd.Equal(mlosT0.Add(30*time.Second)) || len(d.Telemetry) != 1 || len(d.History) != 2 || d.History[1].Status != trial.SUCCEEDED {
		t.Errorf("trial 2 = %+v", d)
	}
	if score, ok := d.Results.Float("score"); !ok || score != 7.25 {
		t.Errorf("trial 2 results = %v", d.Results)
	}
	if v.trialRunner && d.TrialRunnerID != 1 {
		t.Errorf("trial 2 runner = %d, want 1", d.TrialRunnerID)
	}

	// Resume: the finished trials feed the optimizer, the pending one runs,
	// and new trials go on from id 5.
	exp, resumed, err := s.Experiment(ctx, storage.ExperimentInfo{ID: "mlos-exp", GitCommit: "aa3bf9c2c52bd5f8c7e6cb4f9a6af2d7a5c1f1e0",
		Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil || !resumed {
		t.Fatalf("resume: %v, resumed %v", err, resumed)
	}
	done, err := exp.CompletedTrials(ctx, 0)
	if err != nil || len(done) != 3 {
		t.Fatalf("CompletedTrials = %d, %v", len(done), err)
	}
	pending, err := exp.PendingTrials(ctx)
	if err != nil || len(pending) != 1 || pending[0].ID != 4 || pending[0].Params["x"] != "10" {
		t.Fatalf("PendingTrials = %+v, %v", pending, err)
	}
	if err := exp.SetTrialRunner(ctx, 4, 2); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := exp.UpdateStatus(ctx, 4, trial.RUNNING, now); err != nil {
		t.Fatal(err)
	}
	if err := exp.Finish(ctx, 4, trial.Outcome{Status: trial.SUCCEEDED, Ts: now.Add(time.Second), Results: map[string]any{"score": 9.5},
		Telemetry: []trial.Telemetry{{Ts: now, Metric: "cpu", Value: 0.25}}}); err != nil {
		t.Fatal(err)
	}
	tr, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "40", "mode": "slow"}, TrialRunnerID: 1, Running: true,
		Metadata: map[string]string{"optimizer": "MlosCoreOptimizer", "repeat_i": "1", "is_defaults": "False", "opt_target_0": "score", "opt_direction_0": "min"}})
	if err != nil {
		t.Fatal(err)
	}
	if tr.ID != 5 {
		t.Errorf("new trial id = %d, want 5", tr.ID)
	}
	if err := exp.Finish(ctx, 5, trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 3.0}}); err != nil {
		t.Fatal(err)
	}
	tr6, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "50", "mode": "slow"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Finish(ctx, tr6.ID, trial.Outcome{Status: trial.FAILED, FailureReason: "exit status 1"}); err != nil {
		t.Fatal(err)
	}
	if err := exp.SetStatus(ctx, trial.SUCCEEDED, time.Time{}); err != nil {
		t.Fatal(err)
	}
	d5, err := exp.Trial(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(d5.History) != 3 || d5.History[0].Status != trial.PENDING || d5.History[1].Status != trial.RUNNING || d5.History[2].Status != trial.SUCCEEDED {
		t.Errorf("trial 5 history = %+v", d5.History)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// What mlos_bench had is unchanged, alembic_version included; the
	// columns its own migrations add were not added.
	after := mlosSnapshot(t, db, v)
	for table, rows := range before {
		if !slices.Equal(rows, after[table]) {
			t.Errorf("%s changed:\nbefore %q\nafter  %q", table, rows, after[table])
		}
	}
	if got := slices.Contains(columns(t, b, db, "trial"), "trial_runner_id"); got != v.trialRunner {
		t.Errorf("trial.trial_runner_id present = %v, want %v", got, v.trialRunner)
	}
	if got := slices.Contains(columns(t, b, db, "experiment"), "status"); got != v.expRun {
		t.Errorf("experiment.status present = %v, want %v", got, v.expRun)
	}
	if v.revision == "" && slices.Contains(tableNames(t, b, db), "alembic_version") {
		t.Error("bench created alembic_version")
	}
	checkMlosReads(t, b, db, v)

	// mlos_bench still writes to it (its inserts name only its columns).
	runner, runnerVal := "", ""
	if v.trialRunner {
		runner, runnerVal = ", trial_runner_id", ", NULL"
	}
	execAll(t, db, []string{
		`INSERT INTO experiment (exp_id, description, root_env_config, git_repo, git_commit) VALUES ('mlos-exp-2', NULL, 'env.jsonc', 'repo', 'c0ffee')`,
		`INSERT INTO objectives (exp_id, optimization_target, optimization_direction) VALUES ('mlos-exp-2', 'latency', 'max')`,
		`INSERT INTO trial (exp_id, trial_id, config_id, ts_start, status` + runner + `) VALUES ('mlos-exp', 7, 1, ` + "'" + mlosTS(b.name, time.Now()) + "'" + `, 'PENDING'` + runnerVal + `)`,
		`INSERT INTO trial_status (exp_id, trial_id, ts, status) VALUES ('mlos-exp', 7, '` + mlosTS(b.name, time.Now()) + `', 'PENDING')`,
	})

	// bench opens it again as its own, and sees what mlos_bench added.
	cfg.Logger = nil
	s = open(t, cfg)
	e2, err := s.LoadExperiment(ctx, "mlos-exp-2")
	if err != nil {
		t.Fatal(err)
	}
	if o := e2.Info().Objectives; len(o) != 1 || o[0].Direction != "max" {
		t.Errorf("mlos-exp-2 objectives = %+v", o)
	}
	e1, err := s.LoadExperiment(ctx, "mlos-exp")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := e1.PendingTrials(ctx); err != nil || len(p) != 1 || p[0].ID != 7 {
		t.Errorf("pending after mlos_bench queued trial 7: %+v, %v", p, err)
	}
}

var sqlalchemySQLiteTime = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$`)

// checkMlosReads reads the database as mlos_bench's storage does after
// bench resumed the experiment (Experiment._setup, load, pending_trials,
// load_telemetry and the trial status history).
func checkMlosReads(t *testing.T, b backend, db *dbsql.DB, v mlosVersion) {
	t.Helper()
	ph := func(q string) string { // mlos_bench binds parameters; so do we
		if b.name == "postgres" {
			return postgresDialect{}.rebind(q)
		}
		return q
	}
	// _setup: resuming continues after the largest trial id.
	got := queryStrings(t, db, ph(`SELECT e.git_repo, e.git_commit, e.root_env_config, MAX(t.trial_id) FROM experiment e
		LEFT OUTER JOIN trial t ON t.exp_id = e.exp_id WHERE e.exp_id = ? GROUP BY e.git_repo, e.git_commit, e.root_env_config`), "mlos-exp")
	if len(got) != 1 || !strings.HasSuffix(got[0], "|6") {
		t.Errorf("_setup query = %q, want max trial id 6", got)
	}
	// load(): the finished trials with their configs and scores.
	loaded := queryStrings(t, db, ph(`SELECT trial_id, config_id, status FROM trial WHERE exp_id = ? AND trial_id > ? AND status IN (?, ?, ?) ORDER BY trial_id`),
		"mlos-exp", -1, "SUCCEEDED", "FAILED", "TIMED_OUT")
	var ids []string
	for _, row := range loaded {
		f := strings.Split(row, "|")
		ids = append(ids, f[0]+":"+f[2])
		cfgRows := queryStrings(t, db, ph(`SELECT param_id, param_value FROM config_param WHERE config_id = ?`), f[1])
		if len(cfgRows) != 2 {
			t.Errorf("trial %s: config %s has %q", f[0], f[1], cfgRows)
		}
		if f[2] == "SUCCEEDED" {
			res := queryStrings(t, db, ph(`SELECT metric_id, metric_value FROM trial_result WHERE exp_id = ? AND trial_id = ?`), "mlos-exp", f[0])
			if len(res) != 1 || !strings.HasPrefix(res[0], "score|") {
				t.Errorf("trial %s results = %q", f[0], res)
			}
		}
	}
	if want := []string{"1:SUCCEEDED", "2:SUCCEEDED", "3:FAILED", "4:SUCCEEDED", "5:SUCCEEDED", "6:FAILED"}; !slices.Equal(ids, want) {
		t.Errorf("load() trials = %q, want %q", ids, want)
	}
	if got := queryStrings(t, db, ph(`SELECT metric_value FROM trial_result WHERE exp_id = ? AND trial_id = ?`), "mlos-exp", 4); !slices.Equal(got, []string{"9.5"}) {
		t.Errorf("trial 4 score = %q", got)
	}
	// pending_trials(): nothing is left queued.
	if got := queryStrings(t, db, ph(`SELECT trial_id FROM trial WHERE exp_id = ? AND ts_end IS NULL AND status IN (?, ?, ?)`), "mlos-exp", "PENDING", "READY", "RUNNING"); len(got) != 0 {
		t.Errorf("pending trials = %q", got)
	}
	// Statuses are mlos_bench's names, finished trials have ts_end, the
	// history has one status per timestamp.
	statuses := map[string]bool{"UNKNOWN": true, "PENDING": true, "READY": true, "RUNNING": true, "SUCCEEDED": true, "CANCELED": true, "FAILED": true, "TIMED_OUT": true}
	for _, row := range queryStrings(t, db, `SELECT trial_id, status, CAST(ts_start AS TEXT), CAST(ts_end AS TEXT) FROM trial`) {
		f := strings.Split(row, "|")
		if !statuses[f[1]] || f[3] == "NULL" {
			t.Errorf("trial row %q", row)
		}
		if b.name == "sqlite" && (!sqlalchemySQLiteTime.MatchString(f[2]) || !sqlalchemySQLiteTime.MatchString(f[3])) {
			t.Errorf("trial row %q: timestamps not in SQLAlchemy's SQLite format", row)
		}
	}
	hist := queryStrings(t, db, ph(`SELECT ts, status FROM trial_status WHERE exp_id = ? AND trial_id = ? ORDER BY ts`), "mlos-exp", 5)
	if len(hist) != 3 || !strings.HasSuffix(hist[0], "|PENDING") || !strings.HasSuffix(hist[1], "|RUNNING") || !strings.HasSuffix(hist[2], "|SUCCEEDED") {
		t.Errorf("trial 5 status history = %q", hist)
	}
	for _, row := range queryStrings(t, db, `SELECT CAST(ts AS TEXT), status FROM trial_status UNION ALL SELECT CAST(ts AS TEXT), metric_id FROM trial_telemetry`) {
		f := strings.Split(row, "|")
		if b.name == "sqlite" && !sqlalchemySQLiteTime.MatchString(f[0]) {
			t.Errorf("status/telemetry row %q: timestamp not in SQLAlchemy's SQLite format", row)
		}
	}
	if v.expRun {
		got := queryStrings(t, db, `SELECT status, ts_end IS NOT NULL, driver_name, driver_pid FROM experiment WHERE exp_id = 'mlos-exp'`)
		host, _ := os.Hostname()
		if r := []rune(host); len(r) > 40 {
			host = string(r[:40])
		}
		if want := fmt.Sprintf("SUCCEEDED|%v|%s|%d", map[string]string{"sqlite": "1", "postgres": "true"}[b.name], host, os.Getpid()); !slices.Equal(got, []string{want}) {
			t.Errorf("experiment status = %q, want %q", got, want)
		}
	}
}

// TestMlosBenchDatabaseRefused: databases with mlos_bench's tables that
// bench cannot adopt are refused, and left exactly as they were.
func TestMlosBenchDatabaseRefused(t *testing.T) {
	main := mlosVersions[2]
	cases := []struct {
		name  string
		setup []string
		want  string
	}{
		{"unknown revision", []string{`UPDATE alembic_version SET version_num = '0123456789ab'`}, `revision "0123456789ab"`},
		{"missing table", []string{`DROP TABLE trial_telemetry`}, "lacks trial_telemetry."},
		{"bench table", []string{`CREATE TABLE worker (exp_id TEXT)`}, "already has bench's table worker"},
		{"revision mismatch", []string{`UPDATE alembic_version SET version_num = 'f83fb8ae7fc4'`}, "do not match its mlos_bench schema revision f83fb8ae7fc4"},
	}
	forEachMlos(t, func(t *testing.T, b backend) {
		for _, c := range cases {
			t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
				cfg, db := mlosDB(t, b, main)
				execAll(t, db, c.setup)
				tables := tableNames(t, b, db)
				var sum [32]byte
				if b.name == "sqlite" {
					db.Close()
					sum = fileSum(t, cfg.Database)
				}
				cfg.Logger = quiet
				for _, lazy := range []bool{false, true} {
					cfg.LazySchemaCreate = lazy
					s, err := Open(context.Background(), cfg)
					if err == nil {
						s.Close()
						t.Fatalf("lazy=%v: opened", lazy)
					}
					if !errors.Is(err, ErrForeignSchema) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "left it unchanged") {
						t.Errorf("lazy=%v: error %q, want ErrForeignSchema with %q", lazy, err, c.want)
					}
				}
				if b.name == "sqlite" {
					if fileSum(t, cfg.Database) != sum {
						t.Error("the file changed")
					}
					for _, suffix := range []string{"-wal", "-shm", "-journal"} {
						if _, err := os.Stat(cfg.Database + suffix); err == nil {
							t.Errorf("%s%s was created", cfg.Database, suffix)
						}
					}
					db = rawDB(t, b, cfg)
				}
				if got := tableNames(t, b, db); !slices.Equal(got, tables) {
					t.Errorf("tables %q, want %q (no version table left behind)", got, tables)
				}
			})
		}
	})
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestMlosBenchDatabaseLeftover: a file where an earlier bench failed to
// create its tables over mlos_bench's ("table experiment already exists")
// and left its version table behind is adopted.
func TestMlosBenchDatabaseLeftover(t *testing.T) {
	forEachMlos(t, func(t *testing.T, b backend) {
		cfg, db := mlosDB(t, b, mlosVersions[0])
		ts := "TIMESTAMP DEFAULT (datetime('now'))"
		id := "INTEGER PRIMARY KEY AUTOINCREMENT"
		if b.name == "postgres" {
			ts, id = "timestamp NOT NULL DEFAULT now()", "integer PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY"
		}
		execAll(t, db, []string{
			`CREATE TABLE bench_schema_version (id ` + id + `, version_id INTEGER NOT NULL, is_applied BOOLEAN NOT NULL, tstamp ` + ts + `)`,
			`INSERT INTO bench_schema_version (version_id, is_applied) VALUES (0, TRUE)`,
		})
		s := open(t, cfg)
		if cur, latest, err := s.SchemaVersion(context.Background()); err != nil || cur != latest {
			t.Fatalf("schema version %d/%d, %v", cur, latest, err)
		}
		if sums, err := s.Experiments(context.Background()); err != nil || len(sums) != 1 {
			t.Fatalf("Experiments = %+v, %v", sums, err)
		}
	})
}

// TestMlosBenchAdoptionAtomic: adoption that fails part way leaves the
// database as it was: no column, table or version row of bench.
func TestMlosBenchAdoptionAtomic(t *testing.T) {
	forEachMlos(t, func(t *testing.T, b backend) {
		v := mlosVersions[1]
		cfg, db := mlosDB(t, b, v)
		// An index of the name adoption creates last makes it fail after
		// it added the columns and tables.
		execAll(t, db, []string{`CREATE INDEX trial_unfinished_idx ON config (config_hash)`})
		tables := tableNames(t, b, db)
		trialCols := columns(t, b, db, "trial")
		before := mlosSnapshot(t, db, v)
		cfg.Logger = quiet
		s, err := Open(context.Background(), cfg)
		if err == nil {
			s.Close()
			t.Fatal("opened")
		}
		if !strings.Contains(err.Error(), "left unchanged") || !strings.Contains(err.Error(), "trial_unfinished_idx") {
			t.Errorf("error %q", err)
		}
		if got := tableNames(t, b, db); !slices.Equal(got, tables) {
			t.Errorf("tables %q, want %q", got, tables)
		}
		if got := columns(t, b, db, "trial"); !slices.Equal(got, trialCols) {
			t.Errorf("trial columns %q, want %q", got, trialCols)
		}
		after := mlosSnapshot(t, db, v)
		for table, rows := range before {
			if !slices.Equal(rows, after[table]) {
				t.Errorf("%s changed", table)
			}
		}
		// Once the obstacle is gone it is adopted.
		execAll(t, db, []string{`DROP INDEX trial_unfinished_idx`})
		open(t, cfg)
	})
}

// TestMigrationFailureLeavesVersion: a bench migration that fails part way
// leaves the database at the version before it, without any of its
// statements applied.
func TestMigrationFailureLeavesVersion(t *testing.T) {
	// Not on MySQL: its DDL statements commit implicitly, so a failing
	// migration can leave its earlier statements applied (docs/storage.md).
	forEachMlos(t, func(t *testing.T, b backend) {
		cfg := b.fresh(t)
		cfg.Logger = quiet
		open(t, cfg).Close()

		dir := "migrations/" + b.name
		files := migrationsMapFS(t, dir)
		files[dir+"/99999_broken.sql"] = &fstest.MapFile{Data: []byte(`-- +goose Up
ALTER TABLE trial ADD COLUMN half_done TEXT;
CREATE TABLE half_done (id INTEGER);
INSERT INTO no_such_table VALUES (1);
-- +goose Down
`)}
		migrationFiles = files
		defer func() { migrationFiles = migrationsFS }()

		s, err := Open(context.Background(), cfg)
		if err == nil {
			s.Close()
			t.Fatal("opened with a failing migration")
		}
		if !strings.Contains(err.Error(), "no_such_table") {
			t.Errorf("error %q", err)
		}
		migrationFiles = migrationsFS
		db := rawDB(t, b, cfg)
		if slices.Contains(columns(t, b, db, "trial"), "half_done") || slices.Contains(tableNames(t, b, db), "half_done") {
			t.Error("the failed migration was partly applied")
		}
		s = open(t, cfg)
		if cur, latest, err := s.SchemaVersion(context.Background()); err != nil || cur != latest {
			t.Errorf("schema version %d/%d, %v", cur, latest, err)
		}
	})
}

// TestMlosBenchUpgradedAfterAdoption: mlos_bench's own migrations still
// apply to an adopted database (they add the columns bench left to them),
// and bench then records what goes in them.
func TestMlosBenchUpgradedAfterAdoption(t *testing.T) {
	forEachMlos(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg, db := mlosDB(t, b, mlosVersions[0])
		cfg.Logger = quiet
		s := open(t, cfg)
		if !s.layout.noTrialRunner || !s.layout.noExpRun {
			t.Fatalf("layout %+v", s.layout)
		}
		s.Close()
		// What Alembic runs for mlos_bench 0.6.0 -> main: d2a708351ba8
		// (nothing), f83fb8ae7fc4, 8928a401115b, then the stamp.
		ts := "DATETIME"
		if b.name == "postgres" {
			ts = "TIMESTAMP WITHOUT TIME ZONE"
		}
		execAll(t, db, []string{
			`CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))`,
			`ALTER TABLE trial ADD COLUMN trial_runner_id INTEGER`,
			`ALTER TABLE experiment ADD COLUMN ts_start ` + ts,
			`ALTER TABLE experiment ADD COLUMN ts_end ` + ts,
			`ALTER TABLE experiment ADD COLUMN status VARCHAR(16)`,
			`ALTER TABLE experiment ADD COLUMN driver_name VARCHAR(40)`,
			`ALTER TABLE experiment ADD COLUMN driver_pid INTEGER`,
			`INSERT INTO alembic_version (version_num) VALUES ('8928a401115b')`,
		})
		s = open(t, cfg)
		if s.layout != (layout{mlos: true}) {
			t.Fatalf("layout after mlos_bench's upgrade %+v", s.layout)
		}
		exp, _, err := s.Experiment(ctx, storage.ExperimentInfo{ID: "mlos-exp", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "1", "mode": "fast"}, TrialRunnerID: 3, Running: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := exp.Finish(ctx, tr.ID, trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1.0}}); err != nil {
			t.Fatal(err)
		}
		if err := exp.SetStatus(ctx, trial.SUCCEEDED, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if got := queryStrings(t, db, `SELECT trial_runner_id FROM trial WHERE trial_id = 5`); !slices.Equal(got, []string{"3"}) {
			t.Errorf("trial_runner_id = %q", got)
		}
		if got := queryStrings(t, db, `SELECT status, driver_pid FROM experiment`); !slices.Equal(got, []string{fmt.Sprintf("SUCCEEDED|%d", os.Getpid())}) {
			t.Errorf("experiment = %q", got)
		}
	})
}

// TestBenchDatabaseLayout: bench's own databases, new or migrated from
// version 1, are not taken for mlos_bench's.
func TestBenchDatabaseLayout(t *testing.T) {
	forEachMlos(t, func(t *testing.T, b backend) {
		cfg := b.fresh(t)
		cfg.Logger = quiet
		s := open(t, cfg)
		if s.layout != (layout{}) {
			t.Errorf("new database: layout %+v", s.layout)
		}
		migrateTo(t, s, 1)
		s.Close()
		var logs logBuffer
		cfg.Logger = logs.logger()
		s = open(t, cfg)
		if s.layout != (layout{}) {
			t.Errorf("migrated from version 1: layout %+v", s.layout)
		}
		if cur, latest, err := s.SchemaVersion(context.Background()); err != nil || cur != latest {
			t.Errorf("schema version %d/%d, %v", cur, latest, err)
		}
		if strings.Contains(logs.String(), "adopted") {
			t.Errorf("bench's database adopted:\n%s", logs.String())
		}
	})
}

// TestMlosBenchAdoptionConcurrent: several bench processes opening an
// mlos_bench database at the same moment adopt it once.
func TestMlosBenchAdoptionConcurrent(t *testing.T) {
	forEachMlos(t, func(t *testing.T, b backend) {
		cfg, db := mlosDB(t, b, mlosVersions[1])
		var logs logBuffer
		cfg.Logger = logs.logger()
		const n = 4
		errs := make(chan error, n)
		for range n {
			go func() {
				s, err := Open(context.Background(), cfg)
				if err == nil {
					err = s.Close()
				}
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		if got := strings.Count(logs.String(), "adopted an mlos_bench database"); got != 1 {
			t.Errorf("adopted %d times", got)
		}
		// Versions 0..mlosAdoptVersion by adoption, then the later
		// migrations, each once.
		later, err := fs.ReadDir(migrationFiles, "migrations/sqlite")
		if err != nil {
			t.Fatal(err)
		}
		if got := queryStrings(t, db, `SELECT COUNT(*) FROM bench_schema_version`); !slices.Equal(got, []string{fmt.Sprint(len(later) + 1)}) {
			t.Errorf("version rows %q", got)
		}
	})
}

// forEachMlos runs test on the databases mlos_bench databases are adopted
// on: SQLite and PostgreSQL (bench does not look for mlos_bench's tables in
// a MySQL database; see docs/storage.md).
func forEachMlos(t *testing.T, test func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range []backend{sqliteBackend, postgresBackend} {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

// TestMlosBenchDatabaseOnMySQLRefused: an mlos_bench database on MySQL is
// refused before anything is written (MySQL DDL cannot be rolled back, so
// it is not adopted), and bench's own tables are not created next to it.
func TestMlosBenchDatabaseOnMySQLRefused(t *testing.T) {
	cfg := freshMySQL(t)
	cfg.Logger = quiet
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.DBName = cfg.Username, cfg.Password, "tcp", cfg.Database
	mc.Addr = fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	admin := dbsql.OpenDB(conn)
	defer admin.Close()
	q := func(stmt string) {
		t.Helper()
		if _, err := admin.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	q(`CREATE TABLE experiment (exp_id VARCHAR(512) NOT NULL, description VARCHAR(1024), root_env_config VARCHAR(1024) NOT NULL,
		git_repo VARCHAR(1024) NOT NULL, git_commit VARCHAR(40) NOT NULL, PRIMARY KEY (exp_id))`)
	q(`INSERT INTO experiment VALUES ('mlos-exp', 'd', 'root.jsonc', 'repo', 'abc')`)
	for _, stmt := range mlosDDL("postgres", mlosVersions[0]) {
		if !strings.Contains(stmt, "TABLE experiment ") {
			q(mysqlTypes(stmt))
		}
	}
	tablesBefore := queryStrings(t, admin, `SELECT table_name FROM information_schema.tables WHERE table_schema = ? ORDER BY table_name`, cfg.Database)
	s, err := Open(context.Background(), cfg)
	if err == nil {
		s.Close()
		t.Fatal("an mlos_bench database on MySQL was opened")
	}
	if !errors.Is(err, ErrForeignSchema) || !strings.Contains(err.Error(), "SQLite and PostgreSQL only") {
		t.Errorf("error %v", err)
	}
	if after := queryStrings(t, admin, `SELECT table_name FROM information_schema.tables WHERE table_schema = ? ORDER BY table_name`, cfg.Database); !slices.Equal(after, tablesBefore) {
		t.Errorf("tables changed: %v, then %v", tablesBefore, after)
	}
}

// mysqlTypes turns the PostgreSQL types of the test DDL into MySQL's.
func mysqlTypes(stmt string) string {
	return strings.NewReplacer("TIMESTAMP WITHOUT TIME ZONE", "DATETIME", "TIMESTAMP WITH TIME ZONE", "DATETIME", "DATETIME WITH TIME ZONE", "DATETIME", "TIMESTAMP", "DATETIME", "SERIAL", "INTEGER AUTO_INCREMENT", "BOOLEAN", "BOOL", "DOUBLE PRECISION", "DOUBLE", "VARCHAR(512)", "VARCHAR(255)", "VARCHAR(1024)", "VARCHAR(255)").Replace(stmt)
}

// migrationsMapFS copies the embedded migrations of dir (a dialect's
// folder) into a MapFS that a test can add migrations to.
func migrationsMapFS(t *testing.T, dir string) fstest.MapFS {
	t.Helper()
	files := fstest.MapFS{}
	entries, err := migrationsFS.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := migrationsFS.ReadFile(dir + "/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		files[dir+"/"+e.Name()] = &fstest.MapFile{Data: data}
	}
	return files
}
