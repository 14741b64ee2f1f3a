// Package local implements mlos_bench's LocalEnv and LocalFileShareEnv:
// environments that run their setup, run and teardown scripts on this
// machine in a working directory of their own, read results and telemetry
// from CSV files or the scripts' output, and (LocalFileShareEnv) move files
// to and from a file share.
//
// See docs/environments.md for the config keys and formats.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/internal/script"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/internal/safeio"
	"github.com/benchtune/bench/services"
	svclocal "github.com/benchtune/bench/services/local"
	"github.com/benchtune/bench/tunables"
)

// Class names: mlos_bench's (as its schemas list them) and bench's own.
var (
	LocalEnvClasses = []string{
		"mlos_bench.environments.LocalEnv",
		"mlos_bench.environments.local.LocalEnv",
		"mlos_bench.environments.local.local_env.LocalEnv",
		"bench.environments.LocalEnv",
	}
	LocalFileShareEnvClasses = []string{
		"mlos_bench.environments.LocalFileShareEnv",
		"mlos_bench.environments.local.LocalFileShareEnv",
		"mlos_bench.environments.local.local_fileshare_env.LocalFileShareEnv",
		"bench.environments.LocalFileShareEnv",
	}
)

func init() {
	environments.Register(newLocalEnv, LocalEnvClasses...)
	environments.Register(newFileShareEnv, LocalFileShareEnvClasses...)
}

// localKeys are LocalEnv's own config keys (beyond the script keys).
var localKeys = []string{"temp_dir", "dump_params_file", "dump_meta_file", "read_results_file", "read_telemetry_file", MeasurementsKey, environments.ReuseSetupKey, ShellLinesKey, "progress_file", "progress_poll_interval"}

type rawLocal struct {
	TempDir           *string          `json:"temp_dir"`
	DumpParamsFile    *string          `json:"dump_params_file"`
	DumpMetaFile      *string          `json:"dump_meta_file"`
	ReadResultsFile   *string          `json:"read_results_file"`
	ReadTelemetryFile *string          `json:"read_telemetry_file"`
	Measurements      *bool            `json:"bench_measurements"`
	ReuseSetup        any              `json:"bench_reuse_setup"` // read by environments.Base
	ShellLines        any              `json:"bench_shell_lines"` // read by shellLines
	Upload            []rawTransfer    `json:"upload"`
	Download          []rawTransfer    `json:"download"`
	ProgressFile      *string          `json:"progress_file"`
	ProgressPoll      *decode.Duration `json:"progress_poll_interval"`
}

type rawTransfer struct {
	From *string `json:"from"`
	To   *string `json:"to"`
}

// Env is a LocalEnv (or, with file transfers, a LocalFileShareEnv).
type Env struct {
	*environments.Base
	script *script.Config

	tempDirCfg    string
	dumpParams    string
	dumpMeta      string
	readResults   string
	readTelemetry string
	// progressFile and progressPoll: bench's progress_file and
	// progress_poll_interval (progress.go).
	progressFile string
	progressPoll time.Duration
	measureCfg   *bool // bench_measurements in the config; nil: not given
	verbatim     bool  // bench_shell_lines "verbatim"
	loader       *configs.Loader
	log          *slog.Logger

	// LocalFileShareEnv only.
	fileShare bool
	upload    []transfer
	download  []transfer

	mu      sync.Mutex
	tempDir string
	cleanup func() error
	ready   bool
	// measure is whether the built-in measurements are on for the trial
	// being set up; setupUsage is what its setup script used (nil: no
	// setup script, or not measuring).
	measure    bool
	setupUsage *usage
	// uploadWall is the wall time of the upload step after setup (0: none).
	uploadWall time.Duration
	// maxData is the size limit of the results and telemetry files for
	// the trial being set up (0: safeio.DefaultDataLimit).
	maxData int64
}

// MaxResultsFileSizeKey is the global that raises the size limit of
// read_results_file and read_telemetry_file (default 64 MiB).
const MaxResultsFileSizeKey = "max_results_file_size"

// dataLimit returns the limit for reading a results or telemetry file.
func (e *Env) dataLimit(what string) safeio.Limit {
	e.mu.Lock()
	n := e.maxData
	e.mu.Unlock()
	return safeio.Limit{Bytes: n, What: what,
		Hint: "raise it with the global " + MaxResultsFileSizeKey + ", e.g. --" + MaxResultsFileSizeKey + " 256MiB"}
}

// maxDataSize reads max_results_file_size from the trial's globals, then
// the experiment's (0: not set).
func (e *Env) maxDataSize(globals environments.Params) (int64, error) {
	v, ok := globals[MaxResultsFileSizeKey]
	if !ok || v == nil {
		v, ok = e.Spec().Globals[MaxResultsFileSizeKey]
	}
	if !ok || v == nil {
		return 0, nil
	}
	n, err := safeio.ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("global %s: %w", MaxResultsFileSizeKey, err)
	}
	return n, nil
}

var _ environments.Environment = (*Env)(nil)

func newLocalEnv(_ context.Context, spec environments.Spec) (environments.Environment, error) {
	return build(spec, false)
}

func newFileShareEnv(_ context.Context, spec environments.Spec) (environments.Environment, error) {
	return build(spec, true)
}

func build(spec environments.Spec, fileShare bool) (*Env, error) {
	base, err := environments.NewBase(spec)
	if err != nil {
		return nil, err
	}
	cfgRef := spec.Ref.Child("config")
	own := localKeys
	if fileShare {
		own = append(append([]string(nil), localKeys...), "upload", "download")
	}
	sc, err := script.Parse(spec.Config, cfgRef, own...)
	if err != nil {
		return nil, err
	}
	if err := script.CheckEnvParams(sc, base.Parameters(), cfgRef, spec.Name); err != nil && !base.Partial() {
		return nil, err
	}
	sub := map[string]any{}
	for _, k := range own {
		if v, ok := spec.Config[k]; ok {
			sub[k] = v
		}
	}
	var raw rawLocal
	if err := script.DecodeKeys(sub, cfgRef, &raw, own...); err != nil {
		return nil, err
	}
	e := &Env{
		Base:          base,
		script:        sc,
		tempDirCfg:    deref(raw.TempDir),
		dumpParams:    deref(raw.DumpParamsFile),
		dumpMeta:      deref(raw.DumpMetaFile),
		readResults:   deref(raw.ReadResultsFile),
		readTelemetry: deref(raw.ReadTelemetryFile),
		progressFile:  deref(raw.ProgressFile),
		progressPoll:  defaultProgressPoll,
		measureCfg:    raw.Measurements,
		fileShare:     fileShare,
		log:           slog.Default().With("env", spec.Name),
	}
	if raw.ProgressPoll != nil {
		if raw.ProgressPoll.Std() <= 0 {
			return nil, cfgRef.Child("progress_poll_interval").Errorf("must be a positive duration, e.g. \"500ms\"")
		}
		e.progressPoll = raw.ProgressPoll.Std()
	}
	for _, d := range []struct{ key, val string }{{"dump_params_file", e.dumpParams}, {"dump_meta_file", e.dumpMeta}} {
		if err := checkDumpPath(d.val); err != nil {
			return nil, cfgRef.Child(d.key).Errorf("%v", err)
		}
	}
	if e.verbatim, err = shellLines(spec); err != nil {
		return nil, err
	}
	if !e.verbatim {
		if err := checkLines(sc, cfgRef, spec.Name); err != nil {
			return nil, err
		}
	}
	if spec.Builder != nil {
		e.loader = spec.Builder.Loader
		if spec.Builder.Warn != nil {
			warnMissingScripts(spec, sc, cfgRef, spec.Builder.Warn)
		}
	}
	if err := base.InitSetupReuse(); err != nil {
		return nil, err
	}
	if fileShare {
		if e.upload, err = transfers(raw.Upload, cfgRef.Child("upload")); err != nil {
			return nil, err
		}
		if e.download, err = transfers(raw.Download, cfgRef.Child("download")); err != nil {
			return nil, err
		}
		if len(e.upload) == 0 && len(e.download) == 0 {
			return nil, cfgRef.Errorf("environment %q (class %s) needs \"upload\" or \"download\" (or both)", spec.Name, spec.Class)
		}
	}
	return e, nil
}

// warnMissingScripts tells about script files that the LocalExec service
// will not find on the search path (bench validate's warning; a run
// accepts them, and the line fails unless an earlier one creates them).
func warnMissingScripts(spec environments.Spec, sc *script.Config, cfgRef source.Ref, warn func(source.Ref, string)) {
	ex, ok := services.Find[interface{ MissingScripts(string) []string }](spec.Services)
	if !ok {
		return
	}
	for _, phase := range []struct {
		key   string
		lines []string
	}{{"setup", sc.Setup}, {"run", sc.Run}, {"teardown", sc.Teardown}} {
		for i, line := range phase.lines {
			for _, w := range ex.MissingScripts(line) {
				at := cfgRef.Child(phase.key).Index(i)
				if at.Node() == nil {
					at = cfgRef.Child(phase.key)
				}
				warn(at, fmt.Sprintf("environment %q: script %q not found on the search path (the line fails unless an earlier command creates it)", spec.Name, w))
			}
		}
	}
}

// ShellLinesKey is the config key (and global) that says how script lines
// reach the shell (bench only): "mlos_bench" (the default) splits each
// line into words and joins them again as mlos_bench does, which removes
// quotes; "verbatim" hands the line over as it is written.
const ShellLinesKey = "bench_shell_lines"

// Values of ShellLinesKey.
const (
	ShellLinesMlos     = "mlos_bench"
	ShellLinesVerbatim = "verbatim"
)

// shellLines reads bench_shell_lines: the config key (into which a global
// of the same name is merged, as for every config key), else the global;
// it reports whether lines are verbatim.
func shellLines(spec environments.Spec) (bool, error) {
	check := func(v any) (bool, error) {
		switch v {
		case ShellLinesMlos:
			return false, nil
		case ShellLinesVerbatim:
			return true, nil
		}
		return false, fmt.Errorf("expected %q (the default: lines are split into words and joined again, as mlos_bench does) or %q (lines reach the shell as written), got %#v",
			ShellLinesMlos, ShellLinesVerbatim, v)
	}
	if v, ok := spec.Config[ShellLinesKey]; ok && v != nil {
		verbatim, err := check(v)
		if err != nil {
			return false, spec.Ref.Child("config").Child(ShellLinesKey).Errorf("environment %q: %v", spec.Name, err)
		}
		return verbatim, nil
	}
	if v, ok := spec.Globals[ShellLinesKey]; ok && v != nil {
		verbatim, err := check(v)
		if err != nil {
			return false, fmt.Errorf("environment %q: global %s: %v", spec.Name, ShellLinesKey, err)
		}
		return verbatim, nil
	}
	return false, nil
}

// checkLines reports, with its place in the config, a line that cannot be
// split into words as mlos_bench splits it (an unterminated quote, a
// backslash at the end), before anything runs.
func checkLines(sc *script.Config, cfgRef source.Ref, name string) error {
	for _, phase := range []string{"setup", "run", "teardown"} {
		for i, line := range sc.Lines(phase) {
			if err := svclocal.CheckLine(line); err != nil {
				return cfgRef.Child(phase).Index(i).Errorf("environment %q: the line cannot be split into words as mlos_bench splits it (Python's shlex: %v); close the quote or escape the last backslash, or set %q: %q to hand lines to the shell as written",
					name, err, ShellLinesKey, ShellLinesVerbatim)
			}
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (e *Env) who() string { return fmt.Sprintf("environment %q", e.Name()) }

func now() time.Time { return time.Now().UTC() }

// TempDir returns the working directory while the environment is open.
func (e *Env) TempDir() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tempDir
}

func (e *Env) state() (dir string, ready bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tempDir, e.ready
}

func (e *Env) setReady(r bool) {
	e.mu.Lock()
	e.ready = r
	e.mu.Unlock()
}

// Open creates the working directory: the configured temp_dir (templated
// with the parameters, created when missing, never removed) or a fresh one
// from the TempDirs service (LocalExecService or TempDirContextService).
// Opening an open environment does nothing.
func (e *Env) Open(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tempDir != "" {
		return nil
	}
	if e.tempDirCfg != "" {
		dir := configs.Substitute(e.tempDirCfg, configs.MapLookup(e.Parameters()))
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("%s: temp_dir %q: %w", e.who(), dir, err)
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return fmt.Errorf("%s: create temp_dir: %w", e.who(), err)
		}
		e.tempDir, e.cleanup = abs, nil
		return nil
	}
	td, err := script.Need[services.TempDirs](e.Services(), e.Name(), e.Class(), "TempDirs", "LocalExecService or TempDirContextService")
	if err != nil {
		return err
	}
	dir, cleanup, err := td.TempDir(ctx, e.Name())
	if err != nil {
		return fmt.Errorf("%s: %w", e.who(), err)
	}
	e.tempDir, e.cleanup = dir, cleanup
	return nil
}

// Close removes the working directory (unless it was configured or the
// service keeps it).
func (e *Env) Close() error {
	e.mu.Lock()
	cleanup := e.cleanup
	e.tempDir, e.cleanup, e.ready = "", nil, false
	e.mu.Unlock()
	if cleanup != nil {
		if err := cleanup(); err != nil {
			return fmt.Errorf("%s: %w", e.who(), err)
		}
	}
	return nil
}

// Setup assigns the tunable values, writes dump_params_file and
// dump_meta_file, runs the setup script in the working directory and
// (LocalFileShareEnv) uploads the files. A script that exits non-zero is an
// error; a timeout wraps services.ErrTimeout. With bench_reuse_setup, the
// setup script and the uploads are skipped when the values they depend on
// are those of the last successful setup (environments.Base.SetupOnce);
// the files are written either way, and a skipped setup has no
// measurements.
func (e *Env) Setup(ctx context.Context, tun *tunables.Groups, globals environments.Params) error {
	dir, _ := e.state()
	if dir == "" {
		return fmt.Errorf("%s: Setup called before Open", e.who())
	}
	e.setReady(false)
	if err := e.SetupParams(tun, globals); err != nil {
		return err
	}
	measure, err := e.measuring(globals)
	if err != nil {
		return fmt.Errorf("%s: %w", e.who(), err)
	}
	maxData, err := e.maxDataSize(globals)
	if err != nil {
		return fmt.Errorf("%s: %w", e.who(), err)
	}
	e.mu.Lock()
	e.measure, e.setupUsage, e.uploadWall, e.maxData = measure, nil, 0, maxData
	e.mu.Unlock()
	e.watchTelemetry(ctx, dir)
	ctx, cancel := script.WithTimeout(ctx, e.script.Timeouts.Setup.Std())
	defer cancel()
	if err := e.dumpFiles(ctx, dir); err != nil {
		return err
	}
	if _, err := e.SetupOnce(func() error { return e.setupWork(ctx, dir, measure) }); err != nil {
		return err
	}
	e.setReady(true)
	return nil
}

// setupWork runs the setup script and (LocalFileShareEnv) the uploads.
func (e *Env) setupWork(ctx context.Context, dir string, measure bool) error {
	if len(e.script.Setup) > 0 {
		res, err := e.runLines(ctx, "setup", dir)
		if err != nil {
			return fmt.Errorf("%s: setup: %w", e.who(), err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("%s: setup failed: %s", e.who(), script.ExitReason(res))
		}
		if measure {
			u := phaseUsage(res.Lines)
			e.mu.Lock()
			e.setupUsage = &u
			e.mu.Unlock()
		}
	}
	if e.fileShare {
		start := time.Now()
		if err := e.uploadAll(ctx, dir); err != nil {
			return err
		}
		if measure && len(e.upload) > 0 {
			e.mu.Lock()
			e.uploadWall = time.Since(start)
			e.mu.Unlock()
		}
	}
	return nil
}

// runLines runs a phase's script locally with the exported parameters.
func (e *Env) runLines(ctx context.Context, phase, dir string) (services.ExecResult, error) {
	return e.runLinesLive(ctx, phase, dir, nil)
}

// runLinesLive is runLines with live, when not nil, given every output
// line as it is printed.
func (e *Env) runLinesLive(ctx context.Context, phase, dir string, live io.Writer) (services.ExecResult, error) {
	exec, err := script.Need[services.LocalExec](e.Services(), e.Name(), e.Class(), "LocalExec", "LocalExecService")
	if err != nil {
		return services.ExecResult{}, err
	}
	env, err := script.EnvVars(e.Parameters(), e.script.ShellEnvParams, e.script.ShellEnvRename)
	if err != nil {
		return services.ExecResult{}, err
	}
	res, err := exec.LocalExec(ctx, services.ExecRequest{
		Lines:       e.script.Lines(phase),
		Env:         env,
		Dir:         dir,
		LineTimeout: e.script.Timeouts.Line.Std(),
		Verbatim:    e.verbatim,
		Live:        live,
	})
	script.Record(ctx, e.Name(), phase, res, e.script.MaxOutputBytes)
	if err != nil {
		return res, script.TimeoutError(ctx, err)
	}
	if res.ExitCode != 0 {
		// Info, not a warning: the trial's failure reason says it, and
		// the terminal shows that once per trial.
		e.log.Info("script failed", "phase", phase, "reason", script.ExitReason(res))
	}
	return res, nil
}

// Run runs the run script (LocalFileShareEnv: after downloading the
// files), then reads results_stdout_pattern matches from its output and
// the read_results_file CSV; the file's values override the output's. A
// successful run adds the built-in measurements of the setup and run
// phases (see measure.go and docs/measurements.md) unless they are turned
// off; a result of the scripts with the same name wins.
func (e *Env) Run(ctx context.Context) environments.Result {
	dir, ready := e.state()
	if !ready || dir == "" {
		return environments.Result{Status: environments.PENDING, Time: now(), Reason: e.who() + " is not set up"}
	}
	e.watchTelemetry(ctx, dir)
	ctx, cancel := script.WithTimeout(ctx, e.script.Timeouts.Run.Std())
	defer cancel()
	fail := func(err error) environments.Result {
		err = script.TimeoutError(ctx, err)
		return environments.Result{Status: script.StatusOf(err), Time: now(), Reason: err.Error()}
	}
	var downloadWall time.Duration
	if e.fileShare {
		start := time.Now()
		if err := e.downloadAll(ctx, dir, false); err != nil {
			return fail(err)
		}
		if len(e.download) > 0 {
			downloadWall = time.Since(start)
		}
	}
	metrics := map[string]any{}
	var notes []string
	var runUsage *usage
	if len(e.script.Run) > 0 {
		prog := e.startProgress(ctx, dir)
		res, err := e.runLinesLive(ctx, "run", dir, prog.live())
		notes = append(notes, prog.stop()...)
		if err != nil {
			return fail(fmt.Errorf("%s: run: %w", e.who(), err))
		}
		if res.ExitCode != 0 {
			return environments.Result{Status: environments.FAILED, Time: now(),
				Reason: fmt.Sprintf("%s: run failed: %s", e.who(), script.ExitReason(res))}
		}
		metrics = script.ParseStdout(e.script.Pattern, res.Stdout)
		if n := script.PatternNote(e.script.Pattern, res.Stdout, e.who()); n != "" {
			notes = append(notes, n)
		}
		u := phaseUsage(res.Lines)
		runUsage = &u
	}
	if e.readResults != "" {
		path := e.resolve(e.readResults, dir)
		// Read under the run's context: its timeout covers the read too.
		data, err := configs.ReadFileLimit(ctx, path, e.dataLimit("results file"), safeio.DefaultDataLimit)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return environments.Result{Status: environments.FAILED, Time: now(),
					Reason: fmt.Sprintf("%s: the run wrote no results file %s", e.who(), path)}
			}
			return fail(fmt.Errorf("%s: read results: %w", e.who(), err))
		}
		vals, err := script.ParseResults(data)
		if err != nil {
			return environments.Result{Status: environments.FAILED, Time: now(),
				Reason: fmt.Sprintf("%s: results file %s: %v", e.who(), path, err)}
		}
		maps.Copy(metrics, vals)
	}
	e.mu.Lock()
	measure, setupUsage, uploadWall := e.measure, e.setupUsage, e.uploadWall
	e.mu.Unlock()
	if measure {
		e.addMeasurements(metrics, setupUsage, runUsage)
		// The file transfers' wall times (LocalFileShareEnv).
		for phase, d := range map[string]time.Duration{"upload": uploadWall, "download": downloadWall} {
			if k := MeasurementName(e.Name(), phase, MeasureWall); d > 0 {
				if _, taken := metrics[k]; !taken {
					metrics[k] = d.Seconds()
				}
			}
		}
	}
	e.AddSetupReused(metrics)
	return environments.Result{Status: environments.SUCCEEDED, Time: now(), Metrics: metrics, Notes: notes}
}

// Status reports READY once set up (PENDING before) with the telemetry of
// read_telemetry_file (LocalFileShareEnv: after downloading the files,
// ignoring missing ones). A missing telemetry file means no telemetry; a
// malformed one sets Err and the FAILED status.
func (e *Env) Status(ctx context.Context) environments.StatusReport {
	dir, ready := e.state()
	if !ready || dir == "" {
		return environments.StatusReport{Status: environments.PENDING, Time: now()}
	}
	ctx, cancel := script.WithTimeout(ctx, e.script.Timeouts.Status.Std())
	defer cancel()
	fail := func(err error) environments.StatusReport {
		return environments.StatusReport{Status: environments.FAILED, Time: now(), Err: script.TimeoutError(ctx, err)}
	}
	if e.fileShare {
		if err := e.downloadAll(ctx, dir, true); err != nil {
			return fail(err)
		}
	}
	if e.readTelemetry == "" {
		return environments.StatusReport{Status: environments.READY, Time: now()}
	}
	path := e.resolve(e.readTelemetry, dir)
	data, err := configs.ReadFileLimit(ctx, path, e.dataLimit("telemetry file"), safeio.DefaultDataLimit)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			e.log.Debug("no telemetry file yet", "file", path)
			return environments.StatusReport{Status: environments.READY, Time: now()}
		}
		return fail(fmt.Errorf("%s: read telemetry: %w", e.who(), err))
	}
	tel, err := script.ParseTelemetry(data, time.Local)
	if err != nil {
		return fail(fmt.Errorf("%s: telemetry file %s: %w", e.who(), path, err))
	}
	return environments.StatusReport{Status: environments.READY, Time: now(), Telemetry: tel}
}

// Teardown runs the teardown script. As in mlos_bench it runs in the
// LocalExec service's directory (its temp_dir, or a fresh one), not the
// environment's, since it may run in an experiment's last step without a
// trial. It forgets the last setup (bench_reuse_setup) first.
func (e *Env) Teardown(ctx context.Context) error {
	e.setReady(false)
	e.ForgetSetup()
	if len(e.script.Teardown) == 0 {
		return nil
	}
	ctx, cancel := script.WithTimeout(ctx, e.script.Timeouts.Teardown.Std())
	defer cancel()
	res, err := e.runLines(ctx, "teardown", "")
	if err != nil {
		return fmt.Errorf("%s: teardown: %w", e.who(), err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s: teardown failed: %s", e.who(), script.ExitReason(res))
	}
	return nil
}

// watchTelemetry makes writes to read_telemetry_file count as the trial's
// activity (services.ActivityFrom), for hang detection. It watches the
// file where the scripts write it: in the working directory (or at its
// absolute path). A LocalFileShareEnv watches nothing: its telemetry file
// is a download, rewritten at each status poll whether or not the
// benchmark wrote anything.
func (e *Env) watchTelemetry(ctx context.Context, dir string) {
	if e.readTelemetry == "" || e.fileShare {
		return
	}
	act := services.ActivityFrom(ctx)
	if act == nil {
		return
	}
	path := e.readTelemetry
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	act.Watch(path)
}

// resolve finds a results or telemetry file: relative to the working
// directory first, then on the config search path (as mlos_bench does);
// when it exists nowhere, the working-directory path is returned.
func (e *Env) resolve(file, dir string) string {
	if filepath.IsAbs(file) {
		return file
	}
	p := filepath.Join(dir, file)
	if _, err := os.Stat(p); err == nil || e.loader == nil {
		return p
	}
	if r := e.loader.Resolve(file); r != file {
		return r
	}
	return p
}
