package stats

import (
	"fmt"
	"math"
	"slices"

	moremath "github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"
)

// UTestMethod names how the p-value of the Mann–Whitney U test is
// computed.
type UTestMethod string

const (
	// UTestBenchstat is benchstat's computation (golang.org/x/perf's
	// benchmath.AssumeNothing, go-moremath's MannWhitneyUTest): the exact
	// distribution of U, with ties, while both samples have at most 50
	// values (25 when some value is tied); else the normal approximation
	// with tie and continuity corrections. The default of bench ci.
	UTestBenchstat UTestMethod = "benchstat"
	// UTestR is R's wilcox.test(x, y) default: exact only without ties
	// and below 50 values per sample, else the normal approximation.
	UTestR UTestMethod = "r"
)

// ParseUTestMethod reads a method name ("benchstat" or "r").
func ParseUTestMethod(s string) (UTestMethod, error) {
	switch UTestMethod(s) {
	case UTestBenchstat, UTestR:
		return UTestMethod(s), nil
	case "":
		return UTestBenchstat, nil
	}
	return "", fmt.Errorf("unknown Mann–Whitney method %q: use benchstat (exact with ties, the default) or r (R's wilcox.test)", s)
}

// UTest runs the two-sided Mann–Whitney U test of x against y with the
// given method (UTestBenchstat when empty). ok is false when a sample is
// empty or holds a NaN.
func UTest(method UTestMethod, x, y []float64) (MannWhitney, bool) {
	if method == UTestR {
		return MannWhitneyU(x, y)
	}
	return MannWhitneyBenchstat(x, y)
}

// MannWhitneyBenchstat is the two-sided Mann–Whitney U test as benchstat
// computes it: U as MannWhitneyU counts it, and the p-value of
// benchmath.AssumeNothing.Compare (exact with ties for small samples).
// When every value of both samples is the same, p is 1, as benchstat
// reports it.
func MannWhitneyBenchstat(x, y []float64) (r MannWhitney, ok bool) {
	r, ok = MannWhitneyU(x, y) // U, and the checks of the input
	if !ok {
		return r, false
	}
	th := benchmath.DefaultThresholds
	cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(slices.Clone(x), &th), benchmath.NewSample(slices.Clone(y), &th))
	r.P = math.Min(1, cmp.P)
	limit := moremath.MannWhitneyExactLimit
	if hasTies(x, y) {
		limit = moremath.MannWhitneyTiesExactLimit
	}
	r.Exact = len(x) <= limit && len(y) <= limit
	return r, true
}

func hasTies(x, y []float64) bool {
	all := append(slices.Clone(x), y...)
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			return true
		}
	}
	return false
}

// MedianSummary returns the median of xs and benchstat's
// distribution-free confidence interval of it at level conf
// (benchmath.AssumeNothing.Summary): ok is false, and lo and hi
// infinite, when the sample is too small for an interval at that level
// (fewer than 6 values at 95%), which benchstat shows as "± ∞".
func MedianSummary(xs []float64, conf float64) (median, lo, hi float64, ok bool) {
	if len(xs) == 0 {
		return math.NaN(), math.Inf(-1), math.Inf(1), false
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(slices.Clone(xs), &benchmath.DefaultThresholds), conf)
	return s.Center, s.Lo, s.Hi, !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0)
}
