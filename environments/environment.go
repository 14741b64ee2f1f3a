// Package environments defines benchmark environments (mlos_bench's
// Environment): the interface, the parameters every environment computes
// from its config and the globals, the class registry and the builder that
// turns configs into environment trees.
//
// Implementations live in sub-packages (local, composite, mock, remote) and
// register their classes from init functions; import
// github.com/benchtune/bench/environments/all to get every class.
package environments

import (
	"context"
	"sync"
	"time"

	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// Params are an environment's parameters: const_args, tunable values and
// matching globals. Values are string, int64, float64, bool, nil or []any.
type Params = map[string]any

// Telemetry is one timestamped metric reading (UTC).
type Telemetry = trial.Telemetry

// Result is the outcome of Run.
type Result struct {
	Status Status
	Time   time.Time // UTC
	// Metrics holds the results (nil unless Status is SUCCEEDED).
	Metrics map[string]any
	// Reason says why the run did not succeed, for the user.
	Reason string
	// Notes are what the run noticed that may explain a missing metric
	// without failing it (a results_stdout_pattern that matched nothing);
	// a trial that fails for a missing target metric says them.
	Notes []string
}

// StatusReport is the outcome of Status.
type StatusReport struct {
	Status    Status
	Time      time.Time
	Telemetry []Telemetry
	// Err says why the status could not be read (e.g. a malformed
	// telemetry file); Status is then FAILED.
	Err error
}

// Environment is a benchmark environment: something that can be set up
// with tunable values, run, observed and torn down.
//
// The lifecycle for each trial is Open, Setup, Run, Status, Close; Teardown
// runs once at the end of an experiment (between an Open and a Close).
// Setup and Teardown must be idempotent.
type Environment interface {
	Name() string
	Class() string
	// Tunables are the groups this environment is bound to (for a composite,
	// the union of its children's).
	Tunables() *tunables.Groups
	// Parameters are the current parameters (const_args, tunable values and
	// matching globals).
	Parameters() Params

	// Open acquires per-trial resources (a temp dir, service sessions).
	Open(ctx context.Context) error
	// Setup assigns the values of the environment's groups from tun,
	// recomputes the parameters with the trial's globals and prepares the
	// environment. An error means the environment is not ready (the trial
	// fails); it wraps services.ErrTimeout on a timeout.
	Setup(ctx context.Context, tun *tunables.Groups, globals Params) error
	// Run runs the benchmark and returns its status and results.
	Run(ctx context.Context) Result
	// Status reports the current status and telemetry.
	Status(ctx context.Context) StatusReport
	// Teardown undoes Setup.
	Teardown(ctx context.Context) error
	// Close releases what Open acquired.
	Close() error
}

// Output is what one command of an environment printed, kept with the
// trial so that `bench show` can display it.
type Output = trial.Output

// Recorder collects the output of a trial's commands.
type Recorder struct {
	mu   sync.Mutex
	outs []Output
}

// Add appends outputs.
func (r *Recorder) Add(outs ...Output) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.outs = append(r.outs, outs...)
	r.mu.Unlock()
}

// Outputs returns everything recorded so far.
func (r *Recorder) Outputs() []Output {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Output(nil), r.outs...)
}

type recorderKey struct{}

// WithRecorder returns a context whose environments record their command
// output into r.
func WithRecorder(ctx context.Context, r *Recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, r)
}

// RecorderFrom returns the recorder of ctx, or nil.
func RecorderFrom(ctx context.Context) *Recorder {
	r, _ := ctx.Value(recorderKey{}).(*Recorder)
	return r
}

// RecordExec records the lines of an ExecResult for env and phase.
func RecordExec(ctx context.Context, env, phase string, res services.ExecResult) {
	r := RecorderFrom(ctx)
	if r == nil {
		return
	}
	for i, l := range res.Lines {
		r.Add(Output{Env: env, Phase: phase, Line: i, Command: l.Line, ExitCode: l.ExitCode,
			Stdout: l.Stdout, Stderr: l.Stderr, Truncated: l.Truncated, TimedOut: l.TimedOut, Start: l.Start, Duration: l.Duration})
	}
}
