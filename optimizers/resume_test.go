package optimizers

import (
	"context"
	"testing"

	"github.com/benchtune/bench/trial"
)

// TestResumedOptimizerDoesNotRepeatUnfinished: a seeded optimizer
// restarted after a crash (a new one with the same seed) is told the
// configurations of the earlier run's finished trials (BulkRegister) and
// of its unfinished ones (RegisterPending): none of its next suggestions
// repeats either, for every optimizer_type.
func TestResumedOptimizerDoesNotRepeatUnfinished(t *testing.T) {
	for _, typ := range []string{"RANDOM", "FLAML", "SMAC"} {
		t.Run(typ, func(t *testing.T) {
			cfg := `{"optimizer_type": "` + typ + `", "max_suggestions": 40, "seed": 5}`
			first := newOpt(t, "mlos_bench.optimizers.MlosCoreOptimizer", cfg)
			sugs, err := first.Suggest(context.Background(), 8)
			if err != nil || len(sugs) != 8 {
				t.Fatalf("first run: %d suggestions, %v", len(sugs), err)
			}
			var priors []Prior
			var unfinished []map[string]any
			earlier := map[string]bool{}
			for i, s := range sugs {
				vals := s.Tunables.Values()
				earlier[s.Tunables.Hash()] = true
				if i < 3 { // finished before the crash
					priors = append(priors, Prior{Values: vals, Status: trial.SUCCEEDED, Results: map[string]any{"score": quadratic(s.Tunables)}})
				} else { // queued or running when it crashed
					unfinished = append(unfinished, vals)
				}
			}
			resumed := newOpt(t, "mlos_bench.optimizers.MlosCoreOptimizer", cfg)
			resumed.Skip(len(sugs))
			if err := resumed.BulkRegister(priors); err != nil {
				t.Fatal(err)
			}
			if err := resumed.(PendingRegisterer).RegisterPending(unfinished); err != nil {
				t.Fatal(err)
			}
			next, err := resumed.Suggest(context.Background(), 8)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range next {
				if earlier[s.Tunables.Hash()] {
					t.Errorf("the resumed optimizer suggested an earlier run's configuration again: %s", s.Tunables.Hash())
				}
			}
			// The unfinished trials' results settle them.
			for i, v := range unfinished {
				tun := resumed.(*MlosCore).tunables.Copy()
				if err := tun.Assign(v); err != nil {
					t.Fatal(err)
				}
				if _, err := resumed.Observe(0, tun, trial.SUCCEEDED, map[string]any{"score": float64(i)}); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(resumed.(*MlosCore).pending); n != len(next) {
				t.Errorf("%d pending after the unfinished trials' results, want %d (this run's suggestions)", n, len(next))
			}
		})
	}
}
