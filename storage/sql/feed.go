package sql

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"

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
// On MySQL and MariaDB (schema version 10), where writers run at once and
// InnoDB tells neither a transaction its id nor a reader the oldest open
// one without the PROCESS privilege, the readers number the changes.
// A writer takes no number and no lock of the feed's: the statements that
// change trials set bench_seq to NULL, "pending", in the statements they
// run anyway (seqExpr, pendingSet). A reader (Changes) that finds a
// committed pending change first numbers them (numberPending), in a short
// transaction of its own: it locks the experiment's bench_feed row and
// takes the next number, seq+1, gives it to every pending trial of the
// experiment (UPDATE trial SET bench_seq = … WHERE exp_id = ? AND
// bench_seq IS NULL), and commits, or rolls back (the number returns)
// when it numbered none. Then it reads as before, in one snapshot: the
// bench_feed number S, and the trials with since < bench_seq <= S.
//
// Why nothing is missed. (1) A trial is numbered only by a locking UPDATE,
// which must hold the row's lock to change it: it waits for a writer that
// holds the row, or (READ COMMITTED's semi-consistent read) passes over
// it when the row's last committed version is not pending; either way a
// number is only ever given to a committed change, and a change still
// open stays pending. (2) Numbers are taken under bench_feed's row lock,
// so they grow, and a number commits with the trials it numbered, in one
// transaction: when a snapshot shows bench_feed at S, every trial
// numbered S or less is in it (the same holds for the numbers a bench of
// schema version 9 or older takes as a writer, under the same lock).
// (3) A change that commits after a reader's snapshot is pending when it
// commits, and the numbering that numbers it holds the lock after the
// snapshot's S committed, so it gives a number above S: the next poll
// (from S) returns it. A change to a trial numbered already sets it
// pending again, so its last state is numbered again, later. So
// Changes(since) misses nothing, and returns a change more than once only
// when a reader could not number it (below).
//
// Locks. Writers lock trials' rows, then the experiment's row
// (insertTrial); a numbering reader locks bench_feed's row, then pending
// trials' rows in the index's order. A writer never waits for bench_feed,
// so the two deadlock only over two trials' rows: the reader holds one it
// numbered and waits for another that a writer changes, and the writer
// then changes the first. InnoDB detects it and rolls one of them back;
// write runs a rolled-back transaction again, a reader's as a writer's.
// Several readers number one after another (bench_feed's lock), each
// reading up to its own S. A writer waits for a numbering reader only for
// a trial the reader holds, for as long as that short transaction lasts;
// a claim (FOR UPDATE SKIP LOCKED) passes over such a trial for that
// moment, as over one another claim holds.
//
// A reader that may not write (a user without the UPDATE privilege, a
// read-only server: mayNotWrite) numbers nothing and returns the pending
// trials in every poll besides the numbered ones (Store.feedUnnumbered),
// until a reader that may numbers them. bench_seq and bench_feed are
// bench's own: mlos_bench never names them, and the trials it inserts
// (NULL: pending) are numbered once by the first reader. The schema is
// version 9's; version 10 marks that writers leave changes pending, so
// that a bench of version 9 (whose reader would not see them) refuses the
// database instead of missing changes.

// seqExpr is the value of bench_seq in a statement that changes trials of
// the experiment, with one argument, seqArg: on SQLite the experiment's
// largest number plus one; on PostgreSQL the transaction's id (the
// argument is NULL); on MySQL and MariaDB NULL, the change waiting for a
// reader to number it.
func (e *experiment) seqExpr() string {
	switch e.s.dialect.name() {
	case "sqlite":
		return `COALESCE((SELECT MAX(bench_seq) FROM trial WHERE exp_id = ? AND bench_seq IS NOT NULL), 0) + 1`
	case "postgres":
		return `COALESCE(?, ` + pgXactID + `)`
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

// touch numbers the trials of the experiment that where selects (several
// trials: claims, releases), as the transaction's last statement; on
// MySQL and MariaDB the statement that changed them marked them pending
// already (pendingSet).
func (e *experiment) touch(ctx context.Context, r runner, where string, args ...any) error {
	if e.s.dialect.name() == "mysql" {
		return nil
	}
	_, err := r.exec(ctx, `UPDATE trial SET bench_seq = `+e.seqExpr()+` WHERE exp_id = ? AND `+where,
		append([]any{e.seqArg(), e.info.ID}, args...)...)
	if err != nil {
		return fmt.Errorf("storage: change feed of %q: %w", e.info.ID, err)
	}
	return nil
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
		var pending, feedRow bool
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
			feedRow = seq.Valid
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
		if err := e.numberPending(ctx, feedRow); err != nil {
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
// nothing and from then on returns the waiting changes in every poll
// (Store.feedUnnumbered). feedRow: the experiment has its bench_feed row
// (without it, its first numbering, or an experiment mlos_bench created,
// creates it, once whoever numbers at the same time).
func (e *experiment) numberPending(ctx context.Context, feedRow bool) error {
	if e.s.readOnly {
		// A command that only reads (storage.Config.ReadOnly) writes
		// nothing, numbers included: it reads the waiting changes in every
		// poll, as a user who may not write does.
		e.s.feedUnnumbered.Store(true)
		return nil
	}
	q, args := "", []any{}
	if !feedRow {
		q, args = `INSERT INTO bench_feed (exp_id, seq) VALUES (?, 0)`+e.s.dialect.ignoreDup("exp_id")+`; `, []any{e.info.ID}
	}
	// One round trip (a multi-statement): the number is LAST_INSERT_ID,
	// reset first so that a missing row is not mistaken for a number taken
	// earlier on the connection. bench_feed's row is locked first (the
	// numberings' order); the reply is the trials' UPDATE's, with the
	// number of trials it numbered (matched, see ClientFoundRows: a
	// pending row always changes).
	q += `DO LAST_INSERT_ID(0); UPDATE bench_feed SET seq = LAST_INSERT_ID(seq + 1) WHERE exp_id = ?;
		UPDATE trial SET bench_seq = LAST_INSERT_ID() WHERE exp_id = ? AND LAST_INSERT_ID() > 0 AND bench_seq IS NULL`
	args = append(args, e.info.ID, e.info.ID)
	err := e.s.write(ctx, func(r runner) error {
		res, err := r.exec(ctx, q, args...)
		if err != nil {
			return err
		}
		if ok, err := affected(res); err != nil || !ok {
			if err == nil {
				err = errNothingPending // rolled back: the number returns
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
