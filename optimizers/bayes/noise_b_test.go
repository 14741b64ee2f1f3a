package bayes

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// Two wells of the same width, the one at (0.25, 0.25) 1.0 deep and the
// one at (0.75, 0.7) 0.8 deep, on a flat plateau at 0.
var (
	wellA = tunables.Point{0.25, 0.25}
	wellB = tunables.Point{0.75, 0.7}
)

func twoWells(p tunables.Point) float64 {
	g := func(c tunables.Point) float64 {
		return math.Exp(-((p[0]-c[0])*(p[0]-c[0]) + (p[1]-c[1])*(p[1]-c[1])) / 0.02)
	}
	return -g(wellA) - 0.8*g(wellB)
}

func near(p, c tunables.Point) float64 { return math.Hypot(p[0]-c[0], p[1]-c[1]) }

// twoWellsObserved is a noise-aware optimizer that has observed the two
// wells on a 9×9 grid with noise of standard deviation sd.
func twoWellsObserved(t *testing.T, seed int64, sd float64) *Optimizer {
	t.Helper()
	o, err := New(bowlDims(), Options{Seed: seed, MaxTrials: 120})
	if err != nil {
		t.Fatal(err)
	}
	o.SetNoise(nil, true)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	for i := range 9 {
		for j := range 9 {
			p := tunables.Point{(float64(i) + 0.5) / 9, (float64(j) + 0.5) / 9}
			if err := o.Observe(Observation{X: p, Y: []float64{twoWells(p) + sd*rng.NormFloat64()}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return o
}

// The basin finder finds both minima of a known two-basin function, the
// deeper one first, as two basins (not merged across the ridge between
// them), with the posterior's standard deviations; the distance between
// them is several lengthscales.
func TestBasinsFindsTwoMinima(t *testing.T) {
	for _, seed := range []int64{1, 2} {
		o := twoWellsObserved(t, seed, 0.02)
		bs, err := o.Basins()
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) < 2 {
			t.Fatalf("seed %d: %d basins, want 2 at least: %+v", seed, len(bs), bs)
		}
		if d := near(bs[0].X, wellA); d > 0.08 {
			t.Errorf("seed %d: the first basin %v is %.3f from the deeper well %v", seed, bs[0].X, d, wellA)
		}
		if d := near(bs[1].X, wellB); d > 0.08 {
			t.Errorf("seed %d: the second basin %v is %.3f from the other well %v", seed, bs[1].X, d, wellB)
		}
		if !(bs[0].Mean < bs[1].Mean) || bs[0].SD <= 0 || bs[1].SD <= 0 {
			t.Errorf("seed %d: basins %+v, %+v: want the deeper one first and positive standard deviations", seed, bs[0], bs[1])
		}
		if d, err := o.BasinDistance(bs[0].X, bs[1].X); err != nil || d < 2 {
			t.Errorf("seed %d: the two basins are %.2f lengthscales apart (%v), want 2 at least", seed, d, err)
		}
		mu, sd, err := o.MeanAt(bs[0].X)
		if err != nil || math.Abs(mu-bs[0].Mean) > 1e-9 || math.Abs(sd-bs[0].SD) > 1e-9 {
			t.Errorf("seed %d: MeanAt at the first basin %v ± %v (%v), Basins said %v ± %v", seed, mu, sd, err, bs[0].Mean, bs[0].SD)
		}
	}
}

// One well: one basin below the plateau, and the incumbent's basin is it;
// exploring outside it returns a point farther than the radius.
func TestIncumbentBasinAndExploreOutside(t *testing.T) {
	o := twoWellsObserved(t, 3, 0.02)
	m, mu, sd, err := o.IncumbentBasin()
	if err != nil {
		t.Fatal(err)
	}
	if d := near(m, wellA); d > 0.08 || sd <= 0 {
		t.Errorf("incumbent basin %v (%.3f from the deeper well), mean %v ± %v", m, d, mu, sd)
	}
	x, err := o.ExploreOutside(m, 1.5, mu)
	if err != nil || x == nil {
		t.Fatalf("ExploreOutside: %v, %v", x, err)
	}
	if d, _ := o.BasinDistance(m, x); d <= 1.5 {
		t.Errorf("ExploreOutside returned %v, %.2f lengthscales from %v: inside the radius", x, d, m)
	}
	if x, err := o.ExploreOutside(m, 1e6, mu); err != nil || x != nil {
		t.Errorf("with a radius beyond the box: %v, %v; want nil, nil", x, err)
	}
}

// Asking the basin finder, the incumbent's basin, a distance, the mean
// at a point or an exploration point does not change what the optimizer
// suggests next.
func TestBasinCheckLeavesTheSearchAlone(t *testing.T) {
	a, _ := searchedBowl(t, 9, 15, 0.1)
	b, _ := searchedBowl(t, 9, 15, 0.1)
	if _, err := b.Basins(); err != nil {
		t.Fatal(err)
	}
	m, mu, _, err := b.IncumbentBasin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ExploreOutside(m, 1, mu); err != nil {
		t.Fatal(err)
	}
	if _, err := b.BasinDistance(m, tunables.Point{0.1, 0.9}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.MeanAt(m); err != nil {
		t.Fatal(err)
	}
	if x, err := b.ThompsonPoint(); err != nil || x == nil {
		t.Fatalf("ThompsonPoint: %v, %v", x, err)
	}
	sameNextSuggestion(t, a, b, "after the basin check")
}

// Without the model (fewer than two observations) the basin check says so
// instead of guessing; a staged refinement can start at a given centre,
// and its first design is around it.
func TestBasinCheckNeedsTheModel(t *testing.T) {
	o, err := New(bowlDims(), Options{Seed: 1, MaxTrials: 10})
	if err != nil {
		t.Fatal(err)
	}
	o.SetNoise(nil, true)
	if _, err := o.Basins(); err == nil {
		t.Error("Basins without observations: no error")
	}
	if _, _, _, err := o.IncumbentBasin(); err == nil {
		t.Error("IncumbentBasin without observations: no error")
	}
	w := twoWellsObserved(t, 4, 0.02)
	st, err := w.NewStagedAt(wellB)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := st.Design(8)
	if err != nil || len(pts) != 8 {
		t.Fatalf("Design: %d points, %v", len(pts), err)
	}
	for _, p := range pts {
		if near(p, wellB) > 0.5 {
			t.Errorf("design point %v is %.2f from the centre %v", p, near(p, wellB), wellB)
		}
	}
	if _, err := w.NewStagedAt(tunables.Point{0.5}); err == nil {
		t.Error("NewStagedAt with a point of the wrong length: no error")
	}
}

// Posterior samples' minimisers on the two wells fall in one of the two
// wells, the deeper one more often.
func TestThompsonPointAcrossBasins(t *testing.T) {
	inA, inB := 0, 0
	o := twoWellsObserved(t, 5, 0.1)
	for i := range 12 {
		// Each call draws from a generator seeded by the number of
		// observations: add one (far from both wells) to draw anew.
		x, err := o.ThompsonPoint()
		if err != nil || x == nil {
			t.Fatalf("ThompsonPoint: %v, %v", x, err)
		}
		switch {
		case near(x, wellA) < 0.15:
			inA++
		case near(x, wellB) < 0.15:
			inB++
		}
		p := tunables.Point{0.02 + 0.005*float64(i), 0.98}
		if err := o.Observe(Observation{X: p, Y: []float64{twoWells(p)}}); err != nil {
			t.Fatal(err)
		}
	}
	if inA+inB < 10 || inA < inB {
		t.Errorf("of 12 samples' minimisers %d in the deeper well, %d in the other: want 10 in the wells, more in the deeper", inA, inB)
	}
}
