package sql

import (
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

// freshInOneTx: an empty SQLite database gets its schema in one
// transaction (createFreshSQLite). Tests turn it off to build the same
// database through goose, one migration at a time.
var freshInOneTx = true

// createFreshSQLite gives an empty SQLite database bench's latest schema
// in one transaction: the Up part of every migration of the list goose
// reads (migrationFiles, migrations/sqlite), in version order, and the
// version table goose keeps, with the rows goose writes (version 0, then
// each migration's). The database is the one goose's migrations make one
// at a time (TestFreshSQLiteSchemaIsTheMigratedOne compares them), made in
// one commit instead of one per migration: a new bench database is
// created by every run on a new file, and each migration cost a
// transaction of its own (pages of sqlite_master written again each time,
// the version table's insert, the commit). A migration added to the list
// is applied the same way; one whose Up part carries another goose
// annotation (StatementBegin, NO TRANSACTION, ENVSUB) makes this step
// leave the database to goose. done is false when the database is not
// SQLite, is not empty, or when goose must migrate it.
func (s *Store) createFreshSQLite(ctx context.Context) (done bool, err error) {
	if _, ok := s.dialect.(sqliteDialect); !ok || !freshInOneTx || s.readOnly {
		return false, nil
	}
	if empty, err := sqliteEmpty(ctx, s.db); err != nil || !empty {
		return false, err
	}
	p, err := s.provider()
	if err != nil {
		return false, fmt.Errorf("storage: migrations: %w", err)
	}
	sources := p.ListSources()
	slices.SortFunc(sources, func(a, b *goose.Source) int { return int(a.Version - b.Version) })
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
	// Look again under the lock: another process may have created it.
	if empty, err := sqliteEmpty(ctx, tx); err != nil || !empty {
		return false, err
	}
	fail := func(what string, err error) error {
		return fmt.Errorf("storage: create the schema of %s (%s): %w", s.describe, what, s.scrub(err))
	}
	if err := store.CreateVersionTable(ctx, tx); err != nil {
		return false, fail("version table", err)
	}
	if err := store.Insert(ctx, tx, database.InsertRequest{Version: 0}); err != nil {
		return false, fail("version 0", err)
	}
	applied := make([]string, len(sources))
	for i, src := range sources {
		if strings.TrimSpace(ups[i]) != "" {
			if _, err := tx.ExecContext(ctx, ups[i]); err != nil {
				return false, fail(src.Path, err)
			}
		}
		if err := store.Insert(ctx, tx, database.InsertRequest{Version: src.Version}); err != nil {
			return false, fail(fmt.Sprintf("version %d", src.Version), err)
		}
		applied[i] = src.Path
	}
	if err := tx.Commit(); err != nil {
		return false, fail("commit", err)
	}
	s.log.Log(ctx, slog.LevelDebug, "storage schema migrated", "storage", s.describe, "from", 0,
		"to", sources[len(sources)-1].Version, "applied", strings.Join(applied, ","), "transactions", 1)
	return true, nil
}

// sqliteEmpty reports whether an SQLite database has no schema at all.
func sqliteEmpty(ctx context.Context, q querier) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master`).Scan(&n); err != nil {
		return false, err
	}
	return n == 0, nil
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
