package main

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/benchtune/bench/storage"
)

// columnSel says which result columns bench results shows in a table
// (table and markdown formats): by default the optimization targets and
// the user's own results, and the built-in bench.* measurements only with
// --all or when named (--metrics, which takes names and glob patterns such
// as bench.*.run.wall_s). A target is always shown, built-in or not. CSV
// and JSON have every column.
type columnSel struct {
	all     bool
	metrics []string // names or path.Match patterns, "result." optional
}

// builtinMetric reports whether a metric is one of bench's own
// measurements (bench.<env>.<phase>.<what>, bench.cgroup.*, ...).
func builtinMetric(name string) bool { return strings.HasPrefix(name, "bench.") }

// check rejects a --metrics pattern path.Match cannot read.
func (c columnSel) check() error {
	for _, m := range c.metrics {
		if _, err := path.Match(strings.TrimPrefix(m, "result."), ""); err != nil {
			return fmt.Errorf("--metrics %q: %v", m, err)
		}
	}
	return nil
}

// shows reports whether the metric has a column.
func (c columnSel) shows(name string, objectives []storage.Objective) bool {
	if c.all || !builtinMetric(name) {
		return true
	}
	for _, o := range objectives {
		if o.Name == name {
			return true
		}
	}
	for _, m := range c.metrics {
		if ok, _ := path.Match(strings.TrimPrefix(m, "result."), name); ok {
			return true
		}
	}
	return false
}

// roundCell rounds a number for a terminal table: five significant digits
// (0.84142, 1.5312e-05, 12346); integers and text are left as they are.
// Full precision stays in CSV, JSON and bench export.
func roundCell(s string) string {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return s
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return s
		}
	}
	const digits = 5
	a := math.Abs(v)
	if a == 0 {
		return "0"
	}
	if a < 1e-4 || a >= 1e15 {
		return strconv.FormatFloat(v, 'g', digits, 64)
	}
	decimals := max(0, digits-1-int(math.Floor(math.Log10(a))))
	out := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(out, ".") {
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	return out
}

// anyReused reports whether a trial reused the result of an identical
// trial: bench results then has a reused_from column (issue 24), so that a
// copied result is not read as a new measurement.
func anyReused(trials []storage.Trial) bool {
	for _, t := range trials {
		if t.ReusedFrom != nil {
			return true
		}
	}
	return false
}

// reusedCell is the reused_from cell: the trial id whose result this one
// reused ("" when measured), as EXPERIMENT:ID when that trial is in
// another experiment (reuse_from).
func reusedCell(expID string, r *storage.TrialRef) string {
	if r == nil {
		return ""
	}
	if r.ExperimentID != "" && r.ExperimentID != expID {
		return r.ExperimentID + ":" + strconv.Itoa(r.TrialID)
	}
	return strconv.Itoa(r.TrialID)
}
