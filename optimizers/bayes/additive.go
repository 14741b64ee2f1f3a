package bayes

import (
	"errors"
	"math"
	"slices"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// The additive (first-order ANOVA) kernel, an opt-in model for searches
// under noise in many dimensions (SetAdditive): the Matérn-5/2 ARD kernel
// mixed with the sum of its one-dimensional parts,
//
//	k(a, b) = (1 − ρ)·M(Σ_d w_d δ_d) + ρ·(1/D)·Σ_d M(v_d δ_d),
//
// with the same signal variance in both parts (so the prior variance
// k(a, a) = σ_f² is unchanged), lengthscales of their own (v_d = 1/ℓ'_d²,
// with a one-dimensional model's prior), and the share ρ ∈ (0, 1) a
// hyperparameter fitted with the others (MAP; θ gets 1 + D more entries
// after log σ_n²: logit ρ, with a normal prior centred on ρ = ½, then
// log ℓ'_d). Where the
// function is a sum of one-dimensional terms (Levy's function is), the
// additive part lets every measurement inform each coordinate's term
// separately: a noisy measurement is averaged with every other one that
// shares a coordinate value, not only with its neighbours in all D
// coordinates, which in 10-D at 100 points it has none of (Duvenaud et
// al., "Additive Gaussian processes", NeurIPS 2011; Kandasamy et al.,
// "High dimensional Bayesian optimisation and bandits via additive
// models", ICML 2015). Where it is not (Branin, Hartmann6), the evidence
// can take ρ towards 0, the plain kernel.

// Prior on logit ρ.
const (
	addRhoMu = 0.0
	addRhoSD = 1.5
	addRhoLo = -6.0
	addRhoHi = 6.0
)

var errAdditiveCombo = errors.New("the additive kernel does not combine with fidelity, trust regions, the sparse prior (from 20 dimensions) or noise_search local")

// SetAdditive turns the additive kernel on or off (off by default). It
// does not combine with a fidelity dimension, trust regions (from
// TrustRegionMinDims dimensions up), the sparse lengthscale prior (from
// SparsePriorMinDims up) or the local search of noise-aware mode. The hyperparameters are refitted at the next Suggest.
func (o *Optimizer) SetAdditive(on bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if on == o.pr.add {
		return nil
	}
	d := o.sp.Len()
	if on {
		if o.fid != nil || o.tr != nil || o.nl != nil || o.pr.ftk != nil || o.pr.sparse {
			return errAdditiveCombo
		}
		o.pr = addPriors(o.pr, d)
	} else {
		o.pr.mu, o.pr.sd, o.pr.lo, o.pr.hi = o.pr.mu[:d+2], o.pr.sd[:d+2], o.pr.lo[:d+2], o.pr.hi[:d+2]
	}
	o.pr.add = on
	o.theta = nil
	o.baseN = -1
	o.g = nil
	return nil
}

// Additive reports whether the additive kernel is on, and its fitted
// share ρ (0 before the first fit).
func (o *Optimizer) Additive() (bool, float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := o.sp.Len()
	if !o.pr.add || len(o.theta) != 2*d+3 {
		return o.pr.add, 0
	}
	return true, sigmoid(o.theta[d+2])
}

// addPriors returns p (of a d-dimensional model) with the additive part's
// hyperparameters after log σ_n²: logit ρ, then the one-dimensional
// parts' log lengthscales, with the prior of a one-dimensional model's.
func addPriors(p priors, d int) priors {
	q := p
	q.mu = append(slices.Clone(p.mu[:d+2]), addRhoMu)
	q.sd = append(slices.Clone(p.sd[:d+2]), addRhoSD)
	q.lo = append(slices.Clone(p.lo[:d+2]), addRhoLo)
	q.hi = append(slices.Clone(p.hi[:d+2]), addRhoHi)
	one := newPriors(1)
	for range d {
		q.mu, q.sd = append(q.mu, one.mu[0]), append(q.sd, one.sd[0])
		q.lo, q.hi = append(q.lo, one.lo[0]), append(q.hi, one.hi[0])
	}
	q.add = true
	return q
}

func sigmoid(t float64) float64 { return 1 / (1 + math.Exp(-t)) }

// newGPAdd is newGP, with the additive part when add is true (θ then
// carries logit ρ and the one-dimensional lengthscales after log σ_n²).
func newGPAdd(cat []bool, th hyper, add bool) *gp {
	g := newGP(cat, th)
	d := len(cat)
	if add && len(th) == 2*d+3 {
		g.rho = sigmoid(th[d+2])
		g.wa = make([]float64, d)
		for i := range d {
			g.wa[i] = math.Exp(-2 * th[d+3+i])
		}
	}
	return g
}

// base is the kernel between features a and b without the learning-curve
// term: the Matérn kernel, mixed with its additive part when g.rho > 0.
func (g *gp) base(a, b []float64) float64 {
	k, _ := matern(g.r2(a, b), g.sig2)
	if g.rho == 0 {
		return k
	}
	return (1-g.rho)*k + g.rho*g.addPart(a, b)
}

// addPart is (1/D)·Σ_d M(wa_d δ_d(a, b)).
func (g *gp) addPart(a, b []float64) float64 {
	s := 0.0
	for k, w := range g.wa {
		var r2 float64
		if g.cat[k] {
			if a[k] != b[k] {
				r2 = w
			}
		} else {
			t := a[k] - b[k]
			r2 = w * t * t
		}
		v, _ := matern(r2, g.sig2)
		s += v
	}
	return s / float64(g.d)
}

// predictGradAdd is predictGrad with the additive part.
func (g *gp) predictGradAdd(x []float64, dims []int, dmu, dv []float64) (mu, v float64) {
	n := g.n
	k, dk := g.kbuf[:n], g.dkbuf[:n]
	for i := range n {
		xi := g.row(i)
		var kf float64
		kf, dk[i] = matern(g.r2(x, xi), g.sig2)
		k[i] = (1-g.rho)*kf + g.rho*g.addPart(x, xi)
		mu += k[i] * g.alpha[i]
	}
	b := g.bbuf[:n]
	copy(b, k)
	v = g.sig2
	if n > 0 {
		g.solveL(n, b)
		v -= blas64.Dot(blas64.Vector{N: n, Inc: 1, Data: b}, blas64.Vector{N: n, Inc: 1, Data: b})
		g.solveLT(n, b) // b = K⁻¹ k
	}
	floor := 1e-12 * g.sig2
	inv := 1 / float64(g.d)
	for j, d := range dims {
		sm, sv := 0.0, 0.0
		for i := range n {
			t := x[d] - g.x[i*g.d+d]
			_, da := matern(g.wa[d]*t*t, g.sig2)
			gk := ((1-g.rho)*dk[i]*g.w[d] + g.rho*inv*da*g.wa[d]) * 2 * t
			sm += g.alpha[i] * gk
			sv += b[i] * gk
		}
		dmu[j] = sm
		dv[j] = -2 * sv
		if v < floor {
			dv[j] = 0
		}
	}
	return mu, max(v, floor)
}

// negLogPostAdd finishes negLogPost for the additive kernel: obj holds
// the priors' part, w, sig2 and noise the clamped hyperparameters.
func (f *fitData) negLogPostAdd(th, tc hyper, w []float64, sig2, noise, obj float64, grad []float64) float64 {
	n, d := f.n, f.d
	rho := sigmoid(tc[d+2])
	wa := make([]float64, d)
	for k := range d {
		wa[k] = math.Exp(-2 * tc[d+3+k])
	}
	np := n * (n - 1) / 2
	if len(f.addF) != np {
		f.addF, f.addA = make([]float64, np), make([]float64, np)
		f.addD, f.addDF = make([]float64, np*d), make([]float64, np)
	}
	inv := 1 / float64(d)
	for p := range np {
		r2 := 0.0
		for k := range d {
			r2 += w[k] * f.delta[k][p]
		}
		kf, dkf := matern(r2, sig2)
		ka := 0.0
		for k := range d {
			v, dv := matern(wa[k]*f.delta[k][p], sig2)
			ka += v
			f.addD[p*d+k] = rho * inv * dv
		}
		f.addDF[p] = (1 - rho) * dkf
		ka *= inv
		f.addF[p], f.addA[p] = kf, ka
		f.kf[p] = (1-rho)*kf + rho*ka
	}
	t, nll, ok := f.factor(tc, d, n, sig2, noise)
	if !ok {
		return math.Inf(1)
	}
	obj += nll
	if grad == nil {
		return obj
	}
	if _, ok := lapack64.Potri(t); !ok {
		return obj
	}
	glen, gadd := make([]float64, d), make([]float64, d)
	gsig, gnoise, grho := 0.0, 0.0, 0.0
	p := 0
	for i := 1; i < n; i++ {
		ai := f.alpha[i]
		for j := range i {
			wij := ai*f.alpha[j] - f.l[i*n+j]
			gsig += wij * f.kf[p]
			grho += wij * rho * (1 - rho) * (f.addA[p] - f.addF[p])
			for k := range d {
				glen[k] += wij * f.addDF[p] * -2 * w[k] * f.delta[k][p]
				gadd[k] += wij * f.addD[p*d+k] * -2 * wa[k] * f.delta[k][p]
			}
			p++
		}
	}
	for i := range n {
		wii := f.alpha[i]*f.alpha[i] - f.l[i*n+i]
		gsig += 0.5 * wii * sig2
		gnoise += 0.5 * wii * noise / f.cnt[i]
	}
	for k := range d {
		if th[k] == tc[k] {
			grad[k] -= glen[k]
		}
	}
	for k, g := range append([]float64{gsig, gnoise, grho}, gadd...) {
		if th[d+k] == tc[d+k] {
			grad[d+k] -= g
		}
	}
	return obj
}

// SetAdditiveSelect makes each hyperparameter fit of an additive model
// (SetAdditive) a choice between two fits: the plain Matérn kernel (from
// the same starts as without the additive kernel, so that a run in which
// the plain kernel always wins is the run without it) and the mixture
// (from the plain fit and the previous mixture), the mixture kept only
// when its negative log posterior is lower by more than a BIC penalty for
// its 1 + D more hyperparameters, ½·(1 + D)·log n. Off by default (the
// mixture is always used).
func (o *Optimizer) SetAdditiveSelect(on bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.addSelect = on
	o.theta = nil
	o.baseN = -1
}

// fitSelect is fit's end for SetAdditiveSelect: it returns θ of the plain
// kernel (d + 2 entries) or of the mixture (2d + 3, priors pr).
func (o *Optimizer) fitSelect(xs [][]float64, cnt, y []float64, pr priors) hyper {
	d := len(o.cat)
	plain := pr
	plain.add = false
	plain.mu, plain.sd, plain.lo, plain.hi = pr.mu[:d+2], pr.sd[:d+2], pr.lo[:d+2], pr.hi[:d+2]
	var ps []hyper
	if len(o.theta) >= d+2 {
		ps = append(ps, slices.Clone(o.theta[:d+2]), plain.sample(o.rng))
	} else {
		ps = append(ps, plain.defaultHyper())
		for range 4 {
			ps = append(ps, plain.sample(o.rng))
		}
	}
	thP, fP := fitHyper(newFitData(xs, cnt, y, o.cat, plain), ps, 60)
	as := []hyper{append(slices.Clone(thP), pr.mu[d+2:]...)}
	if len(o.theta) == 2*d+3 {
		as = append(as, o.theta)
	}
	thA, fA := fitHyper(newFitData(xs, cnt, y, o.cat, pr), as, 60)
	if fA+0.5*float64(1+d)*math.Log(float64(len(xs))) < fP {
		return thA
	}
	return thP
}
