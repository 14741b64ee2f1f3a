package bayes

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// Thompson sampling by pathwise conditioning (Wilson et al., ICML 2020,
// "Efficiently sampling functions from Gaussian process posteriors"): a
// sample of the GP prior, drawn with random Fourier features, is moved to
// the posterior by the data:
//
//	f*(x) = f(x) + k(x, X) K⁻¹ (y − f(X) − ε),   ε ~ N(0, diag(σ²_n,i)),
//
// which is exactly a posterior sample when the prior sample is exact. It
// costs one kernel row per candidate (no triangular solve per candidate,
// unlike a predictive variance) plus one solve with the cached Cholesky
// factor, and all candidates are handled at once by two matrix products
// (their features times the frequencies, and times the training points),
// so thousands of candidates cost a few tens of milliseconds at 500
// points. TuRBO-1 picks each point of a batch as the minimizer of its own
// posterior sample over the candidates of the trust region; so do we
// (trust.go). Only numeric features are supported (the trust region falls
// back to log EI when the space has categorical dimensions).

// tsFeatures is the number of random Fourier features of a prior sample.
const tsFeatures = 512

// maternFar is the r² beyond which the Matérn-5/2 kernel is below 1e-13
// of its variance (√(5r²) > 40).
const maternFar = 40 * 40 / 5.0

// thompsonSample returns one approximate sample of the latent function at
// each of xs (feature vectors; numeric features only).
func (g *gp) thompsonSample(xs [][]float64, rng *rand.Rand) []float64 {
	return g.newTSBatch(xs).sample(rng)
}

// tsBatch draws posterior samples at a fixed set of candidates: the
// kernel between the candidates and the training points, the costly
// part, is computed once and shared by the samples (TuRBO-1 draws one
// sample per point of a batch over the same candidates).
type tsBatch struct {
	g     *gp
	m     int
	cx    []float64 // m×d candidate features
	cross []float64 // m×n kernel values k(candidate, training point)
}

func (g *gp) newTSBatch(xs [][]float64) *tsBatch {
	d, n, m := g.d, g.n, len(xs)
	s := &tsBatch{g: g, m: m, cx: make([]float64, m*d)}
	for c, x := range xs {
		copy(s.cx[c*d:(c+1)*d], x)
	}
	if n == 0 {
		return s
	}
	// Training features scaled by w (so that r² is a weighted squared
	// distance): cross = candidates · (w ⊙ training)ᵀ and
	// r² = |x|²_w + |x_i|²_w − 2·cross.
	tx := make([]float64, n*d)
	tn := make([]float64, n)
	copy(tx, g.x[:n*d])
	for i := range n {
		for j := range d {
			tn[i] += g.w[j] * tx[i*d+j] * tx[i*d+j]
			tx[i*d+j] *= g.w[j]
		}
	}
	s.cross = make([]float64, m*n)
	blas64.Gemm(blas.NoTrans, blas.Trans, 1,
		blas64.General{Rows: m, Cols: d, Stride: d, Data: s.cx},
		blas64.General{Rows: n, Cols: d, Stride: d, Data: tx}, 0,
		blas64.General{Rows: m, Cols: n, Stride: n, Data: s.cross})
	for c, x := range xs {
		cn := 0.0
		for j, v := range x {
			cn += g.w[j] * v * v
		}
		row := s.cross[c*n : (c+1)*n]
		for i, v := range row {
			r2 := max(0, cn+tn[i]-2*v)
			if r2 > maternFar {
				row[i] = 0 // below 1e-13·σ²: skip the exponential
				continue
			}
			row[i], _ = matern(r2, g.sig2)
		}
	}
	return s
}

// sample returns one approximate posterior sample at the candidates.
func (s *tsBatch) sample(rng *rand.Rand) []float64 {
	g := s.g
	d, nf, n, m := g.d, tsFeatures, g.n, s.m
	// Matérn-5/2 spectral density: ω ~ multivariate Student t with 5
	// degrees of freedom and scale diag(1/ℓ²), i.e. z/ℓ·√(5/χ²₅).
	// Stored d×nf so that features (rows) times omega are the phases.
	omega := make([]float64, d*nf)
	phase := make([]float64, nf)
	theta := make([]float64, nf)
	sl := make([]float64, d)
	for j := range d {
		sl[j] = math.Sqrt(g.w[j])
	}
	for f := range nf {
		chi := 0.0
		for range 5 {
			z := rng.NormFloat64()
			chi += z * z
		}
		sc := math.Sqrt(5 / chi)
		for j := range d {
			omega[j*nf+f] = rng.NormFloat64() * sl[j] * sc
		}
		phase[f] = 2 * math.Pi * rng.Float64()
		theta[f] = rng.NormFloat64()
	}
	amp := math.Sqrt(2 * g.sig2 / float64(nf))
	// prior evaluates the prior sample at the rows of a (r×d).
	prior := func(a []float64, r int) []float64 {
		ph := make([]float64, r*nf)
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
			blas64.General{Rows: r, Cols: d, Stride: d, Data: a},
			blas64.General{Rows: d, Cols: nf, Stride: nf, Data: omega}, 0,
			blas64.General{Rows: r, Cols: nf, Stride: nf, Data: ph})
		out := make([]float64, r)
		for i := range r {
			row := ph[i*nf : (i+1)*nf]
			sum := 0.0
			for f, v := range row {
				sum += theta[f] * math.Cos(v+phase[f])
			}
			out[i] = amp * sum
		}
		return out
	}
	out := prior(s.cx, m)
	if n == 0 {
		return out
	}
	u := prior(g.x[:n*d], n)
	for i := range n {
		eps := math.Sqrt(g.nv[i]+g.jitter) * rng.NormFloat64()
		u[i] = g.y[i] - u[i] - eps
	}
	g.solveL(n, u)
	g.solveLT(n, u)
	blas64.Gemv(blas.NoTrans, 1,
		blas64.General{Rows: m, Cols: n, Stride: n, Data: s.cross},
		blas64.Vector{N: n, Inc: 1, Data: u}, 1,
		blas64.Vector{N: m, Inc: 1, Data: out})
	return out
}
