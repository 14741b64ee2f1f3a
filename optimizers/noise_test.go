package optimizers

import (
	"testing"

	"github.com/benchtune/bench/internal/aggregate"
	"github.com/benchtune/bench/trial"
)

// With repeat_aggregate median, an outlier among a configuration's
// repeats does not decide its rank; with the mean (the default) it does.
func TestAggregatedRanking(t *testing.T) {
	for _, tc := range []struct {
		kind, agg string
		wantX     int64
	}{
		{"FLAML", "mean", 7},
		{"FLAML", "median", 2},
		{"SMAC", "median", 2},
	} {
		o := newOpt(t, "mlos_bench.optimizers.MlosCoreOptimizer", `{"optimizer_type": "`+tc.kind+`", "seed": 3}`)
		p, err := aggregate.Parse(tc.agg)
		if err != nil {
			t.Fatal(err)
		}
		m := o.(*MlosCore)
		m.SetNoise(NoiseSettings{Aggregate: []aggregate.Policy{p}, Aware: true})
		obs := []struct {
			x     int64
			score float64
		}{{2, 1}, {2, 1.2}, {2, 100}, {7, 5}, {4, 50}, {9, 60}}
		for _, ob := range obs {
			tun := m.Tunables().Copy()
			if err := tun.Assign(map[string]any{"x": ob.x, "mode": "a", "y": 0.0}); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Observe(0, tun, trial.SUCCEEDED, map[string]any{"score": ob.score}); err != nil {
				t.Fatal(err)
			}
		}
		r := m.Ranked(1)
		if len(r) != 1 || r[0]["x"] != tc.wantX {
			t.Errorf("%s %s: ranked first %v, want x=%d", tc.kind, tc.agg, r, tc.wantX)
		}
	}
}
