// Package trial is the shared vocabulary of a trial, imported by every
// layer that moves trials around (optimizers, schedulers, runners, storage,
// the launcher and the CLI): its status, its outcome (results, telemetry,
// captured output), the experiment's objectives with the one rule for
// "which result is better", the Pareto front, what a runner gets and is
// (Spec, Runner, Recoverer, SetupAffine, Handle, Activity, Progress: run.go
// and trial.go), and the decisions of a trial's lifecycle that every
// runner kind shares (lifecycle.go).
//
// It imports nothing of bench's own but two leaf helpers (internal/capture,
// internal/suggest, which import only the standard library), so that no
// layer has to import another just to name a status.
package trial

import (
	"encoding/json"
	"errors"
	"math"
	"time"
)

// Outcome is how a trial ended: what a runner returns and what storage
// records in one transaction.
type Outcome struct {
	// Status must be final: SUCCEEDED, FAILED, TIMED_OUT or CANCELED.
	Status Status
	// Ts is the end time; zero means now.
	Ts time.Time
	// Results maps metric names to numbers, strings, booleans or nil (nil
	// unless Status is SUCCEEDED).
	Results map[string]any
	// Telemetry are time-stamped metrics gathered while the trial ran.
	Telemetry []Telemetry
	// Output is the captured output of the commands the trial ran.
	Output []Output
	// FailureReason says why a trial did not succeed.
	FailureReason string
	// Notes are the environment's remarks that may explain a missing
	// target metric (environments.Result.Notes); not stored.
	Notes []string `json:"notes,omitempty"`
}

// Progress is an intermediate result of a running trial: the values it
// reported at a step (an iteration, a second of the benchmark's run, a
// fidelity rung). Every runner kind carries it (local runners, engine jobs,
// network workers) to the Spec's Progress callback; it is stored as
// telemetry with the step, and pruners (early stopping) decide on it.
type Progress struct {
	// Step orders a trial's reports; larger is later (0 is allowed).
	Step int64 `json:"step"`
	// Ts is when the values were measured; zero means now.
	Ts time.Time `json:"ts,omitzero"`
	// Values maps metric names to numbers (strings, booleans or nil are
	// stored but not compared).
	Values map[string]any `json:"values"`
}

// ErrPruned is the cancellation cause (context.Cause) of a running trial
// stopped because its intermediate results were unpromising (early
// stopping). Runners stop it as they stop a timed-out trial.
var ErrPruned = errors.New("pruned")

// Telemetry is one time-stamped metric value. Values may be numbers,
// strings, booleans or nil; read back from storage they are float64 when
// the stored text is numeric, string otherwise, or nil.
type Telemetry struct {
	Ts     time.Time `json:"ts"`
	Metric string    `json:"metric"`
	Value  any       `json:"value"`
	// Step is the progress step of an intermediate result (trial.Progress
	// stored as telemetry); nil for plain telemetry.
	Step *int64 `json:"step,omitempty"`
}

// Output is the captured output of one command of a trial.
type Output struct {
	Phase    string `json:"phase"`   // setup, run, teardown, status, upload, download
	Env      string `json:"env"`     // environment name
	Line     int    `json:"line"`    // index of the command in the phase's script
	Command  string `json:"command"` // the command as run
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	// Truncated tells that Stdout or Stderr were cut by the capture limit.
	Truncated bool `json:"truncated,omitempty"`
	// TimedOut tells that the command was stopped at its time limit.
	TimedOut bool          `json:"timed_out,omitempty"`
	Start    time.Time     `json:"start,omitzero"`
	Duration time.Duration `json:"duration_ns"`
}

// MarshalJSON writes numbers as JSON numbers, and NaN and infinities (which
// JSON cannot hold) as the strings "nan", "inf" and "-inf"; a progress
// report's step is kept (bench show --format json lists it).
func (t Telemetry) MarshalJSON() ([]byte, error) {
	v := t.Value
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		switch {
		case math.IsNaN(f):
			v = "nan"
		case f > 0:
			v = "inf"
		default:
			v = "-inf"
		}
	}
	return json.Marshal(struct {
		Ts     time.Time `json:"ts"`
		Metric string    `json:"metric"`
		Value  any       `json:"value"`
		Step   *int64    `json:"step,omitempty"`
	}{t.Ts, t.Metric, v, t.Step})
}
