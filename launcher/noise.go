package launcher

import (
	"github.com/benchtune/bench/analysis"
	"github.com/benchtune/bench/internal/aggregate"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// Policies returns the aggregation of each target's repeats, in target
// order, from the scheduler's repeat_aggregate.
func (r *Run) Policies() analysis.Policies {
	var p analysis.Policies
	for _, t := range r.Optimizer.Targets() {
		p = append(p, r.SchedulerConfig.Noise.Policy(t.Name))
	}
	return p
}

// noiseSummary fills the summary's end reason and, when a confirmation ran
// or the run was noise-aware, replaces the best single trial with the
// experiment's answer (analysis.Best), aggregated over its runs.
func (r *Run) noiseSummary(s *Summary, trials []storage.Trial, notes []string) {
	st := r.Scheduler.Stats()
	s.EndReason = st.EndReason
	if s.EndReason == "" {
		s.EndReason = storage.EndReason(notes)
	}
	s.Confirmation = st.Confirmation
	s.NoiseBest = st.NoiseBest
	objs := trial.Objectives(r.Optimizer.Targets())
	a, ok := analysis.Best(notes, trials, objs, r.Policies())
	if !ok || a.Basis == analysis.BasisObservation {
		return
	}
	if a.Verdict != nil && s.Confirmation == "" {
		s.Confirmation = a.Verdict.Line()
	}
	s.BestBasis = a.Basis
	s.BestDetail = a.Describe(objs)
	s.BestTrial = a.TrialID
	s.BestConfig = a.Params
	s.BestScores = map[string]any{}
	s.BestConfigID = a.ConfigID
	if a.Config != nil {
		s.BestRuns = a.Config.Succeeded
	}
	s.BestAggregates = map[string]string{}
	pols := r.Policies()
	for i, t := range objs {
		if i < len(a.Values) {
			s.BestScores[t.Name] = a.Values[i]
			s.BestAggregates[t.Name] = aggregate.Default.String()
			if i < len(pols) {
				s.BestAggregates[t.Name] = pols[i].String()
			}
		}
	}
}
