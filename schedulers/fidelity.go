// Multi-fidelity scheduling (bench only): Hyperband brackets of successive
// halving with asynchronous (ASHA) promotion, planned by
// schedulers/hyperband. A new configuration runs at the lowest fidelity
// of its bracket; a configuration in the top 1/eta of its rung is
// promoted: the same configuration runs again, as a new trial, at the next
// rung (from the start, or continuing the previous trial). Each trial's
// metadata records its fidelity, rung and bracket (trial.FidelityKey ...),
// so the plan is rebuilt from storage on resume, and trial.Globals hands
// the value to the trial wherever it runs.

package schedulers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers/hyperband"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// fidelityRun is a driver's multi-fidelity state, owned by the
// dispatcher's goroutine.
type fidelityRun struct {
	cfg     FidelityConfig
	plan    *hyperband.Planner[string]
	tunable bool                     // Param is a tunable (else a global)
	aware   optimizers.FidelityAware // nil: the optimizer sees full fidelity only
	// pred ranks promotions (promote_by "model"; nil: by observed values).
	pred *fidelityRanker
	// acq chooses where new configurations start (start "acquisition").
	acq *fidelityAcq
	// maxTrials is max_trials, counted in full-fidelity trials (0: none).
	maxTrials int
	// full counts the full-fidelity trials started (retries left out).
	full   int
	chains map[string]*fidChain
	root   string // checkpoint root (promotion continue), absolute
	// dynOpt predicts at every fidelity (planner "dyhpo", fidelity_dyn.go).
	dynOpt optimizers.FidelityAtPredictor
}

// fidChain is one configuration of the plan.
type fidChain struct {
	tun *tunables.Groups // its values (Param's as suggested)
	// sugID is the optimizer's suggestion id while it is pending (0: none
	// or settled).
	sugID int
	// observed: the (FidelityAware) optimizer was given an outcome of it.
	observed bool
	// last maps a rung to the trial whose success counts there (what a
	// continuation continues).
	last map[int]int
}

// setupFidelity prepares multi-fidelity scheduling when configured (in
// New): it checks the fidelity against the tunables, tells a
// FidelityAware optimizer, and takes max_trials over (counted in
// full-fidelity trials). Workers only run what the driver queued.
func (s *Scheduler) setupFidelity() error {
	f := s.cfg.Fidelity
	if !f.On() || s.o.Worker {
		return nil
	}
	if err := CheckFidelity(f, s.o.Tunables, nil); err != nil {
		return err
	}
	t := s.o.Tunables.Get(f.Param)
	plan, err := hyperband.New[string](f.Plan(t != nil && t.Type() == tunables.Int))
	if err != nil {
		return f.Ref.Errorf("fidelity: %v", err)
	}
	fr := &fidelityRun{cfg: f, plan: plan, tunable: t != nil, maxTrials: max(s.cfg.MaxTrials, 0), chains: map[string]*fidChain{}}
	s.cfg.MaxTrials = 0 // the dispatcher's count is of every trial: fidelity.go counts
	if fa, ok := s.opt.(optimizers.FidelityAware); ok {
		if err := fa.SetFidelity(optimizers.Fidelity{Param: f.Param, Min: f.Min, Max: f.Max, Log: t != nil && t.IsLog()}); err != nil {
			return fmt.Errorf("optimizer %s: fidelity: %w", s.opt.Name(), err)
		}
		fr.aware = fa
	}
	if err := fr.setupAcq(s); err != nil { // fidelity_acq.go
		return err
	}
	if err := fr.setupKernel(s); err != nil { // fidelity_ftk.go
		return err
	}
	if err := fr.setupRanker(s); err != nil { // fidelity_model.go
		return err
	}
	if err := fr.setupDyn(s); err != nil { // fidelity_dyn.go
		return err
	}
	if f.Promotion == PromotionContinue {
		root, err := filepath.Abs(filepath.Join(f.CheckpointDir, s.cfg.ExperimentID))
		if err != nil {
			return f.Ref.Child("checkpoint_dir").Errorf("fidelity.checkpoint_dir: %v", err)
		}
		fr.root = root
	}
	s.fid = fr
	s.log.Info("multi-fidelity scheduling (Hyperband, asynchronous promotion)", "param", f.Param, "plan", plan.String(),
		"promotion", f.Promotion, "promote_by", f.PromoteBy, "start", f.Start, "optimizer_learns_every_fidelity", fr.aware != nil)
	return nil
}

// chainKey names a configuration whatever fidelity it runs at: its
// parameters without the fidelity's.
func (f *fidelityRun) chainKey(params map[string]string) string {
	keys := slices.Sorted(maps.Keys(params))
	var b strings.Builder
	for _, k := range keys {
		if k == f.cfg.Param {
			continue
		}
		fmt.Fprintf(&b, "%q=%q\n", k, params[k])
	}
	return b.String()
}

// capped reports whether max_trials full-fidelity trials have started.
func (f *fidelityRun) capped() bool { return f.maxTrials > 0 && f.full >= f.maxTrials }

// fidelityText writes a fidelity for metadata: an integer without a
// decimal point.
func fidelityText(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// at returns a copy of tun with the fidelity tunable (if it is one) set to
// v.
func (f *fidelityRun) at(tun *tunables.Groups, v float64) (*tunables.Groups, error) {
	out := tun.Copy()
	if !f.tunable {
		return out, nil
	}
	var val any = v
	if t := out.Get(f.cfg.Param); t != nil && t.Type() == tunables.Int {
		val = int64(v)
	}
	if err := out.Assign(map[string]any{f.cfg.Param: val}); err != nil {
		return nil, fmt.Errorf("fidelity: setting tunable %q to %s: %w", f.cfg.Param, fidelityText(v), err)
	}
	return out, nil
}

// meta returns the fidelity metadata of a run of configuration key at
// job's rung.
func (f *fidelityRun) meta(key string, j hyperband.Job[string]) map[string]string {
	m := map[string]string{
		trial.FidelityParamKey:   f.cfg.Param,
		trial.FidelityKey:        fidelityText(j.Fidelity),
		trial.FidelityMaxKey:     fidelityText(f.plan.Fidelity(len(f.plan.Rungs()) - 1)),
		trial.FidelityRungKey:    strconv.Itoa(j.Rung),
		trial.FidelityBracketKey: strconv.Itoa(j.Bracket),
	}
	if f.root != "" {
		sum := sha256.Sum256([]byte(key))
		m[trial.CheckpointDirKey] = filepath.Join(f.root, "config-"+hex.EncodeToString(sum[:6]))
		if f.cfg.CheckpointStore != "" {
			// Staged through the store where the trial runs
			// (engines.StageCheckpoint): no driver folder.
			delete(m, trial.CheckpointDirKey)
			m[trial.CheckpointStoreKey] = f.cfg.CheckpointStore
		}
		if c := f.chains[key]; c != nil && j.Rung > j.Bracket {
			if prev := c.last[j.Rung-1]; prev > 0 {
				m[trial.ContinueFromKey] = strconv.Itoa(prev)
			}
		}
	}
	return m
}

// fidelityFirst places a new suggestion in the plan (queueSuggestion): it
// picks its bracket, sets the fidelity tunable to the bracket's first
// rung, and returns the metadata to add; skip is set for a configuration
// the plan already has (the optimizer suggested it again).
func (d *dispatch) fidelityFirst(sg optimizers.Suggestion, tun **tunables.Groups) (map[string]string, bool, error) {
	f := d.s.fid
	if f == nil {
		return nil, false, nil
	}
	if f.capped() {
		// max_trials full-fidelity trials started (by an earlier
		// suggestion of the same batch): nothing new starts.
		d.withdraw(sg.ID)
		return nil, true, nil
	}
	key := f.chainKey((*tun).StringValues())
	if _, dup := f.chains[key]; dup {
		d.s.log.Info("fidelity: the optimizer suggested a configuration that is already in the plan; not running it again", "suggestion", sg.ID)
		d.withdraw(sg.ID)
		return nil, true, nil
	}
	if cont, err := d.fidelityDynFirst(sg.ID, *tun); cont || err != nil { // fidelity_dyn.go: or continue a paused one
		return nil, true, err
	}
	b, fv := f.plan.NextBracket()
	direct := f.startFull(*tun) // fidelity_model.go
	// start "acquisition" (fidelity_acq.go)
	if ab, full, ok := f.startAcq(*tun); ok {
		b, fv, direct = ab, f.plan.Fidelity(ab), full
	}
	if direct {
		fv = f.plan.Fidelity(len(f.plan.Rungs()) - 1)
	}
	t, err := f.at(*tun, fv)
	if err != nil {
		return nil, false, err
	}
	var j hyperband.Job[string]
	if direct {
		j, err = f.plan.AddFull(key)
		d.s.log.Info("fidelity: the model is confident about a new configuration; starting it at full fidelity", "suggestion", sg.ID)
	} else {
		j, err = f.plan.Add(key, b)
	}
	if err != nil {
		return nil, false, err
	}
	f.chains[key] = &fidChain{tun: (*tun).Copy(), sugID: sg.ID, last: map[int]int{}}
	if f.plan.Full(j.Rung) {
		f.full++
	}
	*tun = t
	m := f.meta(key, j)
	if dir := m[trial.CheckpointDirKey]; dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			d.s.log.Warn("fidelity: could not make the configuration's checkpoint directory", "dir", dir, "err", err)
		}
	}
	return m, false, nil
}

// fidelitySpec is the trial of a promotion.
func (d *dispatch) fidelitySpec(j hyperband.Job[string]) (storage.TrialSpec, error) {
	f := d.s.fid
	c := f.chains[j.Key]
	tun, err := f.at(c.tun, j.Fidelity)
	if err != nil {
		return storage.TrialSpec{}, err
	}
	m := d.metadata(tun)
	m["repeat_i"] = "1"
	maps.Copy(m, f.meta(j.Key, j))
	if f.plan.Full(j.Rung) {
		f.full++
	}
	// Not a claim: its configuration (with a global fidelity, its config
	// hash too) already ran at a lower rung, which must not be reused.
	return storage.TrialSpec{ConfigHash: tun.Hash(), Params: tun.StringValues(), Metadata: m}, nil
}

// fidelityRefill queues promotions for up to want idle runners (refill,
// before new suggestions). handled is set when refill must not suggest:
// promotions were queued, or the full-fidelity budget is spent.
func (d *dispatch) fidelityRefill(want int) (handled, progressed bool, err error) {
	f := d.s.fid
	if f == nil || d.s.o.Worker {
		return false, false, nil
	}
	if f.capped() || d.stopFired() {
		return true, false, nil
	}
	if f.plan.IsDynamic() {
		return d.fidelityDynRefill(want) // fidelity_dyn.go
	}
	n := 0
	for n < want && !f.capped() {
		j, ok := f.plan.Promotion()
		if !ok {
			break
		}
		spec, err := d.fidelitySpec(j)
		if err != nil {
			return true, n > 0, err
		}
		d.s.log.Info("fidelity: promoting a configuration", "rung", j.Rung, "fidelity", fidelityText(j.Fidelity), "bracket", j.Bracket)
		d.queue = append(d.queue, item{spec: &spec})
		n++
	}
	return n > 0 || f.capped(), n > 0, nil
}

// fidelityFeed stores up to need promotions unowned, for bench worker
// processes to claim (feedWorkers); it returns how many.
func (d *dispatch) fidelityFeed(ctx context.Context, need int) (int, error) {
	f := d.s.fid
	if f == nil || d.stopFired() {
		return 0, nil
	}
	n := 0
	for n < need && !f.capped() {
		j, ok := f.plan.Promotion()
		if !ok {
			break
		}
		spec, err := d.fidelitySpec(j)
		if err != nil {
			return n, err
		}
		t, err := d.s.plain.NewTrial(ctx, spec)
		if err != nil {
			return n, err
		}
		d.added(t)
		n++
	}
	return n, nil
}

// fidelityMore reports whether promotions are still due (the run is not
// over while they are).
func (d *dispatch) fidelityMore() bool {
	f := d.s.fid
	if f != nil && f.plan.IsDynamic() {
		return d.fidelityDynMore() // fidelity_dyn.go
	}
	return f != nil && !d.s.o.Worker && d.stopErr == nil && !f.capped() && !d.stopFired() && f.plan.Promotable()
}

// withdraw drops a pending suggestion from an optimizer that can.
func (d *dispatch) withdraw(id int) {
	if w, ok := d.s.opt.(optimizers.Withdrawer); ok && id > 0 {
		w.Withdraw(id)
	}
}

// fidelityRecord takes a finished multi-fidelity trial's outcome (record):
// the planner gets its score at its rung (the first target's; a run that
// did not succeed is never promoted), and the optimizer the outcome as the
// contract says (optimizers.FidelityAware: every outcome, with its
// fidelity; any other optimizer: full-fidelity outcomes only, its pending
// suggestion withdrawn after a lower-fidelity one). It reports whether it
// handled the trial (else record observes it as usual).
func (d *dispatch) fidelityRecord(it item, t storage.Trial, out trial.Outcome) bool {
	s := d.s
	f := s.fid
	if f == nil || s.o.Worker {
		return false
	}
	v, _, ok := trial.FidelityOf(t.Metadata)
	rung, err1 := strconv.Atoi(t.Metadata[trial.FidelityRungKey])
	if !ok || err1 != nil {
		return false // not planned (run before the fidelity was set)
	}
	key := f.chainKey(t.Params)
	c := f.chains[key]
	if c == nil {
		s.log.Warn("fidelity: a finished trial's configuration is not in the plan; its result is stored but not planned", "trial", t.ID)
		return true
	}
	score := math.Inf(1)
	if out.Status == trial.SUCCEEDED {
		if sc, err := s.targets.Scores(out.Status, out.Results); err == nil && len(sc) > 0 {
			score = sc[0]
			c.last[rung] = t.ID
		}
	}
	if err := f.plan.Report(key, rung, score); err != nil {
		s.log.Warn("fidelity: planner", "trial", t.ID, "err", err)
	}
	if r, n, keep, ok := f.plan.Rank(key, rung); ok {
		s.log.Info("fidelity: result at rung", "trial", t.ID, "rung", rung, "fidelity", fidelityText(v), "rank", r, "of", n, "promoted_so_far_from", keep)
	}
	if out.Status == trial.CANCELED {
		if f.aware == nil || !c.observed {
			d.withdraw(c.sugID)
			c.sugID = 0
		}
		return true
	}
	tun := s.runnerTunables()
	if err := tun.Assign(stringValues(t.Params)); err != nil {
		s.log.Warn("optimizer could not take in a result", "trial", t.ID, "err", err)
		return true
	}
	full := f.plan.Full(rung)
	var err error
	switch {
	case f.aware != nil:
		id := 0
		if !c.observed {
			id = c.sugID
		}
		c.observed, c.sugID = true, 0
		_, err = f.aware.ObserveAt(id, tun, v, out.Status, out.Results)
		f.pred.changed()
	case full:
		id := c.sugID
		c.sugID = 0
		s.logRegister(d.suggestions, tun, out)
		_, err = s.opt.Observe(id, tun, out.Status, out.Results)
	default:
		d.withdraw(c.sugID)
		c.sugID = 0
	}
	if err != nil {
		s.log.Warn("optimizer could not take in a result", "trial", t.ID, "err", err)
	}
	return true
}

// fidelityResume rebuilds the plan from the experiment's stored trials
// (newDispatch): each configuration's runs in trial order, with the
// results of the finished ones, so that no finished rung runs again, an
// unfinished run is run again by the resume, and a promotion that was
// earned but not started is made. It also redoes what newDispatch
// counted: suggestions are the configurations' first runs (promotions
// are not suggestions), the optimizer's priors are every finished outcome
// with its fidelity (FidelityAware) or the full-fidelity ones (and the
// lower-fidelity configurations count as pending, so that a re-seeded
// optimizer does not suggest them again).
func (d *dispatch) fidelityResume(all []storage.Trial, priors []optimizers.Prior, unobserved []map[string]any, suggestions int) ([]optimizers.Prior, []map[string]any, int, error) {
	s := d.s
	f := s.fid
	if f == nil || s.o.Worker {
		return priors, unobserved, suggestions, nil
	}
	last := lastAttempts(all)
	priors, unobserved, suggestions = nil, nil, 0
	planned := 0
	for _, t := range all {
		v, full, ok := trial.FidelityOf(t.Metadata)
		rung, err1 := strconv.Atoi(t.Metadata[trial.FidelityRungKey])
		bracket, err2 := strconv.Atoi(t.Metadata[trial.FidelityBracketKey])
		if !ok || err1 != nil || err2 != nil {
			// Run before the fidelity was set: an ordinary trial.
			if t.RetryOf == 0 {
				suggestions++
			}
			if t.Finished() && t.Status != trial.CANCELED {
				priors = append(priors, optimizers.Prior{Values: stringValues(t.Params), Status: t.Status, Results: map[string]any(t.Results)})
			} else {
				unobserved = append(unobserved, stringValues(t.Params))
			}
			continue
		}
		if rung < 0 || rung >= len(f.plan.Rungs()) || f.plan.Fidelity(rung) != v || f.plan.Fidelity(len(f.plan.Rungs())-1) != full {
			return nil, nil, 0, fmt.Errorf("fidelity: trial %d ran at %s (rung %d of max %s), which the plan %s does not have: the fidelity settings changed since the experiment started; use a new experiment id",
				t.ID, fidelityText(v), rung, fidelityText(full), f.plan.String())
		}
		key := f.chainKey(t.Params)
		c := f.chains[key]
		if c == nil {
			tun := s.runnerTunables()
			if err := tun.Assign(stringValues(t.Params)); err != nil {
				return nil, nil, 0, fmt.Errorf("fidelity: trial %d: %w", t.ID, err)
			}
			c = &fidChain{tun: tun, last: map[int]int{}}
			f.chains[key] = c
			planned++
		}
		if err := f.plan.Resume(key, bracket, rung); err != nil {
			return nil, nil, 0, fmt.Errorf("fidelity: rebuilding the plan from trial %d: %w", t.ID, err)
		}
		if t.RetryOf == 0 {
			if rung == bracket {
				suggestions++
			}
			if f.plan.Full(rung) {
				f.full++
			}
		}
		if !t.Finished() || retriedLater(last, t) {
			if !t.Finished() {
				unobserved = append(unobserved, stringValues(t.Params))
			}
			continue
		}
		score := math.Inf(1)
		if t.Status == trial.SUCCEEDED {
			if sc, err := s.targets.Scores(t.Status, t.Results); err == nil && len(sc) > 0 {
				score = sc[0]
				c.last[rung] = t.ID
			}
		}
		if err := f.plan.Report(key, rung, score); err != nil {
			return nil, nil, 0, fmt.Errorf("fidelity: rebuilding the plan from trial %d: %w", t.ID, err)
		}
		switch {
		case t.Status == trial.CANCELED:
			unobserved = append(unobserved, stringValues(t.Params))
		case f.aware != nil:
			c.observed = true
			priors = append(priors, optimizers.Prior{Values: stringValues(t.Params), Status: t.Status, Results: map[string]any(t.Results), Fidelity: v})
		case f.plan.Full(rung):
			priors = append(priors, optimizers.Prior{Values: stringValues(t.Params), Status: t.Status, Results: map[string]any(t.Results)})
		default:
			unobserved = append(unobserved, stringValues(t.Params))
		}
	}
	if planned > 0 {
		s.log.Info("fidelity: plan rebuilt from the experiment's stored trials", "configurations", planned,
			"running", f.plan.Running(), "promotions_due", f.plan.Promotable(), "full_fidelity_trials", f.full)
	}
	return priors, unobserved, suggestions, nil
}

// fidelityCapped reports whether the full-fidelity budget (max_trials)
// is spent: no new configuration starts.
func (d *dispatch) fidelityCapped() bool { return d.s.fid != nil && d.s.fid.capped() }
