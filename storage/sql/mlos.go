package sql

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pressly/goose/v3/database"
)

// Databases written by mlos_bench.
//
// mlos_bench 0.6 creates nearly the tables bench does (bench's schema
// started from it), without bench's version table. Opening such a database
// adopts it: in one transaction, bench adds the columns, tables and indexes
// its schema has beyond mlos_bench's, and records its migrations 1 to
// mlosAdoptVersion as applied. It never changes or removes what mlos_bench
// created, never adds a column that one of mlos_bench's own migrations
// adds (mlos_bench could not upgrade the file afterwards), and never touches
// alembic_version. The columns it adds are nullable or have a default, so
// mlos_bench's inserts, which name only its own columns, keep working, and
// its reads, which name only its own columns, do not see them.
//
// A database with tables of bench's names that is neither bench's nor an
// mlos_bench database of a known revision is refused before anything is
// written (the SQLite file is not even switched to WAL mode).

// ErrForeignSchema: the database holds tables with bench's names that bench
// did not create and cannot adopt. Nothing was changed.
var ErrForeignSchema = errors.New("database holds tables bench cannot adopt")

// mlosRevisions are mlos_bench's Alembic revisions (alembic_version) this
// bench adopts, with what their schema has beyond mlos_bench 0.6.0/0.6.1
// (which had no alembic_version): d2a708351ba8 marks the start of Alembic,
// f83fb8ae7fc4 adds trial.trial_runner_id (mlos_bench 0.6.2),
// 8928a401115b adds experiment.ts_start, ts_end, status, driver_name,
// driver_pid, and b61aa446e724 changes MySQL column types only.
var mlosRevisions = map[string]mlosLayout{
	"d2a708351ba8": {},
	"f83fb8ae7fc4": {trialRunner: true},
	"8928a401115b": {trialRunner: true, expRun: true},
	"b61aa446e724": {trialRunner: true, expRun: true},
}

// mlosLayout says which of the columns mlos_bench added over time a
// database has.
type mlosLayout struct {
	trialRunner bool // trial.trial_runner_id
	expRun      bool // experiment.ts_start, ts_end, status, driver_name, driver_pid
}

var mlosExpRunCols = []string{"ts_start", "ts_end", "status", "driver_name", "driver_pid"}

// mlosTables are mlos_bench's tables with the columns every mlos_bench 0.6
// database has.
var mlosTables = map[string][]string{
	"experiment":      {"exp_id", "description", "root_env_config", "git_repo", "git_commit"},
	"objectives":      {"exp_id", "optimization_target", "optimization_direction", "weight"},
	"config":          {"config_id", "config_hash"},
	"config_param":    {"config_id", "param_id", "param_value"},
	"trial":           {"exp_id", "trial_id", "config_id", "ts_start", "ts_end", "status"},
	"trial_param":     {"exp_id", "trial_id", "param_id", "param_value"},
	"trial_status":    {"exp_id", "trial_id", "ts", "status"},
	"trial_result":    {"exp_id", "trial_id", "metric_id", "metric_value"},
	"trial_telemetry": {"exp_id", "trial_id", "ts", "metric_id", "metric_value"},
}

// benchOnlyTables are bench's tables that mlos_bench does not have.
var benchOnlyTables = []string{"trial_output", "worker"}

// mlosAddedCols are the columns adoption adds to mlos_bench's tables:
// those bench's migrations 1 to mlosAdoptVersion have beyond mlos_bench's.
// {TS} stands for the dialect's timestamp type.
var mlosAddedCols = []struct{ table, column, def string }{
	{"experiment", "stop_requested", "{TS}"},
	{"experiment", "notes", "TEXT"},
	{"objectives", "ordinal", "INTEGER NOT NULL DEFAULT 0"},
	{"trial", "failure_reason", "TEXT"},
	{"trial", "owner", "TEXT"},
	{"trial", "lease_until", "{TS}"},
	{"trial", "retry_of", "INTEGER"},
	{"trial", "reused_exp_id", "TEXT"},
	{"trial", "reused_trial_id", "INTEGER"},
	{"trial", "stop_requested", "{TS}"},
	{"trial", "engine", "TEXT"},
	{"trial", "engine_job", "TEXT"},
	{"trial", "engine_request", "TEXT"},
	{"trial", "engine_submits", "INTEGER"},
}

// mlosAdoptVersion is the bench schema version an adopted database is at:
// later migrations apply to it as to any bench database, so they must not
// rely on what adoption leaves out (trial_status.id, the trial CHECK, and
// mlos_bench's optional columns; see layout).
const mlosAdoptVersion = 4

// mlosAdoptTables are the tables adoption creates (bench's, at version
// mlosAdoptVersion); {TS} and {BIGINT} stand for the dialect's types.
const mlosAdoptTables = `
CREATE TABLE trial_output (
    exp_id      TEXT NOT NULL,
    trial_id    INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    phase       TEXT NOT NULL,
    env_name    TEXT NOT NULL,
    line        INTEGER NOT NULL,
    command     TEXT NOT NULL,
    exit_code   INTEGER NOT NULL,
    stdout      TEXT NOT NULL,
    stderr      TEXT NOT NULL,
    truncated   BOOLEAN NOT NULL,
    ts_start    {TS},
    duration_ns {BIGINT} NOT NULL,
    timed_out   BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (exp_id, trial_id, seq),
    FOREIGN KEY (exp_id, trial_id) REFERENCES trial (exp_id, trial_id)
);
CREATE TABLE worker (
    exp_id      TEXT NOT NULL REFERENCES experiment (exp_id),
    owner       TEXT NOT NULL,
    runners     INTEGER NOT NULL,
    lease_until {TS} NOT NULL,
    PRIMARY KEY (exp_id, owner)
);
CREATE INDEX IF NOT EXISTS trial_config_idx ON trial (config_id);
CREATE INDEX trial_unfinished_idx ON trial (exp_id, trial_id) WHERE ts_end IS NULL`

// layout is what a bench-usable database lacks of bench's own schema: an
// adopted mlos_bench database has no trial_status.id (its status history
// is unique per timestamp instead), and may lack mlos_bench's later
// columns. The zero value is bench's own schema.
type layout struct {
	mlos          bool // adopted from mlos_bench
	noTrialRunner bool // no trial.trial_runner_id (mlos_bench 0.6.0/0.6.1)
	noExpRun      bool // no experiment.ts_start, ts_end, status, driver_name, driver_pid (mlos_bench ≤ 0.6.2 releases)
}

// dbSchema maps the tables of a database to their columns.
type dbSchema map[string]map[string]bool

func (d dbSchema) has(table string, cols ...string) bool {
	c, ok := d[table]
	if !ok {
		return false
	}
	for _, col := range cols {
		if !c[col] {
			return false
		}
	}
	return true
}

// inspectSchema lists the tables and columns of the database; ok is false
// for dialects it does not know (nothing is adopted or refused there).
func (s *Store) inspectSchema(ctx context.Context, q querier) (d dbSchema, ok bool, err error) {
	var stmt string
	switch s.dialect.(type) {
	case sqliteDialect:
		stmt = `SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p
			WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'`
	case postgresDialect:
		stmt = `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()`
	case mysqlDialect:
		stmt = `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = DATABASE()`
	default:
		return nil, false, nil
	}
	rows, err := q.QueryContext(ctx, stmt)
	if err != nil {
		return nil, true, fmt.Errorf("storage: list the tables of %s: %w", s.describe, s.scrub(err))
	}
	defer rows.Close()
	d = dbSchema{}
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			return nil, true, err
		}
		if d[t] == nil {
			d[t] = map[string]bool{}
		}
		d[t][c] = true
	}
	return d, true, s.scrub(rows.Err())
}

// schemaKind is what a database holds, as far as bench is concerned.
type schemaKind int

const (
	kindFresh schemaKind = iota // none of bench's tables: bench creates them
	kindBench                   // bench's schema (any version)
	kindMlos                    // an mlos_bench database bench adopts
)

// classify tells what the database d holds. revs are the rows of
// alembic_version (if it exists) and benchVersion the largest version in
// bench's version table (if it exists; 0 when only goose's initial row is
// there). A database bench must not touch is an ErrForeignSchema error
// saying why.
func classify(d dbSchema, revs []string, benchVersion int64) (schemaKind, string, error) {
	var present []string
	for t := range mlosTables {
		if _, ok := d[t]; ok {
			present = append(present, t)
		}
	}
	for _, t := range benchOnlyTables {
		if _, ok := d[t]; ok {
			present = append(present, t)
		}
	}
	sort.Strings(present)
	_, hasVersion := d[versionTable]
	_, hasAlembic := d["alembic_version"]
	if hasVersion && benchVersion > 0 {
		return kindBench, "", nil
	}
	if len(present) == 0 && !hasAlembic {
		return kindFresh, "", nil
	}
	// mlos_bench's tables (perhaps with the version table an earlier bench
	// left behind when it failed to create its own tables over them).
	refuse := func(format string, args ...any) (schemaKind, string, error) {
		return 0, "", fmt.Errorf("%w: it holds tables bench did not create (%s) and is not an mlos_bench 0.6 database bench can adopt: %s; bench left it unchanged",
			ErrForeignSchema, strings.Join(present, ", "), fmt.Sprintf(format, args...))
	}
	var want mlosLayout
	rev := "none (mlos_bench 0.6.0/0.6.1)"
	if hasAlembic {
		if len(revs) != 1 {
			return refuse("alembic_version has %d rows, want 1", len(revs))
		}
		l, ok := mlosRevisions[revs[0]]
		if !ok {
			known := make([]string, 0, len(mlosRevisions))
			for r := range mlosRevisions {
				known = append(known, r)
			}
			sort.Strings(known)
			return refuse("its mlos_bench schema revision %q (alembic_version) is unknown to this bench, which knows %s", revs[0], strings.Join(known, ", "))
		}
		want, rev = l, revs[0]
	}
	var missing []string
	for _, t := range sortedKeys(mlosTables) {
		for _, c := range mlosTables[t] {
			if !d.has(t, c) {
				missing = append(missing, t+"."+c)
			}
		}
	}
	if len(missing) > 0 {
		return refuse("it lacks %s", strings.Join(missing, ", "))
	}
	for _, t := range benchOnlyTables {
		if _, ok := d[t]; ok {
			return refuse("it already has bench's table %s but no bench schema version", t)
		}
	}
	for _, c := range mlosAddedCols {
		if d.has(c.table, c.column) {
			return refuse("it already has bench's column %s.%s but no bench schema version", c.table, c.column)
		}
	}
	if d.has("trial_status", "id") {
		return refuse("its trial_status table has an id column, which mlos_bench's has not")
	}
	got := mlosLayout{trialRunner: d.has("trial", "trial_runner_id"), expRun: d.has("experiment", mlosExpRunCols...)}
	partial := !got.expRun && slices.ContainsFunc(mlosExpRunCols, func(c string) bool { return d.has("experiment", c) })
	switch {
	case partial:
		return refuse("its experiment table has only some of %s", strings.Join(mlosExpRunCols, ", "))
	case hasAlembic && got != want:
		return refuse("its columns do not match its mlos_bench schema revision %s (trial.trial_runner_id: %v, experiment.status and the like: %v)", rev, got.trialRunner, got.expRun)
	case !hasAlembic && got.expRun:
		return refuse("it has experiment.status and the like but no alembic_version")
	}
	return kindMlos, rev, nil
}

// examine reads what the database holds (through q) and classifies it.
// ok is false for dialects adoption does not know.
func (s *Store) examine(ctx context.Context, q querier) (kind schemaKind, rev string, ok bool, err error) {
	kind, rev, _, ok, err = s.examineSchema(ctx, q)
	return kind, rev, ok, err
}

// examineSchema is examine, which also returns the tables and columns it
// read.
func (s *Store) examineSchema(ctx context.Context, q querier) (kind schemaKind, rev string, d dbSchema, ok bool, err error) {
	d, ok, err = s.inspectSchema(ctx, q)
	if err != nil || !ok {
		return 0, "", d, ok, err
	}
	if _, my := s.dialect.(mysqlDialect); my {
		// MySQL shows another process's migration half done (its DDL is
		// not transactional); goose creates its version table first, so a
		// database with it is bench's. Otherwise only an mlos_bench
		// database is told apart (and refused, below).
		if _, has := d[versionTable]; has {
			return kindBench, "", d, true, nil
		}
	}
	var revs []string
	if _, has := d["alembic_version"]; has {
		rows, err := q.QueryContext(ctx, `SELECT version_num FROM alembic_version`)
		if err != nil {
			return 0, "", d, true, fmt.Errorf("storage: read alembic_version of %s: %w", s.describe, s.scrub(err))
		}
		for rows.Next() {
			var r string
			if err := rows.Scan(&r); err != nil {
				rows.Close()
				return 0, "", d, true, err
			}
			revs = append(revs, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, "", d, true, s.scrub(err)
		}
	}
	var benchVersion int64
	if _, has := d[versionTable]; has {
		var v dbsql.NullInt64
		if err := q.QueryRowContext(ctx, `SELECT MAX(version_id) FROM `+versionTable).Scan(&v); err != nil {
			return 0, "", d, true, fmt.Errorf("storage: read the schema version of %s: %w", s.describe, s.scrub(err))
		}
		benchVersion = v.Int64
	}
	kind, rev, err = classify(d, revs, benchVersion)
	if err != nil {
		return 0, "", d, true, fmt.Errorf("storage: %s: %w", s.describe, err)
	}
	if _, my := s.dialect.(mysqlDialect); my && kind == kindMlos {
		// MySQL commits DDL statements at once: adoption could not be
		// all-or-nothing, so an mlos_bench database is left alone.
		return 0, "", d, true, fmt.Errorf("storage: %s: %w: it is an mlos_bench database (revision %s); bench opens mlos_bench databases on SQLite and PostgreSQL only, because MySQL cannot change tables inside a transaction; bench left it unchanged: give bench a database of its own",
			s.describe, ErrForeignSchema, rev)
	}
	return kind, rev, d, true, nil
}

// refuseForeign fails with ErrForeignSchema when the database holds tables
// bench must not touch. It only reads: Open calls it before anything is
// written to the database.
func (s *Store) refuseForeign(ctx context.Context) error {
	_, _, _, err := s.examine(ctx, s.db)
	return err
}

// adoptMlos adopts an mlos_bench database, in one transaction: either all
// of it is done or nothing. It does nothing to other databases, and fails
// with ErrForeignSchema on the ones bench must not touch. The caller holds
// writeMu where the dialect serializes writers. (SQLite databases are
// adopted by migrateSQLite, in the transaction that migrates them.)
func (s *Store) adoptMlos(ctx context.Context) error {
	kind, _, ok, err := s.examine(ctx, s.db)
	if err != nil || !ok || kind != kindMlos {
		return err
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("storage: begin transaction on %s: %w", s.describe, s.scrub(err))
	}
	defer func() { _ = tx.Rollback() }()
	if _, ok := s.dialect.(postgresDialect); ok {
		// The lock goose's migrations take, for this transaction.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockID)); err != nil {
			return fmt.Errorf("storage: take the migration lock on %s: %w", s.describe, s.scrub(err))
		}
	}
	// Look again under the lock: another process may have adopted it.
	kind, rev, _, err := s.examine(ctx, tx)
	if err != nil || kind != kindMlos {
		return err
	}
	if err := s.adoptIn(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.adoptFailed("commit", err)
	}
	s.logAdopted(rev)
	return nil
}

// adoptFailed is the error of an adoption that failed doing what.
func (s *Store) adoptFailed(what string, err error) error {
	return fmt.Errorf("storage: adopt the mlos_bench database %s (%s); it was left unchanged: %w", s.describe, what, s.scrub(err))
}

func (s *Store) logAdopted(rev string) {
	s.log.Info("adopted an mlos_bench database: added bench's tables and columns; mlos_bench's tables, rows and alembic_version are unchanged",
		"storage", s.describe, "mlos_bench_revision", rev, "schema_version", mlosAdoptVersion)
}

// adoptIn adopts the mlos_bench database in the transaction tx, which
// found it to be one under the migration lock (PostgreSQL) or the file's
// write lock (SQLite): it adds bench's columns, tables and indexes, and
// records versions up to mlosAdoptVersion.
func (s *Store) adoptIn(ctx context.Context, tx querier) error {
	var (
		ts, bigint string
		gd         database.Dialect
	)
	switch s.dialect.(type) {
	case sqliteDialect:
		ts, bigint, gd = "TIMESTAMP", "INTEGER", database.DialectSQLite3
	case postgresDialect:
		ts, bigint, gd = "TIMESTAMPTZ", "BIGINT", database.DialectPostgres
	default:
		return fmt.Errorf("storage: internal error: adopting an mlos_bench database on %s", s.describe)
	}
	for _, c := range mlosAddedCols {
		def := strings.ReplaceAll(c.def, "{TS}", ts)
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", c.table, c.column, def)); err != nil {
			return s.adoptFailed("add "+c.table+"."+c.column, err)
		}
	}
	ddl := strings.NewReplacer("{TS}", ts, "{BIGINT}", bigint).Replace(mlosAdoptTables)
	for _, stmt := range strings.Split(ddl, ";") {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			what, _, _ := strings.Cut(strings.Join(strings.Fields(stmt), " "), " (")
			return s.adoptFailed(strings.ToLower(strings.TrimSuffix(what, " ON trial")), err)
		}
	}
	store, err := database.NewStore(gd, versionTable)
	if err != nil {
		return s.adoptFailed("version table", err)
	}
	first := int64(1)
	if exists, err := versionTableExists(ctx, s, tx); err != nil {
		return s.adoptFailed("version table", err)
	} else if !exists {
		if err := store.CreateVersionTable(ctx, tx); err != nil {
			return s.adoptFailed("create the version table", err)
		}
		first = 0
	}
	for v := first; v <= mlosAdoptVersion; v++ {
		if err := store.Insert(ctx, tx, database.InsertRequest{Version: v}); err != nil {
			return s.adoptFailed("record schema version", err)
		}
	}
	return nil
}

// versionTableExists reports whether bench's version table is there (left
// behind, with version 0 only, by a bench that failed to create its tables
// over mlos_bench's).
func versionTableExists(ctx context.Context, s *Store, q querier) (bool, error) {
	d, _, err := s.inspectSchema(ctx, q)
	if err != nil {
		return false, err
	}
	_, ok := d[versionTable]
	return ok, nil
}

// detectLayout finds what the (migrated) database lacks of bench's schema.
func (s *Store) detectLayout(ctx context.Context) error {
	d, ok, err := s.inspectSchema(ctx, s.db)
	if err != nil || !ok {
		return err
	}
	s.layout = layout{
		mlos:          !d.has("trial_status", "id"),
		noTrialRunner: !d.has("trial", "trial_runner_id"),
		noExpRun:      !d.has("experiment", mlosExpRunCols...),
	}
	return nil
}

// experimentCols is the select list of scanExperiment: NULL for the
// columns the database lacks.
func (s *Store) experimentCols() string {
	if s.layout.noExpRun {
		return `exp_id, description, root_env_config, git_repo, git_commit, NULL, NULL, NULL, NULL, NULL, notes`
	}
	return experimentCols
}

// trialCols is the select list of scanTrial: NULL for the columns the
// database lacks.
func (s *Store) trialCols() string {
	if s.layout.noTrialRunner {
		return strings.Replace(trialCols, "t.trial_runner_id", "NULL", 1)
	}
	return trialCols
}

// historyConflict and historyOrder are the unique key and the order of
// the status history: bench's has several statuses at one timestamp in
// insertion order (id); mlos_bench's one status per timestamp.
func (s *Store) historyConflict() string {
	if s.layout.mlos {
		return s.dialect.ignoreDup("exp_id, trial_id, ts")
	}
	return s.dialect.ignoreDup("exp_id, trial_id, ts, status")
}

func (s *Store) historyOrder() string {
	if s.layout.mlos {
		return "ts"
	}
	return "id"
}

// driverName fits the host name in mlos_bench's experiment.driver_name
// (40 characters).
func (s *Store) driverName(host string) string {
	host = clean(host)
	if s.layout.mlos {
		if r := []rune(host); len(r) > 40 {
			host = string(r[:40])
		}
	}
	return host
}
