package localsearch

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/optimizers/internal/space"
	"github.com/benchtune/bench/tunables"
)

func unitDims(d int) []tunables.Dim {
	dims := make([]tunables.Dim, d)
	for i := range dims {
		dims[i] = tunables.Dim{Name: fmt.Sprintf("x%d", i), Tunable: fmt.Sprintf("x%d", i), Kind: tunables.DimNumeric}
	}
	return dims
}

func sphere(p tunables.Point) float64 {
	s := 0.0
	for i, v := range p {
		d := v - 0.2 - 0.1*float64(i)
		s += d * d
	}
	return s
}

func mixedDims() []tunables.Dim {
	return []tunables.Dim{
		{Name: "x", Tunable: "x", Kind: tunables.DimNumeric},
		{Name: "n", Tunable: "n", Kind: tunables.DimNumeric, Levels: 21},
		{Name: "c", Tunable: "c", Kind: tunables.DimCategorical, Choices: 4},
		{Name: "s!special", Tunable: "s", Kind: tunables.DimCategorical, Choices: 3},
		{Name: "s", Tunable: "s", Kind: tunables.DimNumeric, Levels: 11},
	}
}

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

func run(t *testing.T, o *Optimizer, f func(tunables.Point) float64, n, k int) (best float64, all []Observation) {
	t.Helper()
	best = math.Inf(1)
	for len(all) < n {
		pts, err := o.Suggest(k, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			y := f(p)
			best = min(best, y)
			ob := Observation{X: p, Y: []float64{y}}
			all = append(all, ob)
			if err := o.Observe(ob); err != nil {
				t.Fatal(err)
			}
		}
	}
	return best, all
}

func TestStartsFromInitialAndConverges(t *testing.T) {
	init := tunables.Point{0.9, 0.9, 0.9}
	o, err := New(unitDims(3), Options{Seed: 1, Initial: init})
	if err != nil {
		t.Fatal(err)
	}
	pts, err := o.Suggest(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(init, pts[0]); diff != "" {
		t.Fatalf("first suggestion is not the initial point (-want +got):\n%s", diff)
	}
	if err := o.Observe(Observation{X: pts[0], Y: []float64{sphere(pts[0])}}); err != nil {
		t.Fatal(err)
	}
	if best, _ := run(t, o, sphere, 150, 1); best > 1e-3 {
		t.Errorf("best after 150 evaluations of a quadratic = %v, want < 1e-3", best)
	}
}

func TestOppositeMoveAfterFailure(t *testing.T) {
	o, err := New(unitDims(2), Options{Seed: 3, Initial: tunables.Point{0.5, 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	center := tunables.Point{0.5, 0.5}
	if err := o.Observe(Observation{X: center, Y: []float64{0}}); err != nil {
		t.Fatal(err)
	}
	pts, err := o.Suggest(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Worse than the incumbent: the next proposal is the mirror image.
	if err := o.Observe(Observation{X: pts[0], Y: []float64{1}}); err != nil {
		t.Fatal(err)
	}
	next, err := o.Suggest(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := tunables.Point{1 - pts[0][0], 1 - pts[0][1]}
	if math.Abs(next[0][0]-want[0]) > 1e-12 || math.Abs(next[0][1]-want[1]) > 1e-12 {
		t.Errorf("after a failed move to %v the next proposal is %v, want the opposite %v", pts[0], next[0], want)
	}
}

func TestStepAdaptsAndRestarts(t *testing.T) {
	o, err := New(unitDims(2), Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	step0 := o.step
	// Strictly improving values grow the step.
	for i := range 3 {
		pts, _ := o.Suggest(1, nil)
		if err := o.Observe(Observation{X: pts[0], Y: []float64{-float64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if o.step <= step0 {
		t.Errorf("step %v did not grow from %v after improvements", o.step, step0)
	}
	// No improvement ever again: the step shrinks until the search restarts.
	shrunk := false
	for range 400 {
		before := o.step
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Observe(Observation{X: pts[0], Y: []float64{10}}); err != nil {
			t.Fatal(err)
		}
		if o.step < before {
			shrunk = true
		}
		if o.epoch > 0 {
			break
		}
	}
	if !shrunk || o.epoch == 0 {
		t.Fatalf("shrunk=%v epoch=%d: the step should shrink and the search restart", shrunk, o.epoch)
	}
	if o.step != step0 || o.centerY != nil {
		t.Errorf("after a restart: step %v (want %v), center value %v (want unknown)", o.step, step0, o.centerY)
	}
	// The restart point is proposed next.
	pts, _ := o.Suggest(1, nil)
	if diff := cmp.Diff(o.center, pts[0]); diff != "" {
		t.Errorf("restart center not proposed (-center +got):\n%s", diff)
	}
}

func TestParallelSuggestions(t *testing.T) {
	dims := []tunables.Dim{
		{Name: "a", Tunable: "a", Kind: tunables.DimNumeric, Levels: 9},
		{Name: "b", Tunable: "b", Kind: tunables.DimNumeric, Levels: 9},
		{Name: "c", Tunable: "c", Kind: tunables.DimCategorical, Choices: 3},
	}
	f := func(p tunables.Point) float64 { return (p[0]-0.5)*(p[0]-0.5) + (p[1]-0.25)*(p[1]-0.25) + p[2]/10 }
	o, err := New(dims, Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	observed := map[string]bool{}
	var pending []tunables.Point
	for round := range 15 {
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
			if keys[k] || observed[k] {
				t.Fatalf("round %d: %v is pending, observed or suggested twice", round, p)
			}
			keys[k] = true
		}
		pending = append(pending, pts...)
		for _, p := range pending[:3] {
			observed[space.Key(p)] = true
			if err := o.Observe(Observation{X: p, Y: []float64{f(p)}}); err != nil {
				t.Fatal(err)
			}
		}
		pending = pending[3:]
	}
	b, _ := o.Best()
	if b.Y[0] > 0.01 {
		t.Errorf("best after 45 evaluations = %v at %v", b.Y, b.X)
	}
}

func TestDeterministicPerSeed(t *testing.T) {
	trace := func(seed int64) []Observation {
		o, err := New(mixedDims(), Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		_, all := run(t, o, mixedF, 30, 3)
		return all
	}
	if diff := cmp.Diff(trace(4), trace(4)); diff != "" {
		t.Errorf("same seed, different runs:\n%s", diff)
	}
	if cmp.Equal(trace(4), trace(5)) {
		t.Error("different seeds gave identical runs")
	}
}

func TestMixedSpace(t *testing.T) {
	sp, _ := space.New(mixedDims())
	o, err := New(mixedDims(), Options{Seed: 6, Initial: tunables.Point{0.9, 0.1, 1, 2, 0}})
	if err != nil {
		t.Fatal(err)
	}
	_, all := run(t, o, mixedF, 200, 1)
	seen := map[string]bool{}
	for _, ob := range all {
		if diff := cmp.Diff(sp.Snap(ob.X), ob.X); diff != "" {
			t.Fatalf("suggestion not canonical:\n%s", diff)
		}
		if seen[space.Key(ob.X)] {
			t.Fatalf("%v suggested twice", ob.X)
		}
		seen[space.Key(ob.X)] = true
	}
	b, _ := o.Best()
	if b.Y[0] > 0.1 || b.X[2] != 2 {
		t.Errorf("best after 200 evaluations = %v at %v, want < 0.1 with c=2", b.Y, b.X)
	}
}

func TestFiniteSpaceExhaustion(t *testing.T) {
	dims := []tunables.Dim{
		{Name: "a", Tunable: "a", Kind: tunables.DimNumeric, Levels: 2},
		{Name: "c", Tunable: "c", Kind: tunables.DimCategorical, Choices: 2},
	}
	f := func(p tunables.Point) float64 { return p[0] + 2*p[1] }
	o, err := New(dims, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 4 {
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
		t.Errorf("exhausted space: want the best point again (-want +got):\n%s", diff)
	}
	all, err := o.Suggest(4, nil)
	if err != nil || len(all) != 4 {
		t.Fatalf("Suggest(4) = %v, %v", all, err)
	}
	if _, err := o.Suggest(1, all); !errors.Is(err, ErrExhausted) {
		t.Errorf("everything pending: error %v, want ErrExhausted", err)
	}
}

// TestResumeReplaysState: bulk-loading a run's observations reproduces
// the search state (incumbent and step) of the uninterrupted run.
func TestResumeReplaysState(t *testing.T) {
	a, _ := New(unitDims(3), Options{Seed: 8, Initial: tunables.Point{0.8, 0.8, 0.8}})
	_, all := run(t, a, sphere, 40, 1)
	if a.epoch != 0 {
		t.Skip("the run restarted; the replay comparison needs a single local search")
	}
	b, _ := New(unitDims(3), Options{Seed: 99})
	if err := b.Observe(all...); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a.center, b.center); diff != "" {
		t.Errorf("incumbent differs after replay:\n%s", diff)
	}
	if a.step != b.step || a.fails != b.fails {
		t.Errorf("step/fails after replay = %v/%d, uninterrupted %v/%d", b.step, b.fails, a.step, a.fails)
	}
}

func TestFailuresNeverBecomeIncumbent(t *testing.T) {
	f := func(p tunables.Point) float64 {
		if p[0] > 0.5 {
			return math.Inf(1)
		}
		return sphere(p)
	}
	o, _ := New(unitDims(2), Options{Seed: 1, Initial: tunables.Point{0.9, 0.9}})
	best, _ := run(t, o, f, 100, 1)
	if math.IsInf(best, 1) || best > 1e-3 {
		t.Errorf("best = %v", best)
	}
	if o.center[0] > 0.5 && o.centerY != nil && !math.IsInf(o.centerY[0], 1) {
		t.Errorf("incumbent %v in the failing region with value %v", o.center, o.centerY)
	}
}

func TestMultiObjective(t *testing.T) {
	f := func(p tunables.Point) []float64 {
		return []float64{(p[0] - 0.2) * (p[0] - 0.2), (p[0] - 0.8) * (p[0] - 0.8)}
	}
	o, err := New(unitDims(2), Options{Seed: 2, NumObjectives: 2})
	if err != nil {
		t.Fatal(err)
	}
	for range 120 {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Observe(Observation{X: pts[0], Y: f(pts[0])}); err != nil {
			t.Fatal(err)
		}
	}
	front := o.ParetoFront()
	if len(front) < 3 {
		t.Fatalf("Pareto front has %d points", len(front))
	}
	lo, hi := 1.0, 0.0
	for _, ob := range front {
		if ob.X[0] < 0.15 || ob.X[0] > 0.85 {
			t.Errorf("front point %v far from the Pareto set x0 in [0.2, 0.8]", ob.X)
		}
		lo, hi = min(lo, ob.X[0]), max(hi, ob.X[0])
	}
	// Restarts with other weights spread the front.
	if hi-lo < 0.2 {
		t.Errorf("front spans x0 in [%v, %v] only", lo, hi)
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
	if _, err := o.Suggest(1, []tunables.Point{{0.5}}); err == nil {
		t.Error("Suggest with a malformed pending point succeeded")
	}
	if err := o.Observe(Observation{X: tunables.Point{0.5, 0.5}, Y: []float64{math.Inf(-1)}}); err == nil {
		t.Error("Observe with -Inf succeeded")
	}
}
