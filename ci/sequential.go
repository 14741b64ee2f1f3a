package ci

import (
	"fmt"
	"math"

	"github.com/benchtune/bench/internal/stats"
)

// Sequential is the group-sequential design of --repeat auto: the
// samples are looked at after Looks[k] runs per side, and look k may
// declare a change significant only at level Spent[k], the increment of
// the alpha-spending function α·t² (Kim & DeMets' power family, ρ = 2;
// t = Looks[k]/cap, so little is spent early). The increments add up to
// α, and by the union bound the chance that any look raises a false alarm
// is at most α, whatever the correlation between looks. A row is settled
// at a look when its change is significant at that look's level, or
// when its bootstrap 95% interval lies inside its threshold (stopping for
// that "futility" cannot raise a false alarm). The run stops at the first
// look where every row is settled, or at the cap.
type Sequential struct {
	Alpha float64
	Looks []int
	Spent []float64
}

// NewSequential plans the looks for a cap of maxRepeat runs per side:
// 6, 10, 15, 20, 30, 40, 60, 80, ... up to the cap (the cap itself is the
// last look). A row settles by its interval only from 10 runs per side.
func NewSequential(alpha float64, maxRepeat int) (*Sequential, error) {
	if maxRepeat < 6 {
		return nil, fmt.Errorf("--max-repeat must be at least 6 for --repeat auto, got %d", maxRepeat)
	}
	s := &Sequential{Alpha: alpha}
	for _, n := range []int{6, 10, 15, 20, 30, 40, 60, 80, 100, 150, 200} {
		if n < maxRepeat {
			s.Looks = append(s.Looks, n)
		}
	}
	s.Looks = append(s.Looks, maxRepeat)
	prev := 0.0
	for _, n := range s.Looks {
		t := float64(n) / float64(maxRepeat)
		cum := alpha * t * t
		s.Spent = append(s.Spent, cum-prev)
		prev = cum
	}
	return s, nil
}

// String states the design.
func (s *Sequential) String() string {
	out := fmt.Sprintf("group-sequential, alpha %s spent as alpha·t² over looks at", fmtP(s.Alpha))
	for i, n := range s.Looks {
		out += fmt.Sprintf(" n=%d (%s)", n, fmtP(s.Spent[i]))
		if i+1 < len(s.Looks) {
			out += ","
		}
	}
	return out + "; a row is settled when significant at its look's level or when its 95% interval of the change lies within the threshold"
}

// Settled tells whether every row of a comparison at look k is settled
// (see Sequential); rep must have been made with Alpha = Spent[k]. When
// it is, a row settled by its interval that the look's level alone calls
// insufficient passes (its interval rules out a change beyond the
// threshold), and the overall verdict is updated.
func Settled(rep *Report) bool {
	for _, r := range rep.Rows {
		switch {
		case r.Verdict == Missing:
			return true // no more runs will fix it
		case r.Significant:
		case futile(r):
		default:
			return false
		}
	}
	for i, r := range rep.Rows {
		if r.Verdict == Insufficient && futile(r) {
			rep.Rows[i].Verdict = Pass
			rep.Rows[i].Reason = "the 95% interval of the change lies within the threshold (" + r.Rule.String() + ")"
		}
	}
	rep.decide()
	return true
}

// futile tells whether a row's 95% interval of the change lies inside its
// threshold: more runs cannot make it a regression beyond the threshold.
func futile(r Row) bool {
	return r.Base.N >= minFutilityN && r.Cur.N >= minFutilityN &&
		r.Rule != nil && r.CILow != nil && r.CIHigh != nil && withinRule(*r.CILow, *r.CIHigh, *r.Rule)
}

// minFutilityN is the fewest runs per side from which a row may settle by
// its interval: a percentile bootstrap interval of 6 values is too
// narrow to trust.
const minFutilityN = 10

func withinRule(lo, hi float64, rule Rule) bool {
	if rule.MaxIncrease != nil && hi > *rule.MaxIncrease {
		return false
	}
	if rule.MaxDecrease != nil && -lo > *rule.MaxDecrease {
		return false
	}
	return true
}

// Noise is the noise check of one metric: its coefficient of variation
// and the smallest change the job can detect.
type Noise struct {
	Config, Metric string
	// CV is the robust coefficient of variation: 1.4826·MAD / |median|.
	CV float64
	// Detectable is the smallest relative change of the median that a
	// two-sided Mann–Whitney test at level Alpha detects with 80% power
	// with N runs per side: (z(1-α/2) + z(0.8)) · CV · √(2/N) / √(3/π)
	// (the normal shift approximation with the test's efficiency of 3/π
	// relative to the t-test, a rule of thumb, not a guarantee).
	Detectable float64
	N          int
	Alpha      float64
	Rule       *Rule
	// Paired: the noise of an A/B job's per-block ratios, for the sign
	// test: Detectable = (z(1-α/2) + z(0.8)) · CV / √N / √(2/π).
	Paired bool
}

// Warn tells whether the detectable change exceeds a limit of the
// metric's threshold: the job cannot reliably see a change that matters.
func (n Noise) Warn() bool {
	if n.Rule == nil {
		return false
	}
	for _, l := range []*float64{n.Rule.MaxIncrease, n.Rule.MaxDecrease} {
		if l != nil && n.Detectable > *l {
			return true
		}
	}
	return false
}

func (n Noise) String() string {
	what := "CV"
	if n.Paired {
		what = "CV of the per-block ratios"
	}
	s := fmt.Sprintf("%s [%s]: %s %.1f%%; with %d runs per side the smallest change this job detects (80%% power, alpha %s) is about %.1f%%",
		n.Metric, n.Config, what, 100*n.CV, n.N, fmtP(n.Alpha), 100*n.Detectable)
	if n.Warn() {
		s += ", more than the threshold (" + n.Rule.String() + "): raise the repeats (--repeat, --max-repeat) or use a steadier metric (CPU time rather than wall time)"
	}
	return s
}

// NoiseCheck computes the noise of every thresholded metric of s, for a
// job of n runs per side at level alpha.
func NoiseCheck(s *Samples, rules []Rule, n int, alpha float64) []Noise {
	var out []Noise
	z := stats.NormQuantile(1-alpha/2) + stats.NormQuantile(0.8)
	for _, c := range s.Configs {
		for i := range rules {
			cv := robustCV(c.Values[rules[i].Metric])
			if math.IsNaN(cv) {
				continue
			}
			out = append(out, Noise{Config: c.Label, Metric: rules[i].Metric, CV: cv, N: n, Alpha: alpha, Rule: &rules[i],
				Detectable: z * cv * math.Sqrt(2/float64(n)) / math.Sqrt(3/math.Pi)})
		}
	}
	return out
}

// NoiseCheckPaired is NoiseCheck for an A/B job in blocks: the robust CV
// of the per-block ratios candidate/baseline (the load both runs of a
// block share cancels out), and the change a sign test detects (a conservative bound for the
// signed-rank test bench uses).
func NoiseCheckPaired(base, cur *Samples, rules []Rule, n int, alpha float64) []Noise {
	var out []Noise
	z := stats.NormQuantile(1-alpha/2) + stats.NormQuantile(0.8)
	for ci, c := range cur.Configs {
		if ci >= len(base.Configs) {
			break
		}
		for i := range rules {
			x, y := base.Configs[ci].Values[rules[i].Metric], c.Values[rules[i].Metric]
			if len(x) < 3 || len(x) != len(y) {
				continue
			}
			r := make([]float64, 0, len(x))
			for j := range x {
				if x[j] != 0 {
					r = append(r, y[j]/x[j])
				}
			}
			cv := robustCV(r)
			if math.IsNaN(cv) {
				continue
			}
			out = append(out, Noise{Config: c.Label, Metric: rules[i].Metric, CV: cv, N: n, Alpha: alpha, Rule: &rules[i], Paired: true,
				Detectable: z * cv / math.Sqrt(float64(n)) / math.Sqrt(2/math.Pi)})
		}
	}
	return out
}

// robustCV is 1.4826·MAD / |median| (NaN for fewer than 3 values or a
// zero median).
func robustCV(v []float64) float64 {
	if len(v) < 3 {
		return math.NaN()
	}
	med := stats.Median(v)
	if med == 0 {
		return math.NaN()
	}
	dev := make([]float64, len(v))
	for j, x := range v {
		dev[j] = math.Abs(x - med)
	}
	return 1.4826 * stats.Median(dev) / math.Abs(med)
}
