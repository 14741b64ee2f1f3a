package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestMFSplitDecay(t *testing.T) {
	for m, want := range map[string]string{
		"asha-gp-fid-min3-decay":  "asha-gp-fid-min3",
		"hb-gp-mfacq-decay":       "hb-gp-mfacq",
		"asha-gp-fid":             "",
		"-decay":                  "",
		"asha-gp-fid-decay-model": "",
	} {
		base, ok := mfSplitDecay(m)
		if ok != (want != "") || (ok && base != want) {
			t.Errorf("%q: %q %v, want %q", m, base, ok, want)
		}
	}
	// A suffix in the wrong place is an unknown method, not ignored.
	p := lcnetProblem(2)
	if _, err := mfRun(p, "asha-gp-fid-decay-model", true, 1, 10); err == nil || !strings.Contains(err.Error(), "unknown -mf method") {
		t.Errorf("misplaced -decay: %v", err)
	}
}

// TestMFModelCheck runs the model check on one seed: both kernels and the
// observed ranking are reported, with finite correlations.
func TestMFModelCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("fits two GPs on 180 points")
	}
	var b bytes.Buffer
	if err := mfModelCheck(&b, config{seeds: 1, workers: 1}, lcnetProblem(2)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, row := range []string{"\nstationary  0.", "\ndecay       0.", "\nobserved    0."} {
		if !strings.Contains(out, row) {
			t.Errorf("no row %q in\n%s", row, out)
		}
	}
}
