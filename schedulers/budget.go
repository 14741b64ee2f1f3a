// The budget: how many configurations to ask the optimizer for, and queueing its suggestions as trials.

package schedulers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// budgetState is what the budget (max_trials, max_suggestions,
// queue_ahead) is counted with.
type budgetState struct {
	// aheadLeft counts the trials this process queued ahead (stored
	// unowned) that it has not seen claimed yet.
	aheadLeft int
	// suggestions counts the configurations the optimizer suggested in
	// this process (mlos_bench's optimizer iteration).
	suggestions int
	// trialCount counts the experiment's trials, retries left out: the
	// max_trials budget.
	trialCount int
	noMore     bool // the optimizer has nothing more to suggest
	// budgetSpent: storage refused a new configuration because the
	// experiment holds max_suggestions of them, stored by any of its
	// processes (storage.ErrBudgetSpent).
	budgetSpent bool
	// configsBeyond counts the configurations the experiment held at the
	// start beyond the suggestions counted then (a confirmation's run of
	// the default, which no suggestion stored): storage's budget of
	// configurations is max_suggestions plus these (maxConfigs).
	configsBeyond int
	lastClaim     time.Time // refill's last claim from storage
	lastCount     time.Time // countTrials' last scan
}

// fill starts trials on idle runners: queued ones first (retries, claimed,
// repeats), then trials claimed from storage, then new suggestions.
func (d *dispatch) fill(ctx context.Context) error {
	d.applyStop()
	for len(d.running) < d.limit() && len(d.idle) > 0 {
		if len(d.queue) == 0 {
			progressed, err := d.refill(ctx)
			if err != nil || !progressed {
				return err
			}
			continue // suggestions may all have reused results
		}
		i := d.nextItem()
		if i < 0 {
			// Only the runner a retry should avoid is idle: run something
			// else on it, or wait for another runner.
			progressed, err := d.refill(ctx)
			if err != nil || !progressed {
				return err
			}
			continue
		}
		it := d.queue[i]
		d.queue = append(d.queue[:i], d.queue[i+1:]...)
		if err := d.start(ctx, it); err != nil {
			return err
		}
	}
	return nil
}

// refill adds trials to the queue: claimed from storage, else suggested.
// It reports whether it got anything (suggestions whose results were
// reused count).
func (d *dispatch) refill(ctx context.Context) (bool, error) {
	s := d.s
	want := min(len(d.idle), d.limit()-len(d.running))
	if want <= 0 {
		return false, nil
	}
	// Claiming is a write: at most once a tick, unless this process only
	// claims (a worker) or queued trials ahead itself, which run before
	// new suggestions (in the order of their ids).
	var claimed []storage.Trial
	if now := d.clock.Now(); s.o.Worker || d.aheadLeft > 0 || now.Sub(d.lastClaim) >= s.o.Tick {
		d.lastClaim = now
		var err error
		if claimed, err = s.exp.Claim(ctx, want); err != nil {
			return false, err
		}
		if len(claimed) < want {
			d.aheadLeft = 0 // all claimed, by this process or others
		} else {
			d.aheadLeft = max(0, d.aheadLeft-len(claimed))
		}
	}
	for _, t := range claimed {
		d.queue = append(d.queue, d.itemFor(t))
	}
	if len(claimed) > 0 || s.o.Worker {
		return len(claimed) > 0, nil
	}
	if d.popDeferred() {
		return true, nil
	}
	if handled, progressed, err := d.fidelityRefill(want); handled || err != nil { // fidelity.go: promotions first
		return progressed, err
	}
	return d.suggest(ctx, want)
}

// itemFor makes a queue item of a claimed trial.
func (d *dispatch) itemFor(t storage.Trial) item {
	it := item{t: t, root: t.ID}
	if t.RetryOf != 0 {
		it.root = t.RetryOf
		it.attempt = d.retryCount[t.RetryOf]
	}
	return it
}

// suggest asks the optimizer for configurations for want idle runners and
// queues them (trial_config_repeat_count trials each).
func (d *dispatch) suggest(ctx context.Context, want int) (bool, error) {
	s := d.s
	if !d.notDone() {
		return false, nil
	}
	if d.others {
		// Other processes may have added trials: count from storage.
		if n, err := d.countTrials(ctx); err == nil {
			d.trialCount = n
		}
		if !d.notDone() {
			return false, nil
		}
	}
	k := trial.Budget{Repeats: d.repeats(), MaxTrials: s.cfg.MaxTrials}.Suggestions(want, s.cfg.QueueAhead, d.trialCount)
	if k < 1 {
		return false, nil
	}
	sugs, err := s.opt.Suggest(ctx, k)
	if err != nil {
		return false, fmt.Errorf("optimizer %s: %w", s.opt.Name(), err)
	}
	d.suggestions += len(sugs)
	if len(sugs) == 0 {
		d.noMore = true
		return false, nil
	}
	// This process's runners take the first want trials; the rest are
	// queued ahead for others. When some are, this process's own trials
	// are stored at once too, so that trial ids follow the order of the
	// suggestions and their repeats (as in mlos_bench, where repeat 1 of a
	// configuration is the trial before repeat 2).
	local := want
	storeNow := len(sugs)*d.repeats() > want
	for _, sg := range sugs {
		n := min(local, d.repeats())
		if err := d.queueSuggestion(ctx, sg, n, storeNow); err != nil {
			return false, err
		}
		local -= n
	}
	return true, nil
}

func (d *dispatch) countTrials(ctx context.Context) (int, error) {
	// Reading every trial is a scan: at most once a second.
	now := d.clock.Now()
	if now.Sub(d.lastCount) < time.Second {
		return d.trialCount, nil
	}
	d.lastCount = now
	all, err := d.s.exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range all {
		if t.RetryOf == 0 {
			n++
		}
	}
	return n, nil
}

// metadata returns the trial parameters every trial of a suggestion has.
func (d *dispatch) metadata(tun *tunables.Groups) map[string]string {
	meta := map[string]string{"optimizer": d.s.opt.Name(), "is_defaults": "False"}
	if tun.IsDefaults() {
		meta["is_defaults"] = "True" // stored as Python writes a bool, like mlos_bench
	}
	for i, t := range d.s.opt.Targets() {
		meta["opt_target_"+strconv.Itoa(i)] = t.Name
		meta["opt_direction_"+strconv.Itoa(i)] = t.Direction()
	}
	return meta
}

// queueSuggestion stores a suggestion's trials (one per repeat), reusing
// identical results when allowed, and queues the ones to run: the first
// local of them for this process's runners (stored when they start, or at
// once when storeNow), the others stored now, unowned, for any process to
// claim.
func (d *dispatch) queueSuggestion(ctx context.Context, sg optimizers.Suggestion, local int, storeNow bool) error {
	s := d.s
	tun := sg.Tunables
	fidMeta, skip, err := d.fidelityFirst(sg, &tun) // fidelity.go: its bracket and first rung
	if err != nil || skip {
		return err
	}
	meta := d.metadata(tun)
	maps.Copy(meta, fidMeta)
	hash := tun.Hash()
	for r := 1; r <= d.repeats(); r++ {
		if s.cfg.MaxTrials > 0 && d.trialCount >= s.cfg.MaxTrials {
			return nil
		}
		m := maps.Clone(meta)
		repeat := strconv.Itoa(r)
		m["repeat_i"] = repeat
		spec := storage.TrialSpec{ConfigHash: hash, Params: tun.StringValues(), Metadata: m, MaxConfigs: d.maxConfigs()}
		// Stored only if no other process runs (or ran) this configuration
		// and repeat: the check and the insert are one transaction.
		spec.Claim = s.cfg.Reuse && !d.noReuse
		// Only a configuration and repeat that some trial of the experiment
		// already has can be reused or waited for: storage is asked only
		// then (or when other processes add trials too).
		key := hash + "|" + repeat
		mayExist := d.keys[key] || d.others || s.o.ReuseFrom != nil
		d.keys[key] = true
		if s.cfg.Reuse && mayExist && !d.noReuse {
			done, err := d.reuse(ctx, sg.ID, spec, repeat)
			if d.spent(err) {
				return nil
			}
			if err != nil {
				return err
			}
			if done {
				continue
			}
		}
		if s.cfg.Reuse && mayExist && !d.noReuse {
			if other, ok, err := s.exp.InFlight(ctx, hash, repeat); err != nil {
				return err
			} else if ok {
				// The same configuration and repeat is running: wait for it
				// (stored once it is settled).
				d.trialCount++
				sp := spec
				d.waiting[other.ID] = append(d.waiting[other.ID], item{spec: &sp, sugID: sg.ID})
				if _, mine := d.running[other.ID]; !mine {
					d.others = true
				}
				continue
			}
		}
		d.trialCount++
		if local <= 0 {
			// Queued ahead for other processes to claim: stored now, unowned.
			t, err := s.plain.NewTrial(ctx, spec)
			if d.spent(err) {
				d.trialCount--
				return nil
			}
			if ce := (*storage.ClaimedError)(nil); errors.As(err, &ce) {
				if err := d.claimed(ctx, item{spec: &spec, sugID: sg.ID}, ce.Trial); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			d.aheadLeft++
			d.added(t)
			continue
		}
		local--
		if storeNow {
			// Stored now, held by this process, started like a claimed one.
			t, err := s.exp.NewTrial(ctx, spec)
			if d.spent(err) {
				d.trialCount--
				return nil
			}
			if ce := (*storage.ClaimedError)(nil); errors.As(err, &ce) {
				if err := d.claimed(ctx, item{spec: &spec, sugID: sg.ID}, ce.Trial); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			d.added(t)
			it := d.itemFor(t)
			it.sugID = sg.ID
			d.queue = append(d.queue, it)
			continue
		}
		d.queue = append(d.queue, item{spec: &spec, sugID: sg.ID})
	}
	return nil
}

// maxConfigs is the budget of configurations a new suggestion's trials
// are stored under (storage.TrialSpec.MaxConfigs): max_suggestions,
// checked by storage over the whole experiment, so that several
// processes suggesting for one experiment store no more configurations
// than the budget together. The optimizer's own count of its
// suggestions (with those of earlier runs, Skip) stays the fast path.
// 0 (none) with a fidelity ladder, whose rungs of one configuration are
// stored as configurations of their own.
func (d *dispatch) maxConfigs() int {
	if d.s.fid != nil || d.s.opt.MaxSuggestions() <= 0 {
		return 0
	}
	return d.s.opt.MaxSuggestions() + d.configsBeyond
}

// configsBeyond returns how many more distinct configurations the
// trials in all hold than the suggestions counted from them (first
// attempts of repeat 1): configurations that no suggestion stored, such
// as the default run by a confirmation phase (confirm.go, whose trials
// are repeats past trial_config_repeat_count). Without them in the
// budget, a resumed experiment would stop before its optimizer spent
// max_suggestions. Never negative: a configuration suggested twice (its
// result reused) counts once in storage and twice as a suggestion.
func configsBeyond(all []storage.Trial, suggestions int) int {
	configs := make(map[int64]bool, len(all))
	for _, t := range all {
		configs[t.ConfigID] = true
	}
	return max(0, len(configs)-suggestions)
}

// spent reports whether err is storage's refusal of a new configuration
// (storage.ErrBudgetSpent): the experiment holds max_suggestions
// configurations, so the optimizer's budget is spent. Nothing is stored
// and nothing failed: the search ends, the trials running and those
// queued of configurations already held still run.
func (d *dispatch) spent(err error) bool {
	if !errors.Is(err, storage.ErrBudgetSpent) {
		return false
	}
	if !d.budgetSpent {
		d.budgetSpent = true
		d.s.log.Info("the experiment holds max_suggestions configurations (stored by every process of it): no more suggestions", "max_suggestions", d.s.opt.MaxSuggestions())
	}
	return true
}
