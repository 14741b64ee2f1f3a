package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// TestMFSplitProp: -locP and -boxW are cut from a method name wherever
// they are; bad values, repeats and -boxW without -locP are refused.
func TestMFSplitProp(t *testing.T) {
	for _, tc := range []struct {
		in, base string
		want     mfPropOpt
		ok       bool
	}{
		{"asha-gp-fid-min3", "asha-gp-fid-min3", mfPropOpt{}, true},
		{"asha-gp-fid-min3-loc50", "asha-gp-fid-min3", mfPropOpt{frac: 0.5}, true},
		{"asha-gp-fid-min3-loc100-box10-eta9", "asha-gp-fid-min3-eta9", mfPropOpt{frac: 1, side: 0.1}, true},
		{"asha-gp-fid-min3-loc50-top-box40-eta9", "asha-gp-fid-min3-eta9", mfPropOpt{frac: 0.5, side: 0.4, top: true}, true},
		{"asha-gp-fid-min3-top", "", mfPropOpt{}, false},
		{"asha-gp-fid-min3-loc50-top-top", "", mfPropOpt{}, false},
		{"asha-gp-fid-min3-loc0", "", mfPropOpt{}, false},
		{"asha-gp-fid-min3-loc101", "", mfPropOpt{}, false},
		{"asha-gp-fid-min3-locx", "", mfPropOpt{}, false},
		{"asha-gp-fid-min3-loc5-loc6", "", mfPropOpt{}, false},
		{"asha-gp-fid-min3-box10", "", mfPropOpt{}, false},
	} {
		base, got, ok := mfSplitProp(tc.in)
		if ok != tc.ok || (ok && (got != tc.want || base != tc.base)) {
			t.Errorf("%s: %q %+v %v, want %q %+v %v", tc.in, base, got, ok, tc.base, tc.want, tc.ok)
		}
	}
	if _, err := mfRun(curveProblem(braninProblem(), 9, 8), "hb-random-loc50", false, 1, 50); err == nil {
		t.Error("-loc50 on hb-random: no error")
	}
}

// TestMFLocalProposal: a local proposal is a valid point within the
// region around one of the observed configurations (side/2 each way in
// every coordinate, levels respected).
func TestMFLocalProposal(t *testing.T) {
	p := lcnetProblem(10)
	gf, err := newGPFid(p, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	m := newMFLocal(gf, gf, mfPropOpt{frac: 0.5, side: 0.1}, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	var xs []tunables.Point
	for range locWarm {
		x := make(tunables.Point, len(p.dims))
		for i := range x {
			x[i] = rng.Float64()
			if l := p.dims[i].Levels; l > 1 {
				x[i] = math.Round(x[i]*float64(l-1)) / float64(l-1)
			}
		}
		xs = append(xs, x)
		if err := m.observe(x, 0, 3, p.observe(x, 3, rng)); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		q, ok, err := m.local()
		if err != nil || !ok {
			t.Fatalf("local: %v %v", ok, err)
		}
		if len(q) != len(p.dims) {
			t.Fatalf("local: %d coordinates, want %d", len(q), len(p.dims))
		}
		near := false
		for _, x := range xs {
			in := true
			for i := range q {
				if math.Abs(q[i]-x[i]) > 0.05+1e-12 && p.dims[i].Levels == 0 {
					in = false
				}
			}
			near = near || in
		}
		if !near {
			t.Errorf("local proposal %v is not within the region of any observed configuration", q)
		}
		for i, v := range q {
			if v < 0 || v > 1 {
				t.Errorf("coordinate %d = %v outside [0, 1]", i, v)
			}
			if l := p.dims[i].Levels; l > 1 && math.Abs(v*float64(l-1)-math.Round(v*float64(l-1))) > 1e-9 {
				t.Errorf("coordinate %d = %v not on its %d levels", i, v, l)
			}
		}
	}
}

// TestMFLocalRun: the -locP methods run through -mf like the others.
func TestMFLocalRun(t *testing.T) {
	p := curveProblem(braninProblem(), 9, 8)
	for _, m := range []string{"asha-gp-fid-loc50", "asha-gp-fid-min3-loc100-box10-eta9", "asha-gp-fid-loc50-top"} {
		for _, cont := range []bool{false, true} {
			checkMFRun(t, p, braninProblem().optimum, m, cont, 10) // hyperband_mf_test.go
		}
	}
}
