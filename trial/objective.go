package trial

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/benchtune/bench/internal/suggest"
)

// Objective is one optimization target of an experiment.
type Objective struct {
	Name string
	Max  bool // maximize (scores are negated so that lower is better)
}

// Direction returns "min" or "max".
func (o Objective) Direction() string {
	if o.Max {
		return "max"
	}
	return "min"
}

// Objectives are an experiment's targets in order: the order decides the
// lexicographic comparison of single-point optimizers (mlos_bench's
// TrackBestOptimizer) and of "which trial is best".
type Objectives []Objective

// ErrMissingMetric is wrapped when a successful trial lacks a target
// metric or has a non-numeric one.
var ErrMissingMetric = errors.New("missing or non-numeric target metric")

// Scores turns a trial's results into values to minimize, in target order:
// the target metrics, negated for max targets, for SUCCEEDED; +Inf for every
// target otherwise. A successful trial whose results lack a target or hold
// a non-numeric (or infinite) value gives an error wrapping
// ErrMissingMetric.
func (os Objectives) Scores(status Status, results map[string]any) ([]float64, error) {
	out := make([]float64, len(os))
	if status != SUCCEEDED {
		for i := range out {
			out[i] = math.Inf(1)
		}
		return out, nil
	}
	for i, o := range os {
		v, ok := results[o.Name]
		if !ok {
			hint := ""
			if c, ok := suggest.Closest(o.Name, slices.Sorted(maps.Keys(results))); ok {
				hint = fmt.Sprintf("; did you mean %q?", c)
			}
			return nil, fmt.Errorf("%w: the trial succeeded but its results have no %q metric, the optimization target%s (got %s)", ErrMissingMetric, o.Name, hint, metricNames(results))
		}
		f, ok := Numeric(v)
		if !ok || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%w: the optimization target %q is %v, not a number", ErrMissingMetric, o.Name, v)
		}
		if o.Max {
			f = -f
		}
		out[i] = f
	}
	return out, nil
}

// MissingMetricReason is the failure reason of a trial that succeeded but
// whose results Scores rejects: the error's words, then the environment's
// notes (Outcome.Notes: a results pattern that matched none of the output,
// with its first lines).
func MissingMetricReason(err error, notes []string) string {
	if len(notes) == 0 {
		return err.Error()
	}
	return err.Error() + "; " + strings.Join(notes, "; ")
}

// Values turns scores back into the metrics' own signs (undoing the
// negation of max targets).
func (os Objectives) Values(scores []float64) []float64 {
	out := make([]float64, len(scores))
	for i, s := range scores {
		if i < len(os) && os[i].Max {
			s = -s
		}
		out[i] = s
	}
	return out
}

// BetterTrial is the one rule for "best" (the progress display, storage's
// Best, the summary): scores a of trial idA are better than scores b of
// trial idB when Less(a, b), and on a tie the lower trial id wins, whichever
// finished first.
func BetterTrial(a []float64, idA int, b []float64, idB int) bool {
	if Less(a, b) {
		return true
	}
	return !Less(b, a) && idA < idB
}

// Less reports whether scores a are better than b: lexicographic, lower is
// better (scores are already negated for max targets).
func Less(a, b []float64) bool {
	for i := range a {
		if i >= len(b) {
			return false
		}
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// Scored is a candidate for Best: an id and its scores.
type Scored struct {
	ID     int
	Scores []float64
}

// Best returns the best of the candidates by Less (the first one on ties),
// skipping candidates with a NaN or +Inf score; ok is false when none is
// left.
func Best(cands []Scored) (best Scored, ok bool) {
	for _, c := range cands {
		if !finite(c.Scores) {
			continue
		}
		if !ok || Less(c.Scores, best.Scores) {
			best, ok = c, true
		}
	}
	return best, ok
}

func metricNames(m map[string]any) string {
	if len(m) == 0 {
		return "no metrics"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// Numeric reads a result value as a float (numbers, and strings that
// parse as numbers); NaN is not a number here.
func Numeric(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x)
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f)
	}
	return 0, false
}
