package schedulers

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

func TestDecodeFidelityPlanner(t *testing.T) {
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{"param": "d", "min": int64(1), "max": int64(27)}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		in       map[string]any
		planner  string
		brackets int
		err      string
	}{
		{in: base(nil), planner: "", brackets: 0},
		{in: base(map[string]any{"planner": "hyperband", "brackets": int64(2)}), planner: "", brackets: 2},
		{in: base(map[string]any{"planner": "dyhpo"}), planner: PlannerDyHPO, brackets: 1},
		{in: base(map[string]any{"planner": "dyhpo", "brackets": int64(1), "promotion": "continue"}), planner: PlannerDyHPO, brackets: 1},
		{in: base(map[string]any{"planner": "freeze-thaw"}), err: `/config/fidelity/planner: fidelity.planner must be "hyperband" (Hyperband brackets, promotions of a rung's top 1/eta) or "dyhpo"`},
		{in: base(map[string]any{"planner": int64(1)}), err: `fidelity.planner must be "hyperband"`},
		{in: base(map[string]any{"planner": "dyhpo", "brackets": int64(2)}), err: `/config/fidelity/brackets: fidelity.brackets must be 1 (or absent) with planner "dyhpo"`},
		{in: base(map[string]any{"planner": "dyhpo", "promote_by": "model"}), err: `/config/fidelity/promote_by: fidelity.promote_by does not apply with planner "dyhpo"`},
		{in: base(map[string]any{"planner": "dyhpo", "start": "model"}), err: `/config/fidelity/start: fidelity.start does not apply with planner "dyhpo"`},
		{in: base(map[string]any{"planer": "dyhpo"}), err: `fidelity: unknown key "planer" (did you mean "planner"?)`},
	} {
		got, err := DecodeConfig("", map[string]any{"fidelity": tc.in}, nil, source.Ref{}, "e", false)
		if !wantDecoded(t, tc.in, err, tc.err) {
			continue
		}
		if got.Fidelity.Planner != tc.planner || got.Fidelity.Brackets != tc.brackets {
			t.Errorf("%v: planner %q brackets %d, want %q %d", tc.in, got.Fidelity.Planner, got.Fidelity.Brackets, tc.planner, tc.brackets)
		}
	}
	// As a global text too (--fidelity '{...}').
	got, err := DecodeConfig("", nil, map[string]any{"fidelity": `{"param": "n", "min": 1, "max": 9, "planner": "dyhpo"}`}, source.Ref{}, "e", false)
	if err != nil || got.Fidelity.Planner != PlannerDyHPO {
		t.Errorf("global: %+v %v", got.Fidelity, err)
	}
}

// dynOpt is a FidelityAtPredictor (over random search) whose model expects
// larger x to be better at every fidelity (mean -x, sd 1, incumbent -10):
// a paused configuration is continued when its x is larger than the new
// suggestion's.
type dynOpt struct {
	*predictOpt
	mu      sync.Mutex
	atCalls int
}

func newDynOpt(t *testing.T, n int64) *dynOpt { return &dynOpt{predictOpt: newPredictOpt(t, n)} }

func (o *dynOpt) PredictAt(tuns []*tunables.Groups, fids []float64) ([]optimizers.FullPrediction, []float64, bool, error) {
	o.mu.Lock()
	o.atCalls++
	o.mu.Unlock()
	out := make([]optimizers.FullPrediction, len(tuns))
	inc := make([]float64, len(tuns))
	for i, t := range tuns {
		out[i] = optimizers.FullPrediction{Mean: -float64(t.Get("x").Int()), SD: 1}
		inc[i] = -10
	}
	return out, inc, true, nil
}

// checkDynDecisions checks a one-runner run's continuations: each was, when
// it was made, of a paused configuration with the largest x (the fake
// model's favourite); it returns how many runs were continuations.
func checkDynDecisions(t *testing.T, trs []storage.Trial, top int) (continued int) {
	t.Helper()
	type cfg struct {
		x      int
		rung   int
		paused bool
	}
	cfgs := map[string]*cfg{}
	for _, tr := range trs {
		rung, _ := strconv.Atoi(tr.Metadata[trial.FidelityRungKey])
		x, _ := strconv.Atoi(tr.Params["x"])
		key := cfgKey(tr.Params, "budget")
		if rung > 0 {
			continued++
			for k, c := range cfgs {
				if c.paused && c.x > x {
					t.Errorf("trial %d: x=%d continued to rung %d while %s (x=%d) was paused", tr.ID, x, rung, k, c.x)
				}
			}
		}
		c := cfgs[key]
		if c == nil {
			c = &cfg{x: x}
			cfgs[key] = c
		}
		c.rung = rung
		c.paused = tr.Status == trial.SUCCEEDED && rung < top
	}
	return continued
}

// checkFavouriteAtMax checks that the fake model's favourite (the largest
// x) ended at max (rung 2): once the optimizer has nothing more to
// suggest, the scheduler continues it there.
func checkFavouriteAtMax(t *testing.T, trs []storage.Trial, rungs map[string][]int) {
	t.Helper()
	bestX, atMax := -1, false
	for _, tr := range trs {
		if x, _ := strconv.Atoi(tr.Params["x"]); x > bestX {
			bestX = x
		}
	}
	for _, tr := range trs {
		x, _ := strconv.Atoi(tr.Params["x"])
		if rs := rungs[cfgKey(tr.Params, "budget")]; x == bestX && rs[len(rs)-1] == 2 {
			atMax = true
		}
	}
	if !atMax {
		t.Errorf("the model's favourite (x=%d) did not end at max: %v", bestX, rungs)
	}
}

// TestFidelityDyHPO: with planner "dyhpo" and one runner, each free runner
// gets the paused configuration the model favours when it beats the new
// suggestion (which is withdrawn), else the suggestion at min; once the
// optimizer has nothing more to suggest the paused configurations are
// continued to max; the plan is sound (each configuration once per
// fidelity, one rung at a time), the optimizer gets every outcome, and
// the best trial is a full-fidelity one.
func TestFidelityDyHPO(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	opt := newDynOpt(t, 14)
	fs := newFid(t, st, map[string]any{"param": "budget", "min": int64(1), "max": int64(9), "planner": "dyhpo"}, nil, 1, opt, nil)
	if err := fs.s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	trs := trials(t, fs.exp)
	rungs := checkPlan(t, trs, "budget", *fs.runs)
	continued := checkDynDecisions(t, trs, 2)
	starts := len(trs) - continued
	if continued == 0 || starts < 2 {
		t.Errorf("%d continuations and %d starts: want both", continued, starts)
	}
	checkFavouriteAtMax(t, trs, rungs)
	if opt.atCalls == 0 || opt.observedAt != len(trs) {
		t.Errorf("%d predictions; %d outcomes observed of %d trials", opt.atCalls, opt.observedAt, len(trs))
	}
	checkBestFull(t, fs, trs)
}

// TestFidelityDyHPONeedsPredictor: planner "dyhpo" with an optimizer that
// does not predict at every fidelity is refused, pointing at the key.
func TestFidelityDyHPONeedsPredictor(t *testing.T) {
	cfg := decodeSchedDoc(t, `{"class": "bench.schedulers.ParallelScheduler", "config": {
  "fidelity": {"param": "budget", "min": 1, "max": 9, "planner": "dyhpo"}
}}`)
	// RANDOM (no model) and an optimizer that is not FidelityAware.
	for _, opt := range []optimizers.Optimizer{randomOpt(t, 5), &obsOpt{Optimizer: randomOpt(t, 5)}} {
		err := newFidErr(t, cfg, opt)
		if err == nil || !strings.Contains(err.Error(), "sched.jsonc:2:") || !strings.Contains(err.Error(), "/config/fidelity/planner") ||
			!strings.Contains(err.Error(), `fidelity.planner "dyhpo" needs an optimizer whose model learns from every fidelity and predicts at any of them`) {
			t.Errorf("%T: error %v", opt, err)
		}
	}
}

// TestFidelityDyHPOSMAC: end to end with MlosCoreOptimizer (optimizer_type
// SMAC, the GP with a fidelity input) and two runners: every trial
// succeeds, the plan is sound, some configurations were continued past
// min and some stopped there, and the best trial is a full-fidelity one.
func TestFidelityDyHPOSMAC(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	o := smacOpt(t, 20)
	fs := newFid(t, st, map[string]any{"param": "budget", "min": int64(1), "max": int64(9), "planner": "dyhpo", "promotion": "continue",
		"checkpoint_dir": t.TempDir()}, map[string]any{"max_trials": int64(4)}, 2, o, nil)
	if err := fs.s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	trs := trials(t, fs.exp)
	rungs := checkPlan(t, trs, "budget", *fs.runs)
	full, continued := 0, 0
	for _, tr := range trs {
		if tr.Status != trial.SUCCEEDED {
			t.Errorf("trial %d %s %s", tr.ID, tr.Status, tr.FailureReason)
		}
		if r := tr.Metadata[trial.FidelityRungKey]; r != "0" {
			continued++
			if tr.Metadata[trial.ContinueFromKey] == "" {
				t.Errorf("trial %d at rung %s does not say which trial it continues", tr.ID, r)
			}
		}
		if !trial.LowFidelity(tr.Metadata) {
			full++
		}
	}
	if continued == 0 || len(rungs) < 3 {
		t.Errorf("%d configurations, %d continuations", len(rungs), continued)
	}
	if full < 1 || full > 4 {
		t.Errorf("%d full-fidelity trials, want 1..4 (max_trials 4)", full)
	}
	checkBestFull(t, fs, trs)
}

// TestFidelityDyHPOResume: a run with planner "dyhpo" stopped (as by a
// kill) after a few trials, then resumed with a new optimizer given the
// stored results: the plan is rebuilt (no configuration runs twice at a
// fidelity, continuations follow the rungs), the decisions after it are
// still the model's, and the model's favourite ends at max.
func TestFidelityDyHPOResume(t *testing.T) {
	fc := map[string]any{"param": "budget", "min": int64(1), "max": int64(9), "planner": "dyhpo"}
	for _, stopAfter := range []int{3, 6} {
		t.Run(fmt.Sprint("stopped after ", stopAfter), func(t *testing.T) {
			st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fs := newFid(t, st, fc, nil, 1, newDynOpt(t, 8), nil, &cancelAfter{n: stopAfter, cancel: cancel})
			if err := fs.s.Start(ctx); err == nil {
				t.Fatal("the first run was not interrupted")
			}
			before := trials(t, fs.exp)
			opt := newDynOpt(t, 8)
			fs2 := newFid(t, st, fc, nil, 1, opt, nil)
			if err := fs2.s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			all := trials(t, fs2.exp)
			if len(all) <= len(before) {
				t.Fatalf("the resume ran nothing (%d trials before, %d after)", len(before), len(all))
			}
			rungs := checkPlan(t, all, "budget", append(*fs.runs, *fs2.runs...))
			checkDynDecisions(t, all, 2)
			checkFavouriteAtMax(t, all, rungs)
			for _, tr := range all {
				if !tr.Finished() {
					t.Errorf("trial %d left %s", tr.ID, tr.Status)
				}
			}
			if opt.atCalls == 0 {
				t.Error("the resumed run did not ask the model")
			}
		})
	}
}
