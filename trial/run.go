package trial

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds the vocabulary of running a trial that every runner kind
// (local runners, engine jobs, network workers, the passive desk) and the
// scheduler share: the Spec a runner gets, the Runner interface with its
// optional parts (Recoverer, SetupAffine), the Handle of a trial that runs
// outside bench's process, and the Activity that hang detection watches.
// They live here, in the leaf package, so that a runner kind names them
// without importing the scheduler (schedulers keeps aliases).

// Spec is one trial as a runner gets it: everything it needs to run the
// trial, and nothing of the scheduler's.
type Spec struct {
	ExperimentID string
	TrialID      int
	// Params are the trial's tunable values as stored.
	Params map[string]string
	// Globals are the trial's globals: the experiment's, the trial's
	// metadata (repeat_i, ...), experiment_id, trial_id, trial_runner_id
	// and the device slot's (gpu_id, cpu_slot, device_slot).
	Globals map[string]any
	// ProcessEnv is added to the environment of the trial's processes only
	// (CUDA_VISIBLE_DEVICES of its device slot), never to bench's own.
	ProcessEnv map[string]string
	// Cores pins the trial's processes to these CPU cores (nil: no pinning).
	Cores []int
	// Activity is touched by the trial's output and telemetry (hang
	// detection); nil when not watched.
	Activity *Activity
	// TelemetryInterval samples the CPU time and memory of the trial's
	// processes into its telemetry this often (0: off; services.Sampler).
	TelemetryInterval time.Duration
	// Attach records the engine job the trial runs as, after each
	// submission (runners on execution engines call it; nil: nothing is
	// recorded). An error means the trial is no longer this process's: the
	// runner should cancel the job and return.
	Attach func(ctx context.Context, h Handle) error
	// Progress, when set, takes the trial's intermediate results while it
	// runs (Progress). Runners call it from any goroutine, in step
	// order per trial; it never blocks for long (it does not wait on
	// storage). A trial the listener decides to stop has its ctx
	// cancelled with cause ErrPruned. nil: nobody listens.
	Progress func(p Progress)
}

// Handle identifies a trial that runs outside bench's process (a batch
// job on Slurm or AWS Batch, a process on a host of an SSH pool) so that a
// restarted bench can re-attach to it instead of running it again, and
// submit it again after a hang: the engine's name, its reference to the
// job, and the exact request it was submitted with. Local runners have
// none. Storage keeps it with the trial (storage.EngineJob is this type).
type Handle struct {
	// Engine is the engine's name.
	Engine string `json:"engine"`
	// Ref is the engine's reference to the current job (JSON).
	Ref string `json:"ref"`
	// Request is the exact request the job was submitted with (JSON,
	// without secrets).
	Request string `json:"request,omitempty"`
	// Submits counts submissions of the request (relaunches included).
	Submits int `json:"submits"`
}

// Runner runs trials, one at a time, to an outcome (the shape of a Nomad
// task driver). Run never panics on the trial's behalf and never returns an
// error: every failure is the outcome's status and reason. When ctx is
// cancelled, Run stops the trial (killing its processes) and returns
// promptly; the outcome's status is then CANCELED, or TIMED_OUT when the
// cancellation cause wraps ErrTimeout (StopCause decides).
type Runner interface {
	// ID is the runner's trial_runner_id (1..N).
	ID() int
	Run(ctx context.Context, spec Spec) Outcome
	// Teardown undoes what the runner's trials set up (end of experiment).
	Teardown(ctx context.Context) error
	// Close releases the runner.
	Close() error
}

// Recoverer is implemented by runners whose trials outlive a bench
// process: Recover re-attaches to the job a stored handle names (instead of
// running the trial again) and waits for its outcome, as Run does.
// Interrupted (ctx cancelled without a cause of its own), Run and Recover
// leave the job running, so that the next bench re-attaches to it.
type Recoverer interface {
	Runner
	// Engine is the name of the engine whose handles Recover takes.
	Engine() string
	Recover(ctx context.Context, spec Spec, h Handle) Outcome
}

// SetupAffine is implemented by runners that can tell whether their
// environment is already set up for a trial (bench_reuse_setup): its
// setup would be skipped for a trial with these tunable values (as
// stored). The dispatcher prefers such a runner among the idle ones.
type SetupAffine interface {
	SetupAffinity(params map[string]string) bool
}

// Activity records when a trial last showed signs of life, for hang
// detection: the services touch it whenever a command prints something,
// and files whose modification time counts as activity (a telemetry file)
// can be watched. A scheduler stops a trial whose LastActive is too old.
//
// An Activity is safe for concurrent use. The methods of a nil *Activity
// do nothing (LastActive returns the zero time), so services call them
// without checking whether the context holds one.
type Activity struct {
	last atomic.Int64 // UnixNano of the latest touch
	now  func() time.Time

	mu      sync.Mutex
	watched []string
}

// NewActivity returns an Activity whose first touch is now.
func NewActivity() *Activity { return NewActivityClock(nil) }

// NewActivityClock returns an Activity that reads the time from now
// (nil: time.Now), whose first touch is now: a scheduler on an injected
// clock compares LastActive with that clock.
func NewActivityClock(now func() time.Time) *Activity {
	if now == nil {
		now = time.Now
	}
	a := &Activity{now: now}
	a.last.Store(now().UnixNano())
	return a
}

// Touch records activity now. It takes no lock: services call it on every
// chunk of output.
func (a *Activity) Touch() {
	if a == nil {
		return
	}
	clock := a.now
	if clock == nil {
		clock = time.Now
	}
	now := clock().UnixNano()
	for {
		old := a.last.Load()
		if now <= old || a.last.CompareAndSwap(old, now) {
			return
		}
	}
}

// Watch adds a file whose modification time counts as activity. The file
// need not exist yet; watching a path twice is the same as once.
func (a *Activity) Watch(path string) {
	if a == nil || path == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Contains(a.watched, path) {
		a.watched = append(a.watched, path)
	}
}

// Watched returns the watched paths, in the order they were added.
func (a *Activity) Watched() []string {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.watched)
}

// LastActive returns the latest of the last touch (the creation time of an
// Activity made by NewActivity counts as one) and the modification times
// of the watched files that exist. It stats the watched files on each
// call.
func (a *Activity) LastActive() time.Time {
	if a == nil {
		return time.Time{}
	}
	var latest time.Time
	if n := a.last.Load(); n != 0 {
		latest = time.Unix(0, n)
	}
	for _, p := range a.Watched() {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(latest) {
			latest = fi.ModTime()
		}
	}
	return latest
}
