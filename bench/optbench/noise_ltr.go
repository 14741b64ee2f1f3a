package main

import "github.com/benchtune/bench/optimizers/bayes"

// -noise-search local-region: noise_search local as it was before
// optimizers/bayes/noise_ltr.go, i.e. noiselocal.go's region in every
// dimension below 20 (Options.TrustRegion = -1 keeps trust.go's TuRBO
// regions off), so that one command can measure the local search with
// and without the TuRBO regions from 10 dimensions up.
const noiseSearchLocalRegion = "local-region"

// noiseLocalOn reports whether the noise-aware methods run the local
// search (SetNoiseLocal).
func noiseLocalOn() bool {
	return noiseSearch == "local" || noiseSearch == noiseSearchLocalRegion
}

// noiseOptions returns the optimizer's options of a method of the noise
// benchmark: with -noise-search local-region the aware and confirm
// methods never use trust.go's regions.
func noiseOptions(method string, opts bayes.Options) bayes.Options {
	if noiseSearch == noiseSearchLocalRegion && method != "naive" && method != "noisefree" {
		opts.TrustRegion = -1
	}
	return opts
}
