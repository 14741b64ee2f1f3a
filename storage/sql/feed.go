package sql

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/benchtune/bench/storage"
)

// The change feed (schema version 5): every transaction that changes
// trials gives them a change number (trial.bench_seq), and a reader is
// given a bound below which every number that will ever be written has
// committed already, so that polling with that bound misses no change
// (see Changes).
//
// On SQLite, where write transactions run one at a time, the number is
// the experiment's largest plus one, computed in the trial's own
// statement (seqExpr: a look-up of the last entry of the partial index
// trial_bench_seq_idx), and the reader's bound is that largest number:
// no statement and no lock of the feed's own (schema version 8).
//
// On PostgreSQL (schema version 9) the number is the writing
// transaction's id (pg_current_xact_id(), 64 bits with its epoch, so it
// never wraps), written by the trial's own statement (seqExpr), and
// bench_feed is gone: writers take no lock and update no row of the
// feed's own, so concurrent writers commit at once. A reader's bound is
// its snapshot's xmin (pg_snapshot_xmin(pg_current_snapshot())): every
// transaction with a smaller id has ended, and every transaction that
// has not ended, or starts later, has an id at least that large. So
// Changes(since) returns the trials with since <= bench_seq < xmin and
// xmin as the next number; a change committed with a larger id is
// returned by a later poll, not missed. The price: a transaction with an
// id (one that wrote anything, in any database of the server) that stays
// open holds xmin back, and with it every reader's view of the changes
// committed after it began, until it ends (see docs/storage.md). Numbers
// are not per experiment and not consecutive.
//
// On MySQL and MariaDB, where writers run at once and InnoDB tells
// neither a transaction its id nor a reader the oldest open one without
// the PROCESS privilege, the number is taken from bench_feed's row of the
// experiment, which locks that row until the commit: numbers thus commit
// in order. It is taken, and the changed trials stamped with it, in the
// transaction's last round trip, together with the statement the
// transaction ends with anyway where there is one (takeAndStamp: the
// insert of a trial's status history): a multi-statement in which the
// number is LAST_INSERT_ID(expr), the documented way to emulate a
// sequence. The trials' own statements write a guess of the number
// (guessSeq), and the stamp writes only the trials whose guess is wrong:
// with one writer, never; with several, whose transactions take numbers
// in another order than they guessed, often (then a trial's row is
// written twice, as it always was before schema version 8). Whatever the
// guess, what commits is the number taken under bench_feed's lock. Locks
// are taken in one order: trials' rows, then the experiment's row
// (insertTrial), then bench_feed's; nothing is locked after it but the
// transaction's own rows.

// guess is a change number written into the trials a transaction changes
// before it takes the real one (MySQL, MariaDB; see takeAndStamp);
// release must be called when the transaction ends
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
// On SQLite and PostgreSQL the statement computes the number itself (no
// guess).
func (e *experiment) guessSeq() *guess {
	if !e.takesSeq() {
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

// takesSeq reports whether the experiment's change numbers are taken from
// bench_feed (MySQL, MariaDB) rather than computed by the statements that
// change trials (SQLite, PostgreSQL).
func (e *experiment) takesSeq() bool {
	return false
}

// seqExpr is the value of bench_seq in a statement that changes trials of
// the experiment, with one argument, seqArg: on SQLite the experiment's
// largest number plus one; on PostgreSQL the transaction's id (the
// argument is NULL); on MySQL and MariaDB the guess (the column as it is
// for none).
func (e *experiment) seqExpr() string {
	switch e.s.dialect.name() {
	case "sqlite":
		return `COALESCE((SELECT MAX(bench_seq) FROM trial WHERE exp_id = ? AND bench_seq IS NOT NULL), 0) + 1`
	case "postgres":
		return `COALESCE(?, ` + pgXactID + `)`
	}
	return `?`
}

// pendingSet is what a statement that changes trials adds to its SET list
// on MySQL and MariaDB: the change waits for a reader to number it (see
// the comment at the top); elsewhere nothing (touch numbers them).
func (e *experiment) pendingSet() string {
	if e.s.dialect.name() == "mysql" {
		return ", bench_seq = NULL"
	}
	return ""
}

// pgXactID is the PostgreSQL transaction's id as a BIGINT (xid8 has no
// cast to it but through text; it is below 2^63).
const pgXactID = `pg_current_xact_id()::text::bigint`

// seqValue is seqExpr for a new trial's INSERT (with seqArg): the guess
// (or NULL) on MySQL and MariaDB.
func (e *experiment) seqValue() string {
	if !e.takesSeq() {
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
// guess g into; on SQLite and PostgreSQL the statements numbered them
// already. When the experiment has no bench_feed row yet (its first
// change, or one created by mlos_bench), it creates it.
func (e *experiment) settle(ctx context.Context, r runner, g *guess, where string, args ...any) error {
	if !e.takesSeq() {
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
	if e.s.dialect.name() == "mysql" {
		return nil // marked pending by the statement itself (pendingSet)
	}
	if !e.takesSeq() {
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
// is wrong are written again. On MySQL and MariaDB it is a
// multi-statement: the number is LAST_INSERT_ID, reset first so that a
// missing bench_feed row is told from a number taken earlier on the
// connection, and set again by the stamp so that its reply carries it; a
// row set to the value it has is not written (and counts as matched, see
// ClientFoundRows). It reports whether it took the number: not on SQLite
// and PostgreSQL (the statements numbered the trials: q alone runs), nor
// when the experiment has no bench_feed row yet (settle creates it).
func (e *experiment) takeAndStamp(ctx context.Context, r runner, q string, args []any, g *guess, where string, whereArgs ...any) (bool, error) {
	var seq int64
	switch e.s.dialect.name() {
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
// row until the commit (see above), and returns it (MySQL, MariaDB).
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
// false when the experiment has no bench_feed row (MySQL, MariaDB: the
// reply to the UPDATE carries LAST_INSERT_ID, here set to the new number;
// rows affected: matched, see ClientFoundRows).
func (e *experiment) nextSeq(ctx context.Context, r runner) (int64, bool, error) {
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

// Changes returns the trials bench changed after change number since, by
// id, and the number to ask from next time. since 0 returns every trial
// (those mlos_bench wrote included).
func (e *experiment) Changes(ctx context.Context, since int64) ([]storage.Trial, int64, error) {
	if since < 0 {
		return nil, 0, fmt.Errorf("%w: change number %d", storage.ErrInvalid, since)
	}
	if e.s.dialect.name() == "postgres" {
		return e.pgChanges(ctx, since)
	}
	onMySQL := e.s.dialect.name() == "mysql"
	var (
		out      []storage.Trial
		next     int64
		numbered bool // (MySQL) this call numbered the pending changes
	)
	for {
		var pending bool
		next = since
		from := since
		err := e.s.read(ctx, func(r runner) error {
			// The number first: a change committed after it is read again
			// next time rather than missed.
			var seq dbsql.NullInt64
			q := `SELECT seq FROM bench_feed WHERE exp_id = ?`
			args := []any{e.info.ID}
			switch e.s.dialect.name() {
			case "sqlite":
				q = `SELECT MAX(bench_seq) FROM trial WHERE exp_id = ? AND bench_seq IS NOT NULL`
			case "mysql":
				// And whether a committed change waits for its number.
				q = `SELECT (SELECT seq FROM bench_feed WHERE exp_id = ?), EXISTS (SELECT 1 FROM trial WHERE exp_id = ? AND bench_seq IS NULL)`
				args = append(args, e.info.ID)
			}
			row := r.queryRow(ctx, q, args...)
			var err error
			if onMySQL {
				err = row.Scan(&seq, &pending)
			} else {
				err = row.Scan(&seq)
			}
			if err != nil && err != dbsql.ErrNoRows {
				return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, e.s.scrub(err))
			}
			if pending && !numbered && !e.s.feedUnnumbered.Load() {
				return nil // numbered first (below), then read again
			}
			if seq.Int64 < from {
				// The experiment's numbers are behind the caller's: not this
				// numbering (a database restored from a backup or replaced, or
				// a number a schema-7 bench took from bench_feed on SQLite that
				// no trial kept). Everything is changed, as from 0, rather than
				// nothing until the numbers catch up.
				from = 0
			}
			next = max(seq.Int64, from)
			if from == 0 {
				out, err = e.loadTrials(ctx, r, "1 = 1", nil, 0)
				return err
			}
			// Changes waiting for a number that this reader cannot give
			// (MySQL, no write privilege: see numberPending) are returned
			// in every poll until a reader that can numbers them.
			withPending := pending && e.s.feedUnnumbered.Load()
			if next == from && !withPending {
				return nil // nothing changed: no scan
			}
			cond := "t.bench_seq > ? AND t.bench_seq <= ?"
			if withPending {
				cond = "((t.bench_seq > ? AND t.bench_seq <= ?) OR t.bench_seq IS NULL)"
			}
			out, err = e.loadTrials(ctx, r, cond, []any{from, next}, 0)
			return err
		})
		if err != nil {
			return nil, since, err
		}
		if !onMySQL || !pending || numbered || e.s.feedUnnumbered.Load() {
			return out, next, nil
		}
		if err := e.numberPending(ctx); err != nil {
			return nil, since, err
		}
		numbered = true
	}
}

// errNothingPending ends a numbering transaction that found nothing to
// number (it is rolled back: the feed's number stays).
var errNothingPending = errors.New("no change waits for a number")

// numberPending gives the experiment's committed changes that wait for a
// number (bench_seq NULL) the next number, in a short transaction of its
// own (MySQL, MariaDB; see the comment at the top). A reader that may not
// write (a user without the UPDATE privilege, a read-only server) numbers
// nothing, and from then on returns the waiting changes in every poll
// (Store.feedUnnumbered).
func (e *experiment) numberPending(ctx context.Context) error {
	err := e.s.write(ctx, func(r runner) error {
		// The experiment's first numbering (or one created by mlos_bench):
		// its row, once whoever numbers at the same time.
		if _, err := r.exec(ctx, `INSERT INTO bench_feed (exp_id, seq) VALUES (?, 0)`+e.s.dialect.ignoreDup("exp_id"), e.info.ID); err != nil {
			return err
		}
		// One round trip: the number is LAST_INSERT_ID, reset first so
		// that a missing row is not mistaken for a number taken earlier
		// on the connection, and set again by the stamp so that its reply
		// carries it. Locking the feed's row first orders the numberings.
		res, err := r.exec(ctx, `DO LAST_INSERT_ID(0); UPDATE bench_feed SET seq = LAST_INSERT_ID(seq + 1) WHERE exp_id = ?;
			UPDATE trial SET bench_seq = LAST_INSERT_ID(LAST_INSERT_ID()) WHERE exp_id = ? AND LAST_INSERT_ID() > 0 AND bench_seq IS NULL`,
			e.info.ID, e.info.ID)
		if err != nil {
			return err
		}
		if ok, err := affected(res); err != nil || !ok {
			if err == nil {
				err = errNothingPending
			}
			return err
		}
		return nil
	})
	switch {
	case err == nil, errors.Is(err, errNothingPending):
		return nil
	case mayNotWrite(err):
		if !e.s.feedUnnumbered.Swap(true) {
			e.s.log.Debug("storage: this user may not number the change feed; changes waiting for a number are read in every poll",
				"storage", e.s.describe, "err", e.s.scrub(err))
		}
		return nil
	}
	return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, e.s.scrub(err))
}

// mayNotWrite reports MySQL's errors for a write the user or the server
// does not allow: a table privilege missing (1142), a database privilege
// missing (1044), a read-only server (1290, ER_OPTION_PREVENTS_STATEMENT)
// or transaction (1792).
func mayNotWrite(err error) bool {
	var me *mysqldrv.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1142, 1044, 1290, 1792:
		return true
	}
	return false
}

// pgChanges is Changes on PostgreSQL (schema version 9), where a change's
// number is its transaction's id: the trials with since <= bench_seq <
// xmin, xmin being the snapshot's oldest transaction still open (or, with
// none open, the next id to be given), and xmin as the next number. The
// read runs in one snapshot (REPEATABLE READ), so xmin and the trials are
// of the same moment; the first statement also tells whether anything is
// in that range, so that a poll that finds nothing is one statement.
func (e *experiment) pgChanges(ctx context.Context, since int64) ([]storage.Trial, int64, error) {
	var out []storage.Trial
	next := since
	err := e.s.read(ctx, func(r runner) error {
		var (
			xmin              int64
			numbered, changed bool
		)
		err := r.queryRow(ctx, `SELECT h.xmin,
				EXISTS (SELECT 1 FROM trial WHERE exp_id = ? AND bench_seq IS NOT NULL),
				EXISTS (SELECT 1 FROM trial WHERE exp_id = ? AND bench_seq >= ? AND bench_seq < h.xmin)
			FROM (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin) h`,
			e.info.ID, e.info.ID, since).Scan(&xmin, &numbered, &changed)
		if err != nil {
			return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, e.s.scrub(err))
		}
		switch {
		case !numbered:
			// No trial has a number (none yet, or only mlos_bench's): 0,
			// so that the caller reads every trial again next time, as
			// before the feed.
			next = 0
			since = 0
		case since > xmin:
			// The caller's number is ahead of this server's transaction
			// ids: not this numbering (a database restored on another
			// server).
			// Everything is changed, as from 0, rather than nothing until
			// the ids catch up.
			since, next = 0, xmin
		default:
			next = xmin
		}
		if since == 0 {
			out, err = e.loadTrials(ctx, r, "1 = 1", nil, 0)
			return err
		}
		if !changed {
			return nil
		}
		out, err = e.loadTrials(ctx, r, "t.bench_seq >= ? AND t.bench_seq < ?", []any{since, next}, 0)
		return err
	})
	if err != nil {
		return nil, since, err
	}
	return out, next, nil
}
