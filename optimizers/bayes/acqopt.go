package bayes

import (
	"math"
	"slices"
	"sort"

	"github.com/benchtune/bench/optimizers/internal/space"
	"github.com/benchtune/bench/tunables"
)

// acq evaluates log EI on one GP posterior.
type acq struct {
	o       *Optimizer
	g       *gp
	best    float64
	noise   float64 // > 0: augmented EI's penalty (noise-aware mode)
	dmu, dv []float64
	grad    []float64
	dimsBuf []int

	// parts: the integrated acquisition (hypermc.go), the log of the EI
	// averaged over these posteriors; nil: g's alone.
	parts  []acqPart
	pv, pw []float64
}

func (a *acq) value(p tunables.Point) float64 {
	return a.valueX(a.o.encode(p))
}

func (a *acq) valueX(x []float64) float64 {
	if a.parts != nil {
		for i, p := range a.parts {
			a.pv[i] = logEIAt(p.g, p.best, p.noise, x)
		}
		return logMeanExp(a.pv, a.pw)
	}
	return logEIAt(a.g, a.best, a.noise, x)
}

// logEIAt is log EI (augmented when noise > 0) of g at features x.
func logEIAt(g *gp, best, noise float64, x []float64) float64 {
	mu, v := g.predict(x)
	pen, _ := aeiPenalty(v, noise)
	return logEI(best, mu, v) + pen
}

// valueGrad returns log EI at features x and its gradient with respect to
// the features in dims (stored in a.grad).
func (a *acq) valueGrad(x []float64, dims []int) float64 {
	if a.parts == nil {
		return logEIGrad(a.g, a.best, a.noise, x, dims, a.dmu, a.dv, a.grad)
	}
	for i, p := range a.parts {
		a.pv[i] = logEIGrad(p.g, p.best, p.noise, x, dims, p.dmu, p.dv, p.grad)
	}
	f := logMeanExp(a.pv, a.pw)
	for j := range dims {
		s := 0.0
		for i, p := range a.parts {
			s += a.pw[i] * p.grad[j]
		}
		a.grad[j] = s
	}
	return f
}

// logEIGrad is logEIAt and its gradient with respect to the features in
// dims (in grad; dmu and dv are scratch).
func logEIGrad(g *gp, best, noise float64, x []float64, dims []int, dmu, dv, grad []float64) float64 {
	mu, v := g.predictGrad(x, dims, dmu, dv)
	s := math.Sqrt(v)
	z := (best - mu) / s
	f := math.Log(s) + logH(z)
	dl := dLogH(z)
	for j := range dims {
		ds := dv[j] / (2 * s)
		dz := (-dmu[j] - z*ds) / s
		grad[j] = ds/s + dl*dz
	}
	if noise > 0 {
		pen, dpen := aeiPenalty(v, noise)
		f += pen
		for j := range dims {
			grad[j] += dpen * dv[j]
		}
	}
	return f
}

type cand struct {
	p tunables.Point
	f float64
}

// maximizeAcq returns the point that avoid does not reject with the
// highest log EI, or nil when there is none.
func (o *Optimizer) maximizeAcq(g *gp, avoid func(string) bool) tunables.Point {
	d := o.sp.Len()
	a := &acq{o: o, g: g, best: o.incumbentAt(g),
		dmu: make([]float64, d), dv: make([]float64, d), grad: make([]float64, d)}
	if o.aware {
		a.best, a.noise = aeiThreshold(g), g.noise
	}
	if a.parts = o.hmcParts(g); a.parts != nil { // hypermc.go
		a.pv, a.pw = make([]float64, len(a.parts)), make([]float64, len(a.parts))
	}
	if o.trActive() && o.enumerate() == nil {
		return o.maximizeAcqTrust(a, avoid)
	}

	if enum := o.enumerate(); enum != nil {
		var best tunables.Point
		bestF := math.Inf(-1)
		for _, p := range enum {
			if avoid(space.Key(p)) {
				continue
			}
			if f := a.value(p); best == nil || f > bestF {
				best, bestF = p, f
			}
		}
		if best == nil {
			return nil
		}
		return slices.Clone(best)
	}

	var cands []cand
	add := func(p tunables.Point) {
		if !avoid(space.Key(p)) {
			cands = append(cands, cand{p, a.value(p)})
		}
	}
	nRandom, nStarts := o.acqEffort() // acqdiag.go
	for range nRandom {
		add(o.pin(o.sp.Random(o.rng)))
	}
	global := o.globalCands(cands) // acqdiag.go
	scales := []float64{0.005, 0.02, 0.08, 0.3}
	for _, an := range o.anchors(g) {
		for j := range nPerturbPerAnchor {
			add(o.perturb(an, scales[j%len(scales)]))
		}
	}
	if len(cands) == 0 {
		return o.randomFree(avoid)
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].f > cands[j].f })
	best := cands[0]
	started := map[string]bool{}
	for _, c := range cands {
		if len(started) >= nStarts {
			break
		}
		key := space.Key(c.p)
		if started[key] {
			continue
		}
		started[key] = true
		p, f := o.refine(a, c.p, c.f, avoid)
		if f > best.f {
			best = cand{p, f}
		}
	}
	return o.refineGlobal(a, global, best, started, avoid).p // acqdiag.go
}

// anchors returns the observed points with the lowest posterior mean.
func (o *Optimizer) anchors(g *gp) []tunables.Point {
	entries := o.hist.Entries()
	n := min(o.baseN, len(entries))
	idx := make([]int, n)
	mu := make([]float64, n)
	for i := range n {
		idx[i] = i
		mu[i] = g.y[i] - (g.nv[i]+g.jitter)*g.alpha[i]
	}
	sort.SliceStable(idx, func(a, b int) bool { return mu[idx[a]] < mu[idx[b]] })
	var out []tunables.Point
	for _, i := range idx[:min(nAnchors, n)] {
		out = append(out, entries[i].X)
	}
	return out
}

// perturb returns a random neighbour of p: numeric coordinates moved by
// Gaussian noise of standard deviation scale (about three of them on
// average), categorical ones switched with a small probability.
func (o *Optimizer) perturb(p tunables.Point, scale float64) tunables.Point {
	q := slices.Clone(p)
	d := len(q)
	prob := min(1, 3/float64(d))
	for i, dm := range o.sp.Dims() {
		if o.rng.Float64() >= prob {
			continue
		}
		switch dm.Kind {
		case tunables.DimNumeric:
			if o.sp.Active(q, i) {
				q[i] += scale * o.rng.NormFloat64()
			}
		case tunables.DimCategorical:
			if dm.Choices > 1 && o.rng.Float64() < 0.3 {
				c := o.rng.IntN(dm.Choices - 1)
				if float64(c) >= q[i] {
					c++
				}
				q[i] = float64(c)
				if g := o.sp.Governed(i); g >= 0 && c == 0 {
					q[g] = o.rng.Float64()
				}
			}
		}
	}
	o.sp.SnapInPlace(q)
	return o.pin(q)
}

// refine climbs log EI from p: gradient steps on continuous coordinates,
// then neighbour moves on discrete ones, alternating while it improves.
func (o *Optimizer) refine(a *acq, p tunables.Point, f float64, avoid func(string) bool) (tunables.Point, float64) {
	for range 3 {
		improved := false
		if q, fq := o.gradAscent(a, p, f); fq > f+1e-12 && !avoid(space.Key(q)) {
			p, f, improved = q, fq, true
		}
		if q, fq := o.hillClimb(a, p, f, avoid); fq > f+1e-12 {
			p, f, improved = q, fq, true
		}
		if !improved {
			break
		}
	}
	return p, f
}

// gradAscent runs projected, lengthscale-preconditioned gradient ascent
// with backtracking on the continuous (and finely discretized) active
// numeric coordinates, then snaps the result.
func (o *Optimizer) gradAscent(a *acq, p tunables.Point, f float64) (tunables.Point, float64) {
	dims := a.dimsBuf[:0]
	for i, dm := range o.sp.Dims() {
		if dm.Kind == tunables.DimNumeric && (dm.Levels == 0 || dm.Levels > relaxLevels) && o.sp.Active(p, i) && !o.isFidelity(i) {
			dims = append(dims, i)
		}
	}
	a.dimsBuf = dims
	if len(dims) == 0 {
		return p, f
	}
	x := o.encode(p)
	xn := slices.Clone(x)
	fx := a.valueGrad(x, dims)
	if math.IsNaN(fx) || math.IsInf(fx, 0) {
		return p, f
	}
	pre := make([]float64, len(dims))
	dir := make([]float64, len(dims))
	for j, i := range dims {
		pre[j] = min(1, 1/a.g.w[i])
	}
	step := 0.05
	for range 40 {
		maxd := 0.0
		for j, i := range dims {
			dir[j] = pre[j] * a.grad[j]
			if (x[i] <= 0 && dir[j] < 0) || (x[i] >= 1 && dir[j] > 0) {
				dir[j] = 0
			}
			maxd = max(maxd, math.Abs(dir[j]))
		}
		if maxd < 1e-12 {
			break
		}
		ok := false
		var fn float64
		for range 12 {
			t := step / maxd
			gain := 0.0
			for j, i := range dims {
				xn[i] = min(1, max(0, x[i]+t*dir[j]))
				gain += a.grad[j] * (xn[i] - x[i])
			}
			fn = a.valueX(xn)
			if gain > 0 && fn >= fx+1e-4*gain {
				ok = true
				break
			}
			step *= 0.25
		}
		if !ok {
			break
		}
		moved := 0.0
		for _, i := range dims {
			moved = max(moved, math.Abs(xn[i]-x[i]))
			x[i] = xn[i]
		}
		fx = a.valueGrad(x, dims)
		step = min(step*2, 0.3)
		if moved < 1e-7 {
			break
		}
	}
	q := slices.Clone(p)
	for _, i := range dims {
		q[i] = x[i]
	}
	o.sp.SnapInPlace(q)
	return q, a.value(q)
}

// hillClimb moves to the best neighbour (discrete moves) while that
// improves log EI.
func (o *Optimizer) hillClimb(a *acq, p tunables.Point, f float64, avoid func(string) bool) (tunables.Point, float64) {
	for range 20 {
		var bestQ tunables.Point
		bestF := f
		for _, q := range o.sp.Neighbors(p) {
			if avoid(space.Key(q)) || !o.atFull(q) {
				continue
			}
			if fq := a.value(q); fq > bestF+1e-12 {
				bestQ, bestF = q, fq
			}
		}
		if bestQ == nil {
			break
		}
		p, f = bestQ, bestF
	}
	return p, f
}
