// Package local implements the services that act on this machine:
// LocalExecService (run script lines with the shell), TempDirContextService
// (working directories) and LocalDirFileShareService (a folder playing the
// part of a remote file share).
package local

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/internal/capture"
	"github.com/benchtune/bench/internal/reaper"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/benchtune/bench/services"
)

// Options are the settings of the local services that do not come from
// their JSON config.
type Options struct {
	// SearchPath is the config search path (absolute folders, in order):
	// command words of script lines that name files in these folders are
	// replaced by absolute paths, as in mlos_bench.
	SearchPath []string
	// Python runs .py scripts (default "python3", looked up on PATH by the
	// shell).
	Python string
	// KillGrace is how long a timed-out or cancelled line's process group
	// gets between SIGTERM and SIGKILL (default 2s).
	KillGrace time.Duration
	// DrainTimeout is how long output is still read after a line's shell
	// exited, while background processes it started keep its output open
	// (default 2s). Output after that is not captured.
	DrainTimeout time.Duration
	// Logger receives the services' logs (default slog.Default()).
	Logger *slog.Logger
	// ValidateOnly builds a service for bench validate: checked as for a
	// run, nothing created (services.Spec.ValidateOnly).
	ValidateOnly bool
}

func (o Options) withDefaults() Options {
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.KillGrace <= 0 {
		o.KillGrace = 2 * time.Second
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// LocalExecService runs script lines on this machine, each with its own
// /bin/sh, as mlos_bench's LocalExecService does. It also hands out temp
// dirs (services.TempDirs), as mlos_bench's class derives from
// TempDirContextService.
type LocalExecService struct {
	*tempDirs
	cfg  Config
	opts Options
	res  resolver
}

// NewLocalExec builds a LocalExecService.
func NewLocalExec(cfg Config, opts Options) (*LocalExecService, error) {
	opts = opts.withDefaults()
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	sp, err := absAll(opts.SearchPath)
	if err != nil {
		return nil, err
	}
	opts.SearchPath = sp
	td, err := newTempDirs(cfg.TempDirConfig, sp, opts.Logger)
	if err != nil {
		return nil, err
	}
	return &LocalExecService{
		tempDirs: td,
		cfg:      cfg,
		opts:     opts,
		res:      resolver{searchPath: sp, python: opts.Python},
	}, nil
}

// ShellText returns the text that LocalExec hands to /bin/sh -c for a
// script line (see docs/local-services.md): by default the line split into
// words and joined again as mlos_bench does, with the first word of each
// sub-command that names a file on the search path replaced; with
// verbatim, the line as it is apart from the replaced command words. The
// error is a line that cannot be split (an unterminated quote, a
// backslash at the end).
func (s *LocalExecService) ShellText(line string, verbatim bool) (string, error) {
	return s.res.text(line, verbatim)
}

// MissingScripts returns the command words of a script line that name
// script files neither the search path nor PATH has (bench validate
// warns about them: the line fails unless an earlier command creates
// them).
func (s *LocalExecService) MissingScripts(line string) []string { return s.res.missing(line) }

// LocalExec runs req.Lines one after another, each by its own /bin/sh -c
// in its own process group, with cwd req.Dir (or the temp dir: the
// configured one, or a fresh one removed afterwards) and the process
// environment plus req.Env plus services.ProcessEnvFrom(ctx) (the trial's
// device: it wins over req.Env, so that a config cannot override, say,
// CUDA_VISIBLE_DEVICES by accident). With services.CPUAffinityFrom(ctx),
// each line's shell starts pinned to those cores, and so does everything
// it starts. Every chunk of output read from a line (and the start of each
// line) touches services.ActivityFrom(ctx). While a line's shell runs, its
// process group is registered with services.SamplerFrom(ctx). With abort_on_error (the
// default) it stops at the first line that exits non-zero. ExitCode is
// that of the last line run. A line that runs past req.LineTimeout, or past the context's
// deadline, has its whole process group killed and the error wraps
// services.ErrTimeout; cancellation kills likewise and the error wraps
// context.Canceled. The partial result comes with the error.
func (s *LocalExecService) LocalExec(ctx context.Context, req services.ExecRequest) (res services.ExecResult, err error) {
	procEnv := services.ProcessEnvFrom(ctx)
	env, err := buildEnv(req.Env, procEnv)
	if err != nil {
		return res, err
	}
	for k := range procEnv {
		if v, ok := req.Env[k]; ok && v != procEnv[k] {
			s.opts.Logger.Warn("local exec: the trial's process environment overrides the script's variable",
				"name", k, "script_value", v, "value", procEnv[k])
		}
	}
	pin := services.CPUAffinityFrom(ctx)
	if err := checkCores(pin); err != nil {
		return res, err
	}
	shared := lineRun{env: env, timeout: req.LineTimeout, pin: pin, activity: services.ActivityFrom(ctx), sampler: services.SamplerFrom(ctx),
		cgroup: services.CgroupFrom(ctx), verbatim: req.Verbatim}
	dir := req.Dir
	if dir == "" {
		d, cleanup, terr := s.TempDir(ctx, "local-exec")
		if terr != nil {
			return res, terr
		}
		defer func() {
			if cerr := cleanup(); cerr != nil {
				s.opts.Logger.Warn("local exec: cleanup failed", "err", cerr)
			}
		}()
		dir = d
	}
	shared.dir = dir
	if req.Live != nil {
		shared.live = &liveWriter{w: req.Live}
	}
	defer func() { res.Stdout, res.Stderr = s.concat(res.Lines) }()
	for i, line := range req.Lines {
		if ctx.Err() != nil {
			return res, ctxError(ctx, fmt.Sprintf("before line %d", i+1))
		}
		lr, lerr := s.runLine(ctx, i, line, &shared)
		res.Lines = append(res.Lines, lr)
		res.ExitCode = lr.ExitCode
		if lerr != nil {
			return res, lerr
		}
		if lr.ExitCode != 0 && s.cfg.AbortOnError {
			s.opts.Logger.Debug("local exec: line failed, aborting", "line", i+1, "exit_code", lr.ExitCode)
			break
		}
	}
	return res, nil
}

// concat joins the lines' outputs, bounded by max_output_bytes.
func (s *LocalExecService) concat(lines []services.LineResult) (string, string) {
	outs := make([]string, len(lines))
	errs := make([]string, len(lines))
	for i, l := range lines {
		outs[i], errs[i] = l.Stdout, l.Stderr
	}
	o, _ := boundConcat(outs, s.cfg.MaxOutputBytes)
	e, _ := boundConcat(errs, s.cfg.MaxOutputBytes)
	return o, e
}

// buildEnv returns the process environment plus extra (a script's
// variables) plus proc (the trial's process environment, which wins: when
// a name repeats, the child gets the last value). Names must be shell
// identifiers; values are passed through the environment only, never in
// the shell text.
func buildEnv(extra, proc map[string]string) ([]string, error) {
	env := os.Environ()
	env, err := appendEnv(env, extra, "; rename it with shell_env_params_rename")
	if err != nil {
		return nil, err
	}
	env, err = appendEnv(env, proc, " (it comes from the trial's process environment)")
	if err != nil {
		return nil, err
	}
	// The owner's mark, last so that it wins: if bench dies without
	// stopping the line, the next bench finds and kills everything the
	// line started (internal/reaper).
	if mark := reaper.Mark(); mark != "" {
		env = append(env, mark)
	}
	return env, nil
}

// appendEnv appends vars to env, in name order, after checking them.
func appendEnv(env []string, vars map[string]string, hint string) ([]string, error) {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !isIdentifier(k) {
			return nil, fmt.Errorf("environment variable name %q is not a valid shell identifier ([A-Za-z_][A-Za-z0-9_]*)%s", k, hint)
		}
		if strings.IndexByte(vars[k], 0) >= 0 {
			return nil, fmt.Errorf("environment variable %s: the value contains a NUL byte, which an environment cannot hold", k)
		}
		env = append(env, k+"="+vars[k])
	}
	return env, nil
}

// coreList formats cores for messages, e.g. "0,2,3".
func coreList(cores []int) string {
	parts := make([]string, len(cores))
	for i, c := range cores {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}

// ctxError describes why ctx ended: a deadline wraps services.ErrTimeout
// and context.DeadlineExceeded, a cancellation wraps context.Canceled.
func ctxError(ctx context.Context, where string) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("local exec: deadline reached %s: %w (%w)", where, services.ErrTimeout, err)
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("local exec: cancelled %s: %w (%w)", where, err, cause)
	}
	return fmt.Errorf("local exec: cancelled %s: %w", where, err)
}

// shortLine abbreviates a script line for messages.
func shortLine(line string) string {
	const max = 120
	line = strings.ReplaceAll(line, "\n", "⏎")
	if len(line) > max {
		return line[:max] + "…"
	}
	return line
}

// lineRun holds what every line of a LocalExec call shares.
type lineRun struct {
	dir      string
	env      []string
	timeout  time.Duration
	live     *liveWriter
	pin      []int              // CPU cores; nil: not pinned
	activity *services.Activity // nil-safe
	sampler  *services.Sampler  // nil-safe
	cgroup   *services.Cgroup   // the runner's cgroup; nil: none
	verbatim bool               // hand lines to the shell as they are
}

// runLine runs one line with /bin/sh -c in a new process group.
func (s *LocalExecService) runLine(ctx context.Context, idx int, line string, run *lineRun) (services.LineResult, error) {
	lr := services.LineResult{Line: line}
	text, err := s.res.text(line, run.verbatim)
	if err != nil {
		return lr, fmt.Errorf("local exec: line %d: %w", idx+1, err)
	}
	dir, timeout, live := run.dir, run.timeout, run.live
	log := s.opts.Logger
	if run.pin != nil {
		log.Info("local exec: run", "line", idx+1, "cmd", text, "dir", dir, "cores", coreList(run.pin))
	} else {
		log.Info("local exec: run", "line", idx+1, "cmd", text, "dir", dir)
	}

	outR, outW, err := os.Pipe()
	if err != nil {
		return lr, fmt.Errorf("local exec: line %d: %w", idx+1, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return lr, fmt.Errorf("local exec: line %d: %w", idx+1, err)
	}
	cmd := exec.Command("/bin/sh", "-c", text)
	cmd.Dir = dir
	cmd.Env = run.env
	cmd.Stdout = outW
	cmd.Stderr = errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if run.cgroup != nil {
		// Started inside the runner's cgroup (clone3): nothing escapes.
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = run.cgroup.FD()
	}

	start := time.Now()
	lr.Start = start.UTC()
	run.activity.Touch()
	// Not once bench has begun to exit: a process started after the exit's
	// sweep would outlive it (internal/reaper).
	err = reaper.Start(cmd, func() error { return startPinned(cmd, run.pin) })
	// The child has its own copies of the write ends: close ours, so that
	// reading ends when every process holding them is gone.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return lr, fmt.Errorf("local exec: cannot run line %d %q: %w", idx+1, shortLine(line), err)
	}
	pgid := cmd.Process.Pid
	// The line's process group is sampled (periodic telemetry) while its
	// shell runs.
	run.sampler.Register(pgid)
	outCap := capture.Limit(s.cfg.MaxOutputBytes)
	errCap := capture.Limit(s.cfg.MaxOutputBytes)
	var readers sync.WaitGroup
	readers.Add(2)
	go s.pump(&readers, outR, outCap, live, run.activity)
	go s.pump(&readers, errR, errCap, live, run.activity)

	waitDone := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the status is read from cmd.ProcessState
		reaper.Done(cmd)
		close(waitDone)
	}()

	lineCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		lineCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var runErr error
	select {
	case <-waitDone:
	case <-lineCtx.Done():
		select {
		case <-waitDone:
			// It ended on its own as time ran out: not a timeout.
		default:
			runErr = s.stop(ctx, idx, line, timeout, pgid, waitDone)
			lr.TimedOut = errors.Is(runErr, services.ErrTimeout)
		}
	}
	<-waitDone
	run.sampler.Unregister(pgid)
	lr.Duration = time.Since(start)

	// Wait for the output to end; background processes that inherited the
	// pipes may keep them open, so give up after DrainTimeout.
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(s.opts.DrainTimeout):
		log.Warn("local exec: background processes of the line keep its output open; not capturing more of it",
			"line", idx+1, "after", s.opts.DrainTimeout)
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()

	lr.ExitCode = exitCode(cmd.ProcessState)
	lr.UserCPU, lr.SysCPU, lr.MaxRSSBytes = usage(cmd.ProcessState)
	lr.Stdout = outCap.String()
	lr.Stderr = errCap.String()
	if lr.ExitCode != 0 {
		// A script of mlos_bench's config folder that bench does not ship:
		// say so where the trial's failure reason shows the line's errors.
		for _, h := range s.res.unshippedHints(line) {
			if lr.Stderr != "" && !strings.HasSuffix(lr.Stderr, "\n") {
				lr.Stderr += "\n"
			}
			lr.Stderr += h + "\n"
		}
	}
	lr.Truncated = outCap.Truncated() || errCap.Truncated()
	log.Debug("local exec: done", "line", idx+1, "exit_code", lr.ExitCode, "duration", lr.Duration,
		"cpu_user", lr.UserCPU, "cpu_sys", lr.SysCPU, "max_rss_bytes", lr.MaxRSSBytes,
		"stdout_bytes", outCap.Total(), "stderr_bytes", errCap.Total())
	return lr, runErr
}

// stop kills a line's process group when its time is up or the context
// ends, and returns the error to report.
func (s *LocalExecService) stop(ctx context.Context, idx int, line string, timeout time.Duration, pgid int, waitDone <-chan struct{}) error {
	var err error
	if ctx.Err() != nil {
		err = ctxError(ctx, fmt.Sprintf("while running line %d %q", idx+1, shortLine(line)))
	} else {
		err = fmt.Errorf("local exec: line %d %q ran past its %s limit: %w", idx+1, shortLine(line), timeout, services.ErrTimeout)
	}
	s.opts.Logger.Warn("local exec: stopping line", "line", idx+1, "reason", err)
	s.killGroup(pgid, waitDone)
	return err
}

// pump copies a stream into its capture and the live writer, touching the
// activity on every chunk read.
func (s *LocalExecService) pump(wg *sync.WaitGroup, r *os.File, c *capture.Buffer, live *liveWriter, act *services.Activity) {
	defer wg.Done()
	var w io.Writer = c
	var split *lineSplitter
	if live != nil {
		split = &lineSplitter{out: live}
		w = io.MultiWriter(c, split)
	}
	if act != nil {
		w = touchWriter{w: w, act: act}
	}
	buf := make([]byte, 32<<10)
	// Read errors (the read end closed by a drain timeout) just end the
	// copy.
	_, _ = io.CopyBuffer(w, struct{ io.Reader }{r}, buf)
	if split != nil {
		split.Close()
	}
}

// touchWriter touches an Activity on each write.
type touchWriter struct {
	w   io.Writer
	act *services.Activity
}

func (t touchWriter) Write(p []byte) (int, error) {
	t.act.Touch()
	return t.w.Write(p)
}

// killGroup stops a process group: SIGTERM, then SIGKILL once the grace
// period is over or as soon as the shell has exited, whichever is later
// for stragglers (processes that ignore SIGTERM).
func (s *LocalExecService) killGroup(pgid int, waitDone <-chan struct{}) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.NewTimer(s.opts.KillGrace)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		case <-tick.C:
			// Once the shell is reaped, an empty group means all are gone.
			select {
			case <-waitDone:
				// Zombies count for kill(-pgid, 0): orphans that init
				// has not reaped yet are not processes to wait for.
				if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) || !reaper.GroupLive(pgid) {
					return
				}
			default:
			}
		}
	}
}

// exitCode returns a process's exit status, as the shell reports it: the
// exit code, or 128+signal for a process killed by a signal.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
