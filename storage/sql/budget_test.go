package sql

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// TrialSpec.MaxConfigs holds across connections (processes): six stores
// race to store 5 configurations each of their own (half of them with
// Claim, as the scheduler stores a suggestion) against a budget of 8, and
// exactly 8 configurations are stored; every other new one is
// ErrBudgetSpent. Trials of configurations the experiment holds (repeats,
// retries, reused results) are never refused, nor a configuration that
// only another experiment holds allowed; FinishAndQueue refuses as
// NewTrial does and then writes nothing.
func TestNewTrialBudgetOfConfigs(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg := b.fresh(t)
		st := open(t, cfg)
		newExperiment(t, st, "e")
		other := newExperiment(t, st, "other")
		// A configuration stored by another experiment only is new to "e".
		mustTrial(t, other, map[string]string{"x": "elsewhere"})
		const racers, each, budget = 6, 5, 8
		exps := make([]storage.Experiment, racers)
		for i := range exps {
			e, err := open(t, cfg).LoadExperiment(ctx, "e")
			if err != nil {
				t.Fatal(err)
			}
			exps[i] = e
		}
		spec := func(x string, repeat int) storage.TrialSpec {
			return storage.TrialSpec{Params: map[string]string{"x": x},
				Metadata: map[string]string{"repeat_i": fmt.Sprint(repeat)}, MaxConfigs: budget}
		}
		var (
			mu      sync.Mutex
			stored  []storage.Trial
			refused int
			wg      sync.WaitGroup
		)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range each {
					sp := spec(fmt.Sprint(i, "-", j), 1)
					sp.Claim = i%2 == 0
					sp.Running = j%2 == 0
					tr, err := exps[i].NewTrial(ctx, sp)
					mu.Lock()
					switch {
					case err == nil:
						stored = append(stored, tr)
					case errors.Is(err, storage.ErrBudgetSpent):
						refused++
					default:
						t.Errorf("racer %d, configuration %d: %v", i, j, err)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(stored) != budget || refused != racers*each-budget {
			t.Fatalf("%d configurations stored, %d refused; want %d and %d: %v", len(stored), refused, budget, racers*each-budget, fmtIDs(stored))
		}
		if n := count(t, st, `SELECT COUNT(DISTINCT config_id) FROM trial WHERE exp_id = ?`, "e"); n != budget {
			t.Fatalf("the experiment holds %d configurations, want %d", n, budget)
		}
		exp := exps[0]
		first := stored[0]
		x := first.Params["x"]
		// A repeat of a held configuration.
		rep, err := exp.NewTrial(ctx, spec(x, 2))
		if err != nil {
			t.Fatalf("a repeat of a held configuration: %v", err)
		}
		// A retry.
		mustFinish(t, exp, rep.ID, trial.FAILED, nil)
		retry := spec(x, 2)
		retry.RetryOf = rep.ID
		if _, err := exp.NewTrial(ctx, retry); err != nil {
			t.Fatalf("a retry: %v", err)
		}
		// A reused result.
		mustFinish(t, exp, first.ID, trial.SUCCEEDED, map[string]any{"score": 1.0})
		reused := spec(x, 1)
		reused.ReusedFrom = &storage.TrialRef{TrialID: first.ID}
		if _, err := exp.NewTrial(ctx, reused); err != nil {
			t.Fatalf("a reused result: %v", err)
		}
		// New configurations: refused, that of the other experiment too.
		for _, x := range []string{"new", "elsewhere"} {
			_, err := exp.NewTrial(ctx, spec(x, 1))
			wantErr(t, err, storage.ErrBudgetSpent, "a new configuration "+x)
		}
		// FinishAndQueue: refused, and the finish is not written either.
		_, err = exp.FinishAndQueue(ctx, stored[1].ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 2.0}}, spec("new", 1))
		wantErr(t, err, storage.ErrBudgetSpent, "FinishAndQueue of a new configuration")
		if d := mustDetail(t, exp, stored[1].ID); d.Finished() {
			t.Errorf("trial %d finished (%s) by a FinishAndQueue that was refused", stored[1].ID, d.Status)
		}
		if _, err := exp.FinishAndQueue(ctx, stored[1].ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 2.0}}, spec(x, 3)); err != nil {
			t.Errorf("FinishAndQueue of a held configuration: %v", err)
		}
		// A larger budget, or none, stores it.
		bigger := spec("new", 1)
		bigger.MaxConfigs = budget + 1
		if _, err := exp.NewTrial(ctx, bigger); err != nil {
			t.Errorf("with a budget of %d: %v", budget+1, err)
		}
		if _, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "free"}}); err != nil {
			t.Errorf("without a budget: %v", err)
		}
		if n := count(t, st, `SELECT COUNT(DISTINCT config_id) FROM trial WHERE exp_id = ?`, "e"); n != budget+2 {
			t.Errorf("the experiment holds %d configurations, want %d", n, budget+2)
		}
	})
}
