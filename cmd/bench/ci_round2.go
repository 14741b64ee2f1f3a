package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/ci"
	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/stats"
)

// ciRound2 holds bench ci's options of round two (docs/ci.md): results
// read from files, A/B in one job, sequential repeats, history and CI
// integrations.
type ciRound2 struct {
	current         string // --current FILE: results bench did not run
	baselineCommand string
	candCommand     string
	baselineConfig  string
	candConfig      string
	abOrder         string
	abTest          string
	auto            bool // --repeat auto
	maxRepeat       int
	runTimeout      time.Duration
	history         string
	testbed         string
	commit          string
	branch          string
	historyWindow   int
	annotations     bool
	prComment       string
}

// parse takes one of the round-two options (key without "--"); handled
// is false for any other.
func (r *ciRound2) parse(key string, next func() (string, error)) (handled bool, err error) {
	str := func(dst *string) error {
		v, err := next()
		*dst = v
		return err
	}
	num := func(dst *int, least int) error {
		v, err := next()
		if err != nil {
			return err
		}
		n, perr := strconv.Atoi(v)
		if perr != nil || n < least {
			return &configs.UsageError{Msg: fmt.Sprintf("--%s must be an integer >= %d, got %q", key, least, v)}
		}
		*dst = n
		return nil
	}
	switch key {
	case "current":
		err = str(&r.current)
	case "baseline-command":
		err = str(&r.baselineCommand)
	case "candidate-command":
		err = str(&r.candCommand)
	case "baseline-config":
		err = str(&r.baselineConfig)
	case "candidate-config":
		err = str(&r.candConfig)
	case "ab-order":
		if err = str(&r.abOrder); err == nil && r.abOrder != ci.OrderAlternate && r.abOrder != ci.OrderRandomBlocks {
			err = &configs.UsageError{Msg: fmt.Sprintf("--ab-order must be alternate or random, got %q", r.abOrder)}
		}
	case "ab-test":
		if err = str(&r.abTest); err == nil && r.abTest != "paired" && r.abTest != "unpaired" {
			err = &configs.UsageError{Msg: fmt.Sprintf("--ab-test must be paired or unpaired, got %q", r.abTest)}
		}
	case "max-repeat":
		err = num(&r.maxRepeat, 6)
	case "run-timeout":
		var v string
		if v, err = next(); err == nil {
			if r.runTimeout, err = time.ParseDuration(v); err != nil || r.runTimeout <= 0 {
				err = &configs.UsageError{Msg: fmt.Sprintf("--run-timeout must be a duration such as 10m, got %q", v)}
			}
		}
	case "history":
		err = str(&r.history)
	case "testbed":
		err = str(&r.testbed)
	case "commit":
		err = str(&r.commit)
	case "branch":
		err = str(&r.branch)
	case "history-window":
		err = num(&r.historyWindow, 3)
	case "github-annotations":
	case "pr-comment":
		err = str(&r.prComment)
	default:
		return false, nil
	}
	if key == "github-annotations" {
		r.annotations = true
	}
	return true, err
}

// validate checks the combination of round-two options.
func (r *ciRound2) validate(f *ciFlags) error {
	cmds := r.baselineCommand != "" || r.candCommand != ""
	cfgs := r.baselineConfig != "" || r.candConfig != ""
	switch {
	case cmds && (r.baselineCommand == "" || r.candCommand == ""):
		return errors.New("A/B of commands needs both --baseline-command and --candidate-command")
	case cfgs && (r.baselineConfig == "" || r.candConfig == ""):
		return errors.New("A/B of configurations needs both --baseline-config and --candidate-config (tunable values files)")
	case cmds && cfgs:
		return errors.New("--baseline-command and --baseline-config are two kinds of A/B job: give one")
	case (cmds || cfgs) && f.baseline != "":
		return errors.New("an A/B job measures its own baseline: --baseline cannot be given with --baseline-command or --baseline-config")
	case r.current != "" && (cmds || cfgs):
		return errors.New("--current reads results from a file: it cannot be given with an A/B job")
	case r.current != "" && f.baseline == "" && r.historyWindow == 0:
		return errors.New("--current FILE needs --baseline (a file or experiment) or --history FILE --history-window N to compare with")
	case (r.abOrder != "" || r.abTest != "") && !cmds && !cfgs:
		return errors.New("--ab-order and --ab-test tune an A/B job (--baseline-command/--candidate-command or --baseline-config/--candidate-config)")
	case r.auto && r.current != "":
		return errors.New("--repeat auto runs trials until the verdict is clear: it cannot be given with --current")
	case r.auto && !cmds && !cfgs && f.baseline == "":
		return errors.New("--repeat auto needs something to compare with: --baseline, or an A/B job (--baseline-config/--candidate-config, --baseline-command/--candidate-command)")
	case r.historyWindow > 0 && r.history == "":
		return errors.New("--history-window needs --history FILE")
	}
	return checkOutputPath("pr-comment", r.prComment)
}

func (r *ciRound2) abMode() bool { return r.baselineCommand != "" }

// gitOr returns v, else the first set environment variable of envs, else
// the output of git with args ("" when none works).
func gitOr(v string, envs []string, args ...string) string {
	if v != "" {
		return v
	}
	for _, e := range envs {
		if s := os.Getenv(e); s != "" {
			return s
		}
	}
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// runCIImport compares results bench did not run (--current FILE) with
// the baseline; no trial runs.
func runCIImport(stdout, stderr io.Writer, f ciFlags, rest []string, th *ci.Thresholds) error {
	args, err := configs.ParseArgs(rest)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	l, err := configs.Prepare(args, validateFunc)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	ctx := context.Background()
	cur, err := ci.ReadFile(f.r2.current)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("--current: %w", err))
	}
	var base *ci.Samples
	if f.baseline != "" {
		if base, err = ci.LoadSamples(ctx, l.Loader, l.Storage, l.Globals, f.baseline); err != nil {
			return exitWith(exitUsage, fmt.Errorf("baseline: %w", err))
		}
		n := 0
		for _, c := range cur.Configs {
			for _, rule := range th.Metrics {
				n = max(n, len(c.Values[rule.Metric]))
			}
		}
		noiseCheck(stderr, base, th, n, f)
	}
	return finishCI(stdout, stderr, base, cur, th, f, f.compareOptions(th.Alpha))
}

// noiseCheck prints the noise of each thresholded metric of s for a job
// of n runs per side, and a warning where the job cannot detect a change
// as small as the threshold.
func noiseCheck(stderr io.Writer, s *ci.Samples, th *ci.Thresholds, n int, f ciFlags) {
	if n <= 0 {
		n = f.repeat
	}
	for _, nz := range ci.NoiseCheck(s, th.Metrics, n, th.Alpha) {
		kind := "noise"
		if nz.Warn() {
			kind = "warning"
		}
		fmt.Fprintf(stderr, "bench ci: %s: %s\n", kind, nz)
	}
}

// runCIAB runs an A/B job of two commands: baseline and candidate
// interleaved in blocks, --repeat N blocks or, with --repeat auto, the
// group-sequential design of ci.Sequential.
func runCIAB(ctx context.Context, stdout, stderr io.Writer, f ciFlags, th *ci.Thresholds) error {
	wd, _ := os.Getwd()
	order := f.r2.abOrder
	if order == "" {
		order = ci.OrderRandomBlocks
	}
	ab, err := ci.NewABRunner(ci.ABOptions{
		Baseline:  ci.ABCommand{Label: "baseline", Command: f.r2.baselineCommand},
		Candidate: ci.ABCommand{Label: "candidate", Command: f.r2.candCommand},
		Order:     order, Dir: wd, Timeout: f.r2.runTimeout, Seed: uint64(time.Now().UnixNano()),
	})
	if err != nil {
		return exitWith(exitUsage, err)
	}
	opts := f.compareOptions(th.Alpha)
	opts.Paired = f.r2.abTest != "unpaired"
	fail := func(err error) error {
		if ctx.Err() != nil {
			return exitWith(exitInterrupted, errors.New("interrupted"))
		}
		return exitWith(exitUsage, err)
	}
	if !f.r2.auto {
		pilot := min(f.repeat, 5)
		fmt.Fprintf(stderr, "bench ci: A/B in one job: %d blocks of baseline and candidate, order %s\n", f.repeat, order)
		if err := ab.RunBlocks(ctx, pilot); err != nil {
			return fail(err)
		}
		abNoiseCheck(stderr, ab, th, f.repeat, opts.Paired, f)
		if err := ab.RunBlocks(ctx, f.repeat-pilot); err != nil {
			return fail(err)
		}
		return finishCI(stdout, stderr, ab.Base, ab.Cur, th, f, opts)
	}
	maxRepeat := f.r2.maxRepeat
	if maxRepeat == 0 {
		maxRepeat = 20
	}
	seq, err := ci.NewSequential(th.Alpha, maxRepeat)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	fmt.Fprintf(stderr, "bench ci: A/B in one job, order %s, --repeat auto: %s\n", order, seq)
	var rep *ci.Report
	for k, n := range seq.Looks {
		if err := ab.RunBlocks(ctx, n-ab.Blocks()); err != nil {
			return fail(err)
		}
		if k == 0 {
			abNoiseCheck(stderr, ab, th, maxRepeat, opts.Paired, f)
		}
		o := opts
		o.Alpha = seq.Spent[k]
		rep = ci.Compare(ab.Base, ab.Cur, th.Metrics, o)
		rep.Method = fmt.Sprintf("%s; --repeat auto (%s) stopped at look %d of %d, n=%d per side, alpha spent at this look %s", rep.Method, seq, k+1, len(seq.Looks), n, strconv.FormatFloat(seq.Spent[k], 'g', 3, 64))
		settled := ci.Settled(rep)
		fmt.Fprintf(stderr, "bench ci: look %d of %d at n=%d per side (alpha %.3g): %s\n", k+1, len(seq.Looks), n, seq.Spent[k], map[bool]string{true: "every row settled, stopping", false: "not settled yet"}[settled])
		if settled {
			break
		}
	}
	fmt.Fprintf(stderr, "bench ci: --repeat auto ran %d runs per side\n", ab.Blocks())
	return finishReportRound2(stdout, stderr, rep, ab.Cur, th, f)
}

// finishCI compares cur with base (and with the history, with
// --history-window), records the run in the history and writes every
// output.
func finishCI(stdout, stderr io.Writer, base, cur *ci.Samples, th *ci.Thresholds, f ciFlags, o ci.Options) error {
	var rep *ci.Report
	if base != nil {
		rep = ci.Compare(base, cur, th.Metrics, o)
	}
	return finishReportRound2(stdout, stderr, rep, cur, th, f)
}

// finishReportRound2 adds the history comparison to rep (nil: none yet),
// records the run, writes annotations and the PR comment, then the
// outputs of finishReport.
func finishReportRound2(stdout, stderr io.Writer, rep *ci.Report, cur *ci.Samples, th *ci.Thresholds, f ciFlags) error {
	r := f.r2
	var recs []ci.HistoryRecord
	filter := ci.HistoryFilter{Testbed: r.testbed}
	if r.history != "" {
		var err error
		if recs, err = ci.ReadHistory(r.history); err != nil {
			return exitWith(exitUsage, err)
		}
	}
	if r.historyWindow > 0 {
		hs := ci.HistorySamples(recs, filter, r.historyWindow)
		hrep := ci.Compare(hs, ci.ByLabel(cur), th.Metrics, f.compareOptions(th.Alpha))
		if rep == nil {
			rep = hrep
		} else {
			rep.Merge(hrep, " vs history")
		}
	}
	if r.history != "" {
		rec := ci.NewHistoryRecord(cur, th.Metrics)
		rec.Time = time.Now().UTC()
		rec.Commit = gitOr(r.commit, []string{"GITHUB_SHA", "CI_COMMIT_SHA"}, "rev-parse", "HEAD")
		rec.Branch = gitOr(r.branch, []string{"GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"}, "rev-parse", "--abbrev-ref", "HEAD")
		rec.Testbed = r.testbed
		if rep != nil {
			rec.Verdict = rep.Verdict
		}
		if err := ci.AppendHistory(r.history, rec); err != nil {
			return exitWith(exitUsage, fmt.Errorf("--history: %w", err))
		}
		fmt.Fprintf(stderr, "bench ci: recorded this run in %s (commit %s, branch %s, testbed %q)\n", r.history, short(rec.Commit), rec.Branch, rec.Testbed)
	}
	if rep == nil {
		for _, c := range cur.Configs {
			for _, rule := range th.Metrics {
				v := c.Values[rule.Metric]
				fmt.Fprintf(stdout, "%s\t%s\t%s (n=%d)\n", c.Label, rule.Metric, ci.FormatValue(stats.Median(v)), len(v))
			}
		}
		fmt.Fprintf(stderr, "bench ci: no baseline to compare with: %s recorded\n", cur.Name)
		return nil
	}
	if r.annotations {
		rep.WriteGitHubAnnotations(stdout, "bench ci")
	}
	if r.prComment != "" {
		out, err := os.Create(r.prComment)
		if err == nil {
			err = rep.WritePRComment(out, "bench ci")
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return exitWith(exitUsage, fmt.Errorf("--pr-comment: %w", err))
		}
	}
	return finishReport(stdout, stderr, rep, f, "bench ci")
}

// abNoiseCheck is the noise check of an A/B job after its pilot blocks.
func abNoiseCheck(stderr io.Writer, ab *ci.ABRunner, th *ci.Thresholds, n int, paired bool, f ciFlags) {
	pairNoiseCheck(stderr, ab.Base, ab.Cur, th, n, paired, f)
}
