package schedulers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/trial"
)

// The trial vocabulary lives in the leaf package trial (trial/run.go), so
// that runner kinds, serve, exec-trial and the passive desk name it without
// importing the scheduler; these aliases keep the schedulers names.
type (
	// Spec is one trial as a runner gets it (trial.Spec).
	Spec = trial.Spec
	// Handle identifies a trial that runs outside bench's process
	// (trial.Handle; storage.EngineJob is the same type).
	Handle = trial.Handle
	// Runner runs trials, one at a time, to an outcome (trial.Runner).
	Runner = trial.Runner
	// Recoverer re-attaches to a trial's job after a restart
	// (trial.Recoverer).
	Recoverer = trial.Recoverer
	// SetupAffine tells whether a runner's environment is already set up
	// for a trial (trial.SetupAffine).
	SetupAffine = trial.SetupAffine
)

// LocalRunner runs trials on its own copy of the environment in this
// process (mlos_bench's TrialRunner); trial_runner_id is its ID.
type LocalRunner struct {
	RunnerID int
	Env      environments.Environment
	// Checkpoints, when set, stages a trial's checkpoint (promotion
	// "continue" with a checkpoint store: engines.StageCheckpoint): it
	// returns the trial's globals to use and a finish to call once the
	// trial is over (nil: nothing to do); an error fails the trial.
	Checkpoints func(ctx context.Context, spec Spec) (map[string]any, func(context.Context, *trial.Outcome), error)
	// Cgroup, when set, is the runner's cgroup v2 group: the trials'
	// commands start in it and each trial gets its CPU (and, where the
	// memory controller is enabled, peak memory) as bench.cgroup.*
	// results. Close removes it.
	Cgroup *services.Cgroup
}

// Device results: the device slot a trial ran in (schedulers/devices),
// recorded with a succeeded trial's results wherever it ran (bench run,
// a worker, a network worker, an engine job's far side), so that `bench
// results` and the dashboard can say where it ran.
const (
	DeviceSlotResult = "bench.device_slot"
	DeviceGPUResult  = "bench.gpu_id"
)

// recordDevice adds the slot of globals (device_slot, gpu_id) to out's
// results, unless the environment reported them itself.
func recordDevice(out *trial.Outcome, globals map[string]any) {
	slot, ok := globals["device_slot"]
	if !ok || slot == nil {
		return
	}
	if out.Results == nil {
		out.Results = map[string]any{}
	}
	if _, mine := out.Results[DeviceSlotResult]; !mine {
		if f, ok := trial.Numeric(slot); ok {
			out.Results[DeviceSlotResult] = f
		}
	}
	if gpu, ok := globals["gpu_id"].(string); ok && gpu != "" {
		if _, mine := out.Results[DeviceGPUResult]; !mine {
			out.Results[DeviceGPUResult] = gpu
		}
	}
}

// Cgroup results (see LocalRunner.Cgroup).
const (
	CgroupCPUUser = "bench.cgroup.cpu_user_s"
	CgroupCPUSys  = "bench.cgroup.cpu_sys_s"
	CgroupMaxRSS  = "bench.cgroup.max_rss_mb"
)

// NewLocalRunner returns a runner over env.
func NewLocalRunner(id int, env environments.Environment) *LocalRunner {
	return &LocalRunner{RunnerID: id, Env: env}
}

// ID returns the runner's id.
func (r *LocalRunner) ID() int { return r.RunnerID }

// SetupAffinity tells whether some environment of the runner would skip
// its setup for a trial with these tunable values (bench_reuse_setup).
func (r *LocalRunner) SetupAffinity(params map[string]string) bool {
	return environments.SetupAffinity(r.Env, params)
}

// Close removes the runner's cgroup (killing what is left in it); the
// environment's services belong to the caller.
func (r *LocalRunner) Close() error { return r.Cgroup.Close() }

// Run runs one trial: open the environment, set it up with the trial's
// configuration and globals, run it, read its status and telemetry, close
// it. Failures of any step become the trial's status and reason; the
// captured output of every command is kept. With spec.TelemetryInterval,
// the CPU time and memory of the trial's local processes are sampled
// (services.Sampler) and appended to the outcome's telemetry. After a
// trial that did not succeed, the environments forget their last setup
// (bench_reuse_setup), so that the next trial sets them up in full.
func (r *LocalRunner) Run(ctx context.Context, spec Spec) (out trial.Outcome) {
	rec := &environments.Recorder{}
	ctx = environments.WithRecorder(ctx, rec)
	ctx = environments.WithProgress(ctx, spec.Progress)
	if len(spec.ProcessEnv) > 0 {
		ctx = services.WithProcessEnv(ctx, spec.ProcessEnv)
	}
	if len(spec.Cores) > 0 {
		ctx = services.WithCPUAffinity(ctx, spec.Cores)
	}
	if spec.Activity != nil {
		ctx = services.WithActivity(ctx, spec.Activity)
	}
	var before services.CgroupStats
	if r.Cgroup != nil {
		ctx = services.WithCgroup(ctx, r.Cgroup)
		r.Cgroup.ResetPeak()
		before, _ = r.Cgroup.Stats()
		defer func() {
			after, err := r.Cgroup.Stats()
			if err != nil || out.Status != trial.SUCCEEDED {
				return
			}
			if out.Results == nil {
				out.Results = map[string]any{}
			}
			add := func(k string, v float64) {
				if _, mine := out.Results[k]; !mine {
					out.Results[k] = v
				}
			}
			add(CgroupCPUUser, after.UserS-before.UserS)
			add(CgroupCPUSys, after.SysS-before.SysS)
			if after.PeakBytes >= 0 {
				add(CgroupMaxRSS, float64(after.PeakBytes)/(1<<20))
			}
		}()
	}
	var sampler *services.Sampler
	if spec.TelemetryInterval > 0 {
		sampler = services.NewSampler(spec.TelemetryInterval)
		ctx = services.WithSampler(ctx, sampler)
	}
	defer func() {
		// The periodic samples (of every step, closing included) follow
		// the environment's own telemetry.
		sampler.Close()
		out.Telemetry = append(out.Telemetry, sampler.Samples()...)
		out.Output = rec.Outputs()
		out.FailureReason = trial.BoundReason(out.FailureReason)
		if out.Ts.IsZero() {
			out.Ts = time.Now().UTC()
		}
		if out.Status != trial.SUCCEEDED {
			out.Results = nil
			// A setup of a trial that did not succeed is not reused.
			environments.ForgetSetup(r.Env)
		} else {
			recordDevice(&out, spec.Globals)
		}
	}()

	if r.Checkpoints != nil {
		g, finish, err := r.Checkpoints(ctx, spec)
		if err != nil {
			out.Status, out.FailureReason = failure(ctx, "staging the checkpoint", err)
			return out
		}
		spec.Globals = g
		if finish != nil {
			defer finish(ctx, &out) // after the environment is closed
		}
	}
	if err := r.Env.Open(ctx); err != nil {
		out.Status, out.FailureReason = failure(ctx, "opening the environment", err)
		return out
	}
	defer func() {
		if err := r.Env.Close(); err != nil && out.FailureReason == "" && out.Status != trial.SUCCEEDED {
			out.FailureReason = "closing the environment: " + err.Error()
		}
	}()
	tun := r.Env.Tunables().Copy()
	if err := tun.Assign(stringValues(spec.Params)); err != nil {
		// The stored configuration no longer fits (the tunables changed).
		out.Status, out.FailureReason = trial.FAILED, "configuration does not fit the current tunables: "+err.Error()
		return out
	}
	if err := r.Env.Setup(ctx, tun, spec.Globals); err != nil {
		out.Status, out.FailureReason = failure(ctx, "setup", err)
		return out
	}
	res := r.Env.Run(ctx)
	if ctx.Err() != nil {
		out.Status, out.FailureReason = failure(ctx, "run", ctx.Err())
		return out
	}
	st := r.Env.Status(ctx)
	out.Telemetry = st.Telemetry
	out.Status = res.Status
	out.Ts = res.Time
	out.Results = res.Metrics
	out.FailureReason = res.Reason
	out.Notes = res.Notes
	if st.Err != nil && out.Status == trial.SUCCEEDED {
		out.Status = trial.FAILED
		out.FailureReason = "reading telemetry: " + st.Err.Error()
	}
	switch {
	case res.Status == trial.READY || res.Status == trial.PENDING || res.Status == trial.RUNNING:
		// As in mlos_bench, a run that ends with a status that is not final
		// (a NetworkEnv or SaaSEnv alone ends READY) is no result: the
		// scheduler stores the trial with that status, unfinished, and
		// gives it to no optimizer.
		out.Status = res.Status
		out.FailureReason = ""
	case !res.Status.IsCompleted():
		out.Status = trial.FAILED
		out.FailureReason = fmt.Sprintf("the environment finished its run step with status %s instead of a final status", res.Status)
	}
	return out
}

// failure maps an error of a step to a trial status and reason. The
// context's cancellation cause decides between a stop on request
// (CANCELED) and a hang or time limit (TIMED_OUT).
func failure(ctx context.Context, step string, err error) (trial.Status, string) {
	if ctx.Err() != nil {
		st, reason, interrupted := trial.StopCause(ctx)
		if interrupted {
			return st, step + " " + reason
		}
		return st, step + ": " + reason
	}
	if errors.Is(err, services.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return trial.TIMED_OUT, step + " timed out: " + err.Error()
	}
	if errors.Is(err, context.Canceled) {
		return trial.CANCELED, step + " cancelled"
	}
	return trial.FAILED, step + " failed: " + err.Error()
}

// Teardown opens the environment and tears it down.
func (r *LocalRunner) Teardown(ctx context.Context) error {
	if err := r.Env.Open(ctx); err != nil {
		return err
	}
	err := r.Env.Teardown(ctx)
	return errors.Join(err, r.Env.Close())
}
