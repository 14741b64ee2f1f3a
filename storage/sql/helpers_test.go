package sql

import (
	"context"
	"crypto/rand"
	dbsql "database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/benchtune/bench/trial"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/internal/testutil"
	"github.com/benchtune/bench/storage"
)

// backend makes configs of fresh, empty databases of one kind.
type backend struct {
	name string
	// fresh returns the config of a new empty database, removed at the end
	// of the test.
	fresh func(t testing.TB) storage.Config
	// failTelemetry installs a trigger that makes inserting a telemetry
	// row with metric "boom" fail inside the transaction.
	failTelemetry string
}

var sqliteBackend = backend{
	name: "sqlite",
	fresh: func(t testing.TB) storage.Config {
		return storage.Config{DriverName: "sqlite", Database: filepath.Join(t.TempDir(), "bench.sqlite")}
	},
	failTelemetry: `CREATE TRIGGER boom BEFORE INSERT ON trial_telemetry WHEN NEW.metric_id = 'boom'
		BEGIN SELECT RAISE(ABORT, 'injected telemetry failure'); END`,
}

var postgresBackend = backend{
	name:  "postgres",
	fresh: freshPostgres,
	failTelemetry: `CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.metric_id = 'boom' THEN RAISE EXCEPTION 'injected telemetry failure'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER boom BEFORE INSERT ON trial_telemetry FOR EACH ROW EXECUTE FUNCTION boom()`,
}

var mysqlBackend = backend{
	name:  "mysql",
	fresh: freshMySQL,
	failTelemetry: `CREATE TRIGGER boom BEFORE INSERT ON trial_telemetry FOR EACH ROW
		BEGIN IF NEW.metric_id = 'boom' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'injected telemetry failure'; END IF; END`,
}

// forEach runs test against SQLite, against PostgreSQL when
// BENCH_TEST_PG_URL is set (scripts/testenv/postgres.sh) and against
// MySQL when BENCH_TEST_MYSQL_URL is set (scripts/testenv/mariadb.sh).
func forEach(t *testing.T, test func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range []backend{sqliteBackend, postgresBackend, mysqlBackend} {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

// freshPostgres creates a database of its own on the test server.
func freshPostgres(t testing.TB) storage.Config {
	t.Helper()
	admin := testenv.Get(t, "BENCH_TEST_PG_URL")
	cfg, err := storage.ParseURL(admin)
	if err != nil {
		t.Fatalf("BENCH_TEST_PG_URL: %v", err)
	}
	db, err := dbsql.Open("pgx", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "bench_test_" + hex.EncodeToString(b)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		db, err := dbsql.Open("pgx", admin)
		if err != nil {
			t.Error(err)
			return
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	cfg.Database = name
	return cfg
}

// freshMySQL creates a database of its own on the MySQL test server.
func freshMySQL(t testing.TB) storage.Config {
	t.Helper()
	cfg, err := storage.ParseURL(testenv.Get(t, "BENCH_TEST_MYSQL_URL"))
	if err != nil {
		t.Fatalf("BENCH_TEST_MYSQL_URL: %v", err)
	}
	db := mysqlAdmin(t, cfg)
	defer db.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "bench_test_" + hex.EncodeToString(b)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		db := mysqlAdmin(t, cfg)
		defer db.Close()
		if _, err := db.ExecContext(ctx, "DROP DATABASE "+name); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	cfg.Database = name
	return cfg
}

// mysqlAdmin connects to the MySQL test server without a database.
func mysqlAdmin(t testing.TB, cfg storage.Config) *dbsql.DB {
	t.Helper()
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net = cfg.Username, cfg.Password, "tcp"
	mc.Addr = fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	return dbsql.OpenDB(conn)
}

// open opens cfg and closes it at the end of the test.
func open(t testing.TB, cfg storage.Config) *Store {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open(%v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// logBuffer collects log output safely from several goroutines.
type logBuffer struct{ testutil.SyncBuffer }

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func newExperiment(t testing.TB, s storage.Storage, id string) storage.Experiment {
	t.Helper()
	exp, resumed, err := s.Experiment(context.Background(), storage.ExperimentInfo{
		ID:            id,
		Description:   "test " + id,
		RootEnvConfig: "environments/root.jsonc",
		GitRepo:       "https://example.com/repo.git",
		GitCommit:     "0123456789abcdef0123456789abcdef01234567",
		Objectives:    []storage.Objective{{Name: "score", Direction: "min"}},
	})
	if err != nil {
		t.Fatalf("Experiment(%q): %v", id, err)
	}
	if resumed {
		t.Fatalf("Experiment(%q) resumed a new experiment", id)
	}
	return exp
}

func mustTrial(t testing.TB, exp storage.Experiment, params map[string]string) storage.Trial {
	t.Helper()
	tr, err := exp.NewTrial(context.Background(), storage.TrialSpec{Params: params})
	if err != nil {
		t.Fatalf("NewTrial: %v", err)
	}
	return tr
}

func mustFinish(t testing.TB, exp storage.Experiment, id int, status trial.Status, results map[string]any) {
	t.Helper()
	if err := exp.Finish(context.Background(), id, storage.TrialOutcome{Status: status, Results: results}); err != nil {
		t.Fatalf("Finish(%d): %v", id, err)
	}
}

func mustDetail(t testing.TB, exp storage.Experiment, id int) storage.TrialDetail {
	t.Helper()
	d, err := exp.Trial(context.Background(), id)
	if err != nil {
		t.Fatalf("Trial(%d): %v", id, err)
	}
	return d
}

func wantErr(t testing.TB, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func ids(trials []storage.Trial) []int {
	out := make([]int, len(trials))
	for i, tr := range trials {
		out[i] = tr.ID
	}
	return out
}

func count(t testing.TB, s *Store, q string, args ...any) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRowContext(context.Background(), s.dialect.rebind(q), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// quiet drops the storage's informational logs in tests.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var t0 = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func fmtIDs(trials []storage.Trial) string { return fmt.Sprint(ids(trials)) }
