package bayes

import (
	"fmt"
	"math"
	"slices"

	"github.com/benchtune/bench/tunables"
)

// Joint predictions across fidelities (multi-fidelity mode, SetFidelity),
// for an information-theoretic acquisition that chooses a configuration
// and the fidelity to observe it at (multi-fidelity max-value entropy
// search, Takeno et al., ICML 2020): what an observation at a low
// fidelity tells about the value at full fidelity depends on the
// posterior correlation between the two, which neither PredictFull nor
// PredictAt gives.

// FidelityPair is the GP's joint posterior of one configuration at full
// fidelity and at other fidelities, on PredictFull's scale.
type FidelityPair struct {
	// Full is the latent value at full fidelity.
	Full Prediction
	// At holds, per fidelity coordinate asked for, the latent value there
	// and its posterior covariance with the latent value at full fidelity.
	At []PairAt
}

// PairAt is the posterior at one fidelity and its covariance with full
// fidelity.
type PairAt struct {
	Mean, SD, Cov float64
}

// PredictPairs returns, for each configuration of xs (points of the
// space; their fidelity coordinate is ignored), the joint posterior of
// its latent values at full fidelity and at each fidelity coordinate of
// coords, with the variance of the noise of one new observation (so that
// an observation's correlation with the full-fidelity value is
// Cov / √((SD² + noise)·Full.SD²)). pending are points of the space
// (configurations at the fidelity they are being observed at) whose
// results are not known yet: the posterior is conditioned on them as on
// observations whose values equal the posterior mean (the kriging
// believer), which leaves the means unchanged and shrinks the variances
// near them. ok is false, with nothing predicted, where PredictFull's is.
func (o *Optimizer) PredictPairs(xs []tunables.Point, coords []float64, pending []tunables.Point) (pairs []FidelityPair, noise float64, ok bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fid == nil {
		return nil, 0, false, nil
	}
	for i, c := range coords {
		if math.IsNaN(c) || c < 0 || c > 1 {
			return nil, 0, false, fmt.Errorf("fidelity coordinate %d: %v outside [0, 1]", i, c)
		}
	}
	for i, x := range append(slices.Clone(xs), pending...) {
		if err := o.sp.Check(x); err != nil {
			return nil, 0, false, fmt.Errorf("point %d: %w", i, err)
		}
	}
	if ok, err := o.fidelityModel(); !ok || err != nil { // fidelity_at.go
		return nil, 0, false, err
	}
	g := o.g
	n := g.n
	fi := o.fid.i
	kern := func(a, b []float64) float64 { return g.base(a, b) + g.curve(a, b) }
	prior := func(a []float64) float64 { return g.sig2 + g.curve(a, a) }
	// whiten returns L⁻¹k(X, a) and the posterior mean at a.
	whiten := func(a []float64) ([]float64, float64) {
		k := make([]float64, n)
		mu := 0.0
		for i := range n {
			k[i] = kern(a, g.row(i))
			mu += k[i] * g.alpha[i]
		}
		if n > 0 {
			g.solveL(n, k)
		}
		return k, mu
	}
	dot := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	// The pending points: their posterior covariance plus the noise,
	// factored (S = R Rᵀ) for the kriging believer's update.
	q := len(pending)
	pf := make([][]float64, q)
	pw := make([][]float64, q)
	for i, p := range pending {
		pf[i] = o.encode(o.sp.Snap(slices.Clone(p)))
		pw[i], _ = whiten(pf[i])
	}
	r := make([]float64, q*q)
	for i := range q {
		for j := 0; j <= i; j++ {
			s := kern(pf[i], pf[j]) - dot(pw[i], pw[j])
			if i == j {
				s = prior(pf[i]) - dot(pw[i], pw[i]) + g.noise + 1e-9*g.sig2
			}
			for k := range j {
				s -= r[i*q+k] * r[j*q+k]
			}
			if i == j {
				r[i*q+i] = math.Sqrt(max(s, 1e-12*g.sig2))
			} else {
				r[i*q+j] = s / r[j*q+j]
			}
		}
	}
	// cond returns R⁻¹ c(a, pending), c the posterior covariance.
	cond := func(a, wa []float64) []float64 {
		c := make([]float64, q)
		for i := range q {
			s := kern(a, pf[i]) - dot(wa, pw[i])
			for k := range i {
				s -= r[i*q+k] * c[k]
			}
			c[i] = s / r[i*q+i]
		}
		return c
	}
	floor := 1e-12 * g.sig2
	pairs = make([]FidelityPair, len(xs))
	for i, x := range xs {
		ff := o.encode(o.sp.Snap(o.pin(slices.Clone(x))))
		wf, muF := whiten(ff)
		cf := cond(ff, wf)
		vF := max(prior(ff)-dot(wf, wf)-dot(cf, cf), floor)
		pr := FidelityPair{Full: Prediction{Mean: muF, SD: math.Sqrt(vF)}, At: make([]PairAt, len(coords))}
		for j, c := range coords {
			p := slices.Clone(x)
			p[fi] = c
			fa := o.encode(o.sp.Snap(p))
			wa, muA := whiten(fa)
			ca := cond(fa, wa)
			vA := max(prior(fa)-dot(wa, wa)-dot(ca, ca), floor)
			cov := kern(fa, ff) - dot(wa, wf) - dot(ca, cf)
			pr.At[j] = PairAt{Mean: muA, SD: math.Sqrt(vA), Cov: cov}
		}
		pairs[i] = pr
	}
	return pairs, g.noise, true, nil
}
