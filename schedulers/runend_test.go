package schedulers

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// statusRunner returns an outcome with a fixed status.
type statusRunner struct{ st trial.Status }

func (statusRunner) ID() int                        { return 1 }
func (statusRunner) Teardown(context.Context) error { return nil }
func (statusRunner) Close() error                   { return nil }
func (r statusRunner) Run(context.Context, Spec) trial.Outcome {
	return trial.Outcome{Status: r.st, Ts: time.Now().UTC(), Results: map[string]any{"score": 1.0}}
}

// TestRunEndStatuses: the scheduler takes from a runner what trial.RunEnd
// allows, as serve and the engines do: a final status is stored, an
// unfinished one (READY) is kept without results, and a status no run
// ends with (UNKNOWN) makes the trial FAILED with the reason, instead of
// an error that stops the experiment.
func TestRunEndStatuses(t *testing.T) {
	tests := []struct {
		st         trial.Status
		want       trial.Status
		reasonHas  string
		hasResults bool
	}{
		{trial.SUCCEEDED, trial.SUCCEEDED, "", true},
		{trial.READY, trial.READY, "", false},
		{trial.UNKNOWN, trial.FAILED, "not a status a run may end with", false},
	}
	for _, tc := range tests {
		t.Run(tc.st.String(), func(t *testing.T) {
			st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
			tun := testTunables(t)
			opt, err := optimizers.New(optimizers.Spec{Class: "mlos_bench.optimizers.MlosCoreOptimizer",
				Config: map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(1)}, Tunables: tun.Copy()})
			if err != nil {
				t.Fatal(err)
			}
			exp, _, err := st.Experiment(context.Background(), storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(Config{ExperimentID: "e", Parallel: true, NumTrialRunners: 1}, []Runner{statusRunner{tc.st}}, opt, exp,
				Options{Tunables: tun, Tick: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			trs := trials(t, exp)
			if len(trs) != 1 {
				t.Fatalf("%d trials, want 1", len(trs))
			}
			tr := trs[0]
			if tr.Status != tc.want || !strings.Contains(tr.FailureReason, tc.reasonHas) || (len(tr.Results) > 0) != tc.hasResults {
				t.Errorf("trial: %s %q results %v; want %s, reason with %q, results %v", tr.Status, tr.FailureReason, tr.Results, tc.want, tc.reasonHas, tc.hasResults)
			}
		})
	}
}
