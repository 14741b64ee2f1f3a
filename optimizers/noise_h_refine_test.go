package optimizers

import (
	"context"
	"errors"
	"testing"

	"github.com/benchtune/bench/trial"
)

// The staged refinement through MlosCore (SMAC, noise-aware): rounds of
// valid configurations that keep the categorical tunable at the model's
// best value, then a minimiser; FLAML has no model to refine with.
func TestStagedRefinerRounds(t *testing.T) {
	m := newOpt(t, "mlos_bench.optimizers.MlosCoreOptimizer", `{"optimizer_type": "SMAC", "seed": 5, "max_suggestions": 40}`).(*MlosCore)
	m.SetNoise(NoiseSettings{Aware: true})
	ctx := context.Background()
	for range 20 {
		tun, err := SuggestOne(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Observe(0, tun, trial.SUCCEEDED, map[string]any{"score": quadratic(tun)}); err != nil {
			t.Fatal(err)
		}
	}
	best := m.Ranked(1)[0]
	sizes := StagedSplit(9)
	if len(sizes) != 3 || sizes[0]+sizes[1]+sizes[2] != 9 {
		t.Fatalf("StagedSplit(9) = %v", sizes)
	}
	for i, n := range sizes {
		design, err := m.RefineStageDesign(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(design) == 0 || len(design) > n {
			t.Fatalf("round %d: %d configurations, want 1 to %d", i+1, len(design), n)
		}
		for _, v := range design {
			tun := m.Tunables().Copy()
			if err := tun.Assign(v); err != nil {
				t.Fatalf("round %d: %v is not a configuration of the space: %v", i+1, v, err)
			}
			if v["mode"] != best["mode"] {
				t.Errorf("round %d: mode %v, the model's best has %v (a local design keeps categoricals)", i+1, v["mode"], best["mode"])
			}
			if _, err := m.Observe(0, tun, trial.SUCCEEDED, map[string]any{"score": quadratic(tun)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	v, err := m.RefineStagedBest()
	if err != nil {
		t.Fatal(err)
	}
	if tun := m.Tunables().Copy(); tun.Assign(v) != nil || v["mode"] != best["mode"] {
		t.Errorf("minimiser %v: not a configuration with the best's mode %v", v, best["mode"])
	}

	f := newOpt(t, "mlos_bench.optimizers.MlosCoreOptimizer", `{"optimizer_type": "FLAML", "seed": 5}`).(*MlosCore)
	if f.RefineSettled() {
		t.Error("FLAML: settled")
	}
	if _, err := f.RefineStageDesign(3); !errors.Is(err, errNoRefine) {
		t.Errorf("FLAML: RefineStageDesign error %v, want %v", err, errNoRefine)
	}
}
