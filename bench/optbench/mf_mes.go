// Multi-fidelity max-value entropy search in -mf (hyperband_mf.go): a
// gp-fid method with the suffix -mfmes (e.g. asha-gp-fid-min3-mfmes)
// chooses each new configuration *and the fidelity it starts at* by the
// information an observation there gives about the optimum's value at
// full fidelity, f*, per unit of cost (MF-MES, Takeno et al., ICML 2020):
//
//	α(x, m) = I(y_m(x); f*) / cost(m),
//	I ≈ (1/K) Σ_k [ ρ²γ_kλ_k/2 − log Φ(γ_k) + E_{u~N(0,1)}[Φ(g_k(u)) log Φ(g_k(u))] / Φ(γ_k) ],
//
// with γ_k = (μ_M(x) − f*_k)/σ_M(x) (lower is better), λ = φ(γ)/Φ(γ), ρ
// the posterior correlation between the observation y_m(x) (the latent
// value at fidelity m plus the GP's noise) and the latent value at full
// fidelity f_M(x), and g_k(u) = (γ_k − ρu)/√(1−ρ²). This is the paper's
// information gain with the condition f* ≥ max f replaced by "f_M(x) is
// not below f*_k" (the truncated bivariate normal): the first two terms
// are closed form and the expectation, the entropy of the truncated
// bivariate normal's marginal, is a one-dimensional integral computed
// numerically (Simpson's rule, mesGain). At ρ = 1 it is MES's
// γλ/2 − log Φ(γ); at ρ = 0 it is 0.
//
// The parts, per new configuration:
//
//   - f* samples: mesSamples joint posterior samples at full fidelity
//     (optimizers/bayes SampleFull, pathwise Thompson samples) over the
//     candidates and every configuration seen so far; f*_k is the lowest
//     value of sample k. The paper draws them from random-feature samples
//     of the whole space; a finite set is the usual discrete version;
//   - the candidates: the gp-fid proposal (log EI at full fidelity, as the
//     baseline proposes), mesRandom uniformly random configurations, and
//     mesLocal perturbations of each of the mesTop configurations the GP
//     predicts best at full fidelity (each coordinate moved by N(0, 0.1²),
//     clipped to the unit box, levels respected);
//   - the fidelities: the first rung of each bracket in use and full
//     fidelity (the starts acqStart offers, mf_acq.go): with one bracket
//     (asha-) the lowest rung or full fidelity; the cost of a start is
//     its fidelity (with -mf-continue a later promotion pays only the
//     difference, which the acquisition does not look ahead to);
//   - the configurations running on the other runners are pending points
//     at full fidelity (as gp-fid's Suggest takes them): the posterior is
//     conditioned on them with their mean as the value (the kriging
//     believer), so their variance, and the information near them, shrinks.
//
// The planner still decides every promotion (ASHA's, or the -model
// ranking): MF-MES decides only where new configurations start and which
// they are. Before the GP exists (fewer than 2 results) a new
// configuration is gp-fid's, in the planner's next bracket.

package main

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/schedulers/hyperband"
	"github.com/benchtune/bench/tunables"
)

const (
	mesSamples = 10  // f* samples (K)
	mesRandom  = 200 // uniformly random candidates
	mesTop     = 5   // configurations perturbed
	mesLocal   = 20  // perturbations of each
	mesSD      = 0.1 // the perturbations' SD (unit box)
)

// mfMESOpt is a method's MF-MES setting.
type mfMESOpt struct {
	on bool
	// local drops the random candidates (-mfmesl): the gp-fid proposal
	// and the perturbations of the configurations predicted best only.
	local bool
}

// mfSplitMES removes the -mfmes or -mfmesl part from method m wherever it
// is.
func mfSplitMES(m string) (string, mfMESOpt) {
	parts := strings.Split(m, "-")
	keep := parts[:0]
	var o mfMESOpt
	for _, p := range parts {
		if (p == "mfmes" || p == "mfmesl") && !o.on {
			o.on, o.local = true, p == "mfmesl"
			continue
		}
		keep = append(keep, p)
	}
	return strings.Join(keep, "-"), o
}

// mfMES chooses new configurations and their start for a gp-fid method.
type mfMES struct {
	opt  mfMESOpt
	gf   *mfGPFid
	rs   *randomSearch // random candidates
	rng  *rand.Rand    // perturbations and f* samples
	seen []tunables.Point
	keys map[string]bool
	// starts counts the starts at each fidelity, picked those chosen
	// from each part of the candidates (the gp-fid proposal, the random
	// ones, the perturbations): diagnostics (TestMFMESDiag).
	starts map[float64]int
	picked [3]int
}

// mfMESDone, when set, is given each -mfmes method's state at the end of
// its run (TestMFMESDiag).
var mfMESDone func(*mfMES)

func newMFMES(gf *mfGPFid, opt mfMESOpt, seed int64) *mfMES {
	return &mfMES{opt: opt, gf: gf, rs: newRandomSearch(gf.p.dims, seed+977),
		rng: rand.New(rand.NewPCG(uint64(seed), 4242)), keys: map[string]bool{}, starts: map[float64]int{}}
}

// mesLevel is one start a new configuration may have.
type mesLevel struct {
	coord, cost float64
	bracket     int // -1: full fidelity (AddFull)
}

// levels are the starts the planner offers: the first rung of each
// bracket in use, and full fidelity.
func mesLevels(gf *mfGPFid, pl *hyperband.Planner[int]) []mesLevel {
	nb := pl.Brackets()
	rungs := pl.Rungs()
	var ls []mesLevel
	for b := range nb {
		ls = append(ls, mesLevel{coord: gf.coord(rungs[b]), cost: rungs[b], bracket: b})
	}
	if nb < len(rungs) {
		ls = append(ls, mesLevel{coord: 1, cost: rungs[len(rungs)-1], bracket: -1})
	}
	return ls
}

// start chooses new configuration k and adds it to the planner at the
// start of highest information per cost.
func (m *mfMES) start(pl *hyperband.Planner[int], configs map[int]tunables.Point, running []tunables.Point) (hyperband.Job[int], error) {
	k := len(configs)
	base, err := m.gf.propose(running)
	if err != nil {
		return hyperband.Job[int]{}, err
	}
	x, lvl, ok, err := m.choose(base, pl, running)
	if err != nil {
		return hyperband.Job[int]{}, err
	}
	if !ok {
		configs[k] = base
		b, _ := pl.NextBracket()
		return pl.Add(k, b)
	}
	configs[k] = x
	m.starts[lvl.cost]++
	if lvl.bracket < 0 {
		return pl.AddFull(k)
	}
	return pl.Add(k, lvl.bracket)
}

// observe records the configurations seen (their f* sample points).
func (m *mfMES) observe(x tunables.Point) {
	if key := pointKey(x); !m.keys[key] {
		m.keys[key] = true
		m.seen = append(m.seen, x)
	}
}

// candidates are base, the random ones and the perturbations of the
// configurations predicted best.
func (m *mfMES) candidates(base tunables.Point) ([]tunables.Point, error) {
	cands := []tunables.Point{base}
	for range mesRandom {
		if q := m.rs.point(); !m.opt.local {
			cands = append(cands, q) // drawn either way: the same stream
		}
	}
	if len(m.seen) == 0 {
		return cands, nil
	}
	xs := make([]tunables.Point, len(m.seen))
	for i, s := range m.seen {
		xs[i] = m.gf.point(s)
	}
	pred, _, ok, err := m.gf.gp.PredictFull(xs, false)
	if err != nil || !ok {
		return cands, err
	}
	idx := make([]int, len(pred))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(pred[a].Mean, pred[b].Mean) })
	dims := m.gf.p.dims
	for _, i := range idx[:min(mesTop, len(idx))] {
		for range mesLocal {
			q := slices.Clone(m.seen[i])
			for d := range q {
				v := min(1, max(0, q[d]+mesSD*m.rng.NormFloat64()))
				if l := dims[d].Levels; l > 1 {
					v = math.Round(v*float64(l-1)) / float64(l-1)
				}
				q[d] = v
			}
			cands = append(cands, q)
		}
	}
	return cands, nil
}

// choose is the candidate and start of highest α (ok false: no model).
func (m *mfMES) choose(base tunables.Point, pl *hyperband.Planner[int], running []tunables.Point) (tunables.Point, mesLevel, bool, error) {
	cands, err := m.candidates(base)
	if err != nil {
		return nil, mesLevel{}, false, err
	}
	levels := mesLevels(m.gf, pl)
	coords := make([]float64, len(levels))
	for i, l := range levels {
		coords[i] = l.coord
	}
	cx := make([]tunables.Point, len(cands))
	for i, c := range cands {
		cx[i] = m.gf.point(c)
	}
	pend := make([]tunables.Point, len(running))
	for i, r := range running {
		pend[i] = m.gf.point(r)
	}
	pairs, noise, ok, err := m.gf.gp.PredictPairs(cx, coords, pend)
	if err != nil || !ok {
		return nil, mesLevel{}, false, err
	}
	// f* samples over the candidates and the configurations seen.
	pool := slices.Clone(cx)
	for _, s := range m.seen {
		pool = append(pool, m.gf.point(s))
	}
	var fstar []float64
	for range mesSamples {
		s, ok, err := m.gf.gp.SampleFull(pool, m.rng)
		if err != nil {
			return nil, mesLevel{}, false, err
		}
		if !ok {
			break
		}
		fstar = append(fstar, slices.Min(s))
	}
	if len(fstar) == 0 {
		return nil, mesLevel{}, false, nil
	}
	// The gain at ρ = 1 (MES's) bounds every fidelity's: a pair whose
	// bound per cost is below the best so far is skipped.
	bi, bl, best := 0, 0, math.Inf(-1)
	for i, p := range pairs {
		bound := mesInfo(p.Full, 1, fstar)
		for j, l := range levels {
			if bound/l.cost <= best {
				continue
			}
			if a := mesAcq(p.Full, p.At[j], noise, fstar) / l.cost; a > best {
				bi, bl, best = i, j, a
			}
		}
	}
	switch {
	case bi == 0:
		m.picked[0]++
	case bi <= mesRandom && !m.opt.local:
		m.picked[1]++
	default:
		m.picked[2]++
	}
	return cands[bi], levels[bl], true, nil
}

// mesAcq is the information an observation at the fidelity of at gives
// about f* (the mean over the samples fstar), for a configuration whose
// full-fidelity posterior is full; noise is the observation's noise
// variance.
func mesAcq(full bayes.Prediction, at bayes.PairAt, noise float64, fstar []float64) float64 {
	if !(full.SD > 0) {
		return 0
	}
	return mesInfo(full, at.Cov/(math.Sqrt(at.SD*at.SD+noise)*full.SD), fstar)
}

// mesInfo is mesAcq for an observation with correlation rho with the
// full-fidelity value.
func mesInfo(full bayes.Prediction, rho float64, fstar []float64) float64 {
	if !(full.SD > 0) || len(fstar) == 0 {
		return 0
	}
	s := 0.0
	for _, f := range fstar {
		s += mesGain((full.Mean-f)/full.SD, rho)
	}
	return s / float64(len(fstar))
}

// logPhi is log Φ(x), the standard normal CDF's log, accurate in the
// lower tail.
func logPhi(x float64) float64 {
	if x > -30 {
		return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	}
	// Mills' ratio: Φ(x) ≈ φ(x)/(−x)·(1 − 1/x²).
	return -x*x/2 - math.Log(-x) - 0.5*math.Log(2*math.Pi) + math.Log1p(-1/(x*x))
}

// mesGamma bounds γ: below, the sample f* lies so far above the
// configuration's mean that it is not a plausible minimum (every
// candidate is in the sample set, so γ < −5 is very rare); above, the
// information is below 1e-300.
const mesGammaLo, mesGammaHi = -5, 37

// mesIntervals is Simpson's number of intervals (even) over the window
// of 24 units of g: TestMESGain checks the gain against a fine direct
// integration of the entropies.
const mesIntervals = 96

// mesGain is the mutual information between an observation u and the
// event "f_M is not below f*", for standard normal (u, z = (μ − f_M)/σ)
// with correlation ρ and γ = (μ − f*)/σ: the entropy of u minus that of
// u given z ≤ γ, in nats. With p(u) = φ(u)Φ(g(u))/Φ(γ), g(u) =
// (γ − ρu)/√(1−ρ²), it is ρ²γλ/2 − log Φ(γ) + E_φ[Φ(g) log Φ(g)]/Φ(γ),
// λ = φ(γ)/Φ(γ); the expectation by Simpson's rule over the window where
// Φ(g) moves from 1 to 0 (outside it Φ(g) log Φ(g) is below 1e-30).
func mesGain(gamma, rho float64) float64 {
	r2 := rho * rho
	if math.IsNaN(gamma) || math.IsNaN(rho) || r2 < 1e-12 || gamma > mesGammaHi {
		return 0
	}
	gamma = max(gamma, mesGammaLo)
	r2 = min(r2, 1)
	lpg := logPhi(gamma)
	lam := math.Exp(-gamma*gamma/2 - 0.5*math.Log(2*math.Pi) - lpg)
	closed := r2*gamma*lam/2 - lpg
	if 1-r2 < 1e-10 {
		return max(0, closed)
	}
	s := math.Sqrt(1 - r2)
	ar := math.Abs(rho)
	u0, w := gamma/rho, 12*s/ar
	lo, hi := max(-12, u0-w), min(12, u0+w)
	integral := 0.0
	if hi > lo {
		const n = mesIntervals
		h := (hi - lo) / n
		f := func(u float64) float64 {
			g := (gamma - rho*u) / s
			lg := logPhi(g)
			if lg == 0 {
				return 0
			}
			return math.Exp(-u*u/2-0.5*math.Log(2*math.Pi)+lg-lpg) * lg
		}
		sum := f(lo) + f(hi)
		for i := 1; i < n; i++ {
			c := 2.0
			if i%2 == 1 {
				c = 4
			}
			sum += c * f(lo+float64(i)*h)
		}
		integral = sum * h / 3
	}
	return max(0, closed+integral)
}

// mfSeen is a proposer that also tells m of each configuration observed.
type mfSeen struct {
	mfProposer
	m *mfMES
}

func (s mfSeen) observe(x tunables.Point, rung int, r, y float64) error {
	s.m.observe(x)
	return s.mfProposer.observe(x, rung, r, y)
}
