package main

import (
	"strconv"
	"strings"
	"testing"
)

// TestHyperbandBrackets: S = 27, η = 3 gives the four classic brackets.
func TestHyperbandBrackets(t *testing.T) {
	ns, rs := hbBrackets(27)
	want := "[27 12 6 4] [1 3 9 27]"
	if got := strings.TrimSpace(fmtInts(ns) + " " + fmtInts(rs)); got != want {
		t.Errorf("brackets %s, want %s", got, want)
	}
}

// TestHyperbandRunSpendsBudget: a run with an unreachable target spends
// its whole limit, only counts full-fidelity values as its best, and the
// BOHB variant runs the GP once a fidelity has enough observations.
func TestHyperbandRunSpendsBudget(t *testing.T) {
	p := braninProblem()
	spread := spreadOf(p)
	for _, useModel := range []bool{false, true} {
		cost, evals, best, err := hbRun(p, 9, spread, -1e9, 200, useModel, 1)
		if err != nil {
			t.Fatal(err)
		}
		if cost < 1e300 || evals < 20 || best < p.optimum-1e-9 || best > 1e3 {
			t.Errorf("model=%v: cost %v evals %d best %v", useModel, cost, evals, best)
		}
		// A reachable target is reported with the fidelity spent.
		cost, _, _, err = hbRun(p, 9, spread, 1e9, 200, useModel, 1)
		if err != nil || cost <= 0 || cost > 200 {
			t.Errorf("model=%v: reachable target cost %v err %v", useModel, cost, err)
		}
	}
}

// TestHyperbandBenchRuns: -hyperband prints both variants; bad arguments
// are refused.
func TestHyperbandBenchRuns(t *testing.T) {
	var b strings.Builder
	if err := run([]string{"-hyperband", "8,9", "-funcs", "branin", "-seeds", "1", "-workers", "1"}, &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "median ratio (full cost / Hyperband(random) cost)") || !strings.Contains(out, "median ratio (full cost / BOHB(GP) cost)") {
		t.Errorf("output:\n%s", out)
	}
	b.Reset()
	if err := run([]string{"-hyperband", "8,9", "-curve-scale", "0", "-funcs", "branin", "-seeds", "1", "-workers", "1"}, &b); err != nil || !strings.Contains(b.String(), "D = 0 = 0 × the values' IQR") {
		t.Errorf("-curve-scale 0: %v\n%s", err, b.String())
	}
	if err := run([]string{"-hyperband", "8,9", "-curve-scale", "-1"}, &b); err == nil || !strings.Contains(err.Error(), "-curve-scale") {
		t.Errorf("negative -curve-scale: %v", err)
	}
	if err := run([]string{"-hyperband", "8"}, &b); err == nil || !strings.Contains(err.Error(), "-hyperband") {
		t.Errorf("bad -hyperband: %v", err)
	}
}

func fmtInts(v []int) string {
	var s []string
	for _, x := range v {
		s = append(s, strconv.Itoa(x))
	}
	return "[" + strings.Join(s, " ") + "]"
}
