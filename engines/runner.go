package engines

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/trial"
)

// Base is what every request of an experiment shares, set by the
// launcher: the driver's arguments, folder and claim.
type Base struct {
	// Args are the driver's launcher arguments (SafeArgs removes secret
	// values).
	Args []string
	Dir  string
	// Owner is the driver's claim owner.
	Owner string
	// Globals are the experiment's globals: a trial's globals equal to
	// them are left out of its request (the far side reads them from the
	// same files).
	Globals map[string]any
}

// Runner runs trials as jobs of an engine, one at a time (a
// schedulers.Runner and schedulers.Recoverer). Submit, record the job with
// the trial, poll until it ends, fetch its outcome. A job that shows no
// progress for hang_timeout, or whose state cannot be read for
// lost_after, is cancelled and submitted again with the same request, at
// most max_relaunches times.
type Runner struct {
	id     int
	eng    Engine
	common Common
	base   Base
	log    *slog.Logger
}

// NewRunners returns one runner per slot of the engine.
func NewRunners(eng Engine, common Common, base Base, log *slog.Logger) []*Runner {
	if log == nil {
		log = slog.Default()
	}
	common.Defaults()
	out := make([]*Runner, eng.Slots())
	for i := range out {
		out[i] = &Runner{id: i + 1, eng: eng, common: common, base: base, log: log}
	}
	return out
}

// ID is the runner's trial_runner_id.
func (r *Runner) ID() int { return r.id }

// Engine names the engine whose handles Recover takes.
func (r *Runner) Engine() string { return r.eng.Name() }

// Teardown does nothing: each job set up its own environment on the far
// side, and there is no process left there to tear it down.
func (r *Runner) Teardown(context.Context) error { return nil }

// Close releases nothing: the engine is shared by the runners and closed
// by its owner.
func (r *Runner) Close() error { return nil }

// Request returns the request a trial's job is submitted with.
func (r *Runner) Request(spec schedulers.Spec) *Request {
	req := &Request{
		ExperimentID: spec.ExperimentID, TrialID: spec.TrialID, RunnerID: r.id,
		Args: r.base.Args, Dir: r.base.Dir, Params: spec.Params, Owner: r.base.Owner,
		ProcessEnv: spec.ProcessEnv,
	}
	if spec.TelemetryInterval > 0 {
		req.TelemetryInterval = spec.TelemetryInterval.String()
	}
	// Secrets (names that look secret, or listed in "secret_params") stay
	// out of the request, which is stored with the trial: the far side
	// reads them from the same globals files.
	secrets := configs.NewSecrets()
	_ = secrets.MarkListed(r.base.Globals)
	_ = secrets.MarkListed(spec.Globals)
	for k, v := range spec.Globals {
		if secrets.IsSecret(k) {
			continue
		}
		if ev, ok := r.base.Globals[k]; ok && reflect.DeepEqual(ev, v) {
			continue
		}
		if req.Globals == nil {
			req.Globals = map[string]any{}
		}
		req.Globals[k] = v
	}
	return req
}

// Run submits the trial's job and follows it to its outcome.
func (r *Runner) Run(ctx context.Context, spec schedulers.Spec) trial.Outcome {
	req := r.Request(spec)
	return r.follow(ctx, spec, Job{Name: JobName(spec.ExperimentID, spec.TrialID), Request: req.Encode(), Slot: r.id}, nil, 0)
}

// Recover follows the job of a stored handle.
func (r *Runner) Recover(ctx context.Context, spec schedulers.Spec, h schedulers.Handle) trial.Outcome {
	job := Job{Name: JobName(spec.ExperimentID, spec.TrialID), Request: []byte(h.Request), Slot: r.id}
	if len(job.Request) == 0 {
		job.Request = r.Request(spec).Encode()
	}
	return r.follow(ctx, spec, job, Ref(h.Ref), h.Submits)
}

// errInterrupted: bench itself is stopping; the job is left running.
var errInterrupted = errors.New("interrupted")

func (r *Runner) follow(ctx context.Context, spec schedulers.Spec, job Job, ref Ref, submits int) (out trial.Outcome) {
	defer func() {
		if out.Ts.IsZero() {
			out.Ts = time.Now().UTC()
		}
		if out.Status != trial.SUCCEEDED {
			out.Results = nil
		}
	}()
	lastReason := ""
	for {
		if ref == nil {
			if submits > *r.common.MaxRelaunches {
				return trial.Outcome{Status: trial.FAILED, FailureReason: fmt.Sprintf("%s job relaunched %d times: %s", r.eng.Name(), submits-1, lastReason)}
			}
			job.Attempt = submits
			var err error
			ref, err = r.submit(ctx, job)
			if err != nil {
				if ctx.Err() != nil {
					return r.stopped(ctx, nil, "submitting the job")
				}
				return trial.Outcome{Status: trial.FAILED, FailureReason: fmt.Sprintf("submitting the %s job: %v", r.eng.Name(), err)}
			}
			submits++
			if spec.Attach != nil {
				h := schedulers.Handle{Engine: r.eng.Name(), Ref: string(ref), Request: string(job.Request), Submits: submits}
				if err := spec.Attach(context.WithoutCancel(ctx), h); err != nil {
					r.cancel(ctx, ref)
					return trial.Outcome{Status: trial.CANCELED, FailureReason: "recording the job with the trial: " + err.Error()}
				}
			}
			if submits > 1 {
				r.log.Warn("relaunched the trial's job with the same request", "trial", spec.TrialID, "engine", r.eng.Name(),
					"job", string(ref), "submission", submits, "reason", lastReason)
			}
		}
		st, err := r.wait(ctx, spec, ref)
		switch {
		case err != nil:
			// ctx ended (interrupted, stopped or hung per the scheduler).
			return r.stopped(ctx, ref, "the job")
		case st.Phase == Lost || st.Phase == hung:
			lastReason = st.Reason
			r.cancel(ctx, ref)
			ref = nil
			if submits > *r.common.MaxRelaunches {
				status := trial.FAILED
				if st.Phase == hung {
					status = trial.TIMED_OUT
				}
				return trial.Outcome{Status: status, FailureReason: fmt.Sprintf("%s job %s after %d submissions: %s", r.eng.Name(), st.Phase, submits, st.Reason)}
			}
			continue
		}
		return r.result(ctx, ref, st)
	}
}

// hung is the wait result of a job without progress (never an engine's).
const hung Phase = 100

// submit submits a job; an error wrapping ErrRetryElsewhere is retried at
// once, up to the number of slots.
func (r *Runner) submit(ctx context.Context, job Job) (Ref, error) {
	var err error
	for try := 0; try <= r.eng.Slots(); try++ {
		var ref Ref
		ref, err = r.eng.Submit(ctx, job)
		if err == nil {
			return ref, nil
		}
		if !errors.Is(err, ErrRetryElsewhere) || ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, err
}

// wait polls a job until it is final, hung or lost; err is ctx's error.
func (r *Runner) wait(ctx context.Context, spec schedulers.Spec, ref Ref) (State, error) {
	interval := r.common.PollInterval.Std()
	timer := time.NewTimer(0)
	defer timer.Stop()
	// The engine may tell when the job ends: poll then, not a
	// poll_interval later.
	var ended <-chan struct{}
	if n, ok := r.eng.(Notifier); ok {
		ended = n.Ended(ref)
	}
	// The trial's progress file (progress.go), read at each poll.
	pf := newProgressFollower(r.eng, ref, spec.Progress, r.log.With("trial", spec.TrialID))
	var (
		progress   string
		progressAt = time.Now()
		failingAt  time.Time
		lastErr    error
	)
	for {
		select {
		case <-ctx.Done():
			return State{}, ctx.Err()
		case <-timer.C:
		case <-ended:
			ended = nil // once: then poll as usual
		}
		// (Reset discards a pending tick: timers since Go 1.23.)
		timer.Reset(interval)
		st, err := r.eng.Poll(ctx, ref)
		now := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return State{}, ctx.Err()
			}
			if failingAt.IsZero() {
				failingAt = now
				r.log.Warn("cannot read the job's state; trying again", "engine", r.eng.Name(), "trial", spec.TrialID, "err", err)
			}
			lastErr = err
			if now.Sub(failingAt) >= r.common.LostAfter.Std() {
				return State{Phase: Lost, Reason: fmt.Sprintf("its state could not be read for %s: %v", r.common.LostAfter.Std(), lastErr)}, nil
			}
			continue
		}
		failingAt = time.Time{}
		pf.read(ctx, st.Phase.Final())
		if st.Phase.Final() {
			return st, nil
		}
		// A queued job is waiting, not hanging: it keeps the trial alive.
		if st.Progress != progress || st.Phase == Queued {
			progress, progressAt = st.Progress, now
			if spec.Activity != nil {
				spec.Activity.Touch()
			}
		}
		if h := r.common.HangTimeout.Std(); h > 0 && st.Phase == Running && now.Sub(progressAt) >= h {
			return State{Phase: hung, Reason: fmt.Sprintf("no progress for %s (hang_timeout)", h)}, nil
		}
	}
}

// result turns a final job state into the trial's outcome.
func (r *Runner) result(ctx context.Context, ref Ref, st State) trial.Outcome {
	res, err := r.eng.Fetch(ctx, ref)
	if err != nil && ctx.Err() != nil {
		return r.stopped(ctx, ref, "fetching the job's outcome")
	}
	var out trial.Outcome
	switch {
	case err != nil:
		out = trial.Outcome{Status: trial.FAILED, FailureReason: fmt.Sprintf("%s job %s, but its outcome could not be fetched: %v", r.eng.Name(), st.Phase, err)}
	case st.Phase == TimedOut:
		out = trial.Outcome{Status: trial.TIMED_OUT, FailureReason: withReason(fmt.Sprintf("the %s job was stopped at its time limit", r.eng.Name()), st.Reason)}
	case res.Outcome != nil && st.Phase != Done && Interrupted(res.Outcome) != "":
		// A signal stopped bench exec-trial and the engine ended the job
		// (cancelled from outside, preempted, its node failed): not the
		// trial's doing. FAILED, so that max_retries runs it again and a
		// resume does not skip it as a person's cancellation.
		o, _ := DecodeOutcome(res.Outcome)
		out = trial.Outcome{Status: trial.FAILED, FailureReason: withReason(fmt.Sprintf("the %s job %s (bench exec-trial got %s)", r.eng.Name(), st.Phase, Interrupted(res.Outcome)), st.Reason),
			Output: o.Output, Telemetry: o.Telemetry}
	case res.Outcome != nil && st.Phase == Failed && !succeeded(res.Outcome):
		// The engine ended the job and the trial failed: the engine's
		// signal may have reached the trial's processes before bench
		// exec-trial. Say both.
		o, _ := DecodeOutcome(res.Outcome)
		out = trial.Outcome{Status: trial.FAILED, FailureReason: withReason(withReason(fmt.Sprintf("the %s job %s", r.eng.Name(), st.Phase), st.Reason), "the trial: "+o.FailureReason),
			Output: o.Output, Telemetry: o.Telemetry}
	case res.Outcome != nil:
		if out, err = DecodeOutcome(res.Outcome); err != nil {
			out = trial.Outcome{Status: trial.FAILED, FailureReason: fmt.Sprintf("%s job %s: %v", r.eng.Name(), st.Phase, err)}
		}
	case st.Phase == Done:
		out = trial.Outcome{Status: trial.FAILED, FailureReason: withReason(fmt.Sprintf("the %s job ended without an outcome (bench exec-trial did not finish)", r.eng.Name()), lastLines(res.Log))}
	default:
		// The engine's reason, else the tail of the job's log (never an
		// empty part).
		why := strings.TrimSpace(st.Reason)
		if tail := lastLines(res.Log); why == "" {
			why = tail
		} else {
			why = withReason(why, tail)
		}
		out = trial.Outcome{Status: trial.FAILED, FailureReason: withReason(fmt.Sprintf("the %s job %s", r.eng.Name(), st.Phase), why)}
	}
	if res.Log != "" {
		out.Output = append(out.Output, trial.Output{Phase: "job", Env: r.eng.Name(), Command: "job " + string(ref), Stdout: res.Log, Start: st.Started})
	}
	return out
}

// stopped is the outcome of a trial whose ctx ended. Interrupted (bench is
// stopping: no cause of its own), the job is left running for the next
// bench to re-attach to; stopped on request or as hung, it is cancelled.
func (r *Runner) stopped(ctx context.Context, ref Ref, step string) trial.Outcome {
	st, reason, interrupted := trial.StopCause(ctx)
	if interrupted {
		return trial.Outcome{Status: st, FailureReason: step + " " + errInterrupted.Error() + "; the job is left running"}
	}
	if ref != nil {
		r.cancel(ctx, ref)
	}
	return trial.Outcome{Status: st, FailureReason: reason}
}

// cancel cancels a job, whatever ctx's state, for at most 30 s.
func (r *Runner) cancel(ctx context.Context, ref Ref) {
	cctx, done := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer done()
	if err := r.eng.Cancel(cctx, ref); err != nil {
		r.log.Warn("could not cancel the job", "engine", r.eng.Name(), "job", string(ref), "err", err)
	}
}

// succeeded reports whether an outcome file says SUCCEEDED.
func succeeded(b []byte) bool {
	o, err := DecodeOutcome(b)
	return err == nil && o.Status == trial.SUCCEEDED
}

func withReason(msg, reason string) string {
	if reason = strings.TrimSpace(reason); reason == "" {
		return msg
	}
	return msg + ": " + reason
}

// lastLines returns the last few lines of a log.
func lastLines(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

var _ schedulers.Recoverer = (*Runner)(nil)
