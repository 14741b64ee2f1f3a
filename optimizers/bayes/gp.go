package bayes

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// The Gaussian process: zero mean (targets are standardized), Matérn-5/2
// ARD kernel on
//
//	r² = Σ_d w_d δ_d(a, b),   w_d = 1/ℓ_d²,
//
// where δ_d is (a_d-b_d)² on numeric features and the mismatch indicator
// [a_d ≠ b_d] on categorical ones (the overlap/Hamming kernel, equivalent
// to a one-hot encoding with one lengthscale per categorical dimension),
// and per-point noise variance σ_n²/c_i for a point measured c_i times.

const sqrt5 = 2.23606797749979

// matern returns k(r²) and dk/d(r²) for signal variance sig2.
func matern(r2, sig2 float64) (k, dk float64) {
	s := math.Sqrt(5 * r2)
	e := math.Exp(-s)
	k = sig2 * (1 + s + s*s/3) * e
	dk = -5.0 / 6.0 * sig2 * (1 + s) * e
	return k, dk
}

// jitters are the relative amounts added to the diagonal, in turn, when a
// Cholesky factorization fails.
var jitters = []float64{0, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1e-1}

var errNotPD = errors.New("kernel matrix is not positive definite even with jitter")

// hyper holds kernel hyperparameters in log form: θ = (log ℓ_1..log ℓ_d,
// log σ_f², log σ_n²).
type hyper []float64

// gp is a Gaussian process posterior with a growable Cholesky factor, so
// that fantasy points (Kriging believer) can be appended in O(n²) and
// dropped for free.
type gp struct {
	d      int
	cat    []bool
	w      []float64
	sig2   float64
	noise  float64
	jitter float64

	n, capN int
	x       []float64 // capN×d features
	nv      []float64 // per-point noise variance
	y       []float64
	l       []float64 // capN×capN, lower Cholesky factor of K in row-major
	alpha   []float64

	kbuf, vbuf, bbuf, dkbuf []float64

	ft *ftkGP // nil: no learning-curve term (ftk.go)

	rho float64   // the additive part's share (additive.go); 0: none
	wa  []float64 // the additive part's 1/ℓ'² (additive.go)
}

func newGP(cat []bool, th hyper) *gp {
	d := len(cat)
	g := &gp{d: d, cat: cat, w: make([]float64, d)}
	for i := range d {
		g.w[i] = math.Exp(-2 * th[i])
	}
	g.sig2 = math.Exp(th[d])
	g.noise = math.Exp(th[d+1])
	return g
}

func (g *gp) grow(capN int) {
	if capN <= g.capN {
		return
	}
	x := make([]float64, capN*g.d)
	copy(x, g.x[:g.n*g.d])
	l := make([]float64, capN*capN)
	for i := range g.n {
		copy(l[i*capN:i*capN+i+1], g.l[i*g.capN:i*g.capN+i+1])
	}
	nv := make([]float64, capN)
	copy(nv, g.nv[:g.n])
	y := make([]float64, capN)
	copy(y, g.y[:g.n])
	g.x, g.l, g.nv, g.y, g.capN = x, l, nv, y, capN
	g.alpha = make([]float64, capN)
	g.kbuf = make([]float64, capN)
	g.vbuf = make([]float64, capN)
	g.bbuf = make([]float64, capN)
	g.dkbuf = make([]float64, capN)
}

func (g *gp) row(i int) []float64 { return g.x[i*g.d : (i+1)*g.d] }

func (g *gp) r2(a, b []float64) float64 {
	s := 0.0
	for k, w := range g.w {
		if g.cat[k] {
			if a[k] != b[k] {
				s += w
			}
		} else {
			t := a[k] - b[k]
			s += w * t * t
		}
	}
	return s
}

// solveL overwrites x (length n) with L⁻¹x for the leading n×n block of
// the factor. Row-wise dot products (vectorized in gonum's assembly) are
// several times faster than gonum's scalar Dtrsv loop.
func (g *gp) solveL(n int, x []float64) {
	c := g.capN
	for i := range n {
		row := g.l[i*c : i*c+i]
		s := x[i]
		if i > 0 {
			s -= blas64.Dot(blas64.Vector{N: i, Inc: 1, Data: row}, blas64.Vector{N: i, Inc: 1, Data: x[:i]})
		}
		x[i] = s / g.l[i*c+i]
	}
}

// solveLT overwrites x with L⁻ᵀx (row-wise axpy updates).
func (g *gp) solveLT(n int, x []float64) {
	c := g.capN
	for i := n - 1; i >= 0; i-- {
		x[i] /= g.l[i*c+i]
		if i > 0 {
			blas64.Axpy(-x[i], blas64.Vector{N: i, Inc: 1, Data: g.l[i*c : i*c+i]}, blas64.Vector{N: i, Inc: 1, Data: x[:i]})
		}
	}
}

// setData replaces the data (features xs, noise divisors counts, targets
// y) and factors the kernel matrix, adding jitter if needed.
func (g *gp) setData(xs [][]float64, counts, y []float64) error {
	n := len(xs)
	g.n = 0
	g.grow(n + 16)
	for i, xi := range xs {
		copy(g.row(i), xi)
		g.nv[i] = g.noise / counts[i]
		g.y[i] = y[i]
	}
	g.n = n
	for _, j := range jitters {
		g.jitter = j * g.sig2
		if g.factor() {
			g.solveAlpha()
			return nil
		}
	}
	return errNotPD
}

func (g *gp) factor() bool {
	n, c := g.n, g.capN
	for i := range n {
		xi := g.row(i)
		for j := range i {
			k := g.base(xi, g.row(j))
			if g.ft != nil {
				k += g.curve(xi, g.row(j))
			}
			g.l[i*c+j] = k
		}
		g.l[i*c+i] = g.sig2 + g.nv[i] + g.jitter
		if g.ft != nil {
			g.l[i*c+i] += g.curve(xi, xi)
		}
	}
	if n == 0 {
		return true
	}
	_, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: c, Data: g.l})
	return ok
}

// solveAlpha computes α = K⁻¹ y.
func (g *gp) solveAlpha() {
	copy(g.alpha[:g.n], g.y[:g.n])
	if g.n == 0 {
		return
	}
	g.solveL(g.n, g.alpha)
	g.solveLT(g.n, g.alpha)
}

// setY replaces the targets of the first len(y) points and recomputes α.
func (g *gp) setY(y []float64) {
	copy(g.y, y)
	g.solveAlpha()
}

// truncate drops every point after the first n (the leading block of a
// Cholesky factor does not depend on later points).
func (g *gp) truncate(n int) {
	g.n = n
	g.solveAlpha()
}

// appendPoint adds a point with noise variance nv and target y; the
// factor grows by one row in O(n²).
func (g *gp) appendPoint(x []float64, nv, y float64) {
	if g.n+1 > g.capN {
		g.grow(2*g.capN + 16)
	}
	n, c := g.n, g.capN
	rowL := g.l[n*c : n*c+n+1]
	for j := range n {
		k := g.base(x, g.row(j))
		if g.ft != nil {
			k += g.curve(x, g.row(j))
		}
		rowL[j] = k
	}
	g.solveL(n, rowL[:n])
	d2 := g.sig2 + nv + g.jitter
	if g.ft != nil {
		d2 += g.curve(x, x)
	}
	for j := range n {
		d2 -= rowL[j] * rowL[j]
	}
	if d2 < 1e-10*g.sig2 {
		d2 = 1e-10 * g.sig2
	}
	rowL[n] = math.Sqrt(d2)
	copy(g.row(n), x)
	g.nv[n] = nv
	g.y[n] = y
	g.n = n + 1
	g.solveAlpha()
}

// predict returns the posterior mean and variance of the latent function
// at features x.
func (g *gp) predict(x []float64) (mu, v float64) {
	n := g.n
	k := g.kbuf[:n]
	for i := range n {
		k[i] = g.base(x, g.row(i))
		if g.ft != nil {
			k[i] += g.curve(x, g.row(i))
		}
		mu += k[i] * g.alpha[i]
	}
	v = g.sig2
	if g.ft != nil {
		v += g.curve(x, x)
	}
	if n > 0 {
		g.solveL(n, k)
		v -= blas64.Dot(blas64.Vector{N: n, Inc: 1, Data: k}, blas64.Vector{N: n, Inc: 1, Data: k})
	}
	return mu, max(v, 1e-12*g.sig2)
}

// predictGrad is predict plus the gradients of mean and variance with
// respect to the numeric features listed in dims.
func (g *gp) predictGrad(x []float64, dims []int, dmu, dv []float64) (mu, v float64) {
	if g.rho != 0 {
		return g.predictGradAdd(x, dims, dmu, dv)
	}
	n := g.n
	k, dk := g.kbuf[:n], g.dkbuf[:n]
	for i := range n {
		k[i], dk[i] = matern(g.r2(x, g.row(i)), g.sig2)
		if g.ft != nil {
			k[i] += g.curve(x, g.row(i))
		}
		mu += k[i] * g.alpha[i]
	}
	b := g.bbuf[:n]
	copy(b, k)
	v = g.sig2
	if g.ft != nil {
		v += g.curve(x, x)
	}
	if n > 0 {
		g.solveL(n, b)
		v -= blas64.Dot(blas64.Vector{N: n, Inc: 1, Data: b}, blas64.Vector{N: n, Inc: 1, Data: b})
		g.solveLT(n, b) // b = K⁻¹ k
	}
	floor := 1e-12 * g.sig2
	for j, d := range dims {
		sm, sv := 0.0, 0.0
		for i := range n {
			// ∂k_i/∂x_d = dk/dr² · 2 w_d (x_d - x_id)
			gk := dk[i] * 2 * g.w[d] * (x[d] - g.x[i*g.d+d])
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
