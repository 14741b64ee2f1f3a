package sql

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/benchtune/bench/storage"
)

// The change feed (schema version 5): every transaction that changes
// trials gives them the experiment's next change number (trial.bench_seq),
// taken from bench_feed's row of the experiment as the transaction's last
// statement, which locks that row until the commit. Numbers thus become
// visible in order: a reader never sees a number before a smaller one is
// committed (see Changes). Locks are taken in one order: trials' rows,
// then the experiment's row (insertTrial), then bench_feed's; nothing is
// locked after it but the transaction's own rows (on PostgreSQL the
// experiment's row is locked FOR NO KEY UPDATE, so that the foreign-key
// check of an update after the number, which takes it FOR KEY SHARE, never
// waits for it).
//
// A transaction that changes one trial (or queues one) writes a guess of
// its number into bench_seq in the trial's own statement (guessSeq: the
// last number this process took, plus one), and settle then takes the
// number and, only when it differs from the guess (another writer took
// one in between, or a transaction that took a guess rolled back), stamps
// the trials with it. Whatever the guess, what commits is the number
// taken under bench_feed's lock, so the guess changes no lock and no
// order; a right guess saves the stamp's round trip. On MySQL and MariaDB
// the number comes back in the UPDATE's own reply (LAST_INSERT_ID(expr),
// the documented way to emulate a sequence), on SQLite from RETURNING: one
// statement per transaction for the feed when the guess is right.
//
// PostgreSQL guesses nothing: there one statement takes the number and
// stamps the trials (a data-modifying WITH; a new trial's INSERT takes it
// the same way), which a wrong guess (common with concurrent writers)
// could only make two.

// guessSeq is the change number to write into the bench_seq of the trials
// a transaction changes (with seqArg), before settle takes the real one; 0
// for none (PostgreSQL).
func (e *experiment) guessSeq() int64 {
	if e.s.dialect.name() == "postgres" {
		return 0
	}
	return e.lastSeq().Add(1)
}

// seqArg is the argument of "bench_seq = COALESCE(?, bench_seq)" for guess
// seq: NULL, which keeps the column as it is, for none.
func (e *experiment) seqArg(seq int64) any {
	if seq == 0 {
		return nil
	}
	return seq
}

// lastSeq is the last change number this process took for the
// experiment (shared by its views).
func (e *experiment) lastSeq() *atomic.Int64 {
	if v, ok := e.s.feedLast.Load(e.info.ID); ok {
		return v.(*atomic.Int64)
	}
	v, _ := e.s.feedLast.LoadOrStore(e.info.ID, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// settle takes the experiment's next change number as the last statement
// of the transaction and gives it to the trials of the experiment that
// where selects (on table trial, with args), which the transaction wrote
// guess into (0: no guess written; they are stamped). On PostgreSQL, with
// no guess, taking the number and stamping the trials is one statement
// (the number comes from a data-modifying WITH; the trials' rows are the
// transaction's already, so the locks come in the same order); when it
// finds no bench_feed row (nothing stamped), the general path runs and
// creates the row.
func (e *experiment) settle(ctx context.Context, r runner, guess int64, where string, args ...any) error {
	if guess == 0 && e.s.dialect.name() == "postgres" {
		res, err := r.exec(ctx, `WITH f AS (UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ? RETURNING seq)
			UPDATE trial SET bench_seq = f.seq FROM f WHERE trial.exp_id = ? AND `+where, append([]any{e.info.ID, e.info.ID}, args...)...)
		if err != nil {
			return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
		}
		if ok, err := affected(res); err != nil || ok {
			return err
		}
	}
	seq, err := e.bump(ctx, r)
	if err != nil {
		return err
	}
	if seq == guess {
		return nil
	}
	if _, err := r.exec(ctx, `UPDATE trial SET bench_seq = ? WHERE exp_id = ? AND `+where, append([]any{seq, e.info.ID}, args...)...); err != nil {
		return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
	}
	return nil
}

// settleTrial is settle for one trial.
func (e *experiment) settleTrial(ctx context.Context, r runner, guess int64, trialID int) error {
	return e.settle(ctx, r, guess, "trial_id = ?", trialID)
}

// touch is settle for a transaction that wrote no guess (several trials:
// claims, releases).
func (e *experiment) touch(ctx context.Context, r runner, where string, args ...any) error {
	return e.settle(ctx, r, 0, where, args...)
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
	e.lastSeq().Store(seq)
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
