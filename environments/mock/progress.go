// Intermediate results of a mock run (bench only): with
// mock_env_progress_steps > 0, Run reports a learning curve through the
// runner's progress listener (environments.ReportProgress), one report per
// step, mock_env_progress_delay apart, before it returns the final metrics.

package mock

import (
	"context"
	"fmt"
	"time"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/trial"
)

// decodeProgress reads the bench-only progress keys.
func (e *Env) decodeProgress(raw rawMock, ref source.Ref) error {
	if raw.ProgressSteps < 0 {
		return ref.Child("mock_env_progress_steps").Errorf("expected a number of steps >= 0, got %d", raw.ProgressSteps)
	}
	e.progressSteps = raw.ProgressSteps
	if raw.ProgressDelay != nil {
		d, err := decode.DurationOf(raw.ProgressDelay)
		if err != nil || d < 0 {
			return ref.Child("mock_env_progress_delay").Errorf("expected seconds or a duration like \"50ms\", >= 0, got %v", raw.ProgressDelay)
		}
		e.progressDelay = d
	}
	return nil
}

// Curve is the intermediate value at step k of n of a run whose final
// value is final, in a range whose worst end is worst: it starts halfway
// between final and worst and reaches final at step n. At every step it
// orders runs as their final values do, so a pruner judging step k judges
// the final result.
func Curve(final, worst float64, k, n int64) float64 {
	if n <= 0 || k >= n {
		return final
	}
	a := 0.5 * float64(n-k) / float64(n)
	return final + (worst-final)*a
}

// reportProgress reports the learning curve leading to the final metrics;
// it returns the cause when ctx ends (a pruned or stopped trial).
func (e *Env) reportProgress(ctx context.Context, final map[string]any) error {
	for k := int64(1); k <= e.progressSteps; k++ {
		if e.progressDelay > 0 {
			t := time.NewTimer(e.progressDelay)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("stopped at step %d of %d: %w", k, e.progressSteps, context.Cause(ctx))
		}
		vals := make(map[string]any, len(final))
		for m, v := range final {
			vals[m] = Curve(v.(float64), e.hi, k, e.progressSteps)
		}
		environments.ReportProgress(ctx, trial.Progress{Step: k, Ts: time.Now().UTC(), Values: vals})
	}
	return ctx.Err()
}
