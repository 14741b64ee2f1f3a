// Package engines runs trials on execution engines outside bench's
// process: a Slurm cluster, AWS Batch or a pool of SSH hosts. Each engine
// implements the narrow Engine interface (submit, poll, fetch, cancel);
// Runner turns an engine into a schedulers.Runner, so that the dispatcher
// runs trials on it as it runs them locally, and re-attaches to running
// jobs after a restart (schedulers.Recoverer).
//
// Every job runs one trial with `bench exec-trial --request FILE --outcome
// FILE` on the far side. The request (Request, JSON) names the driver's
// configs and the trial's values; the outcome file (trial.Outcome, JSON)
// comes back through the engine. Secrets are never in a request: the far
// side reads them from the same --globals files as the driver.
package engines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Job is one submission of a trial.
type Job struct {
	// Name is a job name fit for any engine: bench-<experiment>-<trial>,
	// letters, digits, '-', '_' and '.' only, at most 100 characters.
	Name string
	// Request is the request JSON the job hands to `bench exec-trial
	// --request`. Engines place it where the command reads it (a file in
	// a shared folder, a file uploaded to the host, an S3 object or an
	// environment variable).
	Request []byte
	// Slot is the submitting runner's id (1..Slots).
	Slot int
	// Attempt counts relaunches of the same request (0: first launch).
	Attempt int
}

// Ref identifies a submitted job to its engine: engine-specific JSON
// (a job id, a host and a folder, ...). It is stored with the trial, so
// that a restarted bench can poll the job again.
type Ref = json.RawMessage

// Phase is where a job is.
type Phase int

const (
	// Queued: submitted, not started.
	Queued Phase = iota
	// Running: started, not finished.
	Running
	// Done: the job's command ended (its outcome file, if any, can be
	// fetched).
	Done
	// Failed: the engine ended the job without running its command to
	// the end (node failure, cancelled by someone else, out of memory...).
	Failed
	// TimedOut: the engine killed the job at its time limit.
	TimedOut
	// Lost: the engine no longer knows the job (its host went away, its
	// record expired) and it did not end as Done.
	Lost
)

func (p Phase) String() string {
	switch p {
	case Queued:
		return "queued"
	case Running:
		return "running"
	case Done:
		return "done"
	case Failed:
		return "failed"
	case TimedOut:
		return "timed out"
	case Lost:
		return "lost"
	case hung:
		return "hung"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// Final reports whether the job will not change any more.
func (p Phase) Final() bool { return p >= Done }

// State is a job's state as the engine last reported it.
type State struct {
	Phase Phase
	// Reason says why a job Failed, TimedOut or was Lost (the engine's own
	// words: a Slurm state and reason, a Batch statusReason, ...).
	Reason string
	// Progress changes whenever the job shows a sign of life (its output
	// grew, its state changed); Runner relaunches a job whose Progress
	// stays the same for hang_timeout.
	Progress string
	// Started and Ended are the engine's times, when it reports them
	// (zero otherwise).
	Started, Ended time.Time
}

// Result is what a finished job hands back.
type Result struct {
	// Outcome is the outcome JSON `bench exec-trial` wrote (nil: none, the
	// command did not get that far).
	Outcome []byte
	// Log is the tail of the job's own stdout and stderr (the engine's
	// output file), for failure reasons.
	Log string
}

// Engine is an execution engine. Its methods are called from several
// goroutines at once (one per slot). Errors of Poll are treated as
// transient (a dropped connection): Runner polls again and declares the
// job Lost only after lost_after.
type Engine interface {
	// Name is the engine's name, stored in trial handles ("slurm",
	// "ssh", "aws_batch", ...).
	Name() string
	// Slots is how many trials the engine runs at once (one Runner each).
	Slots() int
	Submit(ctx context.Context, job Job) (Ref, error)
	Poll(ctx context.Context, ref Ref) (State, error)
	// Fetch returns a finished job's result.
	Fetch(ctx context.Context, ref Ref) (Result, error)
	// Cancel stops a job (best effort; a job that already ended is not an
	// error).
	Cancel(ctx context.Context, ref Ref) error
	Close() error
}

// Notifier is implemented by engines that learn at once when a job ends
// (the local engine waits on its child process): Runner reads the job's
// state as soon as the channel Ended returns is closed, instead of at the
// next poll_interval. Ended returns nil for a job it cannot tell about
// (one a restarted bench re-attached to); Runner then polls.
type Notifier interface {
	Ended(ref Ref) <-chan struct{}
}

// ErrRetryElsewhere wraps a Submit error that concerns one place only (an
// unreachable host): Runner submits again at once, and the engine is
// expected to choose another place.
var ErrRetryElsewhere = errors.New("retry elsewhere")

// PilotSubmitter is implemented by engines that can start pilot workers:
// count jobs that each run argv (a `bench worker ...` command line) until
// it exits (a Slurm job array, a Batch array job, a process per host
// slot). bench pilots uses it.
type PilotSubmitter interface {
	SubmitPilots(ctx context.Context, name string, argv []string, count int) ([]Ref, error)
}
