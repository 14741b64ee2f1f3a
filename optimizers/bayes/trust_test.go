package bayes

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/benchtune/bench/optimizers/internal/space"
	"github.com/benchtune/bench/tunables"
)

func TestTrustRegionUpdates(t *testing.T) {
	tr := newTrustRegion(20)
	tr.update(11)
	tr.round(4)                             // the first round only records the best
	for _, y := range []float64{10, 9, 8} { // three improving rounds
		tr.update(y)
		tr.update(50) // others in the batch do not matter
		tr.round(4)
	}
	if tr.length != 2*trInitLength {
		t.Errorf("after 3 successes the side is %v, want %v", tr.length, 2*trInitLength)
	}
	for range 5 { // ⌈20/4⌉ failing rounds of 4
		tr.update(100)
		tr.round(4)
	}
	if tr.length != trInitLength {
		t.Errorf("after 5 failing rounds of 4 the side is %v, want %v", tr.length, trInitLength)
	}
	collapsed := 0
	for i := range 5 * 7 {
		if tr.round(4) {
			collapsed = i + 1
			break
		}
	}
	if collapsed != 5*7 || tr.length >= trMinLength {
		t.Errorf("the region collapses after 7 halvings of 5 failing rounds: round %d, side %v", collapsed, tr.length)
	}
	tr.restart(123, nil)
	if tr.length != trInitLength || tr.restarts != 1 || tr.lo != 123 || !math.IsInf(tr.best, 1) || tr.succ != 0 || tr.fail != 0 {
		t.Errorf("a restart starts a new run at its initial size: %+v", tr)
	}
}

// From 20 dimensions up the optimizer uses the region once it has 2·D
// points; its suggestions then stay near the incumbent.
func TestTrustRegionSuggestions(t *testing.T) {
	dims := make([]tunables.Dim, 20)
	for i := range dims {
		dims[i] = tunables.Dim{Name: string(rune('a' + i)), Tunable: string(rune('a' + i)), Kind: tunables.DimNumeric}
	}
	o, err := New(dims, Options{Seed: 1})
	if err != nil || o.tr == nil {
		t.Fatalf("no trust region in 20-D: %v", err)
	}
	f := func(p tunables.Point) float64 {
		s := 0.0
		for _, v := range p {
			s += (v - 0.3) * (v - 0.3)
		}
		return s
	}
	for range 50 {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Observe(Observation{X: pts[0], Y: []float64{f(pts[0])}}); err != nil {
			t.Fatal(err)
		}
	}
	center := o.trBestObserved()
	pts, err := o.Suggest(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := trWeights(o.tr.theta, o.cat)
	for i, v := range pts[0] {
		if math.Abs(v-center[i]) > o.tr.length*w[i]/2+1e-9 {
			t.Errorf("coordinate %d moved %v from the center, outside the region of side %v", i, v-center[i], o.tr.length)
		}
	}
	if off, err := New(dims, Options{TrustRegion: -1}); err != nil || off.tr != nil {
		t.Errorf("TrustRegion -1 keeps the global search: %v", err)
	}
}

// In the trust region the hyperparameters are fitted on the points
// nearest the best one.
func TestNearestPoints(t *testing.T) {
	xs := [][]float64{{0.9, 0.9}, {0.1, 0.1}, {0.5, 0.5}, {0.12, 0.1}, {0.1, 0.3}}
	got := nearest(xs, 1, 3)
	want := []int{1, 3, 4}
	if len(got) != len(want) {
		t.Fatalf("nearest = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("nearest = %v, want %v", got, want)
		}
	}
	if all := nearest(xs, 0, 10); len(all) != len(xs) || all[0] != 0 {
		t.Errorf("k above the number of points: %v", all)
	}
}

// A collapsed region restarts TuRBO-1's way: a fresh design of 2·D
// points, then a local GP that sees only the restart's own data, and a
// region around the restart's best point, not the old one.
func TestTrustRegionRestartsFromFreshDesign(t *testing.T) {
	const d = 20
	dims := make([]tunables.Dim, d)
	for i := range dims {
		dims[i] = tunables.Dim{Name: string(rune('a' + i)), Tunable: string(rune('a' + i)), Kind: tunables.DimNumeric}
	}
	o, err := New(dims, Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	f := func(p tunables.Point) float64 {
		s := 0.0
		for _, v := range p {
			s += (v - 0.3) * (v - 0.3)
		}
		return s
	}
	step := func() []tunables.Point {
		t.Helper()
		pts, err := o.Suggest(4, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			if err := o.Observe(Observation{X: p, Y: []float64{f(p)}}); err != nil {
				t.Fatal(err)
			}
		}
		return pts
	}
	for o.hist.Len() < trStartFactor*d+8 {
		step()
	}
	if o.tr.g == nil || o.tr.lo != 0 {
		t.Fatalf("the first run's local model: g %v, lo %d", o.tr.g != nil, o.tr.lo)
	}
	oldBest, _ := o.Best()
	// Make the next round the failure that collapses the region.
	o.tr.length = trMinLength * 1.5
	o.tr.fail = (d+3)/4 - 1
	o.tr.lastBest = o.tr.best
	n0 := o.hist.Len()
	pts := step()
	if o.tr.restarts != 1 || o.tr.lo != n0 || len(o.tr.design) != trRestartFactor*d {
		t.Fatalf("no restart: %d restarts, lo %d (want %d), design of %d", o.tr.restarts, o.tr.lo, n0, len(o.tr.design))
	}
	for i, p := range pts {
		if space.Key(p) != space.Key(o.tr.design[i]) {
			t.Fatalf("suggestion %d after the collapse is not the fresh design's", i)
		}
	}
	for o.hist.Len() < n0+len(o.tr.design) {
		step()
	}
	if o.tr.length != trInitLength {
		t.Errorf("the restart's region starts at %v, want %v", o.tr.length, trInitLength)
	}
	pts = step() // the first suggestions of the new region
	if o.tr.design != nil {
		t.Errorf("the design is observed, the region should search")
	}
	if o.tr.g.n != o.hist.Len()-len(pts)-n0 {
		t.Errorf("the restart's GP holds %d points, want its own %d", o.tr.g.n, o.hist.Len()-len(pts)-n0)
	}
	center := o.trBestObserved()
	if i, _ := o.hist.Lookup(space.Key(center)); i < n0 {
		t.Errorf("the restart's center is entry %d, from before the restart (%d)", i, n0)
	}
	if b, _ := o.Best(); f(b.X) > f(oldBest.X) {
		t.Errorf("Best forgot the earlier runs: %v > %v", f(b.X), f(oldBest.X))
	}
}

// The region's candidates are quasi-random: a scrambled Halton sequence
// puts exactly one of 2^k points in each interval of width 2^-k of its
// first coordinate and one of 3^k in each of width 3^-k of its second
// (a uniform sample leaves about a third of them empty), and two calls
// are scrambled differently.
func TestQuasiRandomIsStratified(t *testing.T) {
	o, err := New(unitDims(3), Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ n, col int }{{256, 0}, {243, 1}} {
		q := o.quasiRandom(c.n, 3)
		seen := make([]int, c.n)
		for i := range c.n {
			v := q[i*3+c.col]
			if v < 0 || v >= 1 {
				t.Fatalf("value %v outside [0,1)", v)
			}
			seen[int(v*float64(c.n))]++
		}
		for j, s := range seen {
			if s != 1 {
				t.Fatalf("coordinate %d of %d points: interval %d holds %d points, want 1", c.col, c.n, j, s)
			}
		}
	}
	a, b := o.quasiRandom(8, 3), o.quasiRandom(8, 3)
	if slices.Equal(a, b) {
		t.Errorf("two calls gave the same points: not scrambled")
	}
}

// The region's GP bounds its noise by TuRBO's 1e-3 (a ripple must not be
// explained as noise) unless the benchmark is known to be noisy: in
// noise-aware mode, or when repeated points measured a noise. Its
// lengthscales are bounded to [0.005, 4] with a prior of median 0.5.
func TestTrustRegionPriors(t *testing.T) {
	const d = 20
	o, err := New(unitDims(d), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	pr := o.trPriors()
	if got := math.Exp(pr.hi[d+1]); math.Abs(got-1e-3) > 1e-12 {
		t.Errorf("noise bound %v, want 1e-3", got)
	}
	for i := range d {
		if math.Abs(math.Exp(pr.lo[i])-0.005) > 1e-12 || math.Abs(math.Exp(pr.hi[i])-4) > 1e-12 ||
			math.Abs(math.Exp(pr.mu[i])-0.5) > 1e-12 || pr.sparse {
			t.Fatalf("lengthscale %d: bounds [%v, %v], median %v, sparse %v", i,
				math.Exp(pr.lo[i]), math.Exp(pr.hi[i]), math.Exp(pr.mu[i]), pr.sparse)
		}
	}
	// Repeats that disagree: a measured noise lifts the bound.
	rng := rand.New(rand.NewPCG(1, 1))
	for range 6 {
		x := make(tunables.Point, d)
		for j := range x {
			x[j] = rng.Float64()
		}
		for _, y := range []float64{1, 1.5} {
			if err := o.Observe(Observation{X: x, Y: []float64{y + x[0]}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := o.trPriors().hi[d+1]; got != o.pr.hi[d+1] {
		t.Errorf("with a measured noise the bound is %v, want the usual %v", math.Exp(got), math.Exp(o.pr.hi[d+1]))
	}
	aware, _ := New(unitDims(d), Options{Seed: 1})
	aware.SetNoise(nil, true)
	if got := aware.trPriors().hi[d+1]; got != aware.pr.hi[d+1] {
		t.Errorf("noise-aware: the bound is %v, want the usual %v", math.Exp(got), math.Exp(aware.pr.hi[d+1]))
	}
}

// With categorical tunables the region keeps the global GP and log EI,
// and restarts the same way: suggestions stay valid through a collapse.
func TestTrustRegionRestartMixedSpace(t *testing.T) {
	dims := unitDims(20)
	dims = append(dims,
		tunables.Dim{Name: "c1", Tunable: "c1", Kind: tunables.DimCategorical, Choices: 3},
		tunables.Dim{Name: "c2", Tunable: "c2", Kind: tunables.DimCategorical, Choices: 2})
	o, err := New(dims, Options{Seed: 4})
	if err != nil || o.tr == nil {
		t.Fatalf("no trust region: %v", err)
	}
	f := func(p tunables.Point) float64 {
		s := p[20] + p[21]
		for _, v := range p[:20] {
			s += (v - 0.6) * (v - 0.6)
		}
		return s
	}
	step := func() {
		t.Helper()
		pts, err := o.Suggest(4, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			if err := o.sp.Check(p); err != nil {
				t.Fatalf("invalid suggestion %v: %v", p, err)
			}
			if err := o.Observe(Observation{X: p, Y: []float64{f(p)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for o.hist.Len() < trStartFactor*len(dims)+8 {
		step()
	}
	o.tr.length = trMinLength * 1.5
	o.tr.fail = (len(dims)+3)/4 - 1
	o.tr.lastBest = o.tr.best
	n0 := o.hist.Len()
	step()
	if o.tr.restarts != 1 || o.tr.lo != n0 {
		t.Fatalf("no restart: %d restarts, lo %d (want %d)", o.tr.restarts, o.tr.lo, n0)
	}
	for o.hist.Len() < n0+len(o.tr.design)+8 {
		step()
	}
	if o.tr.design != nil || o.tr.length < trMinLength {
		t.Errorf("after its design the restart's region searches: design %d, side %v", len(o.tr.design), o.tr.length)
	}
}

// In noise-aware mode the region's center is the run's point with the
// lowest posterior mean, and the suggestions stay in the region around it.
func TestTrustRegionNoiseAwareCenter(t *testing.T) {
	const d = 20
	o, err := New(unitDims(d), Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	o.SetNoise(nil, true)
	rng := rand.New(rand.NewPCG(7, 7))
	f := func(p tunables.Point) float64 {
		s := 0.0
		for _, v := range p {
			s += (v - 0.4) * (v - 0.4)
		}
		return s * (1 + 0.05*rng.NormFloat64())
	}
	for o.hist.Len() < trStartFactor*d+12 {
		pts, err := o.Suggest(4, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			if err := o.Observe(Observation{X: p, Y: []float64{f(p)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	pts, err := o.Suggest(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := o.tr.g
	bi, bmu := -1, math.Inf(1)
	for i := range g.n {
		if mu := g.y[i] - (g.nv[i]+g.jitter)*g.alpha[i]; mu < bmu {
			bi, bmu = i, mu
		}
	}
	center := o.hist.Entries()[o.tr.lo+bi].X
	w := trWeights(o.tr.theta, o.cat)
	for i, v := range pts[0] {
		if math.Abs(v-center[i]) > o.tr.length*w[i]/2+1e-9 {
			t.Errorf("coordinate %d moved %v from the lowest posterior mean, outside the region", i, v-center[i])
		}
	}
}
