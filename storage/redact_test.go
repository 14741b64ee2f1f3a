package storage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// captureExp records what reaches the storage.
type captureExp struct {
	storage.Experiment
	specs    []storage.TrialSpec
	outcomes []storage.TrialOutcome
	owner    string
}

func (c *captureExp) NewTrial(_ context.Context, s storage.TrialSpec) (storage.Trial, error) {
	c.specs = append(c.specs, s)
	return storage.Trial{}, nil
}

func (c *captureExp) Finish(_ context.Context, _ int, o storage.TrialOutcome) error {
	c.outcomes = append(c.outcomes, o)
	return nil
}

func (c *captureExp) FinishAndQueue(_ context.Context, _ int, o storage.TrialOutcome, s storage.TrialSpec) (storage.Trial, error) {
	c.outcomes = append(c.outcomes, o)
	c.specs = append(c.specs, s)
	return storage.Trial{}, nil
}

func (c *captureExp) WithOwner(owner string, _ time.Duration) storage.Experiment {
	c.owner = owner
	return c
}

func TestRedacting(t *testing.T) {
	s := configs.NewSecrets()
	if err := s.AddParams(map[string]any{"db_password": "hunter2-pw"}); err != nil {
		t.Fatal(err)
	}
	inner := &captureExp{}
	exp := storage.Redacting(inner, s).WithOwner("me", time.Minute)
	ctx := context.Background()
	spec := storage.TrialSpec{Params: map[string]string{"xv": "hunter2-pw"}, Metadata: map[string]string{"note": "hunter2-pw", "db_password": "x"}}
	out := storage.TrialOutcome{
		Status: trial.FAILED, FailureReason: "login hunter2-pw refused",
		Results:   map[string]any{"msg": "hunter2-pw", "score": 1.0},
		Telemetry: []trial.Telemetry{{Metric: "m", Value: "v hunter2-pw"}},
		Output:    []trial.Output{{Command: "psql -W hunter2-pw", Stdout: "pw=hunter2-pw", Stderr: "+ echo hunter2-pw"}},
	}
	if _, err := exp.NewTrial(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := exp.Finish(ctx, 1, out); err != nil {
		t.Fatal(err)
	}
	if _, err := exp.FinishAndQueue(ctx, 1, out, spec); err != nil {
		t.Fatal(err)
	}
	if inner.owner != "me" || len(inner.specs) != 2 || len(inner.outcomes) != 2 {
		t.Fatalf("calls did not pass through: %+v", inner)
	}
	for _, sp := range inner.specs {
		// Tunable values are stored as they are (the optimizer reads them back).
		if sp.Params["xv"] != "hunter2-pw" || sp.Metadata["note"] != "[REDACTED]" || sp.Metadata["db_password"] != "[REDACTED]" {
			t.Errorf("spec stored as %+v", sp)
		}
	}
	for _, o := range inner.outcomes {
		text := o.FailureReason + o.Results["msg"].(string) + o.Telemetry[0].Value.(string) + o.Output[0].Command + o.Output[0].Stdout + o.Output[0].Stderr
		if strings.Contains(text, "hunter2") || o.Results["score"] != 1.0 {
			t.Errorf("outcome stored as %+v", o)
		}
	}
	// The caller's outcome is not changed.
	if out.Output[0].Stdout != "pw=hunter2-pw" {
		t.Error("Redacting changed the caller's outcome")
	}
}
