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
// trials gives them a change number of their experiment (trial.bench_seq)
// such that numbers become visible in order: a reader never sees a
// number before a smaller one is committed (see Changes).
//
// On SQLite, where write transactions run one at a time, the number is
// the experiment's largest plus one, computed in the trial's own
// statement (seqExpr: a look-up of the last entry of the partial index
// trial_bench_seq_idx), and the reader's bound is that largest number:
// no statement and no lock of its own (schema version 8).
//
// On PostgreSQL, MySQL and MariaDB, where writers run at once, the number
// is taken from bench_feed's row of the experiment, which locks that row
// until the commit: numbers thus commit in order. It is taken as the
// transaction's last step. Locks are taken in one order: trials' rows,
// then the experiment's row (insertTrial), then bench_feed's; nothing is
// locked after it but the transaction's own rows (on PostgreSQL the
// experiment's row is locked FOR NO KEY UPDATE, so that the foreign-key
// check of an update after the number, which takes it FOR KEY SHARE,
// never waits for it).
//
// A transaction that changes one trial writes a guess of its number into
// bench_seq in the trial's own statement (guessSeq: the last number this
// process took, plus the transactions of this process that guessed and
// have not taken theirs yet, plus one), and settle then takes the number
// and, only when it differs from the guess (another writer took one in
// between, or in another order), stamps the trial with it. Whatever the
// guess, what commits is the number taken under bench_feed's lock, so the
// guess changes no lock and no order; a right guess saves the stamp's
// statement. The number is taken in a statement the transaction makes
// anyway where it can (takeWith: the insert of the trial's status
// history, its last statement): on PostgreSQL a data-modifying WITH; on
// MySQL and MariaDB the UPDATE of bench_feed follows in the same round
// trip (a multi-statement), the number coming back as its
// LAST_INSERT_ID(expr), the documented way to emulate a sequence.
// Otherwise it is a statement of its own (bump). A new trial's INSERT on
// PostgreSQL takes the number itself (a data-modifying WITH).

// guess is a change number written into the trials a transaction changes
// before it takes the real one; release must be called when the
// transaction ends (deferred).
type guess struct {
	seq      int64
	inflight *atomic.Int64
	done     bool
}

func (g *guess) release() {
	if g != nil && !g.done && g.inflight != nil {
		g.done = true
		g.inflight.Add(-1)
	}
}

// feedState is what this process knows of an experiment's change
// numbers (shared by its views).
type feedState struct {
	last     atomic.Int64 // the last number this process took
	inflight atomic.Int64 // transactions that guessed and took no number yet
}

// guessSeq is the change number to write into the bench_seq of the trials
// a transaction changes (with seqExpr and seqArg), before settle takes
// the real one. On SQLite the statement computes the number itself (its
// seq is 0).
func (e *experiment) guessSeq() *guess {
	if e.s.dialect.name() == "sqlite" {
		return &guess{}
	}
	f := e.feed()
	n := f.inflight.Add(1)
	return &guess{seq: f.last.Load() + n, inflight: &f.inflight}
}

// noGuess is guessSeq for a transaction whose trials' statements take the
// number themselves (PostgreSQL's new trial) or are stamped (several
// trials): none on PostgreSQL, MySQL and MariaDB; on SQLite the number
// is computed in the statement as ever.
func (e *experiment) noGuess() *guess { return &guess{} }

// seqExpr is the value of bench_seq in a statement that changes trials of
// the experiment, with one argument, seqArg(g): on SQLite the
// experiment's largest number plus one; elsewhere the guess, or the
// column as it is for none.
func (e *experiment) seqExpr() string {
	if e.s.dialect.name() == "sqlite" {
		return `COALESCE((SELECT MAX(bench_seq) FROM trial WHERE exp_id = ? AND bench_seq IS NOT NULL), 0) + 1`
	}
	return `COALESCE(?, bench_seq)`
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

// feed is this process's state of the experiment's feed.
func (e *experiment) feed() *feedState {
	if v, ok := e.s.feedLast.Load(e.info.ID); ok {
		return v.(*feedState)
	}
	v, _ := e.s.feedLast.LoadOrStore(e.info.ID, new(feedState))
	return v.(*feedState)
}

// taken is a change number a statement took (takeWith, insertTrial), if
// ok.
type taken struct {
	seq int64
	ok  bool
}

// settle takes the experiment's next change number as the last statement
// of the transaction, unless one was taken already (t), and gives it to
// the trials of the experiment that where selects (on table trial, with
// args), which the transaction wrote guess g into (none written: they are
// stamped). On SQLite the statements numbered the trials already. On
// PostgreSQL, with no guess, taking the number and stamping the trials is
// one statement (the number comes from a data-modifying WITH; the trials'
// rows are the transaction's already, so the locks come in the same
// order); when it finds no bench_feed row (nothing stamped), the general
// path runs and creates the row.
func (e *experiment) settle(ctx context.Context, r runner, g *guess, t taken, where string, args ...any) error {
	defer g.release()
	if e.s.dialect.name() == "sqlite" {
		return nil
	}
	if !t.ok && g.seq == 0 && e.s.dialect.name() == "postgres" {
		res, err := r.exec(ctx, `WITH f AS (UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ? RETURNING seq)
			UPDATE trial SET bench_seq = f.seq FROM f WHERE trial.exp_id = ? AND `+where, append([]any{e.info.ID, e.info.ID}, args...)...)
		if err != nil {
			return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
		}
		if ok, err := affected(res); err != nil || ok {
			return err
		}
	}
	seq := t.seq
	if !t.ok {
		var err error
		if seq, err = e.bump(ctx, r); err != nil {
			return err
		}
	}
	g.release()
	if seq == g.seq {
		return nil
	}
	if _, err := r.exec(ctx, `UPDATE trial SET bench_seq = ? WHERE exp_id = ? AND `+where, append([]any{seq, e.info.ID}, args...)...); err != nil {
		return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
	}
	return nil
}

// settleTrial is settle for one trial.
func (e *experiment) settleTrial(ctx context.Context, r runner, g *guess, t taken, trialID int) error {
	return e.settle(ctx, r, g, t, "trial_id = ?", trialID)
}

// touch numbers the trials of the experiment that where selects, in a
// transaction that wrote no guess (several trials: claims, releases).
func (e *experiment) touch(ctx context.Context, r runner, where string, args ...any) error {
	if e.s.dialect.name() == "sqlite" {
		_, err := r.exec(ctx, `UPDATE trial SET bench_seq = `+e.seqExpr()+` WHERE exp_id = ? AND `+where,
			append([]any{e.seqArg(nil), e.info.ID}, args...)...)
		if err != nil {
			return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
		}
		return nil
	}
	return e.settle(ctx, r, e.noGuess(), taken{}, where, args...)
}

// takeWith runs the one-row INSERT q (with args) as the transaction's last
// statement and takes the experiment's next change number in it where the
// dialect can: on PostgreSQL a data-modifying WITH, on MySQL and MariaDB
// the UPDATE of bench_feed in the same round trip. Without a number (on
// SQLite, or when the experiment has no bench_feed row yet) the caller's
// settle takes it.
func (e *experiment) takeWith(ctx context.Context, r runner, q string, args ...any) (taken, error) {
	switch e.s.dialect.name() {
	case "postgres":
		var seq dbsql.NullInt64
		err := r.queryRow(ctx, `WITH f AS (UPDATE bench_feed SET seq = seq + 1 WHERE exp_id = ? RETURNING seq) `+q+` RETURNING (SELECT seq FROM f)`,
			append([]any{e.info.ID}, args...)...).Scan(&seq)
		if errors.Is(err, dbsql.ErrNoRows) {
			// The insert met a stored row (on conflict nothing) and
			// returned none; the number was taken all the same, and the
			// row is this transaction's now.
			err = r.queryRow(ctx, `SELECT seq FROM bench_feed WHERE exp_id = ?`, e.info.ID).Scan(&seq)
			if errors.Is(err, dbsql.ErrNoRows) {
				return taken{}, nil
			}
		}
		if err != nil {
			return taken{}, e.s.scrub(err)
		}
		if !seq.Valid {
			return taken{}, nil
		}
		e.feed().last.Store(seq.Int64)
		return taken{seq.Int64, true}, nil
	default:
		_, err := r.exec(ctx, q, args...)
		return taken{}, err
	}
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
	e.feed().last.Store(seq)
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
