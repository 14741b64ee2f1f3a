package sql

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/benchtune/bench/storage"
)

// The change feed (schema version 5): every transaction that changes
// trials gives them a change number of their experiment (trial.bench_seq)
// such that numbers become visible in order: a reader never sees a
// number before a smaller one is committed (see Changes).
//
// On SQLite, where write transactions run one at a time, the number is
// the experiment's largest plus one, computed in the trial's own
// statement (seqExpr: a look-up of the last entry of the partial index
// trial_bench_seq_idx), and the reader's bound is that largest number:
// no statement and no lock of the feed's own (schema version 8).
//
// On PostgreSQL, MySQL and MariaDB, where writers run at once, the number
// is taken from bench_feed's row of the experiment, which locks that row
// until the commit: numbers thus commit in order. It is taken, and the
// changed trials stamped with it, in the transaction's last round trip,
// together with the statement the transaction ends with anyway where
// there is one (takeAndStamp: the insert of a trial's status history):
// on PostgreSQL one statement of data-modifying WITHs, on MySQL and
// MariaDB a multi-statement in which the number is LAST_INSERT_ID(expr),
// the documented way to emulate a sequence. Locks are taken in one order:
// trials' rows, then the experiment's row (insertTrial), then
// bench_feed's; nothing is locked after it but the transaction's own
// rows (on PostgreSQL the experiment's row is locked FOR NO KEY UPDATE,
// so that the foreign-key check of an update after the number, which
// takes it FOR KEY SHARE, never waits for it). A new trial's INSERT on
// PostgreSQL takes the number itself (a data-modifying WITH, after the
// experiment's lock).

// seqExpr is the value of bench_seq in a statement that changes trials of
// the experiment, with one argument, seqArg: on SQLite the experiment's
// largest number plus one; elsewhere the column as it is (the trials are
// stamped at the end of the transaction, see settle).
func (e *experiment) seqExpr() string {
	if e.s.dialect.name() == "sqlite" {
		return `COALESCE((SELECT MAX(bench_seq) FROM trial WHERE exp_id = ? AND bench_seq IS NOT NULL), 0) + 1`
	}
	return `COALESCE(?, bench_seq)`
}

// seqValue is seqExpr for a new trial's INSERT (with seqArg): none (NULL)
// but on SQLite.
func (e *experiment) seqValue() string {
	if e.s.dialect.name() == "sqlite" {
		return e.seqExpr()
	}
	return `?`
}

// seqArg is seqExpr's argument.
func (e *experiment) seqArg() any {
	if e.s.dialect.name() == "sqlite" {
		return e.info.ID
	}
	return nil
}

// settle takes the experiment's next change number as the last statement
// of the transaction and gives it to the trials of the experiment that
// where selects (on table trial, with args); on SQLite the statements
// numbered them already. When the experiment has no bench_feed row yet
// (its first change, or one created by mlos_bench), it creates it.
func (e *experiment) settle(ctx context.Context, r runner, where string, args ...any) error {
	if e.s.dialect.name() == "sqlite" {
		return nil
	}
	if ok, err := e.takeAndStamp(ctx, r, "", nil, where, args...); err != nil || ok {
		if err != nil {
			return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
		}
		return nil
	}
	seq, err := e.bump(ctx, r)
	if err != nil {
		return err
	}
	if _, err := r.exec(ctx, `UPDATE trial SET bench_seq = ? WHERE exp_id = ? AND `+where, append([]any{seq, e.info.ID}, args...)...); err != nil {
		return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
	}
	return nil
}

// settleTrial is settle for one trial.
func (e *experiment) settleTrial(ctx context.Context, r runner, trialID int) error {
	return e.settle(ctx, r, "trial_id = ?", trialID)
}

// touch numbers the trials of the experiment that where selects (several
// trials: claims, releases), as the transaction's last statement.
func (e *experiment) touch(ctx context.Context, r runner, where string, args ...any) error {
	if e.s.dialect.name() == "sqlite" {
		_, err := r.exec(ctx, `UPDATE trial SET bench_seq = `+e.seqExpr()+` WHERE exp_id = ? AND `+where,
			append([]any{e.seqArg(), e.info.ID}, args...)...)
		if err != nil {
			return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
		}
		return nil
	}
	return e.settle(ctx, r, where, args...)
}

// takeAndStamp runs the INSERT q (with args; none when q is empty) as
// the transaction's last statement and, in the same round trip, takes the
// experiment's next change number and gives it to the trials of the
// experiment that where selects (on table trial, with whereArgs), which
// the transaction changed already: on PostgreSQL one statement
// (data-modifying WITHs), on MySQL and MariaDB a multi-statement (the
// number as LAST_INSERT_ID, reset first so that a missing bench_feed row
// is told from a number taken earlier on the connection). It reports
// whether it stamped them: not on SQLite (the statements numbered them),
// nor when the experiment has no bench_feed row yet (settle creates it).
func (e *experiment) takeAndStamp(ctx context.Context, r runner, q string, args []any, where string, whereArgs ...any) (bool, error) {
	var (
		res dbsql.Result
		err error
	)
	switch e.s.dialect.name() {
	case "postgres":
		with := `WITH f AS (UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ? RETURNING seq)`
		if q != "" {
			with += `, h AS (` + q + `)`
		}
		all := append(append(append([]any{e.info.ID}, args...), e.info.ID), whereArgs...)
		res, err = r.exec(ctx, with+`
			UPDATE trial SET bench_seq = f.seq FROM f WHERE trial.exp_id = ? AND `+where, all...)
	case "mysql":
		if q != "" {
			q += "; "
		}
		all := append(append(append(slices.Clone(args), e.info.ID), e.info.ID), whereArgs...)
		res, err = r.exec(ctx, q+`DO LAST_INSERT_ID(0); UPDATE bench_feed SET seq = LAST_INSERT_ID(seq + 1) WHERE exp_id = ?;
			UPDATE trial SET bench_seq = LAST_INSERT_ID() WHERE exp_id = ? AND LAST_INSERT_ID() > 0 AND `+where, all...)
	default:
		if q != "" {
			_, err = r.exec(ctx, q, args...)
		}
		return false, err
	}
	if err != nil {
		return false, err
	}
	return affected(res)
}

// bump takes the experiment's next change number, locking its bench_feed
// row until the commit (see above), and returns it.
func (e *experiment) bump(ctx context.Context, r runner) (int64, error) {
	seq, ok, err := e.nextSeq(ctx, r)
	if err == nil && !ok {
		// The experiment's first change (or one created by mlos_bench):
		// its row, once whoever writes at the same time, then the number.
		if _, err = r.exec(ctx, `INSERT INTO bench_feed (exp_id, seq) VALUES (?, 0)`+e.s.dialect.ignoreDup("exp_id"), e.info.ID); err == nil {
			seq, ok, err = e.nextSeq(ctx, r)
			if err == nil && !ok {
				err = errors.New("no bench_feed row after inserting it")
			}
		}
	}
	if err != nil {
		return 0, fmt.Errorf("storage: change feed of %q: %w", e.info.ID, e.s.scrub(err))
	}
	return seq, nil
}

// nextSeq adds one to the experiment's change number and returns it, or
// false when the experiment has no bench_feed row.
func (e *experiment) nextSeq(ctx context.Context, r runner) (int64, bool, error) {
	if !e.s.dialect.returning() {
		// MySQL, MariaDB: the reply to the UPDATE carries LAST_INSERT_ID,
		// here set to the new number (rows affected: matched, see
		// ClientFoundRows).
		res, err := r.exec(ctx, `UPDATE bench_feed SET seq = LAST_INSERT_ID(seq + 1) WHERE exp_id = ?`, e.info.ID)
		if err != nil {
			return 0, false, err
		}
		if ok, err := affected(res); err != nil || !ok {
			return 0, false, err
		}
		seq, err := res.LastInsertId()
		return seq, err == nil, err
	}
	var seq int64
	err := r.queryRow(ctx, `UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ? RETURNING seq`, e.info.ID).Scan(&seq)
	if errors.Is(err, dbsql.ErrNoRows) {
		return 0, false, nil
	}
	return seq, err == nil, err
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
		q := `SELECT seq FROM bench_feed WHERE exp_id = ?`
		if e.s.dialect.name() == "sqlite" {
			q = `SELECT MAX(bench_seq) FROM trial WHERE exp_id = ? AND bench_seq IS NOT NULL`
		}
		err := r.queryRow(ctx, q, e.info.ID).Scan(&seq)
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
