package main

import (
	"slices"
	"testing"

	"github.com/benchtune/bench/schedulers/hyperband"
)

// TestMFSplitPromo: -waitK, -firstK and -upN are cut from a method name
// wherever they are; bad values, repeats and -waitK with -firstK are
// refused.
func TestMFSplitPromo(t *testing.T) {
	for _, tc := range []struct {
		in, base string
		want     mfPromoOpt
		ok       bool
	}{
		{"asha-gp-fid-min3-eta9", "asha-gp-fid-min3-eta9", mfPromoOpt{}, true},
		{"asha-gp-fid-min3-eta9-wait2", "asha-gp-fid-min3-eta9", mfPromoOpt{wait: 2}, true},
		{"asha-gp-fid-min3-first3-lcerank27-eta9", "asha-gp-fid-min3-lcerank27-eta9", mfPromoOpt{first: 3}, true},
		{"hb-gp-fid-min3-first2-up3-eta9", "hb-gp-fid-min3-eta9", mfPromoOpt{first: 2, up: 3}, true},
		{"asha-gp-fid-min3-wait0", "", mfPromoOpt{}, false},
		{"asha-gp-fid-min3-up1", "", mfPromoOpt{}, false},
		{"asha-gp-fid-min3-upx", "", mfPromoOpt{}, false},
		{"asha-gp-fid-min3-wait2-wait3", "", mfPromoOpt{}, false},
		{"asha-gp-fid-min3-wait2-first3", "", mfPromoOpt{}, false},
	} {
		base, got, ok := mfSplitPromo(tc.in)
		if ok != tc.ok || (ok && (got != tc.want || base != tc.base)) {
			t.Errorf("%s: %q %+v %v, want %q %+v %v", tc.in, base, got, ok, tc.base, tc.want, tc.ok)
		}
	}
	if _, err := mfRun(curveProblem(braninProblem(), 9, 8), "asha-gp-fid-wait0", false, 1, 50); err == nil {
		t.Error("-wait0: no error")
	}
}

// TestMFPromoSameAsPlanner: with -wait1 alone (ASHA's own rule) the
// promoter makes exactly the planner's decisions, with one bracket or
// all of them and with a model ranker: the same runs in the same order.
func TestMFPromoSameAsPlanner(t *testing.T) {
	p := lcnetProblem(4)
	for _, m := range []string{"asha-gp-fid-min3-eta9", "hb-gp-fid-model", "asha-gp-fid-lcerank9"} {
		a, err := mfRun(p, m, true, 1, 600)
		if err != nil {
			t.Fatal(err)
		}
		b, err := mfRun(p, m+"-wait1", true, 1, 600)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.jobs) < 30 || !slices.EqualFunc(a.jobs, b.jobs, func(x, y mfJob) bool {
			return x.key == y.key && x.rung == y.rung && x.start == y.start && x.end == y.end && x.y == y.y
		}) {
			t.Errorf("%s: %d runs, with -wait1 %d runs, not the same", m, len(a.jobs), len(b.jobs))
		}
	}
}

// TestMFPromoRule: promotions happen exactly when the rule says. A
// planner with rungs 3, 27, 81 (η 9) is fed results by hand: with -first2
// the first rung promotes nothing at 1..17 results and its best two (by
// observed value) at 18; with -up3 rung 27 promotes its best once it holds
// 3 results, with -wait2 once it holds 18, with -first3 once it holds 9
// (ASHA's rule there).
func TestMFPromoRule(t *testing.T) {
	newPl := func() *hyperband.Planner[int] {
		pl, err := hyperband.New[int](hyperband.Config{Min: 3, Max: 81, Eta: 9, Brackets: 1, Integer: true})
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	// add starts configurations from..to-1 at rung 0 and reports value
	// 100-k for k (the later, the better).
	add := func(pl *hyperband.Planner[int], from, to int) {
		for k := from; k < to; k++ {
			if _, err := pl.Add(k, 0); err != nil {
				t.Fatal(err)
			}
			if err := pl.Report(k, 0, float64(100-k)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// First rung: -first2 waits for 18 results, then promotes the best two.
	pl := newPl()
	m := &mfPromoter{pl: pl, opt: mfPromoOpt{first: 2}, eta: 9}
	for n := 1; n < 18; n++ {
		add(pl, n-1, n)
		if j, ok, err := m.promotion(n); ok || err != nil {
			t.Fatalf("-first2 promoted %+v (err %v) with %d results at rung 0", j, err, n)
		}
	}
	add(pl, 17, 18)
	for _, want := range []int{17, 16} {
		j, ok, err := m.promotion(18)
		if !ok || err != nil || j.Key != want || j.Rung != 1 || j.Fidelity != 27 || !j.Promoted {
			t.Fatalf("-first2 at 18 results: %+v %v %v, want key %d to rung 1 (27)", j, ok, err, want)
		}
		if _, rung, running, _, _ := pl.State(want); rung != 1 || !running {
			t.Fatalf("key %d not recorded as running at rung 1 (rung %d running %v)", want, rung, running)
		}
	}
	if j, ok, _ := m.promotion(18); ok {
		t.Fatalf("-first2 promoted a third configuration %+v from 18 results", j)
	}

	// Second rung.
	for _, tc := range []struct {
		opt  mfPromoOpt
		need int
	}{{mfPromoOpt{up: 3}, 3}, {mfPromoOpt{wait: 2}, 18}, {mfPromoOpt{first: 3}, 9}} {
		pl := newPl()
		m := &mfPromoter{pl: pl, opt: tc.opt, eta: 9}
		add(pl, 0, 200)
		// Promote by hand (Resume) configurations 0..need-1 and report
		// their rung-1 results one by one (the promotions from rung 0
		// taken meanwhile stay running: no result at rung 1).
		for k := range tc.need {
			if err := pl.Resume(k, 0, 1); err != nil {
				t.Fatal(err)
			}
		}
		for k := range tc.need {
			if err := pl.Report(k, 1, float64(50-k)); err != nil {
				t.Fatal(err)
			}
			j, ok, err := m.promotion(200)
			if err != nil {
				t.Fatal(err)
			}
			if k < tc.need-1 && ok && j.Rung == 2 {
				t.Fatalf("%+v: promoted to full fidelity with %d results at rung 1", tc.opt, k+1)
			}
			if k == tc.need-1 && (!ok || j.Rung != 2 || j.Key != k || j.Fidelity != 81) {
				t.Fatalf("%+v: with %d results at rung 1 got %+v %v, want key %d to rung 2", tc.opt, k+1, j, ok, k)
			}
			if ok && j.Rung == 1 && j.Key < 178 {
				// from rung 0: one of its top ⌊200/9⌋ (keys 199..178)
				t.Fatalf("%+v: key %d promoted from rung 0", tc.opt, j.Key)
			}
		}
	}
}
