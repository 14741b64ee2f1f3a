package sql

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// WithOwner returns a view of the experiment acting for owner.
func (e *experiment) WithOwner(owner string, lease time.Duration) storage.Experiment {
	owner = clean(strings.TrimSpace(owner))
	if owner == "" {
		return &experiment{s: e.s, info: e.info}
	}
	return &experiment{s: e.s, info: e.info, owner: owner, lease: lease}
}

// minLease is the shortest lease an owner view accepts.
const minLease = time.Millisecond

// leaseTimes returns the time now on the database's clock and the end of
// a lease taken now.
func (e *experiment) leaseTimes(ctx context.Context) (now, until time.Time, err error) {
	if e.lease < minLease {
		return now, until, fmt.Errorf("%w: owner %q of experiment %q: lease %v is shorter than %v", storage.ErrInvalid, e.owner, e.info.ID, e.lease, minLease)
	}
	if now, err = e.s.now(ctx); err != nil {
		return now, until, err
	}
	return now, normTime(now.Add(e.lease)), nil
}

// needOwner refuses what only an owner view may do.
func (e *experiment) needOwner(what string) error {
	if e.owner == "" {
		return fmt.Errorf("%w: %s of experiment %q needs an owner (use WithOwner)", storage.ErrInvalid, what, e.info.ID)
	}
	return nil
}

// clockRefresh is how often the offset of the database server's clock is
// measured again.
const clockRefresh = time.Minute

// now is the current time on the database's clock, which all the processes
// sharing the database agree on: leases are set and compared with it. An
// SQLite database is on this machine and shares its clock. For PostgreSQL
// and MySQL the offset of the server's clock is measured (one query) at
// most once per clockRefresh; between measurements the local monotonic
// clock counts. A clock given in the config (tests) replaces all this.
func (s *Store) now(ctx context.Context) (time.Time, error) {
	if s.clock != nil {
		return normTime(s.clock()), nil
	}
	q := s.dialect.clockQuery()
	if q == "" {
		return normTime(time.Time{}), nil
	}
	s.clockMu.Lock()
	defer s.clockMu.Unlock()
	if s.clockAt.IsZero() || time.Since(s.clockAt) > clockRefresh {
		var server dbTime
		t0 := time.Now()
		if err := s.db.QueryRowContext(ctx, q).Scan(&server); err != nil {
			return time.Time{}, fmt.Errorf("storage: read the clock of %s: %w", s.describe, s.scrub(err))
		}
		t1 := time.Now()
		s.clockOffset = server.t.Sub(t0.Add(t1.Sub(t0) / 2))
		s.clockAt = t1
	}
	return normTime(time.Now().Add(s.clockOffset)), nil
}

// placeholders is "?, ?, ..." for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// Claim takes up to limit claimable trials for the view's owner. The
// selection and the update are one statement (two on MySQL) in one write
// transaction: on SQLite the transaction holds the database's write lock
// from its start (BEGIN IMMEDIATE), so claims run one after the other; on
// PostgreSQL and MySQL the rows selected are locked, and rows another claim
// holds are skipped (FOR UPDATE SKIP LOCKED), and a row another claim took
// in the meantime no longer meets the condition when it is locked.
func (e *experiment) Claim(ctx context.Context, limit int) ([]storage.Trial, error) {
	if err := e.needOwner("claim"); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, fmt.Errorf("%w: claim %d trials of experiment %q: want 1 or more", storage.ErrInvalid, limit, e.info.ID)
	}
	now, until, err := e.leaseTimes(ctx)
	if err != nil {
		return nil, err
	}
	const pick = `SELECT trial_id FROM trial WHERE exp_id = ? AND ts_end IS NULL AND stop_requested IS NULL
			   AND (owner IS NULL OR lease_until IS NULL OR lease_until < ?)
			 ORDER BY trial_id LIMIT ?`
	var out []storage.Trial
	err = e.s.write(ctx, func(r runner) error {
		out = nil
		var ids []any
		scanID := func(rows *dbsql.Rows) error {
			var id int
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
			return nil
		}
		var err error
		if e.s.dialect.returning() {
			// The candidates are picked once (a materialized CTE): PostgreSQL
			// may otherwise evaluate a LIMIT … SKIP LOCKED subquery of an
			// UPDATE more than once and take more than limit rows.
			// On PostgreSQL the same statement gives the trials their
			// change number (the transaction's id, see seqExpr).
			stamp := ""
			if e.s.dialect.name() == "postgres" {
				stamp = ", bench_seq = " + pgXactID
			}
			err = r.each(ctx, scanID, `WITH picked AS MATERIALIZED (`+pick+e.s.dialect.skipLocked()+`)
			UPDATE trial SET owner = ?, lease_until = ?`+stamp+` WHERE exp_id = ? AND trial_id IN (SELECT trial_id FROM picked)
			RETURNING trial_id`,
				e.info.ID, e.s.dialect.ts(now), limit, e.owner, e.s.dialect.ts(until), e.info.ID)
		} else {
			// MySQL has no UPDATE … RETURNING: the rows picked are locked
			// (skipping those another claim holds) until the transaction
			// ends, then updated.
			err = r.each(ctx, scanID, pick+e.s.dialect.skipLocked(), e.info.ID, e.s.dialect.ts(now), limit)
			if err == nil && len(ids) > 0 {
				_, err = r.exec(ctx, `UPDATE trial SET owner = ?, lease_until = ?`+e.pendingSet()+` WHERE exp_id = ? AND trial_id IN (`+placeholders(len(ids))+`)`,
					append([]any{e.owner, e.s.dialect.ts(until), e.info.ID}, ids...)...)
			}
		}
		if err != nil {
			return fmt.Errorf("storage: claim trials of %q for %q: %w", e.info.ID, e.owner, err)
		}
		if len(ids) == 0 {
			return nil
		}
		if e.s.dialect.name() != "postgres" {
			if err := e.touch(ctx, r, "trial_id IN ("+placeholders(len(ids))+")", ids...); err != nil {
				return err
			}
		}
		out, err = e.loadTrials(ctx, r, "t.trial_id IN ("+placeholders(len(ids))+")", ids, 0)
		return err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []storage.Trial{}
	}
	return out, nil
}

// Heartbeat extends the leases of the owner's unfinished trials.
func (e *experiment) Heartbeat(ctx context.Context) (int, error) {
	if err := e.needOwner("heartbeat"); err != nil {
		return 0, err
	}
	_, until, err := e.leaseTimes(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	err = e.s.write(ctx, func(r runner) error {
		res, err := r.exec(ctx, `UPDATE trial SET lease_until = ? WHERE exp_id = ? AND owner = ? AND ts_end IS NULL`,
			e.s.dialect.ts(until), e.info.ID, e.owner)
		if err != nil {
			return fmt.Errorf("storage: extend the leases of %q on %q: %w", e.owner, e.info.ID, err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// Release hands back the owner's unfinished trials.
func (e *experiment) Release(ctx context.Context) error {
	if err := e.needOwner("release"); err != nil {
		return err
	}
	return e.s.write(ctx, func(r runner) error {
		var ids []any
		if err := r.each(ctx, func(rows *dbsql.Rows) error {
			var id int
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
			return nil
		}, `SELECT trial_id FROM trial WHERE exp_id = ? AND owner = ? AND ts_end IS NULL`, e.info.ID, e.owner); err != nil {
			return fmt.Errorf("storage: release the trials of %q on %q: %w", e.owner, e.info.ID, err)
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := r.exec(ctx, `UPDATE trial SET owner = NULL, lease_until = NULL`+e.pendingSet()+` WHERE exp_id = ? AND owner = ? AND ts_end IS NULL`,
			e.info.ID, e.owner); err != nil {
			return fmt.Errorf("storage: release the trials of %q on %q: %w", e.owner, e.info.ID, err)
		}
		return e.touch(ctx, r, "trial_id IN ("+placeholders(len(ids))+")", ids...)
	})
}

// RequestStop records a stop request for a trial, or (trialID 0) for the
// experiment.
func (e *experiment) RequestStop(ctx context.Context, trialID int) error {
	if trialID < 0 {
		return fmt.Errorf("%w: stop trial %d", storage.ErrInvalid, trialID)
	}
	now := e.s.dialect.ts(normTime(time.Time{}))
	return e.s.write(ctx, func(r runner) error {
		if trialID == 0 {
			res, err := r.exec(ctx, `UPDATE experiment SET stop_requested = COALESCE(stop_requested, ?) WHERE exp_id = ?`, now, e.info.ID)
			if err != nil {
				return fmt.Errorf("storage: request experiment %q to stop: %w", e.info.ID, err)
			}
			if ok, err := affected(res); err != nil || !ok {
				if err != nil {
					return err
				}
				return fmt.Errorf("%w: experiment %q", storage.ErrNotFound, e.info.ID)
			}
			return nil
		}
		res, err := r.exec(ctx, `UPDATE trial SET stop_requested = COALESCE(stop_requested, ?), bench_seq = `+e.seqExpr()+` WHERE exp_id = ? AND trial_id = ? AND ts_end IS NULL`,
			now, e.seqArg(), e.info.ID, trialID)
		if err != nil {
			return fmt.Errorf("storage: request trial %d of %q to stop: %w", trialID, e.info.ID, err)
		}
		if ok, err := affected(res); err != nil || !ok {
			if err != nil {
				return err
			}
			return e.unchanged(ctx, r, trialID, false)
		}
		return nil
	})
}

// StopRequests lists the stop requests of the experiment and of its
// unfinished trials.
func (e *experiment) StopRequests(ctx context.Context) (bool, []int, error) {
	var (
		stopExp bool
		trials  []int
	)
	err := e.s.read(ctx, func(r runner) error {
		var stop dbTime
		err := r.queryRow(ctx, `SELECT stop_requested FROM experiment WHERE exp_id = ?`, e.info.ID).Scan(&stop)
		if errors.Is(err, dbsql.ErrNoRows) {
			return fmt.Errorf("%w: experiment %q", storage.ErrNotFound, e.info.ID)
		}
		if err != nil {
			return fmt.Errorf("storage: stop requests of %q: %w", e.info.ID, e.s.scrub(err))
		}
		stopExp = stop.valid
		err = r.each(ctx, func(rows *dbsql.Rows) error {
			var id int
			if err := rows.Scan(&id); err != nil {
				return err
			}
			trials = append(trials, id)
			return nil
		}, `SELECT trial_id FROM trial WHERE exp_id = ? AND ts_end IS NULL AND stop_requested IS NOT NULL ORDER BY trial_id`, e.info.ID)
		if err != nil {
			return fmt.Errorf("storage: stop requests of the trials of %q: %w", e.info.ID, err)
		}
		return nil
	})
	if err != nil {
		return false, nil, err
	}
	return stopExp, trials, nil
}

// ClearStopRequest withdraws the experiment's stop request.
func (e *experiment) ClearStopRequest(ctx context.Context) error {
	return e.s.write(ctx, func(r runner) error {
		res, err := r.exec(ctx, `UPDATE experiment SET stop_requested = NULL WHERE exp_id = ?`, e.info.ID)
		if err != nil {
			return fmt.Errorf("storage: clear the stop request of %q: %w", e.info.ID, err)
		}
		if ok, err := affected(res); err != nil || !ok {
			if err != nil {
				return err
			}
			return fmt.Errorf("%w: experiment %q", storage.ErrNotFound, e.info.ID)
		}
		return nil
	})
}

// FindSucceeded finds a succeeded trial of a configuration and repeat.
func (e *experiment) FindSucceeded(ctx context.Context, configHash, repeat string) (storage.Trial, bool, error) {
	return e.findTrial(ctx, configHash, repeat, "t.status = '"+trial.SUCCEEDED.String()+"'")
}

// InFlight finds an unfinished trial of a configuration and repeat that
// nobody asked to stop.
func (e *experiment) InFlight(ctx context.Context, configHash, repeat string) (storage.Trial, bool, error) {
	return e.findTrial(ctx, configHash, repeat, "t.ts_end IS NULL AND t.stop_requested IS NULL")
}

// findTrial returns the lowest-id trial of the experiment with the
// configuration hash, the trial parameter repeat_i = repeat (any when
// repeat is "") and cond. The hash leads to the configuration (unique
// index), the configuration to its few trials (trial_config_idx), and each
// trial to its repeat_i (trial_param's primary key).
func (e *experiment) findTrial(ctx context.Context, configHash, repeat, cond string) (storage.Trial, bool, error) {
	var (
		found storage.Trial
		ok    bool
	)
	err := e.s.read(ctx, func(r runner) error {
		var err error
		found, ok, err = e.findTrialIn(ctx, r, configHash, repeat, cond)
		return err
	})
	return found, ok, err
}

// findTrialIn is findTrial in the transaction of r.
func (e *experiment) findTrialIn(ctx context.Context, r runner, configHash, repeat, cond string) (storage.Trial, bool, error) {
	hash := clean(strings.TrimSpace(configHash))
	if hash == "" {
		return storage.Trial{}, false, fmt.Errorf("%w: empty config hash", storage.ErrInvalid)
	}
	q, args := e.findTrialQuery(hash, repeat, cond)
	var id int
	err := r.queryRow(ctx, q, args...).Scan(&id)
	if errors.Is(err, dbsql.ErrNoRows) {
		return storage.Trial{}, false, nil
	}
	if err != nil {
		return storage.Trial{}, false, fmt.Errorf("storage: find a trial of config %s in %q: %w", hash, e.info.ID, e.s.scrub(err))
	}
	trials, err := e.loadTrials(ctx, r, "t.trial_id = ?", []any{id}, 0)
	if err != nil || len(trials) != 1 {
		return storage.Trial{}, false, err
	}
	return trials[0], true, nil
}

// findTrialQuery is findTrialIn's statement. On SQLite the experiment's
// condition is written +t.exp_id: without statistics SQLite would
// otherwise walk every trial of the experiment by the primary key's
// leading column (exp_id) and check each one's configuration, a look-up
// that grows with the experiment, instead of going from the
// configuration to its few trials through trial_config_idx
// (TestFindTrialPlanSQLite).
func (e *experiment) findTrialQuery(hash, repeat, cond string) (string, []any) {
	q := `SELECT t.trial_id FROM trial t JOIN config c ON c.config_id = t.config_id`
	var args []any
	if repeat != "" {
		q += ` JOIN trial_param p ON p.exp_id = t.exp_id AND p.trial_id = t.trial_id AND p.param_id = 'repeat_i' AND p.param_value = ?`
		args = append(args, clean(repeat))
	}
	exp := `t.exp_id = ?`
	if _, ok := e.s.dialect.(sqliteDialect); ok {
		exp = `+t.exp_id = ?` // no index for this term: see above
	}
	q += ` WHERE c.config_hash = ? AND ` + exp + ` AND ` + cond + ` ORDER BY t.trial_id LIMIT 1`
	return q, append(args, hash, e.info.ID)
}

// Counts counts the experiment's trials by status.
func (e *experiment) Counts(ctx context.Context) (map[trial.Status]int, error) {
	out := map[trial.Status]int{}
	err := e.s.read(ctx, func(r runner) error {
		clear(out)
		return r.each(ctx, func(rows *dbsql.Rows) error {
			var (
				status string
				n      int
			)
			if err := rows.Scan(&status, &n); err != nil {
				return err
			}
			st, err := trial.ParseStatus(status)
			if err != nil {
				return fmt.Errorf("experiment %q: %w", e.info.ID, err)
			}
			out[st] += n
			return nil
		}, `SELECT status, COUNT(*) FROM trial WHERE exp_id = ? GROUP BY status`, e.info.ID)
	})
	if err != nil {
		return nil, fmt.Errorf("storage: count the trials of %q: %w", e.info.ID, err)
	}
	return out, nil
}

// RegisterWorker records the owner as a worker of the experiment with
// runners trial runners, alive until its lease ends; calling it again
// renews it.
func (e *experiment) RegisterWorker(ctx context.Context, runners int) error {
	if err := e.needOwner("register a worker"); err != nil {
		return err
	}
	if runners < 1 {
		return fmt.Errorf("%w: worker %q of %q: %d runners", storage.ErrInvalid, e.owner, e.info.ID, runners)
	}
	_, until, err := e.leaseTimes(ctx)
	if err != nil {
		return err
	}
	return e.s.write(ctx, func(r runner) error {
		if _, err := r.exec(ctx, `INSERT INTO worker (exp_id, owner, runners, lease_until) VALUES (?, ?, ?, ?)`+
			e.s.dialect.upsert("exp_id, owner", "runners", "lease_until"),
			e.info.ID, e.owner, runners, e.s.dialect.ts(until)); err != nil {
			return fmt.Errorf("storage: register worker %q of %q: %w", e.owner, e.info.ID, err)
		}
		return nil
	})
}

// UnregisterWorker removes the owner from the experiment's workers.
func (e *experiment) UnregisterWorker(ctx context.Context) error {
	if err := e.needOwner("unregister a worker"); err != nil {
		return err
	}
	return e.s.write(ctx, func(r runner) error {
		if _, err := r.exec(ctx, `DELETE FROM worker WHERE exp_id = ? AND owner = ?`, e.info.ID, e.owner); err != nil {
			return fmt.Errorf("storage: unregister worker %q of %q: %w", e.owner, e.info.ID, err)
		}
		return nil
	})
}

// WorkerRunners returns the number of trial runners of the experiment's
// live workers (lease not expired), this view's owner left out.
func (e *experiment) WorkerRunners(ctx context.Context) (int, error) {
	now, err := e.s.now(ctx)
	if err != nil {
		return 0, err
	}
	var n dbsql.NullInt64
	err = e.s.read(ctx, func(r runner) error {
		return r.queryRow(ctx, `SELECT SUM(runners) FROM worker WHERE exp_id = ? AND owner <> ? AND lease_until >= ?`,
			e.info.ID, e.owner, e.s.dialect.ts(now)).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("storage: workers of %q: %w", e.info.ID, e.s.scrub(err))
	}
	return int(n.Int64), nil
}
