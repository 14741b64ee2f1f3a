package schedulers

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// progressRunner reports progress while it runs: step 0, then (once
// step 0 is in storage) steps 1..n-1 in a burst, without times.
type progressRunner struct {
	exp  storage.Experiment
	n    int
	seen chan error
}

func (progressRunner) ID() int                        { return 1 }
func (progressRunner) Teardown(context.Context) error { return nil }
func (progressRunner) Close() error                   { return nil }
func (r progressRunner) Run(ctx context.Context, spec Spec) trial.Outcome {
	if spec.Progress == nil {
		r.seen <- fmt.Errorf("the scheduler gave no Progress callback")
		return trial.Outcome{Status: trial.FAILED, Ts: time.Now().UTC()}
	}
	spec.Progress(trial.Progress{Step: 0, Values: map[string]any{"loss": 1.0}})
	// The report reaches storage while the trial still runs.
	var err error
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		d, e := r.exp.Trial(ctx, spec.TrialID)
		if e == nil && len(d.Telemetry) == 1 && d.Telemetry[0].Step != nil {
			break
		}
		if time.Now().After(deadline) {
			err = fmt.Errorf("step 0 not stored while the trial runs: %+v %v", d.Telemetry, e)
			break
		}
	}
	r.seen <- err
	for i := 1; i < r.n; i++ {
		spec.Progress(trial.Progress{Step: int64(i), Values: map[string]any{"loss": 1.0 / float64(i+1)}})
	}
	return trial.Outcome{Status: trial.SUCCEEDED, Ts: time.Now().UTC(), Results: map[string]any{"score": 1.0}}
}

// TestProgressIsStored: the scheduler's Progress callback stores every
// report as telemetry with its step, while the trial runs and before its
// outcome, each with a time of its own.
func TestProgressIsStored(t *testing.T) {
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
	const n = 50
	r := progressRunner{exp: exp, n: n, seen: make(chan error, 1)}
	s, err := New(Config{ExperimentID: "e", Parallel: true, NumTrialRunners: 1}, []Runner{r}, opt, exp,
		Options{Tunables: tun, Tick: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-r.seen; err != nil {
		t.Fatal(err)
	}
	trs := trials(t, exp)
	if len(trs) != 1 || trs[0].Status != trial.SUCCEEDED {
		t.Fatalf("trials: %+v", trs)
	}
	d, err := exp.Trial(context.Background(), trs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Telemetry) != n {
		t.Fatalf("%d telemetry rows, want %d: %+v", len(d.Telemetry), n, d.Telemetry)
	}
	for i, tel := range d.Telemetry {
		if tel.Step == nil || *tel.Step != int64(i) || tel.Metric != "loss" || tel.Value != 1.0/float64(i+1) {
			t.Errorf("row %d: %+v", i, tel)
		}
		if i > 0 && !tel.Ts.After(d.Telemetry[i-1].Ts) {
			t.Errorf("row %d at %v, not after row %d at %v", i, tel.Ts, i-1, d.Telemetry[i-1].Ts)
		}
	}
}
