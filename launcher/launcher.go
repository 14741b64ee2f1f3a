// Package launcher assembles an experiment from the command line and its
// configs (mlos_bench's Launcher): storage, services, one environment per
// trial runner, the initial tunable values, the optimizer and the
// scheduler; then runs it and summarizes the outcome.
package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/storage"
	_ "github.com/benchtune/bench/storage/sql" // SQLite and PostgreSQL backends
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
	Runners      []*schedulers.TrialRunner
	Tunables     *tunables.Groups
	RootEnv      string // resolved path of the root environment config

	builders []*environments.Builder
	bases    []*services.Stack // the LocalExecService layer under each runner's services
	log      *slog.Logger
}

// Options tune Build.
type Options struct {
	Observer schedulers.Observer
	Logger   *slog.Logger
}

var experimentIDRe = regexp.MustCompile(`^[a-zA-Z0-9_.-]+$`)

// localExecClass is the parent service of every stack (mlos_bench puts a
// LocalExecService under the configured services).
const localExecClass = "mlos_bench.services.local.local_exec.LocalExecService"

// Build assembles the experiment described by l. Storage is opened (and
// the experiment created or resumed) last, so that a broken config never
// touches stored results.
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
		return nil, &configs.UsageError{Msg: "no environment config: give --environment FILE or set \"environment\" in the --config file"}
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

	n, _ := l.Globals["num_trial_runners"].(int64)
	if n < 1 {
		n = 1
	}
	for id := 1; id <= int(n); id++ {
		globals := maps.Clone(l.Globals)
		globals["trial_runner_id"] = int64(id)
		b := environments.NewBuilder(l.Loader)
		r.builders = append(r.builders, b)
		stack, err := r.baseServices(ctx, b, globals)
		if err != nil {
			return nil, err
		}
		env, err := b.LoadEnvironment(ctx, l.Environment, nil, globals, nil, stack, nil)
		if err != nil {
			return nil, err
		}
		r.Runners = append(r.Runners, &schedulers.TrialRunner{ID: id, Env: env})
	}

	if r.Tunables, err = r.initialTunables(); err != nil {
		return nil, err
	}
	if r.Optimizer, err = r.buildOptimizer(); err != nil {
		return nil, err
	}
	schedCfg, err := r.schedulerConfig()
	if err != nil {
		return nil, err
	}
	r.ExperimentID = schedCfg.ExperimentID

	if r.Storage, err = OpenStorage(ctx, l.Loader, l.Storage, l.Globals, false); err != nil {
		return nil, err
	}
	info := storage.ExperimentInfo{
		ID:            r.ExperimentID,
		Description:   r.Runners[0].Env.Name(),
		RootEnvConfig: r.RootEnv,
		FirstTrialID:  schedCfg.TrialID,
	}
	g := <-gitDone
	info.GitRepo, info.GitCommit = g.repo, g.commit
	for _, t := range r.Optimizer.Targets() {
		info.Objectives = append(info.Objectives, storage.Objective{Name: t.Name, Direction: t.Direction()})
	}
	if r.Experiment, r.Resumed, err = r.Storage.Experiment(ctx, info); err != nil {
		return nil, err
	}
	r.Scheduler, err = schedulers.New(schedCfg, r.Runners, r.Optimizer, r.Experiment, l.Globals,
		schedulers.Options{Observer: o.Observer, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// baseServices builds the LocalExecService every stack starts with, then
// the services of the CLI config and --service, in order.
func (r *Run) baseServices(ctx context.Context, b *environments.Builder, globals map[string]any) (*services.Stack, error) {
	local, err := services.New(ctx, services.Spec{Class: localExecClass, Config: map[string]any{}, Globals: globals, SearchPath: r.Launch.Loader.Paths()})
	if err != nil {
		return nil, err
	}
	base := services.NewStack(local)
	r.bases = append(r.bases, base)
	return b.LoadServices(ctx, r.Launch.Services, globals, base)
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
			return nil, err
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
		return nil, err
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
			return nil, err
		}
		spec.Tunables = tun
	}
	return optimizers.New(spec)
}

// schedulerConfig reads the scheduler config (default: the synchronous
// scheduler) with the globals merged in.
func (r *Run) schedulerConfig() (schedulers.Config, error) {
	l := r.Launch
	cfg := map[string]any{
		"experiment_id":             defaultExperimentID(r.Runners[0].Env.Name(), r.RootEnv),
		"trial_id":                  int64(1),
		"config_id":                 int64(-1),
		"trial_config_repeat_count": int64(1),
		"max_trials":                int64(-1),
		"teardown":                  l.Teardown,
	}
	ref := source.Ref{}
	if l.Scheduler != "" {
		doc, err := l.Loader.Load(l.Scheduler, configs.KindScheduler)
		if err != nil {
			return schedulers.Config{}, err
		}
		class := doc.Root.Get("class").Str
		if !strings.HasSuffix(class, "SyncScheduler") {
			return schedulers.Config{}, doc.Errorf([]string{"class"}, "unknown scheduler class %q (bench has mlos_bench.schedulers.SyncScheduler)", class)
		}
		ref = doc.At()
		fileCfg, _ := doc.Root.Get("config").Value().(map[string]any)
		maps.Copy(cfg, fileCfg)
	}
	globals := maps.Clone(l.Globals)
	delete(globals, "teardown")
	if err := configs.MergeParameters(cfg, globals, nil, ""); err != nil {
		return schedulers.Config{}, err
	}
	cref := ref.Child("config")
	out := schedulers.Config{}
	var ok bool
	if out.ExperimentID, ok = cfg["experiment_id"].(string); !ok || !experimentIDRe.MatchString(strings.TrimSpace(out.ExperimentID)) {
		return out, cref.Child("experiment_id").Errorf("experiment_id %v is invalid: use letters, digits, '_', '.' and '-'", configs.PyStr(cfg["experiment_id"]))
	}
	out.ExperimentID = strings.TrimSpace(out.ExperimentID)
	ints := map[string]*int{"trial_id": &out.TrialID, "config_id": &out.ConfigID, "max_trials": &out.MaxTrials, "trial_config_repeat_count": &out.TrialConfigRepeatCount}
	for k, dst := range ints {
		v, ok := toInt(cfg[k])
		if !ok {
			return out, cref.Child(k).Errorf("%s must be an integer, got %v", k, configs.PyStr(cfg[k]))
		}
		*dst = v
	}
	if out.TrialConfigRepeatCount < 1 {
		return out, cref.Child("trial_config_repeat_count").Errorf("trial_config_repeat_count must be >= 1")
	}
	td, ok := cfg["teardown"].(bool)
	if !ok {
		return out, cref.Child("teardown").Errorf("teardown must be true or false")
	}
	// --no-teardown always wins over the scheduler config.
	out.Teardown = td && l.Teardown
	return out, nil
}

func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case int64:
		return int(x), true
	case float64:
		if x == float64(int(x)) {
			return int(x), true
		}
	case string:
		if i, err := strconv.Atoi(strings.TrimSpace(x)); err == nil {
			return i, true
		}
	}
	return 0, false
}

// decodeStorage turns a storage "config" object into a storage.Config.
func decodeStorage(m map[string]any) (storage.Config, error) {
	var cfg storage.Config
	data, err := json.Marshal(m)
	if err != nil {
		return cfg, err
	}
	err = json.Unmarshal(data, &cfg)
	return cfg, err
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
	cfg := storage.DefaultConfig()
	if spec != "" {
		doc, err := loader.Load(spec, configs.KindStorage)
		if err != nil {
			return nil, err
		}
		class := doc.Root.Get("class").Str
		if !strings.HasSuffix(class, "SqlStorage") {
			return nil, doc.Errorf([]string{"class"}, "unknown storage class %q (bench has mlos_bench.storage.sql.storage.SqlStorage)", class)
		}
		m, _ := doc.Root.Get("config").Value().(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		if err := configs.MergeParameters(m, globals, nil, ""); err != nil {
			return nil, err
		}
		for _, key := range resolvePaths(doc.Root.Get("resolve_config_property_paths")) {
			if s, ok := m[key].(string); ok && key == "database" && s != ":memory:" {
				if p := loader.Resolve(s); !strings.HasPrefix(p, configs.BuiltinPrefix) {
					m[key] = p
				}
			}
		}
		if cfg, err = decodeStorage(m); err != nil {
			return nil, doc.Errorf([]string{"config"}, "%v", err)
		}
	}
	cfg.NoCreate = readOnly
	st, err := storage.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return st, nil
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
