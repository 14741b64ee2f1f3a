package bayes

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/tunables"
)

func numDims(d int) []tunables.Dim {
	dims := make([]tunables.Dim, d)
	for i := range dims {
		n := fmt.Sprintf("x%d", i)
		dims[i] = tunables.Dim{Name: n, Tunable: n, Kind: tunables.DimNumeric}
	}
	return dims
}

// With SetNoiseLocalTRDims(10) the local search of noise-aware mode uses
// trust.go's regions from 10 dimensions up, and only there, only with the
// local search on in noise-aware mode, never against Options.TrustRegion
// = -1; turning it off removes the region it created, not one the
// options asked for; without the setter (the scheduler's noise_search:
// local) nothing changes.
func TestNoiseLocalTRFromTenDims(t *testing.T) {
	for _, tc := range []struct {
		name          string
		d, trOpt      int
		trDims        int
		aware, local  bool
		thenLocalOff  bool
		wantTR, owned bool
	}{
		{"10-D, aware, local", 10, 0, 10, true, true, false, true, true},
		{"12-D, aware, local", 12, 0, 10, true, true, false, true, true},
		{"10-D, aware, local, no setter", 10, 0, 0, true, true, false, false, false},
		{"6-D, aware, local: noiselocal.go's region", 6, 0, 10, true, true, false, false, false},
		{"10-D, not aware", 10, 0, 10, false, true, false, false, false},
		{"10-D, aware, global search", 10, 0, 10, true, false, false, false, false},
		{"10-D, trust region never", 10, -1, 10, true, true, false, false, false},
		{"10-D, local turned off again", 10, 0, 10, true, true, true, false, false},
		{"20-D: the region is on anyway, and stays", 20, 0, 10, true, true, true, true, false},
		{"6-D, trust region always: stays", 6, 1, 10, true, true, true, true, false},
	} {
		o, err := New(numDims(tc.d), Options{Seed: 1, MaxTrials: 50, TrustRegion: tc.trOpt})
		if err != nil {
			t.Fatal(err)
		}
		o.SetNoise(nil, tc.aware)
		o.SetNoiseLocal(tc.local)
		o.SetNoiseLocalTRDims(tc.trDims)
		if tc.thenLocalOff {
			o.SetNoiseLocal(false)
		}
		if got := o.tr != nil; got != tc.wantTR || o.nlTR.owned != tc.owned {
			t.Errorf("%s: trust region %v (created by the local search %v), want %v (%v)", tc.name, got, o.nlTR.owned, tc.wantTR, tc.owned)
		}
	}
	// The order of the setters does not matter.
	o, err := New(numDims(10), Options{Seed: 1, MaxTrials: 50})
	if err != nil {
		t.Fatal(err)
	}
	o.SetNoiseLocalTRDims(10)
	o.SetNoiseLocal(true)
	if o.tr != nil {
		t.Error("the local search alone (not noise-aware) created a trust region")
	}
	o.SetNoise(nil, true)
	if o.tr == nil {
		t.Error("noise-aware mode after the local search: no trust region in 10-D")
	}
	o.SetNoise(nil, false)
	if o.tr != nil {
		t.Error("noise-aware mode off: the local search's trust region stayed")
	}
}

// With SetNoiseLocalTRDims(10), in 10-D the suggestions after 2·D observations come from trust.go's
// region (its own GP is fitted, every suggestion lies in its box around
// the run's posterior-mean best) and noiselocal.go's region never runs;
// in 6-D it is noiselocal.go's region that runs.
func TestNoiseLocalTRSuggestions(t *testing.T) {
	defer func(v float64) { nlEIFactor = v }(nlEIFactor)
	nlEIFactor = 0 // the 6-D local search takes every suggestion after its start
	for _, d := range []int{10, 6} {
		o, err := New(numDims(d), Options{Seed: 5, MaxTrials: 40})
		if err != nil {
			t.Fatal(err)
		}
		o.SetNoise(nil, true)
		o.SetNoiseLocal(true)
		o.SetNoiseLocalTRDims(10)
		rng := rand.New(rand.NewPCG(uint64(d), 3))
		inRegion := 0
		for range 2*d + 8 {
			pts, err := o.Suggest(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := pts[0]
			if o.tr != nil && o.hist.Len() >= trStartFactor*d && o.tr.theta != nil {
				w := trWeights(o.tr.theta, o.cat)
				c := o.Ranked(1)[0]
				in := true
				for i := range p {
					if d := p[i] - c[i]; d > o.tr.length*w[i]/2+1e-9 || -d > o.tr.length*w[i]/2+1e-9 {
						in = false
					}
				}
				if in {
					inRegion++
				}
			}
			f := 1.0
			for i, u := range p {
				f += float64(i+1) * (u - 0.3) * (u - 0.3)
			}
			if err := o.Observe(Observation{X: p, Y: []float64{f * (1 + 0.1*rng.NormFloat64())}}); err != nil {
				t.Fatal(err)
			}
		}
		switch d {
		case 10:
			if o.tr == nil || o.tr.theta == nil {
				t.Fatalf("10-D: the trust region's GP was never fitted")
			}
			if o.nl.seen >= 0 {
				t.Errorf("10-D: noiselocal.go's region counted rounds")
			}
			if inRegion < 6 {
				t.Errorf("10-D: %d of the last suggestions in the trust region around the posterior-mean best, want most of 8", inRegion)
			}
		case 6:
			if o.tr != nil {
				t.Errorf("6-D: a trust region was created")
			}
			if o.nl.seen < 0 || o.nl.theta == nil {
				t.Errorf("6-D: noiselocal.go's region never ran")
			}
		}
	}
}
