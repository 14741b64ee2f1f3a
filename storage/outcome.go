package storage

import "github.com/benchtune/bench/trial"

// Outcome is the outcome a stored trial records (its status, end time,
// results and failure reason; no telemetry or output: TrialDetail.Outcome
// has them). It is the one reading of a stored trial as an outcome, for
// the scheduler (trials other processes finished), the passive desk and
// engines whose far side stored the outcome itself.
func (t Trial) Outcome() trial.Outcome {
	return trial.Outcome{Status: t.Status, Ts: t.TsEnd, Results: map[string]any(t.Results), FailureReason: t.FailureReason}
}

// Outcome is the outcome a stored trial records, with its telemetry and
// captured output.
func (t TrialDetail) Outcome() trial.Outcome {
	out := t.Trial.Outcome()
	out.Telemetry, out.Output = t.Telemetry, t.Output
	return out
}
