package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// noiseSearch is the noise-aware optimizer's search in the -noise
// benchmark (-noise-search): "global" (the default: the GP's augmented EI
// over the whole box) or "local" (bayes.Optimizer.SetNoiseLocal: a trust
// region around the posterior-mean incumbent once the global search
// expects less than the noise, optimizers/bayes/noiselocal.go). It
// applies to the aware and confirm methods; naive and noisefree are
// today's GP either way.
var noiseSearch = "global"

// noiseSearches are the values -noise-search takes.
var noiseSearches = []string{"global", "local", noiseSearchLocalTR}

// noiseSearchRun checks -noise-search and says which search runs; with
// -noise-methods it runs only those methods and prints their deployed
// regret per seed (done is then true).
func noiseSearchRun(w io.Writer, cfg config, probs []problem, sigmas []float64, methods string) (done bool, err error) {
	if !slices.Contains(noiseSearches, noiseSearch) {
		return true, fmt.Errorf("-noise-search: want one of %s, got %q", strings.Join(noiseSearches, ", "), noiseSearch)
	}
	fmt.Fprintf(w, "noise-aware search: %s\n", noiseSearch)
	noiseSeedNote(w, cfg) // noise_n.go
	if methods == "" {
		return false, nil
	}
	ms := splitList(methods)
	for _, m := range ms {
		if !slices.Contains(noiseMethods, m) {
			return true, fmt.Errorf("-noise-methods: unknown method %q (known: %s)", m, strings.Join(noiseMethods, ", "))
		}
	}
	if cfg.budget < minNoiseBudget {
		return true, fmt.Errorf("-noise needs -budget of at least %d", minNoiseBudget)
	}
	fmt.Fprintf(w, "deployed regret at %d evaluations per seed (seeds 1-%d), median [q1, q3] over the first 10 seeds and over all\n", cfg.budget, cfg.seeds)
	for _, p := range probs {
		for _, sg := range sigmas {
			for _, m := range ms {
				res, best, err := noiseSeeds(cfg, p, m, sg)
				if err != nil {
					return true, err
				}
				per := make([]string, len(res))
				for i, v := range res {
					per[i] = fmtV(v)
				}
				fmt.Fprintf(w, "%s σ=%g%% %-9s seeds 1-%d %s; all %s; best measured %s; per seed %s\n", p.name, 100*sg, m,
					min(10, len(res)), fmtQ(res[:min(10, len(res))]), fmtQ(res), fmtQ(best), strings.Join(per, " "))
			}
		}
	}
	return true, nil
}
