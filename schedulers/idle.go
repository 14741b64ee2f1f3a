package schedulers

import (
	"fmt"
	"time"

	"github.com/benchtune/bench/services"
)

// IdleCause is the cancellation cause of a trial that printed nothing and
// wrote no telemetry for idle, past trial_idle_timeout limit: it wraps
// services.ErrTimeout, so the trial ends TIMED_OUT. The dispatcher and the
// runners that watch their own trials (launcher's, for network workers and
// engine jobs) stop a hung trial with it.
func IdleCause(idle, limit time.Duration) error {
	return fmt.Errorf("no output and no telemetry for %s (trial_idle_timeout %s): %w",
		idle.Round(time.Second), limit, services.ErrTimeout)
}
