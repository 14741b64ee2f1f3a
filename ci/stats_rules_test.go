package ci

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/benchtune/bench/internal/stats"
)

// A p-value exactly equal to alpha is not significant (p < alpha is).
func TestPEqualAlphaIsNotSignificant(t *testing.T) {
	base := samples("base", map[string][]float64{"lat": {1, 2, 3, 4, 5}})
	cur := samples("cur", map[string][]float64{"lat": {6, 7, 8, 9, 10}})
	mw, _ := stats.UTest(stats.UTestBenchstat, []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10})
	rules := []Rule{{Metric: "lat", MaxIncrease: pct(0.05)}}
	rep := Compare(base, cur, rules, Options{Seed: 1, Alpha: mw.P})
	if r := rep.Rows[0]; r.Significant || r.Verdict != Pass || *r.P != mw.P {
		t.Errorf("alpha = p = %v: significant=%v verdict=%s", mw.P, r.Significant, r.Verdict)
	}
	// Just above p it is significant (and a regression).
	rep = Compare(base, cur, rules, Options{Seed: 1, Alpha: mw.P * (1 + 1e-9)})
	if r := rep.Rows[0]; !r.Significant || r.Verdict != Regression {
		t.Errorf("alpha just above p: significant=%v verdict=%s", r.Significant, r.Verdict)
	}
}

// Below 3 values on a side there is no bootstrap interval, in any output.
func TestNoIntervalBelowThreeValues(t *testing.T) {
	base := samples("base", map[string][]float64{"lat": {1, 1.1, 0.9, 1.05, 0.95, 1.02}})
	cur := samples("cur", map[string][]float64{"lat": {2, 2.1}})
	rep := Compare(base, cur, nil, Options{Seed: 1})
	if r := rep.Rows[0]; r.CILow != nil || r.CIHigh != nil || r.Change == nil {
		t.Fatalf("n=6+2: interval %v %v, change %v", r.CILow, r.CIHigh, r.Change)
	}
	var buf bytes.Buffer
	rep.WriteText(&buf, false)
	if strings.Contains(buf.String(), "[") {
		t.Errorf("an interval is printed for n=2:\n%s", buf.String())
	}
	cur = samples("cur", map[string][]float64{"lat": {2, 2.1, 1.9}})
	if r := Compare(base, cur, nil, Options{Seed: 1}).Rows[0]; r.CILow == nil {
		t.Error("no interval for n=6+3")
	}
}

// With ties the two methods give different p-values; the report says
// which one it used.
func TestUTestMethodOption(t *testing.T) {
	x := []float64{0, 0, 0, 0.004, 0, 0.004, 0, 0}
	y := []float64{0.004, 0, 0.004, 0.008, 0.004, 0, 0.004, 0.004}
	base, cur := samples("b", map[string][]float64{"sys": x}), samples("c", map[string][]float64{"sys": y})
	b := Compare(base, cur, nil, Options{Seed: 1})
	r := Compare(base, cur, nil, Options{Seed: 1, UTest: stats.UTestR})
	if *b.Rows[0].P == *r.Rows[0].P || !b.Rows[0].Exact || r.Rows[0].Exact {
		t.Errorf("benchstat p=%v exact=%v, R p=%v exact=%v", *b.Rows[0].P, b.Rows[0].Exact, *r.Rows[0].P, r.Rows[0].Exact)
	}
	if b.Method != Method || r.Method != MethodR || !strings.Contains(Method, "benchstat") {
		t.Errorf("methods: %q / %q", b.Method, r.Method)
	}
}

// A paired (A/B blocks) comparison: the sign test of the pairs and the
// median of the per-block ratios, even when a shared load moves both.
func TestPairedCompare(t *testing.T) {
	load := []float64{1, 3, 1.5, 2.5, 1, 4, 2, 1.2}
	var a, b []float64
	for i, l := range load {
		a = append(a, l*1.0*(1+0.01*float64(i%3)))
		b = append(b, l*1.1*(1+0.01*float64((i+1)%3)))
	}
	rules := []Rule{{Metric: "wall_s", MaxIncrease: pct(0.03)}}
	base, cur := samples("A", map[string][]float64{"wall_s": a}), samples("B", map[string][]float64{"wall_s": b})
	rep := Compare(base, cur, rules, Options{Seed: 1, Paired: true})
	r := rep.Rows[0]
	if r.Verdict != Regression || math.Abs(*r.P-2.0/256) > 1e-15 || math.Abs(*r.Change-0.1) > 0.02 || rep.Method != MethodPaired {
		t.Errorf("paired: %s p=%v change=%v (%s)", r.Verdict, *r.P, *r.Change, r.Reason)
	}
	// Unpaired, the load swamps the 10%: not significant.
	if r := Compare(base, cur, rules, Options{Seed: 1}).Rows[0]; r.Significant {
		t.Errorf("unpaired found it: p=%v", *r.P)
	}
	// 5 blocks cannot reach p < 0.05 with the sign test.
	rep = Compare(samples("A", map[string][]float64{"wall_s": a[:5]}), samples("B", map[string][]float64{"wall_s": b[:5]}), rules, Options{Seed: 1, Paired: true})
	if rep.Rows[0].Verdict != Insufficient {
		t.Errorf("5 blocks: %s", rep.Rows[0].Verdict)
	}
}
