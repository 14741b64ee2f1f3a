package sql

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strings"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// sqliteInOneTx: an SQLite database is migrated in one write transaction
// (migrateSQLite). Tests turn it off to build the same database through
// goose, one migration at a time.
var sqliteInOneTx = true

// migrateSQLite brings an SQLite database to bench's latest schema in one
// write transaction (BEGIN IMMEDIATE: the file's write lock, held from the
// start): it adopts an mlos_bench database, reads the versions the version
// table records, and applies the Up part of every migration missing, in
// version order, from the list goose reads (migrationFiles,
// migrations/sqlite), with the version rows goose writes (version 0 for a
// new database, then each migration's).
//
// The versions are read under the lock that applies them, so bench
// processes opening a database at once migrate it once: the others wait
// for the first one's commit and then find nothing to do. goose cannot do
// that on SQLite: it reads the versions before the transactions of its
// migrations, with no lock in between (SQLite has no session lock like
// PostgreSQL's advisory lock and MySQL's GET_LOCK, which serialize goose
// there), so a process that read them while another one was migrating
// applied the later migrations again, and recorded their versions twice.
// A new database is also made in one commit instead of one per migration
// (pages of sqlite_master written again each time, the version table's
// insert, the commit): every run on a new file creates one.
//
// The result is the database goose's migrations make one at a time
// (TestFreshSQLiteSchemaIsTheMigratedOne compares them). A migration whose
// Up part carries another goose annotation (StatementBegin, NO
// TRANSACTION, ENVSUB) leaves the database to goose, as does a database
// with a migration missing below its version (goose reports it); bench's
// own migrations have no such annotation. done is false when the
// database is not SQLite or goose must migrate it.
func (s *Store) migrateSQLite(ctx context.Context) (done bool, err error) {
	if _, ok := s.dialect.(sqliteDialect); !ok || !sqliteInOneTx || s.readOnly {
		return false, nil
	}
	p, err := s.provider()
	if err != nil {
		return false, fmt.Errorf("storage: migrations: %w", err)
	}
	sources := p.ListSources()
	if len(sources) == 0 {
		return false, nil
	}
	slices.SortFunc(sources, func(a, b *goose.Source) int { return cmp.Compare(a.Version, b.Version) })
	latest := sources[len(sources)-1].Version
	// An up-to-date database is left without taking the write lock.
	st, err := s.sqliteState(ctx, s.db)
	if err != nil {
		return false, err
	}
	if st.kind == kindBench && st.current >= latest {
		if st.current > latest {
			return true, s.tooNew(st.current, latest)
		}
		if len(st.pending(sources)) == 0 {
			return true, nil
		}
	}
	ups := make([]string, len(sources))
	for i, src := range sources {
		if src.Type != goose.TypeSQL {
			return false, nil
		}
		b, err := fs.ReadFile(migrationFiles, path.Join("migrations/sqlite", path.Base(src.Path)))
		if err != nil {
			return false, fmt.Errorf("storage: migrations: %w", err)
		}
		up, ok := gooseUp(string(b))
		if !ok {
			return false, nil
		}
		ups[i] = up
	}
	store, err := database.NewStore(database.DialectSQLite3, versionTable)
	if err != nil {
		return false, fmt.Errorf("storage: migrations: %w", err)
	}
	tx, err := s.wdb.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the file's write lock
	if err != nil {
		return false, fmt.Errorf("storage: begin transaction on %s: %w", s.describe, s.scrub(err))
	}
	defer func() { _ = tx.Rollback() }()
	// Look again under the lock: another process may have migrated it.
	if st, err = s.sqliteState(ctx, tx); err != nil {
		return false, err
	}
	if testHookMigrateLocked != nil {
		testHookMigrateLocked()
	}
	adopted := st.kind == kindMlos
	if adopted {
		if err := s.adoptIn(ctx, tx); err != nil {
			return false, err
		}
		st.hasTable, st.current = true, mlosAdoptVersion
		for v := int64(0); v <= mlosAdoptVersion; v++ {
			st.applied[v] = true
		}
	}
	fail := func(what string, err error) error {
		return fmt.Errorf("storage: migrate the schema of %s from version %d to %d (%s): %w", s.describe, st.current, latest, what, s.scrub(err))
	}
	if !st.hasTable {
		if err := store.CreateVersionTable(ctx, tx); err != nil {
			return false, fail("version table", err)
		}
		if err := store.Insert(ctx, tx, database.InsertRequest{Version: 0}); err != nil {
			return false, fail("version 0", err)
		}
		st.applied[0] = true
	}
	if st.current > latest {
		return true, s.tooNew(st.current, latest)
	}
	pending := st.pending(sources)
	if len(pending) > 0 && pending[0].Version < st.current {
		return false, nil // goose reports the missing migration
	}
	var applied []string
	for i, src := range sources {
		if !slices.Contains(pending, src) {
			continue
		}
		if strings.TrimSpace(ups[i]) != "" {
			if _, err := tx.ExecContext(ctx, ups[i]); err != nil {
				return false, fail(path.Base(src.Path), err)
			}
		}
		if err := store.Insert(ctx, tx, database.InsertRequest{Version: src.Version}); err != nil {
			return false, fail(fmt.Sprintf("version %d", src.Version), err)
		}
		applied = append(applied, src.Path)
	}
	if !adopted && len(applied) == 0 && st.hasTable {
		return true, nil // another process migrated it: nothing was written
	}
	if err := tx.Commit(); err != nil {
		return false, fail("commit", err)
	}
	if adopted {
		s.logAdopted(st.rev)
	}
	if len(applied) > 0 {
		level := slog.LevelInfo
		if st.current <= 0 {
			level = slog.LevelDebug // a new database: nothing to tell
		}
		s.log.Log(ctx, level, "storage schema migrated", "storage", s.describe, "from", st.current,
			"to", latest, "applied", strings.Join(applied, ","), "transactions", 1)
	}
	return true, nil
}

// testHookMigrateLocked, when set, runs in migrateSQLite's transaction
// right after it read the versions (tests hold the lock there).
var testHookMigrateLocked func()

// sqliteSchema is what migrateSQLite finds in a database.
type sqliteSchema struct {
	kind     schemaKind
	rev      string         // mlos_bench's revision (kindMlos)
	hasTable bool           // the version table exists
	applied  map[int64]bool // the versions it records
	current  int64          // the largest of them
}

// sqliteState reads what the database holds, through q.
func (s *Store) sqliteState(ctx context.Context, q querier) (sqliteSchema, error) {
	st := sqliteSchema{applied: map[int64]bool{}}
	var err error
	var d dbSchema
	if st.kind, st.rev, d, _, err = s.examineSchema(ctx, q); err != nil {
		return st, err
	}
	if _, st.hasTable = d[versionTable]; !st.hasTable {
		return st, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT version_id FROM `+versionTable)
	if err != nil {
		return st, fmt.Errorf("storage: read the schema version of %s: %w", s.describe, s.scrub(err))
	}
	defer rows.Close()
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return st, err
		}
		st.applied[v] = true
		st.current = max(st.current, v)
	}
	return st, s.scrub(rows.Err())
}

// pending are the migrations of sources (in version order) st does not
// record.
func (st sqliteSchema) pending(sources []*goose.Source) []*goose.Source {
	var out []*goose.Source
	for _, src := range sources {
		if !st.applied[src.Version] {
			out = append(out, src)
		}
	}
	return out
}

// gooseUp returns the Up part of a goose SQL migration (from its "--
// +goose Up" line to its "-- +goose Down" line or the end); ok is false
// when the file has no Up line, or its Up part holds another goose
// annotation (it is then left to goose's own parser).
func gooseUp(text string) (up string, ok bool) {
	var b strings.Builder
	in := false
	for line := range strings.Lines(text) {
		t := strings.TrimSpace(line)
		if a, isAnn := strings.CutPrefix(t, "-- +goose "); isAnn {
			switch {
			case strings.TrimSpace(a) == "Up" && !in:
				in = true
				continue
			case strings.TrimSpace(a) == "Down" && in:
				return b.String(), true
			}
			return "", false
		}
		if strings.Contains(t, "+goose") {
			return "", false
		}
		if in {
			b.WriteString(line)
		}
	}
	return b.String(), in
}
