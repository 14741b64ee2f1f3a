package bayes

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/benchtune/bench/tunables"
)

func looDims(d int) []tunables.Dim {
	out := make([]tunables.Dim, d)
	for i := range out {
		n := fmt.Sprintf("x%d", i)
		out[i] = tunables.Dim{Name: n, Tunable: n, Kind: tunables.DimNumeric}
	}
	return out
}

// looObserved returns a noise-aware optimizer with n noisy observations of
// f at quasi-random points of the 4-D unit box.
func looObserved(t *testing.T, f func(tunables.Point) float64, n int, seed uint64) *Optimizer {
	t.Helper()
	o, err := New(looDims(4), Options{Seed: int64(seed)})
	if err != nil {
		t.Fatal(err)
	}
	o.SetNoise(nil, true)
	rng := rand.New(rand.NewPCG(seed, 11))
	for range n {
		p := tunables.Point{rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()}
		if err := o.Observe(Observation{X: p, Y: []float64{f(p) + 0.1*rng.NormFloat64()}}); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// A sum of one-dimensional terms is predicted better by the additive
// kernel (by 35 to 60 nats on these seeds); a pure interaction (no
// additive part at all) is not (within ±1.5 nats: the mixture contains the
// plain kernel).
func TestAdditiveLOOChoosesByPrediction(t *testing.T) {
	sum := func(p tunables.Point) float64 {
		s := 0.0
		for i, v := range p {
			s += math.Sin(5*v + float64(i))
		}
		return s
	}
	inter := func(p tunables.Point) float64 { return 8 * (p[0] - 0.5) * (p[1] - 0.5) * (p[2] - 0.5) }
	for seed := uint64(1); seed <= 4; seed++ {
		plain, add, ok := looObserved(t, sum, 40, seed).AdditiveLOO()
		if !ok || add < plain+5 {
			t.Errorf("seed %d, additive function: plain %.2f, additive %.2f (ok %v): want the additive kernel higher by 5 nats at least", seed, plain, add, ok)
		}
		plain, add, ok = looObserved(t, inter, 40, seed).AdditiveLOO()
		if !ok || add > plain+3 {
			t.Errorf("seed %d, interaction: plain %.2f, additive %.2f (ok %v): want the additive kernel not higher by 3 nats", seed, plain, add, ok)
		}
	}
	if _, _, ok := looObserved(t, sum, 5, 1).AdditiveLOO(); ok {
		t.Error("5 observations: want no comparison")
	}
}

// Asking which kernel predicts better does not change what the search
// suggests next.
func TestAdditiveLOOLeavesTheSearchAlone(t *testing.T) {
	a, _ := searchedBowl(t, 4, 15, 0.1)
	b, _ := searchedBowl(t, 4, 15, 0.1)
	if _, _, ok := b.AdditiveLOO(); !ok {
		t.Fatal("no comparison after 15 observations")
	}
	sameNextSuggestion(t, a, b, "after the comparison")
}

// SetOutputWarping(true) on a warped model changes nothing; off, the
// model's targets are the standardized values (no power transform) and
// the optimizer goes on suggesting.
func TestSetOutputWarping(t *testing.T) {
	a, _ := searchedBowl(t, 6, 15, 0.1)
	b, _ := searchedBowl(t, 6, 15, 0.1)
	b.SetOutputWarping(true)
	sameNextSuggestion(t, a, b, "after SetOutputWarping(true)")
	b.SetOutputWarping(false)
	raw := b.rawTargets(nil)
	if got, want := b.targets(nil), transformOutputs(b.debias(raw), false); !slices.Equal(got, want) {
		t.Errorf("targets with the warping off %v, want %v", got, want)
	}
	if got := transformOutputs(b.debias(raw), true); slices.Equal(got, b.targets(nil)) {
		t.Error("the warped targets equal the unwarped ones: the test shows nothing")
	}
	if _, err := b.Suggest(1, nil); err != nil {
		t.Fatal(err)
	}
}
