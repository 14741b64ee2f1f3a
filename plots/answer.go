package plots

import (
	"github.com/benchtune/bench/analysis"
	"github.com/benchtune/bench/storage"
)

// reportBest returns the trial the report shows as the best, and how it
// was chosen when that is not the best single trial: the confirmed winner
// (or the defaults), or a noise-aware run's pick, aggregated over its runs
// (analysis.Best); else BestTrial.
func reportBest(in ReportInput) (id int, how string, ok bool) {
	objs := storage.Targets(in.Info.Objectives)
	if a, found := analysis.Best(in.Info.Notes, in.Trials, objs, analysis.PoliciesFromNotes(in.Info.Notes, objs)); found && a.Basis != analysis.BasisObservation {
		how = a.Describe(objs)
		if a.Verdict != nil {
			how += ". " + a.Verdict.Line()
		}
		return a.TrialID, how, true
	}
	id, ok = BestTrial(in.Info.Objectives, in.Trials)
	return id, "", ok
}
