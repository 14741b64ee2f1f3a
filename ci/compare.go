package ci

import (
	"math"
	"sort"

	"github.com/benchtune/bench/internal/stats"
)

// Verdicts of one metric and configuration.
const (
	// Pass: no significant change beyond the threshold (or no threshold).
	Pass = "pass"
	// Improved: a significant change in the good direction.
	Improved = "improved"
	// Regression: a significant change beyond the threshold in the bad
	// direction.
	Regression = "regression"
	// Insufficient: too few samples for the test to ever reach
	// significance; it is not a pass.
	Insufficient = "insufficient"
	// Missing: the metric or configuration has no samples on one side.
	Missing = "missing"
)

// Options tune Compare.
type Options struct {
	// Alpha is the significance level (0: the thresholds' or 0.05).
	Alpha float64
	// Seed seeds the bootstrap (the same data give the same interval).
	Seed uint64
	// Resamples of the bootstrap (0: stats.DefaultResamples).
	Resamples int
	// UTest is how the Mann–Whitney p-value is computed (empty:
	// stats.UTestBenchstat, exact with ties as benchstat).
	UTest stats.UTestMethod
	// Paired compares the i-th baseline value with the i-th current one
	// (an A/B job's blocks): the exact Wilcoxon signed-rank test of the
	// per-pair log ratios, and the
	// change as the median of the per-pair ratios, minus 1. Rows whose
	// sides differ in length fall back to the unpaired test.
	Paired bool
}

// MethodPaired states the verdict rule of a paired (blocked A/B) job.
const MethodPaired = "A/B in blocks: exact two-sided Wilcoxon signed-rank test of the per-block log ratios candidate/baseline (under no change the two runs of a block are exchangeable, since the order within a block is random, so each log ratio is symmetric about 0); a change is significant when p < alpha; the change is the median of the per-block ratios candidate/baseline, minus 1; a regression is a significant change beyond the threshold in the bad direction; the interval is a percentile bootstrap 95% CI of that median (2000 resamples of the blocks, fixed seed)"

// Side summarizes one side's samples of a metric.
type Side struct {
	N      int       `json:"n"`
	Median float64   `json:"median"`
	Values []float64 `json:"values"`
	// Spread is the half-width of the 95% confidence interval of the
	// median relative to the median (benchstat's "± x%"); null when the
	// interval does not exist (fewer than 6 values).
	Spread *float64 `json:"spread,omitempty"`
}

// Row is the comparison of one metric of one configuration.
type Row struct {
	Config string `json:"config"`
	Key    string `json:"config_hash"`
	Metric string `json:"metric"`
	Base   Side   `json:"baseline"`
	Cur    Side   `json:"current"`
	// Change is the relative change of the medians (0.05 = +5%); CILow and
	// CIHigh bound its bootstrap 95% interval. Nil when not computable.
	Change *float64 `json:"change,omitempty"`
	CILow  *float64 `json:"ci_low,omitempty"`
	CIHigh *float64 `json:"ci_high,omitempty"`
	// P is the two-sided Mann–Whitney p-value; Significant is P < alpha.
	P           *float64 `json:"p,omitempty"`
	Exact       bool     `json:"p_exact,omitempty"`
	Significant bool     `json:"significant"`
	Rule        *Rule    `json:"threshold,omitempty"`
	Verdict     string   `json:"verdict"`
	// Reason explains the verdict in a sentence.
	Reason string `json:"reason"`
}

// Report is a whole comparison.
type Report struct {
	Baseline string  `json:"baseline"`
	Current  string  `json:"current"`
	Alpha    float64 `json:"alpha"`
	Method   string  `json:"method"`
	Rows     []Row   `json:"rows"`
	// Verdict is the overall verdict: regression when any row is one,
	// else insufficient or missing when any row is, else pass.
	Verdict string `json:"verdict"`
}

// Method states how the verdicts are decided (benchstat's computation of
// the p-value, the default).
const Method = "two-sided Mann–Whitney U test of baseline vs current samples, p as benchstat computes it (golang.org/x/perf benchmath: exact distribution with ties up to 50 values per side, 25 with ties, else normal approximation with tie and continuity corrections); a change is significant when p < alpha; a regression is a significant change of the median beyond the threshold in the bad direction; the interval is a percentile bootstrap 95% CI of the relative change of the medians (2000 resamples, fixed seed, at least 3 values per side)"

// MethodR states the verdict rule with R's computation of the p-value.
const MethodR = "two-sided Mann–Whitney U test of baseline vs current samples, p as R's wilcox.test computes it (exact without ties and under 50 values per side, else normal approximation with tie and continuity corrections); a change is significant when p < alpha; a regression is a significant change of the median beyond the threshold in the bad direction; the interval is a percentile bootstrap 95% CI of the relative change of the medians (2000 resamples, fixed seed, at least 3 values per side)"

// Compare compares cur with base. With rules, every rule's metric is
// compared for every configuration of cur, and verdicts follow the
// rules; without, every metric both sides have is compared and verdicts
// are pass (or insufficient / missing).
func Compare(base, cur *Samples, rules []Rule, o Options) *Report {
	if o.Alpha <= 0 {
		o.Alpha = DefaultAlpha
	}
	if o.Resamples <= 0 {
		o.Resamples = stats.DefaultResamples
	}
	method := Method
	if o.UTest == stats.UTestR {
		method = MethodR
	}
	if o.Paired {
		method = MethodPaired
	}
	rep := &Report{Baseline: base.Name, Current: cur.Name, Alpha: o.Alpha, Method: method, Verdict: Pass}
	for ci := range cur.Configs {
		c := &cur.Configs[ci]
		b := base.Find(c.Key)
		if b == nil && len(base.Configs) == 1 && len(cur.Configs) == 1 {
			// One configuration on each side: compare them even when their
			// tunables differ (e.g. a result file of another tunable space).
			b = &base.Configs[0]
		}
		if b == nil {
			b = &ConfigSamples{Key: c.Key, Values: map[string][]float64{}}
		}
		if len(rules) > 0 {
			for i := range rules {
				rep.Rows = append(rep.Rows, compareOne(c, b, rules[i].Metric, &rules[i], o))
			}
			continue
		}
		var names []string
		for m := range c.Values {
			if len(b.Values[m]) > 0 {
				names = append(names, m)
			}
		}
		sort.Strings(names)
		for _, m := range names {
			rep.Rows = append(rep.Rows, compareOne(c, b, m, nil, o))
		}
	}
	rep.decide()
	return rep
}

func side(xs []float64) Side {
	s := Side{N: len(xs), Values: xs}
	if len(xs) == 0 {
		s.Median = math.NaN()
		return s
	}
	med, lo, hi, ok := stats.MedianSummary(xs, 0.95)
	s.Median = med
	if ok && s.Median != 0 {
		sp := math.Max(hi-s.Median, s.Median-lo) / math.Abs(s.Median)
		s.Spread = &sp
	}
	return s
}

func ptr(f float64) *float64 { return &f }

func compareOne(c, b *ConfigSamples, metric string, rule *Rule, o Options) Row {
	x, y := b.Values[metric], c.Values[metric]
	r := Row{Config: c.Label, Key: c.Key, Metric: metric, Base: side(x), Cur: side(y), Rule: rule}
	switch {
	case len(x) == 0 && b.Trials == 0:
		r.Verdict, r.Reason = Missing, "the baseline has no successful trial of this configuration"
		return r
	case len(x) == 0:
		r.Verdict, r.Reason = Missing, "the baseline has no numeric values of this metric"
		return r
	case len(y) == 0:
		r.Verdict, r.Reason = Missing, "the current run has no numeric values of this metric"
		return r
	}
	if o.Paired && len(x) == len(y) {
		if done, ok := pairedOne(&r, x, y, rule, o); ok {
			return done
		}
	}
	if ch := stats.RelChange(x, y); !math.IsNaN(ch) {
		r.Change = ptr(ch)
		if lo, hi, ok := stats.RelChangeCI(x, y, o.Resamples, 0.95, o.Seed); ok {
			r.CILow, r.CIHigh = ptr(lo), ptr(hi)
		}
	}
	mw, ok := stats.UTest(o.UTest, x, y)
	if ok {
		r.P, r.Exact = ptr(mw.P), mw.Exact
		// Strictly below: a p-value equal to alpha is not significant.
		r.Significant = mw.P < o.Alpha
	}
	if minP := stats.MinP(len(x), len(y)); minP >= o.Alpha {
		r.Verdict = Insufficient
		r.Reason = "too few samples to decide: with " + itoa(len(x)) + " baseline and " + itoa(len(y)) +
			" current values the smallest possible p-value is " + fmtP(minP) + ", not below alpha " + fmtP(o.Alpha) +
			" (use at least 4 or 5 repeats per side)"
		return r
	}
	if r.Change == nil {
		if r.Significant && rule != nil {
			// A baseline median of zero: any significant rise or fall is
			// beyond a relative limit.
			up := stats.Median(y) > stats.Median(x)
			if (up && rule.MaxIncrease != nil) || (!up && rule.MaxDecrease != nil) {
				r.Verdict, r.Reason = Regression, "significant change from a baseline median of 0"
				return r
			}
		}
		r.Verdict, r.Reason = Pass, "no relative change: the baseline median is 0"
		return r
	}
	return decideRow(r, rule)
}

// decideRow gives the verdict of a row with a change and a significance.
func decideRow(r Row, rule *Rule) Row {
	ch := *r.Change
	switch {
	case !r.Significant:
		r.Verdict, r.Reason = Pass, "no significant difference (p >= alpha)"
	case rule == nil:
		r.Verdict, r.Reason = Pass, "significant difference (no threshold)"
	case rule.MaxIncrease != nil && ch > *rule.MaxIncrease:
		r.Verdict, r.Reason = Regression, "rose "+FormatChange(ch)+", more than max_increase "+FormatPercent(*rule.MaxIncrease)
	case rule.MaxDecrease != nil && -ch > *rule.MaxDecrease:
		r.Verdict, r.Reason = Regression, "fell "+FormatChange(ch)+", more than max_decrease "+FormatPercent(*rule.MaxDecrease)
	case rule.MaxDecrease == nil && ch < 0, rule.MaxIncrease == nil && ch > 0:
		r.Verdict, r.Reason = Improved, "significant change in the good direction ("+FormatChange(ch)+")"
	default:
		r.Verdict, r.Reason = Pass, "significant change "+FormatChange(ch)+" within the threshold ("+rule.String()+")"
	}
	return r
}

// Merge appends other's rows to rep, their configurations suffixed (e.g.
// " vs history"), and recomputes the overall verdict.
func (rep *Report) Merge(other *Report, suffix string) {
	for _, r := range other.Rows {
		r.Config += suffix
		rep.Rows = append(rep.Rows, r)
	}
	rep.decide()
}

// decide sets the overall verdict from the rows: regression when any row
// is one, else missing or insufficient when any row is, else pass.
func (rep *Report) decide() {
	rep.Verdict = Pass
	for _, r := range rep.Rows {
		switch {
		case r.Verdict == Regression:
			rep.Verdict = Regression
		case rep.Verdict == Regression:
		case r.Verdict == Missing:
			rep.Verdict = Missing
		case r.Verdict == Insufficient && rep.Verdict != Missing:
			rep.Verdict = Insufficient
		}
	}
}

// pairedOne compares the pairs (x_i, y_i) of an A/B job's blocks; ok is
// false when they cannot be (a zero baseline value), and the unpaired
// test is used.
func pairedOne(r *Row, x, y []float64, rule *Rule, o Options) (Row, bool) {
	ch := stats.RatioChange(x, y)
	p, n, ok := stats.SignedRank(x, y)
	if math.IsNaN(ch) || !ok {
		return *r, false
	}
	r.Change, r.P, r.Exact = ptr(ch), ptr(p), true
	if lo, hi, ok := stats.RatioChangeCI(x, y, o.Resamples, 0.95, o.Seed); ok {
		r.CILow, r.CIHigh = ptr(lo), ptr(hi)
	}
	r.Significant = p < o.Alpha
	if minP := stats.PairedMinP(n); minP >= o.Alpha {
		r.Verdict = Insufficient
		r.Reason = "too few blocks to decide: with " + itoa(n) + " unequal pairs the smallest possible p-value of the signed-rank test is " +
			fmtP(minP) + ", not below alpha " + fmtP(o.Alpha) + " (use at least 6 blocks)"
		return *r, true
	}
	return decideRow(*r, rule), true
}
