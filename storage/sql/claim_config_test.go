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

// TrialSpec.Claim holds across connections (processes): of four stores
// racing to store the same configuration and repeat, exactly one stores
// it and the others are told which trial holds it. A failed or stopped
// trial frees the claim; a succeeded one keeps it.
func TestNewTrialClaimsConfigAndRepeat(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg := b.fresh(t)
		newExperiment(t, open(t, cfg), "e")
		const racers, configs = 4, 8
		exps := make([]storage.Experiment, racers)
		for i := range exps {
			e, err := open(t, cfg).LoadExperiment(ctx, "e")
			if err != nil {
				t.Fatal(err)
			}
			exps[i] = e
		}
		spec := func(c, repeat int) storage.TrialSpec {
			return storage.TrialSpec{Params: map[string]string{"x": fmt.Sprint(c)},
				Metadata: map[string]string{"repeat_i": fmt.Sprint(repeat)}, Claim: true, Running: true}
		}
		var (
			mu     sync.Mutex
			stored = map[string][]int{}
			wg     sync.WaitGroup
		)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c := range configs {
					for r := 1; r <= 2; r++ {
						key := fmt.Sprint(c, "/", r)
						tr, err := exps[i].NewTrial(ctx, spec(c, r))
						var ce *storage.ClaimedError
						switch {
						case err == nil:
							mu.Lock()
							stored[key] = append(stored[key], tr.ID)
							mu.Unlock()
						case errors.As(err, &ce) && errors.Is(err, storage.ErrClaimed):
							if ce.Trial.Params["x"] != fmt.Sprint(c) || ce.Trial.Metadata["repeat_i"] != fmt.Sprint(r) {
								t.Errorf("%s: claimed by trial %d of %v %v", key, ce.Trial.ID, ce.Trial.Params, ce.Trial.Metadata)
							}
						default:
							t.Errorf("%s: %v", key, err)
						}
					}
				}
			}()
		}
		wg.Wait()
		if len(stored) != configs*2 {
			t.Fatalf("%d configuration-repeats stored, want %d: %v", len(stored), configs*2, stored)
		}
		for key, ids := range stored {
			if len(ids) != 1 {
				t.Errorf("%s stored %d times: %v", key, len(ids), ids)
			}
		}
		exp := exps[0]
		first := stored["0/1"][0]
		// Failed: the claim is free (a retry or a later suggestion runs it).
		mustFinish(t, exp, first, trial.FAILED, nil)
		again, err := exp.NewTrial(ctx, spec(0, 1))
		if err != nil {
			t.Fatalf("after a failure: %v", err)
		}
		// Succeeded: the claim stays (the result is reused).
		mustFinish(t, exp, again.ID, trial.SUCCEEDED, map[string]any{"score": 1.0})
		_, err = exp.NewTrial(ctx, spec(0, 1))
		var ce *storage.ClaimedError
		if !errors.As(err, &ce) || ce.Trial.ID != again.ID || ce.Trial.Status != trial.SUCCEEDED {
			t.Errorf("after a success: %v", err)
		}
		// Asked to stop: free.
		if err := exp.RequestStop(ctx, stored["1/1"][0]); err != nil {
			t.Fatal(err)
		}
		if _, err := exp.NewTrial(ctx, spec(1, 1)); err != nil {
			t.Errorf("after a stop request: %v", err)
		}
		// Without Claim, nothing is checked.
		plain := spec(2, 1)
		plain.Claim = false
		if _, err := exp.NewTrial(ctx, plain); err != nil {
			t.Errorf("without Claim: %v", err)
		}
	})
}
