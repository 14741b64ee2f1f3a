package aggregate

import (
	"math"
	"testing"
)

func TestPolicies(t *testing.T) {
	xs := []float64{4, 1, 3, 100, 2}
	cases := []struct {
		spec string
		want float64
	}{
		{"mean", 22},
		{"", 22},
		{"median", 3},
		{"min", 1},
		{"max", 100},
		{"trimmed_mean:0.2", 3},  // drops 1 and 100
		{"trimmed_mean", 22},     // 10% of 5 values rounds down to none
		{"mean_minus_ksd:0", 22}, // k = 0 is the mean
		{"Mean-Minus-KSD:0", 22}, // case and dashes
		{"mean_minus_ksd:-1", 22 + SD(xs)},
	}
	for _, c := range cases {
		p, err := Parse(c.spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.spec, err)
		}
		if got := p.Of(xs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: got %v, want %v", c.spec, got, c.want)
		}
	}
	for _, bad := range []string{"avg", "median:2", "trimmed_mean:0.5", "mean_minus_ksd:x"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// A "max" target's scores are negated metrics: "min" must pick the
// smallest metric, which is the largest score.
func TestOfScoresMax(t *testing.T) {
	p, _ := Parse("min")
	if got := p.OfScores([]float64{-10, -30, -20}, true); got != -10 {
		t.Errorf("min of metrics 10, 30, 20 as a score: got %v, want -10", got)
	}
	if got := p.OfScores([]float64{10, 30, 20}, false); got != 10 {
		t.Errorf("min of a min target: got %v, want 10", got)
	}
}

func TestDescribe(t *testing.T) {
	s := Default.Describe([]float64{9, 10, 11})
	if s.N != 3 || s.Mean != 10 || math.Abs(s.SD-1) > 1e-12 || math.Abs(s.CV-0.1) > 1e-12 {
		t.Fatalf("spread: %+v", s)
	}
	half := 4.303 / math.Sqrt(3)
	if math.Abs(s.Lo-(10-half)) > 1e-9 || math.Abs(s.Hi-(10+half)) > 1e-9 {
		t.Errorf("interval [%v, %v], want 10 ± %v", s.Lo, s.Hi, half)
	}
	one := Default.Describe([]float64{5})
	if one.Lo != 5 || one.Hi != 5 || !math.IsNaN(one.CV) {
		t.Errorf("one value: %+v", one)
	}
	mx, _ := Parse("max")
	b := mx.Describe([]float64{1, 2, 3, 4, 5, 6, 7, 8})
	if b.Value != 8 || b.Lo < 1 || b.Hi != 8 || b.Lo > b.Hi {
		t.Errorf("bootstrap interval of the max: %+v", b)
	}
	if b2 := mx.Describe([]float64{1, 2, 3, 4, 5, 6, 7, 8}); b2 != b {
		t.Errorf("bootstrap is not deterministic: %+v vs %+v", b, b2)
	}
}
