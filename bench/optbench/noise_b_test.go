package main

import (
	"bytes"
	"regexp"
	"testing"
)

func TestParseRefineStagedBasin(t *testing.T) {
	c, err := parseRefine("staged-basin")
	if err != nil {
		t.Fatal(err)
	}
	if l, m := c.split(100); !c.staged || !c.basin || l != 30 || m != 5 || c.k != 2 {
		t.Errorf("staged-basin: %+v, split %d %d", c, l, m)
	}
	if c, _ := parseRefine("staged"); c.basin {
		t.Errorf("staged: %+v, want no basin check", c)
	}
}

// timings strips the "(12s)" lines of optbench's output.
var timings = regexp.MustCompile(`(?m)^\s*\(\d+s\)$`)

// The basin flags change nothing but -refine staged-basin: -refine staged
// prints the same bytes with them as without.
func TestBasinFlagsLeaveStagedAlone(t *testing.T) {
	args := []string{"-noise", "0.05", "-funcs", "branin", "-seeds", "2", "-budget", "40", "-refine", "staged", "-refine-per-seed"}
	var plain, flagged bytes.Buffer
	if err := run(args, &plain); err != nil {
		t.Fatal(err)
	}
	defer func(e, r, f, x, n int) {
		basinEarly, basinRestart, basinFirst, basinExplore, basinInitN = e, r, f, x, n
	}(basinEarly, basinRestart, basinFirst, basinExplore, basinInitN)
	if err := run(append(args, "-basin-early", "20", "-basin-restart", "10", "-basin-first", "15", "-basin-explore", "4", "-basin-init", "12"), &flagged); err != nil {
		t.Fatal(err)
	}
	a, b := timings.ReplaceAllString(plain.String(), ""), timings.ReplaceAllString(flagged.String(), "")
	if a != b {
		t.Errorf("-refine staged with the basin flags:\n%s\nwithout:\n%s", b, a)
	}
}

// Each variant of -refine staged-basin runs to an answer near Branin's
// optimum at 5% noise, within the budget.
func TestRefineRunStagedBasin(t *testing.T) {
	rc, _ := parseRefine("staged-basin")
	p := braninProblem()
	defer func(e, r, f, x int) { basinEarly, basinRestart, basinFirst, basinExplore = e, r, f, x }(basinEarly, basinRestart, basinFirst, basinExplore)
	for _, tc := range []struct {
		name                      string
		early, restart, first, ex int
	}{{"check", 0, 0, 0, 0}, {"explore", 0, 0, 0, 4}, {"early", 20, 0, 0, 0}, {"restart", 0, 15, 25, 0}} {
		basinEarly, basinRestart, basinFirst, basinExplore = tc.early, tc.restart, tc.first, tc.ex
		v, mn, best, err := refineRun(p, rc, 0.05, 1, 60)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if v < p.optimum || mn < p.optimum || best > v || v-p.optimum > 0.1 {
			t.Errorf("%s: reported %v, minimiser %v, best measured %v (optimum %v)", tc.name, v, mn, best, p.optimum)
		}
	}
	basinRestart, basinFirst = 50, 30
	if _, _, _, err := refineRun(p, rc, 0.05, 1, 60); err == nil {
		t.Error("-basin-restart 50 with -basin-first 30 at a budget of 60: no error")
	}
}
