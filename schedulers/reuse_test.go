package schedulers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// affRunner is a runner whose environment is set up for the trials whose
// x is in set (SetupAffine).
type affRunner struct {
	id  int
	set map[string]bool
}

func (r *affRunner) ID() int                                 { return r.id }
func (r *affRunner) Run(context.Context, Spec) trial.Outcome { return trial.Outcome{} }
func (r *affRunner) Teardown(context.Context) error          { return nil }
func (r *affRunner) Close() error                            { return nil }
func (r *affRunner) SetupAffinity(p map[string]string) bool  { return r.set[p["x"]] }

// plainRunner has no SetupAffinity.
type plainRunner struct{ affRunner }

func (r *plainRunner) SetupAffinity() {}

// TestPickRunnerPrefersSetUpRunners: among idle runners the parallel
// dispatcher prefers one whose environment is set up for the trial,
// except that a retry still avoids the runner that failed it and a trial
// stored on a runner goes back to it; the SyncScheduler keeps its round
// robin whatever the affinity.
func TestPickRunnerPrefersSetUpRunners(t *testing.T) {
	r1 := &affRunner{id: 1}
	r2 := &affRunner{id: 2, set: map[string]bool{"5": true}}
	r3 := &affRunner{id: 3, set: map[string]bool{"7": true, "5": true}}
	p4 := &plainRunner{affRunner{id: 4, set: map[string]bool{"7": true}}} // not SetupAffine
	queued := func(x string) item { return item{spec: &storage.TrialSpec{Params: map[string]string{"x": x}}} }
	stored := func(x string, runner int) item {
		return item{t: storage.Trial{ID: 9, TrialRunnerID: runner, Params: map[string]string{"x": x}}}
	}
	retry := func(x string, avoid int) item { it := queued(x); it.avoid = avoid; return it }

	tests := []struct {
		name     string
		parallel bool
		idle     []Runner
		next     int
		it       item
		want     int
	}{
		{"no runner set up: the first idle one", true, []Runner{r1, r2, r3}, 0, queued("1"), 1},
		{"set up for x=7: runner 3", true, []Runner{r1, r2, r3}, 0, queued("7"), 3},
		{"two set up: the first of them", true, []Runner{r1, r3, r2}, 0, queued("5"), 3},
		{"stored trial (queued, not stored on a runner)", true, []Runner{r1, r2, r3}, 0, stored("7", 0), 3},
		{"a runner without SetupAffinity is never preferred", true, []Runner{r1, p4}, 0, queued("7"), 1},
		{"busy set-up runner: the first idle one", true, []Runner{r1, r2}, 0, queued("7"), 1},
		{"retry avoids the failed runner even when set up", true, []Runner{r3, r1, r2}, 0, retry("5", 3), 2},
		{"retry: another runner set up", true, []Runner{r1, r3, r2}, 0, retry("5", 2), 3},
		{"retry: the first other runner", true, []Runner{r2, r1, r3}, 0, retry("1", 2), 1},
		{"retry: only the failed runner is idle", true, []Runner{r2}, 0, retry("5", 2), 2},
		{"a trial stored on an idle runner goes back to it", true, []Runner{r1, r2, r3}, 0, stored("7", 2), 2},
		{"its runner is busy: a set-up one", true, []Runner{r1, r3}, 0, stored("7", 2), 3},
		{"sync: round robin ignores affinity", false, []Runner{r1, r2, r3}, 0, queued("7"), 1},
		{"sync: round robin, second turn", false, []Runner{r1, r2, r3}, 1, queued("7"), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Scheduler{cfg: Config{Parallel: tt.parallel}, runners: []Runner{r1, r2, r3}}
			d := &dispatch{s: s, runnerPool: runnerPool{idle: append([]Runner(nil), tt.idle...), next: tt.next}}
			got := d.pickRunner(tt.it)
			if got.ID() != tt.want {
				t.Errorf("picked runner %d, want %d", got.ID(), tt.want)
			}
			if len(d.idle) != len(tt.idle)-1 {
				t.Errorf("%d idle runners left of %d", len(d.idle), len(tt.idle))
			}
			for _, r := range d.idle {
				if r == got {
					t.Error("the picked runner is still idle")
				}
			}
		})
	}
}

// forgetEnv is a fakeEnv that counts ForgetSetup calls and reports
// affinity for the last x it was set up with.
type forgetEnv struct {
	fakeEnv
	forgets int
	last    map[string]string
}

func (e *forgetEnv) ReusesSetup() bool { return true }
func (e *forgetEnv) ForgetSetup()      { e.forgets++; e.last = nil }
func (e *forgetEnv) SetupMatches(p map[string]string) bool {
	return e.last != nil && e.last["x"] == p["x"]
}
func (e *forgetEnv) Setup(ctx context.Context, tun *tunables.Groups, g environments.Params) error {
	if err := e.fakeEnv.Setup(ctx, tun, g); err != nil {
		return err
	}
	e.last = tun.StringValues()
	return nil
}

// TestLocalRunnerForgetsSetupOfFailedTrials: after a trial that did not
// succeed (setup failed, run failed, cancelled), the runner makes the
// environment forget its setup; after a success it keeps it, and
// SetupAffinity says so.
func TestLocalRunnerForgetsSetupOfFailedTrials(t *testing.T) {
	status := trial.SUCCEEDED
	env := &forgetEnv{fakeEnv: fakeEnv{tun: testTunables(t), run: func(ctx context.Context, p environments.Params) environments.Result {
		if status != trial.SUCCEEDED {
			return environments.Result{Status: status, Time: time.Now().UTC(), Reason: "boom"}
		}
		return score(p)
	}}}
	r := NewLocalRunner(1, env)
	spec := Spec{Params: map[string]string{"x": "4"}}
	if out := r.Run(context.Background(), spec); out.Status != trial.SUCCEEDED || env.forgets != 0 {
		t.Fatalf("success: %s %s, %d forgets", out.Status, out.FailureReason, env.forgets)
	}
	if !r.SetupAffinity(map[string]string{"x": "4"}) || r.SetupAffinity(map[string]string{"x": "5"}) {
		t.Error("SetupAffinity does not follow the environment's last setup")
	}
	status = trial.FAILED
	if out := r.Run(context.Background(), spec); out.Status != trial.FAILED || env.forgets != 1 {
		t.Fatalf("failed run: %s, %d forgets", out.Status, env.forgets)
	}
	if r.SetupAffinity(map[string]string{"x": "4"}) {
		t.Error("affinity after a failed trial")
	}
	status = trial.SUCCEEDED
	env.setupErr = errors.New("setup broke")
	if out := r.Run(context.Background(), spec); out.Status != trial.FAILED || env.forgets != 2 {
		t.Fatalf("failed setup: %s, %d forgets", out.Status, env.forgets)
	}
	env.setupErr = nil
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out := r.Run(ctx, spec); out.Status == trial.SUCCEEDED || env.forgets != 3 {
		t.Fatalf("cancelled: %s, %d forgets", out.Status, env.forgets)
	}
}
