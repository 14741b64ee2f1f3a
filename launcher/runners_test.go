package launcher

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/schedulers/devices"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// fakeEnv records the globals its Setup got and, when hang, waits in Run
// until the trial is stopped.
type fakeEnv struct {
	hang    bool
	globals environments.Params
}

func (e *fakeEnv) Name() string                    { return "fake" }
func (e *fakeEnv) Class() string                   { return "fake" }
func (e *fakeEnv) Tunables() *tunables.Groups      { g, _ := tunables.New(); return g }
func (e *fakeEnv) Parameters() environments.Params { return nil }
func (e *fakeEnv) Open(context.Context) error      { return nil }
func (e *fakeEnv) Teardown(context.Context) error  { return nil }
func (e *fakeEnv) Close() error                    { return nil }
func (e *fakeEnv) Status(context.Context) environments.StatusReport {
	return environments.StatusReport{Status: trial.SUCCEEDED}
}
func (e *fakeEnv) Setup(_ context.Context, _ *tunables.Groups, g environments.Params) error {
	e.globals = g
	return nil
}
func (e *fakeEnv) Run(ctx context.Context) environments.Result {
	if e.hang {
		<-ctx.Done()
		return environments.Result{Status: trial.CANCELED, Reason: "stopped"}
	}
	return environments.Result{Status: trial.SUCCEEDED, Time: time.Now().UTC(), Metrics: map[string]any{"score": 1.0}}
}

// TestPlacedRunner: a runner of a command without a scheduler takes a
// device slot for its trial (unless the spec brings the driver's), and
// stops a trial that shows no activity for the idle timeout as TIMED_OUT.
func TestPlacedRunner(t *testing.T) {
	pool, err := devices.NewPool(devices.Config{GPUs: []string{"3"}, CPUSlots: 1})
	if err != nil {
		t.Fatal(err)
	}
	env := &fakeEnv{}
	p := &placedRunner{LocalRunner: schedulers.NewLocalRunner(1, env), pool: pool}
	spec := schedulers.Spec{ExperimentID: "x", TrialID: 1, Globals: map[string]any{"trial_id": int64(1)}}
	if out := p.Run(context.Background(), spec); out.Status != trial.SUCCEEDED {
		t.Fatalf("%s: %s", out.Status, out.FailureReason)
	}
	if env.globals["gpu_id"] != "3" || env.globals["cpu_slot"] != int64(0) || env.globals["device_slot"] != int64(0) {
		t.Errorf("the trial's globals have no slot: %v", env.globals)
	}
	if spec.Globals["gpu_id"] != nil {
		t.Errorf("the caller's globals were changed: %v", spec.Globals)
	}
	if pool.InUse() != 0 {
		t.Errorf("the slot was not released: %d in use", pool.InUse())
	}

	// The driver's slot (exec-trial, or a scheduler's): no second one.
	spec.Globals = map[string]any{"device_slot": int64(5), "gpu_id": "9"}
	if out := p.Run(context.Background(), spec); out.Status != trial.SUCCEEDED || env.globals["gpu_id"] != "9" {
		t.Errorf("%s, gpu_id %v: want the spec's slot kept", out.Status, env.globals["gpu_id"])
	}

	// A silent trial ends TIMED_OUT by the idle timeout.
	hung := &placedRunner{LocalRunner: schedulers.NewLocalRunner(2, &fakeEnv{hang: true}), idle: 50 * time.Millisecond}
	out := hung.Run(context.Background(), schedulers.Spec{ExperimentID: "x", TrialID: 2})
	if out.Status != trial.TIMED_OUT || !strings.Contains(out.FailureReason, "trial_idle_timeout") {
		t.Errorf("hung trial: %s (%s), want TIMED_OUT by trial_idle_timeout", out.Status, out.FailureReason)
	}
}
