package main

import "testing"

// In 10-D the local search with TuRBO regions (local-tr, from 2·D = 20
// observations on) and without them (local) report different
// configurations; in 2-D they are the same search.
func TestNoiseSearchLocalTR(t *testing.T) {
	defer func(v string) { noiseSearch = v }(noiseSearch)
	regret := func(search, fn string) string {
		_, perSeed := noiseRegret(t, "aware", "-noise", "0.1", "-funcs", fn, "-seeds", "1", "-budget", "30", "-noise-search", search, "-noise-methods", "aware")
		return perSeed
	}
	if a, b := regret("local-tr", "levy10"), regret("local", "levy10"); a == b {
		t.Errorf("levy10: local-tr and local both reported regret %s", a)
	}
	if a, b := regret("local-tr", "branin"), regret("local", "branin"); a != b {
		t.Errorf("branin: local-tr %s, local %s: want the same search below 10 dimensions", a, b)
	}
	for _, tc := range []struct {
		search string
		on     bool
	}{{"local-tr", true}, {"local", true}, {"global", false}} {
		noiseSearch = tc.search
		if noiseLocalOn() != tc.on {
			t.Errorf("%s: local search %v, want %v", tc.search, !tc.on, tc.on)
		}
	}
}
