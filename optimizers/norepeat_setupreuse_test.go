package optimizers

import (
	"context"
	"math"
	"testing"

	"github.com/benchtune/bench/trial"
)

// TestNoRepeatsNearOptimumOnLogInt: the tunables and objective of
// configs/examples/setup-reuse, whose optimum (O3, threads=16, batch=32)
// lies on a range bound and on a log-scaled int. Once the GP has found it,
// its acquisition peaks at unit coordinates that all round to that
// configuration; the optimizer must still suggest unmeasured
// configurations (12288 of them) rather than the optimum again.
func TestNoRepeatsNearOptimumOnLogInt(t *testing.T) {
	g := groups(t, `{
	  "build": {"cost": 100, "params": {
	    "build_opt": {"type": "categorical", "values": ["O0", "O2", "O3"], "default": "O0"}}},
	  "runtime": {"cost": 1, "params": {
	    "threads": {"type": "int", "range": [1, 16], "default": 1},
	    "batch": {"type": "int", "range": [1, 256], "default": 16, "log": true}}}}`)
	base := map[string]float64{"O0": 4, "O2": 2, "O3": 1.8}
	o, err := New(Spec{Class: "mlos_bench.optimizers.MlosCoreOptimizer", Tunables: g.Copy(),
		Config: map[string]any{"max_suggestions": int64(30), "seed": int64(42), "start_with_defaults": true}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := 1; o.NotConverged(); i++ {
		sg, err := o.Suggest(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		tun := sg[0].Tunables
		v := tun.Values()
		if j, ok := seen[tun.Hash()]; ok {
			t.Fatalf("suggestion %d repeats suggestion %d: %v", i, j, v)
		}
		seen[tun.Hash()] = i
		x := math.Log2(float64(v["batch"].(int64))) - 5
		score := base[v["build_opt"].(string)]*(1+3/float64(v["threads"].(int64))) + x*x/10
		score = math.Round(score*1e4) / 1e4
		if _, err := o.Observe(sg[0].ID, tun, trial.SUCCEEDED, map[string]any{"score": score}); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 30 {
		t.Fatalf("%d suggestions, want 30", len(seen))
	}
}
