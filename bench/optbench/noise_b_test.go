package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/benchtune/bench/tunables"
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
	if s := c.String(); !strings.HasPrefix(s, "staged-basin (a basin check, up to 2 other basins × 4 evaluations, z 1, radius 0.5): design=0.3") {
		t.Errorf("String: %q", s)
	}
	defer func(x int) { basinTwin = x }(basinTwin)
	basinTwin = 15
	if s := c.String(); !strings.Contains(s, "radius 0.5, twin 15): ") {
		t.Errorf("String with -basin-twin 15: %q", s)
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
	defer func(e, r, f, x, n, tw, tu int) {
		basinEarly, basinRestart, basinFirst, basinExplore, basinInitN, basinTwin, basinTSUntil = e, r, f, x, n, tw, tu
	}(basinEarly, basinRestart, basinFirst, basinExplore, basinInitN, basinTwin, basinTSUntil)
	if err := run(append(args, "-basin-early", "20", "-basin-restart", "10", "-basin-first", "15", "-basin-explore", "4", "-basin-init", "12",
		"-basin-twin", "10", "-basin-ts-until", "20"), &flagged); err != nil {
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
	defer func(e, r, f, x, tw, tu, n int) {
		basinEarly, basinRestart, basinFirst, basinExplore, basinTwin, basinTSUntil, basinInitN = e, r, f, x, tw, tu, n
	}(basinEarly, basinRestart, basinFirst, basinExplore, basinTwin, basinTSUntil, basinInitN)
	for _, tc := range []struct {
		name                                       string
		early, restart, first, ex, twin, ts, initN int
	}{{"check", 0, 0, 0, 0, 0, 0, 0}, {"explore", 0, 0, 0, 4, 0, 0, 0}, {"early", 20, 0, 0, 0, 0, 0, 0},
		{"restart", 0, 15, 25, 0, 0, 0, 0}, {"twin", 0, 0, 0, 0, 10, 0, 0}, {"thompson", 0, 0, 0, 0, 0, 25, 0}, {"init", 0, 0, 0, 0, 0, 0, 12}} {
		basinEarly, basinRestart, basinFirst, basinExplore, basinTwin, basinTSUntil, basinInitN = tc.early, tc.restart, tc.first, tc.ex, tc.twin, tc.ts, tc.initN
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
	basinRestart, basinTwin = 0, 30
	if _, _, _, err := refineRun(p, rc, 0.05, 1, 60); err == nil {
		t.Error("-basin-twin 30 at a budget of 60 (36 search evaluations): no error")
	}
}

// The true descent ends at Hartmann6's global minimum from near it and at
// the other basin's minimum (regret 0.119) from near that one; the
// -refine-basins line counts the seeds in the global basin.
func TestRefineBasins(t *testing.T) {
	p := hartmannProblem()
	global := tunables.Point{0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573}
	other := tunables.Point{0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}
	if r := trueDescent(p, tunables.Point{0.25, 0.2, 0.45, 0.3, 0.28, 0.62}) - p.optimum; r > 1e-3 {
		t.Errorf("descent from near the optimum ends %v above it", r)
	}
	if r := trueDescent(p, other) - p.optimum; r < 0.1 || r > 0.13 {
		t.Errorf("descent from the other basin ends %v above the optimum, want 0.119", r)
	}
	defer func(b bool, o int) { refineBasins, noiseSeedOffset = b, o }(refineBasins, noiseSeedOffset)
	refineBasins, noiseSeedOffset = true, 0
	basinNote(p, 0.5, 1, global)
	basinNote(p, 0.5, 2, other)
	if s := basinLine(p, 0.5, 2); !strings.Contains(s, "basin per seed + 0.119") || !strings.Contains(s, "(1 of 2 in the global basin)") {
		t.Errorf("basin line %q", s)
	}
	if s := basinLine(p, 0.5, 3); s != "" {
		t.Errorf("a seed not recorded: %q, want nothing", s)
	}
	var out bytes.Buffer
	if err := run([]string{"-noise", "0.05", "-funcs", "hartmann6", "-seeds", "2", "-budget", "30", "-refine", "staged", "-refine-per-seed", "-refine-basins"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "in the global basin)") {
		t.Errorf("output:\n%s", out.String())
	}
}
