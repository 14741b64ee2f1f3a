package configs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/safeio"
)

// Args are the launcher options of `bench run` (mlos_bench's command line),
// as parsed by ParseArgs.
type Args struct {
	// Argv is the command line as given (bench exec-trial's requests carry
	// it, secrets left out).
	Argv                          []string
	Config                        string
	LogFile                       string
	LogLevel                      string
	ConfigPaths                   []string
	Services                      []string
	Environment                   string
	Optimizer                     string
	Scheduler                     string
	Storage                       string
	TrialConfigRepeatCount        *int64
	NumTrialRunners               *int64
	RandomInit                    bool
	RandomSeed                    *int64
	TunableValues                 []string
	Globals                       []string
	Teardown                      *bool // set to false by --no-teardown
	ExperimentID                  string
	CreateUpdateStorageSchemaOnly bool

	// Own options of bench (not in mlos_bench).
	Format     string // "text" (default) or "json" for the final summary
	NoProgress bool
	Help       bool

	// Options holds the globals set by bench's own options (--gpus,
	// --no-reuse, ...), in order; they override every other global.
	Options []KeyValue

	// Extra holds the other --key value / --key=value pairs, in order; they
	// become globals (dashes in keys turned into underscores).
	Extra []KeyValue
}

// KeyValue is one extra command-line global.
type KeyValue struct {
	Key   string
	Value any
}

// UsageError is a problem with the command line (exit code 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

type optKind int

const (
	optString optKind = iota
	optList
	optInt
	optFlag
)

// Option is one launcher option.
type Option struct {
	names []string
	kind  optKind
	dest  string
	help  string
	meta  string
	// global, when set, makes the option set that global (bench's own
	// options for settings that configs can also give as globals); a flag
	// sets it to flagValue.
	global    string
	flagValue any
}

// Names returns the option's spellings.
func (o Option) Names() []string { return append([]string(nil), o.names...) }

// Meta names the option's value in help text ("" for flags).
func (o Option) Meta() string { return o.meta }

// Help describes the option.
func (o Option) Help() string { return o.help }

// IsList reports whether the option takes one or more values.
func (o Option) IsList() bool { return o.kind == optList }

// Options lists the launcher options in help order.
var Options = []Option{
	{names: []string{"--config"}, kind: optString, dest: "config", meta: "FILE", help: "main JSON5 config file; its keys are the option names below, and options given on the command line override them"},
	{names: []string{"--log_file", "--log-file"}, kind: optString, dest: "log_file", meta: "FILE", help: "also write the log to this file"},
	{names: []string{"--log_level", "--log-level"}, kind: optString, dest: "log_level", meta: "LEVEL", help: "CRITICAL, ERROR, WARNING, INFO (default) or DEBUG, or a number"},
	{names: []string{"--config_path", "--config-path", "--config-paths", "--config_paths"}, kind: optList, dest: "config_path", meta: "DIR", help: "folders to search for config files and scripts (after the working folder, before the built-in configs)"},
	{names: []string{"--service", "--services"}, kind: optList, dest: "service", meta: "FILE", help: "service config files, after the config's \"services\"; later ones override earlier ones"},
	{names: []string{"--environment"}, kind: optString, dest: "environment", meta: "FILE", help: "the environment config (required here or in --config)"},
	{names: []string{"--optimizer"}, kind: optString, dest: "optimizer", meta: "FILE", help: "optimizer config; without it, one trial of the default (or --tunable_values) configuration runs"},
	{names: []string{"--trial_config_repeat_count", "--trial-config-repeat-count"}, kind: optInt, dest: "trial_config_repeat_count", meta: "N", help: "run each configuration N times (default 1)"},
	{names: []string{"--num_trial_runners", "--num-trial-runners"}, kind: optInt, dest: "num_trial_runners", meta: "N", help: "number of trial runners (default 1); each sees its own $trial_runner_id"},
	{names: []string{"--scheduler"}, kind: optString, dest: "scheduler", meta: "FILE", help: "scheduler config (default: bench's parallel scheduler, which runs up to num_trial_runners trials at once; mlos_bench.schedulers.SyncScheduler runs one at a time)"},
	{names: []string{"--storage"}, kind: optString, dest: "storage", meta: "FILE", help: "storage config (default: SQLite file bench.sqlite in the working folder, so a rerun resumes)"},
	{names: []string{"--random_init", "--random-init"}, kind: optFlag, dest: "random_init", help: "start from random tunable values (before --tunable_values)"},
	{names: []string{"--random_seed", "--random-seed"}, kind: optInt, dest: "random_seed", meta: "N", help: "seed for --random_init"},
	{names: []string{"--tunable_values", "--tunable-values"}, kind: optList, dest: "tunable_values", meta: "FILE", help: "tunable values files applied to the initial configuration"},
	{names: []string{"--globals"}, kind: optList, dest: "globals", meta: "FILE", help: "globals files (experiment settings, secrets); later files override earlier ones"},
	{names: []string{"--no_teardown", "--no-teardown"}, kind: optFlag, dest: "no_teardown", help: "leave the environment set up after the experiment"},
	{names: []string{"--experiment_id", "--experiment-id"}, kind: optString, dest: "experiment_id", meta: "ID", help: "experiment id; rerunning the same id resumes it (change it when the benchmark changes incompatibly)"},
	{names: []string{"--create-update-storage-schema-only", "--create_update_storage_schema_only"}, kind: optFlag, dest: "create_update_storage_schema_only", help: "create or migrate the storage schema, then exit"},
	{names: []string{"--format"}, kind: optString, dest: "format", meta: "text|json", help: "format of the final summary on stdout (bench only)"},
	{names: []string{"--no-progress", "--no_progress"}, kind: optFlag, dest: "no_progress", help: "plain log lines instead of a progress bar (bench only)"},
	{names: []string{"--gpus"}, kind: optString, global: "gpus", meta: "LIST", help: "GPU device slots: ids like 0,1,3, or all (detected with nvidia-smi); each trial gets one GPU in CUDA_VISIBLE_DEVICES and $gpu_id (bench only)"},
	{names: []string{"--max_retries", "--max-retries"}, kind: optInt, global: "max_retries", meta: "N", help: "retry a FAILED or TIMED_OUT trial up to N times, preferably on another runner (bench only; default 0)"},
	{names: []string{"--max_failed_trials", "--max-failed-trials"}, kind: optInt, global: "max_failed_trials", meta: "N", help: "stop the experiment once N trials failed (bench only; default: no limit)"},
	{names: []string{"--fail_fast", "--fail-fast"}, kind: optInt, global: "fail_fast", meta: "N", help: "stop early when the first N trials all fail the same way (bench only; default 3, 0 turns it off)"},
	{names: []string{"--telemetry_interval", "--telemetry-interval"}, kind: optString, global: "telemetry_interval", meta: "DURATION", help: "sample the CPU time and memory of a trial's processes into its telemetry this often, e.g. 1s (bench.cpu_s, bench.rss_mb; default off)"},
	{names: []string{"--trial_idle_timeout", "--trial-idle-timeout"}, kind: optString, global: "trial_idle_timeout", meta: "DURATION", help: "stop a trial as TIMED_OUT when it prints nothing and writes no telemetry for this long, e.g. 10m (bench only; default off)"},
	{names: []string{"--no_canary", "--no-canary"}, kind: optFlag, global: "canary", flagValue: false, help: "start every runner with the first trials of a new experiment, instead of running its first trial alone before the others start (bench only)"},
	{names: []string{"--no_reuse", "--no-reuse"}, kind: optFlag, global: "reuse", flagValue: false, help: "always run a trial, even when an identical one (same configuration and repeat) already succeeded in the experiment (bench only)"},
	{names: []string{"--reuse_from", "--reuse-from"}, kind: optString, global: "reuse_from", meta: "EXPERIMENT", help: "also reuse results of identical trials of this experiment, when its environment config and git commit match (bench only)"},
	{names: []string{"--engine"}, kind: optString, global: "engine", meta: "FILE", help: "run the trials on an execution engine: an engine config (Slurm, AWS Batch, an SSH host pool, detached local processes); see docs/engines.md (bench only)"},
	{names: []string{"--cgroups"}, kind: optString, global: "cgroups", meta: "off|auto|on", help: "run each runner's commands in a cgroup v2 group and report each trial's CPU and peak memory of the whole process tree as bench.cgroup.* results (bench only; default off)"},
	{names: []string{"--no_local_trials", "--no-local-trials"}, kind: optFlag, global: "local_trials", flagValue: false, help: "run no trial in this process: only suggest, for bench worker processes and network workers (bench only)"},
	{names: []string{"--serve"}, kind: optString, global: "serve_listen", meta: "ADDR", help: "also serve the experiment to network workers (bench worker --connect) on ADDR, e.g. :7070; needs --token-file (bench only)"},
	{names: []string{"--token_file", "--token-file"}, kind: optString, global: "serve_token_file", meta: "FILE", help: "access token file (or env:NAME) of --serve, bench serve and bench worker --connect (bench only)"},
	{names: []string{"--tls_cert", "--tls-cert"}, kind: optString, global: "serve_tls_cert", meta: "FILE", help: "serve over TLS with this certificate (PEM), with --tls-key (bench only)"},
	{names: []string{"--tls_key", "--tls-key"}, kind: optString, global: "serve_tls_key", meta: "FILE", help: "the TLS certificate's key (PEM) (bench only)"},
	{names: []string{"--ui"}, kind: optString, global: "ui_listen", meta: "ADDR", help: "also serve the experiment's live dashboard (as bench ui) on ADDR, e.g. 127.0.0.1:8421 (bench only)"},
	{names: []string{"--ui_actions", "--ui-actions"}, kind: optFlag, global: "ui_actions", flagValue: true, help: "let --ui's dashboard stop trials and the experiment (off the loopback, with --token-file's token) (bench only)"},
	{names: []string{"--passive"}, kind: optFlag, global: "runner", flagValue: "passive", help: "run every trial by hand: bench shows each trial's configuration (and passive_command, filled in) and waits for its result, typed at the prompt or given with bench submit; see docs/passive.md (bench only)"},
	{names: []string{"--config_id", "--config-id"}, kind: optInt, global: "config_id", meta: "N", help: "re-run the stored configuration N of the experiment, as mlos_bench does (its stored result is not reused)"},
	{names: []string{"--max_config_file_size", "--max-config-file-size"}, kind: optString, global: MaxConfigFileSizeKey, meta: "SIZE", help: "read config files up to SIZE, e.g. 64MiB (bench only; default 16MiB)"},
	{names: []string{"--max_results_file_size", "--max-results-file-size"}, kind: optString, global: "max_results_file_size", meta: "SIZE", help: "read results and telemetry files up to SIZE, e.g. 256MiB (bench only; default 64MiB)"},
	{names: []string{"--help", "-h"}, kind: optFlag, dest: "help", help: "show this help"},
}

func findOption(name string) *Option {
	for i := range Options {
		for _, n := range Options[i].names {
			if n == name {
				return &Options[i]
			}
		}
	}
	return nil
}

// looksLikeValue reports whether an argument is a value rather than an
// option: it does not start with '-', or it is a negative number.
func looksLikeValue(a string) bool {
	if !strings.HasPrefix(a, "-") || a == "-" {
		return true
	}
	_, ok := pyParseFloat(a)
	return ok
}

// ParseArgs parses launcher options the way mlos_bench's argparse setup
// does: both spellings of every option, "--opt value" and "--opt=value",
// list options taking one or more values (repeatable, extending), and any
// other "--key value" or "--key=value" kept as an extra global.
func ParseArgs(argv []string) (*Args, error) {
	a := &Args{Argv: append([]string(nil), argv...)}
	var extra []string
	for i := 0; i < len(argv); i++ {
		arg := argv[i]
		name, inline, hasInline := strings.Cut(arg, "=")
		if !strings.HasPrefix(arg, "-") || looksLikeValue(arg) {
			extra = append(extra, arg)
			continue
		}
		opt := findOption(name)
		if opt == nil {
			extra = append(extra, arg)
			continue
		}
		var values []string
		switch opt.kind {
		case optFlag:
			if hasInline {
				return nil, usagef("option %s takes no value", name)
			}
		case optString, optInt:
			if hasInline {
				values = []string{inline}
			} else {
				if i+1 >= len(argv) || !looksLikeValue(argv[i+1]) {
					return nil, usagef("option %s needs a value", name)
				}
				i++
				values = []string{argv[i]}
			}
		case optList:
			if hasInline {
				values = []string{inline}
			}
			for i+1 < len(argv) && looksLikeValue(argv[i+1]) {
				i++
				values = append(values, argv[i])
			}
			if len(values) == 0 {
				return nil, usagef("option %s needs at least one value", name)
			}
		}
		if err := a.set(opt, name, values); err != nil {
			return nil, err
		}
	}
	kvs, err := parseExtra(extra)
	if err != nil {
		return nil, err
	}
	a.Extra = kvs
	return a, nil
}

func (a *Args) set(opt *Option, name string, values []string) error {
	if opt.global != "" {
		var v any = opt.flagValue
		if len(values) > 0 {
			v = values[0]
		}
		if opt.kind == optInt {
			n, err := strconv.ParseInt(strings.TrimSpace(values[0]), 10, 64)
			if err != nil {
				return usagef("option %s needs an integer, got %q", name, values[0])
			}
			v = n
		}
		a.Options = append(a.Options, KeyValue{Key: opt.global, Value: v})
		return nil
	}
	var n int64
	if opt.kind == optInt {
		v, err := strconv.ParseInt(strings.TrimSpace(values[0]), 10, 64)
		if err != nil {
			return usagef("option %s needs an integer, got %q", name, values[0])
		}
		n = v
	}
	switch opt.dest {
	case "config":
		a.Config = values[0]
	case "log_file":
		a.LogFile = values[0]
	case "log_level":
		a.LogLevel = values[0]
	case "config_path":
		a.ConfigPaths = append(a.ConfigPaths, values...)
	case "service":
		a.Services = append(a.Services, values...)
	case "environment":
		a.Environment = values[0]
	case "optimizer":
		a.Optimizer = values[0]
	case "scheduler":
		a.Scheduler = values[0]
	case "storage":
		a.Storage = values[0]
	case "trial_config_repeat_count":
		a.TrialConfigRepeatCount = &n
	case "num_trial_runners":
		a.NumTrialRunners = &n
	case "random_init":
		a.RandomInit = true
	case "random_seed":
		a.RandomSeed = &n
	case "tunable_values":
		a.TunableValues = append(a.TunableValues, values...)
	case "globals":
		a.Globals = append(a.Globals, values...)
	case "no_teardown":
		f := false
		a.Teardown = &f
	case "experiment_id":
		a.ExperimentID = values[0]
	case "create_update_storage_schema_only":
		a.CreateUpdateStorageSchemaOnly = true
	case "format":
		if values[0] != "text" && values[0] != "json" {
			return usagef("option --format must be text or json, got %q", values[0])
		}
		a.Format = values[0]
	case "no_progress":
		a.NoProgress = true
	case "help":
		a.Help = true
	}
	return nil
}

// parseExtra turns leftover arguments into globals like mlos_bench's
// _try_parse_extra_args: "--key value" or "--key=value"; a key without a
// value or a value without a key is an error.
func parseExtra(args []string) ([]KeyValue, error) {
	var out []KeyValue
	key := ""
	haveKey := false
	for _, a := range args {
		if strings.HasPrefix(a, "--") && !(haveKey && looksLikeValue(a)) {
			if haveKey {
				return nil, usagef("command line argument --%s has no value", key)
			}
			k, v, ok := strings.Cut(a[2:], "=")
			if ok {
				out = append(out, KeyValue{Key: normKey(k), Value: ParseScalar(v)})
				continue
			}
			key, haveKey = k, true
			continue
		}
		if !haveKey {
			if strings.HasPrefix(a, "-") && !looksLikeValue(a) {
				return nil, usagef("unknown option %s (globals are given as --name value)", a)
			}
			return nil, usagef("command line argument %q has no key (globals are given as --name value)", a)
		}
		out = append(out, KeyValue{Key: normKey(key), Value: ParseScalar(a)})
		haveKey = false
	}
	if haveKey {
		return nil, usagef("command line argument --%s has no value", key)
	}
	for _, kv := range out {
		if kv.Key == "" {
			return nil, usagef("command line argument with an empty name")
		}
	}
	return out, nil
}

func normKey(k string) string { return strings.ReplaceAll(strings.TrimSpace(k), "-", "_") }

// Launch is everything the command line and the CLI config file decide,
// with the globals merged in mlos_bench's order of precedence.
type Launch struct {
	Args   *Args
	Loader *Loader
	// CLIDoc is the --config document, if any.
	CLIDoc *source.Doc
	// Globals after merging and variable expansion; GlobalsOrder keeps the
	// insertion order of the keys.
	Globals      map[string]any
	GlobalsOrder []string
	// GlobalRefs tells where each global that came from a config file was
	// written (for error messages, and for the key order of object values
	// such as optimization_targets).
	GlobalRefs map[string]source.Ref
	// GlobalsDocs are the globals files read, in order.
	GlobalsDocs []*source.Doc
	// Secrets are the secret parameters and their values (the globals'
	// to start with; building the environments adds theirs). Everything
	// bench writes goes through it.
	Secrets *Secrets

	Services      []string // the config's "services", then --service
	Environment   string
	Optimizer     string
	Scheduler     string
	Storage       string
	TunableValues []string
	RandomInit    bool
	RandomSeed    *int64
	Teardown      bool
	LogLevel      string
	LogFile       string
}

// pathOptions are the CLI-config keys that name files or folders: they do
// not become globals (mlos_bench's path_args), and neither does teardown.
var pathOptions = map[string]bool{
	"config": true, "log_file": true, "config_path": true, "service": true, "environment": true,
	"optimizer": true, "scheduler": true, "storage": true, "tunable_values": true, "globals": true,
	"teardown": true,
	// argparse gives these flags a non-None default, so config-file values
	// never become globals.
	"random_init": true, "create_update_storage_schema_only": true,
}

// Prepare reads the CLI config file and globals files and computes the
// globals, in mlos_bench's order: CLI-config keys not given on the command
// line, then each globals file (the config's list, then --globals), then
// extra --key value arguments, then explicit --experiment_id,
// --trial_config_repeat_count and --num_trial_runners, then the defaults
// num_trial_runners=1 and trial_id=1; finally every string is expanded
// ($var from the globals themselves, then the process environment).
func Prepare(a *Args, validate ValidateFunc) (*Launch, error) {
	l := &Launch{Args: a}
	loader, err := NewLoader(validate, a.ConfigPaths...)
	if err != nil {
		return nil, err
	}
	// The config-file size limit must be known before the first config is
	// read: from the command line here, from the globals below.
	for _, kv := range append(append([]KeyValue(nil), a.Extra...), a.Options...) {
		if kv.Key == MaxConfigFileSizeKey {
			n, err := safeio.ParseSize(kv.Value)
			if err != nil {
				return nil, usagef("--%s: %v", MaxConfigFileSizeKey, err)
			}
			loader.SetMaxFileSize(n)
		}
	}
	cfg := map[string]any{}
	if a.Config != "" {
		doc, err := loader.Load(a.Config, KindCLI)
		if err != nil {
			return nil, err
		}
		if cfg, err = Object(doc); err != nil {
			return nil, err
		}
		l.CLIDoc = doc
		cfgPaths, err := stringList(doc, cfg, "config_path")
		if err != nil {
			return nil, err
		}
		// mlos_bench resolves a relative config_path against the working
		// folder. When nothing is there, bench also tries it against the
		// folders above the CLI config (bench only), so that the config
		// works from any folder.
		cliDir := ""
		if abs, err := filepath.Abs(doc.File); err == nil && !strings.HasPrefix(doc.File, BuiltinPrefix) {
			cliDir = filepath.Dir(abs)
		}
		for i, p := range cfgPaths {
			if filepath.IsAbs(p) || cliDir == "" {
				continue
			}
			if _, err := os.Stat(p); err == nil {
				continue
			}
			for dir := cliDir; ; dir = filepath.Dir(dir) {
				if fi, err := os.Stat(filepath.Join(dir, p)); err == nil && fi.IsDir() {
					cfgPaths[i] = filepath.Join(dir, p)
					break
				}
				if filepath.Dir(dir) == dir {
					break
				}
			}
		}
		if loader, err = loader.WithPaths(cfgPaths...); err != nil {
			return nil, err
		}
		if cliDir != "" {
			loader = loader.WithFallback(cliDir)
		}
	}
	l.Loader = loader

	given := map[string]bool{
		"log_level":                 a.LogLevel != "",
		"trial_config_repeat_count": a.TrialConfigRepeatCount != nil,
		"num_trial_runners":         a.NumTrialRunners != nil,
		"random_seed":               a.RandomSeed != nil,
		"experiment_id":             a.ExperimentID != "",
	}
	globals := NewOrdered()
	l.GlobalRefs = map[string]source.Ref{}
	if l.CLIDoc != nil {
		for _, k := range l.CLIDoc.Root.Keys() {
			if k == "$schema" || pathOptions[k] || given[k] {
				continue
			}
			globals.Set(k, cfg[k])
			l.GlobalRefs[k] = l.CLIDoc.At(k)
		}
	}
	globalFiles, err := stringList(l.CLIDoc, cfg, "globals")
	if err != nil {
		return nil, err
	}
	for _, f := range append(globalFiles, a.Globals...) {
		doc, err := loader.Load(f, KindGlobals)
		if err != nil {
			return nil, l.LocateNotFound(err, "globals")
		}
		m, err := Object(doc)
		if err != nil {
			return nil, err
		}
		l.GlobalsDocs = append(l.GlobalsDocs, doc)
		for _, k := range doc.Root.Keys() {
			if k != "$schema" {
				globals.Set(k, m[k])
				l.GlobalRefs[k] = doc.At(k)
			}
		}
	}
	for _, kv := range append(append([]KeyValue(nil), a.Extra...), a.Options...) {
		globals.Set(kv.Key, kv.Value)
		delete(l.GlobalRefs, kv.Key)
	}
	cfgPaths, _ := stringList(l.CLIDoc, cfg, "config_path")
	if allPaths := append(append([]string(nil), a.ConfigPaths...), cfgPaths...); len(allPaths) > 0 {
		list := make([]any, len(allPaths))
		for i, p := range allPaths {
			list[i] = p
		}
		globals.Set("config_path", list)
	}
	if a.ExperimentID != "" {
		globals.Set("experiment_id", a.ExperimentID)
	}
	if a.TrialConfigRepeatCount != nil {
		globals.Set("trial_config_repeat_count", *a.TrialConfigRepeatCount)
	}
	globals.SetDefault("num_trial_runners", int64(1))
	if a.NumTrialRunners != nil {
		globals.Set("num_trial_runners", *a.NumTrialRunners)
	}
	if n, _ := globals.Get("num_trial_runners"); !isPositiveInt(n) {
		if ref, ok := l.GlobalRefs["num_trial_runners"]; ok && a.NumTrialRunners == nil {
			return nil, ref.Errorf("invalid num_trial_runners %v: it must be an integer >= 1", PyStr(n))
		}
		return nil, usagef("invalid num_trial_runners %v: it must be an integer >= 1", PyStr(n))
	}
	globals.SetDefault("trial_id", int64(1))
	ExpandOrdered(globals, EnvLookup)
	if v, ok := globals.Get(MaxConfigFileSizeKey); ok && v != nil {
		n, err := safeio.ParseSize(v)
		if err != nil {
			return nil, usagef("global %s: %v", MaxConfigFileSizeKey, err)
		}
		l.Loader.SetMaxFileSize(n)
	}
	l.Globals = globals.Map()
	l.GlobalsOrder = globals.Keys()
	l.Secrets = NewSecrets()
	if err := l.Secrets.AddParams(l.Globals); err != nil {
		if ref, ok := l.GlobalRefs[SecretParamsKey]; ok {
			return nil, ref.Errorf("%v", err)
		}
		return nil, usagef("%v", err)
	}

	if l.Services, err = stringList(l.CLIDoc, cfg, "services"); err != nil {
		return nil, err
	}
	l.Services = append(l.Services, a.Services...)
	l.Environment = firstNonEmpty(a.Environment, str(cfg["environment"]))
	l.Optimizer = firstNonEmpty(a.Optimizer, str(cfg["optimizer"]))
	l.Scheduler = firstNonEmpty(a.Scheduler, str(cfg["scheduler"]))
	l.Storage = firstNonEmpty(a.Storage, str(cfg["storage"]))
	if l.TunableValues, err = stringList(l.CLIDoc, cfg, "tunable_values"); err != nil {
		return nil, err
	}
	l.TunableValues = append(l.TunableValues, a.TunableValues...)
	l.RandomInit = a.RandomInit || cfg["random_init"] == true
	l.RandomSeed = a.RandomSeed
	if l.RandomSeed == nil {
		if s, ok := cfg["random_seed"]; ok && s != nil {
			v, ok := toInt64(s)
			if !ok {
				return nil, l.CLIDoc.Errorf([]string{"random_seed"}, "random_seed must be an integer")
			}
			l.RandomSeed = &v
		}
	}
	l.Teardown = true
	if a.Teardown != nil {
		l.Teardown = *a.Teardown
	} else if t, ok := cfg["teardown"].(bool); ok {
		l.Teardown = t
	}
	l.LogLevel = firstNonEmpty(a.LogLevel, logLevelString(cfg["log_level"]))
	l.LogFile = firstNonEmpty(a.LogFile, str(cfg["log_file"]))
	return l, nil
}

func logLevelString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return PyFloat(x)
	}
	return ""
}

func isPositiveInt(v any) bool {
	n, ok := toInt64(v)
	return ok && n >= 1
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case string:
		if n, ok := pyParseInt(x); ok {
			return n, true
		}
	}
	return 0, false
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// stringList reads a key that may be a string or a list of strings.
// LocateNotFound re-locates a missing-file error at the value of key in
// the CLI config (--config) that names the file, when it came from there
// (a string, or an entry of a list of strings). Other errors are returned
// unchanged.
func (l *Launch) LocateNotFound(err error, key string) error {
	if l == nil || l.CLIDoc == nil {
		return err
	}
	return relocate(err, func(spec string) (source.Ref, bool) {
		n := l.CLIDoc.Root.Get(key)
		switch {
		case n == nil:
		case n.Kind == json5.String && n.Str == spec:
			return l.CLIDoc.At(key), true
		case n.Kind == json5.Array:
			for i, e := range n.Elems {
				if e.Kind == json5.String && e.Str == spec {
					return l.CLIDoc.At(key).Index(i), true
				}
			}
		}
		return source.Ref{}, false
	})
}

func stringList(doc *source.Doc, m map[string]any, key string) ([]string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, 0, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, doc.Errorf([]string{key, strconv.Itoa(i)}, "expected a string")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, doc.Errorf([]string{key}, "expected a string or a list of strings")
}

// IsUsage reports whether err is a command-line usage problem.
func IsUsage(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue)
}
