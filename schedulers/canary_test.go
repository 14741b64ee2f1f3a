package schedulers

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/trial"
)

// TestCanary: a new experiment's first trial runs alone; when it fails,
// the experiment stops after that one trial instead of one per runner.
func TestCanary(t *testing.T) {
	t.Run("a failing first trial stops the experiment", func(t *testing.T) {
		p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, FailFast: 3, Canary: true}, 4, "",
			map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(20)}, Options{},
			func(ctx context.Context, params environments.Params) environments.Result {
				return environments.Result{Status: trial.FAILED, Reason: "run failed: line 1 exited with code 127: sh: 1: scripts/missing.sh: not found"}
			})
		err := p.sched.Start(context.Background())
		if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "(the canary)") || !strings.Contains(err.Error(), "scripts/missing.sh: not found") || !strings.Contains(err.Error(), "--no-canary") {
			t.Fatalf("want the canary's stop, got %v", err)
		}
		if n := len(trials(t, p.exp)); n != 1 {
			t.Errorf("%d trials ran, want 1", n)
		}
	})
	t.Run("a good first trial, then every runner", func(t *testing.T) {
		var g gauge
		var first atomic.Int64
		var aloneFirst atomic.Bool
		p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, Canary: true}, 4, "",
			map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(12)}, Options{},
			func(ctx context.Context, params environments.Params) environments.Result {
				g.enter()
				defer g.leave()
				isFirst := first.Add(1) == 1
				time.Sleep(60 * time.Millisecond)
				if isFirst {
					// Nothing else started while the first trial ran.
					aloneFirst.Store(g.peak.Load() == 1 && first.Load() == 1)
				}
				return score(params)
			})
		if err := p.sched.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !aloneFirst.Load() {
			t.Error("other trials started while the first one ran")
		}
		if g.peak.Load() != 4 {
			t.Errorf("at most %d trials ran at once after the first, want 4", g.peak.Load())
		}
		if n := len(trials(t, p.exp)); n != 12 {
			t.Errorf("%d trials, want 12", n)
		}
	})
	t.Run("a retried first trial stays alone", func(t *testing.T) {
		var g gauge
		var calls atomic.Int64
		var peakBeforeFanOut atomic.Int64
		p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, Canary: true, MaxRetries: 1}, 3, "",
			map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(6)}, Options{},
			func(ctx context.Context, params environments.Params) environments.Result {
				g.enter()
				defer g.leave()
				n := calls.Add(1)
				time.Sleep(30 * time.Millisecond)
				if n <= 2 {
					peakBeforeFanOut.Store(g.peak.Load())
				}
				if n == 1 {
					return environments.Result{Status: trial.FAILED, Reason: "flaky"}
				}
				return score(params)
			})
		if err := p.sched.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if peakBeforeFanOut.Load() != 1 {
			t.Errorf("%d trials ran at once before the retried first trial succeeded, want 1", peakBeforeFanOut.Load())
		}
		if n := len(trials(t, p.exp)); n != 7 {
			t.Errorf("%d trials, want 6 and a retry", n)
		}
	})
	t.Run("off", func(t *testing.T) {
		p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, FailFast: 3, Canary: false}, 4, "",
			map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(20)}, Options{},
			func(ctx context.Context, params environments.Params) environments.Result {
				time.Sleep(20 * time.Millisecond)
				return environments.Result{Status: trial.FAILED, Reason: "same"}
			})
		err := p.sched.Start(context.Background())
		if !errors.Is(err, ErrStopped) || strings.Contains(err.Error(), "canary") {
			t.Fatalf("want fail-fast, got %v", err)
		}
		if n := len(trials(t, p.exp)); n < 4 {
			t.Errorf("%d trials ran, want every runner's", n)
		}
	})
}

// TestMissingMetricNotes: a trial that succeeded without its target metric
// fails with the environment's notes (a results pattern that matched none
// of the output) and the closest metric name.
func TestMissingMetricNotes(t *testing.T) {
	note := `environment "e": results_stdout_pattern "(\w+)=(\S+)" matched none of the run's 2 output line(s); they are: "score: 1", "done"`
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true}, 1, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(1)}, Options{},
		func(ctx context.Context, params environments.Params) environments.Result {
			return environments.Result{Status: trial.SUCCEEDED, Metrics: map[string]any{"scor": 1.0}, Notes: []string{note}}
		})
	_ = p.sched.Start(context.Background())
	ts := trials(t, p.exp)
	if len(ts) != 1 || ts[0].Status != trial.FAILED {
		t.Fatalf("trials %+v", ts)
	}
	for _, w := range []string{`no "score" metric, the optimization target; did you mean "scor"?`, note} {
		if !strings.Contains(ts[0].FailureReason, w) {
			t.Errorf("reason %q lacks %q", ts[0].FailureReason, w)
		}
	}
}
