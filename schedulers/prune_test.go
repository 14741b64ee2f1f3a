package schedulers

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// curveRunner reports a learning curve through Spec.Progress: trials with
// an odd id keep improving (1/id), trials with an even id are bad (10·id).
// A trial stopped by the pruner ends as a runner ends a trial whose ctx
// was cancelled (trial.StopCause).
type curveRunner struct {
	steps int
	mu    sync.Mutex
	ran   map[int]int // trial -> steps it ran
}

func (*curveRunner) ID() int                        { return 1 }
func (*curveRunner) Teardown(context.Context) error { return nil }
func (*curveRunner) Close() error                   { return nil }
func (r *curveRunner) Run(ctx context.Context, spec Spec) trial.Outcome {
	v := 1 / float64(spec.TrialID)
	if spec.TrialID%2 == 0 {
		v = 10 * float64(spec.TrialID)
	}
	for step := 1; step <= r.steps; step++ {
		r.mu.Lock()
		r.ran[spec.TrialID] = step
		r.mu.Unlock()
		if spec.Progress != nil {
			spec.Progress(trial.Progress{Step: int64(step), Values: map[string]any{"score": v, "note": "text"}})
		}
		if ctx.Err() != nil {
			st, reason, _ := trial.StopCause(ctx)
			return trial.Outcome{Status: st, Ts: time.Now().UTC(), FailureReason: "run: " + reason}
		}
	}
	return trial.Outcome{Status: trial.SUCCEEDED, Ts: time.Now().UTC(), Results: map[string]any{"score": v}}
}

// countingOpt counts the outcomes the optimizer is given.
type countingOpt struct {
	optimizers.Optimizer
	mu       sync.Mutex
	statuses []trial.Status
}

func (o *countingOpt) Observe(id int, tun *tunables.Groups, st trial.Status, res map[string]any) ([]float64, error) {
	o.mu.Lock()
	o.statuses = append(o.statuses, st)
	o.mu.Unlock()
	return o.Optimizer.Observe(id, tun, st, res)
}

// TestPrunerStopsTrials: with ASHA (eta 2) the even trials, worse than an
// earlier one at the first rung, are stopped at step 1 and stored
// CANCELED with a "pruned: ..." reason; the optimizer is never given them;
// the odd trials run all their steps and succeed.
func TestPrunerStopsTrials(t *testing.T) {
	for _, kind := range []string{PrunerASHA, PrunerMedian} {
		t.Run(kind, func(t *testing.T) {
			st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
			tun := testTunables(t)
			base, err := optimizers.New(optimizers.Spec{Class: "mlos_bench.optimizers.MlosCoreOptimizer",
				Config: map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(6)}, Tunables: tun.Copy()})
			if err != nil {
				t.Fatal(err)
			}
			opt := &countingOpt{Optimizer: base}
			exp, _, err := st.Experiment(context.Background(), storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := DecodeConfig("", map[string]any{"reuse": false, "pruner": map[string]any{
				"kind": kind, "eta": int64(2), "startup_trials": int64(1)}}, nil, source.Ref{}, "e", false)
			if err != nil {
				t.Fatal(err)
			}
			r := &curveRunner{steps: 4, ran: map[int]int{}}
			s, err := New(cfg, []Runner{r}, opt, exp, Options{Tunables: tun, Tick: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			trs := trials(t, exp)
			if len(trs) != 6 {
				t.Fatalf("%d trials, want 6", len(trs))
			}
			for _, tr := range trs {
				if tr.ID%2 == 0 {
					if tr.Status != trial.CANCELED || !strings.Contains(tr.FailureReason, PrunedReasonPrefix) || !strings.Contains(tr.FailureReason, "score") {
						t.Errorf("trial %d: %s %q, want CANCELED, reason pruned: score ...", tr.ID, tr.Status, tr.FailureReason)
					}
					if n := r.ran[tr.ID]; n != 1 {
						t.Errorf("trial %d ran %d steps after it was pruned at step 1", tr.ID, n)
					}
				} else if tr.Status != trial.SUCCEEDED || r.ran[tr.ID] != 4 {
					t.Errorf("trial %d: %s %q after %d steps, want SUCCEEDED after 4", tr.ID, tr.Status, tr.FailureReason, r.ran[tr.ID])
				}
			}
			for _, st := range opt.statuses {
				if st != trial.SUCCEEDED {
					t.Errorf("the optimizer was given a %s trial", st)
				}
			}
			if len(opt.statuses) != 3 || s.Stats().Canceled != 3 {
				t.Errorf("optimizer saw %d outcomes, %d cancelled; want 3 and 3", len(opt.statuses), s.Stats().Canceled)
			}
		})
	}
}

// TestPruneProgressChains: the pruner's wrapper passes each report on to
// the listener already set, and cancels with a cause wrapping ErrPruned.
func TestPruneProgressChains(t *testing.T) {
	s := &Scheduler{cfg: Config{Pruner: PrunerConfig{Kind: PrunerMedian, MinTrials: 1}}, targets: trial.Objectives{{Name: "acc", Max: true}}}
	s.log = slog.New(slog.DiscardHandler)
	var got []int64
	next := func(p trial.Progress) { got = append(got, p.Step) }
	ctx1, c1 := context.WithCancelCause(context.Background())
	ctx2, c2 := context.WithCancelCause(context.Background())
	f1 := s.pruneProgress(context.Background(), 1, next, c1)
	f2 := s.pruneProgress(context.Background(), 2, next, c2)
	f1(trial.Progress{Step: 1, Values: map[string]any{"acc": 0.9}})
	f2(trial.Progress{Step: 1, Values: map[string]any{"acc": 0.95}}) // larger is better: goes on
	f2(trial.Progress{Step: 2, Values: map[string]any{"acc": "n/a"}})
	if ctx2.Err() != nil || ctx1.Err() != nil {
		t.Fatal("a trial was stopped without cause")
	}
	f1(trial.Progress{Step: 2, Values: map[string]any{"acc": 0.1}})
	f2(trial.Progress{Step: 2, Values: map[string]any{"acc": 0.05}}) // worse than 0.1
	if ctx2.Err() == nil || !strings.Contains(context.Cause(ctx2).Error(), "pruned: acc value") {
		t.Fatalf("trial 2 not pruned: %v", context.Cause(ctx2))
	}
	if st, reason, interrupted := trial.StopCause(ctx2); st != trial.CANCELED || interrupted || !strings.HasPrefix(reason, PrunedReasonPrefix) {
		t.Errorf("StopCause: %s %q %v", st, reason, interrupted)
	}
	if len(got) != 5 {
		t.Errorf("the chained listener got %d reports, want 5", len(got))
	}
	if (&Scheduler{}).pruneProgress(context.Background(), 3, nil, c1) != nil {
		t.Error("with no pruner and no listener, the trial has no listener")
	}
}

// TestConfirmationIsNotPruned: a confirmation re-run (the search's
// candidates and the defaults after the search) is never stopped by the
// pruner, even where a search trial with the same values is.
func TestConfirmationIsNotPruned(t *testing.T) {
	s := &Scheduler{cfg: Config{Pruner: PrunerConfig{Kind: PrunerASHA, MinStep: 1, Eta: 3}}, targets: trial.Objectives{{Name: "score"}}}
	s.log = slog.New(slog.DiscardHandler)
	report := func(tr storage.Trial, v float64) (context.Context, int) {
		ctx, cancel := context.WithCancelCause(context.Background())
		n := 0
		f := s.pruneTrial(context.Background(), tr, func(trial.Progress) { n++ }, cancel)
		f(trial.Progress{Step: 1, Values: map[string]any{"score": v}})
		return ctx, n
	}
	if ctx, _ := report(storage.Trial{ID: 1}, 1); ctx.Err() != nil {
		t.Fatal("the first trial was pruned")
	}
	confirm := storage.Trial{ID: 2, Metadata: map[string]string{"phase": "confirm"}}
	if ctx, n := report(confirm, 50); ctx.Err() != nil || n != 1 {
		t.Errorf("a confirmation trial was pruned (%v) or its report not passed on (%d)", context.Cause(ctx), n)
	}
	if ctx, n := report(storage.Trial{ID: 3}, 50); ctx.Err() == nil || n != 1 {
		t.Errorf("a search trial as bad as the confirmation one went on (reports passed on: %d)", n)
	}
}

func TestDecodePruner(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want PrunerConfig
		err  string
	}{
		{"", PrunerConfig{}, ""},
		{"asha", PrunerConfig{Kind: "asha", StartupTrials: 5, MinTrials: 1, MinStep: 1, Eta: 3}, ""},
		{map[string]any{"kind": "median", "metric": "tps", "mode": "max", "warmup_steps": int64(2)},
			PrunerConfig{Kind: "median", Metric: "tps", Max: true, ModeSet: true, StartupTrials: 5, WarmupSteps: 2, MinTrials: 1, MinStep: 1, Eta: 3}, ""},
		{map[string]any{"kind": "asha", "eta": int64(1)}, PrunerConfig{}, "pruner.eta must be an integer >= 2"},
		{map[string]any{"kind": "hyper"}, PrunerConfig{}, "pruner.kind must be"},
		{map[string]any{"kind": "asha", "rungs": int64(1)}, PrunerConfig{}, "unknown key \"rungs\""},
		{int64(3), PrunerConfig{}, "pruner must be an object"},
	} {
		cfg, err := DecodeConfig("", map[string]any{"pruner": tc.in}, nil, source.Ref{}, "e", false)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "pruner") {
				t.Errorf("%v: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.in, err)
		}
		if cfg.Pruner != tc.want {
			t.Errorf("%v: %+v, want %+v", tc.in, cfg.Pruner, tc.want)
		}
	}
}

// TestPrunerRebuiltOnResume: the pruner of a resumed experiment is rebuilt
// from the stored progress of its finished trials (Options.PastProgress),
// so a bad trial of the second run is judged against a good one of the
// first: pruned at step 1. Without the stored progress it would be alone
// at the rung and go on.
func TestPrunerRebuiltOnResume(t *testing.T) {
	for _, withPast := range []bool{true, false} {
		st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
		tun := testTunables(t)
		exp, _, err := st.Experiment(context.Background(), storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := DecodeConfig("", map[string]any{"reuse": false, "pruner": map[string]any{"kind": "asha", "eta": int64(2)}}, nil, source.Ref{}, "e", false)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		stored := map[int][]trial.Progress{} // what progress storage would keep
		r := &curveRunner{steps: 4, ran: map[int]int{}}
		rec := &recordingRunner{curveRunner: r, rec: func(id int, p trial.Progress) {
			mu.Lock()
			stored[id] = append(stored[id], p)
			mu.Unlock()
		}}
		past := func(_ context.Context, id int) ([]trial.Progress, error) {
			mu.Lock()
			defer mu.Unlock()
			return stored[id], nil
		}
		for run, n := range []int64{1, 2} {
			opt, err := optimizers.New(optimizers.Spec{Class: "mlos_bench.optimizers.MlosCoreOptimizer",
				Config: map[string]any{"optimizer_type": "RANDOM", "max_suggestions": n}, Tunables: tun.Copy()})
			if err != nil {
				t.Fatal(err)
			}
			o := Options{Tunables: tun, Tick: 20 * time.Millisecond}
			if withPast {
				o.PastProgress = past
			}
			s, err := New(cfg, []Runner{rec}, opt, exp, o)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
		}
		trs := trials(t, exp)
		if len(trs) != 2 || trs[0].Status != trial.SUCCEEDED {
			t.Fatalf("trials %+v", trs)
		}
		if withPast && (trs[1].Status != trial.CANCELED || !strings.Contains(trs[1].FailureReason, "pruned: ") || r.ran[2] != 1) {
			t.Errorf("rebuilt: trial 2 %s %q after %d steps, want pruned at step 1", trs[1].Status, trs[1].FailureReason, r.ran[2])
		}
		if !withPast && trs[1].Status != trial.SUCCEEDED {
			t.Errorf("without stored progress: trial 2 %s %q, want it alone at its rungs, SUCCEEDED", trs[1].Status, trs[1].FailureReason)
		}
	}
}

// recordingRunner hands each progress report to rec too (as progress
// storage does), before the scheduler's listener.
type recordingRunner struct {
	*curveRunner
	rec func(int, trial.Progress)
}

func (r *recordingRunner) Run(ctx context.Context, spec Spec) trial.Outcome {
	next := spec.Progress
	spec.Progress = func(p trial.Progress) {
		r.rec(spec.TrialID, p)
		if next != nil {
			next(p)
		}
	}
	return r.curveRunner.Run(ctx, spec)
}
