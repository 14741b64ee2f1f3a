package main

import (
	"strings"
	"testing"

	"github.com/benchtune/bench/optimizers/bayes"
)

// TestParseMFAcq: the mfacq methods' suffixes, in order, and κ's default.
func TestParseMFAcq(t *testing.T) {
	k := bayes.DefaultFidelityKappa
	checkParse(t, parseMFAcq, []parseCase[mfOptions]{
		{"hb-gp-mfacq", mfOptions{acq: k}, true},
		{"asha-gp-mfacq", mfOptions{asha: true, acq: k}, true},
		{"asha-gp-mfacq-min3", mfOptions{asha: true, min: 3, acq: k}, true},
		{"hb-gp-mfacq-min3-model-k200", mfOptions{min: 3, model: true, acq: 2}, true},
		{"hb-gp-mfacq-k25", mfOptions{acq: 0.25}, true},
		{"hb-gp-mfacq-k0", mfOptions{}, false},
		{"hb-gp-mfacq-model-min3", mfOptions{}, false},
		{"hb-gp-mfacqmodel", mfOptions{}, false},
		{"hb-gp-fid", mfOptions{}, false},
	})
}

// TestMFAcqRun: the mfacq methods run through -mf like the others: they
// spend their whole limit and their quality comes from full-fidelity
// results only (mfRun's trace), with and without continued promotions.
func TestMFAcqRun(t *testing.T) {
	p := curveProblem(braninProblem(), 9, 8)
	for _, m := range []string{"hb-gp-mfacq", "asha-gp-mfacq", "asha-gp-mfacq-min3-model-k200"} {
		for _, cont := range []bool{false, true} {
			tr, err := mfRun(p, m, cont, 1, 200)
			if err != nil {
				t.Fatalf("%s: %v", m, err)
			}
			if tr.evals < 10 || len(tr.cost) == 0 || tr.cost[len(tr.cost)-1] > 200+4*9 || tr.final() < braninProblem().optimum-1e-9 {
				t.Errorf("%s continue=%v: %d runs, costs %v, quality %v", m, cont, tr.evals, tr.cost, tr.quality)
			}
		}
	}
	var b strings.Builder
	if err := run([]string{"-mf", "branin", "-mf-budget", "8", "-seeds", "1", "-workers", "1", "-mf-methods", "asha-gp-mfacq"}, &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "asha-gp-mfacq median ratio") {
		t.Errorf("no asha-gp-mfacq line in:\n%s", b.String())
	}
}
