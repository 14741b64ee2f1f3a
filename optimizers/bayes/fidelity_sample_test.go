package bayes

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// TestSampleFull: the posterior samples at full fidelity agree with
// PredictFull (over 400 draws, each configuration's sample mean within 4
// standard errors of the predicted mean and its sample SD within 25% of
// the predicted SD: the samples use 512 random features), the fidelity
// coordinate given is ignored, the same generator state gives the same
// draw, and it declines (ok false, or an error for bad input) where
// PredictFull does.
func TestSampleFull(t *testing.T) {
	o, err := New(fidDims(), Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	pt := []tunables.Point{{0.5, 0.5, 0.5, 1}}
	if _, ok, err := o.SampleFull(pt, rng); ok || err != nil {
		t.Errorf("without a fidelity: ok %v, err %v", ok, err)
	}
	if err := o.SetFidelity(3, 1); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := o.SampleFull(pt, rng); ok || err != nil {
		t.Errorf("without observations: ok %v, err %v", ok, err)
	}
	observeLowFull(t, o, rand.New(rand.NewPCG(3, 4)), 90)
	if _, _, err := o.SampleFull(pt, nil); err == nil {
		t.Error("no generator was accepted")
	}
	if _, _, err := o.SampleFull([]tunables.Point{{math.NaN(), 0.5, 0.5, 1}}, rng); err == nil {
		t.Error("a NaN coordinate was accepted")
	}
	var xs []tunables.Point
	for range 6 {
		xs = append(xs, tunables.Point{rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()})
	}
	pred, _, ok, err := o.PredictFull(xs, true)
	if err != nil || !ok {
		t.Fatalf("PredictFull: ok %v, err %v", ok, err)
	}
	const draws = 400
	sum := make([]float64, len(xs))
	sq := make([]float64, len(xs))
	for range draws {
		s, ok, err := o.SampleFull(xs, rng)
		if err != nil || !ok || len(s) != len(xs) {
			t.Fatalf("SampleFull: %d values, ok %v, err %v", len(s), ok, err)
		}
		for i, v := range s {
			sum[i] += v
			sq[i] += v * v
		}
	}
	for i, p := range pred {
		m := sum[i] / draws
		sd := math.Sqrt(max(0, sq[i]/draws-m*m))
		t.Logf("configuration %d: predicted %.4f ± %.4f, sampled %.4f ± %.4f", i, p.Mean, p.SD, m, sd)
		if math.Abs(m-p.Mean) > 4*p.SD/math.Sqrt(draws) {
			t.Errorf("configuration %d: sample mean %.4f, predicted %.4f (SD %.4f)", i, m, p.Mean, p.SD)
		}
		if math.Abs(sd-p.SD) > 0.25*p.SD {
			t.Errorf("configuration %d: sample SD %.4f, predicted %.4f", i, sd, p.SD)
		}
	}
	// The fidelity coordinate is ignored; the same state, the same draw.
	moved := []tunables.Point{{xs[0][0], xs[0][1], xs[0][2], 0.1}, {xs[0][0], xs[0][1], xs[0][2], 0.9}}
	a, _, _ := o.SampleFull(moved, rand.New(rand.NewPCG(7, 8)))
	b, _, _ := o.SampleFull(moved[:1], rand.New(rand.NewPCG(7, 8)))
	if math.Abs(a[0]-a[1]) > 1e-9 || math.Abs(a[0]-b[0]) > 1e-9 {
		t.Errorf("draws %v and %v: want one value", a, b)
	}
}
