package bayes

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// TestPredictFull: the GP with a fidelity input predicts configurations'
// full-fidelity values from mostly low-fidelity data (90 configurations
// at the lowest fidelity, 9 of them also at full fidelity): it ranks
// random configurations as their true full-fidelity values, ignores the fidelity
// coordinate it is given, returns a standard deviation only when asked,
// and the incumbent is the best prediction among the observed
// configurations. It declines before it has a model or without a
// fidelity.
func TestPredictFull(t *testing.T) {
	o, err := New(fidDims(), Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := o.PredictFull([]tunables.Point{{0.5, 0.5, 0.5, 1}}, false); ok || err != nil {
		t.Errorf("without a fidelity: ok %v, err %v", ok, err)
	}
	if err := o.SetFidelity(3, 1); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := o.PredictFull([]tunables.Point{{0.5, 0.5, 0.5, 1}}, false); ok || err != nil {
		t.Errorf("without observations: ok %v, err %v", ok, err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	observed := observeLowFull(t, o, rng, 90)
	if _, _, _, err := o.PredictFull([]tunables.Point{{math.NaN(), 0.5, 0.5, 1}}, false); err == nil {
		t.Error("a NaN coordinate was accepted")
	}
	if _, _, _, err := o.PredictFull([]tunables.Point{{0.5, 0.5}}, false); err == nil {
		t.Error("a point of the wrong length was accepted")
	}
	var xs []tunables.Point
	var truth []float64
	for range 40 {
		p := tunables.Point{rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()} // any fidelity coordinate
		xs = append(xs, p)
		truth = append(truth, fidF(tunables.Point{p[0], p[1], p[2], 1}, rng))
	}
	pred, inc, ok, err := o.PredictFull(xs, false)
	if err != nil || !ok || len(pred) != len(xs) {
		t.Fatalf("PredictFull: %d predictions, ok %v, err %v", len(pred), ok, err)
	}
	mean := make([]float64, len(pred))
	for i, p := range pred {
		mean[i] = p.Mean
		if !math.IsNaN(p.SD) {
			t.Fatalf("SD %v without withSD", p.SD)
		}
	}
	rho := rankCorr(mean, truth)
	t.Logf("rank correlation of the predictions with the full-fidelity values %.3f", rho)
	if rho < 0.85 {
		t.Errorf("predictions' rank correlation with the full-fidelity values %.3f, want >= 0.85", rho)
	}
	// The fidelity coordinate given is ignored; with withSD the same mean.
	again, _, _, _ := o.PredictFull([]tunables.Point{{xs[0][0], xs[0][1], xs[0][2], 0.3}}, true)
	if math.Abs(again[0].Mean-pred[0].Mean) > 1e-9 || !(again[0].SD > 0) {
		t.Errorf("prediction %+v, want mean %v and an SD", again[0], pred[0].Mean)
	}
	obsPred, inc2, _, _ := o.PredictFull(observed, false)
	best := math.Inf(1)
	for _, p := range obsPred {
		best = min(best, p.Mean)
	}
	if inc != inc2 || inc > best+1e-9 {
		t.Errorf("incumbent %v / %v, the observed configurations' best prediction %v", inc, inc2, best)
	}
}

// rankCorr is Spearman's rank correlation (no ties expected).
func rankCorr(a, b []float64) float64 {
	rank := func(v []float64) []float64 {
		idx := make([]int, len(v))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(x, y int) bool { return v[idx[x]] < v[idx[y]] })
		r := make([]float64, len(v))
		for i, j := range idx {
			r[j] = float64(i)
		}
		return r
	}
	ra, rb := rank(a), rank(b)
	n := float64(len(a))
	s := 0.0
	for i := range ra {
		s += (ra[i] - rb[i]) * (ra[i] - rb[i])
	}
	return 1 - 6*s/(n*(n*n-1))
}
