package bayes

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/optimize"
)

// Hyperparameters are fitted by maximizing the log marginal likelihood plus
// log-normal priors (MAP), with analytic gradients and L-BFGS from several
// starting points. Bounds are enforced by evaluating the likelihood at the
// clamped values plus a quadratic penalty on the excess, which keeps the
// objective continuous with a correct gradient.

// priors holds, per hyperparameter, a normal prior on the log value and
// hard bounds.
type priors struct {
	mu, sd, lo, hi []float64
	// sparse replaces the lengthscales' log-normal priors by a sparse
	// axis-aligned one (from SparsePriorMinDims dimensions up, until
	// sparseUntilFactor·D points are observed; dense() drops it): the
	// inverse squared lengthscale ρ = 1/ℓ² has a half-Cauchy prior of
	// scale 1, as in SAASBO (Eriksson & Jankowiak, UAI 2021) but with
	// its global scale fixed, and we take its mode (MAP) instead of
	// sampling by Hamiltonian Monte Carlo: the penalty log(1 + ρ²) is
	// flat for ℓ above 1 and costs 4 nats per e-fold below, so a
	// dimension only gets a short lengthscale when the data pays for it,
	// and the others drift to the upper bound (sparseLenHi), where they
	// no longer matter to the model nor attract exploration. Measured on
	// Branin embedded in 30-D (docs/optimizers-algorithms.md).
	sparse bool
	// ftk adds the learning-curve term along the fidelity (ftk.go), with
	// three more hyperparameters after log σ_n².
	ftk *ftkSpec
	// add: the additive kernel (additive.go), with logit ρ and the
	// one-dimensional lengthscales after log σ_n².
	add bool
}

// Prior constants (inputs in [0,1], standardized targets).
const (
	lenSD      = 1.0
	lenLo      = 0.01
	lenHi      = 10.0
	sigMu      = 0.0
	sigSD      = 1.0
	sigLo      = 0.05
	sigHi      = 20.0
	noiseMu    = -9.0 // log σ_n² ≈ 1e-4
	noiseSD    = 3.0
	noiseLo    = 1e-7
	noiseHi    = 1.0
	penaltyMul = 100.0

	sparseLenHi = 100.0
)

// SparsePriorMinDims is the number of dimensions from which the
// lengthscales get the sparse prior (priors.sparse), while fewer than
// sparseUntilFactor·D points are observed (the trust region starts then).
const (
	SparsePriorMinDims = 20
	sparseUntilFactor  = trStartFactor
)

func newPriors(d int) priors {
	p := priors{
		mu: make([]float64, d+2), sd: make([]float64, d+2),
		lo: make([]float64, d+2), hi: make([]float64, d+2),
	}
	// Longer lengthscales in more dimensions: distances grow like √d.
	lenMu := math.Log(0.3) + 0.5*math.Log(float64(d))
	for i := range d {
		p.mu[i], p.sd[i], p.lo[i], p.hi[i] = lenMu, lenSD, math.Log(lenLo), math.Log(lenHi)
	}
	if d >= SparsePriorMinDims {
		// The sparse prior (see priors.sparse) lets irrelevant dimensions'
		// lengthscales grow long enough to switch them off.
		p.sparse = true
		for i := range d {
			p.hi[i] = math.Log(sparseLenHi)
		}
	}
	p.mu[d], p.sd[d], p.lo[d], p.hi[d] = sigMu, sigSD, math.Log(sigLo), math.Log(sigHi)
	p.mu[d+1], p.sd[d+1], p.lo[d+1], p.hi[d+1] = noiseMu, noiseSD, math.Log(noiseLo), math.Log(noiseHi)
	return p
}

// dense returns the priors without the sparse lengthscale prior (the
// log-normal ones and the usual upper bound instead).
func (p priors) dense() priors {
	if !p.sparse {
		return p
	}
	d := len(p.mu) - 2
	q := p
	q.sparse = false
	q.hi = slices.Clone(p.hi)
	for i := range d {
		q.hi[i] = math.Log(lenHi)
	}
	return q
}

// defaultHyper is the prior mode.
func (p priors) defaultHyper() hyper {
	return append(hyper(nil), p.mu...)
}

// sample draws a starting point from the priors (clamped to the bounds).
func (p priors) sample(rng *rand.Rand) hyper {
	h := make(hyper, len(p.mu))
	for i := range h {
		h[i] = min(max(p.mu[i]+p.sd[i]*rng.NormFloat64(), p.lo[i]), p.hi[i])
	}
	return h
}

// fitData is a data set prepared for repeated likelihood evaluations.
type fitData struct {
	n, d   int
	cat    []bool
	delta  [][]float64 // per dimension, per pair (i>j, packed row by row)
	y, cnt []float64
	pr     priors

	kf, dk, l []float64 // scratch: pair kernel values, dk/dr², n×n factor
	alpha     []float64
	ft        *ftkFit // nil: no learning-curve term (ftk.go)

	addF, addA, addD, addDF []float64 // scratch of the additive kernel (additive.go)
}

func newFitData(xs [][]float64, cnt, y []float64, cat []bool, pr priors) *fitData {
	n, d := len(xs), len(cat)
	np := n * (n - 1) / 2
	f := &fitData{n: n, d: d, cat: cat, y: y, cnt: cnt, pr: pr,
		delta: make([][]float64, d), kf: make([]float64, np), dk: make([]float64, np),
		l: make([]float64, n*n), alpha: make([]float64, n)}
	if pr.ftk != nil {
		f.ft = newFTKFit(xs, pr.ftk.fi)
	}
	for k := range d {
		f.delta[k] = make([]float64, np)
	}
	p := 0
	for i := 1; i < n; i++ {
		for j := range i {
			for k := range d {
				a, b := xs[i][k], xs[j][k]
				if cat[k] {
					if a != b {
						f.delta[k][p] = 1
					}
				} else {
					f.delta[k][p] = (a - b) * (a - b)
				}
			}
			p++
		}
	}
	return f
}

// negLogPost returns the negative log posterior of θ (up to a constant)
// and, when grad is not nil, its gradient.
func (f *fitData) negLogPost(th hyper, grad []float64) float64 {
	n, d := f.n, f.d
	m := len(f.pr.mu)
	tc := make([]float64, m)
	obj := 0.0
	if grad != nil {
		for i := range grad {
			grad[i] = 0
		}
	}
	for i := range m {
		tc[i] = min(max(th[i], f.pr.lo[i]), f.pr.hi[i])
		if ex := th[i] - tc[i]; ex != 0 {
			obj += 0.5 * penaltyMul * ex * ex
			if grad != nil {
				grad[i] += penaltyMul * ex
			}
		}
		if f.pr.sparse && i < d {
			u := math.Exp(-4 * tc[i])
			obj += math.Log1p(u)
			if grad != nil && th[i] == tc[i] {
				grad[i] += -4 * u / (1 + u)
			}
			continue
		}
		z := (tc[i] - f.pr.mu[i]) / f.pr.sd[i]
		obj += 0.5 * z * z
		if grad != nil && th[i] == tc[i] {
			grad[i] += z / f.pr.sd[i]
		}
	}
	w := make([]float64, d)
	for k := range d {
		w[k] = math.Exp(-2 * tc[k])
	}
	sig2, noise := math.Exp(tc[d]), math.Exp(tc[d+1])
	if f.pr.add {
		return f.negLogPostAdd(th, tc, w, sig2, noise, obj, grad)
	}

	p := 0
	for i := 1; i < n; i++ {
		for range i {
			r2 := 0.0
			for k := range d {
				r2 += w[k] * f.delta[k][p]
			}
			f.kf[p], f.dk[p] = matern(r2, sig2)
			p++
		}
	}
	t, nll, ok := f.factor(tc, d, n, sig2, noise)
	if !ok {
		return math.Inf(1)
	}
	obj += nll
	if grad == nil {
		return obj
	}
	// K⁻¹ in the lower triangle of f.l.
	if _, ok := lapack64.Potri(t); !ok {
		return obj
	}
	// ∂ log p(y)/∂θ = ½ tr((ααᵀ − K⁻¹) ∂K/∂θ); we minimize its negative.
	glen := make([]float64, d)
	gsig, gnoise := 0.0, 0.0
	p = 0
	for i := 1; i < n; i++ {
		ai := f.alpha[i]
		for j := range i {
			wij := ai*f.alpha[j] - f.l[i*n+j]
			gsig += wij * f.kf[p]
			c := wij * f.dk[p] * -2
			for k := range d {
				glen[k] += c * w[k] * f.delta[k][p]
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
	if th[d] == tc[d] {
		grad[d] -= gsig
	}
	if th[d+1] == tc[d+1] {
		grad[d+1] -= gnoise
	}
	if f.ft != nil {
		f.ft.grad(th, tc, d, n, f.alpha, f.l, grad)
	}
	return obj
}

// fitHyper minimizes the negative log posterior from each start and
// returns the best θ (clamped to the bounds) and its value.
func fitHyper(f *fitData, starts []hyper, maxIter int) (hyper, float64) {
	var best hyper
	bestF := math.Inf(1)
	prob := optimize.Problem{
		Func: func(x []float64) float64 { return f.negLogPost(x, nil) },
		Grad: func(grad, x []float64) { f.negLogPost(x, grad) },
	}
	settings := &optimize.Settings{
		MajorIterations:   maxIter,
		GradientThreshold: 1e-5,
		Converger:         &optimize.FunctionConverge{Absolute: 1e-6, Relative: 1e-9, Iterations: 8},
	}
	for _, s := range starts {
		res, err := optimize.Minimize(prob, append([]float64(nil), s...), settings, &optimize.LBFGS{})
		var x []float64
		var fx float64
		if res != nil {
			x, fx = res.X, res.F
		}
		if err != nil || res == nil || math.IsNaN(fx) {
			// Keep whatever finite point was reached, else the start.
			if res == nil || math.IsNaN(fx) {
				x = s
				fx = f.negLogPost(s, nil)
			}
		}
		if fx < bestF {
			bestF, best = fx, append(hyper(nil), x...)
		}
	}
	if best == nil {
		best = append(hyper(nil), starts[0]...)
	}
	for i := range best {
		best[i] = min(max(best[i], f.pr.lo[i]), f.pr.hi[i])
	}
	return best, bestF
}

// factor puts K (f.kf's packed lower triangle, sig2 + noise/count on the
// diagonal with the first of jitters that factors, and f.ft's part when
// there is one) into f.l, factors it, leaves K⁻¹y in f.alpha and returns
// the Cholesky factor and the negative log marginal likelihood of f.y;
// ok is false when no jitter makes K factor.
func (f *fitData) factor(tc hyper, d, n int, sig2, noise float64) (blas64.Triangular, float64, bool) {
	ok := false
	var t blas64.Triangular
	for _, jit := range jitters {
		p := 0
		for i := range n {
			for j := range i {
				f.l[i*n+j] = f.kf[p]
				p++
			}
			f.l[i*n+i] = sig2 + noise/f.cnt[i] + jit*sig2
		}
		if f.ft != nil {
			f.ft.add(tc, d, n, f.l)
		}
		t, ok = lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: n, Data: f.l})
		if ok {
			break
		}
	}
	if !ok {
		return t, 0, false
	}
	copy(f.alpha, f.y)
	av := blas64.Vector{N: n, Inc: 1, Data: f.alpha}
	blas64.Trsv(blas.NoTrans, t, av)
	quad := blas64.Dot(av, av)
	blas64.Trsv(blas.Trans, t, av)
	logdet := 0.0
	for i := range n {
		logdet += math.Log(f.l[i*n+i])
	}
	return t, 0.5*quad + logdet + 0.5*float64(n)*math.Log(2*math.Pi), true
}
