package main

import (
	"strings"
	"testing"
)

// TestPruneBenchRuns: -prune runs both variants and reports the ratio;
// bad arguments are refused.
func TestPruneBenchRuns(t *testing.T) {
	var b strings.Builder
	if err := run([]string{"-prune", "8,3", "-funcs", "branin", "-seeds", "1", "-workers", "1"}, &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Count(out, "median ratio (full cost / GP+ASHA cost)") != 2 || !strings.Contains(out, "full GP: 8 trials × 3 steps = 24 steps") {
		t.Errorf("output:\n%s", out)
	}
	if err := run([]string{"-prune", "8"}, &b); err == nil || !strings.Contains(err.Error(), "-prune") {
		t.Errorf("bad -prune: %v", err)
	}
}

func TestCurveConverges(t *testing.T) {
	if got := curveAt(2, 9, 9, 10, nil); got != 2 {
		t.Errorf("the last step is the final value, got %v", got)
	}
}
