package ui

import (
	"context"
	"crypto/rand"
	dbsql "database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/storage"
)

// The dashboard reads through the storage interface: the same pages and
// live updates from PostgreSQL and MySQL (scripts/testenv/postgres.sh and
// mariadb.sh start them; without, these tests skip).

func TestPagesPostgres(t *testing.T) {
	admin := testenv.Get(t, "BENCH_TEST_PG_URL")
	cfg, err := storage.ParseURL(admin)
	if err != nil {
		t.Fatal(err)
	}
	db, err := dbsql.Open("pgx", admin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // after the drop (cleanups run last first)
	cfg.Database = freshDatabase(t, db, " WITH (FORCE)")
	testPagesOn(t, cfg)
}

func TestPagesMySQL(t *testing.T) {
	cfg, _ := freshMySQL(t)
	testPagesOn(t, cfg)
}

// freshMySQL is a storage config for a database of its own on the test
// MySQL/MariaDB server (BENCH_TEST_MYSQL_URL), dropped after the test,
// and a connection to that server.
func freshMySQL(t *testing.T) (storage.Config, *dbsql.DB) {
	t.Helper()
	cfg, err := storage.ParseURL(testenv.Get(t, "BENCH_TEST_MYSQL_URL"))
	if err != nil {
		t.Fatal(err)
	}
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr = cfg.Username, cfg.Password, "tcp", fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	db := dbsql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	cfg.Database = freshDatabase(t, db, "")
	return cfg, db
}

// freshDatabase creates a database of its own on a test server and drops
// it after the test.
func freshDatabase(t *testing.T, db *dbsql.DB, dropSuffix string) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "bench_ui_test_" + hex.EncodeToString(b)
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP DATABASE " + name + dropSuffix); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	return name
}

func testPagesOn(t *testing.T, cfg storage.Config) {
	st, err := storage.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := fixtureOn(t, st)
	for i := 0; i < 6; i++ {
		f.add(t, true)
	}
	running := f.add(t, false)
	srv := httptest.NewServer(New(f.st, Options{Log: quiet}))
	defer srv.Close()
	code, page := get(t, srv, "/e/exp-1")
	if code != 200 {
		t.Fatalf("experiment page: %d\n%s", code, page)
	}
	if got := chartMarks(t, page)["trace"]; fmt.Sprint(got) != "[6 6]" {
		t.Errorf("trace marks %v, want [6 6]", got)
	}
	f.finish(t, running)
	// On PostgreSQL a change is read once every transaction older than it
	// has ended, on the whole server (the feed's bound is the snapshot's
	// xmin, storage/sql feed.go): a test of another package holding a
	// transaction open delays it. So the page is asked again until it
	// shows the trial, within a generous deadline.
	var marks []int
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		_, live := get(t, srv, "/e/exp-1/live")
		if marks = chartMarks(t, live)["trace"]; fmt.Sprint(marks) == "[7 7]" || time.Now().After(deadline) {
			break
		}
	}
	if fmt.Sprint(marks) != "[7 7]" {
		t.Errorf("after one more trial the trace has %v marks, want [7 7]", marks)
	}
}

// TestMlosBenchDatabase: an mlos_bench database (0.6.2's layout, in
// SQLite) is shown read-only, without a change feed: trials mlos_bench
// writes while the dashboard runs appear on the next read (at most a
// second later), and the file is not adopted.
func TestMlosBenchDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mlos.db")
	raw, err := dbsql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	exec := func(stmts ...string) {
		t.Helper()
		for _, s := range stmts {
			if _, err := raw.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	exec(`CREATE TABLE experiment (exp_id VARCHAR(512) NOT NULL, description VARCHAR(1024), root_env_config VARCHAR(1024) NOT NULL,
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
		`INSERT INTO experiment VALUES ('mlos-exp', 'written by mlos_bench', 'env.jsonc', 'repo', 'abc')`,
		`INSERT INTO objectives VALUES ('mlos-exp', 'score', 'min', NULL)`)
	t0 := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	addTrial := func(id int, score string) {
		at := func(s int) string {
			return t0.Add(time.Duration(id*100+s) * time.Second).Format("2006-01-02 15:04:05.000000")
		}
		exec(fmt.Sprintf(`INSERT INTO config (config_id, config_hash) VALUES (%d, '%064x')`, id, id),
			fmt.Sprintf(`INSERT INTO config_param VALUES (%d, 'x', '%d'), (%d, 'mode', '%s')`, id, id*10, id, []string{"a", "b"}[id%2]),
			fmt.Sprintf(`INSERT INTO trial VALUES ('mlos-exp', %d, %d, 1, '%s', '%s', 'SUCCEEDED')`, id, id, at(0), at(10)),
			fmt.Sprintf(`INSERT INTO trial_status VALUES ('mlos-exp', %d, '%s', 'RUNNING'), ('mlos-exp', %d, '%s', 'SUCCEEDED')`, id, at(1), id, at(10)),
			fmt.Sprintf(`INSERT INTO trial_result VALUES ('mlos-exp', %d, 'score', '%s')`, id, score))
	}
	addTrial(1, "12.5")
	addTrial(2, "7.25")
	addTrial(3, "9")

	st, err := storage.Open(context.Background(), storage.Config{DriverName: "sqlite", Database: path, ReadOnly: true, NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(New(st, Options{Log: quiet}))
	defer srv.Close()
	code, page := get(t, srv, "/e/mlos-exp")
	if code != 200 {
		t.Fatalf("experiment page: %d\n%s", code, page)
	}
	if got := chartMarks(t, page)["trace"]; fmt.Sprint(got) != "[3]" {
		t.Errorf("trace marks %v, want [3]", got)
	}
	if !strings.Contains(page, "score = 7.25 (trial 2)") {
		t.Error("best so far is not trial 2's 7.25")
	}
	addTrial(4, "3.5") // mlos_bench writes on
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, live := get(t, srv, "/e/mlos-exp/live")
		if fmt.Sprint(chartMarks(t, live)["trace"]) == "[4]" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("trial 4 never showed: trace marks %v", chartMarks(t, live)["trace"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	var n int
	raw.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'bench_feed'`).Scan(&n)
	if n != 0 {
		t.Error("the mlos_bench database was changed (bench_feed created)")
	}
}

// TestReadOnlyMySQLPollsSteady: a read-only dashboard on MySQL/MariaDB
// numbers no change (it writes nothing), so its store returns the changes
// waiting for a number in every poll; the dashboard counts a trial as
// changed only when it differs from the one it holds: the version moves
// once when a trial finishes, then stays, so that an open page does not
// fetch and swap in the live part at every poll for ever.
func TestReadOnlyMySQLPollsSteady(t *testing.T) {
	cfg, db := freshMySQL(t)
	ctx := context.Background()
	w, err := storage.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := fixtureOn(t, w)
	for i := 0; i < 3; i++ {
		f.add(t, true)
	}
	running := f.add(t, false)
	rcfg := cfg
	rcfg.ReadOnly = true
	r, err := storage.Open(ctx, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	srv := httptest.NewServer(New(r, Options{Log: quiet}))
	defer srv.Close()
	type changes struct {
		Seq     int64 `json:"seq"`
		Version int64 `json:"version"`
	}
	poll := func(since int64) changes {
		t.Helper()
		code, body := get(t, srv, fmt.Sprintf("/e/exp-1/changes?since=%d", since))
		var c changes
		if code != 200 || json.Unmarshal([]byte(body), &c) != nil {
			t.Fatalf("changes: %d %s", code, body)
		}
		return c
	}
	if code, page := get(t, srv, "/e/exp-1"); code != 200 {
		t.Fatalf("experiment page: %d\n%s", code, page)
	}
	// Nobody has numbered this experiment's changes (no driver polled), so
	// the dashboard has no feed number yet and reads every trial again
	// each second: the finish is seen within a second or so.
	c0 := poll(0)
	f.finish(t, running)
	c1 := c0
	for deadline := time.Now().Add(time.Minute); c1.Version == c0.Version; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a finished trial did not change the version: %+v", c0)
		}
		c1 = poll(c0.Seq)
	}
	// Then nothing changes: polls across several re-reads keep the version.
	for i := 0; i < 3; i++ {
		time.Sleep(1100 * time.Millisecond) // past the once-a-second re-read
		if c := poll(c1.Seq); c.Version != c1.Version {
			t.Fatalf("poll %d with nothing changed moved the version: %+v then %+v", i+1, c1, c)
		}
	}
	// A feed number (a writing reader, as a driver whose experiment has
	// other processes, numbers the waiting changes): the read-only
	// dashboard then reads the still-waiting changes in every poll, and
	// they are not changes either.
	wexp, err := w.LoadExperiment(ctx, "exp-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := wexp.Changes(ctx, 1); err != nil {
		t.Fatal(err)
	}
	late := f.add(t, false)
	f.finish(t, late)
	c2 := c1
	for deadline := time.Now().Add(time.Minute); c2.Version == c1.Version; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a trial finished after the numbering did not change the version: %+v", c1)
		}
		c2 = poll(c1.Seq)
	}
	if c2.Seq == 0 {
		t.Fatalf("the dashboard should have the feed's number by now: %+v", c2)
	}
	for i := 0; i < 3; i++ {
		if c := poll(c2.Seq); c.Version != c2.Version {
			t.Fatalf("poll %d after the numbering with nothing changed moved the version: %+v then %+v", i+1, c2, c)
		}
	}
	var pending int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + cfg.Database + ".trial WHERE bench_seq IS NULL").Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending == 0 {
		t.Errorf("the read-only dashboard numbered the waiting changes (it should write nothing)")
	}
	if _, live := get(t, srv, "/e/exp-1/live"); fmt.Sprint(chartMarks(t, live)["trace"]) != "[5 5]" {
		t.Errorf("after the running trials finished the trace has %v marks, want [5 5]", chartMarks(t, live)["trace"])
	}
}
