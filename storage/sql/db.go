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
	s *Store
	q querier
}

func (r runner) prep(ctx context.Context, q string, args []any) string {
	q = r.s.dialect.rebind(q)
	if r.s.logSQL {
		r.s.log.InfoContext(ctx, "sql", "query", q, "args", len(args))
	}
	return q
}

func (r runner) exec(ctx context.Context, q string, args ...any) (dbsql.Result, error) {
	res, err := r.q.ExecContext(ctx, r.prep(ctx, q, args), args...)
	return res, r.s.scrub(err)
}

func (r runner) query(ctx context.Context, q string, args ...any) (*dbsql.Rows, error) {
	rows, err := r.q.QueryContext(ctx, r.prep(ctx, q, args), args...)
	return rows, r.s.scrub(err)
}

func (r runner) queryRow(ctx context.Context, q string, args ...any) *dbsql.Row {
	return r.q.QueryRowContext(ctx, r.prep(ctx, q, args), args...)
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

// write runs fn in a write transaction and commits it; any error rolls
// everything back.
func (s *Store) write(ctx context.Context, fn func(r runner) error) error {
	if err := s.ensureSchema(ctx); err != nil {
		return err
	}
	if s.dialect.serializesWriters() {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("storage: begin transaction on %s: %w", s.describe, s.scrub(err))
	}
	if err := fn(runner{s: s, q: tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("storage: commit on %s: %w", s.describe, s.scrub(err))
	}
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
	defer func() { _ = tx.Rollback() }()
	return fn(runner{s: s, q: tx})
}
