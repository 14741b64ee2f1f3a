package main

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/benchtune/bench/tunables"
)

func TestMFSplitLCE(t *testing.T) {
	for m, want := range map[string]struct {
		base string
		mode lceMode
	}{
		"asha-gp-fid-min3-lce":     {"asha-gp-fid-min3", lceMode{gp: true, rank: true}},
		"asha-gp-fid-min3-lcegp":   {"asha-gp-fid-min3", lceMode{gp: true}},
		"hb-gp-fid-lcerank":        {"hb-gp-fid", lceMode{rank: true}},
		"hb-gp-fid-lcerank27":      {"hb-gp-fid", lceMode{rank: true, minSteps: 27}},
		"hb-gp-fid-lcerank0":       {"hb-gp-fid-lcerank0", lceMode{}},
		"asha-gp-fid-decay-lce":    {"asha-gp-fid-decay", lceMode{gp: true, rank: true}},
		"asha-gp-fid":              {"asha-gp-fid", lceMode{}},
		"-lce":                     {"-lce", lceMode{}},
		"asha-gp-fid-lce-model":    {"asha-gp-fid-lce-model", lceMode{}},
		"asha-gp-fid-min3-lcegpxx": {"asha-gp-fid-min3-lcegpxx", lceMode{}},
	} {
		base, mode := mfSplitLCE(m)
		if base != want.base || mode != want.mode {
			t.Errorf("%q: %q %+v, want %q %+v", m, base, mode, want.base, want.mode)
		}
	}
	p := lcnetProblem(2)
	for m, msg := range map[string]string{
		"asha-gp-fid-lce-model":     "unknown -mf method",
		"asha-gp-fid-model-lce":     "not with -model",
		"asha-gp-fid-start50-lcegp": "not with -model, -startP",
		"asha-gp-mfacq-min3-lcegp":  "not with -model, -startP",
		"asha-gp-fid-model-lcerank": "not with -model",
	} {
		if _, err := mfRun(p, m, true, 1, 10); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want an error with %q", m, err, msg)
		}
	}
}

// TestLCECurves: a run's curve holds every step up to its fidelity; a
// continued promotion extends it, a re-run starts it again; a curve of 3
// steps or more is extrapolated, a shorter one is given to the GP at its
// observed value with a small weight, and a full-fidelity one at its value
// with weight 1.
func TestLCECurves(t *testing.T) {
	p := lcnetProblem(2)
	m, err := newLCE(p, 1, lceMode{gp: true, rank: true})
	if err != nil {
		t.Fatal(err)
	}
	x := tunables.Point{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.1, 0.1, 0.3, 0.5}
	key := lceKey(x)
	m.run(7, x, 0, 1, 0.8)
	if y, w, ok := m.override(x); !ok || y != 0.8 || w != lceShortWeight {
		t.Errorf("one step: override %v %v %v", y, w, ok)
	}
	m.run(7, x, 1, 3, 0.7)
	if got := m.curves[key].t; !slices.Equal(got, []float64{1, 2, 3}) {
		t.Errorf("continued to 3: steps %v", got)
	}
	pr, ok := m.predict(key)
	if !ok || math.IsNaN(pr.Mean) || !(pr.SD > 0) {
		t.Errorf("3 steps: prediction %+v %v", pr, ok)
	}
	y, w, ok := m.override(x)
	if !ok || y != pr.Mean || !(w > 0 && w <= 1) {
		t.Errorf("3 steps: override %v %v %v (prediction %+v)", y, w, ok, pr)
	}
	sc, ok := m.ranker([]int{7})
	if !ok || sc[0] != pr.Mean {
		t.Errorf("ranker %v %v", sc, ok)
	}
	m.mode.minSteps = 9 // -lcerank9: the observed value below 9 steps
	if sc, ok := m.ranker([]int{7}); !ok || sc[0] != 0.7 {
		t.Errorf("ranker with 9 steps at least %v %v, want the observed 0.7", sc, ok)
	}
	m.mode.minSteps = 0
	if _, ok := m.ranker([]int{8}); ok {
		t.Error("ranker of an unknown key: ok")
	}
	m.run(7, x, 0, 9, 0.3) // re-run from scratch
	if got := m.curves[key].t; len(got) != 9 || got[0] != 1 || got[8] != 9 {
		t.Errorf("re-run to 9: steps %v", got)
	}
	m.run(7, x, 9, 81, 0.12)
	if y, w, ok := m.override(x); !ok || y != 0.12 || w != 1 {
		t.Errorf("full fidelity: override %v %v %v", y, w, ok)
	}
	if len(m.curves[key].t) != 81 {
		t.Errorf("full fidelity: %d steps", len(m.curves[key].t))
	}
}

// TestMFLCERun: the methods run to their budget (3 full runs' worth) on
// lcnet and on a curve problem, with promotions continued and re-run.
func TestMFLCERun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs GPs over a few hundred points")
	}
	for _, p := range []mfProblem{lcnetProblem(3), curveProblem(braninProblem(), 27, 3)} {
		for _, m := range []string{"asha-gp-fid-min3-lce", "hb-gp-fid-lcerank", "asha-gp-fid-lcegp"} {
			for _, cont := range []bool{true, false} {
				tr, err := mfRun(p, m, cont, 1, float64(p.budget)*p.max)
				if err != nil {
					t.Fatalf("%s %s: %v", p.name, m, err)
				}
				if tr.evals < 10 {
					t.Errorf("%s %s continued %v: %d runs", p.name, m, cont, tr.evals)
				}
			}
		}
	}
}

// TestMFLCECheck: the check reports a row per step count below the
// maximum, with finite correlations.
func TestMFLCECheck(t *testing.T) {
	var b bytes.Buffer
	if err := mfLCECheckN(&b, curveProblem(braninProblem(), 27, 3), 20); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, row := range []string{"after  3 steps: observed ", "after  9 steps: observed "} {
		if !strings.Contains(out, row) {
			t.Errorf("no row %q in\n%s", row, out)
		}
	}
	if strings.Contains(out, "after 27") || strings.Contains(out, "NaN") {
		t.Errorf("a row at full fidelity or a NaN in\n%s", out)
	}
}

// TestMFSeedOffset: -mf-seed-offset shifts the seeds run and printed.
func TestMFSeedOffset(t *testing.T) {
	defer func() { mfSeedOffset = 0 }()
	mfSeedOffset = 10
	var b bytes.Buffer
	if err := benchMF(&b, config{seeds: 1, workers: 1}, curveProblem(braninProblem(), 27, 2), []string{"asha-gp-fid"}, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nseed 11: ") {
		t.Errorf("no seed 11 in\n%s", b.String())
	}
}
