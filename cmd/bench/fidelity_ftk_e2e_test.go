package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFidelityKernelCLI: the multi-fidelity example with fidelity kernel
// "decay" given on the command line: refused before anything runs with
// the example's RANDOM optimizer (no model), pointing at the key; with
// SMAC the run completes with a sound plan and says its setting.
func TestFidelityKernelCLI(t *testing.T) {
	root, _ := filepath.Abs("../..")
	fid := `{"param": "epochs", "min": 1, "max": 27, "promotion": "continue", "kernel": "decay"}`
	bad := runBench(t, t.TempDir(), fidelityArgs(root, "--fidelity", fid)...)
	if bad.code != 2 || !strings.Contains(bad.stderr, "/fidelity/kernel") ||
		!strings.Contains(bad.stderr, `fidelity.kernel "decay" needs an optimizer whose model learns from every fidelity`) {
		t.Errorf("with RANDOM: exit %d\n%s", bad.code, bad.stderr)
	}
	dir := t.TempDir()
	r := runBench(t, dir, fidelityArgs(root, "--fidelity", fid, "--optimizer_type", "SMAC", "--max_suggestions", "14", "--log_level", "INFO")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "kernel=decay") {
		t.Errorf("the run does not say its setting:\n%s", r.stderr)
	}
	trs := fidelityTrials(t, filepath.Join(dir, "bench.sqlite"), "multi-fidelity")
	checkFidelityRun(t, trs, 14)
}
