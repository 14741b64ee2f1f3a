package sql

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"

	"github.com/benchtune/bench/storage"
)

// touch gives the trials of the experiment that where selects (on table
// trial, with args) the experiment's next change number (the change feed,
// schema version 5). It is the last statement of the transaction that
// changed them, so that bench_feed's row, locked by bump until the commit,
// is held only while the transaction commits.
//
// Taking the number and stamping the trials is one round trip where the
// database allows it (the common case: the experiment's bench_feed row
// exists): on PostgreSQL one statement (the number from a data-modifying
// WITH), on MySQL and MariaDB two statements sent together (the
// driver's MultiStatements). The locks are taken in the same order as by the
// two statements one after the other. When that finds no bench_feed row
// (nothing stamped), the general path below runs: it creates the row.
func (e *experiment) touch(ctx context.Context, r runner, where string, args ...any) error {
	stampArgs := append([]any{e.info.ID, e.info.ID}, args...)
	if q := e.s.dialect.name(); q == "postgres" || q == "mysql" {
		stmt := `WITH f AS (UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ? RETURNING seq)
			UPDATE trial SET bench_seq = f.seq FROM f WHERE trial.exp_id = ? AND ` + where
		if q == "mysql" {
			// The result is the last statement's: it stamps nothing
			// when the experiment has no bench_feed row yet.
			stmt = `UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ?; UPDATE trial SET bench_seq = ` + feedSeq +
				` WHERE exp_id = ? AND ` + where + ` AND EXISTS (SELECT 1 FROM bench_feed WHERE exp_id = ?)`
			stampArgs = append(append([]any{e.info.ID}, stampArgs...), e.info.ID)
		}
		res, err := r.exec(ctx, stmt, stampArgs...)
		if err != nil {
			return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
		}
		if ok, err := affected(res); err != nil || ok {
			return err
		}
		stampArgs = append([]any{e.info.ID, e.info.ID}, args...)
	}
	if err := e.bump(ctx, r); err != nil {
		return err
	}
	if _, err := r.exec(ctx, `UPDATE trial SET bench_seq = `+feedSeq+` WHERE exp_id = ? AND `+where, stampArgs...); err != nil {
		return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
	}
	return nil
}

// feedSeq is the experiment's current change number, in SQL (one
// argument: the experiment id).
const feedSeq = `(SELECT seq FROM bench_feed WHERE exp_id = ?)`

// bump takes the experiment's next change number, locking its bench_feed
// row until the commit, so that numbers become visible in order (a reader
// never sees a number before a smaller one is committed). Locks are taken
// in one order: trials' rows, then the experiment's row (insertTrial),
// then bench_feed's; nothing is locked after it but the transaction's own
// rows (on PostgreSQL the experiment's row is locked FOR NO KEY UPDATE, so
// that the foreign-key check of an update after bump, which takes it FOR
// KEY SHARE, never waits for it).
func (e *experiment) bump(ctx context.Context, r runner) error {
	res, err := r.exec(ctx, `UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ?`, e.info.ID)
	if err != nil {
		return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
	}
	if ok, err := affected(res); err != nil {
		return err
	} else if !ok {
		// The experiment's first change (or one created by mlos_bench):
		// its row, once whoever writes at the same time, then the number.
		if _, err := r.exec(ctx, `INSERT INTO bench_feed (exp_id, seq) VALUES (?, 0)`+e.s.dialect.ignoreDup("exp_id"), e.info.ID); err != nil {
			return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
		}
		if _, err := r.exec(ctx, `UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ?`, e.info.ID); err != nil {
			return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
		}
	}
	return nil
}

// insertStamped inserts trial trialID's row (cols, with their values)
// with the experiment's next change number, taken as bump takes it. On
// PostgreSQL it is one statement, on MySQL and MariaDB one round trip
// (see touch) when the experiment's bench_feed row exists; otherwise the
// row is inserted with bump's number as before.
func (e *experiment) insertStamped(ctx context.Context, r runner, trialID int, cols string, vals []any) error {
	ph := placeholders(len(vals))
	switch e.s.dialect.name() {
	case "postgres":
		var seq dbsql.NullInt64
		err := r.queryRow(ctx, `WITH f AS (UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ? RETURNING seq)
			INSERT INTO trial (`+cols+`, bench_seq) VALUES (`+ph+`, (SELECT seq FROM f)) RETURNING bench_seq`,
			append([]any{e.info.ID}, vals...)...).Scan(&seq)
		if err != nil || seq.Valid {
			return e.s.scrub(err)
		}
		// No bench_feed row yet: touch creates it and stamps the trial.
		return e.touchTrial(ctx, r, trialID)
	case "mysql":
		// The INSERT's values come from the bench_feed row: no row, no
		// trial inserted (then the general path below).
		res, err := r.exec(ctx, `UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ?;
			INSERT INTO trial (`+cols+`, bench_seq) SELECT `+ph+`, seq FROM bench_feed WHERE exp_id = ?`,
			append(append([]any{e.info.ID}, vals...), e.info.ID)...)
		if ok, aerr := affectedOK(res, err); err != nil || aerr != nil || ok {
			return errors.Join(err, aerr)
		}
	}
	if err := e.bump(ctx, r); err != nil {
		return err
	}
	_, err := r.exec(ctx, `INSERT INTO trial (`+cols+`, bench_seq) VALUES (`+ph+`, `+feedSeq+`)`, append(vals, e.info.ID)...)
	return err
}

// affectedOK is affected for a statement that may have failed.
func affectedOK(res dbsql.Result, err error) (bool, error) {
	if err != nil {
		return false, nil
	}
	return affected(res)
}

// touchTrial is touch for one trial.
func (e *experiment) touchTrial(ctx context.Context, r runner, trialID int) error {
	return e.touch(ctx, r, "trial_id = ?", trialID)
}

// Changes returns the trials bench changed after change number since, by
// id, and the number to ask from next time. since 0 returns every trial
// (those mlos_bench wrote included).
func (e *experiment) Changes(ctx context.Context, since int64) ([]storage.Trial, int64, error) {
	if since < 0 {
		return nil, 0, fmt.Errorf("%w: change number %d", storage.ErrInvalid, since)
	}
	var out []storage.Trial
	next := since
	err := e.s.read(ctx, func(r runner) error {
		// The number first: a change committed after it is read again
		// next time rather than missed.
		var seq dbsql.NullInt64
		err := r.queryRow(ctx, `SELECT seq FROM bench_feed WHERE exp_id = ?`, e.info.ID).Scan(&seq)
		if err != nil && err != dbsql.ErrNoRows {
			return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, e.s.scrub(err))
		}
		if seq.Valid {
			next = max(seq.Int64, since)
		}
		if since == 0 {
			out, err = e.loadTrials(ctx, r, "1 = 1", nil, 0)
			return err
		}
		if next == since {
			return nil // nothing changed: no scan
		}
		out, err = e.loadTrials(ctx, r, "t.bench_seq > ? AND t.bench_seq <= ?", []any{since, next}, 0)
		return err
	})
	if err != nil {
		return nil, since, err
	}
	return out, next, nil
}
