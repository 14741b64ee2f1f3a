// Package aggregate turns the repeated measurements of one configuration
// (trial_config_repeat_count, adaptive repeats, confirmation runs) into one
// value: the mean (mlos_bench's behaviour: its optimizer sees every repeat,
// which for a Gaussian model is the mean with its noise divided by the
// count), the median, the min, the max, a trimmed mean, or the mean minus
// k standard deviations. It also gives the spread of the repeats: the
// coefficient of variation and an interval of the aggregate.
package aggregate

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kind is an aggregation function.
type Kind int

// The aggregation functions.
const (
	Mean Kind = iota
	Median
	Min
	Max
	TrimmedMean
	MeanMinusKSD
)

// Policy is how the repeats of a configuration become one value, in the
// metric's own units (not negated for "max" targets).
type Policy struct {
	Kind Kind
	// Param is the fraction trimmed from each end for TrimmedMean (default
	// 0.1) and k for MeanMinusKSD (default 1).
	Param float64
}

// Default is mlos_bench's behaviour: the mean.
var Default = Policy{Kind: Mean}

// Parse reads a policy: "mean", "median", "min", "max", "trimmed_mean"
// (or "trimmed_mean:0.2", the fraction cut from each end), "mean_minus_ksd"
// (or "mean_minus_ksd:2", k; a negative k adds |k| standard deviations,
// which is the pessimistic choice for a "min" target).
func Parse(s string) (Policy, error) {
	name, arg, hasArg := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	var p Policy
	switch strings.ReplaceAll(name, "-", "_") {
	case "mean", "":
		p.Kind = Mean
	case "median":
		p.Kind = Median
	case "min":
		p.Kind = Min
	case "max":
		p.Kind = Max
	case "trimmed_mean", "trimmed":
		p = Policy{Kind: TrimmedMean, Param: 0.1}
	case "mean_minus_ksd", "mean_ksd":
		p = Policy{Kind: MeanMinusKSD, Param: 1}
	default:
		return p, fmt.Errorf("unknown aggregation %q: want mean, median, min, max, trimmed_mean[:FRACTION] or mean_minus_ksd[:K]", s)
	}
	if hasArg {
		if p.Kind != TrimmedMean && p.Kind != MeanMinusKSD {
			return p, fmt.Errorf("aggregation %q takes no parameter", name)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(arg), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return p, fmt.Errorf("aggregation %q: parameter %q is not a number", name, arg)
		}
		if p.Kind == TrimmedMean && (v < 0 || v >= 0.5) {
			return p, fmt.Errorf("trimmed_mean: the fraction cut from each end must be in [0, 0.5), got %v", v)
		}
		p.Param = v
	}
	return p, nil
}

// String is the policy as Parse reads it.
func (p Policy) String() string {
	switch p.Kind {
	case Median:
		return "median"
	case Min:
		return "min"
	case Max:
		return "max"
	case TrimmedMean:
		return "trimmed_mean:" + strconv.FormatFloat(p.Param, 'g', -1, 64)
	case MeanMinusKSD:
		return "mean_minus_ksd:" + strconv.FormatFloat(p.Param, 'g', -1, 64)
	}
	return "mean"
}

// Of aggregates xs (NaN for none). xs is not changed.
func (p Policy) Of(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	switch p.Kind {
	case Median:
		s := sorted(xs)
		if n%2 == 1 {
			return s[n/2]
		}
		return (s[n/2-1] + s[n/2]) / 2
	case Min:
		return slices.Min(xs)
	case Max:
		return slices.Max(xs)
	case TrimmedMean:
		s := sorted(xs)
		cut := int(math.Floor(p.Param * float64(n)))
		if 2*cut >= n {
			cut = (n - 1) / 2
		}
		return MeanOf(s[cut : n-cut])
	case MeanMinusKSD:
		return MeanOf(xs) - p.Param*SD(xs)
	}
	return MeanOf(xs)
}

// OfScores aggregates values to minimize (a "max" target's metric negated)
// by the policy applied to the metric's own values, and returns the result
// as a value to minimize again.
func (p Policy) OfScores(scores []float64, max bool) float64 {
	if !max {
		return p.Of(scores)
	}
	m := make([]float64, len(scores))
	for i, v := range scores {
		m[i] = -v
	}
	return -p.Of(m)
}

// VarianceFactor is the variance of the aggregate of c repeats relative to
// that of the mean of c repeats, for normal noise (the median's asymptotic
// efficiency is 2/π; the others are treated as the mean).
func (p Policy) VarianceFactor() float64 {
	if p.Kind == Median {
		return math.Pi / 2
	}
	return 1
}

func sorted(xs []float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}

// MeanOf is the arithmetic mean (NaN for none).
func MeanOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range xs {
		s += v
	}
	return s / float64(len(xs))
}

// SD is the sample standard deviation (0 for fewer than two values).
func SD(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := MeanOf(xs)
	s := 0.0
	for _, v := range xs {
		s += (v - m) * (v - m)
	}
	return math.Sqrt(s / float64(len(xs)-1))
}

// Spread describes the repeats of one configuration.
type Spread struct {
	N     int     `json:"n"`
	Value float64 `json:"value"` // the aggregate
	Mean  float64 `json:"mean"`
	SD    float64 `json:"sd"`
	// CV is the coefficient of variation, SD/|Mean| (NaN when the mean
	// is 0 or there is a single value).
	CV float64 `json:"cv"`
	// Lo and Hi bound a 95% interval of the aggregate: Student's t
	// interval of the mean (scaled by the policy's variance factor) for
	// mean-like aggregates; for the others a percentile bootstrap. With a
	// single value the interval is that value.
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Describe computes the spread of xs under the policy.
func (p Policy) Describe(xs []float64) Spread {
	s := Spread{N: len(xs), Value: p.Of(xs), Mean: MeanOf(xs), SD: SD(xs), CV: math.NaN()}
	if s.N == 0 {
		s.Lo, s.Hi = math.NaN(), math.NaN()
		return s
	}
	if s.N >= 2 && s.Mean != 0 {
		s.CV = s.SD / math.Abs(s.Mean)
	}
	if s.N < 2 {
		s.Lo, s.Hi = s.Value, s.Value
		return s
	}
	switch p.Kind {
	case Min, Max:
		s.Lo, s.Hi = bootstrap(xs, p)
	default:
		half := TQuantile975(s.N-1) * s.SD * math.Sqrt(p.VarianceFactor()/float64(s.N))
		s.Lo, s.Hi = s.Value-half, s.Value+half
	}
	return s
}

// bootstrap is a deterministic percentile bootstrap (a fixed linear
// congruential sequence, so the same data give the same interval).
func bootstrap(xs []float64, p Policy) (lo, hi float64) {
	const b = 500
	n := len(xs)
	vals := make([]float64, b)
	buf := make([]float64, n)
	state := uint64(0x9e3779b97f4a7c15)
	for i := range vals {
		for j := range buf {
			state = state*6364136223846793005 + 1442695040888963407
			buf[j] = xs[(state>>33)%uint64(n)]
		}
		vals[i] = p.Of(buf)
	}
	slices.Sort(vals)
	return vals[b*25/1000], vals[b*975/1000-1]
}

// TQuantile975 is the 97.5% quantile of Student's t with df degrees of
// freedom (exact table up to 30, then the normal value with a first-order
// correction).
func TQuantile975(df int) float64 {
	table := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df < 1 {
		return math.Inf(1)
	}
	if df < len(table) {
		return table[df]
	}
	z := 1.959964
	return z + (z*z*z+z)/(4*float64(df))
}
