package environments

import "github.com/benchtune/bench/trial"

// Status is the state of an environment or a trial; it lives in package
// trial, the vocabulary every layer shares.
type Status = trial.Status

// The statuses, numbered as in mlos_bench.
const (
	UNKNOWN   = trial.UNKNOWN
	PENDING   = trial.PENDING
	READY     = trial.READY
	RUNNING   = trial.RUNNING
	SUCCEEDED = trial.SUCCEEDED
	CANCELED  = trial.CANCELED
	FAILED    = trial.FAILED
	TIMED_OUT = trial.TIMED_OUT
)
