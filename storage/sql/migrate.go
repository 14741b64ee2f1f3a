package sql

import (
	"context"
	dbsql "database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/benchtune/bench/storage"
)

// The schema migrations, one folder per dialect, applied in version order
// by goose; the applied versions are kept in the versionTable table.
//
//go:embed migrations
var migrationsFS embed.FS

// migrationFiles are the migrations the provider reads (tests swap in a
// failing one).
var migrationFiles fs.FS = migrationsFS

const versionTable = "bench_schema_version"

// migrationLockID is the PostgreSQL advisory lock that serializes bench
// processes migrating the same database.
const migrationLockID = 0x62656e6368 // "bench"

func (s *Store) provider() (*goose.Provider, error) {
	var (
		dir     string
		gd      goose.Dialect
		options = []goose.ProviderOption{
			goose.WithTableName(versionTable),
			goose.WithDisableGlobalRegistry(true),
		}
	)
	switch s.dialect.(type) {
	case sqliteDialect:
		dir, gd = "migrations/sqlite", goose.DialectSQLite3
	case postgresDialect:
		dir, gd = "migrations/postgres", goose.DialectPostgres
		options = append(options, goose.WithSessionLocker(pgLocker{}))
	case mysqlDialect:
		dir, gd = "migrations/mysql", goose.DialectMySQL
		options = append(options, goose.WithSessionLocker(mysqlLocker{}))
	}
	sub, err := fs.Sub(migrationFiles, dir)
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(gd, s.wdb, sub, options...)
}

// SchemaVersion returns the schema version of the database and the latest
// version this bench knows.
func (s *Store) SchemaVersion(ctx context.Context) (current, latest int64, err error) {
	p, err := s.provider()
	if err != nil {
		return 0, 0, fmt.Errorf("storage: migrations: %w", err)
	}
	current, latest, err = p.GetVersions(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("storage: read the schema version of %s: %w", s.describe, s.scrub(err))
	}
	return current, latest, nil
}

// Migrate creates or upgrades the schema; an up-to-date schema is left
// alone. A database whose schema is newer than this bench knows gives
// storage.ErrSchemaTooNew.
func (s *Store) Migrate(ctx context.Context) error {
	s.schemaMu.Lock()
	defer s.schemaMu.Unlock()
	if err := s.migrate(ctx); err != nil {
		return err
	}
	s.schemaReady = true
	return nil
}

// ensureSchema migrates once, before the first call that needs the schema
// (all of them, when the storage was opened with LazySchemaCreate).
func (s *Store) ensureSchema(ctx context.Context) error {
	s.schemaMu.Lock()
	defer s.schemaMu.Unlock()
	if s.schemaReady {
		return nil
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	s.schemaReady = true
	return nil
}

func (s *Store) migrate(ctx context.Context) error {
	// Two processes opening a new database at the same moment race to
	// create the tables: the loser's statements fail because the tables
	// appeared under it. Looking at the version again then finds the
	// schema complete. (PostgreSQL and MySQL migrations also hold a lock.)
	var err error
	for attempt := 1; ; attempt++ {
		err = s.migrateOnce(ctx)
		if err == nil || errors.Is(err, storage.ErrSchemaTooNew) || errors.Is(err, ErrForeignSchema) || attempt == 5 || ctx.Err() != nil {
			return err
		}
		s.log.Debug("storage: schema migration failed, retrying", "storage", s.describe, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
}

func (s *Store) migrateOnce(ctx context.Context) error {
	if s.dialect.serializesWriters() {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
	}
	if s.readOnly {
		if done, err := s.openMlosReadOnly(ctx); done || err != nil {
			return err
		}
	}
	if err := s.migrateSchema(ctx); err != nil {
		return err
	}
	return s.detectLayout(ctx)
}

// migrateSchema adopts an mlos_bench database, then applies the missing
// migrations. On SQLite both run in one transaction that holds the file's
// write lock (migrateSQLite). Elsewhere goose runs each migration in a
// transaction of its own, under a lock that serializes bench processes
// (pgLocker, mysqlLocker; adoption takes PostgreSQL's too), and reads the
// versions applied once it holds it. Either way a failed migration leaves
// the database at the version before it.
func (s *Store) migrateSchema(ctx context.Context) error {
	// SQLite: adoption and every missing migration in one transaction
	// that holds the file's write lock.
	if done, err := s.migrateSQLite(ctx); err != nil || done {
		return err
	}
	if err := s.adoptMlos(ctx); err != nil {
		return err
	}
	current, latest, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if current > latest {
		return s.tooNew(current, latest)
	}
	if current == latest {
		return nil
	}
	p, err := s.provider()
	if err != nil {
		return fmt.Errorf("storage: migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("storage: migrate the schema of %s from version %d to %d: %w", s.describe, current, latest, s.scrub(err))
	}
	if len(results) == 0 {
		return nil // another process migrated it while this one waited for the lock
	}
	var applied []string
	for _, r := range results {
		applied = append(applied, r.Source.Path)
	}
	level := slog.LevelInfo
	if current <= 0 {
		level = slog.LevelDebug // a new database: nothing to tell
	}
	s.log.Log(ctx, level, "storage schema migrated", "storage", s.describe, "from", current, "to", latest, "applied", strings.Join(applied, ","))
	return nil
}

// tooNew is the error of a database at schema version current, newer than
// latest, the newest this bench knows.
func (s *Store) tooNew(current, latest int64) error {
	return fmt.Errorf("%w: %s has schema version %d, this bench knows versions up to %d; use a newer bench to read it", storage.ErrSchemaTooNew, s.describe, current, latest)
}

// Tables lists the tables of the database (for tests and diagnostics).
func (s *Store) Tables(ctx context.Context) ([]string, error) {
	var q string
	switch s.dialect.(type) {
	case sqliteDialect:
		q = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
	case mysqlDialect:
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name"
	default:
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name"
	}
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return nil, s.scrub(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

// pgLocker holds a PostgreSQL session advisory lock while goose migrates,
// so that concurrent bench processes migrate one after the other. Unlike
// goose's own locker, which polls every few seconds, it waits on the
// server for the lock and gets it as soon as it is free.
type pgLocker struct{}

var _ lock.SessionLocker = pgLocker{}

func (pgLocker) SessionLock(ctx context.Context, conn *dbsql.Conn) error {
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLockID)); err != nil {
		return fmt.Errorf("take the migration lock: %w", err)
	}
	return nil
}

func (pgLocker) SessionUnlock(ctx context.Context, conn *dbsql.Conn) error {
	var ok bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_advisory_unlock($1)", int64(migrationLockID)).Scan(&ok); err != nil {
		return fmt.Errorf("release the migration lock: %w", err)
	}
	if !ok {
		return errors.New("release the migration lock: it was not held")
	}
	return nil
}

// mysqlLocker holds a MySQL named lock (GET_LOCK, held by the connection)
// while goose migrates, so that concurrent bench processes migrate one
// after the other. The lock is per server, named after the database.
type mysqlLocker struct{}

var _ lock.SessionLocker = mysqlLocker{}

// mysqlLockWait is how long a bench process waits for another one's
// migration.
const mysqlLockWait = 10 * time.Minute

const mysqlLockName = "CONCAT('bench_schema_migration:', DATABASE())"

func (mysqlLocker) SessionLock(ctx context.Context, conn *dbsql.Conn) error {
	var got dbsql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK("+mysqlLockName+", ?)", int(mysqlLockWait.Seconds())).Scan(&got); err != nil {
		return fmt.Errorf("take the migration lock: %w", err)
	}
	if got.Int64 != 1 {
		return fmt.Errorf("take the migration lock: another process held it for %v", mysqlLockWait)
	}
	return nil
}

func (mysqlLocker) SessionUnlock(ctx context.Context, conn *dbsql.Conn) error {
	var released dbsql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK("+mysqlLockName+")").Scan(&released); err != nil {
		return fmt.Errorf("release the migration lock: %w", err)
	}
	if released.Int64 != 1 {
		return errors.New("release the migration lock: it was not held")
	}
	return nil
}
