package sql

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"

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
// the documented way to emulate a sequence. The trials' own statements
// write a guess of the number (guessSeq), and the stamp writes only the
// trials whose guess is wrong: with one writer, never; with several,
// whose transactions take numbers in another order than they guessed,
// often (then a trial's row is written twice, as it always was before
// schema version 8). Whatever the guess, what commits is the number
// taken under bench_feed's lock. Locks are taken in one order:
// trials' rows, then the experiment's row (insertTrial), then
// bench_feed's; nothing is locked after it but the transaction's own
// rows (on PostgreSQL the experiment's row is locked FOR NO KEY UPDATE,
// so that the foreign-key check of an update after the number, which
// takes it FOR KEY SHARE, never waits for it). A new trial's INSERT on
// PostgreSQL takes the number itself (a data-modifying WITH, after the
// experiment's lock).

// guess is a change number written into the trials a transaction changes
// before it takes the real one (PostgreSQL, MySQL, MariaDB; see
// takeAndStamp); release must be called when the transaction ends
// (deferred).
type guess struct {
	seq  int64
	f    *feedState
	done bool
}

func (g *guess) release() {
	if g != nil && g.f != nil && !g.done {
		g.f.mu.Lock()
		g.f.release(g)
		g.f.mu.Unlock()
	}
}

// feedState is what this process knows of an experiment's change
// numbers (shared by its views).
type feedState struct {
	mu       sync.Mutex
	last     int64 // the last number this process took
	inflight int64 // transactions that guessed and took no number yet
}

// release ends g's flight, with mu held.
func (f *feedState) release(g *guess) {
	if g != nil && g.f == f && !g.done {
		g.done = true
		f.inflight--
	}
}

// took records number seq taken by the transaction that guessed g (nil:
// none), in one step, so that a guess made meanwhile counts it once.
func (f *feedState) took(seq int64, g *guess) {
	f.mu.Lock()
	f.last = max(f.last, seq)
	f.release(g)
	f.mu.Unlock()
}

// guessSeq is the change number to write into the bench_seq of the trials
// a transaction changes (seqExpr, seqArg): the last number this process
// took, plus its transactions that guessed and took none yet, plus one.
// On SQLite the statement computes the number itself (no guess).
func (e *experiment) guessSeq() *guess {
	if e.s.dialect.name() == "sqlite" {
		return &guess{}
	}
	f := e.feed()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inflight++
	return &guess{seq: f.last + f.inflight, f: f}
}

// feed is this process's state of the experiment's feed.
func (e *experiment) feed() *feedState {
	if v, ok := e.s.feeds.Load(e.info.ID); ok {
		return v.(*feedState)
	}
	v, _ := e.s.feeds.LoadOrStore(e.info.ID, new(feedState))
	return v.(*feedState)
}

// seqExpr is the value of bench_seq in a statement that changes trials of
// the experiment, with one argument, seqArg: on SQLite the experiment's
// largest number plus one; elsewhere the guess (the column as it is for
// none).
func (e *experiment) seqExpr() string {
	if e.s.dialect.name() == "sqlite" {
		return `COALESCE((SELECT MAX(bench_seq) FROM trial WHERE exp_id = ? AND bench_seq IS NOT NULL), 0) + 1`
	}
	return `COALESCE(?, bench_seq)`
}

// seqValue is seqExpr for a new trial's INSERT (with seqArg): the guess
// (or NULL) but on SQLite.
func (e *experiment) seqValue() string {
	if e.s.dialect.name() == "sqlite" {
		return e.seqExpr()
	}
	return `?`
}

// seqArg is seqExpr's argument for guess g.
func (e *experiment) seqArg(g *guess) any {
	if e.s.dialect.name() == "sqlite" {
		return e.info.ID
	}
	if g == nil || g.seq == 0 {
		return nil
	}
	return g.seq
}

// settle takes the experiment's next change number as the last statement
// of the transaction and gives it to the trials of the experiment that
// where selects (on table trial, with args), which the transaction wrote
// guess g into; on SQLite the statements numbered them already. When the
// experiment has no bench_feed row yet (its first change, or one created
// by mlos_bench), it creates it.
func (e *experiment) settle(ctx context.Context, r runner, g *guess, where string, args ...any) error {
	if e.s.dialect.name() == "sqlite" {
		return nil
	}
	if ok, err := e.takeAndStamp(ctx, r, "", nil, g, where, args...); err != nil || ok {
		if err != nil {
			return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
		}
		return nil
	}
	seq, err := e.bump(ctx, r)
	if err != nil {
		return err
	}
	e.feed().took(seq, g)
	if _, err := r.exec(ctx, `UPDATE trial SET bench_seq = ? WHERE exp_id = ? AND `+where, append([]any{seq, e.info.ID}, args...)...); err != nil {
		return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
	}
	return nil
}

// settleTrial is settle for one trial.
func (e *experiment) settleTrial(ctx context.Context, r runner, g *guess, trialID int) error {
	return e.settle(ctx, r, g, "trial_id = ?", trialID)
}

// touch numbers the trials of the experiment that where selects (several
// trials: claims, releases), as the transaction's last statement.
func (e *experiment) touch(ctx context.Context, r runner, where string, args ...any) error {
	if e.s.dialect.name() == "sqlite" {
		_, err := r.exec(ctx, `UPDATE trial SET bench_seq = `+e.seqExpr()+` WHERE exp_id = ? AND `+where,
			append([]any{e.seqArg(nil), e.info.ID}, args...)...)
		if err != nil {
			return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
		}
		return nil
	}
	return e.settle(ctx, r, nil, where, args...)
}

// takeAndStamp runs the INSERT q (with args; none when q is empty) as
// the transaction's last statement and, in the same round trip, takes the
// experiment's next change number and gives it to the trials of the
// experiment that where selects (on table trial, with whereArgs), which
// the transaction changed already with guess g: only those whose guess
// is wrong are written again. On PostgreSQL it is one statement
// (data-modifying WITHs); on MySQL and MariaDB a multi-statement: the
// number is LAST_INSERT_ID, reset first so that a missing bench_feed row
// is told from a number taken earlier on the connection, and set again by
// the stamp so that its reply carries it; a row set to the value it has
// is not written (and counts as matched, see ClientFoundRows). It reports
// whether it took the number: not on SQLite (the statements numbered the
// trials), nor when the experiment has no bench_feed row yet (settle
// creates it).
func (e *experiment) takeAndStamp(ctx context.Context, r runner, q string, args []any, g *guess, where string, whereArgs ...any) (bool, error) {
	var seq int64
	switch e.s.dialect.name() {
	case "postgres":
		with := `WITH f AS (UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ? RETURNING seq)`
		if q != "" {
			with += `, h AS (` + q + `)`
		}
		all := append(append(append([]any{e.info.ID}, args...), e.info.ID), whereArgs...)
		err := r.queryRow(ctx, with+`, u AS (UPDATE trial SET bench_seq = f.seq FROM f
			WHERE trial.exp_id = ? AND trial.bench_seq IS DISTINCT FROM f.seq AND `+where+`)
			SELECT seq FROM f`, all...).Scan(&seq)
		if errors.Is(err, dbsql.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	case "mysql":
		if q != "" {
			q += "; "
		}
		all := append(append(append(slices.Clone(args), e.info.ID), e.info.ID), whereArgs...)
		res, err := r.exec(ctx, q+`DO LAST_INSERT_ID(0); UPDATE bench_feed SET seq = LAST_INSERT_ID(seq + 1) WHERE exp_id = ?;
			UPDATE trial SET bench_seq = LAST_INSERT_ID(LAST_INSERT_ID()) WHERE exp_id = ? AND LAST_INSERT_ID() > 0 AND `+where, all...)
		if err != nil {
			return false, err
		}
		if ok, err := affected(res); err != nil || !ok {
			return false, err
		}
		if seq, err = res.LastInsertId(); err != nil || seq == 0 {
			return false, err
		}
	default:
		if q != "" {
			_, err := r.exec(ctx, q, args...)
			return false, err
		}
		return false, nil
	}
	e.feed().took(seq, g)
	return true, nil
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
		if seq.Int64 < since {
			// The experiment's numbers are behind the caller's: not this
			// numbering (a database restored from a backup or replaced, or
			// a number a schema-7 bench took from bench_feed on SQLite that
			// no trial kept). Everything is changed, as from 0, rather than
			// nothing until the numbers catch up.
			since = 0
		}
		next = max(seq.Int64, since)
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
