package bayes

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/tunables"
)

func oneDim(t *testing.T) *Optimizer {
	t.Helper()
	o, err := New([]tunables.Dim{{Name: "x", Tunable: "x", Kind: tunables.DimNumeric}}, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Points repeated with a larger spread than the others get more noise.
func TestHeteroscedasticFactors(t *testing.T) {
	o := oneDim(t)
	o.SetNoise(nil, true)
	obs := []Observation{
		{X: tunables.Point{0.1}, Y: []float64{1}}, {X: tunables.Point{0.1}, Y: []float64{1.1}}, {X: tunables.Point{0.1}, Y: []float64{0.9}},
		{X: tunables.Point{0.5}, Y: []float64{1}}, {X: tunables.Point{0.5}, Y: []float64{3}}, {X: tunables.Point{0.5}, Y: []float64{-1}},
		{X: tunables.Point{0.9}, Y: []float64{2}},
	}
	if err := o.Observe(obs...); err != nil {
		t.Fatal(err)
	}
	r := o.hetFactors()
	if !(r[0] < 1 && r[1] > 1 && r[2] == 1) {
		t.Errorf("factors %v: want quiet < 1 < noisy, single = 1", r)
	}
	c := o.counts()
	if !(c[0] > 3 && c[1] < 3 && c[2] == 1) {
		t.Errorf("effective counts %v", c)
	}
	// Off: homoscedastic, as before.
	o2 := oneDim(t)
	if err := o2.Observe(obs...); err != nil {
		t.Fatal(err)
	}
	if c := o2.counts(); c[0] != 3 || c[1] != 3 || c[2] != 1 {
		t.Errorf("counts without the noise-aware mode: %v", c)
	}
}

// On a noisy flat-bottomed function, the noise-aware best (posterior
// mean) is closer to the true optimum than the luckiest observation, on
// average over seeds.
func TestRankedBeatsLuckiestObservation(t *testing.T) {
	f := func(x float64) float64 { return (x - 0.3) * (x - 0.3) * 4 }
	var regretModel, regretLucky float64
	for seed := range 8 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		o, err := New([]tunables.Dim{{Name: "x", Tunable: "x", Kind: tunables.DimNumeric}}, Options{Seed: int64(seed)})
		if err != nil {
			t.Fatal(err)
		}
		o.SetNoise(nil, true)
		lucky, luckyX := math.Inf(1), 0.0
		for range 25 {
			pts, err := o.Suggest(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			y := f(pts[0][0]) + 0.3*rng.NormFloat64()
			if y < lucky {
				lucky, luckyX = y, pts[0][0]
			}
			if err := o.Observe(Observation{X: pts[0], Y: []float64{y}}); err != nil {
				t.Fatal(err)
			}
		}
		best := o.Ranked(1)
		if len(best) != 1 {
			t.Fatal("no ranked point")
		}
		regretModel += f(best[0][0])
		regretLucky += f(luckyX)
		if rel, snr, ok := o.NoiseLevel(); !ok || rel <= 0 || snr <= 0 {
			t.Errorf("noise level %v %v %v", rel, snr, ok)
		}
	}
	if regretModel >= regretLucky {
		t.Errorf("posterior-mean pick's true regret %.4f is not below the luckiest observation's %.4f", regretModel/8, regretLucky/8)
	}
	t.Logf("mean true regret: model %.4f, luckiest observation %.4f", regretModel/8, regretLucky/8)
}

// The augmented-EI penalty's derivative matches a finite difference.
func TestAEIPenaltyGradient(t *testing.T) {
	for _, v := range []float64{1e-4, 0.01, 0.5, 3} {
		f, d := aeiPenalty(v, 0.1)
		h := 1e-7 * math.Max(v, 1e-3)
		f2, _ := aeiPenalty(v+h, 0.1)
		if num := (f2 - f) / h; math.Abs(num-d) > 1e-3*math.Max(1, math.Abs(d)) {
			t.Errorf("v=%v: derivative %v, finite difference %v", v, d, num)
		}
	}
}

// With repeats, the noise the model learns (and shows) is near the one
// the repeats measured, not the prior's mode.
func TestNoiseLevelFromRepeats(t *testing.T) {
	o := oneDim(t)
	o.SetNoise(nil, true)
	rng := rand.New(rand.NewPCG(9, 9))
	var obs []Observation
	for i := range 10 {
		x := float64(i) / 9
		for range 3 {
			obs = append(obs, Observation{X: tunables.Point{x}, Y: []float64{x + 0.1*rng.NormFloat64()}})
		}
	}
	if err := o.Observe(obs...); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Suggest(1, nil); err != nil {
		t.Fatal(err)
	}
	rel, _, ok := o.NoiseLevel()
	// Expected about 0.1/sd(x) ≈ 0.1/0.32 ≈ 0.3.
	if !ok || rel < 0.15 || rel > 0.6 {
		t.Errorf("learned relative noise %v (ok %v), want about 0.3", rel, ok)
	}
}
