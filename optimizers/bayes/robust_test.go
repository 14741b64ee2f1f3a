package bayes

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/benchtune/bench/optimizers/internal/space"
	"github.com/benchtune/bench/tunables"
)

// One lucky outlier among noisy measurements: the noise-aware model
// downweights it and does not report it as the best point; the naive
// model does.
func TestNoiseAwareDownweightsOutlier(t *testing.T) {
	f := func(x tunables.Point) float64 { return (x[0]-0.3)*(x[0]-0.3) + (x[1]-0.6)*(x[1]-0.6) }
	run := func(aware bool) (tunables.Point, *Optimizer, tunables.Point) {
		o, err := New(unitDims(2), Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		o.SetNoise(nil, aware)
		rng := rand.New(rand.NewPCG(9, 10))
		var outlier tunables.Point
		for i := range 40 {
			x := tunables.Point{rng.Float64(), rng.Float64()}
			y := f(x) + 0.01*rng.NormFloat64()
			if i == 20 {
				x = tunables.Point{0.9, 0.1} // far from the optimum (true value 0.61)
				y = -0.5                     // measured far below everything else
				outlier = x
			}
			if err := o.Observe(Observation{X: x, Y: []float64{y}}); err != nil {
				t.Fatal(err)
			}
		}
		return o.Ranked(1)[0], o, outlier
	}
	best, o, outlier := run(true)
	if slices.Equal(best, outlier) {
		t.Errorf("noise-aware: the outlier %v is reported as the best point", outlier)
	}
	if _, ok := o.outl[space.Key(outlier)]; !ok || len(o.outl) != 1 {
		t.Errorf("noise-aware: rejected %v, want only the outlier %v", o.outl, outlier)
	}
	if math.IsNaN(f(best)) || f(best) > 0.05 {
		t.Errorf("noise-aware: reported point %v has true value %v", best, f(best))
	}
	// The premise: without the noise-aware mode the outlier wins.
	if naive, _, _ := run(false); !slices.Equal(naive, outlier) {
		t.Errorf("naive model reports %v, not the outlier %v", naive, outlier)
	}
}
