package main

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/benchtune/bench/optimizers/bayes"
)

// -noise-search local-region keeps trust.go's regions off for the
// noise-aware methods only.
func TestNoiseOptionsLocalRegion(t *testing.T) {
	defer func(v string) { noiseSearch = v }(noiseSearch)
	for _, tc := range []struct {
		search, method string
		tr             int
		on             bool
	}{
		{"local-region", "confirm", -1, true},
		{"local-region", "aware", -1, true},
		{"local-region", "naive", 0, true},
		{"local-region", "noisefree", 0, true},
		{"local", "confirm", 0, true},
		{"global", "confirm", 0, false},
	} {
		noiseSearch = tc.search
		if got := noiseOptions(tc.method, bayes.Options{Seed: 1}).TrustRegion; got != tc.tr {
			t.Errorf("%s %s: TrustRegion %d, want %d", tc.search, tc.method, got, tc.tr)
		}
		if noiseLocalOn() != tc.on {
			t.Errorf("%s: local search %v, want %v", tc.search, !tc.on, tc.on)
		}
	}
}

// In 10-D the local search (TuRBO regions from 2·D = 20 observations on)
// and local-region (noiselocal.go's region) report different
// configurations; in 2-D they are the same search.
func TestNoiseSearchLocalRegionDiffersFromTenDims(t *testing.T) {
	defer func(v string) { noiseSearch = v }(noiseSearch)
	perSeed := regexp.MustCompile(`σ=10% aware .*; per seed (.*)`)
	regret := func(search, fn string) string {
		var out bytes.Buffer
		if err := run([]string{"-noise", "0.1", "-funcs", fn, "-seeds", "1", "-budget", "30", "-noise-search", search, "-noise-methods", "aware"}, &out); err != nil {
			t.Fatal(err)
		}
		m := perSeed.FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("%s %s: no per-seed regret in\n%s", search, fn, out.String())
		}
		return m[1]
	}
	if a, b := regret("local", "levy10"), regret("local-region", "levy10"); a == b {
		t.Errorf("levy10: local and local-region both reported regret %s", a)
	}
	if a, b := regret("local", "branin"), regret("local-region", "branin"); a != b {
		t.Errorf("branin: local %s, local-region %s: want the same search below 10 dimensions", a, b)
	}
}
