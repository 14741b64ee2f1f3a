// Package remote implements mlos_bench's remote-side environments against
// the service interfaces of package services:
//
//   - RemoteEnv runs setup/run/teardown scripts on a host (RemoteExec, e.g.
//     SshHostService), optionally starting the host first (wait_boot,
//     HostOps);
//   - HostEnv and VMEnv provision a host on setup and deprovision it on
//     teardown (HostProvisioning); the parameters the service returns
//     (e.g. ssh_hostname) become the environment's parameters and are
//     exported to the environments after it in a CompositeEnv;
//   - OSEnv makes sure the host's OS is up on setup (HostOps, or a probe
//     through RemoteExec), reboots it when its tunables changed, and shuts
//     it down on teardown (OSOps);
//   - NetworkEnv provisions a virtual network (NetworkProvisioning) and
//     deprovisions it on teardown only with deprovision_on_teardown;
//   - SaaSEnv applies its tunable values to a managed service
//     (RemoteConfig) and restarts it (HostOps) when the change needs it.
//
// An environment whose service stack lacks a capability fails its Setup
// with a MissingServiceError naming it.
package remote

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/internal/script"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/tunables"
)

// Class names: mlos_bench's (as its schemas list them) and bench's own.
var (
	RemoteEnvClasses = []string{
		"mlos_bench.environments.RemoteEnv",
		"mlos_bench.environments.remote.RemoteEnv",
		"mlos_bench.environments.remote.remote_env.RemoteEnv",
		"bench.environments.RemoteEnv",
	}
	HostEnvClasses = []string{
		"mlos_bench.environments.remote.HostEnv",
		"mlos_bench.environments.remote.host_env.HostEnv",
		"bench.environments.HostEnv",
	}
	VMEnvClasses = []string{
		"mlos_bench.environments.remote.VMEnv",
		"mlos_bench.environments.remote.vm_env.VMEnv",
		"bench.environments.VMEnv",
	}
	OSEnvClasses = []string{
		"mlos_bench.environments.remote.OSEnv",
		"mlos_bench.environments.remote.os_env.OSEnv",
		"bench.environments.OSEnv",
	}
	NetworkEnvClasses = []string{
		"mlos_bench.environments.remote.NetworkEnv",
		"mlos_bench.environments.remote.network_env.NetworkEnv",
		"bench.environments.NetworkEnv",
	}
	SaaSEnvClasses = []string{
		"mlos_bench.environments.remote.SaaSEnv",
		"mlos_bench.environments.remote.saas_env.SaaSEnv",
		"bench.environments.SaaSEnv",
	}
)

func init() {
	environments.Register(newRemoteEnv, RemoteEnvClasses...)
	environments.Register(newHostEnv, HostEnvClasses...)
	environments.Register(newHostEnv, VMEnvClasses...)
	environments.Register(newOSEnv, OSEnvClasses...)
	environments.Register(newNetworkEnv, NetworkEnvClasses...)
	environments.Register(newSaaSEnv, SaaSEnvClasses...)
}

// Examples of services providing each capability, for error messages.
const (
	exampleRemoteExec = "SshHostService"
	exampleHostOps    = "AwsEc2Service"
	exampleHostProv   = "AwsEc2Service"
	exampleOSOps      = "SshHostService"
	exampleNetwork    = "AzureNetworkService"
	exampleConfig     = "AzureSaaSConfigService"
)

func now() time.Time { return time.Now().UTC() }

// state is the readiness every remote environment keeps.
type state struct {
	mu    sync.Mutex
	ready bool
}

func (s *state) setReady(r bool) {
	s.mu.Lock()
	s.ready = r
	s.mu.Unlock()
}

func (s *state) isReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

// status is the Status of an environment without telemetry.
func (s *state) status() environments.StatusReport {
	if s.isReady() {
		return environments.StatusReport{Status: environments.READY, Time: now()}
	}
	return environments.StatusReport{Status: environments.PENDING, Time: now()}
}

// RemoteEnv runs scripts on a remote host through the RemoteExec service;
// the host comes from the parameters (ssh_hostname for SshHostService).
type RemoteEnv struct {
	*environments.Base
	state
	script   *script.Config
	waitBoot bool
	log      *slog.Logger
	// measureCfg is bench_measurements in the config (nil: not given);
	// measure is whether this trial reports bench.<env>.<phase>.wall_s,
	// setupWall the setup phase's wall time (0: not run, or reused).
	measureCfg *bool
	measureMu  sync.Mutex
	measure    bool
	setupWall  time.Duration
}

// measurementsKey turns the built-in measurements off, as for local
// environments (see docs/measurements.md).
const measurementsKey = "bench_measurements"

var _ environments.Environment = (*RemoteEnv)(nil)

type rawRemote struct {
	WaitBoot     *bool `json:"wait_boot"`
	ReuseSetup   any   `json:"bench_reuse_setup"` // read by environments.Base
	Measurements *bool `json:"bench_measurements"`
}

func newRemoteEnv(_ context.Context, spec environments.Spec) (environments.Environment, error) {
	base, err := environments.NewBase(spec)
	if err != nil {
		return nil, err
	}
	ref := spec.Ref.Child("config")
	own := []string{"wait_boot", environments.ReuseSetupKey, measurementsKey}
	sc, err := script.Parse(spec.Config, ref, own...)
	if err != nil {
		return nil, err
	}
	if err := script.CheckEnvParams(sc, base.Parameters(), ref, spec.Name); err != nil && !base.Partial() {
		return nil, err
	}
	var raw rawRemote
	sub := map[string]any{}
	for _, k := range own {
		if v, ok := spec.Config[k]; ok {
			sub[k] = v
		}
	}
	if err := script.DecodeKeys(sub, ref, &raw, own...); err != nil {
		return nil, err
	}
	if err := base.InitSetupReuse(); err != nil {
		return nil, err
	}
	e := &RemoteEnv{Base: base, script: sc, log: slog.Default().With("env", spec.Name), measureCfg: raw.Measurements}
	if raw.WaitBoot != nil {
		e.waitBoot = *raw.WaitBoot
	}
	return e, nil
}

func (e *RemoteEnv) who() string { return fmt.Sprintf("environment %q", e.Name()) }

// Open does nothing: the service holds the connections.
func (e *RemoteEnv) Open(context.Context) error { return nil }

// Close does nothing.
func (e *RemoteEnv) Close() error { return nil }

// Setup assigns the tunable values, starts the host when wait_boot is set
// and runs the setup script on the host. With bench_reuse_setup, both are
// skipped when the values they depend on are those of the last successful
// setup (environments.Base.SetupOnce).
func (e *RemoteEnv) Setup(ctx context.Context, tun *tunables.Groups, globals environments.Params) error {
	e.setReady(false)
	if err := e.SetupParams(tun, globals); err != nil {
		return err
	}
	measure, err := e.measuring(globals)
	if err != nil {
		return fmt.Errorf("%s: %w", e.who(), err)
	}
	ctx, cancel := script.WithTimeout(ctx, e.script.Timeouts.Setup.Std())
	defer cancel()
	var setupWall time.Duration
	if _, err := e.SetupOnce(func() error {
		start := time.Now()
		err := e.setupWork(ctx)
		if len(e.script.Setup) > 0 {
			setupWall = time.Since(start)
		}
		return err
	}); err != nil {
		return err
	}
	e.measureMu.Lock()
	e.measure, e.setupWall = measure, setupWall
	e.measureMu.Unlock()
	e.setReady(true)
	return nil
}

// setupWork starts the host (wait_boot) and runs the setup script.
func (e *RemoteEnv) setupWork(ctx context.Context) error {
	if e.waitBoot {
		ops, err := script.Need[services.HostOps](e.Services(), e.Name(), e.Class(), "HostOps", exampleHostOps)
		if err != nil {
			return err
		}
		if err := ops.StartHost(ctx, e.Parameters()); err != nil {
			return fmt.Errorf("%s: wait_boot: start the host: %w", e.who(), script.TimeoutError(ctx, err))
		}
	}
	if len(e.script.Setup) > 0 {
		res, err := e.exec(ctx, "setup")
		if err != nil {
			return fmt.Errorf("%s: setup: %w", e.who(), err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("%s: setup failed: %s", e.who(), scriptReason(res))
		}
	}
	return nil
}

// exec runs a phase's script on the host.
func (e *RemoteEnv) exec(ctx context.Context, phase string) (services.ExecResult, error) {
	rx, err := script.Need[services.RemoteExec](e.Services(), e.Name(), e.Class(), "RemoteExec", exampleRemoteExec)
	if err != nil {
		return services.ExecResult{}, err
	}
	params := e.Parameters()
	env, err := script.EnvVars(params, e.script.ShellEnvParams, e.script.ShellEnvRename)
	if err != nil {
		return services.ExecResult{}, err
	}
	req := services.RemoteExecRequest{
		Script:      e.script.Lines(phase),
		Params:      params,
		Env:         env,
		CommandName: script.CommandName(e.Name(), phase),
		Timeout:     e.script.Timeouts.Phase(phase),
	}
	var prog *script.Progress
	if phase == "run" && e.script.ProgressPattern != nil {
		// progress_pattern: the run's progress lines as the service
		// passes them on (SSH: as they are printed).
		if prog = script.NewProgress(environments.ProgressFrom(ctx), e.script.ProgressPattern); prog != nil {
			req.Live = prog
		}
	}
	res, err := rx.RemoteExec(ctx, req)
	if n, perr := prog.Err(); n > 0 {
		e.log.Warn("progress lines that could not be read were skipped", "count", n, "first", perr)
	}
	script.Record(ctx, e.Name(), phase, res, e.script.MaxOutputBytes)
	if err != nil {
		return res, script.TimeoutError(ctx, err)
	}
	if res.ExitCode != 0 {
		e.log.Warn("remote script failed", "phase", phase, "reason", scriptReason(res))
	}
	return res, nil
}

// Run runs the run script on the host and reads results_stdout_pattern
// matches from its output. Without a run script it reports READY, as
// mlos_bench does.
func (e *RemoteEnv) Run(ctx context.Context) environments.Result {
	if !e.isReady() {
		return environments.Result{Status: environments.PENDING, Time: now(), Reason: e.who() + " is not set up"}
	}
	if len(e.script.Run) == 0 {
		return environments.Result{Status: environments.READY, Time: now()}
	}
	ctx, cancel := script.WithTimeout(ctx, e.script.Timeouts.Run.Std())
	defer cancel()
	start := time.Now()
	res, err := e.exec(ctx, "run")
	if err != nil {
		err = script.TimeoutError(ctx, err)
		return environments.Result{Status: script.StatusOf(err), Time: now(), Reason: fmt.Sprintf("%s: run: %v", e.who(), err)}
	}
	if res.ExitCode != 0 {
		return environments.Result{Status: environments.FAILED, Time: now(),
			Reason: fmt.Sprintf("%s: run failed: %s", e.who(), scriptReason(res))}
	}
	runWall := time.Since(start)
	metrics := script.ParseStdout(e.script.Pattern, res.Stdout)
	var notes []string
	if n := script.PatternNote(e.script.Pattern, res.Stdout, e.who()); n != "" {
		notes = append(notes, n)
	}
	e.AddSetupReused(metrics)
	e.measureMu.Lock()
	measure, setupWall := e.measure, e.setupWall
	e.measureMu.Unlock()
	if measure {
		// The phases' wall times as seen from bench (the SSH round trips
		// included); the user's results of the same names win.
		add := func(phase string, d time.Duration) {
			k := "bench." + e.Name() + "." + phase + ".wall_s"
			if _, taken := metrics[k]; !taken {
				metrics[k] = d.Seconds()
			}
		}
		if setupWall > 0 {
			add("setup", setupWall)
		}
		add("run", runWall)
	}
	return environments.Result{Status: environments.SUCCEEDED, Time: now(), Metrics: metrics, Notes: notes}
}

// measuring tells whether the built-in measurements are on: the config
// key when given, else the global, else on.
func (e *RemoteEnv) measuring(globals environments.Params) (bool, error) {
	if e.measureCfg != nil {
		return *e.measureCfg, nil
	}
	for _, g := range []environments.Params{globals, e.Spec().Globals} {
		v := g[measurementsKey]
		if v == nil {
			continue
		}
		if b, ok := decode.Bool(v); ok {
			return b, nil
		}
		return false, fmt.Errorf("global %q: expected true or false, got %v", measurementsKey, g[measurementsKey])
	}
	return true, nil
}

// Status reports READY once set up, PENDING before.
func (e *RemoteEnv) Status(context.Context) environments.StatusReport { return e.status() }

// Teardown runs the teardown script on the host. It forgets the last
// setup (bench_reuse_setup) first.
func (e *RemoteEnv) Teardown(ctx context.Context) error {
	e.setReady(false)
	e.ForgetSetup()
	if len(e.script.Teardown) == 0 {
		return nil
	}
	ctx, cancel := script.WithTimeout(ctx, e.script.Timeouts.Teardown.Std())
	defer cancel()
	res, err := e.exec(ctx, "teardown")
	if err != nil {
		return fmt.Errorf("%s: teardown: %w", e.who(), err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s: teardown failed: %s", e.who(), scriptReason(res))
	}
	return nil
}

// opEnv is the part the other remote environments share: common config
// keys only, no scripts, and parameters returned by the services kept
// next to the configured ones.
type opEnv struct {
	*environments.Base
	state
	extraMu sync.Mutex
	extra   environments.Params // returned by provisioning
}

func newOpEnv(spec environments.Spec, ownKeys ...string) (*opEnv, error) {
	base, err := environments.NewBase(spec)
	if err != nil {
		return nil, err
	}
	ref := spec.Ref.Child("config")
	known := append(slices.Clone(script.CommonKeys), ownKeys...)
	for k := range spec.Config {
		if !slices.Contains(known, k) {
			slices.Sort(known)
			return nil, ref.Child(k).Errorf("unknown config key %q; known keys: %v", k, known)
		}
	}
	return &opEnv{Base: base}, nil
}

func (e *opEnv) who() string { return fmt.Sprintf("environment %q", e.Name()) }

// Parameters are the configured parameters plus those the services
// returned at setup.
func (e *opEnv) Parameters() environments.Params {
	p := e.Base.Parameters()
	e.extraMu.Lock()
	maps.Copy(p, e.extra)
	e.extraMu.Unlock()
	return p
}

// ExportedParams returns the parameters the services returned at setup,
// for the environments after this one (see composite.Exporter).
func (e *opEnv) ExportedParams() environments.Params {
	e.extraMu.Lock()
	defer e.extraMu.Unlock()
	return maps.Clone(e.extra)
}

func (e *opEnv) setExtra(p environments.Params) {
	e.extraMu.Lock()
	e.extra = maps.Clone(p)
	e.extraMu.Unlock()
}

func (e *opEnv) Open(context.Context) error { return nil }
func (e *opEnv) Close() error               { return nil }

// Run reports READY once set up (these environments have nothing to run).
func (e *opEnv) Run(context.Context) environments.Result {
	if e.isReady() {
		return environments.Result{Status: environments.READY, Time: now()}
	}
	return environments.Result{Status: environments.PENDING, Time: now(), Reason: e.who() + " is not set up"}
}

func (e *opEnv) Status(context.Context) environments.StatusReport { return e.status() }

// scriptReason describes a remote script that exited non-zero (it ran as
// one script, so no line is named).
func scriptReason(res services.ExecResult) string {
	return script.ExitReason(services.ExecResult{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr})
}
