package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFidelityModelSettingsCLI: the multi-fidelity example with
// promote_by and start "model" given on the command line (--fidelity as
// JSON text): refused before anything runs with the example's RANDOM
// optimizer (no model), pointing at the key; with SMAC
// (--optimizer_type SMAC) and promote_by "model", the run completes with
// a sound plan.
func TestFidelityModelSettingsCLI(t *testing.T) {
	root, _ := filepath.Abs("../..")
	fid := `{"param": "epochs", "min": 1, "max": 27, "promotion": "continue", "promote_by": "model", "start": "model"}`
	bad := runBench(t, t.TempDir(), fidelityArgs(root, "--fidelity", fid)...)
	if bad.code != 2 || !strings.Contains(bad.stderr, "/fidelity/promote_by") ||
		!strings.Contains(bad.stderr, `fidelity.promote_by "model" needs an optimizer whose model learns from every fidelity`) {
		t.Errorf("with RANDOM: exit %d\n%s", bad.code, bad.stderr)
	}
	bad = runBench(t, t.TempDir(), fidelityArgs(root, "--fidelity", `{"param": "epochs", "min": 1, "max": 27, "promote_by": "best"}`)...)
	if bad.code != 2 || !strings.Contains(bad.stderr, `fidelity.promote_by must be "observed"`) {
		t.Errorf("promote_by best: exit %d\n%s", bad.code, bad.stderr)
	}
	dir := t.TempDir()
	fid = `{"param": "epochs", "min": 1, "max": 27, "promotion": "continue", "promote_by": "model"}`
	r := runBench(t, dir, fidelityArgs(root, "--fidelity", fid, "--optimizer_type", "SMAC", "--max_suggestions", "14", "--log_level", "INFO")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "promote_by=model start=bracket") {
		t.Errorf("the run does not say its settings:\n%s", r.stderr)
	}
	trs := fidelityTrials(t, filepath.Join(dir, "bench.sqlite"), "multi-fidelity")
	checkFidelityRun(t, trs, 14)
}
