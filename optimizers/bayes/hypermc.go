package bayes

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Integrated acquisition over the hyperparameters (Snoek, Larochelle &
// Adams, NIPS 2012, "Practical Bayesian optimization of machine learning
// algorithms"): instead of the log EI of the one MAP fit, Suggest
// maximises the log of the EI averaged over S samples of the
// hyperparameters (lengthscales, signal and noise variance) from their
// posterior, the marginal likelihood times the priors of newPriors. The
// samples come from a slice sampler (Neal 2003, stepping out and
// shrinkage, one coordinate of log θ after the other), whose chain goes
// on from refit to refit: the first refit starts it at the MAP estimate
// and runs burnFirst sweeps, each later one burn sweeps, and then S
// samples are kept, thin sweeps apart. The MAP fit still runs (the
// anchors of the acquisition's optimiser and everything else that reads
// the model use it). An experiment of bench/optbench (-gp-hyper): nothing
// in bench calls SetHyperSamples.

// hyperMC is the sampler's state (nil: the MAP fit alone).
type hyperMC struct {
	n, burnFirst, burn, thin int
	rng                      *rand.Rand
	state                    hyper   // the chain's state; nil before the first refit
	samples                  []hyper // the last refit's samples
	gs                       []*gp   // their posteriors on the current data
	baseN                    int     // as Optimizer.baseN, for gs; -1: rebuild
}

// sliceWidth is the slice sampler's initial interval (on log θ) and
// sliceMaxSteps the most it steps out on each side.
const (
	sliceWidth    = 1.0
	sliceMaxSteps = 8
)

// SetHyperSamples makes Suggest maximise EI integrated over n posterior
// samples of the hyperparameters instead of the EI of the MAP fit (see
// hyperMC); burnFirst and burn are the sweeps of the slice sampler before
// the first and every later refit's samples, thin the sweeps between two
// samples. n = 0 turns it off. Single objective, not with a fidelity
// input, trust regions or the additive or learning-curve kernels; call it
// before the first suggestion from the model. Deterministic: the sampler
// draws from a generator of its own, seeded by Options.Seed.
func (o *Optimizer) SetHyperSamples(n, burnFirst, burn, thin int) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n < 0 || burnFirst < 0 || burn < 0 || thin < 1 {
		return fmt.Errorf("hyperparameter samples: %d samples, %d and %d burn-in sweeps, thinning %d: want n, burn-ins ≥ 0 and thinning ≥ 1", n, burnFirst, burn, thin)
	}
	if o.theta != nil {
		return errors.New("hyperparameter samples: set them before the first fit")
	}
	if n == 0 {
		o.hmc = nil
		return nil
	}
	if o.m != 1 || o.fid != nil || o.tr != nil || o.pr.add || o.pr.ftk != nil || o.pr.sparse {
		return errors.New("hyperparameter samples: single objective only, not with a fidelity input, trust regions, the sparse prior, the additive or the learning-curve kernel")
	}
	o.hmc = &hyperMC{n: n, burnFirst: burnFirst, burn: burn, thin: thin, baseN: -1,
		rng: rand.New(rand.NewPCG(uint64(o.opts.Seed), 0x68797065726d63))}
	return nil
}

// HyperSamples returns the current hyperparameter samples as
// lengthscales (inputs in [0,1]), signal and noise variance; nil before
// the first fit or without SetHyperSamples.
func (o *Optimizer) HyperSamples() (ls [][]float64, sig2, noise []float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.hmc == nil {
		return nil, nil, nil
	}
	d := o.sp.Len()
	for _, s := range o.hmc.samples {
		l := make([]float64, d)
		for i := range l {
			l[i] = math.Exp(s[i])
		}
		ls = append(ls, l)
		sig2 = append(sig2, math.Exp(s[d]))
		noise = append(noise, math.Exp(s[d+1]))
	}
	return ls, sig2, noise
}

// sample draws the refit's samples from the posterior of f, starting (the
// first time) at the MAP estimate theta.
func (h *hyperMC) sample(f *fitData, theta hyper) {
	logp := func(th hyper) float64 {
		for i, v := range th {
			if v < f.pr.lo[i] || v > f.pr.hi[i] {
				return math.Inf(-1)
			}
		}
		v := f.negLogPost(th, nil)
		if math.IsNaN(v) {
			return math.Inf(-1)
		}
		return -v
	}
	burn := h.burn
	if h.state == nil {
		h.state = append(hyper(nil), theta...)
		burn = h.burnFirst
	}
	x := h.state
	lx := logp(x)
	if math.IsInf(lx, -1) {
		// The chain's state has no density on the new data (it cannot
		// factor): start again at the MAP estimate.
		copy(x, theta)
		lx = logp(x)
	}
	sweep := func() { lx = sliceSweep(h.rng, x, lx, logp) }
	for range burn {
		sweep()
	}
	h.samples = h.samples[:0]
	for range h.n {
		for range h.thin {
			sweep()
		}
		h.samples = append(h.samples, append(hyper(nil), x...))
	}
	h.baseN = -1
}

// sliceSweep updates each coordinate of x in turn by univariate slice
// sampling (Neal 2003, "Slice sampling", stepping out and shrinkage) of
// the log density logp, whose value at x is lx; it returns the new log
// density.
func sliceSweep(rng *rand.Rand, x hyper, lx float64, logp func(hyper) float64) float64 {
	for i := range x {
		x0 := x[i]
		ly := lx + math.Log(1-rng.Float64()) // the slice's level (log u, u ∈ (0,1])
		lo := x0 - sliceWidth*rng.Float64()
		hi := lo + sliceWidth
		j := rng.IntN(sliceMaxSteps)
		k := sliceMaxSteps - 1 - j
		at := func(v float64) float64 {
			x[i] = v
			return logp(x)
		}
		for ; j > 0 && at(lo) > ly; j-- {
			lo -= sliceWidth
		}
		for ; k > 0 && at(hi) > ly; k-- {
			hi += sliceWidth
		}
		for {
			v := lo + (hi-lo)*rng.Float64()
			if lv := at(v); lv > ly {
				lx = lv
				break
			}
			if v < x0 {
				lo = v
			} else {
				hi = v
			}
			if hi-lo < 1e-12 {
				// Only x0 is left (it is on the slice).
				x[i] = x0
				lx = logp(x)
				break
			}
		}
	}
	return lx
}

// hmcSync brings the samples' posteriors up to the data (as syncGP does
// for the MAP one); rebuild when the MAP model was rebuilt.
func (o *Optimizer) hmcSync(xs [][]float64, cnt, y []float64, rebuild bool) error {
	h := o.hmc
	if h == nil || len(h.samples) == 0 {
		return nil
	}
	if rebuild || len(h.gs) != len(h.samples) {
		h.baseN = -1
	}
	if h.baseN < 0 {
		h.gs = make([]*gp, len(h.samples))
	}
	var n int
	for i, s := range h.samples {
		g, bn, err := syncGP(h.gs[i], h.baseN, o.cat, s, xs, cnt, y, false)
		if err != nil {
			return err
		}
		h.gs[i], n = g, bn
	}
	h.baseN = n
	return nil
}

// hmcParts returns the integrated acquisition's parts for the model g:
// one per sample, nil unless g is the optimizer's model and there are
// samples.
func (o *Optimizer) hmcParts(g *gp) []acqPart {
	h := o.hmc
	if h == nil || g != o.g || len(h.gs) == 0 {
		return nil
	}
	d := o.sp.Len()
	parts := make([]acqPart, len(h.gs))
	for i, gi := range h.gs {
		parts[i] = acqPart{g: gi, best: o.incumbentAt(gi), dmu: make([]float64, d), dv: make([]float64, d), grad: make([]float64, d)}
		if o.aware {
			parts[i].best, parts[i].noise = aeiThreshold(gi), gi.noise
		}
	}
	return parts
}

// hmcBelieve adds the fantasy point x to each sample's posterior with that
// posterior's mean (the Kriging believer of modelSuggest).
func (o *Optimizer) hmcBelieve(x []float64) {
	if o.hmc == nil {
		return
	}
	for _, g := range o.hmc.gs {
		mu, _ := g.predict(x)
		g.appendPoint(x, g.noise, mu)
	}
}

// hmcTruncate drops the fantasies.
func (o *Optimizer) hmcTruncate() {
	if o.hmc == nil {
		return
	}
	for _, g := range o.hmc.gs {
		g.truncate(o.hmc.baseN)
	}
}

// acqPart is one sample's share of the integrated acquisition.
type acqPart struct {
	g             *gp
	best, noise   float64
	dmu, dv, grad []float64
}

// logMeanExp returns log(mean(exp(v))) and leaves in w the weights
// exp(v_i)/Σ exp(v) (the softmax of v).
func logMeanExp(v, w []float64) float64 {
	mx := math.Inf(-1)
	for _, x := range v {
		mx = max(mx, x)
	}
	if math.IsInf(mx, 0) {
		for i := range w {
			w[i] = 1 / float64(len(w))
		}
		return mx
	}
	s := 0.0
	for i, x := range v {
		w[i] = math.Exp(x - mx)
		s += w[i]
	}
	for i := range w {
		w[i] /= s
	}
	return mx + math.Log(s/float64(len(v)))
}
