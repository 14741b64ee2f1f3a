package launcher

import (
	"context"
	"fmt"
	"strings"

	"github.com/benchtune/bench/internal/pyfmt"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// Summary is the outcome of an experiment, for the final report and the
// exit code.
type Summary struct {
	ExperimentID string            `json:"experiment_id"`
	Storage      string            `json:"storage"`
	Resumed      bool              `json:"resumed"`
	Trials       int               `json:"trials"` // trials of the experiment
	Succeeded    int               `json:"succeeded"`
	Failed       int               `json:"failed"`
	Pending      int               `json:"pending"`
	Canceled     int               `json:"canceled,omitempty"` // stopped on request (bench stop)
	Pruned       int               `json:"pruned,omitempty"`   // stopped early by the pruner (stored CANCELED)
	Retried      int               `json:"retried,omitempty"`  // failed attempts that were retried
	Reused       int               `json:"reused,omitempty"`   // trials that reused an identical trial's result
	RunNow       int               `json:"run_now"`            // trials run by this process
	Planned      int               `json:"planned"`
	BestTrial    int               `json:"best_trial,omitempty"`
	BestConfig   map[string]string `json:"best_config,omitempty"`
	BestScores   map[string]any    `json:"best_scores,omitempty"`
	Targets      []string          `json:"targets"`
	Problems     []string          `json:"problems,omitempty"` // why the experiment counts as failed
	Warnings     []string          `json:"warnings,omitempty"`
	// EndReason says why the run ended; BestBasis how the best was chosen
	// when it is not the best single trial (a confirmation, a noise-aware
	// model), BestDetail the best's aggregate and spread, Confirmation the
	// confirmation's verdict, NoiseBest the noise-aware pick with the
	// learned noise (see launcher/noise.go).
	EndReason    string `json:"end_reason,omitempty"`
	BestBasis    string `json:"best_basis,omitempty"`
	BestDetail   string `json:"best_detail,omitempty"`
	Confirmation string `json:"confirmation,omitempty"`
	NoiseBest    string `json:"noise_best,omitempty"`
	// BestConfigID is the best's configuration; BestRuns how many of its
	// runs BestScores aggregate, with BestAggregates (per target: mean,
	// median, ...), when the best is a configuration's aggregate (a
	// confirmation, a noise-aware run) rather than one trial's result.
	BestConfigID   int64             `json:"best_config_id,omitempty"`
	BestRuns       int               `json:"best_runs,omitempty"`
	BestAggregates map[string]string `json:"best_aggregates,omitempty"`
}

// FinalScore is the best trial's target values as mlos_bench writes them
// in its "Final score: ..." log line: a Python dict of floats, in target
// order, or None when no trial succeeded.
func (s *Summary) FinalScore() string {
	if s.BestTrial == 0 {
		return "None"
	}
	var keys, vals []string
	for _, t := range s.Targets {
		name := strings.SplitN(t, ":", 2)[0]
		v := s.BestScores[name]
		text := pyfmt.MetricRepr(v)
		switch x := v.(type) {
		case string:
			if f, err := pyfmt.ParseFloat(x); err == nil {
				text = pyfmt.FloatRepr(f)
			}
		case int:
			text = pyfmt.FloatRepr(float64(x))
		case int64:
			text = pyfmt.FloatRepr(float64(x))
		}
		keys, vals = append(keys, name), append(vals, text)
	}
	return pyfmt.DictRepr(keys, vals)
}

// OK reports whether the experiment passed mlos_bench's rules.
func (s *Summary) OK() bool { return len(s.Problems) == 0 }

// Summarize reads the experiment's trials from storage and applies
// mlos_bench's end-of-run rules (its run.py _sanity_check_results), with
// its words: it fails when no trial ran, when fewer trials finished than
// planned (min(max_trials, trial_config_repeat_count × max_suggestions):
// "Expected N trials, but only M were run"), when more than 20% of the
// finished trials did not succeed ("Too many trials failed"), or when
// there is no best score.
func (r *Run) Summarize(ctx context.Context) (*Summary, error) {
	trials, err := r.Experiment.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		return nil, err
	}
	st := r.Scheduler.Stats()
	s := &Summary{ExperimentID: r.ExperimentID, Storage: r.Storage.Describe(), Resumed: r.Resumed, Trials: len(trials), RunNow: st.Run, Planned: st.Planned}
	targets := r.Optimizer.Targets()
	for _, t := range targets {
		s.Targets = append(s.Targets, t.Name+":"+t.Direction())
	}
	// A failed attempt that was retried counts as retried, not failed.
	lastAttempt := map[int]int{}
	for _, t := range trials {
		root := t.ID
		if t.RetryOf > 0 {
			root = t.RetryOf
		}
		lastAttempt[root] = max(lastAttempt[root], t.ID)
	}
	ready := 0 // unfinished trials whose run ended READY
	for _, t := range trials {
		root := t.ID
		if t.RetryOf > 0 {
			root = t.RetryOf
		}
		if t.ReusedFrom != nil {
			s.Reused++
		}
		switch {
		case !t.Finished():
			s.Pending++
			if t.Status == trial.READY {
				ready++
			}
		case t.Status == trial.SUCCEEDED:
			s.Succeeded++
		case trial.IsPruned(t.Status, t.FailureReason):
			s.Pruned++ // early stopping: a decision, not a failure
		case t.Status == trial.CANCELED:
			s.Canceled++
		case lastAttempt[root] != t.ID:
			s.Retried++
		default:
			s.Failed++
		}
	}
	if best, _, ok := storage.Best(trials, targets); ok {
		s.BestTrial = best.ID
		s.BestConfig = best.Params
		s.BestScores = map[string]any{}
		for _, tg := range targets {
			s.BestScores[tg.Name] = best.Results[tg.Name]
		}
	}
	if info, err := r.Storage.LoadExperiment(ctx, r.ExperimentID); err == nil {
		r.noiseSummary(s, trials, info.Info().Notes)
	}
	finished := s.Succeeded + s.Failed + s.Canceled + s.Pruned
	switch {
	case finished == 0 && ready > 0:
		s.Problems = append(s.Problems, fmt.Sprintf("no trial finished: %d ended their run READY, which is no result (an environment such as a NetworkEnv or SaaSEnv alone has no run step; add one that reports the scores). As in mlos_bench, they stay READY, and a resume runs them again", ready))
	case finished == 0:
		s.Problems = append(s.Problems, "No trials were run. "+checkDetails)
	case s.Planned > 0 && finished < s.Planned && s.Pending > 0:
		s.Problems = append(s.Problems, fmt.Sprintf("only %d of %d planned trials finished (%d left pending; run the same command again to resume)", finished, s.Planned, s.Pending))
	case s.Planned > 0 && finished < s.Planned && !st.StoppedByRule:
		// A stopping rule (bench only) ending the search early is no
		// problem; otherwise mlos_bench's check: the optimizer stopped before its budget (a
		// grid smaller than max_suggestions, a manual optimizer's cycles).
		s.Problems = append(s.Problems, fmt.Sprintf("Expected %d trials, but only %d were run. %s", s.Planned, finished, checkDetails))
	}
	if finished > 0 && s.BestTrial == 0 {
		s.Problems = append(s.Problems, noBestProblem(trials)) // fidelity.go
	}
	if finished > 0 && float64(s.Failed+s.Canceled) > 0.2*float64(finished) {
		// mlos_bench raises RuntimeWarning here, which fails its run.
		s.Problems = append(s.Problems, fmt.Sprintf("Too many trials failed: %d out of %d. %s", s.Failed+s.Canceled, finished, checkDetails))
	}
	return s, nil
}

// checkDetails ends mlos_bench's end-of-run errors.
const checkDetails = "Check configuration, scripts, and logs for details."
