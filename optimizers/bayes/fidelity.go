package bayes

import (
	"fmt"
	"math"
	"slices"

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
// Cost-aware acquisitions that also choose the fidelity (multi-fidelity
// knowledge gradient, MF-MES) are not implemented.
//
// The trust region (trust.go) is off in this mode: its centre, the best
// observation, may be a low-fidelity one.

// fidelityDim is the fidelity dimension and its full-fidelity coordinate.
type fidelityDim struct {
	i    int
	full float64
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
		mu += k * g.alpha[i]
	}
	return mu
}
