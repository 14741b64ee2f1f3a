package bayes

import (
	"fmt"
	"math"
	"slices"

	"github.com/benchtune/bench/optimizers/internal/space"
	"github.com/benchtune/bench/tunables"
)

// Multi-fidelity mode (SetFidelity). One numeric dimension of the space is
// the fidelity a point was measured at (the length of a benchmark run, the
// number of training epochs...), in unit coordinates like every other
// dimension (the caller maps the fidelity's range, on a log scale where it
// is one). The GP takes it as an ordinary input: the Matérn-5/2 ARD kernel
// gets a lengthscale for it, fitted with the others, so that many cheap
// low-fidelity observations inform the model at full fidelity as far as
// the data says they are correlated (a long fidelity lengthscale: strongly;
// a short one: hardly).
//
// Suggestions are made for full fidelity only: every candidate of the
// acquisition (the initial design, random candidates, perturbations of the
// best points, gradient steps, neighbour moves) has the fidelity
// coordinate held at its full value, and log EI's incumbent is the lowest
// posterior mean *at full fidelity* over the observed configurations, not
// the lowest observed value (a low-fidelity value is biased). This is EI
// at the target fidelity on a GP with a fidelity input, the simplest of
// BoTorch's multi-fidelity baselines: which fidelity to run a suggestion
// at is left to the scheduler (Hyperband or ASHA brackets), as in BOHB,
// whose model also proposes configurations while the bracket schedule
// decides their budgets (BOHB fits a separate KDE on the highest fidelity
// with enough points; the GP instead learns from every fidelity at once).
// A cost-aware choice of the fidelity a configuration starts at is in
// mf_acq.go (BOCA's rule, ChooseFidelity); the multi-fidelity knowledge
// gradient is not implemented, and MF-MES only as an optbench experiment
// (bench/optbench/mf_mes.go, on PredictPairs: fidelity_pair.go).
//
// The trust region (trust.go) is off in this mode: its centre, the best
// observation, may be a low-fidelity one.

// fidLenMu is the prior median of the fidelity's lengthscale: 2 makes the
// kernel's correlation between the lowest and the full fidelity about 0.8.
// With the default prior of the other dimensions (about 0.6 in 4
// dimensions, a correlation of 0.2), a model fed only low-fidelity points
// barely informs the full fidelity before the fit has data at both ends.
const fidLenMu = 2.0

// fidelityDim is the fidelity dimension and its full-fidelity coordinate.
type fidelityDim struct {
	i    int
	full float64
	// tried holds the keys of the observed configurations at full
	// fidelity, for the first triedN history entries.
	tried  map[string]bool
	triedN int
	// inc is PredictFull's incumbent for the model incG with incN points.
	inc  float64
	incG *gp
	incN int
}

// SetFidelity makes dimension i the fidelity input, with unit coordinate
// full at full fidelity (normally 1). Observations may carry any value of
// the dimension; suggestions all carry full. Call it before the first
// Suggest; observations made before are kept.
func (o *Optimizer) SetFidelity(i int, full float64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	dims := o.sp.Dims()
	if i < 0 || i >= len(dims) {
		return fmt.Errorf("fidelity dimension %d out of range (the space has %d)", i, len(dims))
	}
	d := dims[i]
	if d.Kind != tunables.DimNumeric || o.sp.Selector(i) >= 0 {
		return fmt.Errorf("fidelity dimension %q must be numeric, without special values", d.Name)
	}
	if math.IsNaN(full) || full < 0 || full > 1 {
		return fmt.Errorf("fidelity dimension %q: full-fidelity coordinate %v outside [0, 1]", d.Name, full)
	}
	if o.fid != nil && (o.fid.i != i || o.fid.full != full) {
		return fmt.Errorf("the fidelity is already set (dimension %d)", o.fid.i)
	}
	o.fid = &fidelityDim{i: i, full: full}
	p := make(tunables.Point, len(dims))
	p[i] = full
	o.sp.SnapInPlace(p)
	if math.Abs(p[i]-full) > 1e-9 {
		return fmt.Errorf("fidelity dimension %q: full-fidelity coordinate %v is not one of its levels", d.Name, full)
	}
	o.tr = nil
	// The user declared the dimension a fidelity: expect low fidelities to
	// be correlated with the full one until the data says otherwise.
	o.pr.mu[i] = math.Log(fidLenMu)
	o.theta = nil
	for _, q := range o.design {
		o.pin(q)
	}
	if o.opts.Initial != nil {
		o.opts.Initial = o.pin(slices.Clone(o.opts.Initial))
	}
	// A finite space is searched exhaustively over its full-fidelity points.
	var enum []tunables.Point
	for _, q := range o.sp.Enumerate(enumLimit) {
		if o.atFull(q) {
			enum = append(enum, q)
		}
	}
	o.enum, o.enumOK = enum, true
	o.baseN = -1
	return nil
}

// pin sets p's fidelity coordinate to full fidelity (in place) and returns
// p; a no-op without a fidelity.
func (o *Optimizer) pin(p tunables.Point) tunables.Point {
	if o.fid != nil && p != nil {
		p[o.fid.i] = o.fid.full
	}
	return p
}

// atFull reports whether p is at full fidelity (true without a fidelity).
func (o *Optimizer) atFull(p tunables.Point) bool {
	return o.fid == nil || math.Abs(p[o.fid.i]-o.fid.full) <= 1e-12
}

// triedAtAnyFidelity reports whether the configuration of full-fidelity
// point key was observed at some fidelity: suggestions are new
// configurations (promoting one is the scheduler's business).
func (o *Optimizer) triedAtAnyFidelity(key string) bool {
	f := o.fid
	if f == nil {
		return false
	}
	if f.tried == nil {
		f.tried = map[string]bool{}
	}
	entries := o.hist.Entries()
	for _, e := range entries[f.triedN:] {
		f.tried[space.Key(o.pin(slices.Clone(e.X)))] = true
	}
	f.triedN = len(entries)
	return f.tried[key]
}

// isFidelity reports whether dimension i is the fidelity.
func (o *Optimizer) isFidelity(i int) bool { return o.fid != nil && o.fid.i == i }

// incumbentAt is log EI's incumbent: without a fidelity, the lowest
// posterior mean at the training points (incumbent); with one, the lowest
// posterior mean at full fidelity over the training points' configurations.
func (o *Optimizer) incumbentAt(g *gp) float64 {
	if o.fid == nil {
		return incumbent(g)
	}
	best := math.Inf(1)
	x := make([]float64, g.d)
	for i := range g.n {
		copy(x, g.row(i))
		x[o.fid.i] = o.fid.full
		best = min(best, g.mean(x))
	}
	return best
}

// mean is the posterior mean at features x (predict without the variance).
func (g *gp) mean(x []float64) float64 {
	mu := 0.0
	for i := range g.n {
		k, _ := matern(g.r2(x, g.row(i)), g.sig2)
		if g.ft != nil {
			k += g.curve(x, g.row(i))
		}
		mu += k * g.alpha[i]
	}
	return mu
}

// debias removes from raw targets (one per history entry) the part of
// the fidelity's effect that is the same for every configuration: low
// fidelities are often biased as a whole (a short run's throughput is
// lower, an early epoch's loss higher), which a stationary kernel can only
// explain by a short fidelity lengthscale, i.e. by decorrelating the
// fidelities. The offset β(h) = b₁h + b₂h², h = full - s the distance to
// full fidelity, is fitted by least squares on the differences between
// observations of the same configuration at different fidelities (which
// Hyperband's promotions provide), so that configuration effects cancel;
// b₂ has a small ridge. Without such pairs nothing is removed. What
// remains (a configuration-dependent bias, noise) is left to the GP.
func (o *Optimizer) debias(raw []float64) []float64 {
	if o.fid == nil || o.m != 1 {
		return raw
	}
	entries := o.hist.Entries()
	type obs struct{ h, y float64 }
	byCfg := map[string][]obs{}
	var keys []string
	for i, e := range entries {
		if e.N == 0 || math.IsInf(raw[i], 0) || math.IsNaN(raw[i]) {
			continue
		}
		k := space.Key(o.pin(slices.Clone(e.X)))
		if _, ok := byCfg[k]; !ok {
			keys = append(keys, k)
		}
		byCfg[k] = append(byCfg[k], obs{o.fid.full - e.X[o.fid.i], raw[i]})
	}
	// Normal equations of Δy = b₁Δh + b₂Δ(h²) over consecutive pairs.
	var a11, a12, a22, r1, r2 float64
	pairs := 0
	for _, k := range keys {
		v := byCfg[k]
		if len(v) < 2 {
			continue
		}
		slices.SortFunc(v, func(p, q obs) int {
			switch {
			case p.h < q.h:
				return -1
			case p.h > q.h:
				return 1
			}
			return 0
		})
		for j := 1; j < len(v); j++ {
			d1 := v[j].h - v[j-1].h
			d2 := v[j].h*v[j].h - v[j-1].h*v[j-1].h
			dy := v[j].y - v[j-1].y
			if d1 == 0 {
				continue
			}
			a11, a12, a22 = a11+d1*d1, a12+d1*d2, a22+d2*d2
			r1, r2 = r1+d1*dy, r2+d2*dy
			pairs++
		}
	}
	if pairs == 0 {
		return raw
	}
	a22 += 0.1*a11 + 1e-12 // ridge on b₂
	det := a11*a22 - a12*a12
	if det <= 0 {
		return raw
	}
	b1 := (r1*a22 - r2*a12) / det
	b2 := (a11*r2 - a12*r1) / det
	out := make([]float64, len(raw))
	for i, e := range entries {
		h := o.fid.full - e.X[o.fid.i]
		out[i] = raw[i] - b1*h - b2*h*h
	}
	return out
}
