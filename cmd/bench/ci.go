package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/ci"
	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/stats"
)

// ciFlags are bench ci's own options; the others are bench run's.
type ciFlags struct {
	repeat            int
	baseline          string
	thresholds        string
	bestOf            string
	markdown          string
	junit             string
	json              string
	alpha             float64
	allowInsufficient bool
	saveAs            string
	uTest             string
	// round two (docs/ci.md): see ci_round2.go
	r2 ciRound2
}

func newCICmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:                "ci --config FILE --baseline EXPERIMENT|FILE --thresholds FILE [options]",
		Short:              "Run a fixed set of configurations N times, interleaved, and fail on regressions against a baseline",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCI(cmd.OutOrStdout(), cmd.ErrOrStderr(), args)
		},
	}
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { fmt.Fprint(c.OutOrStdout(), ciHelp) })
	return cmd
}

const ciHelp = `Usage: bench ci --config FILE --baseline EXPERIMENT|FILE --thresholds FILE [options] [bench run options]

Run a fixed set of configurations --repeat times, interleaved (A B C A B C
...), store the run as its own experiment (<experiment_id>-ci-<UTC time, ms>),
and compare each thresholded metric of each configuration with the
baseline: a two-sided Mann–Whitney U test says whether the change is real
(p < alpha), and a regression is a real change of the median beyond the
threshold in the bad direction. See docs/ci.md.

The set of configurations: each --tunable_values FILE; --best-of
EXPERIMENT adds the best configuration of a stored experiment; with
neither, the defaults.

Options:
  --repeat N               runs of each configuration (default 5; at least 4 or 5
                           per side are needed for p < 0.05 to be reachable, 6
                           blocks for the paired test of an A/B job), or auto
  --baseline REF           a stored experiment id, or a bench export file (.csv, .json);
                           without it, the run is only recorded (exit 0): a baseline
  --thresholds FILE        the thresholds file (JSON5), e.g.
                           {"metrics": {"latency_p50": {"max_increase": "5%"},
                                        "throughput": {"max_decrease": "0%"}}}
  --save-as NAME           store the run as experiment NAME (new) instead of
                           <experiment_id>-ci-<UTC time, ms>
  --best-of EXPERIMENT     add the best configuration of a stored experiment
  --alpha A                significance level (default: the thresholds file's, or 0.05)
  --markdown FILE          write a Markdown summary (e.g. "$GITHUB_STEP_SUMMARY"; appended)
  --junit FILE             write JUnit XML, one test case per metric and configuration
  --json FILE              write the comparison as JSON
  --allow-insufficient     too few samples to decide passes (with a warning)
                           instead of exiting 2

Gate any suite (no trial runs):
  --current FILE           compare this result file with --baseline: go test -bench
                           output, hyperfine --export-json, Google Benchmark JSON,
                           pytest-benchmark JSON (--benchmark-save-data), bench export

A/B in one job (no --baseline):
  --baseline-command CMD --candidate-command CMD
                           two commands (sh -c) in interleaved blocks; metrics wall_s,
                           cpu_user_s, cpu_sys_s, max_rss_mb
  --baseline-config FILE --candidate-config FILE
                           two tunable values files of the environment, interleaved
  --ab-order random|alternate   order inside a block, of commands or configurations
                                (default random)
  --ab-test paired|unpaired     blocks compared pair by pair (signed-rank; default)
                                or as two samples (Mann–Whitney)
  --repeat auto            run until every metric is decided (group-sequential,
                           alpha spending), at most --max-repeat runs per side:
                           A/B of commands or configurations, or --config runs
                           against a stored --baseline
  --max-repeat N           cap of --repeat auto (default 20, at least 6)
  --run-timeout DURATION   a command run taking longer is an error

History:
  --history FILE           append this run to a JSON Lines history file
  --testbed LABEL          the machine kind it ran on
  --commit SHA, --branch NAME   (default: $GITHUB_SHA, $CI_COMMIT_SHA, ..., or git)
  --history-window N       also judge the run against the last N recorded runs
  bench ci history METRIC --history FILE [--plot FILE]
                           the series and its change points (bench ci history --help)

CI integrations:
  --github-annotations     ::error/::warning/::notice lines on stdout
  --pr-comment FILE        Markdown listing only changes both significant and
                           beyond the threshold (the others folded)
  --u-test benchstat|r     Mann–Whitney p: benchstat's exact with ties (default) or R's

Every other option is bench run's (--config, --environment, --tunable_values,
--storage, --globals, --NAME VALUE ...); an unknown option close to one of
bench ci's (--repeats) is an error.

Output: the comparison table on stdout, a verdict per metric and
configuration on stderr.
Exit codes: 0 pass; 1 regression; 2 error, invalid config, missing data, or
too few samples to decide (unless --allow-insufficient); 130 interrupted.
`

// splitCIArgs takes bench ci's own options out of argv.
func splitCIArgs(argv []string) (ciFlags, []string, error) {
	f := ciFlags{repeat: 5}
	var rest []string
	for i := 0; i < len(argv); i++ {
		arg := argv[i]
		name, val, hasVal := strings.Cut(arg, "=")
		key := strings.ReplaceAll(strings.TrimLeft(name, "-"), "_", "-")
		if !strings.HasPrefix(name, "--") {
			rest = append(rest, arg)
			continue
		}
		next := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(argv) {
				return "", &configs.UsageError{Msg: "--" + key + " needs a value"}
			}
			i++
			return argv[i], nil
		}
		var err error
		var s string
		switch key {
		case "repeat":
			if s, err = next(); err == nil && s == "auto" {
				f.r2.auto = true
			} else if err == nil {
				f.repeat, err = strconv.Atoi(s)
				if err != nil || f.repeat < 1 {
					err = &configs.UsageError{Msg: fmt.Sprintf("--repeat must be an integer >= 1, got %q", s)}
				}
			}
		case "baseline":
			f.baseline, err = next()
		case "thresholds":
			f.thresholds, err = next()
		case "best-of":
			f.bestOf, err = next()
		case "markdown":
			f.markdown, err = next()
		case "junit":
			f.junit, err = next()
		case "json":
			f.json, err = next()
		case "alpha":
			if s, err = next(); err == nil {
				f.alpha, err = strconv.ParseFloat(s, 64)
				if err != nil || !(f.alpha > 0 && f.alpha < 1) {
					err = &configs.UsageError{Msg: fmt.Sprintf("--alpha must be a number between 0 and 1, got %q", s)}
				}
			}
		case "save-as":
			f.saveAs, err = next()
		case "allow-insufficient":
			f.allowInsufficient = true
		case "u-test":
			if s, err = next(); err == nil {
				if _, perr := stats.ParseUTestMethod(s); perr != nil {
					err = &configs.UsageError{Msg: "--u-test: " + perr.Error()}
				}
				f.uTest = s
			}
		default:
			var handled bool
			if handled, err = f.r2.parse(key, next); handled || err != nil {
				break
			}
			if typo := ciTypo(arg); typo != "" {
				return f, nil, &configs.UsageError{Msg: fmt.Sprintf("unknown option %s: did you mean --%s? (bench ci's options are listed by bench ci --help; a global of that name goes in a --globals file)", name, typo)}
			}
			rest = append(rest, arg)
		}
		if err != nil {
			return f, nil, err
		}
	}
	return f, rest, nil
}

func runCI(stdout, stderr io.Writer, argv []string) error {
	if len(argv) > 0 && argv[0] == "history" {
		return runCIHistory(stdout, stderr, argv[1:])
	}
	for _, a := range argv {
		if a == "-h" || a == "--help" {
			fmt.Fprint(stdout, ciHelp)
			return nil
		}
	}
	f, rest, err := splitCIArgs(argv)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if f.thresholds == "" {
		return exitWith(exitUsage, errors.New("bench ci needs --thresholds FILE (see bench ci --help)"))
	}
	if err := f.checkOutputs(); err != nil {
		return exitWith(exitUsage, err)
	}
	th, err := ci.LoadThresholds(f.thresholds)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if f.alpha > 0 {
		th.Alpha = f.alpha
	}
	if err := f.r2.validate(&f); err != nil {
		return exitWith(exitUsage, err)
	}
	if f.r2.current != "" {
		return runCIImport(stdout, stderr, f, rest, th)
	}
	if f.r2.abMode() {
		if rest = slices.DeleteFunc(rest, func(a string) bool { return a == "--no-progress" || a == "--no_progress" }); len(rest) > 0 {
			return exitWith(exitUsage, fmt.Errorf("an A/B job of commands takes no bench run options, got %q", rest))
		}
		ctx, stop := interruptContext(stderr)
		defer stop()
		return runCIAB(ctx, stdout, stderr, f, th)
	}
	l, closeLog, err := prepareCommand(stderr, rest, "ci")
	if err != nil {
		return err
	}
	defer closeLog()
	ctx, stop := interruptContext(stderr)
	defer stop()

	if f.r2.baselineConfig != "" {
		if len(l.TunableValues) > 0 || f.bestOf != "" {
			return exitWith(exitUsage, errors.New("--baseline-config and --candidate-config are the set of an A/B job: --tunable_values and --best-of cannot be added"))
		}
		l.TunableValues = []string{f.r2.baselineConfig, f.r2.candConfig}
	}
	set, err := ci.BuildSet(ctx, l, f.bestOf)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	var base *ci.Samples
	if f.baseline != "" {
		if base, err = ci.LoadSamples(ctx, l.Loader, l.Storage, l.Globals, f.baseline); err != nil {
			return exitWith(exitUsage, fmt.Errorf("baseline: %w", err))
		}
	}
	if f.r2.auto {
		return runCIConfigAuto(ctx, stdout, stderr, f, th, l, set, base)
	}
	if base != nil {
		noiseCheck(stderr, base, th, f.repeat, f)
	}
	prog := newProgress(stderr, !l.Args.NoProgress)
	r, err := ci.Build(ctx, l, ci.RunOptions{Set: set, Repeat: f.repeat, SaveAs: f.saveAs, Thresholds: th, Observer: prog,
		Order: f.configABOrder(), Seed: uint64(time.Now().UnixNano())})
	if err != nil {
		if ctx.Err() != nil {
			return exitWith(exitInterrupted, errors.New("interrupted"))
		}
		return exitWith(exitUsage, err)
	}
	defer r.Close()
	fmt.Fprintf(stderr, "bench ci: experiment %q in %s: %d configuration(s) × %d repeats, interleaved\n", r.ExperimentID, r.Storage.Describe(), len(set), f.repeat)
	prog.begin(r.Scheduler.Stats().Planned, r.Optimizer.Targets())
	runErr := r.Scheduler.Start(ctx)
	prog.finish()
	if ctx.Err() != nil {
		return exitWith(exitInterrupted, errors.New("interrupted"))
	}
	cur, total, failed, err := r.Samples(context.WithoutCancel(ctx))
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "bench ci: warning: %d of %d trials did not succeed; only successful trials are compared\n", failed, total)
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "bench ci: warning: %v\n", runErr)
	}
	if f.r2.baselineConfig != "" {
		// A/B of two configurations: the first of the set against the
		// second, block by block unless --ab-test unpaired.
		if base, cur, err = splitConfigAB(cur); err != nil {
			return exitWith(exitUsage, err)
		}
		o := f.compareOptions(th.Alpha)
		o.Paired = f.r2.abTest != "unpaired"
		pairNoiseCheck(stderr, base, cur, th, f.repeat, o.Paired, f)
		return finishCI(stdout, stderr, base, cur, th, f, o)
	}
	if base == nil && f.r2.historyWindow == 0 && f.r2.history != "" {
		if err := finishReportRound2(stdout, stderr, nil, cur, th, f); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "bench ci: no --baseline: recorded experiment %q; compare later runs with --baseline %s\n", r.ExperimentID, r.ExperimentID)
		return nil
	}
	if base == nil && f.r2.historyWindow == 0 {
		// No baseline: record the run (e.g. the baseline of later runs).
		rep := ci.Compare(cur, cur, th.Metrics, ci.Options{Alpha: th.Alpha, Seed: 1})
		for _, row := range rep.Rows {
			fmt.Fprintf(stdout, "%s\t%s\t%s (n=%d)\n", row.Config, row.Metric, ci.FormatValue(row.Cur.Median), row.Cur.N)
		}
		fmt.Fprintf(stderr, "bench ci: no --baseline: recorded experiment %q; compare later runs with --baseline %s\n", r.ExperimentID, r.ExperimentID)
		return nil
	}
	return finishCI(stdout, stderr, base, cur, th, f, f.compareOptions(th.Alpha))
}

// finishReport writes the outputs of bench ci (and bench compare with
// thresholds) and turns the verdict into the exit code.
func finishReport(stdout, stderr io.Writer, rep *ci.Report, f ciFlags, title string) error {
	if err := rep.WriteText(stdout, true); err != nil {
		return exitWith(exitUsage, err)
	}
	rep.WriteVerdicts(stderr, title+": ")
	write := func(path string, fn func(w io.Writer) error, appendTo bool) error {
		if path == "" {
			return nil
		}
		flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		if appendTo {
			flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
		out, err := os.OpenFile(path, flags, 0o644)
		if err != nil {
			return err
		}
		if err := fn(out); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	}
	errs := errors.Join(
		write(f.markdown, func(w io.Writer) error { return rep.WriteMarkdown(w, title) }, true),
		write(f.junit, func(w io.Writer) error {
			return rep.WriteJUnit(w, strings.ReplaceAll(title, " ", "."), f.allowInsufficient)
		}, false),
		write(f.json, rep.WriteJSON, false),
	)
	if errs != nil {
		return exitWith(exitUsage, errs)
	}
	switch rep.Verdict {
	case ci.Regression:
		return exitWith(exitFailed, errors.New("regression (see the verdicts above)"))
	case ci.Missing:
		return exitWith(exitUsage, errors.New("missing data: a metric or configuration has no values on one side (see the verdicts above)"))
	case ci.Insufficient:
		if f.allowInsufficient {
			fmt.Fprintf(stderr, "%s: warning: too few samples to decide; passing because of --allow-insufficient\n", title)
			return nil
		}
		return exitWith(exitUsage, errors.New("too few samples to decide (raise --repeat, or pass --allow-insufficient)"))
	}
	return nil
}
