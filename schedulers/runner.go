package schedulers

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/trial"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/tunables"
)

// TrialRunner runs trials on its own copy of the environment (mlos_bench's
// TrialRunner); trial_runner_id is its ID.
type TrialRunner struct {
	ID  int
	Env environments.Environment
}

// Run runs one trial: open the environment, set it up with the trial's
// configuration and globals, run it, read its status and telemetry, close
// it. Failures of any step become the trial's status and reason; the
// captured output of every command is kept.
func (r *TrialRunner) Run(ctx context.Context, tun *tunables.Groups, globals map[string]any) (out storage.TrialOutcome) {
	rec := &environments.Recorder{}
	ctx = environments.WithRecorder(ctx, rec)
	defer func() { out.Output = rec.Outputs() }()

	if err := r.Env.Open(ctx); err != nil {
		out.Status, out.FailureReason = failure("opening the environment", err)
		return out
	}
	defer func() {
		if err := r.Env.Close(); err != nil && out.FailureReason == "" && out.Status != trial.SUCCEEDED {
			out.FailureReason = "closing the environment: " + err.Error()
		}
	}()
	if err := r.Env.Setup(ctx, tun, globals); err != nil {
		out.Status, out.FailureReason = failure("setup", err)
		out.Ts = time.Now().UTC()
		return out
	}
	res := r.Env.Run(ctx)
	st := r.Env.Status(ctx)
	out.Telemetry = st.Telemetry
	out.Status = res.Status
	out.Ts = res.Time
	out.Results = res.Metrics
	out.FailureReason = res.Reason
	if st.Err != nil && out.Status == trial.SUCCEEDED {
		out.Status = trial.FAILED
		out.FailureReason = "reading telemetry: " + st.Err.Error()
	}
	if !res.Status.IsCompleted() {
		out.Status = trial.FAILED
		out.FailureReason = fmt.Sprintf("the environment finished its run step with status %s instead of a final status", res.Status)
	}
	if out.Status != trial.SUCCEEDED {
		out.Results = nil
	}
	return out
}

// failure maps an error to a trial status and reason.
func failure(step string, err error) (trial.Status, string) {
	if errors.Is(err, services.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return trial.TIMED_OUT, step + " timed out: " + err.Error()
	}
	if errors.Is(err, context.Canceled) {
		return trial.CANCELED, step + " cancelled"
	}
	return trial.FAILED, step + " failed: " + err.Error()
}

// Teardown opens the environment and tears it down.
func (r *TrialRunner) Teardown(ctx context.Context) error {
	if err := r.Env.Open(ctx); err != nil {
		return err
	}
	err := r.Env.Teardown(ctx)
	return errors.Join(err, r.Env.Close())
}
