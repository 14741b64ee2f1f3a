package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/internal/clilog"
	"github.com/benchtune/bench/internal/redactlog"
	"github.com/benchtune/bench/launcher"
	"github.com/benchtune/bench/runners/passive"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/schemas"
	"github.com/benchtune/bench/trial"
)

func newRunCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:                "run [options] [--NAME VALUE ...]",
		Short:              "Run an experiment (also: bench --config FILE)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExperiment(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, false)
		},
	}
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { fmt.Fprint(c.OutOrStdout(), runHelp()) })
	return cmd
}

func runHelp() string {
	var b strings.Builder
	b.WriteString(`Usage: bench run [options] [--NAME VALUE ...]
       bench --config FILE [options] [--NAME VALUE ...]

Run an experiment: build the environment, let the optimizer suggest
configurations, run a trial for each, store the results and report the
best configuration. Rerunning the same experiment id resumes it.

Options (both _ and - spellings work; list options take one or more values):
`)
	for _, o := range configs.Options {
		names := strings.Join(o.Names(), ", ")
		if m := o.Meta(); m != "" {
			names += " " + m
			if o.IsList() {
				names += "..."
			}
		}
		fmt.Fprintf(&b, "  %s\n      %s\n", names, o.Help())
	}
	b.WriteString(`
Any other --NAME VALUE (or --NAME=VALUE) sets the global NAME, overriding
globals files: e.g. --max_suggestions 20 --max_trials 50 --experiment_id E2.
Globals reach configs that already have a key of that name. bench's own
scheduling settings are such globals too: e.g. --queue_ahead 8,
--cpu_slots 2, --trial_lease 30s (docs/scheduling.md). A global that no
config reads gets a warning, with the closest key that is read.
Stopping rules and noise settings are such globals too (bench only, see
docs/scheduling.md): --max_time 2h, --max_cost 100 --cost_metric NAME,
--converged_trials 20, --repeat_aggregate median, --racing true,
--noise_aware true, --confirm_top_k 3 --confirm_repeats 8.

Precedence: CLI config file < globals files (in order) < --NAME VALUE <
explicit options. Values of globals may use $name and ${name}, expanded
from other globals, then from the process environment.

Multi-fidelity (bench only, docs/scheduling.md): --fidelity
PARAM:MIN:MAX[:ETA] (or a JSON object as text) declares a tunable or
global as the fidelity: Hyperband with asynchronous promotion.

Exit codes: 0 success; 1 the experiment ran but failed (mlos_bench's
end-of-run checks: no trial ran, fewer trials than planned, more than 20%
of the trials not succeeded, or no numeric best score; or it was stopped:
fail-fast, the canary, the failure budget); 2 bad usage or invalid config;
130 interrupted.
`)
	return b.String()
}

// validateFunc adapts the schemas package to the config loader.
func validateFunc(kind configs.Kind, doc *source.Doc) error {
	return schemas.Validate(schemas.Kind(kind), doc)
}

// runExperiment runs bench run, or bench worker (worker: claim and run
// the trials another process queues, never suggest).
func runExperiment(stdout, stderr io.Writer, argv []string, worker bool) (retErr error) {
	args, err := configs.ParseArgs(argv)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("%w (see bench run --help)", err))
	}
	if args.Help {
		fmt.Fprint(stdout, runHelp())
		return nil
	}
	// Signals are caught from the start: an interruption while the configs
	// load stops bench as well as one during a trial.
	ctx, stop := interruptContext(stderr)
	defer stop()
	// At exit, the trials' processes are stopped, unless teardown is off
	// (kept keeps them); if bench is killed, its watchdog stops them.
	guard, kept := startGuard(), false
	defer func() { guard.Finish(kept) }()
	l, err := configs.Prepare(args, validateFunc)
	if ctx.Err() != nil {
		return exitWith(exitInterrupted, errors.New("interrupted"))
	}
	if err != nil {
		return exitWith(exitUsage, err)
	}
	// From here on, nothing bench prints carries a secret value: not the
	// progress lines, the summary, the logs or the error it exits with.
	stdout, stderr = redactWriter{stdout, l.Secrets}, redactWriter{stderr, l.Secrets}
	defer func() {
		var ee *exitError
		if errors.As(retErr, &ee) {
			ee.err = l.Secrets.RedactError(ee.err)
		} else {
			retErr = l.Secrets.RedactError(retErr)
		}
	}()
	closeLog, err := setupLogging(stderr, l)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	defer closeLog()
	warnConfigs(stderr, l)
	// What dead benches left running is reaped while the experiment is
	// built (a /proc sweep, a few milliseconds), and before any trial or
	// setup process starts: reaped waits for it.
	reaped := reapStaleAsync(stderr)
	defer reaped()

	if args.CreateUpdateStorageSchemaOnly {
		st, err := launcher.OpenStorage(ctx, l.Loader, l.Storage, l.Globals, false)
		if err != nil {
			return exitWith(exitUsage, err)
		}
		defer st.Close()
		if err := st.Migrate(ctx); err != nil {
			return exitWith(exitFailed, err)
		}
		fmt.Fprintf(stderr, "bench: storage schema is up to date: %s\n", st.Describe())
		return nil
	}

	prog := newProgress(stderr, !args.NoProgress)
	// The passive runner's trials and prompt (used only with --passive).
	console := passive.NewConsole(stderr)
	r, err := launcher.Build(ctx, l, launcher.Options{Observer: prog, Worker: worker,
		Stdin: os.Stdin, StdinTerminal: isTerminal(os.Stdin) && inForeground(os.Stdin), Stderr: console})
	if err != nil {
		if ctx.Err() != nil {
			return exitWith(exitInterrupted, errors.New("interrupted"))
		}
		return exitWith(exitUsage, err)
	}
	defer r.Close()
	kept = !r.SchedulerConfig.Teardown
	printSecurityNotices(stderr, r.SecurityNotices)
	for _, w := range slices.Concat(launcher.UnreadGlobals(l), launcher.UnreadGlobalsFileKeys(l)) {
		fmt.Fprintf(stderr, "bench: warning: %s\n", w)
	}

	state := "new experiment"
	if r.Resumed {
		state = "resuming"
	}
	if worker {
		state = "worker"
	}
	reaped() // its message, if any, comes before the experiment's line, as before
	fmt.Fprintf(stderr, "bench: experiment %q (%s) in %s\n", r.ExperimentID, state, r.Storage.Describe())
	if r.CgroupNote != "" {
		fmt.Fprintf(stderr, "bench: per-runner cgroups: %s\n", r.CgroupNote)
	}
	stopServing, err := serveDuringRun(ctx, stderr, l, r)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	stopUI, err := uiDuringRun(ctx, stderr, l, r)
	if err != nil {
		stopServing()
		return exitWith(exitUsage, err)
	}
	defer stopUI()
	if r.SchedulerConfig.RunnerKind() == schedulers.RunnerPassive {
		// The trials and the prompt are on the terminal: one line per
		// trial instead of a bar redrawn over them, kept off the prompt's
		// line.
		prog.useBar = false
		prog.w = console
	}
	prog.begin(r.Scheduler.Stats().Planned, r.Optimizer.Targets())
	runErr := r.Scheduler.Start(ctx)
	prog.finish()
	stopServing()

	sctx := context.WithoutCancel(ctx)
	sum, err := r.Summarize(sctx)
	if err != nil {
		return exitWith(exitFailed, err)
	}
	// mlos_bench's closing log line, which its users grep for.
	slog.Info("Final score: " + sum.FinalScore())
	printSummary(stdout, stderr, sum, args.Format, l.Storage)
	if ctx.Err() != nil {
		if r.SchedulerConfig.RunnerKind() == schedulers.RunnerPassive {
			return exitWith(exitInterrupted, errors.New("interrupted: the waiting trials wait for their results again when you rerun the same command (or store them with bench submit)"))
		}
		return exitWith(exitInterrupted, errors.New("interrupted: the running trial will run again when you rerun the same command"))
	}
	if runErr != nil {
		return exitWith(exitFailed, runErr)
	}
	if !sum.OK() {
		return exitWith(exitFailed, errors.New(strings.Join(sum.Problems, "; ")))
	}
	return nil
}

// reapStale kills what bench processes that died left running and removes
// their temp folders (launcher.ReapStale), before this one runs a trial.
func reapStale(stderr io.Writer) {
	if msg := launcher.ReapStale(); msg != "" {
		fmt.Fprintln(stderr, "bench:", msg)
	}
}

// reapStaleAsync is reapStale on its own goroutine; the function it
// returns waits for it to end (any number of calls).
func reapStaleAsync(stderr io.Writer) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		reapStale(stderr)
	}()
	return func() { <-done }
}

// startGuard starts the watchdog that stops the trials' processes if bench
// is killed (launcher.StartGuard).
func startGuard() *launcher.Guard {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return launcher.StartGuard(exe)
}

// interruptContext is cancelled by the first SIGINT or SIGTERM; a second
// one exits at once with code 130, after killing every process bench
// started for trials (teardown's too) and removing its temp folders.
func interruptContext(stderr io.Writer) (context.Context, func()) {
	return interruptContextSaying(stderr, "\nbench: interrupted: stopping the running trial and tearing down (press Ctrl-C again to quit at once)")
}

// interruptContextSaying is interruptContext with first as the line the
// first signal prints (a command that runs no trial says what it stops).
func interruptContextSaying(stderr io.Writer, first string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		n := 0
		for range ch {
			n++
			if n == 1 {
				fmt.Fprintln(stderr, first)
				cancel()
				continue
			}
			fmt.Fprintln(stderr, "bench: interrupted twice: killing the trials' processes and exiting now")
			launcher.ForceStop()
			os.Exit(exitInterrupted)
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}

// setupLogging sends logs to stderr in bench's terminal format (and to
// log_file, at the full level, in mlos_bench's format).
func setupLogging(stderr io.Writer, l *configs.Launch) (func(), error) {
	level := slog.LevelInfo
	explicit := l.LogLevel != ""
	if explicit {
		lv, err := parseLevel(l.LogLevel)
		if err != nil {
			return nil, err
		}
		level = lv
	}
	// The progress bar or the per-trial lines tell what happens; the log on
	// stderr shows warnings unless a level was asked for.
	stderrLevel := level
	if !explicit {
		stderrLevel = slog.LevelWarn
	}
	handlers := []slog.Handler{clilog.Terminal(stderr, stderrLevel)}
	closeFn := func() {}
	if l.LogFile != "" {
		f, err := os.OpenFile(l.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("log file: %w", err)
		}
		// mlos_bench's format, for the scripts that grep its log files.
		handlers = append(handlers, clilog.File(f, level))
		closeFn = func() { f.Close() }
	}
	// Secret values never reach a log line.
	slog.SetDefault(slog.New(redactlog.New(slog.NewMultiHandler(handlers...), l.Secrets)))
	return closeFn, nil
}

func parseLevel(s string) (slog.Level, error) {
	if n, err := strconv.Atoi(s); err == nil { // Python logging numbers
		switch {
		case n >= 40:
			return slog.LevelError, nil
		case n >= 30:
			return slog.LevelWarn, nil
		case n >= 20:
			return slog.LevelInfo, nil
		default:
			return slog.LevelDebug, nil
		}
	}
	switch strings.ToUpper(s) {
	case "CRITICAL", "FATAL", "ERROR":
		return slog.LevelError, nil
	case "WARNING", "WARN":
		return slog.LevelWarn, nil
	case "INFO":
		return slog.LevelInfo, nil
	case "DEBUG":
		return slog.LevelDebug, nil
	}
	return 0, &configs.UsageError{Msg: fmt.Sprintf("invalid log level %q: want CRITICAL, ERROR, WARNING, INFO or DEBUG", s)}
}

func printSummary(stdout, stderr io.Writer, s *launcher.Summary, format, storageSpec string) {
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s)
		return
	}
	w := stdout
	fmt.Fprintf(w, "Experiment %s: %s (%d succeeded, %d failed", s.ExperimentID, plural(s.Trials, "trial"), s.Succeeded, s.Failed)
	if s.Pending > 0 {
		fmt.Fprintf(w, ", %d pending", s.Pending)
	}
	if s.Canceled > 0 {
		fmt.Fprintf(w, ", %d canceled", s.Canceled)
	}
	if s.Pruned > 0 {
		fmt.Fprintf(w, ", %d pruned", s.Pruned)
	}
	if s.Retried > 0 {
		fmt.Fprintf(w, ", %d retried", s.Retried)
	}
	if s.Reused > 0 {
		fmt.Fprintf(w, ", %d reused", s.Reused)
	}
	fmt.Fprintf(w, "), %d run now\n", s.RunNow)
	if s.BestTrial > 0 {
		fmt.Fprintln(w, bestLine(s))
		keys := make([]string, 0, len(s.BestConfig))
		for k := range s.BestConfig {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %s = %s\n", k, s.BestConfig[k])
		}
	}
	printNoiseSummary(w, s)
	for _, warn := range s.Warnings {
		fmt.Fprintln(stderr, "bench: warning:", warn)
	}
	switch {
	case strings.Contains(s.Storage, "in memory"):
		fmt.Fprintln(stderr, "bench: the results were kept in memory only and are gone now; give --storage a file or database to keep them")
	case storageSpec != "":
		fmt.Fprintf(stderr, "bench: results stored in %s (bench results --storage %s --experiment %s)\n", s.Storage, engines.ShellQuote(storageSpec), s.ExperimentID)
	default:
		fmt.Fprintf(stderr, "bench: results stored in %s (bench results --experiment %s)\n", s.Storage, s.ExperimentID)
	}
}

// bestLine is the summary's best: "Best trial 30: score=0.84142 (min)"
// for the best single trial (mlos_bench's answer), or, when the best is a
// configuration's aggregate over its runs (a confirmation, a noise-aware
// run), "Best configuration 4: score median 12.5 (min) over 3 runs; its
// best run: trial 9", so that an aggregate is not shown as one trial's
// result. Numbers are written as bench results writes them (%.6g).
func bestLine(s *launcher.Summary) string {
	var b strings.Builder
	agg := s.BestBasis != "" && s.BestConfigID > 0
	if agg {
		fmt.Fprintf(&b, "Best configuration %d:", s.BestConfigID)
	} else {
		fmt.Fprintf(&b, "Best trial %d:", s.BestTrial)
	}
	for i, t := range s.Targets {
		name, dir, _ := strings.Cut(t, ":")
		v := s.BestScores[name]
		text := fmt.Sprint(v) // integers exact, text as it is
		switch v.(type) {
		case int, int64:
		default:
			if f, ok := trial.Numeric(v); ok {
				text = strconv.FormatFloat(f, 'g', 6, 64)
			}
		}
		if i > 0 && agg {
			b.WriteString(",")
		}
		if agg {
			if a := s.BestAggregates[name]; a != "" && s.BestRuns > 1 {
				name += " " + a
			}
			fmt.Fprintf(&b, " %s %s (%s)", name, text, dir)
		} else {
			fmt.Fprintf(&b, " %s=%s (%s)", name, text, dir)
		}
	}
	if agg {
		if s.BestRuns > 1 {
			fmt.Fprintf(&b, " over %d runs", s.BestRuns)
		}
		fmt.Fprintf(&b, "; its best run: trial %d", s.BestTrial)
	}
	return b.String()
}

// redactWriter replaces secret values in what is written through it.
type redactWriter struct {
	w       io.Writer
	secrets *configs.Secrets
}

func (r redactWriter) Write(p []byte) (int, error) {
	s := string(p)
	red := r.secrets.Redact(s)
	if red == s {
		return r.w.Write(p)
	}
	if _, err := io.WriteString(r.w, red); err != nil {
		return 0, err
	}
	return len(p), nil
}

// printSecurityNotices prints what runs in a less safe mode (SSH host
// keys not checked) whatever the log level: such a run is never silent.
// The notices are also recorded with the experiment.
func printSecurityNotices(stderr io.Writer, notices []string) {
	for _, n := range notices {
		fmt.Fprintf(stderr, "bench: warning: %s (recorded with the experiment)\n", n)
	}
}

// warnConfigs prints the warnings about the config files read so far and
// later (a key given twice in one object: the last value wins, as in
// mlos_bench), as bench validate words them.
func warnConfigs(stderr io.Writer, l *configs.Launch) {
	l.Loader.OnWarning(func(w string) { fmt.Fprintf(stderr, "bench: %s\n", w) })
}
