package storage

import (
	"sort"

	"github.com/benchtune/bench/trial"
)

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

// ProgressOf returns the progress reports among a trial's telemetry (the
// rows with a step), one trial.Progress per step and time, in the order
// they were measured.
func ProgressOf(tel []Telemetry) []trial.Progress {
	var out []trial.Progress
	for _, t := range tel {
		if t.Step == nil {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Step == *t.Step && out[n-1].Ts.Equal(t.Ts) {
			out[n-1].Values[t.Metric] = t.Value
			continue
		}
		out = append(out, trial.Progress{Step: *t.Step, Ts: t.Ts, Values: map[string]any{t.Metric: t.Value}})
	}
	sort.SliceStable(out, func(a, b int) bool {
		if !out[a].Ts.Equal(out[b].Ts) {
			return out[a].Ts.Before(out[b].Ts)
		}
		return out[a].Step < out[b].Step
	})
	return out
}
