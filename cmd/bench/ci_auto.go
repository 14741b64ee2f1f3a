package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/benchtune/bench/ci"
	"github.com/benchtune/bench/configs"
)

// configABOrder is the order of the blocks of a config A/B job
// (--ab-order, random by default as for commands); "" for a run against a
// stored baseline (the set in order, as mlos_bench's ManualOptimizer).
func (f *ciFlags) configABOrder() string {
	if f.r2.baselineConfig == "" {
		return ""
	}
	if f.r2.abOrder == "" {
		return ci.OrderRandomBlocks
	}
	return f.r2.abOrder
}

// splitConfigAB splits the samples of a config A/B job: the first
// configuration of the set is the baseline, the second the candidate.
func splitConfigAB(cur *ci.Samples) (base, cand *ci.Samples, err error) {
	if len(cur.Configs) != 2 {
		return nil, nil, errors.New("--baseline-config and --candidate-config give the same configuration: nothing to compare")
	}
	return &ci.Samples{Name: "baseline " + cur.Configs[0].Label, Configs: cur.Configs[:1]},
		&ci.Samples{Name: "candidate " + cur.Configs[1].Label, Configs: cur.Configs[1:]}, nil
}

// pairNoiseCheck is the noise check of an A/B job: of the per-block
// ratios when paired, else of the baseline's runs.
func pairNoiseCheck(stderr io.Writer, base, cand *ci.Samples, th *ci.Thresholds, n int, paired bool, f ciFlags) {
	if !paired {
		noiseCheck(stderr, base, th, n, f)
		return
	}
	for _, nz := range ci.NoiseCheckPaired(base, cand, th.Metrics, n, th.Alpha) {
		kind := "noise"
		if nz.Warn() {
			kind = "warning"
		}
		fmt.Fprintf(stderr, "bench ci: %s: %s\n", kind, nz)
	}
}

// runCIConfigAuto runs bench ci --config with --repeat auto: the set is
// run in cycles (random blocks for a config A/B job) and looked at after
// each look of ci.Sequential's group-sequential design, against the
// stored baseline or, for a config A/B job, the baseline configuration;
// it stops at the first look where every row is settled, or at
// --max-repeat runs per configuration.
func runCIConfigAuto(ctx context.Context, stdout, stderr io.Writer, f ciFlags, th *ci.Thresholds, l *configs.Launch, set []ci.Entry, base *ci.Samples) error {
	maxRepeat := f.r2.maxRepeat
	if maxRepeat == 0 {
		maxRepeat = 20
	}
	seq, err := ci.NewSequential(th.Alpha, maxRepeat)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	ab := f.r2.baselineConfig != ""
	opts := f.compareOptions(th.Alpha)
	opts.Paired = ab && f.r2.abTest != "unpaired"
	if ab {
		fmt.Fprintf(stderr, "bench ci: A/B of configurations in one job, order %s, --repeat auto: %s\n", f.configABOrder(), seq)
	} else {
		fmt.Fprintf(stderr, "bench ci: --repeat auto against the baseline: %s\n", seq)
		noiseCheck(stderr, base, th, maxRepeat, f)
	}
	var (
		r       *ci.Run
		rep     *ci.Report
		lookErr error
		ran     int
	)
	look := func(k int) bool {
		n := seq.Looks[k]
		cur, _, _, err := r.Samples(context.WithoutCancel(ctx))
		if err != nil {
			lookErr = err
			return true
		}
		b := base
		if ab {
			if b, cur, err = splitConfigAB(cur); err != nil {
				lookErr = err
				return true
			}
			if k == 0 {
				pairNoiseCheck(stderr, b, cur, th, maxRepeat, opts.Paired, f)
			}
		}
		o := opts
		o.Alpha = seq.Spent[k]
		rep = ci.Compare(b, cur, th.Metrics, o)
		rep.Method = fmt.Sprintf("%s; --repeat auto (%s) stopped at look %d of %d, n=%d runs per configuration, alpha spent at this look %s", rep.Method, seq, k+1, len(seq.Looks), n, strconv.FormatFloat(seq.Spent[k], 'g', 3, 64))
		settled := ci.Settled(rep)
		ran = n
		fmt.Fprintf(stderr, "bench ci: look %d of %d at n=%d per configuration (alpha %.3g): %s\n", k+1, len(seq.Looks), n, seq.Spent[k], map[bool]string{true: "every row settled, stopping", false: "not settled yet"}[settled])
		return settled
	}
	prog := newProgress(stderr, !l.Args.NoProgress)
	r, err = ci.Build(ctx, l, ci.RunOptions{Set: set, Repeat: maxRepeat, SaveAs: f.saveAs, Thresholds: th, Observer: prog,
		Order: f.configABOrder(), Seed: uint64(time.Now().UnixNano()), Looks: seq.Looks, Look: look})
	if err != nil {
		if ctx.Err() != nil {
			return exitWith(exitInterrupted, errors.New("interrupted"))
		}
		return exitWith(exitUsage, err)
	}
	defer r.Close()
	fmt.Fprintf(stderr, "bench ci: experiment %q in %s: %d configuration(s) × at most %d repeats, interleaved\n", r.ExperimentID, r.Storage.Describe(), len(set), maxRepeat)
	prog.begin(r.Scheduler.Stats().Planned, r.Optimizer.Targets())
	runErr := r.Scheduler.Start(ctx)
	prog.finish()
	if ctx.Err() != nil {
		return exitWith(exitInterrupted, errors.New("interrupted"))
	}
	if lookErr != nil {
		return exitWith(exitUsage, lookErr)
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
	if rep == nil {
		return exitWith(exitUsage, fmt.Errorf("--repeat auto: the run ended before its first look (%d runs per configuration)", seq.Looks[0]))
	}
	fmt.Fprintf(stderr, "bench ci: --repeat auto ran %d runs per configuration\n", ran)
	if ab {
		_, cur, _ = splitConfigAB(cur)
	}
	return finishReportRound2(stdout, stderr, rep, cur, th, f)
}
