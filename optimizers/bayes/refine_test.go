package bayes

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// refineDims is a 2-D numeric space plus a categorical dimension, which a
// local design must leave at the centre's value.
func refineDims() []tunables.Dim {
	return []tunables.Dim{
		{Name: "a", Tunable: "a", Kind: tunables.DimNumeric},
		{Name: "b", Tunable: "b", Kind: tunables.DimNumeric},
		{Name: "c", Tunable: "c", Kind: tunables.DimCategorical, Choices: 3},
	}
}

// quadBowl is a bowl with its minimum 0 at (0.3, 0.6) on choice 1.
func quadBowl(p tunables.Point) float64 {
	v := 4 * ((p[0]-0.3)*(p[0]-0.3) + (p[1]-0.6)*(p[1]-0.6))
	if p[2] != 1 {
		v += 1
	}
	return v
}

// noisyBowl returns a noise-aware optimizer that observed n random points
// of quadBowl with additive noise of standard deviation sd.
func noisyBowl(t *testing.T, seed int64, n int, sd float64) (*Optimizer, *rand.Rand) {
	t.Helper()
	o, err := New(refineDims(), Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	o.SetNoise(nil, true)
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	for range n {
		p := tunables.Point{rng.Float64(), rng.Float64(), float64(rng.IntN(3))}
		if err := o.Observe(Observation{X: p, Y: []float64{quadBowl(p) + sd*rng.NormFloat64()}}); err != nil {
			t.Fatal(err)
		}
	}
	return o, rng
}

func TestLocalDesignStaysInTheBox(t *testing.T) {
	o, _ := noisyBowl(t, 1, 30, 0.05)
	center := tunables.Point{0.9, 0.05, 1}
	const radius = 0.5
	pts, err := o.LocalDesign(center, 16, radius)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 16 {
		t.Fatalf("got %d points, want 16", len(pts))
	}
	moved := [2]bool{}
	for _, p := range pts {
		if p[2] != 1 {
			t.Errorf("%v: the categorical coordinate moved from the centre's 1", p)
		}
		for i := range 2 {
			h := min(0.5, radius*math.Exp(o.theta[i]))
			if p[i] < max(0, center[i]-h)-1e-12 || p[i] > min(1, center[i]+h)+1e-12 {
				t.Errorf("%v: coordinate %d outside [%v, %v]", p, i, center[i]-h, center[i]+h)
			}
			moved[i] = moved[i] || math.Abs(p[i]-center[i]) > 1e-9
		}
	}
	if !moved[0] || !moved[1] {
		t.Errorf("the design does not spread along both numeric dimensions: %v", pts)
	}
	if _, err := o.LocalDesign(tunables.Point{0.5, 0}, 4, radius); err == nil {
		t.Error("a centre with a coordinate missing: no error")
	}
}

func TestRefineNeedsTheModel(t *testing.T) {
	o, err := New(refineDims(), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.LocalDesign(tunables.Point{0.5, 0.5, 0}, 4, 0.5); !errors.Is(err, errRefineModel) {
		t.Errorf("LocalDesign without observations: %v, want errRefineModel", err)
	}
	if _, err := o.MeanMinimizer(tunables.Point{0.5, 0.5, 0}, 0.5, 0, false); !errors.Is(err, errRefineModel) {
		t.Errorf("MeanMinimizer without observations: %v, want errRefineModel", err)
	}
}

// After a local design around the posterior-mean incumbent, the minimiser
// of the posterior mean is nearer the bowl's bottom than the best single
// observation, on average over seeds: the model averages the noise of
// all the nearby measurements.
func TestMeanMinimizerAveragesTheNoise(t *testing.T) {
	const sd = 0.1 // as large as the bowl's rise 0.16 from the bottom
	var regMin, regObs float64
	for seed := range int64(6) {
		o, rng := noisyBowl(t, seed+1, 25, sd)
		center := o.Ranked(1)[0]
		pts, err := o.LocalDesign(center, 20, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		bestY, bestX := math.Inf(1), tunables.Point(nil)
		for _, p := range pts {
			y := quadBowl(p) + sd*rng.NormFloat64()
			if y < bestY {
				bestY, bestX = y, p
			}
			if err := o.Observe(Observation{X: p, Y: []float64{y}}); err != nil {
				t.Fatal(err)
			}
		}
		x, err := o.MeanMinimizer(center, 0.5, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		regMin += quadBowl(x)
		regObs += quadBowl(bestX)
	}
	if regMin >= regObs {
		t.Errorf("mean regret of the minimiser %.4f, of the best observation of the design %.4f: want lower", regMin/6, regObs/6)
	}
}
