package bayes

import (
	"fmt"
	"math"
	"slices"
)

// A learning-curve kernel along the fidelity (multi-fidelity mode,
// SetFidelity then SetFidelityKernel("decay")): the freeze-thaw
// construction of Swersky, Snoek & Adams (2014). The objective of
// configuration x at fidelity t is
//
//	f(x, t) = g(x, t) + h_x(t),
//
// where g is the Matérn-5/2 ARD kernel over the configuration (the
// fidelity's lengthscale is held at its upper bound, so that g is nearly
// constant along it) and h_x is an independent curve per configuration
// with the exponential-decay kernel
//
//	k_h(t, t') = σ_h² · (β / (t + t' + β))^α,
//
// the covariance of ∫ e^{-λt} φ(dλ) with decay rates λ ~ Gamma(α, β): its
// sample paths are mixtures of decaying exponentials, large at the lowest
// fidelity and fading as t grows, so a configuration's own short run says
// how far its curve still has to go, and the runs of other configurations
// inform its value at full fidelity through g. t is the fidelity's unit
// coordinate, on a log scale where the fidelity is declared one: an
// exponential decay in log t is a power law in t, the shape of training
// curves (err(t) − e∞ ∝ t^(−a)). The part of the curve common to every
// configuration is removed before the fit, as without the term (debias,
// fidelity.go): it plays freeze-thaw's mean curve. The marginal likelihood
// fits σ_h², α and β (log-normal priors) with the other hyperparameters.
//
// A hybrid that kept the fidelity as an input of g (so that σ_h → 0 gives
// the default model back) was tried first: the fit left σ_h² small
// (about 0.03) and its predictions ranked held-out configurations as the
// stationary kernel's did; docs/optimizers-algorithms.md has the figures.
//
// Two points belong to the same configuration when every coordinate but
// the fidelity is equal. The curve term is added to the kernel wherever
// the GP evaluates it (factor, append, predict, predictGrad, mean); its
// gradient with respect to the inputs is zero almost everywhere (another
// configuration's curve is independent) and is left out of predictGrad.

// Hyperparameters of the curve term, appended to θ after log σ_n²:
// θ[d+2] = log σ_h², θ[d+3] = log α, θ[d+4] = log β.
const (
	ftkSigMu = -2.3 // σ_h² ≈ 0.1 of the standardized targets' variance
	ftkSigSD = 1.5
	ftkSigLo = 1e-4
	ftkSigHi = 10.0
	ftkAMu   = 0.0 // α ≈ 1
	ftkASD   = 1.0
	ftkALo   = 0.05
	ftkAHi   = 20.0
	ftkBMu   = -1.2 // β ≈ 0.3 unit coordinates
	ftkBSD   = 1.0
	ftkBLo   = 0.01
	ftkBHi   = 10.0
)

// Fidelity kernels accepted by SetFidelityKernel.
const (
	FidelityKernelStationary = "stationary" // the default
	FidelityKernelDecay      = "decay"
)

// ftkSpec marks priors (hence fits and models) with the curve term: fi is
// the fidelity dimension, mu and lo its lengthscale's prior median and
// lower bound without the term (restored when it is turned off).
type ftkSpec struct {
	fi     int
	mu, lo float64
}

// ftkGP is the curve term of a GP: its hyperparameters (natural scale).
type ftkGP struct {
	fi           int
	s2, al, beta float64
}

// SetFidelityKernel chooses the kernel along the fidelity after
// SetFidelity: "stationary" (the default: the fidelity is one more input
// of the Matérn kernel) or "decay" (plus a freeze-thaw learning curve per
// configuration). Changing it refits the hyperparameters at the next
// Suggest.
func (o *Optimizer) SetFidelityKernel(name string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fid == nil {
		return fmt.Errorf("fidelity kernel %q needs SetFidelity first", name)
	}
	d := o.sp.Len()
	switch name {
	case "", FidelityKernelStationary:
		if o.pr.ftk == nil {
			return nil
		}
		o.pr.mu, o.pr.sd, o.pr.lo, o.pr.hi = o.pr.mu[:d+2], o.pr.sd[:d+2], o.pr.lo[:d+2], o.pr.hi[:d+2]
		sp := o.pr.ftk
		o.pr.mu[sp.fi], o.pr.lo[sp.fi] = sp.mu, sp.lo
		o.pr.ftk = nil
	case FidelityKernelDecay:
		if o.pr.ftk != nil {
			return nil
		}
		o.pr.mu = append(slices.Clone(o.pr.mu[:d+2]), ftkSigMu, ftkAMu, ftkBMu)
		o.pr.sd = append(slices.Clone(o.pr.sd[:d+2]), ftkSigSD, ftkASD, ftkBSD)
		o.pr.lo = append(slices.Clone(o.pr.lo[:d+2]), math.Log(ftkSigLo), math.Log(ftkALo), math.Log(ftkBLo))
		o.pr.hi = append(slices.Clone(o.pr.hi[:d+2]), math.Log(ftkSigHi), math.Log(ftkAHi), math.Log(ftkBHi))
		fi := o.fid.i
		o.pr.ftk = &ftkSpec{fi: fi, mu: o.pr.mu[fi], lo: o.pr.lo[fi]}
		// Freeze-thaw's asymptote kernel is over the configuration alone:
		// the fidelity's lengthscale is held at its upper bound, where the
		// Matérn kernel is nearly constant along it.
		o.pr.mu[fi], o.pr.lo[fi] = o.pr.hi[fi], o.pr.hi[fi]
	default:
		return fmt.Errorf("unknown fidelity kernel %q (want %q or %q)", name, FidelityKernelStationary, FidelityKernelDecay)
	}
	o.theta = nil
	o.baseN = -1
	return nil
}

// FidelityKernel returns the kernel along the fidelity ("stationary" or
// "decay").
func (o *Optimizer) FidelityKernel() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pr.ftk != nil {
		return FidelityKernelDecay
	}
	return FidelityKernelStationary
}

// decayK is the exponential-decay kernel without its variance.
func decayK(s, al, beta float64) float64 {
	return math.Pow(beta/(s+beta), al)
}

// sameCfg reports whether a and b differ at most in coordinate fi.
func sameCfg(a, b []float64, fi int) bool {
	for k := range a {
		if k != fi && a[k] != b[k] {
			return false
		}
	}
	return true
}

// curve is the curve term of the kernel between features a and b (0
// without it or between different configurations).
func (g *gp) curve(a, b []float64) float64 {
	c := g.ft
	if c == nil || !sameCfg(a, b, c.fi) {
		return 0
	}
	return c.s2 * decayK(a[c.fi]+b[c.fi], c.al, c.beta)
}

// kern is the full kernel between features a and b.
func (g *gp) kern(a, b []float64) float64 {
	k, _ := matern(g.r2(a, b), g.sig2)
	return k + g.curve(a, b)
}

// syncModel is syncGP for the optimizer's model, with the curve term when
// the priors have one.
func (o *Optimizer) syncModel(xs [][]float64, cnt, y []float64) (*gp, int, error) {
	spec := o.pr.ftk
	if spec == nil || len(o.theta) < len(o.cat)+5 {
		return syncGP(o.g, o.baseN, o.cat, o.theta, xs, cnt, y, o.pr.add)
	}
	if o.baseN >= 0 && o.g != nil && o.g.ft != nil {
		return syncGP(o.g, o.baseN, o.cat, o.theta, xs, cnt, y, o.pr.add)
	}
	d := len(o.cat)
	ng := newGP(o.cat, o.theta)
	ng.ft = &ftkGP{fi: spec.fi, s2: math.Exp(o.theta[d+2]), al: math.Exp(o.theta[d+3]), beta: math.Exp(o.theta[d+4])}
	if err := ng.setData(xs, cnt, y); err != nil {
		return o.g, o.baseN, err
	}
	return ng, len(xs), nil
}

// ftkFit is the curve term's part of a fit: the same-configuration pairs
// (packed index p, rows i > j, t_i + t_j) and each point's 2 t_i.
type ftkFit struct {
	p, i, j []int
	s       []float64
	s2i     []float64
	kp, kd  []float64 // scratch: decay kernel values without σ_h²
}

func newFTKFit(xs [][]float64, fi int) *ftkFit {
	n := len(xs)
	f := &ftkFit{s2i: make([]float64, n), kd: make([]float64, n)}
	p := 0
	for i := 1; i < n; i++ {
		for j := range i {
			if sameCfg(xs[i], xs[j], fi) {
				f.p, f.i, f.j = append(f.p, p), append(f.i, i), append(f.j, j)
				f.s = append(f.s, xs[i][fi]+xs[j][fi])
			}
			p++
		}
	}
	for i, x := range xs {
		f.s2i[i] = 2 * x[fi]
	}
	f.kp = make([]float64, len(f.p))
	return f
}

// add adds the curve term at the clamped hyperparameters tc to the lower
// triangle and diagonal of the n×n kernel matrix l.
func (f *ftkFit) add(tc []float64, d, n int, l []float64) {
	s2, al, beta := math.Exp(tc[d+2]), math.Exp(tc[d+3]), math.Exp(tc[d+4])
	for q := range f.p {
		f.kp[q] = decayK(f.s[q], al, beta)
		l[f.i[q]*n+f.j[q]] += s2 * f.kp[q]
	}
	for i := range n {
		f.kd[i] = decayK(f.s2i[i], al, beta)
		l[i*n+i] += s2 * f.kd[i]
	}
}

// grad subtracts from grad the gradient of the log marginal likelihood
// with respect to the curve term's hyperparameters: ½ tr((ααᵀ − K⁻¹) ∂K/∂θ)
// with K⁻¹ in the lower triangle of kinv. ∂k/∂log σ_h² = k,
// ∂k/∂log α = k·α·log(β/(s+β)), ∂k/∂log β = k·α·s/(s+β).
func (f *ftkFit) grad(th, tc []float64, d, n int, alpha, kinv, grad []float64) {
	s2, al, beta := math.Exp(tc[d+2]), math.Exp(tc[d+3]), math.Exp(tc[d+4])
	var gs, ga, gb float64
	acc := func(w, k, s float64) {
		k *= s2
		gs += w * k
		ga += w * k * al * math.Log(beta/(s+beta))
		gb += w * k * al * s / (s + beta)
	}
	for q := range f.p {
		i, j := f.i[q], f.j[q]
		acc(alpha[i]*alpha[j]-kinv[i*n+j], f.kp[q], f.s[q])
	}
	for i := range n {
		acc(0.5*(alpha[i]*alpha[i]-kinv[i*n+i]), f.kd[i], f.s2i[i])
	}
	for k, g := range []float64{gs, ga, gb} {
		if th[d+2+k] == tc[d+2+k] {
			grad[d+2+k] -= g
		}
	}
}
