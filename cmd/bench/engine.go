package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/launcher"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/serve"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

func newExecTrialCmd() *cobra.Command {
	var requestURL, outcomeURL string
	var noStore bool
	cmd := &cobra.Command{
		Use:   "exec-trial --request URL --outcome URL",
		Short: "Run one trial of an experiment on the far side of an execution engine (bench only)",
		Long: `Run one stored trial's environment (setup and run) as an execution
engine's job does, and hand back its outcome. The request (written by the
engine: the driver's configs and the trial's values) names the same config
files as the driver, which must be reachable at the same paths (a shared
file system, a prepared host, or a container image).

The outcome (status, results, telemetry and captured output, JSON) is
written to --outcome. With PostgreSQL or MySQL storage that this side can
reach, it is also stored at once; a far side without database access hands it back
through the file only. URLs may be local paths, s3://bucket/key (AWS Batch)
or, for the request, env:NAME.

The exit status is 0 whenever an outcome was written (whatever the trial's
status), 1 when the request could not be run at all.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if requestURL == "" || outcomeURL == "" {
				return exitWith(exitUsage, errors.New("bench exec-trial needs --request and --outcome"))
			}
			ctx, stop, signaled := execSignalContext(cmd.ErrOrStderr())
			defer stop()
			// The trial's processes end with it (exec-trial runs no
			// teardown; nothing is kept on purpose across its exit).
			guard := startGuard()
			defer guard.Finish(false)
			return execTrial(ctx, cmd.ErrOrStderr(), requestURL, outcomeURL, !noStore, signaled)
		},
	}
	cmd.Flags().StringVar(&requestURL, "request", "", "the trial request (path, s3://..., env:NAME)")
	cmd.Flags().StringVar(&outcomeURL, "outcome", "", "where to write the outcome (path or s3://...)")
	cmd.Flags().BoolVar(&noStore, "no-store", false, "only write the outcome file, even when shared storage is reachable")
	return cmd
}

// execTrial runs a request's trial and writes its outcome. A request that
// cannot be run still gets a FAILED outcome when the outcome can be
// written, so that the driver learns why.
func execTrial(ctx context.Context, stderr io.Writer, requestURL, outcomeURL string, store bool, signaled func() string) error {
	raw, err := engines.ReadURL(ctx, requestURL)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("reading the trial request: %w", err))
	}
	req, err := engines.DecodeRequest(raw)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	fail := func(step string, err error) error {
		out := trial.Outcome{Status: trial.FAILED, Ts: time.Now().UTC(), FailureReason: fmt.Sprintf("bench exec-trial on %s: %s: %v", hostname(), step, err)}
		if werr := writeOutcome(ctx, outcomeURL, out); werr != nil {
			return exitWith(exitFailed, fmt.Errorf("%s: %w (and the outcome could not be written: %v)", step, err, werr))
		}
		fmt.Fprintf(stderr, "bench exec-trial: %s: %v\n", step, err)
		return nil
	}
	if req.Dir != "" {
		if fi, err := os.Stat(req.Dir); err == nil && fi.IsDir() {
			if err := os.Chdir(req.Dir); err != nil {
				return fail("entering the driver's folder", err)
			}
		}
	}
	args, err := configs.ParseArgs(req.Args)
	if err != nil {
		return fail("reading the driver's arguments", err)
	}
	l, err := configs.Prepare(args, validateFunc)
	if err != nil {
		return fail("loading the configs", err)
	}
	if l.LogLevel == "" {
		// The job's log is where its steps are told.
		l.LogLevel = "INFO"
	}
	closeLog, err := setupLogging(stderr, l)
	if err != nil {
		return fail("logging", err)
	}
	defer closeLog()
	reapStale(stderr)

	run := &launcher.Run{Launch: l}
	defer run.Close()
	// The runner builder of every command that runs trials: cgroups,
	// trial_idle_timeout and telemetry_interval as the configs ask (the
	// device slot is the driver's: in the request).
	runners, err := run.TrialRunners(ctx, launcher.ForEngineJob, req.RunnerID)
	if err != nil {
		return fail("loading the environment", err)
	}
	runner := runners[0]
	printSecurityNotices(stderr, run.SecurityNotices)
	if run.CgroupNote != "" {
		slog.Info("bench exec-trial: per-runner cgroups: " + run.CgroupNote)
	}
	// The driver's globals for the trial (its metadata, its device slot)
	// over this side's own.
	globals := trial.Globals(l.Globals, nil, req.Globals, req.ExperimentID, req.TrialID, max(req.RunnerID, 1))
	spec := schedulers.Spec{ExperimentID: req.ExperimentID, TrialID: req.TrialID, Params: req.Params,
		Globals: globals, ProcessEnv: req.ProcessEnv}
	if req.TelemetryInterval != "" {
		if d, err := time.ParseDuration(req.TelemetryInterval); err == nil {
			spec.TelemetryInterval = d
		}
	}
	// A fresh process: the environment remembers no earlier setup, so an
	// environment with bench_reuse_setup always sets up here.
	slog.Info("bench exec-trial: running", "experiment", req.ExperimentID, "trial", req.TrialID, "host", hostname())
	defer reportProgressBeside(outcomeURL, &spec)()
	out := runner.Run(ctx, spec)
	// The outcome is stored (shared storage) and written (the outcome
	// file) from here: without secrets.
	out = storage.RedactOutcome(out, l.Secrets)
	// Stopped by a signal: the outcome says so, and is left to the driver,
	// which asks the engine who sent it (a time limit: TIMED_OUT; a cancel
	// from outside or a preemption: FAILED; otherwise a person's
	// interruption: as the run ended).
	sig := ""
	if signaled != nil {
		sig = signaled()
	}
	if store && sig == "" {
		storeOutcome(ctx, l, req, &out)
	}
	if sig != "" {
		slog.Warn("bench exec-trial: stopped by a signal; the driver asks the engine how the job ended", "signal", sig, "trial", req.TrialID)
		b, err := engines.EncodeInterrupted(out, sig)
		if err == nil {
			err = engines.WriteURL(context.WithoutCancel(ctx), outcomeURL, b)
		}
		if err != nil {
			return exitWith(exitFailed, fmt.Errorf("writing the outcome: %w", err))
		}
		return nil
	}
	if err := writeOutcome(ctx, outcomeURL, out); err != nil {
		return exitWith(exitFailed, fmt.Errorf("writing the outcome: %w", err))
	}
	slog.Info("bench exec-trial: done", "trial", req.TrialID, "status", out.Status, "reason", out.FailureReason)
	return nil
}

func writeOutcome(ctx context.Context, url string, out trial.Outcome) error {
	b, err := engines.EncodeOutcome(out)
	if err != nil {
		return err
	}
	return engines.WriteURL(context.WithoutCancel(ctx), url, b)
}

// storeOutcome stores the outcome in shared storage (a PostgreSQL or MySQL
// server) when this side reaches it, under the driver's claim; the outcome
// file is written either way. A SQLite file is never opened from the far side (it may be
// on a network file system).
func storeOutcome(ctx context.Context, l *configs.Launch, req *engines.Request, out *trial.Outcome) {
	if final, err := trial.RunEnd(out.Status); err != nil || !final {
		return // no final status (a run that ended READY): the driver records it
	}
	cfg, err := launcher.StorageConfig(l.Loader, l.Storage, l.Globals)
	if err != nil || req.Owner == "" {
		return
	}
	if backend, err := cfg.Backend(); err != nil || backend == "sqlite" {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	cfg.NoCreate = true
	st, err := storage.Open(sctx, cfg)
	if err != nil {
		slog.Warn("bench exec-trial: shared storage unreachable; the outcome goes back through the engine", "err", err)
		return
	}
	defer st.Close()
	exp, err := st.LoadExperiment(sctx, req.ExperimentID)
	if err != nil {
		slog.Warn("bench exec-trial: cannot open the experiment in storage", "err", err)
		return
	}
	*out = storage.Targets(exp.Info().Objectives).Finalize(*out)
	if err := exp.WithOwner(req.Owner, time.Minute).Finish(sctx, req.TrialID, *out); err != nil {
		slog.Warn("bench exec-trial: the outcome was not stored here; the driver stores it", "err", err)
		return
	}
	slog.Info("bench exec-trial: outcome stored", "storage", st.Describe())
}

// execSignalContext is bench exec-trial's interrupt handling: the first
// SIGINT or SIGTERM stops the trial (as bench run's first does) and is
// remembered, so that the outcome names it (signaled returns its name, ""
// before one came); a second one exits at once, as bench run's does.
func execSignalContext(stderr io.Writer) (ctx context.Context, stop func(), signaled func() string) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value
	go func() {
		n := 0
		for s := range ch {
			n++
			if n == 1 {
				name := signalName(s)
				got.Store(name)
				fmt.Fprintf(stderr, "bench exec-trial: %s: stopping the trial\n", name)
				cancel(fmt.Errorf("bench exec-trial got %s", name))
				continue
			}
			fmt.Fprintln(stderr, "bench exec-trial: a second signal: killing the trial's processes and exiting now")
			launcher.ForceStop()
			os.Exit(exitInterrupted)
		}
	}()
	signaled = func() string {
		v, _ := got.Load().(string)
		return v
	}
	return ctx, func() { signal.Stop(ch); cancel(nil) }, signaled
}

func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case os.Interrupt:
		return "SIGINT"
	}
	return s.String()
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

func newPilotsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pilots --engine FILE --count N (--experiment ID | --connect URL --token-file FILE) [run options]",
		Short: "Start N bench workers as jobs of an execution engine (bench only)",
		Long: `Start pilot workers: N jobs of an execution engine (a Slurm job array, an
AWS Batch array job, processes on the hosts of an SSH pool, detached local
processes), each running

  bench worker --experiment ID [run options]

which claims the experiment's queued trials from shared storage until the
experiment is over (as Optuna users do on Slurm). The driver (bench run
with the same configs and --queue_ahead, or without --engine) suggests the
trials; the storage must be shared (PostgreSQL or MySQL) and reachable
from the jobs. bench pilots returns once the jobs are submitted and prints their
references.

With --connect URL --token-file FILE [--tls-ca FILE] instead of
--experiment, each job runs a network worker,

  bench worker --connect URL --token-file FILE [run options]

which pulls trials over HTTP from a bench serve (or bench run --serve) and
needs no database access (on Kubernetes: an Indexed Job of N pods). The
token never goes on a command line or into a job's spec: FILE is read
where the worker runs (a path there), or env:NAME reads the environment
variable NAME (on Kubernetes, a Secret's key given to the pods with the
engine's "secret_env"). --connect excludes --experiment; a URL with
credentials in it is refused.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return startPilots(cmd.Context(), cmd.OutOrStdout(), args)
		},
	}
	return cmd
}

func startPilots(ctx context.Context, stdout io.Writer, argv []string) error {
	var count int
	var rest []string
	experiment := ""
	var conn pilotConnect
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--help" || a == "-h":
			fmt.Fprintln(stdout, newPilotsCmd().Long)
			return nil
		case a == "--count" && i+1 < len(argv):
			if _, err := fmt.Sscanf(argv[i+1], "%d", &count); err != nil {
				return exitWith(exitUsage, fmt.Errorf("--count wants a number, got %q", argv[i+1]))
			}
			i++
		case strings.HasPrefix(a, "--count="):
			if _, err := fmt.Sscanf(a[len("--count="):], "%d", &count); err != nil {
				return exitWith(exitUsage, fmt.Errorf("--count wants a number, got %q", a))
			}
		case a == "--experiment" && i+1 < len(argv):
			experiment = argv[i+1]
			i++
		case strings.HasPrefix(a, "--experiment="):
			experiment = a[len("--experiment="):]
		case conn.take(argv, &i):
		default:
			rest = append(rest, a)
		}
	}
	if count < 1 {
		return exitWith(exitUsage, errors.New("bench pilots needs --count N (N >= 1)"))
	}
	if err := conn.check(experiment); err != nil {
		return exitWith(exitUsage, err)
	}
	if experiment == "" && conn.url == "" {
		return exitWith(exitUsage, errors.New("bench pilots needs --experiment ID (the experiment the workers join) or --connect URL (the bench serve they pull trials from)"))
	}
	args, err := configs.ParseArgs(rest)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	l, err := configs.Prepare(args, validateFunc)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	ev, ok := l.Globals["engine"]
	if !ok || ev == "" {
		return exitWith(exitUsage, errors.New("bench pilots needs --engine FILE (or \"engine\" in the configs)"))
	}
	spec, _, err := launcher.EngineSpec(l, ev)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	dir, _ := os.Getwd()
	dir, _ = filepath.Abs(dir)
	jobID := experiment
	if conn.url != "" {
		jobID = conn.jobID()
	}
	eng, err := engines.New(ctx, spec, engines.Params{Slots: count, Dir: dir, ExperimentID: jobID, Globals: l.Globals})
	if err != nil {
		return exitWith(exitUsage, err)
	}
	defer eng.Close()
	ps, ok := eng.(engines.PilotSubmitter)
	if !ok {
		return exitWith(exitUsage, fmt.Errorf("engine %s cannot start pilot workers", spec.Class))
	}
	common, err := engines.CommonOf(spec)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	// The workers run the trials themselves: they must not use the engine.
	var workerArgs []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--engine" {
			i++
			continue
		}
		if strings.HasPrefix(a, "--engine=") {
			continue
		}
		workerArgs = append(workerArgs, a)
	}
	workerArgs = engines.SafeArgs(workerArgs)
	wargv := append([]string{common.Bench, "worker", "--experiment", experiment, "--no-progress", "--engine", ""}, workerArgs...)
	if conn.url != "" {
		if warn := conn.loopbackWarning(eng.Name()); warn != "" {
			fmt.Fprintf(os.Stderr, "bench: warning: %s\n", warn)
		}
		wargv = append(append([]string{common.Bench, "worker"}, conn.workerArgs()...), append([]string{"--no-progress", "--engine", ""}, workerArgs...)...)
	}
	refs, err := ps.SubmitPilots(ctx, "bench-pilot-"+jobID, wargv, count)
	for _, r := range refs {
		fmt.Fprintln(stdout, string(r))
	}
	if err != nil {
		return exitWith(exitFailed, fmt.Errorf("submitted %d of %d pilot workers: %w", len(refs), count, err))
	}
	if conn.url != "" {
		fmt.Fprintf(os.Stderr, "bench: started %d pilot workers of %s on %s\n", len(refs), serve.RedactURL(conn.url), eng.Name())
		return nil
	}
	fmt.Fprintf(os.Stderr, "bench: started %d pilot workers for experiment %s on %s\n", len(refs), experiment, eng.Name())
	return nil
}
