package sql

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"github.com/benchtune/bench/trial"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benchtune/bench/storage"
)

// NewTrial queues a new trial.
func (e *experiment) NewTrial(ctx context.Context, spec storage.TrialSpec) (storage.Trial, error) {
	nt, err := e.planTrial(ctx, spec)
	if err != nil {
		return storage.Trial{}, err
	}
	err = e.s.write(ctx, func(r runner) error {
		// The configuration's id is found again in every attempt: a
		// transaction the database rolled back (write runs it again) may
		// have created it.
		var configID int64
		locked := false
		if spec.MaxConfigs > 0 {
			if err := e.checkBudget(ctx, r, nt.ConfigHash, spec.MaxConfigs); err != nil {
				return err
			}
			locked = true
		}
		if spec.Claim {
			var err error
			if configID, err = e.checkClaim(ctx, r, nt, locked); err != nil {
				return err
			}
			locked = true
		}
		return e.insertTrial(ctx, r, nt, configID, locked)
	})
	if err != nil {
		return storage.Trial{}, err
	}
	return *nt, nil
}

// lockExperiment locks the experiment's row to the end of the
// transaction (SELECT ... FOR UPDATE; on SQLite the transaction is the
// only writer anyway): every transaction that stores a trial takes it
// first, so trial ids, claims and the budget of configurations are
// decided one writer at a time. It is the first lock these transactions
// take, so it adds no lock order of its own.
func (e *experiment) lockExperiment(ctx context.Context, r runner) error {
	var exp string
	err := r.queryRow(ctx, `SELECT exp_id FROM experiment WHERE exp_id = ?`+e.s.dialect.forUpdate(), e.info.ID).Scan(&exp)
	if errors.Is(err, dbsql.ErrNoRows) {
		return fmt.Errorf("%w: experiment %q", storage.ErrNotFound, e.info.ID)
	}
	if err != nil {
		return fmt.Errorf("storage: new trial of %q: %w", e.info.ID, e.s.scrub(err))
	}
	return nil
}

// checkBudget is TrialSpec.MaxConfigs: it takes the experiment's lock
// (held to the end of the transaction) and then, a trial of a
// configuration the experiment holds no trial of yet is storage.
// ErrBudgetSpent when the experiment holds max distinct configurations
// already. Under the lock the count is exact: every transaction that
// stores a trial of the experiment holds the lock until it commits, and
// each statement of a write transaction reads what committed before it
// (READ COMMITTED on PostgreSQL and MySQL/MariaDB, one writer on
// SQLite). The configurations are counted from mlos_bench's own tables,
// incrementally (heldConfigs): a check reads only the trials stored since
// this process's last one.
func (e *experiment) checkBudget(ctx context.Context, r runner, hash string, max int) error {
	if err := e.lockExperiment(ctx, r); err != nil {
		return err
	}
	h := e.s.heldConfigs(e.info.ID)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.refresh(ctx, r, e.info.ID); err != nil {
		return fmt.Errorf("storage: count the configurations of %q: %w", e.info.ID, e.s.scrub(err))
	}
	if len(h.ids) < max {
		return nil
	}
	var id int64
	err := r.queryRow(ctx, `SELECT config_id FROM config WHERE config_hash = ?`, hash).Scan(&id)
	if err != nil && !errors.Is(err, dbsql.ErrNoRows) {
		return fmt.Errorf("storage: count the configurations of %q: %w", e.info.ID, e.s.scrub(err))
	}
	if err == nil && h.ids[id] {
		return nil // a configuration the experiment holds
	}
	return fmt.Errorf("%w: experiment %q holds %d configurations (max_suggestions %d)", storage.ErrBudgetSpent, e.info.ID, len(h.ids), max)
}

// heldConfigSet is the set of configurations an experiment's trials
// hold, as read up to trial lastID (Store.heldConfigs). Trial ids are
// allocated in order under the experiment's lock and trials are never
// deleted, so the trials stored since are those with larger ids: a read
// under the lock brings the set up to date exactly.
type heldConfigSet struct {
	mu     sync.Mutex
	lastID int64
	ids    map[int64]bool
}

// refresh adds the configurations of the trials stored since the last
// read (the caller holds the experiment's lock and h.mu).
func (h *heldConfigSet) refresh(ctx context.Context, r runner, expID string) error {
	rows, err := r.query(ctx, `SELECT trial_id, config_id FROM trial WHERE exp_id = ? AND trial_id > ?`, expID, h.lastID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, cfg int64
		if err := rows.Scan(&id, &cfg); err != nil {
			return err
		}
		h.ids[cfg] = true
		h.lastID = max(h.lastID, id)
	}
	return rows.Err()
}

// heldConfigs returns the experiment's set of held configurations
// (checkBudget), one per experiment for the store's life.
func (s *Store) heldConfigs(expID string) *heldConfigSet {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if s.held == nil {
		s.held = map[string]*heldConfigSet{}
	}
	h := s.held[expID]
	if h == nil {
		h = &heldConfigSet{ids: map[int64]bool{}}
		s.held[expID] = h
	}
	return h
}

// checkClaim is TrialSpec.Claim: under the experiment's lock (taken here
// unless locked, held to the end of the transaction, as insertTrial
// takes it), an identical trial in flight or succeeded is a
// *storage.ClaimedError. On SQLite it also stores or finds the trial's
// configuration and returns its id (0: insertTrial does that).
func (e *experiment) checkClaim(ctx context.Context, r runner, tr *storage.Trial, locked bool) (int64, error) {
	if !locked {
		if err := e.lockExperiment(ctx, r); err != nil {
			return 0, err
		}
	}
	if e.s.dialect.serializesWriters() {
		// SQLite: the configuration first. One writer at a time: a
		// configuration this transaction stores has no trial anywhere, so
		// none can hold the claim and the look-up below is not needed, one
		// statement less for a new configuration (the common case).
		id, err := e.storeNewConfig(ctx, r, tr)
		if err != nil || id > 0 {
			return id, err
		}
	}
	other, ok, err := e.findTrialIn(ctx, r, tr.ConfigHash, tr.Metadata["repeat_i"],
		"((t.ts_end IS NULL AND t.stop_requested IS NULL) OR t.status = '"+trial.SUCCEEDED.String()+"')")
	if err != nil {
		return 0, err
	}
	if ok {
		return 0, &storage.ClaimedError{Trial: other}
	}
	if e.s.dialect.serializesWriters() {
		// Stored before: checked as configID does (after the claim, as
		// before).
		return e.storedConfigID(ctx, r, tr.ConfigHash, tr.Params)
	}
	return 0, nil
}

// FinishAndQueue finishes a trial and queues the next one in a single
// transaction.
func (e *experiment) FinishAndQueue(ctx context.Context, trialID int, out storage.TrialOutcome, next storage.TrialSpec) (storage.Trial, error) {
	fin, err := e.planFinish(trialID, out)
	if err != nil {
		return storage.Trial{}, err
	}
	nt, err := e.planTrial(ctx, next)
	if err != nil {
		return storage.Trial{}, err
	}
	err = e.s.write(ctx, func(r runner) error {
		if err := e.finishTrial(ctx, r, fin); err != nil {
			return err
		}
		if next.MaxConfigs > 0 {
			if err := e.checkBudget(ctx, r, nt.ConfigHash, next.MaxConfigs); err != nil {
				return err
			}
		}
		return e.insertTrial(ctx, r, nt, 0, next.MaxConfigs > 0)
	})
	if err != nil {
		return storage.Trial{}, err
	}
	return *nt, nil
}

// planTrial checks a TrialSpec and returns the trial to insert (its id
// and config id are set by insertTrial). An owner view owns it.
func (e *experiment) planTrial(ctx context.Context, spec storage.TrialSpec) (*storage.Trial, error) {
	if spec.TrialRunnerID < 0 {
		return nil, fmt.Errorf("%w: trial runner id %d is negative", storage.ErrInvalid, spec.TrialRunnerID)
	}
	if spec.RetryOf < 0 {
		return nil, fmt.Errorf("%w: retry of trial %d", storage.ErrInvalid, spec.RetryOf)
	}
	var reused *storage.TrialRef
	if spec.ReusedFrom != nil {
		reused = &storage.TrialRef{ExperimentID: clean(strings.TrimSpace(spec.ReusedFrom.ExperimentID)), TrialID: spec.ReusedFrom.TrialID}
		if reused.ExperimentID == "" {
			reused.ExperimentID = e.info.ID
		}
		if reused.TrialID < 1 {
			return nil, fmt.Errorf("%w: reused result of trial %d", storage.ErrInvalid, reused.TrialID)
		}
	}
	params, err := cleanMap("parameter", spec.Params)
	if err != nil {
		return nil, err
	}
	meta, err := cleanMap("trial parameter", spec.Metadata)
	if err != nil {
		return nil, err
	}
	hash := strings.TrimSpace(spec.ConfigHash)
	if hash == "" {
		hash = storage.HashParams(params)
	}
	status := trial.PENDING
	if spec.Running {
		status = trial.RUNNING
	}
	tr := &storage.Trial{
		ExperimentID:  e.info.ID,
		ConfigHash:    clean(hash),
		TrialRunnerID: spec.TrialRunnerID,
		Status:        status,
		TsStart:       normTime(spec.TsStart),
		Params:        params,
		Metadata:      meta,
		RetryOf:       spec.RetryOf,
		ReusedFrom:    reused,
	}
	if e.owner != "" {
		if _, tr.LeaseUntil, err = e.leaseTimes(ctx); err != nil {
			return nil, err
		}
		tr.Owner = e.owner
	}
	return tr, nil
}

// insertTrial stores a planned trial, setting its id and config id, with
// its change number (seqExpr: on MySQL and MariaDB none yet, pending).
func (e *experiment) insertTrial(ctx context.Context, r runner, tr *storage.Trial, configID int64, locked bool) (err error) {
	// Lock the experiment: trial ids are allocated one writer at a time
	// (locked: the transaction holds the lock already, see checkClaim).
	if !locked {
		if err := e.lockExperiment(ctx, r); err != nil {
			return err
		}
	}
	tr.ConfigID = configID // > 0: stored or found by this transaction already (checkClaim)
	if configID <= 0 {
		if tr.ConfigID, err = e.configID(ctx, r, tr.ConfigHash, tr.Params); err != nil {
			return err
		}
	}
	var last dbsql.NullInt64
	if err := r.queryRow(ctx, `SELECT MAX(trial_id) FROM trial WHERE exp_id = ?`, e.info.ID).Scan(&last); err != nil {
		return fmt.Errorf("storage: new trial of %q: %w", e.info.ID, e.s.scrub(err))
	}
	tr.ID = max(e.info.FirstTrialID, 1)
	if last.Valid {
		tr.ID = max(int(last.Int64)+1, tr.ID)
	}
	var runner, owner, lease, retry, reusedExp, reusedTrial any
	if tr.TrialRunnerID > 0 {
		runner = tr.TrialRunnerID
	}
	if tr.Owner != "" {
		owner, lease = tr.Owner, e.s.dialect.ts(tr.LeaseUntil)
	}
	if tr.RetryOf > 0 {
		if tr.RetryOf, err = e.originalTrial(ctx, r, tr.RetryOf); err != nil {
			return err
		}
		retry = tr.RetryOf
	}
	if tr.ReusedFrom != nil {
		if err := e.trialExists(ctx, r, *tr.ReusedFrom); err != nil {
			return err
		}
		reusedExp, reusedTrial = tr.ReusedFrom.ExperimentID, tr.ReusedFrom.TrialID
	}
	ts := tr.TsStart
	cols := `exp_id, trial_id, config_id, trial_runner_id, ts_start, status,
		owner, lease_until, retry_of, reused_exp_id, reused_trial_id, bench_seq`
	args := []any{e.info.ID, tr.ID, tr.ConfigID, runner, e.s.dialect.ts(ts), tr.Status.String(),
		owner, lease, retry, reusedExp, reusedTrial, e.seqArg()}
	if e.s.layout.noTrialRunner {
		cols = `exp_id, trial_id, config_id, ts_start, status,
		owner, lease_until, retry_of, reused_exp_id, reused_trial_id, bench_seq`
		args = slices.Delete(args, 3, 4)
	}
	if _, err := r.exec(ctx, `INSERT INTO trial (`+cols+`) VALUES (`+placeholders(len(args)-1)+`, `+e.seqExpr()+`)`, args...); err != nil {
		return fmt.Errorf("storage: new trial %d of %q: %w", tr.ID, e.info.ID, err)
	}
	rows := make([][]any, 0, len(tr.Metadata))
	for _, k := range sortedKeys(tr.Metadata) {
		rows = append(rows, []any{e.info.ID, tr.ID, k, tr.Metadata[k]})
	}
	if err := r.insertRows(ctx, "trial_param", []string{"exp_id", "trial_id", "param_id", "param_value"}, rows, ""); err != nil {
		return err
	}
	statuses := []trial.Status{trial.PENDING}
	if tr.Status == trial.RUNNING {
		statuses = append(statuses, trial.RUNNING)
	}
	return e.addHistory(ctx, r, tr.ID, ts, statuses...)
}

// originalTrial returns the first trial of the retry chain trialID is in
// (trialID itself when it is no retry).
func (e *experiment) originalTrial(ctx context.Context, r runner, trialID int) (int, error) {
	var orig dbsql.NullInt64
	err := r.queryRow(ctx, `SELECT retry_of FROM trial WHERE exp_id = ? AND trial_id = ?`, e.info.ID, trialID).Scan(&orig)
	if errors.Is(err, dbsql.ErrNoRows) {
		return 0, fmt.Errorf("%w: retry of trial %d: experiment %q has no such trial", storage.ErrInvalid, trialID, e.info.ID)
	}
	if err != nil {
		return 0, fmt.Errorf("storage: trial %d of %q: %w", trialID, e.info.ID, e.s.scrub(err))
	}
	if orig.Valid {
		return int(orig.Int64), nil
	}
	return trialID, nil
}

// trialExists checks that ref names a stored trial.
func (e *experiment) trialExists(ctx context.Context, r runner, ref storage.TrialRef) error {
	var id int
	err := r.queryRow(ctx, `SELECT trial_id FROM trial WHERE exp_id = ? AND trial_id = ?`, ref.ExperimentID, ref.TrialID).Scan(&id)
	if errors.Is(err, dbsql.ErrNoRows) {
		return fmt.Errorf("%w: reused result of trial %d of experiment %q: no such trial", storage.ErrInvalid, ref.TrialID, ref.ExperimentID)
	}
	if err != nil {
		return fmt.Errorf("storage: trial %d of %q: %w", ref.TrialID, ref.ExperimentID, e.s.scrub(err))
	}
	return nil
}

// configID finds the configuration stored under hash, or stores it. The
// INSERT stores a row only when the hash is not stored yet (INSERT ...
// SELECT ... WHERE NOT EXISTS), so that a stored hash burns no id of the
// autoincrement (SQLite's and PostgreSQL's sequences advance on a plain
// INSERT's conflict too, and so does InnoDB's counter), and mlos_bench's
// ids run 1, 2, 3 for the configurations of an experiment whatever their
// repeats; a new configuration, the common case, costs one statement.
func (e *experiment) configID(ctx context.Context, r runner, hash string, params map[string]string) (int64, error) {
	id, err := e.insertConfig(ctx, r, hash)
	if err == nil {
		return id, e.insertConfigParams(ctx, r, id, params)
	}
	if !errors.Is(err, dbsql.ErrNoRows) {
		return 0, fmt.Errorf("storage: store config %s: %w", hash, e.s.scrub(err))
	}
	return e.storedConfigID(ctx, r, hash, params)
}

// insertConfigParams stores the parameters of a configuration insertConfig
// stored.
func (e *experiment) insertConfigParams(ctx context.Context, r runner, id int64, params map[string]string) error {
	rows := make([][]any, 0, len(params))
	for _, k := range sortedKeys(params) {
		rows = append(rows, []any{id, k, params[k]})
	}
	return r.insertRows(ctx, "config_param", []string{"config_id", "param_id", "param_value"}, rows, "")
}

// storedConfigID returns the id of the configuration stored before under
// hash (by this or another experiment, or by another process meanwhile),
// once it has checked that its parameters are params.
func (e *experiment) storedConfigID(ctx context.Context, r runner, hash string, params map[string]string) (int64, error) {
	var id int64
	if err := r.queryRow(ctx, `SELECT config_id FROM config WHERE config_hash = ?`, hash).Scan(&id); err != nil {
		return 0, fmt.Errorf("storage: find config %s: %w", hash, e.s.scrub(err))
	}
	stored := map[string]string{}
	err := r.each(ctx, func(rows *dbsql.Rows) error {
		var k string
		var v dbsql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		stored[k] = v.String
		return nil
	}, `SELECT param_id, param_value FROM config_param WHERE config_id = ?`, id)
	if err != nil {
		return 0, fmt.Errorf("storage: load config %d: %w", id, err)
	}
	if !maps.Equal(stored, params) {
		return 0, fmt.Errorf("%w: config hash %s is already stored (config %d) with other parameter values: stored %v, given %v",
			storage.ErrInvalid, hash, id, stored, params)
	}
	return id, nil
}

// storeNewConfig stores tr's configuration when its hash is not stored
// yet and returns its id, or 0 when it was stored before (SQLite, for
// checkClaim).
func (e *experiment) storeNewConfig(ctx context.Context, r runner, tr *storage.Trial) (int64, error) {
	id, err := e.insertConfig(ctx, r, tr.ConfigHash)
	switch {
	case errors.Is(err, dbsql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("storage: store config %s: %w", tr.ConfigHash, e.s.scrub(err))
	}
	if err := e.insertConfigParams(ctx, r, id, tr.Params); err != nil {
		return 0, err
	}
	return id, nil
}

// insertConfig stores a new configuration hash and returns its id, or
// dbsql.ErrNoRows when the hash is already stored. Two processes storing
// the same new hash at once both find it missing; the second insert then
// meets the first's key (on conflict nothing, or MySQL's duplicate key
// error, which leaves the transaction going) and may burn an id, as an
// insert after a look-up did.
func (e *experiment) insertConfig(ctx context.Context, r runner, hash string) (int64, error) {
	if e.s.dialect.returning() {
		var id int64
		err := r.queryRow(ctx, `INSERT INTO config (config_hash) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM config WHERE config_hash = ?)`+
			e.s.dialect.ignoreDup("config_hash")+` RETURNING config_id`, hash, hash).Scan(&id)
		return id, err
	}
	// MySQL: a write transaction is READ COMMITTED (mysqlDialect.writeTx),
	// so the SELECT part is a consistent read that takes no gap lock.
	res, err := r.exec(ctx, `INSERT INTO config (config_hash) SELECT ? FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM config WHERE config_hash = ?)`, hash, hash)
	if isDupKey(err) {
		return 0, dbsql.ErrNoRows
	}
	if err != nil {
		return 0, err
	}
	if ok, err := affected(res); err != nil || !ok {
		if err == nil {
			err = dbsql.ErrNoRows
		}
		return 0, err
	}
	return res.LastInsertId()
}

// historyRows are the rows of trial_status for status changes at ts.
func (e *experiment) historyRows(trialID int, ts time.Time, statuses []trial.Status) [][]any {
	rows := make([][]any, len(statuses))
	for i, st := range statuses {
		at := ts
		if e.s.layout.mlos {
			// mlos_bench keeps one status per timestamp.
			at = ts.Add(time.Duration(i) * time.Microsecond)
		}
		rows[i] = []any{e.info.ID, trialID, e.s.dialect.ts(at), st.String()}
	}
	return rows
}

// addHistory adds status changes at ts, in order, to a trial's history.
func (e *experiment) addHistory(ctx context.Context, r runner, trialID int, ts time.Time, statuses ...trial.Status) error {
	rows := e.historyRows(trialID, ts, statuses)
	if err := r.insertRows(ctx, "trial_status", []string{"exp_id", "trial_id", "ts", "status"}, rows, e.s.historyConflict()); err != nil {
		return fmt.Errorf("storage: status history of trial %d of %q: %w", trialID, e.info.ID, err)
	}
	return nil
}

// unchanged explains why an update of an unfinished trial matched no row
// (with the condition of owned when checkOwner is set).
func (e *experiment) unchanged(ctx context.Context, r runner, trialID int, checkOwner bool) error {
	var (
		status string
		end    dbTime
		owner  dbsql.NullString
	)
	err := r.queryRow(ctx, `SELECT status, ts_end, owner FROM trial WHERE exp_id = ? AND trial_id = ?`, e.info.ID, trialID).Scan(&status, &end, &owner)
	if errors.Is(err, dbsql.ErrNoRows) {
		return fmt.Errorf("%w: trial %d of experiment %q", storage.ErrNotFound, trialID, e.info.ID)
	}
	if err != nil {
		return fmt.Errorf("storage: trial %d of %q: %w", trialID, e.info.ID, e.s.scrub(err))
	}
	if end.valid || !checkOwner || e.owner == "" {
		return fmt.Errorf("%w: trial %d of experiment %q is %s", storage.ErrFinished, trialID, e.info.ID, status)
	}
	if !owner.Valid {
		return fmt.Errorf("%w: trial %d of experiment %q has no owner, not %q", storage.ErrNotOwner, trialID, e.info.ID, e.owner)
	}
	return fmt.Errorf("%w: trial %d of experiment %q is owned by %q, not %q", storage.ErrNotOwner, trialID, e.info.ID, owner.String, e.owner)
}

// owned is the condition a trial row must meet for this view to change
// it, with its arguments: none for the plain experiment, the owner for an
// owner view.
func (e *experiment) owned() (string, []any) {
	if e.owner == "" {
		return "", nil
	}
	return " AND owner = ?", []any{e.owner}
}

func affected(res dbsql.Result) (bool, error) {
	n, err := res.RowsAffected()
	return n > 0, err
}

func (e *experiment) SetTrialRunner(ctx context.Context, trialID, runnerID int) error {
	if runnerID < 1 {
		return fmt.Errorf("%w: trial runner id %d: want 1 or more", storage.ErrInvalid, runnerID)
	}
	cond, condArgs := e.owned()
	return e.s.write(ctx, func(r runner) error {
		q, args := `UPDATE trial SET bench_seq = `+e.seqExpr()+`, trial_runner_id = ? WHERE exp_id = ? AND trial_id = ? AND ts_end IS NULL`+cond,
			append([]any{e.seqArg(), runnerID, e.info.ID, trialID}, condArgs...)
		if e.s.layout.noTrialRunner {
			// No trial_runner_id column (mlos_bench adds it): the same checks.
			q, args = `UPDATE trial SET bench_seq = `+e.seqExpr()+` WHERE exp_id = ? AND trial_id = ? AND ts_end IS NULL`+cond, slices.Delete(args, 1, 2)
		}
		res, err := r.exec(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("storage: assign trial %d of %q to runner %d: %w", trialID, e.info.ID, runnerID, err)
		}
		if ok, err := affected(res); err != nil || !ok {
			if err != nil {
				return err
			}
			return e.unchanged(ctx, r, trialID, true)
		}
		return nil
	})
}

func (e *experiment) SetJob(ctx context.Context, trialID int, job storage.EngineJob) error {
	if job.Engine == "" {
		return fmt.Errorf("%w: trial %d: an engine job needs the engine's name", storage.ErrInvalid, trialID)
	}
	cond, condArgs := e.owned()
	return e.s.write(ctx, func(r runner) error {
		res, err := r.exec(ctx, `UPDATE trial SET engine = ?, engine_job = ?, engine_request = ?, engine_submits = ?, bench_seq = `+e.seqExpr()+` WHERE exp_id = ? AND trial_id = ? AND ts_end IS NULL`+cond,
			append([]any{job.Engine, job.Ref, job.Request, job.Submits, e.seqArg(), e.info.ID, trialID}, condArgs...)...)
		if err != nil {
			return fmt.Errorf("storage: record the engine job of trial %d of %q: %w", trialID, e.info.ID, err)
		}
		if ok, err := affected(res); err != nil || !ok {
			if err != nil {
				return err
			}
			return e.unchanged(ctx, r, trialID, true)
		}
		return nil
	})
}

func (e *experiment) UpdateStatus(ctx context.Context, trialID int, status trial.Status, ts time.Time) error {
	switch status {
	case trial.PENDING, trial.READY, trial.RUNNING:
	default:
		if status.IsCompleted() {
			return fmt.Errorf("%w: trial %d: %s is a final status: record it with Finish", storage.ErrInvalid, trialID, status)
		}
		return fmt.Errorf("%w: trial %d: cannot set status %s", storage.ErrInvalid, trialID, status)
	}
	ts = normTime(ts)
	return e.s.write(ctx, func(r runner) error {
		q := `UPDATE trial SET status = ?, bench_seq = ` + e.seqExpr() + ` WHERE exp_id = ? AND trial_id = ? AND ts_end IS NULL`
		args := []any{status.String(), e.seqArg(), e.info.ID, trialID}
		if status == trial.RUNNING {
			q = `UPDATE trial SET status = ?, ts_start = ?, bench_seq = ` + e.seqExpr() + ` WHERE exp_id = ? AND trial_id = ? AND ts_end IS NULL`
			args = []any{status.String(), e.s.dialect.ts(ts), e.seqArg(), e.info.ID, trialID}
		}
		cond, condArgs := e.owned()
		res, err := r.exec(ctx, q+cond, append(args, condArgs...)...)
		if err != nil {
			return fmt.Errorf("storage: set trial %d of %q to %s: %w", trialID, e.info.ID, status, err)
		}
		if ok, err := affected(res); err != nil || !ok {
			if err != nil {
				return err
			}
			return e.unchanged(ctx, r, trialID, true)
		}
		return e.addHistory(ctx, r, trialID, ts, status)
	})
}

// Finish records the final status and outcome of a trial, all in one
// transaction.
func (e *experiment) Finish(ctx context.Context, trialID int, out storage.TrialOutcome) error {
	fin, err := e.planFinish(trialID, out)
	if err != nil {
		return err
	}
	return e.s.write(ctx, func(r runner) error {
		return e.finishTrial(ctx, r, fin)
	})
}

// finish is a checked TrialOutcome, converted to rows.
type finish struct {
	trialID                    int
	status                     trial.Status
	ts                         time.Time
	reason                     any
	results, telemetry, output [][]any
}

func (e *experiment) planFinish(trialID int, out storage.TrialOutcome) (*finish, error) {
	if !out.Status.IsCompleted() {
		return nil, fmt.Errorf("%w: trial %d: %s is not a final status (want SUCCEEDED, FAILED, TIMED_OUT or CANCELED)", storage.ErrInvalid, trialID, out.Status)
	}
	ts := normTime(out.Ts)
	// Check and convert everything before the transaction starts.
	results := make([][]any, 0, len(out.Results))
	for _, k := range sortedKeys(out.Results) {
		name := clean(strings.TrimSpace(k))
		if name == "" {
			return nil, fmt.Errorf("%w: trial %d: a result has an empty name", storage.ErrInvalid, trialID)
		}
		v, err := storedValue(out.Results[k])
		if err != nil {
			return nil, fmt.Errorf("trial %d: result %q: %w", trialID, k, err)
		}
		results = append(results, []any{e.info.ID, trialID, name, v})
	}
	telemetry, err := e.telemetryRows(trialID, out.Telemetry)
	if err != nil {
		return nil, err
	}
	output := make([][]any, 0, len(out.Output))
	for i, o := range out.Output {
		var start any
		if !o.Start.IsZero() {
			start = e.s.dialect.ts(normTime(o.Start))
		}
		output = append(output, []any{e.info.ID, trialID, i, clean(o.Phase), clean(o.Env), o.Line, clean(o.Command),
			o.ExitCode, clean(o.Stdout), clean(o.Stderr), o.Truncated, o.TimedOut, start, int64(o.Duration)})
	}
	fin := &finish{trialID: trialID, status: out.Status, ts: ts, results: results, telemetry: telemetry, output: output}
	if out.FailureReason != "" {
		fin.reason = clean(trial.BoundReason(out.FailureReason))
	}
	return fin, nil
}

// finishTrial stores a planned outcome.
func (e *experiment) finishTrial(ctx context.Context, r runner, fin *finish) error {
	trialID, ts := fin.trialID, fin.ts
	cond, condArgs := e.owned()
	res, err := r.exec(ctx, `UPDATE trial SET status = ?, ts_end = ?, failure_reason = ?, owner = NULL, lease_until = NULL, bench_seq = `+e.seqExpr()+`
		WHERE exp_id = ? AND trial_id = ? AND ts_end IS NULL`+cond,
		append([]any{fin.status.String(), e.s.dialect.ts(ts), fin.reason, e.seqArg(), e.info.ID, trialID}, condArgs...)...)
	if err != nil {
		return fmt.Errorf("storage: finish trial %d of %q: %w", trialID, e.info.ID, err)
	}
	if ok, err := affected(res); err != nil || !ok {
		if err != nil {
			return err
		}
		return e.unchanged(ctx, r, trialID, true)
	}
	if err := r.insertRows(ctx, "trial_result", []string{"exp_id", "trial_id", "metric_id", "metric_value"}, fin.results, ""); err != nil {
		return err
	}
	if err := e.insertTelemetry(ctx, r, fin.telemetry); err != nil {
		return err
	}
	if err := r.insertRows(ctx, "trial_output", []string{"exp_id", "trial_id", "seq", "phase", "env_name", "line", "command",
		"exit_code", "stdout", "stderr", "truncated", "timed_out", "ts_start", "duration_ns"}, fin.output, ""); err != nil {
		return err
	}
	return e.addHistory(ctx, r, trialID, ts, fin.status)
}

// storedValue is the column value of a result or telemetry value: its
// text, or NULL.
func storedValue(v any) (any, error) {
	text, null, err := storage.FormatValue(v)
	if err != nil {
		return nil, err
	}
	if null {
		return nil, nil
	}
	return clean(text), nil
}

func cleanMap(what string, m map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(m))
	for k, v := range m {
		name := clean(strings.TrimSpace(k))
		if name == "" {
			return nil, fmt.Errorf("%w: a %s has an empty name", storage.ErrInvalid, what)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%w: %s %q given twice", storage.ErrInvalid, what, name)
		}
		out[name] = clean(v)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

var (
	unfinished = []trial.Status{trial.PENDING, trial.READY, trial.RUNNING}
	completed  = []trial.Status{trial.SUCCEEDED, trial.FAILED, trial.TIMED_OUT}
)

func (e *experiment) PendingTrials(ctx context.Context) ([]storage.Trial, error) {
	var out []storage.Trial
	err := e.s.read(ctx, func(r runner) error {
		var err error
		out, err = e.loadTrials(ctx, r, "t.ts_end IS NULL AND "+statusIn(unfinished), nil, 0)
		return err
	})
	return out, err
}

func (e *experiment) CompletedTrials(ctx context.Context, afterTrialID int) ([]storage.Trial, error) {
	var out []storage.Trial
	err := e.s.read(ctx, func(r runner) error {
		var err error
		out, err = e.loadTrials(ctx, r, "t.trial_id > ? AND "+statusIn(completed), []any{afterTrialID}, 0)
		return err
	})
	return out, err
}

func (e *experiment) Trials(ctx context.Context, f storage.TrialFilter) ([]storage.Trial, error) {
	if f.Limit < 0 {
		return nil, fmt.Errorf("%w: negative limit %d", storage.ErrInvalid, f.Limit)
	}
	where, args := "t.trial_id > ?", []any{f.AfterID}
	if f.Statuses != nil {
		where += " AND " + statusIn(f.Statuses)
	}
	var out []storage.Trial
	err := e.s.read(ctx, func(r runner) error {
		var err error
		out, err = e.loadTrials(ctx, r, where, args, f.Limit)
		return err
	})
	return out, err
}

// statusIn is an SQL condition on t.status. Status names are constants, not
// user input.
func statusIn(sts []trial.Status) string {
	if len(sts) == 0 {
		return "1 = 0"
	}
	names := make([]string, len(sts))
	for i, st := range sts {
		names[i] = "'" + st.String() + "'"
	}
	return "t.status IN (" + strings.Join(names, ", ") + ")"
}

const trialCols = `t.trial_id, t.config_id, c.config_hash, t.trial_runner_id, t.status, t.ts_start, t.ts_end, t.failure_reason,
	t.owner, t.lease_until, t.retry_of, t.reused_exp_id, t.reused_trial_id, t.stop_requested,
	t.engine, t.engine_job, t.engine_request, t.engine_submits`

// loadTrials loads the trials of the experiment that where (on table t)
// selects, ordered by id, at most limit of them (0: all), with their
// parameters, metadata and, when finished, results.
func (e *experiment) loadTrials(ctx context.Context, r runner, where string, args []any, limit int) ([]storage.Trial, error) {
	q := `SELECT ` + e.s.trialCols() + ` FROM trial t JOIN config c ON c.config_id = t.config_id WHERE t.exp_id = ? AND ` + where + ` ORDER BY t.trial_id`
	qargs := append([]any{e.info.ID}, args...)
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	var trials []storage.Trial
	index := map[int]int{}
	row := newTrialRow()
	err := r.each(ctx, func(rows *dbsql.Rows) error {
		t, err := e.scanTrial(rows, row)
		if err != nil {
			return err
		}
		index[t.ID] = len(trials)
		trials = append(trials, t)
		return nil
	}, q, qargs...)
	if err != nil {
		return nil, fmt.Errorf("storage: load trials of %q: %w", e.info.ID, err)
	}
	if len(trials) == 0 {
		return nil, nil
	}
	// The same selection, bounded by the ids found (which also applies the
	// limit), joined with each key/value table.
	sel := ` FROM trial t %s WHERE t.exp_id = ? AND ` + where + ` AND t.trial_id BETWEEN ? AND ?`
	kvArgs := append(append([]any{e.info.ID}, args...), trials[0].ID, trials[len(trials)-1].ID)
	load := func(what, join, cols string, set func(t *storage.Trial, k string, v dbsql.NullString)) error {
		err := r.each(ctx, func(rows *dbsql.Rows) error {
			var (
				id int
				k  string
				v  dbsql.NullString
			)
			if err := rows.Scan(&id, &k, &v); err != nil {
				return err
			}
			if i, ok := index[id]; ok {
				set(&trials[i], k, v)
			}
			return nil
		}, `SELECT t.trial_id, `+cols+fmt.Sprintf(sel, join), kvArgs...)
		if err != nil {
			return fmt.Errorf("storage: load %s of %q: %w", what, e.info.ID, err)
		}
		return nil
	}
	err = load("parameters", "JOIN config_param p ON p.config_id = t.config_id", "p.param_id, p.param_value",
		func(t *storage.Trial, k string, v dbsql.NullString) { t.Params[k] = v.String })
	if err != nil {
		return nil, err
	}
	err = load("trial parameters", "JOIN trial_param p ON p.exp_id = t.exp_id AND p.trial_id = t.trial_id", "p.param_id, p.param_value",
		func(t *storage.Trial, k string, v dbsql.NullString) { t.Metadata[k] = v.String })
	if err != nil {
		return nil, err
	}
	err = load("results", "JOIN trial_result m ON m.exp_id = t.exp_id AND m.trial_id = t.trial_id", "m.metric_id, m.metric_value",
		func(t *storage.Trial, k string, v dbsql.NullString) {
			if t.Results != nil {
				t.Results[k] = storage.ParseValue(v.String, !v.Valid)
			}
		})
	if err != nil {
		return nil, err
	}
	return trials, nil
}

// trialRow holds the columns of trialCols while a row is scanned; one
// serves all the rows of a query (the scan targets escape to the heap).
type trialRow struct {
	id                         int
	configID                   int64
	hash, status               string
	runner, retry, reusedTrial dbsql.NullInt64
	start, end, lease, stop    dbTime
	reason, owner, reusedExp   dbsql.NullString
	engine, engineJob          dbsql.NullString
	engineRequest              dbsql.NullString
	engineSubmits              dbsql.NullInt64
	dest                       []any
}

func newTrialRow() *trialRow {
	r := &trialRow{}
	r.dest = []any{&r.id, &r.configID, &r.hash, &r.runner, &r.status, &r.start, &r.end, &r.reason,
		&r.owner, &r.lease, &r.retry, &r.reusedExp, &r.reusedTrial, &r.stop,
		&r.engine, &r.engineJob, &r.engineRequest, &r.engineSubmits}
	return r
}

func (e *experiment) scanTrial(rows *dbsql.Rows, r *trialRow) (storage.Trial, error) {
	if err := rows.Scan(r.dest...); err != nil {
		return storage.Trial{}, err
	}
	st, err := trial.ParseStatus(r.status)
	if err != nil {
		return storage.Trial{}, fmt.Errorf("trial %d: %w", r.id, err)
	}
	t := storage.Trial{
		ExperimentID: e.info.ID, ID: r.id, ConfigID: r.configID, ConfigHash: r.hash, TrialRunnerID: int(r.runner.Int64),
		Status: st, TsStart: r.start.t, TsEnd: r.end.t, Params: map[string]string{}, Metadata: map[string]string{},
		FailureReason: r.reason.String, Owner: r.owner.String, LeaseUntil: r.lease.t, RetryOf: int(r.retry.Int64),
		StopRequested: r.stop.valid,
	}
	if r.reusedTrial.Valid {
		t.ReusedFrom = &storage.TrialRef{ExperimentID: r.reusedExp.String, TrialID: int(r.reusedTrial.Int64)}
	}
	if r.end.valid {
		t.Results = storage.Metrics{}
	}
	if r.engine.Valid {
		t.Job = &storage.EngineJob{Engine: r.engine.String, Ref: r.engineJob.String, Request: r.engineRequest.String, Submits: int(r.engineSubmits.Int64)}
	}
	return t, nil
}

// Trial returns one trial with its telemetry, output and status history.
func (e *experiment) Trial(ctx context.Context, trialID int) (storage.TrialDetail, error) {
	var d storage.TrialDetail
	err := e.s.read(ctx, func(r runner) error {
		trials, err := e.loadTrials(ctx, r, "t.trial_id = ?", []any{trialID}, 0)
		if err != nil {
			return err
		}
		if len(trials) == 0 {
			return fmt.Errorf("%w: trial %d of experiment %q", storage.ErrNotFound, trialID, e.info.ID)
		}
		d.Trial = trials[0]
		d.Telemetry, d.Output, d.History = []storage.Telemetry{}, []storage.Output{}, []storage.StatusChange{}
		key := []any{e.info.ID, trialID}
		err = r.each(ctx, func(rows *dbsql.Rows) error {
			var (
				ts dbTime
				m  string
				v  dbsql.NullString
				st dbsql.NullInt64
			)
			if err := rows.Scan(&ts, &m, &v, &st); err != nil {
				return err
			}
			tel := storage.Telemetry{Ts: ts.t, Metric: m, Value: storage.ParseValue(v.String, !v.Valid)}
			if st.Valid {
				tel.Step = &st.Int64
			}
			d.Telemetry = append(d.Telemetry, tel)
			return nil
		}, `SELECT ts, metric_id, metric_value, step FROM trial_telemetry WHERE exp_id = ? AND trial_id = ? ORDER BY ts, metric_id`, key...)
		if err != nil {
			return fmt.Errorf("storage: load telemetry of trial %d: %w", trialID, err)
		}
		err = r.each(ctx, func(rows *dbsql.Rows) error {
			var (
				o     storage.Output
				start dbTime
				dur   int64
			)
			if err := rows.Scan(&o.Phase, &o.Env, &o.Line, &o.Command, &o.ExitCode, &o.Stdout, &o.Stderr, &o.Truncated, &o.TimedOut, &start, &dur); err != nil {
				return err
			}
			o.Start, o.Duration = start.t, time.Duration(dur)
			d.Output = append(d.Output, o)
			return nil
		}, `SELECT phase, env_name, line, command, exit_code, stdout, stderr, truncated, timed_out, ts_start, duration_ns
			FROM trial_output WHERE exp_id = ? AND trial_id = ? ORDER BY seq`, key...)
		if err != nil {
			return fmt.Errorf("storage: load output of trial %d: %w", trialID, err)
		}
		err = r.each(ctx, func(rows *dbsql.Rows) error {
			var (
				ts     dbTime
				status string
			)
			if err := rows.Scan(&ts, &status); err != nil {
				return err
			}
			st, err := trial.ParseStatus(status)
			if err != nil {
				return err
			}
			d.History = append(d.History, storage.StatusChange{Ts: ts.t, Status: st})
			return nil
		}, `SELECT ts, status FROM trial_status WHERE exp_id = ? AND trial_id = ? ORDER BY `+e.s.historyOrder(), key...)
		if err != nil {
			return fmt.Errorf("storage: load status history of trial %d: %w", trialID, err)
		}
		return nil
	})
	return d, err
}
