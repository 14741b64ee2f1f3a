package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFidelityStartAcquisitionCLI: the multi-fidelity example with start
// "acquisition" given on the command line: refused before anything runs
// with the example's RANDOM optimizer (it cannot choose a fidelity),
// pointing at the key; with SMAC the run completes with a sound plan and
// says its setting.
func TestFidelityStartAcquisitionCLI(t *testing.T) {
	root, _ := filepath.Abs("../..")
	// max 9 (rungs 1, 3, 9; brackets starting at each): 30 configurations
	// put at least 10 in one bracket, and ASHA's top thirds of 10 bring one
	// to full fidelity from any bracket (10 -> 3 -> 1). With max 27 and four
	// brackets nothing guarantees that: CI once ended a run with none at
	// full fidelity (exit 1, "no trial succeeded at full fidelity").
	fid := `{"param": "epochs", "min": 1, "max": 9, "promotion": "continue", "start": "acquisition"}`
	bad := runBench(t, t.TempDir(), fidelityArgs(root, "--fidelity", fid)...)
	if bad.code != 2 || !strings.Contains(bad.stderr, "/fidelity/start") ||
		!strings.Contains(bad.stderr, `fidelity.start "acquisition" needs an optimizer whose model learns from every fidelity and chooses the fidelity by cost`) {
		t.Errorf("with RANDOM: exit %d\n%s", bad.code, bad.stderr)
	}
	dir := t.TempDir()
	r := runBench(t, dir, fidelityArgs(root, "--fidelity", fid, "--optimizer_type", "SMAC", "--max_suggestions", "30", "--log_level", "INFO")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "start=acquisition") {
		t.Errorf("the run does not say its settings:\n%s", r.stderr)
	}
	trs := fidelityTrials(t, filepath.Join(dir, "bench.sqlite"), "multi-fidelity")
	checkFidelityRun(t, trs, 30)
}
