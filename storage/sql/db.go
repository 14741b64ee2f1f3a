package sql

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"strings"
)

type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (dbsql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*dbsql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *dbsql.Row
}

// runner runs the statements of one transaction (or of the pool), in the
// dialect's placeholder syntax, logging them when log_sql is set.
type runner struct {
	s  *Store
	q  querier
	tx *dbsql.Tx // the transaction q is, if any
	db *dbsql.DB // the pool the transaction belongs to
	// steady: statements run without their context's cancellation, which
	// is checked before each instead (an SQLite write transaction, see
	// writeOnce).
	steady bool
}

// ctx is the context a statement runs under: ctx itself, or for a steady
// runner ctx without its cancellation, once ctx is checked.
func (r runner) ctx(ctx context.Context) (context.Context, error) {
	if !r.steady {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// maxCachedStmts bounds the prepared-statement cache (multi-row INSERTs
// make a statement per row count).
const maxCachedStmts = 256

// stmt returns q prepared on the transaction's connection, reusing a
// statement prepared earlier: SQLite then parses each statement once per
// process instead of once per call, which is most of a trial's storage
// cost. It returns nil when q should run unprepared: the first time a
// query is seen it is only noted, and prepared after the transaction ends
// (preparing needs a connection, and the transaction may hold the only
// one).
func (r runner) stmt(ctx context.Context, q string) *dbsql.Stmt {
	if r.tx == nil || r.db == nil || !r.s.dialect.cachesStmts() {
		return nil
	}
	key := stmtKey{r.db, q}
	r.s.stmtMu.Lock()
	defer r.s.stmtMu.Unlock()
	st, ok := r.s.stmts[key]
	if !ok {
		if len(r.s.stmts)+len(r.s.wanted) < maxCachedStmts {
			if r.s.wanted == nil {
				r.s.wanted = map[stmtKey]bool{}
			}
			r.s.wanted[key] = true
		}
		return nil
	}
	return r.tx.StmtContext(ctx, st)
}

// prepareWanted prepares the statements noted by stmt for db; it runs
// right after a transaction on db ended. Statements are prepared without
// holding stmtMu, so that other transactions are never blocked behind a
// connection this one waits for.
func (s *Store) prepareWanted(ctx context.Context, db *dbsql.DB) {
	s.stmtMu.Lock()
	var keys []stmtKey
	for key := range s.wanted {
		if key.db == db {
			keys = append(keys, key)
			delete(s.wanted, key)
		}
	}
	s.stmtMu.Unlock()
	for _, key := range keys {
		st, err := db.PrepareContext(ctx, key.q)
		if err != nil {
			continue // it keeps running unprepared
		}
		s.stmtMu.Lock()
		if _, dup := s.stmts[key]; dup {
			s.stmtMu.Unlock()
			st.Close()
			continue
		}
		if s.stmts == nil {
			s.stmts = map[stmtKey]*dbsql.Stmt{}
		}
		s.stmts[key] = st
		s.stmtMu.Unlock()
	}
}

type stmtKey struct {
	db *dbsql.DB
	q  string
}

func (r runner) prep(ctx context.Context, q string, args []any) string {
	q = r.s.dialect.rebind(q)
	if r.s.logSQL {
		r.s.log.InfoContext(ctx, "sql", "query", q, "args", len(args))
	}
	return q
}

func (r runner) exec(ctx context.Context, q string, args ...any) (dbsql.Result, error) {
	ctx, err := r.ctx(ctx)
	if err != nil {
		return nil, err
	}
	q = r.prep(ctx, q, args)
	if st := r.stmt(ctx, q); st != nil {
		res, err := st.ExecContext(ctx, args...)
		return res, r.s.scrub(err)
	}
	res, err := r.q.ExecContext(ctx, q, args...)
	return res, r.s.scrub(err)
}

func (r runner) query(ctx context.Context, q string, args ...any) (*dbsql.Rows, error) {
	ctx, err := r.ctx(ctx)
	if err != nil {
		return nil, err
	}
	q = r.prep(ctx, q, args)
	if st := r.stmt(ctx, q); st != nil {
		rows, err := st.QueryContext(ctx, args...)
		return rows, r.s.scrub(err)
	}
	rows, err := r.q.QueryContext(ctx, q, args...)
	return rows, r.s.scrub(err)
}

func (r runner) queryRow(ctx context.Context, q string, args ...any) *dbsql.Row {
	if r.steady && ctx.Err() == nil {
		ctx = context.WithoutCancel(ctx)
	}
	q = r.prep(ctx, q, args)
	if st := r.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return r.q.QueryRowContext(ctx, q, args...)
}

// each runs q and calls fn for every row; the rows are closed before it
// returns, so fn may not run other statements on a single-connection pool
// (it does not need to: it only scans).
func (r runner) each(ctx context.Context, fn func(*dbsql.Rows) error, q string, args ...any) error {
	rows, err := r.query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return r.s.scrub(rows.Err())
}

// insertRows inserts rows (each with len(cols) values) with multi-row
// INSERT statements; suffix is appended to each (e.g. ON CONFLICT ...).
func (r runner) insertRows(ctx context.Context, table string, cols []string, rows [][]any, suffix string) error {
	const batch = 200
	for start := 0; start < len(rows); start += batch {
		end := min(start+batch, len(rows))
		var b strings.Builder
		fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", table, strings.Join(cols, ", "))
		one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
		args := make([]any, 0, (end-start)*len(cols))
		for i := start; i < end; i++ {
			if len(rows[i]) != len(cols) {
				return fmt.Errorf("storage: internal error: %d values for %d columns of %s", len(rows[i]), len(cols), table)
			}
			if i > start {
				b.WriteString(", ")
			}
			b.WriteString(one)
			args = append(args, rows[i]...)
		}
		b.WriteString(suffix)
		if _, err := r.exec(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("storage: insert into %s: %w", table, err)
		}
	}
	return nil
}

// insertNew runs the one-row INSERT q and reports whether it stored the
// row: false when its key (the columns cols) is already stored. MySQL
// counts a duplicate left unchanged as a matched row (ClientFoundRows), so
// there the plain INSERT runs and its duplicate key error, which leaves
// the transaction going, means false.
func (r runner) insertNew(ctx context.Context, q, cols string, args ...any) (dbsql.Result, bool, error) {
	if _, ok := r.s.dialect.(mysqlDialect); ok {
		res, err := r.exec(ctx, q, args...)
		if isDupKey(err) {
			return nil, false, nil
		}
		return res, err == nil, err
	}
	res, err := r.exec(ctx, q+r.s.dialect.ignoreDup(cols), args...)
	if err != nil {
		return nil, false, err
	}
	n, err := res.RowsAffected()
	return res, n == 1, err
}

// write runs fn in a write transaction and commits it; any error rolls
// everything back. A transaction the database chose to roll back to
// resolve a deadlock (MySQL) runs again, fn included.
func (s *Store) write(ctx context.Context, fn func(r runner) error) error {
	if err := s.ensureSchema(ctx); err != nil {
		return err
	}
	if s.dialect.serializesWriters() {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
	}
	for attempt := 1; ; attempt++ {
		err := s.writeOnce(ctx, fn)
		if err == nil || attempt == maxWriteAttempts || !s.dialect.retry(err) || ctx.Err() != nil {
			return err
		}
		s.log.Debug("storage: transaction rolled back by the database, running it again", "storage", s.describe, "attempt", attempt, "err", err)
	}
}

// maxWriteAttempts bounds how often write runs a transaction that the
// database rolled back.
const maxWriteAttempts = 10

// On SQLite the transaction and its statements run without ctx's
// cancellation, which is checked before each statement instead: a
// cancellable context costs two goroutines per statement (database/sql's
// and the driver's watchers, about 12 per trial), and an SQLite write
// waits at most the busy timeout for another process's lock anyway.
// PostgreSQL and MySQL keep it: there a statement can wait on another
// client's row lock without a bound.
func (s *Store) writeOnce(ctx context.Context, fn func(r runner) error) error {
	steady := s.dialect.serializesWriters()
	txCtx := ctx
	if steady {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("storage: begin transaction on %s: %w", s.describe, err)
		}
		txCtx = context.WithoutCancel(ctx)
	}
	tx, err := s.wdb.BeginTx(txCtx, s.dialect.writeTx())
	if err != nil {
		return fmt.Errorf("storage: begin transaction on %s: %w", s.describe, s.scrub(err))
	}
	if err := fn(runner{s: s, q: tx, tx: tx, db: s.wdb, steady: steady}); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("storage: commit on %s: %w", s.describe, s.scrub(err))
	}
	s.prepareWanted(ctx, s.wdb)
	return nil
}

// read runs fn in a read-only transaction: every statement sees the same
// snapshot of the database.
func (s *Store) read(ctx context.Context, fn func(r runner) error) error {
	if err := s.ensureSchema(ctx); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, s.dialect.readTx())
	if err != nil {
		return fmt.Errorf("storage: begin read transaction on %s: %w", s.describe, s.scrub(err))
	}
	err = fn(runner{s: s, q: tx, tx: tx, db: s.db})
	_ = tx.Rollback()
	s.prepareWanted(ctx, s.db)
	return err
}
