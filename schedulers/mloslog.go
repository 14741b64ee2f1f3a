package schedulers

import (
	"fmt"
	"maps"
	"slices"

	"github.com/benchtune/bench/internal/pyfmt"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// The INFO lines below are those mlos_bench logs for each trial, with its
// wording, so that the scripts that grep mlos_bench's log files for them
// find them in bench's --log_file:
//
//	QUEUE: Added new trial: EXPERIMENT:TRIAL:CONFIG:RUNNER
//	QUEUE: Execute trial # N/MAX_TRIALS :: EXPERIMENT:TRIAL:CONFIG:RUNNER
//	TrialRunner: Update trial results: EXPERIMENT:TRIAL:CONFIG:RUNNER :: Status.SUCCEEDED {'score': 1.5, ...}
//	QUEUE: Finished trial: EXPERIMENT:TRIAL:CONFIG:RUNNER on TrialRunner(RUNNER)
//	Iteration N :: Register: { group::name[type](range:default)=value, ... } = Status.SUCCEEDED score: {'score': 1.5}
//
// MAX_TRIALS is -1 when max_trials is not set, as in mlos_bench.

// trialRepr is mlos_bench's text of a trial.
func trialRepr(t storage.Trial) string {
	runner := "None"
	if t.TrialRunnerID > 0 {
		runner = fmt.Sprint(t.TrialRunnerID)
	}
	return fmt.Sprintf("%s:%d:%d:%s", t.ExperimentID, t.ID, t.ConfigID, runner)
}

// statusRepr is Python's str() of mlos_bench's Status enum.
func statusRepr(s trial.Status) string { return "Status." + s.String() }

// resultsRepr writes results as a Python dict: every metric when targets
// is nil, else the targets only (None when the trial has no results).
func resultsRepr(results map[string]any, targets trial.Objectives) string {
	if results == nil {
		return "None"
	}
	var keys, vals []string
	if targets == nil {
		for _, k := range slices.Sorted(maps.Keys(results)) {
			keys = append(keys, k)
			vals = append(vals, pyfmt.MetricRepr(results[k]))
		}
	} else {
		for _, t := range targets {
			if v, ok := results[t.Name]; ok {
				keys = append(keys, t.Name)
				vals = append(vals, pyfmt.MetricRepr(v))
			}
		}
	}
	return pyfmt.DictRepr(keys, vals)
}

func (s *Scheduler) logAdded(t storage.Trial) {
	s.log.Info("QUEUE: Added new trial: " + trialRepr(t))
}

func (s *Scheduler) logExecute(t storage.Trial) {
	maxTrials := s.cfg.MaxTrials
	if maxTrials <= 0 {
		maxTrials = -1
	}
	s.log.Info(fmt.Sprintf("QUEUE: Execute trial # %d/%d :: %s", s.stats.Run, maxTrials, trialRepr(t)))
}

func (s *Scheduler) logFinished(t storage.Trial, out trial.Outcome) {
	results := out.Results
	if out.Status != trial.SUCCEEDED {
		results = nil
	}
	s.log.Info(fmt.Sprintf("TrialRunner: Update trial results: %s :: %s %s", trialRepr(t), statusRepr(out.Status), resultsRepr(results, nil)))
	s.log.Info(fmt.Sprintf("QUEUE: Finished trial: %s on TrialRunner(%d)", trialRepr(t), t.TrialRunnerID))
}

func (s *Scheduler) logRegister(iteration int, tun *tunables.Groups, out trial.Outcome) {
	score := "None"
	if out.Status == trial.SUCCEEDED {
		score = resultsRepr(out.Results, s.targets)
	}
	s.log.Info(fmt.Sprintf("Iteration %d :: Register: %s = %s score: %s", iteration, tun, statusRepr(out.Status), score))
}
