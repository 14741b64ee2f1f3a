package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// TestLCNetShape: lcnet's curves go down with epochs towards the final
// value, a diverging step ends at chance, and the final values of random
// configurations spread widely (good ones are rare).
func TestLCNetShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var finals []float64
	for range 500 {
		u := make(tunables.Point, len(lcKnobs))
		for i := range u {
			u[i] = rng.Float64()
		}
		prev := math.Inf(1)
		for _, e := range []float64{1, 3, 9, 27, 81} {
			v := lcError(u, e)
			if v > prev+1e-12 || v < 0 || v > lcChance {
				t.Fatalf("%v: error %v at %v epochs after %v", u, v, e, prev)
			}
			prev = v
		}
		finals = append(finals, prev)
	}
	q1, _, q3 := quartiles(finals)
	if q3-q1 < 0.2 {
		t.Errorf("final errors' IQR %v..%v: too narrow", q1, q3)
	}
	diverge := tunables.Point{0.5, 1, 0.98, 0.5, 0.5, 0.5, 0.1, 0, 0.3, 0.5} // lr 0.3, momentum 0.98
	if v := lcError(diverge, 81); v < 0.85 {
		t.Errorf("a diverging step ends at %v, want chance", v)
	}
}

// TestMFRun: a method spends its whole limit, only full-fidelity results
// make its quality, and a target is reached at the first cost whose
// quality meets it.
func TestMFRun(t *testing.T) {
	p := curveProblem(braninProblem(), 9, 8)
	for _, m := range append(slices.Clone(mfMethods), "asha-gp-fid-start50", "hb-gp-fid-min3-model-start60") {
		for _, cont := range []bool{false, true} {
			tr := checkMFRun(t, p, braninProblem().optimum, m, cont, 20)
			if len(tr.cost) == 0 {
				continue
			}
			if c := tr.reach(1e9); c != tr.cost[0] || c > 200 {
				t.Errorf("%s: a reachable target reached at %v, want %v", m, c, tr.cost[0])
			}
		}
	}
	if _, err := mfRun(p, "nope", false, 1, 10); err == nil || !strings.Contains(err.Error(), "unknown -mf method") {
		t.Errorf("unknown method: %v", err)
	}
}

// checkMFRun runs method m on p (a branin problem with the given
// optimum) with limit 200 and checks what every -mf method's trace must
// show: at least minEvals runs, a full-fidelity result, the last one
// within the limit plus one run of each runner at full fidelity, no
// quality below the optimum, and no unreachable target reached.
func checkMFRun(t *testing.T, p mfProblem, optimum float64, m string, cont bool, minEvals int) mfTrace {
	t.Helper()
	tr, err := mfRun(p, m, cont, 1, 200)
	if err != nil {
		t.Fatalf("%s: %v", m, err)
	}
	if tr.evals < minEvals || len(tr.cost) == 0 || tr.cost[len(tr.cost)-1] > 200+mfRunners*p.max || tr.final() < optimum-1e-9 {
		t.Errorf("%s continue=%v: %d runs, costs %v, quality %v", m, cont, tr.evals, tr.cost, tr.quality)
	}
	if c := tr.reach(-1e9); !math.IsInf(c, 1) {
		t.Errorf("%s: an unreachable target reached at %v", m, c)
	}
	return tr
}

// TestMFBenchRuns: -mf prints a ratio per method; bad names are refused.
func TestMFBenchRuns(t *testing.T) {
	var b strings.Builder
	if err := run([]string{"-mf", "branin", "-mf-budget", "8", "-seeds", "1", "-workers", "1", "-mf-methods", "hb-random,asha-gp-fid"}, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-mf on branin (2 knobs): fidelity 1..27, rungs [1 3 9 27]", "hb-random    median ratio", "asha-gp-fid  median ratio"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in:\n%s", want, b.String())
		}
	}
	if err := run([]string{"-mf", "nope"}, &b); err == nil || !strings.Contains(err.Error(), "unknown problem") {
		t.Errorf("unknown problem: %v", err)
	}
}

// TestParseMFMethod: the gp-fid methods' suffixes, in order.
func TestParseMFMethod(t *testing.T) {
	checkParse(t, parseMFMethod, []parseCase[mfOptions]{
		{"asha-gp-fid", mfOptions{asha: true}, true},
		{"hb-gp-fid", mfOptions{}, true},
		{"asha-gp-fid-model", mfOptions{asha: true, model: true}, true},
		{"asha-gp-fid-min3-model-start60", mfOptions{asha: true, min: 3, model: true, start: 0.6}, true},
		{"hb-gp-fid-start50", mfOptions{start: 0.5}, true},
		{"hb-gp-fid-model-min3", mfOptions{}, false},
		{"asha-gp-fid-start100", mfOptions{}, false},
		{"asha-gp-fid-min0", mfOptions{}, false},
		{"asha-gp-fidmodel", mfOptions{}, false},
		{"hb-random-model", mfOptions{}, false},
	})
}
