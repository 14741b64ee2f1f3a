package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseRefine(t *testing.T) {
	c, err := parseRefine("design=0.3,k=3,m=2,radius=0.25,kappa=1,stages=2,local=1")
	if err != nil {
		t.Fatal(err)
	}
	if l, m := c.split(100); l != 30 || m != 2 || c.k != 3 || c.radius != 0.25 || c.kappa != 1 || c.stages != 2 || !c.local {
		t.Errorf("parsed %+v, split %d %d", c, l, m)
	}
	c, err = parseRefine("design=12")
	if l, m := c.split(100); err != nil || l != 12 || m != 5 {
		t.Errorf("design=12: %d %d %v", l, m, err)
	}
	for _, bad := range []string{"design", "radius=x", "k=-1", "size=3"} {
		if _, err := parseRefine(bad); err == nil {
			t.Errorf("parseRefine(%q) accepted", bad)
		}
	}
}

// The refinement's answer is a configuration the confirmation measured,
// and a budget too small for it is an error.
func TestRefineRunSmall(t *testing.T) {
	rc, _ := parseRefine("design=0.2,k=2")
	p := braninProblem()
	v, mn, best, err := refineRun(p, rc, 0.1, 1, 40)
	if err != nil {
		t.Fatal(err)
	}
	if v < p.optimum || mn < p.optimum || best < p.optimum || best > v {
		t.Errorf("reported %v, minimiser %v, best measured %v (optimum %v)", v, mn, best, p.optimum)
	}
	if _, _, _, err := refineRun(p, rc, 0.1, 1, 14); err == nil {
		t.Error("14 evaluations leave 9 for the search: no error")
	}
	var out bytes.Buffer
	if err := run([]string{"-noise", "0.1", "-funcs", "branin", "-seeds", "1", "-budget", "40", "-refine", "design=0.2"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "refine ") {
		t.Errorf("output:\n%s", out.String())
	}
}
