package bayes

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/optimizers/internal/space"
	"github.com/benchtune/bench/tunables"
)

func branin(p tunables.Point) float64 {
	x1, x2 := -5+15*p[0], 15*p[1]
	b := 5.1 / (4 * math.Pi * math.Pi)
	c := 5 / math.Pi
	u := x2 - b*x1*x1 + c*x1 - 6
	return u*u + 10*(1-1/(8*math.Pi))*math.Cos(x1) + 10
}

// mixedDims: continuous x, integer n (21 levels), categorical c (4
// choices), and tunable s with special values (selector with 3 choices,
// numeric part with 11 levels).
func mixedDims() []tunables.Dim {
	return []tunables.Dim{
		{Name: "x", Tunable: "x", Kind: tunables.DimNumeric},
		{Name: "n", Tunable: "n", Kind: tunables.DimNumeric, Levels: 21},
		{Name: "c", Tunable: "c", Kind: tunables.DimCategorical, Choices: 4},
		{Name: "s!special", Tunable: "s", Kind: tunables.DimCategorical, Choices: 3},
		{Name: "s", Tunable: "s", Kind: tunables.DimNumeric, Levels: 11},
	}
}

// mixedF has its minimum 0 at x=0.3, n=0.7, c=2, s in range at 0.4; the
// special value 1 costs 0.2 and special value 2 costs 1.
func mixedF(p tunables.Point) float64 {
	f := 2*(p[0]-0.3)*(p[0]-0.3) + (p[1]-0.7)*(p[1]-0.7) + []float64{0.6, 0.9, 0, 0.3}[int(p[2])]
	switch p[3] {
	case 0:
		f += 3 * (p[4] - 0.4) * (p[4] - 0.4)
	case 1:
		f += 0.2
	default:
		f += 1
	}
	return f
}

func run(t *testing.T, o *Optimizer, f func(tunables.Point) float64, n int) float64 {
	t.Helper()
	best := math.Inf(1)
	for range n {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		y := f(pts[0])
		best = min(best, y)
		if err := o.Observe(Observation{X: pts[0], Y: []float64{y}}); err != nil {
			t.Fatal(err)
		}
	}
	return best
}

func TestOptimizesBranin(t *testing.T) {
	o, err := New(unitDims(2), Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if best := run(t, o, branin, 40); best > 0.45 {
		t.Errorf("best after 40 evaluations = %v, want <= 0.45 (optimum 0.3979)", best)
	}
	b, ok := o.Best()
	if !ok || math.Abs(b.Y[0]-branin(b.X)) > 1e-12 {
		t.Errorf("Best() = %v, %v", b, ok)
	}
}

func TestMixedSpaceAndSpecialValues(t *testing.T) {
	sp, _ := space.New(mixedDims())
	o, err := New(mixedDims(), Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 40 {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := pts[0]
		if diff := cmp.Diff(sp.Snap(p), p); diff != "" {
			t.Fatalf("suggestion not canonical (-snapped +got):\n%s", diff)
		}
		if seen[space.Key(p)] {
			t.Fatalf("point %v suggested twice", p)
		}
		seen[space.Key(p)] = true
		if err := o.Observe(Observation{X: p, Y: []float64{mixedF(p)}}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := o.Best()
	if b.Y[0] > 0.05 || b.X[2] != 2 || b.X[3] != 0 {
		t.Errorf("best after 40 evaluations = %v at %v, want < 0.05 with c=2 and s in range", b.Y, b.X)
	}
	// Points with a special value chosen share one encoding whatever their
	// numeric coordinate holds.
	a := o.encode(tunables.Point{0.1, 0.5, 1, 2, 0})
	c := o.encode(tunables.Point{0.1, 0.5, 1, 2, 0.9})
	if diff := cmp.Diff(a, c); diff != "" {
		t.Errorf("special-value points encode differently:\n%s", diff)
	}
}

func TestDeterministicPerSeed(t *testing.T) {
	trace := func(seed int64) []tunables.Point {
		o, err := New(mixedDims(), Options{Seed: seed, NRandomInit: 4})
		if err != nil {
			t.Fatal(err)
		}
		var out []tunables.Point
		for range 8 {
			pts, err := o.Suggest(2, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pts {
				if err := o.Observe(Observation{X: p, Y: []float64{mixedF(p)}}); err != nil {
					t.Fatal(err)
				}
			}
			out = append(out, pts...)
		}
		return out
	}
	a, b := trace(7), trace(7)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different suggestions:\n%s", diff)
	}
	if cmp.Equal(a, trace(8)) {
		t.Error("different seeds gave identical suggestions")
	}
}

// TestParallelSuggestions: k suggestions are distinct, never pending,
// never observed, in the random phase and in the model phase.
func TestParallelSuggestions(t *testing.T) {
	// A coarse space (7×7×3 = 147 points) makes collisions likely.
	dims := []tunables.Dim{
		{Name: "a", Tunable: "a", Kind: tunables.DimNumeric, Levels: 7},
		{Name: "b", Tunable: "b", Kind: tunables.DimNumeric, Levels: 7},
		{Name: "c", Tunable: "c", Kind: tunables.DimCategorical, Choices: 3},
	}
	f := func(p tunables.Point) float64 { return (p[0]-0.5)*(p[0]-0.5) + (p[1]-0.3)*(p[1]-0.3) + p[2]/10 }
	o, err := New(dims, Options{Seed: 1, NRandomInit: 6})
	if err != nil {
		t.Fatal(err)
	}
	observed := map[string]bool{}
	var pending []tunables.Point
	for round := range 12 {
		pts, err := o.Suggest(4, pending)
		if err != nil {
			t.Fatal(err)
		}
		if len(pts) != 4 {
			t.Fatalf("round %d: %d suggestions, want 4", round, len(pts))
		}
		keys := map[string]bool{}
		for _, p := range pending {
			keys[space.Key(p)] = true
		}
		for _, p := range pts {
			k := space.Key(p)
			if keys[k] {
				t.Fatalf("round %d: %v duplicates a pending point or another suggestion", round, p)
			}
			if observed[k] {
				t.Fatalf("round %d: %v was already observed", round, p)
			}
			keys[k] = true
		}
		// Asynchronous: observe the two oldest pending points, keep the rest.
		pending = append(pending, pts...)
		for _, p := range pending[:2] {
			observed[space.Key(p)] = true
			if err := o.Observe(Observation{X: p, Y: []float64{f(p)}}); err != nil {
				t.Fatal(err)
			}
		}
		pending = pending[2:]
	}
}

func TestRepeatedMeasurementsMerged(t *testing.T) {
	o, err := New(unitDims(2), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	x := tunables.Point{0.25, 0.75}
	for _, y := range []float64{1, 2, 3} {
		if err := o.Observe(Observation{X: x, Y: []float64{y}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Observe(Observation{X: tunables.Point{0.5, 0.5}, Y: []float64{5}}, Observation{X: tunables.Point{0.9, 0.1}, Y: []float64{4}}); err != nil {
		t.Fatal(err)
	}
	if n := o.hist.Len(); n != 3 {
		t.Fatalf("%d distinct points, want 3", n)
	}
	b, _ := o.Best()
	if diff := cmp.Diff(Observation{X: x, Y: []float64{2}}, b); diff != "" {
		t.Errorf("Best (mean of repeats) mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{3, 1, 1}, o.counts()); diff != "" {
		t.Errorf("measurement counts (-want +got):\n%s", diff)
	}
	// A new measurement of a modelled point rebuilds the model with the
	// lower noise of the mean of 4 measurements.
	o.nInit = 0
	if _, err := o.Suggest(1, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Observe(Observation{X: x, Y: []float64{2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Suggest(1, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := o.g.nv[0], o.g.noise/4; math.Abs(got-want) > 1e-15 {
		t.Errorf("noise of the repeated point = %v, want %v", got, want)
	}
}

func TestFailuresAreImputed(t *testing.T) {
	// Trials fail for x0 > 0.6; the optimum of the rest is at x0 = 0.6.
	f := func(p tunables.Point) float64 {
		if p[0] > 0.6 {
			return math.Inf(1)
		}
		return (p[0]-0.8)*(p[0]-0.8) + (p[1]-0.5)*(p[1]-0.5)
	}
	o, err := New(unitDims(2), Options{Seed: 2, NRandomInit: 5})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for i := range 30 {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		y := f(pts[0])
		if i >= 15 && math.IsInf(y, 1) {
			failed++
		}
		if err := o.Observe(Observation{X: pts[0], Y: []float64{y}}); err != nil {
			t.Fatal(err)
		}
		if o.g != nil {
			for _, v := range o.g.y[:o.g.n] {
				if math.IsInf(v, 0) || math.IsNaN(v) {
					t.Fatalf("model target %v", v)
				}
			}
		}
	}
	if failed > 8 {
		t.Errorf("%d of the last 15 suggestions failed: the model does not learn to avoid the failing region", failed)
	}
	b, ok := o.Best()
	if !ok || math.IsInf(b.Y[0], 1) || b.X[0] > 0.6 || b.Y[0] > 0.05 {
		t.Errorf("Best() = %v, %v", b, ok)
	}
}

func TestAllFailed(t *testing.T) {
	o, err := New(unitDims(2), Options{Seed: 2, NRandomInit: 2})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Observe(Observation{X: pts[0], Y: []float64{math.Inf(1)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := o.Best(); ok {
		t.Error("Best reported a point although every trial failed")
	}
	if len(o.ParetoFront()) != 0 {
		t.Error("Pareto front of failed trials is not empty")
	}
}

// TestFiniteSpaceExhaustion: a space of 6 points is covered without
// repeats; then the best point is measured again; with everything pending,
// Suggest reports exhaustion.
func TestFiniteSpaceExhaustion(t *testing.T) {
	dims := []tunables.Dim{
		{Name: "a", Tunable: "a", Kind: tunables.DimNumeric, Levels: 3},
		{Name: "c", Tunable: "c", Kind: tunables.DimCategorical, Choices: 2},
	}
	f := func(p tunables.Point) float64 { return p[0] + p[1] }
	o, err := New(dims, Options{Seed: 1, NRandomInit: 2})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 6 {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if seen[space.Key(pts[0])] {
			t.Fatalf("%v suggested twice before the space was covered", pts[0])
		}
		seen[space.Key(pts[0])] = true
		if err := o.Observe(Observation{X: pts[0], Y: []float64{f(pts[0])}}); err != nil {
			t.Fatal(err)
		}
	}
	pts, err := o.Suggest(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tunables.Point{0, 0}, pts[0]); diff != "" {
		t.Errorf("repeat of the best point expected (-want +got):\n%s", diff)
	}
	pts, err = o.Suggest(10, nil)
	if err != nil || len(pts) != 6 {
		t.Fatalf("Suggest(10) on a 6-point space = %d points, %v; want all 6", len(pts), err)
	}
	if _, err := o.Suggest(1, pts); !errors.Is(err, ErrExhausted) {
		t.Errorf("Suggest with everything pending: error %v, want ErrExhausted", err)
	}
}

func TestMultiObjective(t *testing.T) {
	// Two conflicting objectives: distance to (0.2, 0.2) and to (0.8, 0.8).
	f := func(p tunables.Point) []float64 {
		return []float64{
			(p[0]-0.2)*(p[0]-0.2) + (p[1]-0.2)*(p[1]-0.2),
			(p[0]-0.8)*(p[0]-0.8) + (p[1]-0.8)*(p[1]-0.8),
		}
	}
	o, err := New(unitDims(2), Options{Seed: 4, NumObjectives: 2})
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		pts, err := o.Suggest(3, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			if err := o.Observe(Observation{X: p, Y: f(p)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	front := o.ParetoFront()
	if len(front) < 3 {
		t.Fatalf("Pareto front has %d points, want several", len(front))
	}
	// Every front point is near the segment between the two optima.
	for _, ob := range front {
		if d := math.Abs(ob.X[0] - ob.X[1]); d > 0.3 {
			t.Errorf("front point %v is far from the Pareto set (|x0-x1| = %v)", ob.X, d)
		}
	}
	if err := o.Observe(Observation{X: tunables.Point{0, 0}, Y: []float64{1}}); err == nil {
		t.Error("an observation with one objective value was accepted by a 2-objective optimizer")
	}
}

func TestInitialPointFirst(t *testing.T) {
	init := tunables.Point{0.123, 0.456}
	o, err := New(unitDims(2), Options{Seed: 1, Initial: init})
	if err != nil {
		t.Fatal(err)
	}
	pts, err := o.Suggest(3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(init, pts[0]); diff != "" {
		t.Errorf("first suggestion is not the initial point (-want +got):\n%s", diff)
	}
	// Once data exists (resume), the initial point is not forced again.
	o2, _ := New(unitDims(2), Options{Seed: 1, Initial: init})
	if err := o2.Observe(Observation{X: init, Y: []float64{1}}); err != nil {
		t.Fatal(err)
	}
	pts, _ = o2.Suggest(1, nil)
	if cmp.Equal(init, pts[0]) {
		t.Error("an already observed initial point was suggested again")
	}
}

// TestResumeMatchesUninterrupted: an optimizer rebuilt from the stored
// observations of a run continues as well as the run itself.
func TestResumeMatchesUninterrupted(t *testing.T) {
	o, _ := New(unitDims(2), Options{Seed: 9})
	run(t, o, branin, 15)
	var stored []Observation
	for _, e := range o.hist.Entries() {
		stored = append(stored, Observation{X: e.X, Y: e.Mean()})
	}
	r, _ := New(unitDims(2), Options{Seed: 10})
	if err := r.Observe(stored...); err != nil {
		t.Fatal(err)
	}
	if r.hist.Len() != 15 {
		t.Fatalf("resumed history has %d points", r.hist.Len())
	}
	// The resumed optimizer is past its initial design: its next points
	// come from the model and go on improving.
	cont := run(t, o, branin, 20)
	res := run(t, r, branin, 20)
	if res > 0.45 || cont > 0.45 {
		t.Errorf("best after resume %v, uninterrupted %v; want both <= 0.45", res, cont)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New with no dimensions succeeded")
	}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{NumObjectives: -1}, "objectives"},
		{Options{NRandomInit: -2}, "n_random_init"},
		{Options{MaxTrials: -1}, "max_trials"},
		{Options{Initial: tunables.Point{0.5}}, "initial point"},
	} {
		if _, err := New(unitDims(2), tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) error = %v, want %q", tc.opts, err, tc.want)
		}
	}
	o, _ := New(unitDims(2), Options{})
	if _, err := o.Suggest(-1, nil); err == nil {
		t.Error("Suggest(-1) succeeded")
	}
	if pts, err := o.Suggest(0, nil); err != nil || pts != nil {
		t.Errorf("Suggest(0) = %v, %v", pts, err)
	}
	if _, err := o.Suggest(1, []tunables.Point{{0.5}}); err == nil || !strings.Contains(err.Error(), "pending point 0") {
		t.Errorf("Suggest with a malformed pending point: %v", err)
	}
	if err := o.Observe(Observation{X: tunables.Point{0.5, math.NaN()}, Y: []float64{1}}); err == nil {
		t.Error("Observe with a NaN coordinate succeeded")
	}
	if err := o.Observe(Observation{X: tunables.Point{0.5, 0.5}, Y: []float64{math.NaN()}}); err == nil {
		t.Error("Observe with a NaN value succeeded")
	}
}
