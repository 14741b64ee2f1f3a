package launcher

import (
	"context"
	"log/slog"
	"maps"
	"time"

	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/schedulers/devices"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/trial"
)

// The runner builder. Every command that runs trials in this process
// (bench run, bench worker, bench worker --connect, bench exec-trial) gets
// its trial runners from Run.buildRunner (one copy of the root environment
// with its services per runner) and Run.equip (the scheduler config's
// per-runner cgroups and device slots), so that what the scheduler config
// asks for applies wherever a trial runs:
//
//   - cgroups: each runner's trials run in a cgroup v2 group of its own
//     (bench.cgroup.* results);
//   - device slots: a trial holds a slot while it runs (gpu_id, cpu_slot,
//     device_slot globals, CUDA_VISIBLE_DEVICES, pinned cores);
//   - trial_idle_timeout: a trial that prints nothing and writes no
//     telemetry for that long ends TIMED_OUT;
//   - telemetry_interval: the trial's processes are sampled (bench.cpu_s,
//     bench.rss_mb telemetry).
//
// The environments' own built-in measurements (bench.<env>.<phase>.*) and
// the reaper's mark on every trial process come with the environment and
// its LocalExecService, whoever builds them. With a scheduler in the
// process (run, worker: Build), the dispatcher takes each trial's slot,
// watches its activity and sets its telemetry interval; without one
// (worker --connect, exec-trial: TrialRunners), each runner does it
// itself (placedRunner).

// RunnersFor names a command without a scheduler of its own that runs
// trials (TrialRunners).
type RunnersFor int

const (
	// ForNetworkWorker: bench worker --connect. num_trial_runners runners
	// (fewer when there are fewer device slots), each taking a device slot
	// for each trial.
	ForNetworkWorker RunnersFor = iota + 1
	// ForEngineJob: bench exec-trial. One runner; the trial's device slot
	// is the driver's (its globals and CUDA_VISIBLE_DEVICES come in the
	// request), so none is taken here.
	ForEngineJob
)

// TrialRunners builds the trial runners of a command that has no
// scheduler (see RunnersFor), by the same steps as Build: the scheduler
// config, one environment per runner, cgroups and device slots as the
// config asks; each runner also watches its trials' activity
// (trial_idle_timeout) and samples their processes (telemetry_interval)
// where the spec does not already. id is ForEngineJob's runner id (the
// trial_runner_id the driver gave; ignored for network workers). The
// runners are closed by Close.
func (r *Run) TrialRunners(ctx context.Context, kind RunnersFor, id int) ([]schedulers.Runner, error) {
	if r.log == nil {
		r.log = slog.Default()
	}
	cfg, err := r.schedulerConfig()
	if err != nil {
		return nil, err
	}
	r.SchedulerConfig = cfg
	ids := []int{max(id, 1)}
	if kind == ForNetworkWorker {
		// The device slots first: as the scheduler does, no more runners
		// than slots.
		if err := r.equip(ctx, false, true); err != nil {
			return nil, err
		}
		n := cfg.NumTrialRunners
		if r.Devices != nil && r.Devices.Size() > 0 {
			n = min(n, r.Devices.Size())
		}
		ids = ids[:0]
		for i := 1; i <= n; i++ {
			ids = append(ids, i)
		}
	}
	for _, i := range ids {
		lr, err := r.buildRunner(ctx, i, nil)
		if err != nil {
			return nil, err
		}
		r.Runners = append(r.Runners, lr)
	}
	r.SecurityNotices = r.Notices()
	if err := r.equip(ctx, true, false); err != nil {
		return nil, err
	}
	n := len(r.Runners)
	out := make([]schedulers.Runner, n)
	for i, lr := range r.Runners {
		out[i] = &placedRunner{LocalRunner: lr, pool: r.Devices, idle: cfg.IdleTimeout, telemetry: cfg.TelemetryInterval}
	}
	return out, nil
}

// equip gives the runners built so far what the scheduler config asks for
// besides their environments: a cgroup each (cgroups auto or on; not when
// withCgroups is false: the trials run elsewhere) and, with withSlots, the
// device slots (r.Devices; nil when none are configured).
func (r *Run) equip(ctx context.Context, withCgroups, withSlots bool) error {
	cfg := r.SchedulerConfig
	if withCgroups && cfg.Cgroups != "off" {
		if err := r.attachCgroups(cfg.Cgroups); err != nil {
			return err
		}
	}
	if !withSlots {
		return nil
	}
	pool, err := devicePool(ctx, cfg, false)
	if err != nil {
		return locateGlobal(r.Launch, "gpus", err)
	}
	r.Devices = pool
	return nil
}

// placedRunner is a local runner that takes, for each trial, what a
// scheduler would otherwise give it: a device slot from pool (when the
// spec has none), an idle watch (trial_idle_timeout, when the spec has no
// Activity yet) and the telemetry interval (when the spec sets none).
type placedRunner struct {
	*schedulers.LocalRunner
	pool      *devices.Pool
	idle      time.Duration
	telemetry time.Duration
}

func (p *placedRunner) Run(ctx context.Context, spec schedulers.Spec) trial.Outcome {
	if p.pool != nil && p.pool.Size() > 0 && spec.Globals["device_slot"] == nil {
		slot, err := p.pool.Acquire(ctx)
		if err != nil {
			st, reason, _ := trial.StopCause(ctx)
			return trial.Outcome{Status: st, Ts: time.Now().UTC(), FailureReason: "waiting for a device slot: " + reason}
		}
		defer p.pool.Release(slot)
		spec.Globals = maps.Clone(spec.Globals)
		if spec.Globals == nil {
			spec.Globals = map[string]any{}
		}
		maps.Copy(spec.Globals, slot.Globals())
		if env := slot.Env(); len(env) > 0 {
			spec.ProcessEnv = maps.Clone(spec.ProcessEnv)
			if spec.ProcessEnv == nil {
				spec.ProcessEnv = map[string]string{}
			}
			maps.Copy(spec.ProcessEnv, env)
		}
		if len(slot.Cores) > 0 {
			spec.Cores = slot.Cores
		}
	}
	if spec.TelemetryInterval == 0 {
		spec.TelemetryInterval = p.telemetry
	}
	if p.idle > 0 && spec.Activity == nil {
		act := services.NewActivity()
		spec.Activity = act
		tctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		ctx = tctx
		stop := make(chan struct{})
		watched := make(chan struct{})
		defer func() { close(stop); <-watched }()
		go func() {
			defer close(watched)
			t := time.NewTicker(min(max(p.idle/4, 10*time.Millisecond), time.Second))
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if idle := time.Since(act.LastActive()); idle > p.idle {
						cancel(schedulers.IdleCause(idle, p.idle))
						return
					}
				}
			}
		}()
	}
	return p.LocalRunner.Run(ctx, spec)
}
