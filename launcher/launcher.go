// Package launcher assembles an experiment from the command line and its
// configs (mlos_bench's Launcher): storage, services, one environment per
// trial runner, the initial tunable values, the optimizer and the
// scheduler; then runs it and summarizes the outcome.
package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/schedulers/devices"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/storage"
	_ "github.com/benchtune/bench/storage/sql" // SQLite and PostgreSQL backends
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// Run is an assembled experiment.
type Run struct {
	Launch       *configs.Launch
	ExperimentID string
	Storage      storage.Storage
	Experiment   storage.Experiment
	Resumed      bool
	Optimizer    optimizers.Optimizer
	Scheduler    *schedulers.Scheduler
	Runners      []*schedulers.LocalRunner
	// SchedulerConfig is the scheduler's typed config.
	SchedulerConfig schedulers.Config
	Tunables        *tunables.Groups
	RootEnv         string // resolved path of the root environment config
	// SecurityNotices are the services' notices of less safe modes their
	// configs asked for (SSH host keys not checked): printed whatever the
	// log level and recorded with the experiment (storage notes).
	SecurityNotices []string
	// CgroupNote says whether per-runner cgroups are used, and how ("":
	// not asked for).
	CgroupNote string
	// Devices are the device slots the scheduler config asks for (nil:
	// none); see runners.go.
	Devices *devices.Pool

	schedulerHasID bool             // the scheduler config file sets experiment_id
	optimizerSpace *tunables.Groups // the tunables the optimizer was built with

	engine     engines.Engine // nil: trials run in this process
	engineSpec engines.Spec
	builders   []*environments.Builder
	bases      []*services.Stack // the LocalExecService layer under each runner's services
	log        *slog.Logger
}

// Options tune Build.
type Options struct {
	Observer schedulers.Observer
	Logger   *slog.Logger
	// Worker joins an experiment that another process drives: it claims
	// and runs queued trials and never suggests (bench worker).
	Worker bool
	// Stdin, StdinTerminal and Stderr are the terminal of the passive
	// runner (runner "passive"): it shows trials on Stderr and reads typed
	// results from Stdin when StdinTerminal (or passive_prompt is true).
	// Nil Stdin: no prompt; nil Stderr: os.Stderr.
	Stdin         io.Reader
	StdinTerminal bool
	Stderr        io.Writer
	// Optimizer, when set, replaces the optimizer built from the configs;
	// it gets that one (for its targets). bench ci uses it to replay a
	// fixed set of configurations.
	Optimizer func(r *Run, configured optimizers.Optimizer) (optimizers.Optimizer, error)
	// AdjustScheduler, when set, changes the scheduler config before the
	// scheduler is built (bench ci: no reuse of stored results, one trial
	// per suggestion).
	AdjustScheduler func(cfg *schedulers.Config)
}

// localExecClass is the parent service of every stack (mlos_bench puts a
// LocalExecService under the configured services).
const localExecClass = "mlos_bench.services.local.local_exec.LocalExecService"

// Build assembles the experiment described by l. Everything a config can
// get wrong is checked first, by the same steps bench validate runs
// (provision); storage is opened (and the experiment created or resumed)
// after, so that a broken config never touches stored results.
func Build(ctx context.Context, l *configs.Launch, o Options) (r *Run, err error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	run := &Run{Launch: l, log: o.Logger}
	r = run
	defer func() {
		if err != nil {
			_ = run.Close()
			r = nil
		}
	}()
	if l.Environment == "" {
		return nil, noEnvironment(l)
	}
	r.RootEnv = l.Loader.Resolve(l.Environment)
	// Asking git about the root config's repository starts processes: do it
	// while the configs load.
	type gitResult struct{ repo, commit string }
	gitDone := make(chan gitResult, 1)
	rootEnv := r.RootEnv // r itself is cleared when Build fails
	go func() {
		var g gitResult
		g.repo, g.commit = gitInfo(rootEnv)
		gitDone <- g
	}()
	storageCfg, err := r.provision(ctx, o, nil)
	if err != nil {
		return nil, err
	}
	schedCfg := r.SchedulerConfig
	// The runner builder's second step (runners.go): cgroups (not for
	// engine jobs: they run elsewhere, and their far side, bench
	// exec-trial, takes its own) and the device slots, which the
	// scheduler hands to the trials.
	if err := r.equip(ctx, schedCfg.RunnerKind() != schedulers.RunnerEngine, true); err != nil {
		return nil, err
	}

	if r.Storage, err = storage.Open(ctx, storageCfg); err != nil {
		return nil, err
	}
	info := storage.ExperimentInfo{
		ID:            r.ExperimentID,
		Description:   r.Runners[0].Env.Name(),
		RootEnvConfig: r.RootEnv,
		FirstTrialID:  schedCfg.TrialID,
		Notes:         r.SecurityNotices,
	}
	g := <-gitDone
	info.GitRepo, info.GitCommit = g.repo, g.commit
	for _, t := range r.Optimizer.Targets() {
		info.Objectives = append(info.Objectives, storage.Objective{Name: t.Name, Direction: t.Direction()})
	}
	if o.Worker {
		// A worker joins an existing experiment and never creates one.
		if r.Experiment, err = r.Storage.LoadExperiment(ctx, r.ExperimentID); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return nil, fmt.Errorf("bench worker: experiment %q does not exist in %s: start its driver (bench run) first", r.ExperimentID, r.Storage.Describe())
			}
			return nil, err
		}
		r.Resumed = true
		if si := r.Experiment.Info(); si.RootEnvConfig != info.RootEnvConfig || si.GitCommit != info.GitCommit {
			r.log.Warn("bench worker: this worker's environment config or git commit differs from the driver's; its trials may not measure the same thing",
				"experiment", r.ExperimentID, "driver_env", si.RootEnvConfig, "env", info.RootEnvConfig,
				"driver_commit", si.GitCommit, "commit", info.GitCommit)
		}
	} else if r.Experiment, r.Resumed, err = r.Storage.Experiment(ctx, info); err != nil {
		return nil, err
	}
	if l.Secrets != nil {
		// Nothing the trials write reaches the storage with a secret in it.
		r.Experiment = storage.Redacting(r.Experiment, l.Secrets)
	}
	var reuseFrom storage.Experiment
	if schedCfg.Reuse && schedCfg.ReuseFrom != "" {
		if reuseFrom, err = r.reuseSource(ctx, schedCfg.ReuseFrom, info); err != nil {
			return nil, err
		}
	}
	runners := make([]schedulers.Runner, len(r.Runners))
	for i, lr := range r.Runners {
		runners[i] = lr
	}
	owner := schedulers.NewOwner()
	switch schedCfg.RunnerKind() {
	case schedulers.RunnerEngine:
		if runners, err = r.engineRunners(ctx, schedCfg, owner, o.Logger); err != nil {
			return nil, err
		}
	case schedulers.RunnerPassive:
		runners = r.passiveRunners(schedCfg, owner, o)
	}
	st := r.Storage
	expID := r.ExperimentID
	r.Scheduler, err = schedulers.New(schedCfg, runners, r.Optimizer, r.Experiment, schedulers.Options{
		Owner:    owner,
		Observer: o.Observer, Logger: o.Logger, Globals: l.Globals, Tunables: r.Runners[0].Env.Tunables(),
		Devices: r.Devices, Worker: o.Worker, ReuseFrom: reuseFrom,
		ExperimentStatus: func(ctx context.Context) (trial.Status, error) {
			e, err := st.LoadExperiment(ctx, expID)
			if err != nil {
				return trial.UNKNOWN, err
			}
			return e.Info().Status, nil
		},
		PastProgress: func(ctx context.Context, trialID int) ([]trial.Progress, error) {
			d, err := r.Experiment.Trial(ctx, trialID)
			if err != nil {
				return nil, err
			}
			return storage.ProgressOf(d.Telemetry), nil
		},
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// provision builds and checks everything of the run that a config decides,
// in order: the scheduler config, the trial runners' environments and
// their services, the initial tunable values, the optimizer, the engine
// config and the storage config (returned, not opened). bench run (Build)
// and bench validate (Validate, v set: validate-only, one runner) share
// it, so that what validate passes, run accepts.
func (r *Run) provision(ctx context.Context, o Options, v *ValidateOptions) (storage.Config, error) {
	l := r.Launch
	schedCfg, err := r.schedulerConfig()
	if err != nil {
		return storage.Config{}, err
	}
	if o.AdjustScheduler != nil {
		o.AdjustScheduler(&schedCfg)
	}
	r.SchedulerConfig = schedCfg
	localRunners := schedCfg.NumTrialRunners
	if schedCfg.RunnerKind() != schedulers.RunnerLocal || v != nil {
		// The trials run on the engine, or by hand; one local copy of the
		// environment gives the tunables and checks the configs.
		localRunners = 1
	}
	for id := 1; id <= localRunners; id++ {
		lr, err := r.buildRunner(ctx, id, v)
		if err != nil {
			return storage.Config{}, err
		}
		r.Runners = append(r.Runners, lr)
	}
	r.SecurityNotices = r.Notices()
	if r.Tunables, err = r.initialTunables(); err != nil {
		return storage.Config{}, err
	}
	if err := r.checkFidelity(schedCfg); err != nil { // fidelity.go
		return storage.Config{}, err
	}
	if r.Optimizer, err = r.buildOptimizer(); err != nil {
		return storage.Config{}, err
	}
	if err := r.checkFidelityOptimizer(schedCfg); err != nil { // fidelity.go
		return storage.Config{}, err
	}
	if err := r.checkFidelityPlanner(schedCfg); err != nil { // fidelity_dyn.go
		return storage.Config{}, err
	}
	if err := r.checkFidelityKernel(schedCfg); err != nil { // fidelity_ftk.go
		return storage.Config{}, err
	}
	if o.Optimizer != nil {
		if r.Optimizer, err = o.Optimizer(r, r.Optimizer); err != nil {
			return storage.Config{}, err
		}
	}
	if l.Globals["experiment_id"] == nil && !r.schedulerHasID {
		schedCfg.ExperimentID = defaultExperimentID(r.Runners[0].Env.Name(), r.RootEnv)
		r.SchedulerConfig.ExperimentID = schedCfg.ExperimentID
	}
	r.ExperimentID = schedCfg.ExperimentID
	if schedCfg.RunnerKind() == schedulers.RunnerEngine {
		if err := r.newEngine(ctx, schedCfg, v != nil); err != nil {
			return storage.Config{}, err
		}
	}
	if v != nil {
		// A run builds the device slots after this step; their config is
		// checked here (without asking nvidia-smi for "all").
		if _, err := devicePool(ctx, schedCfg, true); err != nil {
			return storage.Config{}, locateGlobal(l, "gpus", err)
		}
	}
	cfg, err := StorageConfig(l.Loader, l.Storage, l.Globals)
	return cfg, l.LocateNotFound(err, "storage")
}

// attachCgroups gives each runner a cgroup v2 group (cgroups "auto" or
// "on"); "auto" goes on without them, saying why.
func (r *Run) attachCgroups(mode string) error {
	for _, lr := range r.Runners {
		cg, err := services.NewCgroup(fmt.Sprintf("runner-%d", lr.RunnerID))
		if err != nil {
			if mode == "on" {
				return fmt.Errorf("cgroups on: %w (run as root on a system with cgroup v2, or use cgroups auto)", err)
			}
			r.log.Warn("per-runner cgroups not used", "reason", err)
			r.CgroupNote = "not used: " + err.Error()
			return nil
		}
		lr.Cgroup = cg
	}
	st, _ := r.Runners[0].Cgroup.Stats()
	r.CgroupNote = "used (CPU of every process of a trial, daemons included"
	if st.PeakBytes >= 0 {
		r.CgroupNote += ", and its peak memory)"
	} else {
		r.CgroupNote += "; peak memory unavailable: the memory controller is not enabled for the groups)"
	}
	return nil
}

// BuildRunner loads the root environment with its services for trial
// runner id and returns a bare runner over it: no cgroup, no device slot,
// no idle watch. Commands that run trials use TrialRunners (or Build),
// which add what the scheduler config asks for.
func (r *Run) BuildRunner(ctx context.Context, id int) (*schedulers.LocalRunner, error) {
	return r.buildRunner(ctx, id, nil)
}

func (r *Run) buildRunner(ctx context.Context, id int, v *ValidateOptions) (*schedulers.LocalRunner, error) {
	l := r.Launch
	globals := maps.Clone(l.Globals)
	globals["trial_runner_id"] = int64(id)
	b := environments.NewBuilder(l.Loader)
	if v != nil {
		b.ValidateOnly = true
		b.MissingArgs = v.MissingArgs
		if warn := v.Warn; warn != nil {
			b.Warn = func(at source.Ref, msg string) { warn(at.Errorf("%s", msg)) }
		}
	}
	r.builders = append(r.builders, b)
	stack, err := r.baseServices(ctx, b, globals)
	if err != nil {
		return nil, err
	}
	env, err := b.LoadEnvironment(ctx, l.Environment, nil, globals, nil, stack, nil)
	if err != nil {
		return nil, l.LocateNotFound(err, "environment")
	}
	if err := addEnvSecrets(l.Secrets, env); err != nil {
		return nil, err
	}
	lr := schedulers.NewLocalRunner(id, env)
	// Promotion "continue" with a checkpoint store: staged wherever the
	// trial runs (a no-op for trials without one).
	lr.Checkpoints = engines.StageCheckpoint
	return lr, nil
}

// Notices returns the security notices of the services built so far (by
// Build or BuildRunner), each once.
func (r *Run) Notices() []string {
	var out []string
	for _, b := range r.builders {
		for _, n := range b.SecurityNotices() {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// addEnvSecrets records the secret parameters of env and its children
// (const_args such as a db_password, and the names a "secret_params"
// const_arg lists), so that their values are kept out of what bench
// writes.
func addEnvSecrets(s *configs.Secrets, env environments.Environment) error {
	if s == nil {
		return nil
	}
	if err := s.AddParams(env.Parameters()); err != nil {
		return fmt.Errorf("environment %q: %w", env.Name(), err)
	}
	if c, ok := env.(interface {
		Children() []environments.Environment
	}); ok {
		for _, ch := range c.Children() {
			if err := addEnvSecrets(s, ch); err != nil {
				return err
			}
		}
	}
	return nil
}

// baseServices builds the LocalExecService every stack starts with, then
// the services of the CLI config and --service, in order.
func (r *Run) baseServices(ctx context.Context, b *environments.Builder, globals map[string]any) (*services.Stack, error) {
	local, err := services.New(ctx, services.Spec{Class: localExecClass, Config: map[string]any{}, Globals: globals, SearchPath: r.Launch.Loader.Paths(), ValidateOnly: b.ValidateOnly})
	if err != nil {
		return nil, err
	}
	base := services.NewStack(local)
	r.bases = append(r.bases, base)
	stack, err := b.LoadServices(ctx, r.Launch.Services, globals, base)
	return stack, r.Launch.LocateNotFound(err, "services")
}

// initialTunables returns the root environment's tunables with the initial
// values: defaults, then random values (--random_init), then each
// --tunable_values file.
func (r *Run) initialTunables() (*tunables.Groups, error) {
	tun := r.Runners[0].Env.Tunables().Copy()
	l := r.Launch
	if l.RandomInit {
		seed := int64(42)
		if l.RandomSeed != nil {
			seed = *l.RandomSeed
		}
		space := tun.Space()
		vals, err := space.Decode(space.Sample(rand.New(rand.NewPCG(uint64(seed), 0x696e6974))))
		if err != nil {
			return nil, err
		}
		if err := tun.Assign(vals); err != nil {
			return nil, err
		}
	}
	for _, f := range l.TunableValues {
		doc, err := l.Loader.Load(f, configs.KindTunableValues)
		if err != nil {
			return nil, l.LocateNotFound(err, "tunable_values")
		}
		vals, err := tunables.ParseValues(doc.At())
		if err != nil {
			return nil, err
		}
		if err := tun.ApplyValues(vals, doc.At()); err != nil {
			return nil, err
		}
	}
	return tun, nil
}

// oneShotKeys are the globals a default (one-shot) optimizer takes.
var oneShotKeys = []string{"optimization_targets", "max_suggestions", "seed", "start_with_defaults"}

func (r *Run) buildOptimizer() (optimizers.Optimizer, error) {
	l := r.Launch
	spec := optimizers.Spec{Tunables: r.Tunables, Globals: l.Globals, TargetsRef: l.GlobalRefs["optimization_targets"]}
	if l.Optimizer == "" {
		spec.Class = "mlos_bench.optimizers.OneShotOptimizer"
		spec.Config = map[string]any{}
		for _, k := range oneShotKeys {
			if v, ok := l.Globals[k]; ok {
				spec.Config[k] = v
			}
		}
		return optimizers.New(spec)
	}
	doc, err := l.Loader.Load(l.Optimizer, configs.KindOptimizer)
	if err != nil {
		return nil, l.LocateNotFound(err, "optimizer")
	}
	spec.Ref = doc.At()
	spec.Class = doc.Root.Get("class").Str
	spec.Config, _ = doc.Root.Get("config").Value().(map[string]any)
	if spec.Config == nil {
		spec.Config = map[string]any{}
	}
	if _, fromGlobals := l.Globals["optimization_targets"]; !fromGlobals || spec.Config["optimization_targets"] == nil {
		spec.TargetsRef = doc.At("config", "optimization_targets")
	}
	if err := configs.MergeParameters(spec.Config, l.Globals, nil, ""); err != nil {
		return nil, err
	}
	if inc := doc.Root.Get("include_tunables"); inc != nil {
		paths, _ := inc.Value().([]any)
		var files []string
		for _, p := range paths {
			if s, ok := p.(string); ok {
				files = append(files, s)
			}
		}
		tun, err := environments.NewBuilder(l.Loader).LoadTunables(files, r.Tunables)
		if err != nil {
			return nil, configs.LocateNotFound(err, doc.At("include_tunables"), files)
		}
		spec.Tunables = tun
	}
	r.optimizerSpace = spec.Tunables
	return optimizers.New(spec)
}

// LoadSchedulerConfig reads the scheduler config (see schedulerConfig).
func (r *Run) LoadSchedulerConfig() (schedulers.Config, error) { return r.schedulerConfig() }

// schedulerConfig reads the scheduler config (default: bench's parallel
// scheduler) with the globals merged in; the schedulers package decodes
// and checks it.
func (r *Run) schedulerConfig() (schedulers.Config, error) {
	l := r.Launch
	ref := source.Ref{}
	class := ""
	var fileCfg map[string]any
	if l.Scheduler != "" {
		doc, err := l.Loader.Load(l.Scheduler, configs.KindScheduler)
		if err != nil {
			return schedulers.Config{}, l.LocateNotFound(err, "scheduler")
		}
		ref = doc.At()
		class = doc.Root.Get("class").Str
		fileCfg, _ = doc.Root.Get("config").Value().(map[string]any)
		_, r.schedulerHasID = fileCfg["experiment_id"]
	}
	// The default experiment id needs the root environment's name: it is
	// filled in once the environment is built (see Build).
	cfg, err := schedulers.DecodeConfig(class, fileCfg, l.Globals, ref, "DEFAULT_EXPERIMENT_ID", l.Teardown)
	return cfg, locateFidelityGlobal(l, err) // fidelity.go
}

// defaultExperimentID names an experiment after its root environment when
// no experiment_id is configured.
func defaultExperimentID(envName, rootEnv string) string {
	name := envName
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(rootEnv), filepath.Ext(rootEnv))
	}
	var b strings.Builder
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "DEFAULT_EXPERIMENT_ID"
	}
	return b.String()
}

// gitInfo returns the origin URL and HEAD commit of the git repository
// holding path, if any.
func gitInfo(path string) (repo, commit string) {
	if strings.HasPrefix(path, configs.BuiltinPrefix) {
		return "", ""
	}
	dir := filepath.Dir(path)
	if out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "-C", dir, "remote", "get-url", "origin").Output(); err == nil {
		repo = strings.TrimSpace(string(out))
	} else if out, err := exec.Command("git", "-C", dir, "rev-parse", "--show-toplevel").Output(); err == nil {
		repo = strings.TrimSpace(string(out))
	}
	return repo, commit
}

// OpenStorage opens the storage a config names (empty: the default SQLite
// file bench.sqlite in the working folder). Globals override the keys the
// storage config has (e.g. a "password" from a globals file). With
// readOnly, a missing SQLite file is an error instead of being created.
func OpenStorage(ctx context.Context, loader *configs.Loader, spec string, globals map[string]any, readOnly bool) (storage.Storage, error) {
	cfg, err := StorageConfig(loader, spec, globals)
	if err != nil {
		return nil, err
	}
	cfg.NoCreate = readOnly
	return storage.Open(ctx, cfg)
}

// OpenStorageForReading opens the storage for a command that only reads
// (bench results, show, export, plot, report, compare): a missing SQLite
// file is an error, and an mlos_bench database is read as it is, not
// adopted (storage.Config.ReadOnly): only a run or a resume changes its
// schema.
func OpenStorageForReading(ctx context.Context, loader *configs.Loader, spec string, globals map[string]any) (storage.Storage, error) {
	cfg, err := StorageConfig(loader, spec, globals)
	if err != nil {
		return nil, err
	}
	cfg.NoCreate = true
	cfg.ReadOnly = true
	return storage.Open(ctx, cfg)
}

// StorageConfig reads the storage config spec names (default: the SQLite
// file bench.sqlite) with the globals merged in, and checks it
// (storage.Check).
func StorageConfig(loader *configs.Loader, spec string, globals map[string]any) (storage.Config, error) {
	cfg := storage.DefaultConfig()
	if spec != "" {
		doc, err := loader.Load(spec, configs.KindStorage)
		if err != nil {
			return cfg, err
		}
		class := doc.Root.Get("class").Str
		if err := storage.CheckClass(class); err != nil {
			return cfg, doc.Errorf([]string{"class"}, "%v", err)
		}
		m, _ := doc.Root.Get("config").Value().(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		if err := configs.MergeParameters(m, globals, nil, ""); err != nil {
			return cfg, err
		}
		for _, key := range resolvePaths(doc.Root.Get("resolve_config_property_paths")) {
			if s, ok := m[key].(string); ok && key == "database" && s != ":memory:" {
				if p := loader.Resolve(s); !strings.HasPrefix(p, configs.BuiltinPrefix) {
					m[key] = p
				}
			}
		}
		if cfg, err = storage.DecodeConfig(class, m); err != nil {
			return cfg, doc.Errorf([]string{"config"}, "%v", err)
		}
		if err := storage.Check(cfg); err != nil {
			e := doc.Errorf([]string{"config", "drivername"}, "")
			e.Err = err
			return cfg, e
		}
	}
	return cfg, nil
}

func resolvePaths(n *json5.Node) []string {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case json5.String:
		// mlos_bench intersects with the string's characters: no effect.
		return nil
	case json5.Array:
		var out []string
		for _, e := range n.Elems {
			if e.Kind == json5.String {
				out = append(out, e.Str)
			}
		}
		return out
	}
	return nil
}

// Close releases storage and services.
func (r *Run) Close() error {
	var errs []error
	if r.engine != nil {
		errs = append(errs, r.engine.Close())
	}
	for _, lr := range r.Runners {
		errs = append(errs, lr.Close())
	}
	for _, b := range r.builders {
		errs = append(errs, b.Close())
	}
	for _, b := range r.bases {
		errs = append(errs, b.Close())
	}
	if r.Storage != nil {
		errs = append(errs, r.Storage.Close())
	}
	return errors.Join(errs...)
}

// Getwd is os.Getwd, for messages.
func Getwd() string {
	wd, _ := os.Getwd()
	return wd
}

// locateGlobal places err at the config file line that set the global
// key, when a file did (not the command line).
func locateGlobal(l *configs.Launch, key string, err error) error {
	ref, ok := l.GlobalRefs[key]
	if !ok || ref.Doc == nil {
		return err
	}
	e := ref.Errorf("")
	e.Err = err
	return e
}

// devicePool builds the device slots the scheduler config asks for: GPUs
// from a list (or every GPU nvidia-smi finds, for "all"), CPU slots. With
// validateOnly, "all" is not looked up (no GPU then).
func devicePool(ctx context.Context, cfg schedulers.Config, validateOnly bool) (*devices.Pool, error) {
	dc := devices.Config{GPUsPerTrial: cfg.GPUsPerTrial, CPUSlots: cfg.CPUSlots, CoresPerSlot: cfg.CoresPerSlot, PinCores: cfg.PinCores}
	switch strings.ToLower(cfg.GPUs) {
	case "", "none":
	case "all", "auto":
		if validateOnly {
			break
		}
		gpus, err := devices.DetectGPUs(ctx)
		if err != nil {
			return nil, fmt.Errorf("gpus %q: %w", cfg.GPUs, err)
		}
		if len(gpus) == 0 {
			return nil, fmt.Errorf("gpus %q: nvidia-smi found no GPU (is it installed and on PATH?); list GPU ids instead, e.g. --gpus 0,1", cfg.GPUs)
		}
		dc.GPUs = devices.IDs(gpus)
	default:
		gpus, err := devices.ParseGPUs(cfg.GPUs)
		if err != nil {
			return nil, fmt.Errorf("gpus: %w", err)
		}
		dc.GPUs = gpus
	}
	if len(dc.GPUs) == 0 && dc.CPUSlots == 0 {
		return nil, nil
	}
	return devices.NewPool(dc)
}

// reuseSource opens the experiment whose results --reuse-from may reuse:
// only when its environment config and git commit match this one's.
func (r *Run) reuseSource(ctx context.Context, id string, info storage.ExperimentInfo) (storage.Experiment, error) {
	src, err := r.Storage.LoadExperiment(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reuse_from %q: %w", id, err)
	}
	si := src.Info()
	if si.RootEnvConfig != info.RootEnvConfig || si.GitCommit != info.GitCommit {
		r.log.Warn("not reusing results of another experiment: its environment config or git commit differs",
			"reuse_from", id, "its_env", si.RootEnvConfig, "env", info.RootEnvConfig, "its_commit", si.GitCommit, "commit", info.GitCommit)
		return nil, nil
	}
	return src, nil
}
