package main

import (
	"math"
	"strings"
	"testing"
)

// TestMFSplitBound: the -oracle and -etaN suffixes, from the end.
func TestMFSplitBound(t *testing.T) {
	for _, tc := range []struct {
		in, base string
		want     mfBoundOpt
	}{
		{"asha-gp-fid-min3", "asha-gp-fid-min3", mfBoundOpt{}},
		{"asha-gp-fid-min3-oracle", "asha-gp-fid-min3", mfBoundOpt{oracle: true}},
		{"asha-gp-fid-eta4-oracle", "asha-gp-fid", mfBoundOpt{oracle: true, etaV: 4}},
		{"hb-random-eta2", "hb-random", mfBoundOpt{etaV: 2}},
		{"asha-gp-fid-eta1", "asha-gp-fid-eta1", mfBoundOpt{}},
		{"-oracle", "-oracle", mfBoundOpt{}},
	} {
		base, o := mfSplitBound(tc.in)
		if base != tc.base || o != tc.want {
			t.Errorf("%s: %q %+v, want %q %+v", tc.in, base, o, tc.base, tc.want)
		}
	}
}

// TestMFOraclePromotions: with -oracle the planner ranks each rung by the
// true full-fidelity value, so every configuration promoted from a rung
// was in the true top third of the results there when it was promoted; the
// runs are recorded in the trace with consistent costs.
func TestMFOraclePromotions(t *testing.T) {
	p := curveProblem(braninProblem(), 9, 8)
	tr, err := mfRun(p, "asha-gp-fid-oracle", false, 1, 200)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.jobs) != tr.evals || tr.evals < 10 {
		t.Fatalf("%d jobs recorded for %d runs", len(tr.jobs), tr.evals)
	}
	for _, j := range tr.jobs {
		if math.Abs(j.end-j.start-j.r) > 1e-9 {
			t.Errorf("re-run job %+v does not cost its fidelity", j)
		}
		if j.rung == 0 {
			continue
		}
		// When it was promoted, it was in the true top ⌊n/3⌋ of the
		// results its rung below had then (ASHA's rule on the truth).
		// Runs that ended at the very moment of the promotion may have
		// been reported after it: they count in n but not as better.
		better, n := 0, 0
		for _, o := range tr.jobs {
			if o.rung == j.rung-1 && o.end <= j.start+1e-9 {
				n++
				if o.end < j.start-1e-9 && p.truth(o.x) < p.truth(j.x) {
					better++
				}
			}
		}
		if better >= n/3 {
			t.Errorf("rung %d: promoted a configuration with %d of the %d results below truly better", j.rung, better, n)
		}
	}
	// The spend helpers: all of it by the last end, half by the bisection.
	total := 0.0
	last := 0.0
	for _, j := range tr.jobs {
		total += j.end - j.start
		last = max(last, j.end)
	}
	if s := mfSpentAt(tr.jobs, last); math.Abs(s-total) > 1e-9 {
		t.Errorf("spent by the end %g, want %g", s, total)
	}
	if s := mfSpentAt(tr.jobs, mfClockAt(tr.jobs, total/2)); math.Abs(s-total/2) > 1e-6 {
		t.Errorf("spent at the half-way clock %g, want %g", s, total/2)
	}
}

// TestMFBoundCLI: -mf-bound prints the random bound and a summary per
// method.
func TestMFBoundCLI(t *testing.T) {
	var b strings.Builder
	if err := run([]string{"-mf", "branin", "-mf-budget", "8", "-seeds", "2", "-workers", "1", "-mf-continue", "-mf-seed-offset", "10", "-mf-bound", "asha-gp-fid"}, &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"seeds 11..12", "seed 11: target", "ideal random screen", "asha-gp-fid: median ratio", "with oracle promotions", "Spearman observed/true per rung"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
