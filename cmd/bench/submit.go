package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/runners/passive"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

func newSubmitCmd() *cobra.Command {
	var sf storageFlags
	var failed, skip string
	var step int64
	cmd := &cobra.Command{
		Use:   "submit EXPERIMENT TRIAL METRIC=VALUE... | --failed REASON | --skip [REASON] | --step N METRIC=VALUE...",
		Short: "Store the result of a trial run by hand (the passive runner; bench only)",
		Long: `Store the result of a trial that a person ran by hand (bench run --passive
shows each trial's configuration and waits for its result). The trial is
finished in storage at once: the bench waiting for it sees it within a
second and goes on; when no bench runs, the next one sees it finished.

Every value must be a number and every optimization target of the
experiment must be given; otherwise nothing is stored, the trial keeps
waiting and the exit code is 2.

  bench submit myexp 17 score=1.23 latency_ms=4     the results of trial 17
  bench submit myexp 17 --failed "app crashed"      trial 17 FAILED
  bench submit myexp 17 --skip phone is charging    trial 17 skipped (CANCELED:
                                                    the optimizer does not see it)
  bench submit myexp 17 --step 3 loss=0.5           an intermediate result of trial 17
                                                    at step 3 (progress, for early
                                                    stopping): the trial keeps waiting

Exit codes: 0 stored; 1 the trial already finished, or it is not run by
hand; 2 bad usage, an unknown experiment or trial, or a result refused.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			stderr := cmd.ErrOrStderr()
			sf.experiment = args[0]
			id, err := strconv.Atoi(args[1])
			if err != nil || id < 1 {
				return exitWith(exitUsage, fmt.Errorf("TRIAL must be a trial id (a number >= 1), got %q", args[1]))
			}
			words := args[2:]
			failedSet, skipSet := cmd.Flags().Changed("failed"), cmd.Flags().Changed("skip")
			if failedSet && skipSet {
				return exitWith(exitUsage, errors.New("give either --failed or --skip, not both"))
			}
			stepSet := cmd.Flags().Changed("step")
			if stepSet && (failedSet || skipSet) {
				return exitWith(exitUsage, errors.New("--step stores an intermediate result: give it without --failed or --skip"))
			}
			if stepSet && len(words) == 0 {
				return exitWith(exitUsage, fmt.Errorf("--step %d needs the intermediate results as METRIC=VALUE (e.g. --step %d loss=0.5)", step, step))
			}
			if !failedSet && !skipSet && len(words) == 0 {
				return exitWith(exitUsage, errors.New("give the trial's results as METRIC=VALUE (e.g. score=1.23), or --failed REASON, or --skip [REASON]"))
			}
			ctx := cmd.Context()
			st, exp, err := sf.openWritable(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			t, err := exp.Trial(ctx, id)
			if err != nil {
				if errors.Is(err, storage.ErrNotFound) {
					return exitWith(exitUsage, fmt.Errorf("experiment %s has no trial %d", args[0], id))
				}
				return err
			}
			if t.Finished() {
				return exitWith(exitFailed, fmt.Errorf("trial %d of experiment %s has already finished (%s at %s); nothing stored",
					id, args[0], t.Status, t.TsEnd.Local().Format("2006-01-02 15:04:05")))
			}
			switch {
			case t.Job != nil && t.Job.Engine != passive.Engine:
				return exitWith(exitFailed, fmt.Errorf("trial %d of experiment %s runs as a %s job, not by hand; bench submit is for trials of the passive runner (bench stop %s %d stops it)",
					id, args[0], t.Job.Engine, args[0], id))
			case t.Job == nil && t.Owner != "" && t.Status == trial.RUNNING:
				return exitWith(exitFailed, fmt.Errorf("trial %d of experiment %s is running in bench process %s, not by hand; bench submit is for trials of the passive runner (bench stop %s %d stops it)",
					id, args[0], t.Owner, args[0], id))
			case t.Job == nil:
				// Every trial a passive bench shows is recorded as a job
				// of the passive engine before it is shown; one without
				// is run by a script (interrupted, it runs again on
				// resume) or not shown yet: a result given here would be
				// made up.
				return exitWith(exitFailed, fmt.Errorf("trial %d of experiment %s (%s) is not waiting for a hand-run result: no bench --passive has shown it; bench submit is for trials of the passive runner; nothing stored",
					id, args[0], t.Status))
			}
			if stepSet {
				// An intermediate result: stored with the trial, which
				// keeps waiting; the bench waiting for it hands it to the
				// scheduler (early stopping) as it finds it.
				values, err := passive.ProgressValuesLike(words, "--step 3 loss=0.5")
				if err != nil {
					return exitWith(exitUsage, fmt.Errorf("trial %d of experiment %s: %w; nothing stored", id, args[0], err))
				}
				p := trial.Progress{Step: step, Ts: time.Now().UTC(), Values: values}
				if err := exp.AddProgress(ctx, id, []trial.Progress{p}); err != nil {
					return err
				}
				fmt.Fprintf(stderr, "bench: stored progress of trial %d of experiment %s at step %d: %s; the trial still waits for its result\n",
					id, args[0], step, passive.ValuesText(values))
				return nil
			}
			targets := storage.Targets(exp.Info().Objectives)
			var out trial.Outcome
			switch {
			case failedSet:
				out = passive.Failed(strings.TrimSpace(failed + " " + strings.Join(words, " ")))
			case skipSet:
				out = passive.Skipped(strings.TrimSpace(skip + " " + strings.Join(words, " ")))
			default:
				// The prompt's grammar: metric=value pairs, fail [reason],
				// skip [reason].
				if out, err = passive.Parse(strings.Join(words, " "), targets); err != nil {
					return exitWith(exitUsage, fmt.Errorf("trial %d of experiment %s: %w; nothing stored, the trial is still waiting", id, args[0], err))
				}
			}
			summary := outcomeText(out)
			out.Output = []trial.Output{{Phase: "run", Env: passive.Engine, Command: "bench submit", Start: out.Ts,
				Stdout: fmt.Sprintf("result submitted with bench submit by %s: %s\n", who(), summary)}}
			if err := exp.Finish(ctx, id, out); err != nil {
				if errors.Is(err, storage.ErrFinished) {
					return exitWith(exitFailed, fmt.Errorf("trial %d of experiment %s has already finished; nothing stored", id, args[0]))
				}
				return err
			}
			fmt.Fprintf(stderr, "bench: stored trial %d of experiment %s: %s\n", id, args[0], summary)
			if t.Owner != "" && t.LeaseUntil.After(time.Now()) && !schedulers.OwnerDead(t.Owner) {
				fmt.Fprintln(stderr, "bench: the bench waiting for it goes on within a second")
			} else {
				fmt.Fprintln(stderr, "bench: no bench is waiting for it now; the next bench run of the experiment sees it finished")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&failed, "failed", "", "mark the trial FAILED with this reason")
	cmd.Flags().StringVar(&skip, "skip", "", "skip the trial, with an optional reason: stored CANCELED (\"skipped by hand: REASON\"); the optimizer does not see it")
	cmd.Flags().Lookup("skip").NoOptDefVal = " "
	cmd.Flags().Var(stepFlag{&step}, "step", "store METRIC=VALUE... as an intermediate result (progress) at this step (a whole number >= 0); the trial keeps waiting")
	sf.addStorageOnly(cmd)
	return cmd
}

// who names the person submitting: user@host.
func who() string {
	name := "someone"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if h, err := os.Hostname(); err == nil {
		name += "@" + h
	}
	return name
}

// outcomeText is an outcome in one line: "SUCCEEDED score=1.2 x=3",
// "FAILED (reason)".
func outcomeText(out trial.Outcome) string {
	msg := out.Status.String()
	keys := make([]string, 0, len(out.Results))
	for k := range out.Results {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		msg += fmt.Sprintf(" %s=%v", k, out.Results[k])
	}
	if out.FailureReason != "" {
		msg += " (" + out.FailureReason + ")"
	}
	return msg
}

// stepFlag is --step: a whole number >= 0, refused with a message that
// says so (not strconv's "invalid syntax").
type stepFlag struct{ v *int64 }

func (s stepFlag) Set(text string) error {
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 0 {
		return errors.New("the step must be a whole number >= 0 (e.g. --step 3 loss=0.5)")
	}
	*s.v = n
	return nil
}

func (s stepFlag) String() string {
	if s.v == nil {
		return "0"
	}
	return strconv.FormatInt(*s.v, 10)
}

func (s stepFlag) Type() string { return "int" }
