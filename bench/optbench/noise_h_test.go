package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/tunables"
)

func TestParseRefineStaged(t *testing.T) {
	c, err := parseRefine("staged")
	if err != nil {
		t.Fatal(err)
	}
	if l, m := c.split(100); !c.staged || l != 30 || m != 5 || c.k != 2 || c.stages != bayes.StagedStages {
		t.Errorf("staged: %+v, split %d %d", c, l, m)
	}
}

// -refine staged: on Branin at 5% noise the search has settled by 70% of
// a 60-evaluation budget, the rounds and the confirmation run, and the
// answer is a configuration near the optimum; on a slope far below the
// noise it has not, and the answer is the aware method's (the same search
// to the end, the same posterior-mean pick).
func TestRefineRunStaged(t *testing.T) {
	rc, _ := parseRefine("staged")
	p := braninProblem()
	v, mn, best, err := refineRun(p, rc, 0.05, 1, 60)
	if err != nil {
		t.Fatal(err)
	}
	if v < p.optimum || mn < p.optimum || best > v || v-p.optimum > 0.05 {
		t.Errorf("reported %v, minimiser %v, best measured %v (optimum %v)", v, mn, best, p.optimum)
	}
	// A slope 20 times smaller than the noise: nothing settles, and the
	// answer is the aware method's, to the last digit.
	flat := p
	flat.f = func(x tunables.Point) []float64 { return []float64{10 + 0.05*x[0]} }
	flat.optimum = 10
	v, _, _, err = refineRun(flat, rc, 0.1, 3, 40)
	if err != nil {
		t.Fatal(err)
	}
	aware, _, err := noiseRun(flat, "aware", 0.1, 3, 40)
	if err != nil || v != aware {
		t.Errorf("not settled: reported %v, the aware method %v (%v)", v, aware, err)
	}
	var out bytes.Buffer
	if err := run([]string{"-noise", "0.05", "-funcs", "branin", "-seeds", "2", "-budget", "40", "-refine", "staged", "-refine-per-seed"}, &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "staged: design=0.3") || !strings.Contains(s, "per seed ") {
		t.Errorf("output:\n%s", s)
	}
}
