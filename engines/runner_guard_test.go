package engines

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/services"
)

// A job's request is stored with the trial, written to shared storage and
// S3, and read on remote hosts: no secret global goes into it, whether
// its name looks secret or secret_params lists it. Other globals that
// differ from the experiment's do.
func TestRequestLeavesSecretGlobalsOut(t *testing.T) {
	eng := &scriptedEngine{}
	r := NewRunners(eng, Common{}, Base{Globals: map[string]any{configs.SecretParamsKey: []any{"listed_in_base"}}}, nil)[0]
	spec := schedulers.Spec{ExperimentID: "e", TrialID: 1, Globals: map[string]any{
		"db_password":           "pw-value-1234567",
		"api_token":             "token-value-1234567",
		"cloud_credential":      "cred-value-1234567",
		"listed_in_base":        "listed-value-1234567",
		"listed_here":           "here-value-1234567",
		configs.SecretParamsKey: []any{"listed_here"},
		"threads":               int64(4),
	}}
	req := r.Request(spec)
	enc := string(req.Encode())
	for _, v := range []string{"pw-value", "token-value", "cred-value", "listed-value", "here-value"} {
		if strings.Contains(enc, v) {
			t.Errorf("the request holds the secret %q:\n%s", v, enc)
		}
	}
	if req.Globals["threads"] != int64(4) {
		t.Errorf("a plain global is missing from the request: %v", req.Globals)
	}
}

// scriptedEngine is an engine whose one job stays queued until
// queuedUntil, then runs (without any progress) until doneAt, then is
// done. It counts submissions.
type scriptedEngine struct {
	mu                  sync.Mutex
	submits             int
	queuedUntil, doneAt time.Time
	queueFor, runFor    time.Duration
}

func (e *scriptedEngine) Name() string { return "scripted" }
func (e *scriptedEngine) Slots() int   { return 1 }
func (e *scriptedEngine) Submit(context.Context, Job) (Ref, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.submits++
	now := time.Now()
	e.queuedUntil, e.doneAt = now.Add(e.queueFor), now.Add(e.queueFor+e.runFor)
	return Ref("job"), nil
}
func (e *scriptedEngine) Poll(context.Context, Ref) (State, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	switch {
	case now.Before(e.queuedUntil):
		return State{Phase: Queued}, nil
	case now.Before(e.doneAt):
		return State{Phase: Running}, nil
	}
	return State{Phase: Done}, nil
}
func (e *scriptedEngine) Fetch(context.Context, Ref) (Result, error) { return Result{}, nil }
func (e *scriptedEngine) Cancel(context.Context, Ref) error          { return nil }
func (e *scriptedEngine) Close() error                               { return nil }

// A job waiting in the engine's queue (Slurm's queue, a busy pool) longer
// than hang_timeout is waiting, not hung: it is not relaunched, and the
// time keeps the trial active for trial_idle_timeout.
func TestQueuedJobIsActivity(t *testing.T) {
	eng := &scriptedEngine{queueFor: 1500 * time.Millisecond, runFor: 100 * time.Millisecond}
	common := Common{PollInterval: decode.Duration(20 * time.Millisecond), HangTimeout: decode.Duration(500 * time.Millisecond)}
	r := NewRunners(eng, common, Base{}, nil)[0]
	act := services.NewActivity()
	start := time.Now()
	out := r.Run(context.Background(), schedulers.Spec{ExperimentID: "e", TrialID: 1, Activity: act})
	eng.mu.Lock()
	submits := eng.submits
	eng.mu.Unlock()
	if submits != 1 {
		t.Errorf("the job was submitted %d times (a queued job taken for hung): %s %s", submits, out.Status, out.FailureReason)
	}
	if strings.Contains(out.FailureReason, "hang_timeout") {
		t.Errorf("outcome: %s %s", out.Status, out.FailureReason)
	}
	if last := act.LastActive(); last.Sub(start) < time.Second {
		t.Errorf("the queued time did not count as activity: last active %v after the start", last.Sub(start))
	}
}
