package schedulers

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/decode"
	internalregistry "github.com/benchtune/bench/internal/registry"
	"github.com/benchtune/bench/trial"
)

// Class describes a scheduler class.
type Class struct {
	// Parallel runs up to num_trial_runners trials at once; otherwise one
	// trial runs at a time, on the runners in turn (mlos_bench's
	// SyncScheduler).
	Parallel bool
}

var registry = internalregistry.New[Class]("schedulers")

func init() {
	registry.Register(Class{Parallel: false},
		"mlos_bench.schedulers.SyncScheduler",
		"mlos_bench.schedulers.sync_scheduler.SyncScheduler",
		"bench.schedulers.SyncScheduler")
	registry.Register(Class{Parallel: true},
		"bench.schedulers.ParallelScheduler",
		"bench.schedulers.parallel_scheduler.ParallelScheduler")
}

// DefaultClass is the scheduler used when no scheduler config is given.
const DefaultClass = "bench.schedulers.ParallelScheduler"

// Classes lists the registered scheduler class names.
func Classes() []string { return registry.Names() }

// LookupClass returns the class registered under name.
func LookupClass(name string) (Class, bool) { return registry.Lookup(name) }

// Config is a scheduler's typed config: mlos_bench's keys, then bench's own.
type Config struct {
	Class        string
	Parallel     bool
	ExperimentID string
	// TrialID is the id of the first trial of a new experiment.
	TrialID int
	// ConfigID, when > 0, re-runs that stored configuration first.
	ConfigID               int
	Teardown               bool
	MaxTrials              int // <= 0: no limit
	TrialConfigRepeatCount int // >= 1
	// NumTrialRunners is the number of runners (num_trial_runners).
	NumTrialRunners int

	// MaxRetries retries a FAILED or TIMED_OUT trial up to this many times
	// (max_retries, default 0), preferably on another runner.
	MaxRetries int
	// MaxFailedTrials stops the experiment once this many trials failed for
	// good (max_failed_trials; 0: no limit).
	MaxFailedTrials int
	// FailFast stops the experiment when its first FailFast trials all
	// failed the same way (fail_fast, default 3; 0: off).
	FailFast int
	// Canary runs a new experiment's first trial alone before the other
	// runners start, and stops the experiment when it fails, so that a
	// broken config costs one trial (canary, default true; --no-canary
	// turns it off). It matters only with more than one trial at once.
	Canary bool
	// IdleTimeout stops a trial as TIMED_OUT when it printed nothing and
	// wrote no telemetry for this long (trial_idle_timeout; 0: off).
	IdleTimeout time.Duration
	// TelemetryInterval samples the CPU time and memory of a trial's
	// processes into its telemetry this often (telemetry_interval; 0: off;
	// see services.Sampler).
	TelemetryInterval time.Duration
	// Reuse reuses the result of a trial of the same configuration and
	// repeat that already SUCCEEDED in the experiment (reuse, default
	// true; --no-reuse turns it off).
	Reuse bool
	// ReuseFrom also reuses results of this other experiment when its
	// environment config and git commit match (reuse_from).
	ReuseFrom string
	// QueueAhead keeps this many extra trials queued for other processes
	// (bench worker) to claim (queue_ahead, default 0).
	QueueAhead int
	// Lease is how long a process's claim on its running trials lasts
	// without a heartbeat (trial_lease, default 30s).
	Lease time.Duration
	// Devices configures device slots (gpus, gpus_per_trial, cpu_slots,
	// cores_per_slot, pin_cores).
	GPUs         string
	GPUsPerTrial int
	CPUSlots     int
	CoresPerSlot int
	PinCores     bool
	// Cgroups runs each local runner's commands in a cgroup v2 group of its
	// own and reports each trial's CPU and peak memory from it (cgroups:
	// "off", the default, "auto": where possible, "on": required).
	Cgroups string
	// DriverOnly runs no trial in this process: the driver only suggests,
	// for bench worker processes and network workers to run (local_trials
	// false, --no-local-trials).
	DriverOnly bool
	// Engine runs the trials on an execution engine (engine: the path of
	// an engine config, or the config object itself; nil: in this
	// process). See the engines package.
	Engine any
	// Runner picks the trial runners (runner): "local" (default: the
	// environment runs in this process, or on Engine) or "passive" (a
	// person runs each trial by hand and bench waits for the result: see
	// runners/passive).
	Runner string
	// PassiveCommand is the command shown with each trial of the passive
	// runner, its $tunables filled in (passive_command; display only,
	// never run).
	PassiveCommand string
	// PassivePrompt says whether the passive runner reads results typed
	// on stdin (passive_prompt): "auto" (default: when stdin is a
	// terminal), "true" or "false".
	PassivePrompt string
	// Noise holds the stopping rules and the settings for noisy
	// benchmarks (noise.go).
	Noise NoiseConfig
	// Pruner is early stopping (pruner; bench only; prune.go).
	Pruner PrunerConfig
	// Fidelity is multi-fidelity scheduling (fidelity; bench only;
	// fidelity.go).
	Fidelity FidelityConfig
}

// Runner kinds (Config.Runner, and RunnerKind).
const (
	RunnerLocal   = "local"
	RunnerPassive = "passive"
	// RunnerEngine is the kind of runners whose trials run as jobs of an
	// execution engine (Config.Engine set); not a value of "runner".
	RunnerEngine = "engine"
)

// RunnerKind is the one choice of what runs this config's trials:
// RunnerPassive (runner "passive": a person), RunnerEngine (an engine
// config: jobs whose far side is bench exec-trial), else RunnerLocal (the
// environment in this process). The config check makes passive and engine
// exclusive. Network workers (bench serve) are chosen by the workers that
// connect, not by this config.
func (c Config) RunnerKind() string {
	switch {
	case c.Runner == RunnerPassive:
		return RunnerPassive
	case c.Engine != nil:
		return RunnerEngine
	}
	return RunnerLocal
}

// defaults are the config keys with their defaults; globals override the
// keys present here (mlos_bench's rule: globals reach keys a config has).
func defaults(experimentID string, teardown bool) map[string]any {
	return map[string]any{
		"experiment_id":             experimentID,
		"trial_id":                  int64(1),
		"config_id":                 int64(-1),
		"trial_config_repeat_count": int64(1),
		"max_trials":                int64(-1),
		"teardown":                  teardown,
		"num_trial_runners":         int64(1),
		"max_retries":               int64(0),
		"max_failed_trials":         int64(0),
		"fail_fast":                 int64(3),
		"canary":                    true,
		"trial_idle_timeout":        int64(0),
		"telemetry_interval":        int64(0),
		"reuse":                     true,
		"reuse_from":                "",
		"queue_ahead":               int64(0),
		"trial_lease":               "30s",
		"gpus":                      "",
		"gpus_per_trial":            int64(1),
		"cpu_slots":                 int64(0),
		"cores_per_slot":            int64(0),
		"pin_cores":                 false,
		"engine":                    "",
		"local_trials":              true,
		"cgroups":                   "off",
		"runner":                    RunnerLocal,
		"passive_command":           "",
		"passive_prompt":            "auto",
	}
}

var experimentIDRe = regexp.MustCompile(`^[a-zA-Z0-9_.-]+$`)

// DecodeConfig turns a scheduler config (class and "config" object, from
// the file ref points at; empty class: the default scheduler) merged with
// the globals into a typed Config. Errors name the key and, where there is
// one, the file, line and column.
func DecodeConfig(class string, fileCfg map[string]any, globals map[string]any, ref source.Ref, defaultExperimentID string, teardown bool) (Config, error) {
	if class == "" {
		class = DefaultClass
	}
	cl, ok := registry.Lookup(class)
	if !ok {
		return Config{}, ref.Child("class").Errorf("unknown scheduler class %q; known classes: %s", class, strings.Join(Classes(), ", "))
	}
	cfg := withFidelityDefaults(withPruneDefaults(withNoiseDefaults(defaults(defaultExperimentID, teardown))))
	maps.Copy(cfg, fileCfg)
	g := maps.Clone(globals)
	delete(g, "teardown") // --no-teardown is applied below, never by a global
	if err := configs.MergeParameters(cfg, g, nil, ""); err != nil {
		return Config{}, err
	}
	cref := ref.Child("config")
	out := Config{Class: class, Parallel: cl.Parallel}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, cref.Child(key).Errorf(format, args...))
	}
	id, isStr := cfg["experiment_id"].(string)
	out.ExperimentID = strings.TrimSpace(id)
	if !isStr || !experimentIDRe.MatchString(out.ExperimentID) {
		bad("experiment_id", "experiment_id %v is invalid: use letters, digits, '_', '.' and '-'", configs.PyStr(cfg["experiment_id"]))
	}
	ints := []struct {
		key string
		dst *int
		min int
	}{
		{"trial_id", &out.TrialID, math.MinInt},
		{"config_id", &out.ConfigID, math.MinInt},
		{"max_trials", &out.MaxTrials, math.MinInt},
		{"trial_config_repeat_count", &out.TrialConfigRepeatCount, 1},
		{"num_trial_runners", &out.NumTrialRunners, 1},
		{"max_retries", &out.MaxRetries, 0},
		{"max_failed_trials", &out.MaxFailedTrials, 0},
		{"fail_fast", &out.FailFast, 0},
		{"queue_ahead", &out.QueueAhead, 0},
		{"gpus_per_trial", &out.GPUsPerTrial, 1},
		{"cpu_slots", &out.CPUSlots, 0},
		{"cores_per_slot", &out.CoresPerSlot, 0},
	}
	for _, it := range ints {
		v, ok := toInt(cfg[it.key])
		switch {
		case !ok:
			bad(it.key, "%s must be an integer, got %v", it.key, configs.PyStr(cfg[it.key]))
		case v < it.min:
			bad(it.key, "%s must be >= %d, got %d", it.key, it.min, v)
		default:
			*it.dst = v
		}
	}
	localTrials := true
	bools := []struct {
		key string
		dst *bool
	}{{"teardown", &out.Teardown}, {"reuse", &out.Reuse}, {"pin_cores", &out.PinCores}, {"local_trials", &localTrials}, {"canary", &out.Canary}}
	for _, it := range bools {
		v, ok := toBool(cfg[it.key])
		if !ok {
			bad(it.key, "%s must be true or false, got %v", it.key, configs.PyStr(cfg[it.key]))
		}
		*it.dst = v
	}
	out.DriverOnly = !localTrials
	// --no-teardown always wins over the scheduler config.
	out.Teardown = out.Teardown && teardown
	durs := []struct {
		key string
		dst *time.Duration
	}{{"trial_idle_timeout", &out.IdleTimeout}, {"trial_lease", &out.Lease}, {"telemetry_interval", &out.TelemetryInterval}}
	for _, it := range durs {
		d, err := toDuration(cfg[it.key])
		if err != nil {
			bad(it.key, "%s: %v", it.key, err)
		}
		*it.dst = d
	}
	if out.Lease < time.Second/10 {
		bad("trial_lease", "trial_lease must be at least 0.1s, got %s", out.Lease)
	}
	out.ReuseFrom, _ = cfg["reuse_from"].(string)
	if out.ReuseFrom != "" && !experimentIDRe.MatchString(out.ReuseFrom) {
		bad("reuse_from", "reuse_from %q is not an experiment id", out.ReuseFrom)
	}
	if v := cfg["gpus"]; v != nil {
		out.GPUs = strings.TrimSpace(configs.PyStr(v))
	}
	// off, auto or on; a boolean by decode.Bool's rule ("yes", "false",
	// 1 ...) is on or off.
	switch on, isBool := decode.Bool(cfg["cgroups"]); {
	case isBool && on:
		out.Cgroups = "on"
	case isBool:
		out.Cgroups = "off"
	default:
		switch v := strings.ToLower(strings.TrimSpace(configs.PyStr(cfg["cgroups"]))); v {
		case "none":
			out.Cgroups = "off"
		case "auto":
			out.Cgroups = "auto"
		default:
			bad("cgroups", "cgroups must be off, auto or on, got %v", configs.PyStr(cfg["cgroups"]))
		}
	}
	switch e := cfg["engine"].(type) {
	case string:
		if strings.TrimSpace(e) != "" {
			out.Engine = strings.TrimSpace(e)
		}
	case map[string]any:
		out.Engine = e
	case nil:
	default:
		bad("engine", "engine must be the path of an engine config or an engine config object, got %v", configs.PyStr(e))
	}
	rv, isStr := cfg["runner"].(string)
	if cfg["runner"] == nil {
		isStr = true
	}
	switch r := strings.ToLower(strings.TrimSpace(rv)); {
	case !isStr:
		bad("runner", "runner must be %q or %q, got %v", RunnerLocal, RunnerPassive, configs.PyStr(cfg["runner"]))
	case r == "" || r == RunnerLocal:
		out.Runner = RunnerLocal
	case r == RunnerPassive:
		out.Runner = RunnerPassive
		if out.Engine != nil {
			bad("runner", "runner %q and engine exclude each other: a passive trial is run by a person, not by an execution engine", r)
		}
	default:
		bad("runner", "runner must be %q or %q, got %v", RunnerLocal, RunnerPassive, configs.PyStr(cfg["runner"]))
	}
	if v, ok := cfg["passive_command"].(string); ok {
		out.PassiveCommand = strings.TrimSpace(v)
	} else if cfg["passive_command"] != nil {
		bad("passive_command", "passive_command must be a string (a command line with $tunable names), got %v", configs.PyStr(cfg["passive_command"]))
	}
	switch p := cfg["passive_prompt"].(type) {
	case bool:
		out.PassivePrompt = strconv.FormatBool(p)
	case string:
		if strings.EqualFold(strings.TrimSpace(p), "auto") || strings.TrimSpace(p) == "" {
			out.PassivePrompt = "auto"
		} else if b, ok := toBool(p); ok {
			out.PassivePrompt = strconv.FormatBool(b)
		} else {
			bad("passive_prompt", "passive_prompt must be true, false or \"auto\", got %q", p)
		}
	default:
		bad("passive_prompt", "passive_prompt must be true, false or \"auto\", got %v", configs.PyStr(p))
	}
	out.Noise = decodeNoise(cfg, bad)
	out.Pruner = decodePruner(cfg, bad) // prune.go
	// fidelity_config.go
	errs = append(errs, decodeFidelity(cfg, globals, cref, &out)...)
	if len(errs) > 0 {
		return out, errs[0]
	}
	return out, nil
}

// toInt reads an integer config value (decode.Int: a JSON integer, an
// integral float or a string holding one, as globals from files and the
// command line are).
func toInt(v any) (int, bool) {
	n, ok := decode.Int(v)
	return int(n), ok
}

// toBool reads a boolean config value (decode.Bool).
func toBool(v any) (bool, bool) { return decode.Bool(v) }

// toDuration reads a duration config value (decode.DurationOf).
func toDuration(v any) (time.Duration, error) {
	switch v.(type) {
	case nil, int64, int, float64, string:
		return decode.DurationOf(v)
	}
	return 0, fmt.Errorf("want seconds or a duration like \"90s\", got %v", configs.PyStr(v))
}

// budget is the config's trial budget (trial.Budget).
func (c Config) budget() trial.Budget {
	return trial.Budget{Repeats: c.TrialConfigRepeatCount, MaxTrials: c.MaxTrials}
}
