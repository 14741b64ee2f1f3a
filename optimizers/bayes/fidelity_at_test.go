package bayes

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// TestPredictAt: the GP with a fidelity input predicts at any fidelity:
// at full fidelity it agrees with PredictFull (mean and incumbent); at the
// lowest fidelity its predictions rank random configurations as their
// expected low-fidelity values, with a smaller SD than at full fidelity
// (where it has fewer observations), and the incumbent is the lowest
// prediction there over the observed configurations. It declines before it
// has a model or without a fidelity, and refuses a bad point.
func TestPredictAt(t *testing.T) {
	o, err := New(fidDims(), Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := o.PredictAt([]tunables.Point{{0.5, 0.5, 0.5, 1}}); ok || err != nil {
		t.Errorf("without a fidelity: ok %v, err %v", ok, err)
	}
	if err := o.SetFidelity(3, 1); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := o.PredictAt([]tunables.Point{{0.5, 0.5, 0.5, 1}}); ok || err != nil {
		t.Errorf("without observations: ok %v, err %v", ok, err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	observed := observeLowFull(t, o, rng, 80)
	if _, _, _, err := o.PredictAt([]tunables.Point{{0.5, math.NaN(), 0.5, 0}}); err == nil {
		t.Error("a NaN coordinate was accepted")
	}
	var low, full []tunables.Point
	var truthLow []float64
	for range 40 {
		p := tunables.Point{rng.Float64(), rng.Float64(), rng.Float64(), 0}
		low = append(low, p)
		full = append(full, tunables.Point{p[0], p[1], p[2], 1})
		left := 1.0
		truthLow = append(truthLow, 4*(p[0]-0.75)*(p[0]-0.75)+4*(p[1]-0.25)*(p[1]-0.25)+(p[2]-0.5)*(p[2]-0.5)+left*(0.8+0.3*p[0]))
	}
	pl, incL, ok, err := o.PredictAt(low)
	if err != nil || !ok || len(pl) != len(low) || len(incL) != len(low) {
		t.Fatalf("PredictAt low: %d predictions, ok %v, err %v", len(pl), ok, err)
	}
	pf, incF, _, err := o.PredictAt(full)
	if err != nil {
		t.Fatal(err)
	}
	pfull, incFull, _, _ := o.PredictFull(full, true)
	meanL := make([]float64, len(pl))
	sdLower := 0
	for i := range pl {
		meanL[i] = pl[i].Mean
		if math.Abs(pf[i].Mean-pfull[i].Mean) > 1e-9 || math.Abs(pf[i].SD-pfull[i].SD) > 1e-9 {
			t.Errorf("point %d at full fidelity: %+v, PredictFull %+v", i, pf[i], pfull[i])
		}
		if math.Abs(incF[i]-incFull) > 1e-9 {
			t.Errorf("incumbent at full fidelity %v, PredictFull's %v", incF[i], incFull)
		}
		if pl[i].SD < pf[i].SD {
			sdLower++
		}
		if incL[i] != incL[0] {
			t.Errorf("incumbents at one fidelity differ: %v %v", incL[i], incL[0])
		}
	}
	if rho := rankCorr(meanL, truthLow); rho < 0.85 {
		t.Errorf("low-fidelity predictions' rank correlation %.3f, want >= 0.85", rho)
	}
	if sdLower < len(pl)*3/4 {
		t.Errorf("SD lower at the lowest fidelity (80 observations) than at full (8) for %d of %d points", sdLower, len(pl))
	}
	obsPred, _, _, _ := o.PredictAt(observed)
	best := math.Inf(1)
	for _, p := range obsPred {
		best = min(best, p.Mean)
	}
	if math.Abs(incL[0]-best) > 1e-9 {
		t.Errorf("incumbent at the lowest fidelity %v, the observed configurations' best prediction there %v", incL[0], best)
	}
}
