package bayes

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// fidDims: three continuous knobs and the fidelity (last).
func fidDims() []tunables.Dim {
	return []tunables.Dim{
		{Name: "a", Tunable: "a", Kind: tunables.DimNumeric},
		{Name: "b", Tunable: "b", Kind: tunables.DimNumeric},
		{Name: "c", Tunable: "c", Kind: tunables.DimNumeric},
		{Name: "fidelity", Kind: tunables.DimNumeric},
	}
}

// fidF is a learning-curve-like function: the full-fidelity value (s = 1)
// has its minimum 0 at (0.75, 0.25, 0.5); lower fidelities add an offset
// that shrinks with s, a tilt along a (so the low-fidelity optimum is
// displaced), and noise.
func fidF(p tunables.Point, rng *rand.Rand) float64 {
	full := 4*(p[0]-0.75)*(p[0]-0.75) + 4*(p[1]-0.25)*(p[1]-0.25) + (p[2]-0.5)*(p[2]-0.5)
	left := 1 - p[3]
	return full + left*(0.8+0.3*p[0]) + left*0.05*rng.NormFloat64()
}

// TestFidelityLearnsFromLowFidelities: given 80 cheap observations at the
// lowest fidelity and only 4 at full fidelity, the GP's suggestions are at
// full fidelity and near the full-fidelity optimum; without the fidelity
// input, the same 4 full-fidelity points alone leave it far from it.
func TestFidelityLearnsFromLowFidelities(t *testing.T) {
	const seeds = 3
	optimum := tunables.Point{0.75, 0.25, 0.5}
	dist := func(p tunables.Point) float64 {
		return math.Hypot(p[0]-optimum[0], p[1]-optimum[1])
	}
	var withFid, fullOnly []float64
	for seed := range int64(seeds) {
		rng := rand.New(rand.NewPCG(uint64(seed), 9))
		var low, full []Observation
		for range 80 {
			p := tunables.Point{rng.Float64(), rng.Float64(), rng.Float64(), 0}
			low = append(low, Observation{X: p, Y: []float64{fidF(p, rng)}})
		}
		for range 4 {
			p := tunables.Point{rng.Float64(), rng.Float64(), rng.Float64(), 1}
			full = append(full, Observation{X: p, Y: []float64{fidF(p, rng)}})
		}
		o, err := New(fidDims(), Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.SetFidelity(3, 1); err != nil {
			t.Fatal(err)
		}
		if err := o.Observe(append(low, full...)...); err != nil {
			t.Fatal(err)
		}
		pts, err := o.Suggest(4, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			if p[3] != 1 {
				t.Fatalf("seed %d: suggestion %v is not at full fidelity", seed, p)
			}
		}
		withFid = append(withFid, dist(pts[0]))

		// The same full-fidelity points without the cheap ones.
		b, err := New(fidDims()[:3], Options{Seed: seed, NRandomInit: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, ob := range full {
			if err := b.Observe(Observation{X: ob.X[:3], Y: ob.Y}); err != nil {
				t.Fatal(err)
			}
		}
		q, err := b.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		fullOnly = append(fullOnly, dist(q[0]))
	}
	t.Logf("distance of the first suggestion to the optimum: with the fidelity input %.3f, full fidelity only %.3f", withFid, fullOnly)
	worst := 0.0
	for _, d := range withFid {
		worst = max(worst, d)
	}
	if worst > 0.12 {
		t.Errorf("with 80 low-fidelity observations the suggestions are %.3f from the full-fidelity optimum, want <= 0.12", withFid)
	}
	sum := func(v []float64) (s float64) {
		for _, x := range v {
			s += x
		}
		return s
	}
	if sum(withFid) >= sum(fullOnly) {
		t.Errorf("the low-fidelity observations did not help: %.3f vs %.3f with full fidelity only", withFid, fullOnly)
	}
}

// TestFidelityDesignAndBatchAtFull: the initial design and a model batch
// are all at full fidelity, whatever fidelity the observations had.
func TestFidelityDesignAndBatchAtFull(t *testing.T) {
	o, err := New(fidDims(), Options{Seed: 1, Initial: tunables.Point{0.5, 0.5, 0.5, 0.2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.SetFidelity(3, 1); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 6 {
		pts, err := o.Suggest(4, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			if p[3] != 1 {
				t.Fatalf("round %d: suggestion %v not at full fidelity", round, p)
			}
			// Observed at a lower fidelity, as a bracket's first rung.
			q := tunables.Point{p[0], p[1], p[2], float64(round%3) / 3}
			if err := o.Observe(Observation{X: q, Y: []float64{fidF(q, rng)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSetFidelityErrors: a bad dimension or coordinate is refused with a
// clear message, and so is a second, different setting.
func TestSetFidelityErrors(t *testing.T) {
	o, err := New(append(mixedDims(), tunables.Dim{Name: "r", Kind: tunables.DimNumeric, Levels: 4}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		i    int
		full float64
		want string
	}{
		{-1, 1, "out of range"},
		{6, 1, "out of range"},
		{2, 1, "must be numeric"},         // categorical
		{4, 1, "must be numeric"},         // governed by a special-value selector
		{5, 1.5, "outside [0, 1]"},        // coordinate
		{5, math.NaN(), "outside"},        // coordinate
		{5, 0.5, "not one of its levels"}, // 4 levels: 0, 1/3, 2/3, 1
	} {
		o.fid = nil
		err := o.SetFidelity(c.i, c.full)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SetFidelity(%d, %v) = %v, want an error with %q", c.i, c.full, err, c.want)
		}
	}
	o.fid = nil
	if err := o.SetFidelity(5, 1); err != nil {
		t.Fatal(err)
	}
	if err := o.SetFidelity(5, 1); err != nil {
		t.Errorf("the same setting again: %v", err)
	}
	if err := o.SetFidelity(0, 1); err == nil || !strings.Contains(err.Error(), "already set") {
		t.Errorf("a different setting: %v", err)
	}
}

// TestFidelityDebias: the offset that every configuration has at a low
// fidelity is estimated from configurations measured at two fidelities
// and removed from the targets; without such pairs nothing is removed.
func TestFidelityDebias(t *testing.T) {
	o, err := New(fidDims(), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.SetFidelity(3, 1); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	final := func(p tunables.Point) float64 { return p[0] + 2*p[1] }
	var obs []Observation
	for i := range 30 {
		p := tunables.Point{rng.Float64(), rng.Float64(), rng.Float64(), 0}
		obs = append(obs, Observation{X: p, Y: []float64{final(p) + 1.5}}) // offset 1.5 at s = 0
		if i%3 == 0 {                                                      // promoted: also at s = 1
			q := tunables.Point{p[0], p[1], p[2], 1}
			obs = append(obs, Observation{X: q, Y: []float64{final(q)}})
		}
	}
	if got := o.debias([]float64{1, 2}); got[0] != 1 || got[1] != 2 {
		t.Errorf("debias without history changed the targets: %v", got)
	}
	if err := o.Observe(obs...); err != nil {
		t.Fatal(err)
	}
	raw := o.rawTargets(nil)
	got := o.debias(raw)
	for i, e := range o.hist.Entries() {
		if want := final(e.X); math.Abs(got[i]-want) > 1e-6 {
			t.Fatalf("entry %v: debiased %v, want %v (raw %v)", e.X, got[i], want, raw[i])
		}
	}
}
