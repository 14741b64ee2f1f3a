package hyperband

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// table is a fake model: a prediction per configuration and rung.
type table map[int]map[int]Prediction

func (tb table) predict(keys []int, rungs []int) ([]Prediction, bool) {
	out := make([]Prediction, len(keys))
	for i, k := range keys {
		p, ok := tb[k][rungs[i]]
		if !ok {
			return nil, false
		}
		out[i] = p
	}
	return out, true
}

// dynPlanner is a dynamic planner over rungs 1, 3, 9, 27 with configs
// 1..n started and reported (score k/10 at rung 0).
func dynPlanner(t *testing.T, n int, d Dynamic[int]) *Planner[int] {
	t.Helper()
	p, err := New[int](Config{Min: 1, Max: 27, Eta: 3, Brackets: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetDynamic(d); err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= n; k++ {
		if _, err := p.Add(k, 0); err != nil {
			t.Fatal(err)
		}
		if err := p.Report(k, 0, float64(k)/10); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestDynamicContinuesFavoured: of three paused configurations, Next
// continues the one whose expected improvement at its next rung is the
// highest (config 3: the model expects it to beat the incumbent there,
// although its observed value is the worst), by one rung, and never a
// running one; a second call picks the next best.
func TestDynamicContinuesFavoured(t *testing.T) {
	tb := table{
		1: {1: {Mean: 0.5, SD: 0.05, Incumbent: 0.4}},
		2: {1: {Mean: 0.45, SD: 0.05, Incumbent: 0.4}},
		3: {1: {Mean: 0.2, SD: 0.05, Incumbent: 0.4}},
	}
	p := dynPlanner(t, 3, Dynamic[int]{Predict: tb.predict})
	if p.Promotable() {
		t.Error("Promotable in dynamic mode")
	}
	if _, ok := p.Promotion(); ok {
		t.Error("Promotion in dynamic mode")
	}
	fresh := Prediction{Mean: 0.5, SD: 0.05, Incumbent: 0.1} // a new configuration: no chance at rung 0
	d, err := p.Next(fresh, true)
	if err != nil {
		t.Fatal(err)
	}
	want := Job[int]{Key: 3, Bracket: 0, Rung: 1, Fidelity: 3, Promoted: true}
	if !d.Continue || d.Job != want {
		t.Fatalf("Next: %+v, want a continuation %+v", d, want)
	}
	if math.Abs(d.Score-0.2) > 1e-3 || d.Fresh > 1e-6 {
		t.Errorf("scores %v (fresh %v), want EI about 0.2 against about 0", d.Score, d.Fresh)
	}
	if !cmp.Equal(p.Paused(), []int{1, 2}) {
		t.Errorf("paused %v after continuing 3, want [1 2]", p.Paused())
	}
	d, _ = p.Next(fresh, true)
	if !d.Continue || d.Job.Key != 2 {
		t.Errorf("second Next: %+v, want config 2 continued", d)
	}
	// 3's run at rung 1 ends: it may be continued again, to rung 2.
	if err := p.Report(3, 1, 0.3); err != nil {
		t.Fatal(err)
	}
	tb[3][2] = Prediction{Mean: 0.1, SD: 0.05, Incumbent: 0.3}
	d, _ = p.Next(fresh, true)
	if !d.Continue || d.Job.Key != 3 || d.Job.Rung != 2 || d.Job.Fidelity != 9 {
		t.Errorf("after 3's rung-1 result: %+v, want 3 continued to rung 2 (fidelity 9)", d)
	}
}

// TestDynamicStartsNew: Next starts a new configuration when no paused one
// is promising (expected improvement about 0 at its next rung) and the new
// one is, when nothing is paused, when a paused configuration's last run
// failed or it is at the last rung, and while the model cannot predict;
// a tie goes to the new configuration. Without a new configuration any
// paused one is continued.
func TestDynamicStartsNew(t *testing.T) {
	hopeless := Prediction{Mean: 0.9, SD: 0.01, Incumbent: 0.1}
	tb := table{1: {1: hopeless}, 2: {1: hopeless}}
	p := dynPlanner(t, 2, Dynamic[int]{Predict: tb.predict})
	fresh := Prediction{Mean: 0.05, SD: 0.05, Incumbent: 0.1}
	if d, _ := p.Next(fresh, true); d.Continue {
		t.Errorf("continued %+v although no paused configuration is promising", d.Job)
	}
	if d, _ := p.Next(hopeless, true); d.Continue {
		t.Errorf("continued %+v on a tie (all about 0)", d.Job)
	}
	if d, _ := p.Next(Prediction{}, false); !d.Continue || d.Job.Key != 1 {
		t.Errorf("without a new configuration: %+v, want config 1 (the lower key on a tie) continued", d)
	}

	// No model yet: start new ones.
	none := func([]int, []int) ([]Prediction, bool) { return nil, false }
	p = dynPlanner(t, 2, Dynamic[int]{Predict: none})
	if d, _ := p.Next(fresh, true); d.Continue {
		t.Errorf("continued %+v without a model", d.Job)
	}
	if d, _ := p.Next(Prediction{}, false); !d.Continue || d.Job.Key != 1 {
		t.Errorf("without a model nor a new configuration: %+v, want config 1 (the best observed) continued", d)
	}

	// Failed runs and configurations at the last rung are not paused.
	p = dynPlanner(t, 0, Dynamic[int]{Predict: tb.predict})
	_, _ = p.Add(1, 0)
	_ = p.Report(1, 0, math.Inf(1))
	_, _ = p.Add(2, 0)
	if got := p.Paused(); len(got) != 0 {
		t.Errorf("paused %v: a failed and a running configuration", got)
	}
	if d, _ := p.Next(Prediction{}, false); d.Continue {
		t.Errorf("continued %+v with nothing paused", d.Job)
	}
	_ = p.Report(2, 0, 0.2)
	for r := 1; r <= 3; r++ {
		tb[2][r] = Prediction{Mean: 0, SD: 0.1, Incumbent: 0.5}
		d, _ := p.Next(Prediction{}, false)
		if !d.Continue || d.Job.Rung != r {
			t.Fatalf("step %d: %+v", r, d)
		}
		_ = p.Report(2, r, 0.1)
	}
	if got := p.Paused(); len(got) != 0 {
		t.Errorf("paused %v: config 2 is at the last rung", got)
	}
}

// TestDynamicPerCost: with PerCost the expected improvement is divided by
// the fidelity the run costs: continuing from 9 to 27 costs 18 (the
// difference, promotions continued) or 27 (re-run), a new configuration 1;
// the same predictions then favour the new configuration.
func TestDynamicPerCost(t *testing.T) {
	good := Prediction{Mean: 0, SD: 0.01, Incumbent: 1}    // EI 1
	fresh := Prediction{Mean: 0.9, SD: 0.01, Incumbent: 1} // EI about 0.1
	for _, tc := range []struct {
		perCost, continued bool
		want               bool
		score              float64
	}{
		{false, false, true, 1},
		{true, true, false, 0.1},
		{true, false, false, 0.1},
	} {
		tb := table{1: {3: good}}
		p := dynPlanner(t, 0, Dynamic[int]{Predict: tb.predict, PerCost: tc.perCost, Continued: tc.continued})
		_, _ = p.Add(1, 0)
		for r := 0; r < 3; r++ {
			if r > 0 {
				if err := p.Resume(1, 0, r); err != nil {
					t.Fatal(err)
				}
			}
			_ = p.Report(1, r, 0.5)
		}
		d, _ := p.Next(fresh, true)
		if d.Continue != tc.want || math.Abs(d.Score-tc.score) > 1e-3 {
			t.Errorf("per cost %v, continued %v: %+v, want continue %v with score %v", tc.perCost, tc.continued, d, tc.want, tc.score)
		}
		cost := 27.0
		if tc.continued {
			cost = 18
		}
		if got := p.Acquisition(good, cost); tc.perCost && math.Abs(got-1/cost) > 1e-6 {
			t.Errorf("Acquisition per cost %v, want %v", got, 1/cost)
		}
	}
}

func TestDynamicErrors(t *testing.T) {
	p, _ := New[int](Config{Min: 1, Max: 27, Eta: 3})
	pred := func([]int, []int) ([]Prediction, bool) { return nil, false }
	if err := p.SetDynamic(Dynamic[int]{Predict: pred}); !errors.Is(err, ErrDynamicBrackets) {
		t.Errorf("4 brackets: %v", err)
	}
	p, _ = New[int](Config{Min: 1, Max: 27, Eta: 3, Brackets: 1})
	if err := p.SetDynamic(Dynamic[int]{}); err == nil || !strings.Contains(err.Error(), "predictor") {
		t.Errorf("no predictor: %v", err)
	}
	if _, err := p.Next(Prediction{}, false); err == nil {
		t.Error("Next outside dynamic mode")
	}
	if p.IsDynamic() {
		t.Error("dynamic after failed SetDynamic")
	}
}

// TestDynamicResumeMatches: a dynamic planner rebuilt from the stored runs
// (Resume in trial order, Report for the finished ones) makes the same
// decisions as the one that never stopped, given the same model (here a
// fake whose predictions depend on the reported scores).
func TestDynamicResumeMatches(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 9))
		model := func(p **Planner[int]) Predictor[int] {
			return func(keys []int, rungs []int) ([]Prediction, bool) {
				out := make([]Prediction, len(keys))
				for i, k := range keys {
					_, r, _, sc, _ := (*p).State(k)
					out[i] = Prediction{Mean: sc[r] - 0.05*float64(rungs[i]) + 0.01*float64(k%7), SD: 0.05 + 0.01*float64(k%3), Incumbent: 0.3}
				}
				return out, true
			}
		}
		c := Config{Min: 1, Max: 27, Eta: 3, Brackets: 1}
		var a, b *Planner[int]
		a, _ = New[int](c)
		_ = a.SetDynamic(Dynamic[int]{Predict: model(&a), PerCost: seed%2 == 1, Continued: true})
		next := 1
		fresh := func() Prediction {
			return Prediction{Mean: 0.2 + 0.3*rng.Float64(), SD: 0.1, Incumbent: 0.3}
		}
		step := func(p *Planner[int], f Prediction) (Job[int], error) {
			d, err := p.Next(f, true)
			if err != nil || d.Continue {
				return d.Job, err
			}
			j, err := p.Add(next, 0)
			next++
			return j, err
		}
		runs := playRandom(t, rng, a, 10+rng.IntN(80), true, func() (Job[int], error) { return step(a, fresh()) })
		b, _ = New[int](c)
		_ = b.SetDynamic(Dynamic[int]{Predict: model(&b), PerCost: seed%2 == 1, Continued: true})
		resumeFrom(t, b, runs) // one bracket: every run's b is 0
		if a.Running() != b.Running() || !cmp.Equal(a.Paused(), b.Paused()) {
			t.Fatalf("seed %d: running %d/%d, paused %v/%v", seed, a.Running(), b.Running(), a.Paused(), b.Paused())
		}
		for i := 0; i < 30; i++ {
			f := fresh()
			da, erra := a.Next(f, true)
			db, errb := b.Next(f, true)
			if erra != nil || errb != nil || da != db {
				t.Fatalf("seed %d, decision %d after resume: %+v (%v), want %+v (%v)", seed, i, db, errb, da, erra)
			}
			j := da.Job
			if !da.Continue {
				_, _ = a.Add(next, 0)
				_, _ = b.Add(next, 0)
				j = Job[int]{Key: next}
				next++
			}
			v := rng.Float64()
			_ = a.Report(j.Key, j.Rung, v)
			_ = b.Report(j.Key, j.Rung, v)
		}
	}
}

// TestDynamicFinish: once no new configuration will come, Finish continues
// the configuration with the best predicted value at max, a rung at a
// time, while it is below max; it skips running and failed ones, stops
// when the favourite is at max, and does nothing without a model or
// outside dynamic mode.
func TestDynamicFinish(t *testing.T) {
	at := func(mean float64) map[int]Prediction { return map[int]Prediction{3: {Mean: mean, SD: 0.1}} }
	tb := table{1: at(0.5), 2: at(0.2), 3: at(0.1), 4: at(0.3)}
	p := dynPlanner(t, 4, Dynamic[int]{Predict: tb.predict})
	_ = p.Report(3, 0, math.Inf(1)) // 3 failed: never continued
	job := func(k, r int) Job[int] { return Job[int]{Key: k, Rung: r, Fidelity: p.Fidelity(r), Promoted: true} }
	for i, want := range []Job[int]{job(2, 1), job(4, 1)} { // 2 runs: the next favourite goes on
		if j, ok := p.Finish(); !ok || j != want {
			t.Fatalf("Finish %d: %+v %v, want %+v", i, j, ok, want)
		}
	}
	_ = p.Report(2, 1, 0.2)
	_ = p.Report(4, 1, 0.3)
	for r := 2; r <= 3; r++ {
		if j, ok := p.Finish(); !ok || j != job(2, r) {
			t.Fatalf("Finish to rung %d: %+v %v", r, j, ok)
		}
		_ = p.Report(2, r, 0.2)
	}
	if p.Finishing() {
		t.Error("finishing with the favourite at max")
	}
	if j, ok := p.Finish(); ok {
		t.Errorf("favourite at max, yet %+v continued", j)
	}
	none := func([]int, []int) ([]Prediction, bool) { return nil, false }
	if p := dynPlanner(t, 2, Dynamic[int]{Predict: none}); p.Finishing() {
		t.Error("finishing without a model")
	}
	q, _ := New[int](Config{Min: 1, Max: 27, Eta: 3, Brackets: 1})
	if _, ok := q.Finish(); ok {
		t.Error("Finish outside dynamic mode")
	}
}
