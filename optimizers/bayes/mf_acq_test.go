package bayes

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// mfLevels are fidelities 1, 3, 9, 27 on a log scale (coordinates 0, ⅓,
// ⅔, 1), costing their fidelity.
var mfLevels = []FidelityLevel{{0, 1}, {1.0 / 3, 3}, {2.0 / 3, 9}, {1, 27}}

// TestChooseFidelity: the cost-aware choice runs a configuration in a
// region the model has not seen at the cheapest fidelity (it is uncertain
// there at every fidelity), and one in a region it knows well at every
// fidelity (many observations around it at 1, 3, 9 and 27) directly at
// full fidelity; the standard deviations it reports are lower in the
// known region, the thresholds grow with the cost, and a larger κ sends
// a configuration to full fidelity sooner.
func TestChooseFidelity(t *testing.T) {
	o, err := New(fidDims(), Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.ChooseFidelity(tunables.Point{0.5, 0.5, 0.5, 1}, mfLevels, 0); err == nil {
		t.Error("ChooseFidelity without a fidelity: no error")
	}
	if err := o.SetFidelity(3, 1); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := o.ChooseFidelity(tunables.Point{0.5, 0.5, 0.5, 1}, mfLevels, 0); ok || err != nil {
		t.Errorf("without observations: ok %v, err %v", ok, err)
	}
	// Observations only in the corner a, b, c < 0.35, at every fidelity.
	rng := rand.New(rand.NewPCG(5, 6))
	for range 60 {
		var obs []Observation
		p := tunables.Point{0.35 * rng.Float64(), 0.35 * rng.Float64(), 0.35 * rng.Float64(), 0}
		for _, lv := range mfLevels {
			q := tunables.Point{p[0], p[1], p[2], lv.Coord}
			obs = append(obs, Observation{X: q, Y: []float64{fidF(q, rng)}})
		}
		if err := o.Observe(obs...); err != nil {
			t.Fatal(err)
		}
	}
	known := tunables.Point{0.17, 0.18, 0.17, 0} // its fidelity coordinate is ignored
	unknown := tunables.Point{0.9, 0.85, 0.9, 1}
	k, ok, err := o.ChooseFidelity(known, mfLevels, 0)
	if err != nil || !ok {
		t.Fatalf("known: ok %v, err %v", ok, err)
	}
	u, _, err := o.ChooseFidelity(unknown, mfLevels, 0)
	if err != nil {
		t.Fatal(err)
	}
	if k.Level != len(mfLevels)-1 {
		t.Errorf("a configuration the model knows at every fidelity runs at level %d, want full fidelity (%d): sd %.3g, thresholds %.3g", k.Level, len(mfLevels)-1, k.SD, k.Threshold)
	}
	if u.Level != 0 {
		t.Errorf("a configuration in an unexplored region runs at level %d, want the cheapest (0): sd %.3g, thresholds %.3g", u.Level, u.SD, u.Threshold)
	}
	for j := range mfLevels {
		if !(k.SD[j] < u.SD[j]) {
			t.Errorf("level %d: sd %.3g where the model has data, %.3g where it has none", j, k.SD[j], u.SD[j])
		}
		if j > 0 && j < len(mfLevels)-1 && !(u.Threshold[j] > 0) {
			t.Errorf("level %d: threshold %v", j, u.Threshold[j])
		}
	}
	// Cost scaling: the same information gap at a cheaper cost lowers the
	// threshold (the full level's own threshold is 0: no gap).
	cheap := []FidelityLevel{{0, 0.5}, {1, 27}}
	dear := []FidelityLevel{{0, 20}, {1, 27}}
	c1, _, _ := o.ChooseFidelity(unknown, cheap, 0)
	c2, _, _ := o.ChooseFidelity(unknown, dear, 0)
	if !(c1.Threshold[0] < c2.Threshold[0]) {
		t.Errorf("threshold at cost 0.5: %v, at cost 20: %v", c1.Threshold[0], c2.Threshold[0])
	}
	// κ: a threshold above every sd sends the unknown one to full
	// fidelity as well.
	big := 0.0
	for j := range len(mfLevels) - 1 {
		big = max(big, 1.5*u.SD[j]/u.Threshold[j]*DefaultFidelityKappa)
	}
	if b, _, _ := o.ChooseFidelity(unknown, mfLevels, big); b.Level != len(mfLevels)-1 {
		t.Errorf("κ %v: level %d (sd %.3g, thresholds %.3g), want full fidelity", big, b.Level, b.SD, b.Threshold)
	}
}

// TestChooseFidelityLevels: bad levels and κ are refused with what is
// wrong.
func TestChooseFidelityLevels(t *testing.T) {
	o, err := New(fidDims(), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.SetFidelity(3, 1); err != nil {
		t.Fatal(err)
	}
	x := tunables.Point{0.5, 0.5, 0.5, 1}
	for _, tc := range []struct {
		levels []FidelityLevel
		kappa  float64
		err    string
	}{
		{nil, 0, "at least one fidelity level"},
		{[]FidelityLevel{{0, 1}, {0.5, 1}, {1, 9}}, 0, "level 1: costs must increase"},
		{[]FidelityLevel{{0, 0}, {1, 9}}, 0, "level 0: cost 0 must be positive"},
		{[]FidelityLevel{{-0.1, 1}, {1, 9}}, 0, "level 0: coordinate -0.1 outside [0, 1]"},
		{[]FidelityLevel{{0, 1}, {0.5, 9}}, 0, "the last fidelity level (coordinate 0.5) must be full fidelity"},
		{mfLevels, -1, "kappa must be a finite number >= 0"},
		{mfLevels, math.NaN(), "kappa must be a finite number >= 0"},
	} {
		_, _, err := o.ChooseFidelity(x, tc.levels, tc.kappa)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v κ %v: error %v, want %q", tc.levels, tc.kappa, err, tc.err)
		}
	}
	if _, _, err := o.ChooseFidelity(tunables.Point{0.5, 0.5}, mfLevels, 0); err == nil {
		t.Error("a point of the wrong length was accepted")
	}
}
