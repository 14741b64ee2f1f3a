package bayes

// TuRBO regions for the local search of noise-aware mode from a number
// of dimensions up (SetNoiseLocalTRDims; an experiment, off unless set:
// the scheduler's noise_search never sets it).
//
// Why it was tried: in 10 dimensions at 100 evaluations the noise-aware
// global GP is still finding improvements when noiselocal.go's region
// would take over, and that region, one box that only halves around the
// posterior-mean incumbent and never restarts, measured worse
// configurations than the global search did (Levy-10 at 10% noise, seeds
// 1-20: the best configuration the search measured 7.83 from the optimum
// against the global search's 5.09). trust.go's TuRBO-1 regions (used
// without noise from TrustRegionMinDims = 20 dimensions up) start after
// 2·D observations, begin wide (side 0.8), move with the run's
// posterior-mean best in noise-aware mode, learn the noise, and restart
// from a fresh design when the region collapses. Over seeds 1-20 they
// cut Levy-10's confirmed regret from 7.99 to 5.72, but over seeds 1-40
// they were no better than before (8.88 against 8.15) and at 20% noise
// they were worse (a lucky raw observation stops the region's
// successes): see docs/optimizers-algorithms.md, "TuRBO regions from 10
// dimensions". So it is not part of noise_search: local.
//
// It acts only with the local search on in noise-aware mode, with one
// objective, no fidelity input, a numeric space that is not enumerated,
// and Options.TrustRegion not -1 (never); from TrustRegionMinDims up the
// regions are on anyway.

// nlTRState is SetNoiseLocalTRDims's setting and whether the optimizer's
// trust region is the one nlSyncTR created.
type nlTRState struct {
	dims  int // 0: never
	owned bool
}

// SetNoiseLocalTRDims makes the local search of noise-aware mode use
// trust.go's TuRBO regions in spaces of at least d dimensions (0: never,
// the default). It may be called before or after SetNoise and
// SetNoiseLocal, before the first observation.
func (o *Optimizer) SetNoiseLocalTRDims(d int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.nlTR.dims = max(0, d)
	o.nlSyncTR()
}

// nlSyncTR creates trust.go's region when the local search of
// noise-aware mode applies from nlTRDims dimensions up, and removes the
// region it created when it no longer does.
func (o *Optimizer) nlSyncTR() {
	d := o.sp.Len()
	want := o.nlTR.dims > 0 && d >= o.nlTR.dims && o.nl != nil && o.aware && o.m == 1 && o.fid == nil &&
		o.opts.TrustRegion >= 0 && o.numericOnly() && o.enumerate() == nil
	switch {
	case want && o.tr == nil:
		o.tr = newTrustRegion(d)
		o.nlTR.owned = true
	case !want && o.nlTR.owned:
		o.tr = nil
		o.nlTR.owned = false
	}
}
