package sql

import (
	"context"
	dbsql "database/sql"
	"fmt"

	"github.com/benchtune/bench/storage"
)

// touch gives the trials of the experiment that where selects (on table
// trial, with args) the experiment's next change number (the change feed,
// schema version 5). It is the last statement of the transaction that
// changed them, so that bench_feed's row, locked by bump until the commit,
// is held only while the transaction commits.
//
// On PostgreSQL, taking the number and stamping the trials is one
// statement (the number comes from a data-modifying WITH), which takes the
// locks in the same order as the two statements one after the other; when
// it finds no bench_feed row (nothing stamped), the general path below
// runs and creates the row. (MySQL and MariaDB have no UPDATE with a data-
// modifying WITH or RETURNING; sending both statements in one round trip,
// with the driver's MultiStatements, measured no better there.)
func (e *experiment) touch(ctx context.Context, r runner, where string, args ...any) error {
	stampArgs := append([]any{e.info.ID, e.info.ID}, args...)
	if e.s.dialect.name() == "postgres" {
		res, err := r.exec(ctx, `WITH f AS (UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ? RETURNING seq)
			UPDATE trial SET bench_seq = f.seq FROM f WHERE trial.exp_id = ? AND `+where, stampArgs...)
		if err != nil {
			return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
		}
		if ok, err := affected(res); err != nil || ok {
			return err
		}
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
// with the experiment's next change number, taken as bump takes it: on
// PostgreSQL in one statement when the experiment's bench_feed row exists
// (see touch).
func (e *experiment) insertStamped(ctx context.Context, r runner, trialID int, cols string, vals []any) error {
	ph := placeholders(len(vals))
	if e.s.dialect.name() == "postgres" {
		var seq dbsql.NullInt64
		err := r.queryRow(ctx, `WITH f AS (UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ? RETURNING seq)
			INSERT INTO trial (`+cols+`, bench_seq) VALUES (`+ph+`, (SELECT seq FROM f)) RETURNING bench_seq`,
			append([]any{e.info.ID}, vals...)...).Scan(&seq)
		if err != nil || seq.Valid {
			return e.s.scrub(err)
		}
		// No bench_feed row yet: touch creates it and stamps the trial.
		return e.touchTrial(ctx, r, trialID)
	}
	if err := e.bump(ctx, r); err != nil {
		return err
	}
	_, err := r.exec(ctx, `INSERT INTO trial (`+cols+`, bench_seq) VALUES (`+ph+`, `+feedSeq+`)`, append(vals, e.info.ID)...)
	return err
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
