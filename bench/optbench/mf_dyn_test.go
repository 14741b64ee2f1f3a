package main

import (
	"strings"
	"testing"
)

// TestMFDynRun: a dyn method spends its whole limit with the same
// accounting as the other -mf methods (only full-fidelity results make
// its quality), reaches a full-fidelity result, and is deterministic per
// seed.
func TestMFDynRun(t *testing.T) {
	p := curveProblem(braninProblem(), 9, 8)
	for _, m := range []string{"dyn-gp-fid", "dyn-gp-fid-min3-cost", "dyn-gp-fid-eta2-full"} {
		for _, cont := range []bool{false, true} {
			tr := checkMFRun(t, p, braninProblem().optimum, m, cont, 10) // hyperband_mf_test.go
			again, _ := mfRun(p, m, cont, 1, 200)
			if again.evals != tr.evals || again.final() != tr.final() {
				t.Errorf("%s: not deterministic: %d runs %v, then %d runs %v", m, tr.evals, tr.final(), again.evals, again.final())
			}
		}
	}
	if _, err := mfRun(p, "dyn-gp-fid-cost-min3", false, 1, 10); err == nil || !strings.Contains(err.Error(), "dyn-gp-fid takes the suffixes") {
		t.Errorf("suffixes out of order: %v", err)
	}
}

// TestParseMFDyn: the dyn methods' suffixes, in order.
func TestParseMFDyn(t *testing.T) {
	checkParse(t, parseMFDyn, []parseCase[mfDynOptions]{
		{"dyn-gp-fid", mfDynOptions{eta: 3}, true},
		{"dyn-gp-fid-min3", mfDynOptions{min: 3, eta: 3}, true},
		{"dyn-gp-fid-min3-eta2-full-cost", mfDynOptions{min: 3, eta: 2, full: true, cost: true}, true},
		{"dyn-gp-fid-cost", mfDynOptions{eta: 3, cost: true}, true},
		{"dyn-gp-fid-eta1", mfDynOptions{}, false},
		{"dyn-gp-fid-cost-full", mfDynOptions{}, false},
		{"dyn-gp-fidcost", mfDynOptions{}, false},
		{"dyn-random", mfDynOptions{}, false},
	})
}
