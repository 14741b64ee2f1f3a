package bayes

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// TestPredictPairs: the joint posterior agrees with PredictFull at full
// fidelity and with PredictAt at the other coordinates (means and SDs);
// at coordinate 1 the pair is the full-fidelity value itself (covariance
// = variance); the correlation is within [-1, 1] and falls as the
// fidelities move apart; a pending point leaves the means and shrinks its
// own variance towards the noise, and the variances elsewhere never grow;
// it declines where PredictFull does.
func TestPredictPairs(t *testing.T) {
	o, err := New(fidDims(), Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	pt := []tunables.Point{{0.5, 0.5, 0.5, 1}}
	if _, _, ok, err := o.PredictPairs(pt, []float64{0}, nil); ok || err != nil {
		t.Errorf("without a fidelity: ok %v, err %v", ok, err)
	}
	if err := o.SetFidelity(3, 1); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := o.PredictPairs(pt, []float64{0}, nil); ok || err != nil {
		t.Errorf("without observations: ok %v, err %v", ok, err)
	}
	observeLowFull(t, o, rand.New(rand.NewPCG(3, 4)), 60)
	if _, _, _, err := o.PredictPairs(pt, []float64{1.5}, nil); err == nil {
		t.Error("a coordinate outside [0, 1] was accepted")
	}
	if _, _, _, err := o.PredictPairs([]tunables.Point{{math.NaN(), 0.5, 0.5, 1}}, []float64{0}, nil); err == nil {
		t.Error("a NaN coordinate was accepted")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var xs []tunables.Point
	for range 5 {
		xs = append(xs, tunables.Point{rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()})
	}
	coords := []float64{0, 0.5, 1}
	pairs, noise, ok, err := o.PredictPairs(xs, coords, nil)
	if err != nil || !ok || len(pairs) != len(xs) {
		t.Fatalf("PredictPairs: %d pairs, ok %v, err %v", len(pairs), ok, err)
	}
	if !(noise > 0) {
		t.Errorf("noise variance %v, want > 0", noise)
	}
	full, _, _, err := o.PredictFull(xs, true)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*(1+math.Abs(b)) }
	for i, x := range xs {
		p := pairs[i]
		if !near(p.Full.Mean, full[i].Mean) || !near(p.Full.SD, full[i].SD) {
			t.Errorf("point %d at full fidelity: %+v, PredictFull %+v", i, p.Full, full[i])
		}
		var at []tunables.Point
		for _, c := range coords {
			q := append(tunables.Point(nil), x...)
			q[3] = c
			at = append(at, q)
		}
		pa, _, _, err := o.PredictAt(at)
		if err != nil {
			t.Fatal(err)
		}
		prev := -2.0
		for j := range coords {
			if !near(p.At[j].Mean, pa[j].Mean) || !near(p.At[j].SD, pa[j].SD) {
				t.Errorf("point %d at %v: %+v, PredictAt %+v", i, coords[j], p.At[j], pa[j])
			}
			corr := p.At[j].Cov / (p.At[j].SD * p.Full.SD)
			if corr < -1-1e-9 || corr > 1+1e-9 {
				t.Errorf("point %d at %v: correlation %v", i, coords[j], corr)
			}
			if j == len(coords)-1 {
				if !near(corr, 1) {
					t.Errorf("point %d: correlation at full fidelity %v, want 1", i, corr)
				}
			} else if j > 0 && corr < prev-1e-9 { // coords run 0, 0.5, 1
				t.Errorf("point %d: correlation at %v (%v) below that at %v (%v)", i, coords[j], corr, coords[j-1], prev)
			}
			prev = corr
		}
	}
	// A pending point: the first configuration at full fidelity.
	pend := []tunables.Point{{xs[0][0], xs[0][1], xs[0][2], 1}}
	pp, _, ok, err := o.PredictPairs(xs, coords, pend)
	if err != nil || !ok {
		t.Fatalf("with a pending point: ok %v, err %v", ok, err)
	}
	for i := range xs {
		if !near(pp[i].Full.Mean, pairs[i].Full.Mean) {
			t.Errorf("point %d: a pending point moved the mean %v -> %v", i, pairs[i].Full.Mean, pp[i].Full.Mean)
		}
		if pp[i].Full.SD > pairs[i].Full.SD*(1+1e-9) {
			t.Errorf("point %d: a pending point grew the SD %v -> %v", i, pairs[i].Full.SD, pp[i].Full.SD)
		}
	}
	v0, v1 := pairs[0].Full.SD*pairs[0].Full.SD, pp[0].Full.SD*pp[0].Full.SD
	// Conditioning on one noisy observation of itself: v1 = v0·noise/(v0+noise).
	if want := v0 * noise / (v0 + noise); math.Abs(v1-want) > 1e-6*v0 {
		t.Errorf("pending point's own variance %v, want %v (before %v, noise %v)", v1, want, v0, noise)
	}
}
