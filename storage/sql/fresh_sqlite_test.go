package sql

import (
	"context"
	dbsql "database/sql"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/storage"
)

// sqliteSchemaDump is what a schema is made of in an SQLite file: every
// object's type, name, table and SQL text (sqlite_master, without page
// numbers), the version table's rows (without their timestamps) and the
// autoincrement counters.
func sqliteSchemaDump(t *testing.T, path string) []string {
	t.Helper()
	db, err := dbsql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	for _, q := range []string{
		`SELECT 'master', type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name`,
		`SELECT 'version', id, version_id, is_applied, '' FROM ` + versionTable + ` ORDER BY id`,
		`SELECT 'sequence', name, seq, '', '' FROM sqlite_sequence ORDER BY name`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a, b, c, d, e string
			if err := rows.Scan(&a, &b, &c, &d, &e); err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.Join([]string{a, b, c, d, e}, " | "))
		}
		rows.Close()
	}
	return out
}

// openFresh opens (creates) a new SQLite file, its schema created in one
// transaction or migrated by goose one migration at a time.
func openFresh(t *testing.T, oneTx bool, logs *logBuffer) string {
	t.Helper()
	sqliteInOneTx = oneTx
	defer func() { sqliteInOneTx = true }()
	path := filepath.Join(t.TempDir(), "bench.sqlite")
	cfg := storage.Config{DriverName: "sqlite", Database: path, Logger: quiet}
	if logs != nil {
		cfg.Logger = logs.logger()
	}
	s := open(t, cfg)
	if cur, latest, err := s.SchemaVersion(context.Background()); err != nil || cur != latest {
		t.Fatalf("schema version %d of %d: %v", cur, latest, err)
	}
	newExperiment(t, s, "e") // the schema works
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A new SQLite file created in one transaction has exactly the schema
// that goose's migrations, applied one at a time, give it: the same
// sqlite_master (every table, index and column, in the same SQL text),
// the same version rows and counters.
func TestFreshSQLiteSchemaIsTheMigratedOne(t *testing.T) {
	var logs logBuffer
	fast := sqliteSchemaDump(t, openFresh(t, true, &logs))
	if !strings.Contains(logs.String(), "transactions=1") {
		t.Fatalf("the schema was not created in one transaction:\n%s", logs.String())
	}
	migrated := sqliteSchemaDump(t, openFresh(t, false, nil))
	if diff := cmp.Diff(migrated, fast); diff != "" {
		t.Errorf("schema created in one transaction (+) against migrated (-):\n%s", diff)
	}
	if len(fast) < 20 {
		t.Errorf("a schema of %d objects and rows: %v", len(fast), fast)
	}
}

// The one-transaction creation takes its migrations from the list goose
// reads: a migration added to it is applied (and recorded) the same way,
// and one with another goose annotation leaves the file to goose, with
// the same result.
func TestFreshSQLiteFollowsTheMigrationList(t *testing.T) {
	dir := "migrations/sqlite"
	base := migrationsMapFS(t, dir)
	defer func() { migrationFiles = migrationsFS }()
	for _, tc := range []struct {
		name, extra string
		oneTx       bool
	}{
		{"plain", "-- +goose Up\n-- a comment\nCREATE TABLE later_one (id INTEGER);\nCREATE INDEX later_one_idx ON later_one (id);\n-- +goose Down\nDROP TABLE later_one;\n", true},
		{"annotated", "-- +goose Up\n-- +goose StatementBegin\nCREATE TABLE later_one (id INTEGER);\n-- +goose StatementEnd\n-- +goose Down\nDROP TABLE later_one;\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := fstest.MapFS{}
			for k, v := range base {
				files[k] = v
			}
			files[dir+"/99990_later_one.sql"] = &fstest.MapFile{Data: []byte(tc.extra)}
			migrationFiles = files
			var logs logBuffer
			fast := sqliteSchemaDump(t, openFresh(t, true, &logs))
			if got := strings.Contains(logs.String(), "transactions=1"); got != tc.oneTx {
				t.Errorf("created in one transaction: %v, want %v\n%s", got, tc.oneTx, logs.String())
			}
			migrated := sqliteSchemaDump(t, openFresh(t, false, nil))
			if diff := cmp.Diff(migrated, fast); diff != "" {
				t.Errorf("(+) against migrated (-):\n%s", diff)
			}
			joined := strings.Join(fast, "\n")
			if !strings.Contains(joined, "later_one_idx") && tc.oneTx || !strings.Contains(joined, "| 99990 | 1 |") {
				t.Errorf("the added migration is missing:\n%s", joined)
			}
		})
	}
}

func TestGooseUp(t *testing.T) {
	for _, tc := range []struct {
		in, up string
		ok     bool
	}{
		{"-- head\n-- +goose Up\nA;\nB;\n-- +goose Down\nC;\n", "A;\nB;\n", true},
		{"-- +goose Up\nSELECT 1;", "SELECT 1;", true},
		{"-- +goose Up\n-- +goose StatementBegin\nA;\n-- +goose StatementEnd\n-- +goose Down\n", "", false},
		{"-- +goose NO TRANSACTION\n-- +goose Up\nA;\n", "", false},
		{"A;\n", "", false},
	} {
		up, ok := gooseUp(tc.in)
		if up != tc.up || ok != tc.ok {
			t.Errorf("gooseUp(%q) = %q, %v; want %q, %v", tc.in, up, ok, tc.up, tc.ok)
		}
	}
}
