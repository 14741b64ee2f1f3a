package awsbatch

import (
	"strings"
	"testing"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/trial"
)

// TestFailedJobReasonSaysWhatIsKnown: a job whose container exits non-zero
// without an outcome, and for which Batch gives no status reason, is
// FAILED with what is known (the exit code, the container's reason when
// there is one, the log stream) instead of an empty reason (issue 22, bug
// 6: "the aws_batch job failed: : AWS Batch job … FAILED").
func TestFailedJobReasonSaysWhatIsKnown(t *testing.T) {
	t.Parallel()
	f, fb := startMoto(t)
	fb.exit = 3
	e, _ := newTestEngine(t, engineConfig(f, nil), 1)
	r := engines.NewRunners(e, engines.Common{MaxRelaunches: new(int)}, engines.Base{}, nil)[0]
	out := r.Run(t.Context(), schedulers.Spec{ExperimentID: "exp-1", TrialID: 5, Params: map[string]string{"x": "1"}})
	if out.Status != trial.FAILED {
		t.Fatalf("status %s (%s), want FAILED", out.Status, out.FailureReason)
	}
	reason := out.FailureReason
	if strings.Contains(reason, ": :") || strings.HasSuffix(strings.TrimSpace(reason), ":") {
		t.Errorf("reason with an empty part: %q", reason)
	}
	// (moto reports neither an exit code nor a container reason:
	// TestStateOf covers them.)
	for _, want := range []string{"no status reason", "log stream"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q does not say %q", reason, want)
		}
	}
}
