package schedulers

import (
	"context"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// predictOpt is a FidelityPredictor (over random search) whose model
// prefers large x, the opposite of fidRunner's scores, which favour x
// near 3: promotions by the model and by the observed values differ.
type predictOpt struct {
	*optimizers.MlosCore // RANDOM: FidelityAware, no model
	calls, observedAt    int
}

func newPredictOpt(t *testing.T, n int64) *predictOpt {
	return &predictOpt{MlosCore: randomOpt(t, n).(*optimizers.MlosCore)}
}

func (o *predictOpt) ObserveAt(id int, tun *tunables.Groups, f float64, st trial.Status, res map[string]any) ([]float64, error) {
	o.observedAt++
	return o.MlosCore.ObserveAt(id, tun, f, st, res)
}

func (o *predictOpt) PredictsFull() bool { return true }
func (o *predictOpt) PredictFull(tuns []*tunables.Groups, withSD bool) ([]optimizers.FullPrediction, float64, bool, error) {
	o.calls++
	out := make([]optimizers.FullPrediction, len(tuns))
	for i, t := range tuns {
		out[i] = optimizers.FullPrediction{Mean: -float64(t.Get("x").Int()), SD: 1}
	}
	return out, -20, true, nil
}

// checkModelPromotions checks that each promotion of a one-runner run was,
// when it was made, in the top 1/3 of its rung by the model's ranking
// (largest x first) among the results the rung had then; it returns how
// many promotions the observed values (x nearest 3 first) would not have
// made.
func checkModelPromotions(t *testing.T, trs []storage.Trial) (notByObserved int) {
	t.Helper()
	type res struct {
		x     int
		score float64
	}
	at := map[int][]res{} // rung -> results so far
	for _, tr := range trs {
		rung, _ := strconv.Atoi(tr.Metadata[trial.FidelityRungKey])
		bracket, _ := strconv.Atoi(tr.Metadata[trial.FidelityBracketKey])
		x, _ := strconv.Atoi(tr.Params["x"])
		if rung > bracket {
			below := at[rung-1]
			keep := len(below) / 3
			byModel := append([]res(nil), below...)
			sort.SliceStable(byModel, func(a, b int) bool { return byModel[a].x > byModel[b].x })
			byObs := append([]res(nil), below...)
			sort.SliceStable(byObs, func(a, b int) bool { return byObs[a].score < byObs[b].score })
			inTop := func(list []res) bool {
				for _, r := range list[:keep] {
					if r.x == x {
						return true
					}
				}
				return false
			}
			if !inTop(byModel) {
				t.Errorf("trial %d: x=%d promoted to rung %d, not in the model's top %d of %v", tr.ID, x, rung, keep, byModel)
			}
			if !inTop(byObs) {
				notByObserved++
			}
		}
		if tr.Status == trial.SUCCEEDED {
			v, _ := trial.Numeric(tr.Results["score"])
			at[rung] = append(at[rung], res{x, v})
		}
	}
	return notByObserved
}

// TestFidelityPromoteByModel: with promote_by "model" the scheduler ranks
// each rung by the optimizer's predictions (FidelityPredictor), not by
// the observed scores: every promotion is in the model's top 1/eta, some
// are not in the observed top, the optimizer still gets every outcome,
// and the plan is sound (each configuration once per rung, promotions
// after a success below).
func TestFidelityPromoteByModel(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	opt := newPredictOpt(t, 12)
	fs := newFid(t, st, map[string]any{"param": "budget", "min": int64(1), "max": int64(9), "brackets": int64(1), "promote_by": "model"}, nil, 1, opt, nil)
	if err := fs.s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	trs := trials(t, fs.exp)
	checkPlan(t, trs, "budget", *fs.runs)
	if n := checkModelPromotions(t, trs); n == 0 {
		t.Error("every promotion is one the observed values would have made: the model was not used")
	}
	if opt.calls == 0 || opt.observedAt != len(trs) {
		t.Errorf("%d predictions; %d outcomes observed of %d trials", opt.calls, opt.observedAt, len(trs))
	}
}

// TestFidelityPromoteByModelNeedsPredictor: promote_by "model" with an
// optimizer that does not predict at full fidelity (RANDOM, or one that
// is not FidelityAware) is refused, pointing at the key.
func TestFidelityPromoteByModelNeedsPredictor(t *testing.T) {
	cfg := decodeSchedDoc(t, `{"class": "bench.schedulers.ParallelScheduler", "config": {
  "fidelity": {"param": "budget", "min": 1, "max": 9, "promote_by": "model"}
}}`)
	if cfg.Fidelity.PromoteBy != PromoteByModel {
		t.Fatalf("promote_by %q", cfg.Fidelity.PromoteBy)
	}
	for _, opt := range []optimizers.Optimizer{randomOpt(t, 5), &obsOpt{Optimizer: randomOpt(t, 5)}} {
		err := newFidErr(t, cfg, opt)
		if err == nil || !strings.Contains(err.Error(), "sched.jsonc:2:") || !strings.Contains(err.Error(), "/config/fidelity/promote_by") ||
			!strings.Contains(err.Error(), `fidelity.promote_by "model" needs an optimizer whose model learns from every fidelity`) {
			t.Errorf("%T: error %v", opt, err)
		}
	}
	// A bad value is refused when the config is decoded.
	_, err := DecodeConfig("", map[string]any{"fidelity": map[string]any{"param": "d", "min": int64(1), "max": int64(9), "promote_by": "guess"}}, nil, source.Ref{}, "e", false)
	if err == nil || !strings.Contains(err.Error(), `/config/fidelity/promote_by: fidelity.promote_by must be "observed"`) {
		t.Errorf("bad promote_by: %v", err)
	}
}

// countingSMAC is bench's default optimizer (the GP with a fidelity
// input), counting its predictions.
type countingSMAC struct {
	*optimizers.MlosCore
	calls, answered int
}

func (o *countingSMAC) PredictFull(tuns []*tunables.Groups, withSD bool) ([]optimizers.FullPrediction, float64, bool, error) {
	p, inc, ok, err := o.MlosCore.PredictFull(tuns, withSD)
	o.calls++
	if ok {
		o.answered++
	}
	return p, inc, ok, err
}

// TestFidelityPromoteByModelSMAC: end to end with MlosCoreOptimizer
// (optimizer_type SMAC) and two runners: the run completes its budget
// with every trial succeeded, the plan is sound, the promotions were
// ranked by the GP's predictions, and the best trial is a full-fidelity
// one.
func TestFidelityPromoteByModelSMAC(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	opt := &countingSMAC{MlosCore: smacOpt(t, 15)}
	fs := newFid(t, st, map[string]any{"param": "budget", "min": int64(1), "max": int64(9), "promote_by": "model"}, nil, 2, opt, nil)
	if err := fs.s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	trs := trials(t, fs.exp)
	rungs := checkPlan(t, trs, "budget", *fs.runs)
	if len(rungs) != 15 {
		t.Errorf("%d configurations, want 15", len(rungs))
	}
	checkSucceeded(t, trs)
	if opt.answered == 0 {
		t.Errorf("the GP answered %d of %d prediction requests", opt.answered, opt.calls)
	}
	checkBestFull(t, fs, trs)
}

// TestFidelityPromoteByModelResume: a run with promote_by "model" stopped
// (as by a kill) with a promotion earned but not started, then resumed
// with a new optimizer given the stored results first: the due promotion
// is the model's choice and is made first, no (configuration, fidelity)
// runs twice, and the plan completes its budget.
func TestFidelityPromoteByModelResume(t *testing.T) {
	fc := map[string]any{"param": "budget", "min": int64(1), "max": int64(9), "brackets": int64(1), "promote_by": "model"}
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	newOpt := func() *predictOpt { return newPredictOpt(t, 8) }
	fs := newFid(t, st, fc, nil, 1, newOpt(), nil, &cancelAfter{n: 3, cancel: cancel})
	if err := fs.s.Start(ctx); err == nil {
		t.Fatal("the first run was not interrupted")
	}
	before := trials(t, fs.exp)
	if len(before) != 3 {
		t.Fatalf("first run: %d trials, want 3", len(before))
	}
	bestX := -1
	for _, tr := range before {
		if x, _ := strconv.Atoi(tr.Params["x"]); x > bestX {
			bestX = x
		}
	}
	opt := newOpt()
	fs2 := newFid(t, st, fc, nil, 1, opt, nil)
	if err := fs2.s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	runs := *fs2.runs
	if runs[0].Params["x"] != strconv.Itoa(bestX) || runs[0].Globals["budget"] != int64(3) {
		t.Errorf("first run of the resume: x=%s at %v, want the model's choice x=%d promoted to 3", runs[0].Params["x"], runs[0].Globals["budget"], bestX)
	}
	all := trials(t, fs2.exp)
	checkPlan(t, all, "budget", append(*fs.runs, runs...))
	checkModelPromotions(t, all)
	checkResumedAll(t, all, 8)
	if opt.calls == 0 {
		t.Error("the resumed run did not ask the model")
	}
}

// startOpt is predictOpt with an incumbent that configurations with x >=
// 15 beat with probability >= 0.5 (mean -x, sd 1, incumbent -14.5).
type startOpt struct{ *predictOpt }

func (o *startOpt) PredictFull(tuns []*tunables.Groups, withSD bool) ([]optimizers.FullPrediction, float64, bool, error) {
	p, _, ok, err := o.predictOpt.PredictFull(tuns, withSD)
	return p, -14.5, ok, err
}

// TestFidelityStartModel: with start "model" a new configuration the
// model is confident about (x >= 15 here) runs at full fidelity at once,
// in the last bracket (with brackets 1 too); the others start at the
// first rung; the plan is sound and is rebuilt from storage on resume.
func TestFidelityStartModel(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	fc := map[string]any{"param": "budget", "min": int64(1), "max": int64(9), "brackets": int64(1), "start": "model"}
	opt := &startOpt{newPredictOpt(t, 20)}
	fs := newFid(t, st, fc, nil, 2, opt, nil)
	if err := fs.s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	trs := trials(t, fs.exp)
	checkPlan(t, trs, "budget", *fs.runs)
	direct, first := 0, 0
	for _, tr := range trs {
		x, _ := strconv.Atoi(tr.Params["x"])
		rung, bracket := tr.Metadata[trial.FidelityRungKey], tr.Metadata[trial.FidelityBracketKey]
		switch {
		case bracket == "2":
			direct++
			if x < 15 || rung != "2" || tr.Metadata[trial.FidelityKey] != "9" {
				t.Errorf("trial %d: x=%d started in bracket 2 at rung %s, fidelity %s", tr.ID, x, rung, tr.Metadata[trial.FidelityKey])
			}
		case rung == "0":
			first++
			if x >= 15 {
				t.Errorf("trial %d: x=%d (the model is confident) started at rung 0", tr.ID, x)
			}
		}
	}
	if direct == 0 || first == 0 {
		t.Errorf("%d configurations started at full fidelity, %d at the first rung: want some of each", direct, first)
	}
	// Resume: the plan is rebuilt with the directly started ones.
	opt2 := &startOpt{newPredictOpt(t, 20)}
	fs2 := newFid(t, st, fc, nil, 1, opt2, nil)
	if _, err := fs2.s.newDispatch(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tr := range trs {
		if tr.Metadata[trial.FidelityBracketKey] == "2" {
			key := fs2.s.fid.chainKey(tr.Params)
			if b, r, running, _, ok := fs2.s.fid.plan.State(key); !ok || b != 2 || r != 2 || running {
				t.Errorf("trial %d after resume: bracket %d rung %d running %v (known %v)", tr.ID, b, r, running, ok)
			}
			n++
		}
	}
	if n != direct {
		t.Errorf("%d of %d direct trials checked", n, direct)
	}
}
