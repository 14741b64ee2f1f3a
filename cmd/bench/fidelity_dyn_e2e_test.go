package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFidelityDyHPOCLI: the multi-fidelity example (a real trial script,
// train.sh, that continues from its checkpoint) with fidelity planner
// "dyhpo" given on the command line: refused before anything runs with
// the example's RANDOM optimizer (no model) and with brackets, pointing at
// the key; with SMAC the run completes: every trial succeeded, no
// configuration ran twice at a fidelity, each continuation follows a
// success one rung below and trained only the epochs it adds, some
// configurations stopped below max, and the best trial is a 27-epoch one.
func TestFidelityDyHPOCLI(t *testing.T) {
	root, _ := filepath.Abs("../..")
	fid := `{"param": "epochs", "min": 1, "max": 27, "promotion": "continue", "planner": "dyhpo"}`
	bad := runBench(t, t.TempDir(), fidelityArgs(root, "--fidelity", fid)...)
	if bad.code != 2 || !strings.Contains(bad.stderr, "/fidelity/planner") ||
		!strings.Contains(bad.stderr, `fidelity.planner "dyhpo" needs an optimizer whose model learns from every fidelity`) {
		t.Errorf("with RANDOM: exit %d\n%s", bad.code, bad.stderr)
	}
	bad = runBench(t, t.TempDir(), fidelityArgs(root, "--fidelity", `{"param": "epochs", "min": 1, "max": 27, "planner": "dyhpo", "brackets": 4}`)...)
	if bad.code != 2 || !strings.Contains(bad.stderr, `fidelity.brackets must be 1 (or absent) with planner "dyhpo"`) {
		t.Errorf("brackets 4: exit %d\n%s", bad.code, bad.stderr)
	}
	dir := t.TempDir()
	r := runBench(t, dir, fidelityArgs(root, "--fidelity", fid, "--optimizer_type", "SMAC", "--max_suggestions", "16", "--log_level", "INFO")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "planner=dyhpo") {
		t.Errorf("the run does not say its planner:\n%s", r.stderr)
	}
	trs := fidelityTrials(t, filepath.Join(dir, "bench.sqlite"), "multi-fidelity")
	starts := 0
	maxRung := map[int]int{}
	for _, ft := range trs {
		if ft.rung == 0 {
			starts++
		}
		maxRung[ft.config] = max(maxRung[ft.config], ft.rung)
	}
	checkFidelityRun(t, trs, starts)
	stopped, best, bestLoss := 0, 0, 1e300
	for _, ft := range trs {
		epochs, _ := strconv.Atoi(ft.fidelity)
		if ft.bracket != 0 {
			t.Errorf("trial %d in bracket %d", ft.id, ft.bracket)
		}
		if ft.rung > 0 && (ft.continueFrom == "" || ft.epochsTrained >= epochs) {
			t.Errorf("continued trial %d at %d epochs: continues %q, trained %d epochs", ft.id, epochs, ft.continueFrom, ft.epochsTrained)
		}
		if v, err := strconv.ParseFloat(ft.loss, 64); err == nil && ft.fidelity == "27" && v < bestLoss {
			best, bestLoss = ft.id, v
		}
	}
	for _, r := range maxRung {
		if r < 3 {
			stopped++
		}
	}
	if stopped == 0 && len(maxRung) > 4 {
		t.Errorf("all %d configurations ran to 27 epochs", len(maxRung))
	}
	if best == 0 || !strings.Contains(r.stdout, fmt.Sprintf("Best trial %d:", best)) {
		t.Errorf("want best trial %d (27 epochs):\n%s", best, r.stdout)
	}
}
