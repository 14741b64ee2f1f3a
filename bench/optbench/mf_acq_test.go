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
			checkMFRun(t, p, braninProblem().optimum, m, cont, 10) // hyperband_mf_test.go
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
