package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/benchtune/bench/analysis"
	"github.com/benchtune/bench/internal/aggregate"
	"github.com/benchtune/bench/launcher"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// printNoiseSummary adds to bench run's summary why the run ended and,
// when the best is not the best single trial, how it was chosen.
func printNoiseSummary(w io.Writer, s *launcher.Summary) {
	if s.BestBasis != "" {
		fmt.Fprintf(w, "Best: %s\n", s.BestDetail)
	}
	if s.Confirmation != "" {
		fmt.Fprintf(w, "Confirmation: %s\n", s.Confirmation)
	}
	if s.NoiseBest != "" {
		fmt.Fprintf(w, "Noise-aware best: %s\n", s.NoiseBest)
	}
	if s.EndReason != "" {
		fmt.Fprintf(w, "End reason: %s\n", s.EndReason)
	}
}

// experimentAnswerLines are the lines bench results prints under its
// header: the experiment's answer when it is not the best single trial (a
// confirmation, a noise-aware run).
func experimentAnswerLines(info storage.ExperimentInfo, trials []storage.Trial) []string {
	var out []string
	objs := storage.Targets(info.Objectives)
	if a, ok := analysis.Best(info.Notes, trials, objs, analysis.PoliciesFromNotes(info.Notes, objs)); ok && a.Basis != analysis.BasisObservation {
		out = append(out, "Best: "+a.Describe(objs)+fmt.Sprintf(", trial %d", a.TrialID))
		if a.Verdict != nil {
			out = append(out, "Confirmation: "+a.Verdict.Line())
		}
	}
	return out
}

// endReasonLine says why the experiment's last run ended ("" when not
// recorded); bench results prints it on stderr, beside the table.
func endReasonLine(info storage.ExperimentInfo) string {
	if r := storage.EndReason(info.Notes); r != "" {
		return "end reason: " + r
	}
	return ""
}

// writeByConfig prints one row per configuration: its repeats aggregated
// (policy per target), with their spread, best first.
func writeByConfig(w io.Writer, info storage.ExperimentInfo, trials []storage.Trial, pols analysis.Policies, format string) error {
	objs := storage.Targets(info.Objectives)
	if pols == nil {
		pols = analysis.PoliciesFromNotes(info.Notes, objs) // the experiment's own repeat_aggregate
	}
	cs := analysis.ByConfig(trials, objs, pols, false)
	if format == "json" {
		return writeJSON(w, cs)
	}
	header := []string{"config", "runs", "failed"}
	for _, o := range objs {
		header = append(header, "result."+o.Name)
	}
	header = append(header, "cv", "interval", "trials", "params")
	var rows [][]string
	for _, c := range cs {
		row := []string{fmt.Sprint(c.ConfigID), fmt.Sprint(c.Succeeded), fmt.Sprint(c.Failed)}
		for i := range objs {
			if i < len(c.Values) {
				row = append(row, fmt.Sprintf("%.6g", c.Values[i]))
			} else {
				row = append(row, "")
			}
		}
		cv, iv := "", ""
		if c.Succeeded > 1 && !math.IsNaN(c.Spread.CV) {
			cv = fmt.Sprintf("%.1f%%", 100*c.Spread.CV)
		}
		if c.Succeeded > 1 {
			iv = fmt.Sprintf("[%.6g, %.6g]", c.Spread.Lo, c.Spread.Hi)
		}
		ids := make([]string, len(c.TrialIDs))
		for i, id := range c.TrialIDs {
			ids[i] = fmt.Sprint(id)
		}
		var ps []string
		for _, k := range sortedParamKeys(c.Params) {
			ps = append(ps, k+"="+c.Params[k])
		}
		row = append(row, cv, iv, strings.Join(ids, ","), strings.Join(ps, " "))
		rows = append(rows, row)
	}
	return writeRows(w, format, header, rows)
}

func sortedParamKeys(m map[string]string) []string {
	b := make(map[string]bool, len(m))
	for k := range m {
		b[k] = true
	}
	return sortedKeys(b)
}

// parsePolicies reads --aggregate: one policy for every target, or
// TARGET=POLICY pairs separated by commas.
func parsePolicies(spec string, objs trial.Objectives) (analysis.Policies, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	per := map[string]string{}
	all := ""
	for _, part := range strings.Split(spec, ",") {
		if k, v, ok := strings.Cut(part, "="); ok {
			per[strings.TrimSpace(k)] = v
		} else {
			all = part
		}
	}
	var out analysis.Policies
	for _, o := range objs {
		s, ok := per[o.Name]
		if !ok {
			s = all
		}
		p, err := parseAggregate(s)
		if err != nil {
			return nil, fmt.Errorf("--aggregate: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseAggregate(s string) (aggregate.Policy, error) { return aggregate.Parse(s) }
