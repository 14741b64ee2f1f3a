package bayes

import (
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// observeLowFull feeds o (fidDims, fidelity coordinate 3) n random
// configurations at the lowest fidelity (0), every tenth also at full
// fidelity (1, a promotion), with fidF's values; it returns the
// configurations (at 0).
func observeLowFull(t *testing.T, o *Optimizer, rng *rand.Rand, n int) []tunables.Point {
	t.Helper()
	var observed []tunables.Point
	for i := range n {
		p := tunables.Point{rng.Float64(), rng.Float64(), rng.Float64(), 0}
		obs := []Observation{{X: p, Y: []float64{fidF(p, rng)}}}
		if i%10 == 0 { // a promotion: the same configuration at full fidelity
			q := tunables.Point{p[0], p[1], p[2], 1}
			obs = append(obs, Observation{X: q, Y: []float64{fidF(q, rng)}})
		}
		if err := o.Observe(obs...); err != nil {
			t.Fatal(err)
		}
		observed = append(observed, p)
	}
	return observed
}
