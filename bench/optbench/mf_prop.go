// Local proposals in -mf (hyperband_mf.go): a gp-fid method followed by
// the suffix -locP (e.g. asha-gp-fid-min3-loc50, with -eta9 after it if
// wanted) proposes P% of its new configurations in a trust region around
// the configuration the fidelity GP predicts best at full fidelity,
// instead of from the GP's global acquisition.
//
// Why: the bounds (-mf-bound, mf_bound.go) showed that on lcnet the
// promotions are not the limit; the GP's global proposals reach the tiny
// region that beats full GP's quality (about 0.01% of the space) only
// after 30 to 130 configurations. Its acquisition in 11 dimensions
// (10 knobs and the fidelity) spreads over the whole box, while the
// low-fidelity results already say where the good configurations are. A
// trust region (TuRBO, Eriksson et al. 2019) restricts the search to a box
// around the incumbent, here the observed configuration with the lowest
// predicted mean at full fidelity (so that low-fidelity results count,
// through the fidelity GP, as they do in the planner's -model ranking);
// the candidates are scored with the same GP's expected improvement at
// full fidelity, so the proposal is still model-driven.
//
// With -top the region is centred instead on the configuration with the
// best observed value at the highest fidelity reached so far (BOHB/PBT-like
// exploitation of the highest rung), the GP's EI still choosing within it.
//
// The region: candidates perturb each coordinate of the centre with
// probability locPerturb (one at least) to a uniform value within
// ±side/2 (clipped to the unit box; a coordinate with levels is rounded
// to them); side is -boxW (W% of the unit range, default locSide). The
// local proposals start once the GP has locWarm observations; which
// proposals are local is a fixed pattern (the k-th is local when
// ⌊k·P/100⌋ > ⌊(k−1)·P/100⌋), so runs are deterministic.

package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/benchtune/bench/tunables"
)

const (
	locSide       = 0.2 // the region's side in the unit box
	locPerturb    = 0.3 // each coordinate's probability of being moved
	locCandidates = 256
	locWarm       = 20 // observations before the first local proposal
)

// mfPropOpt is a method's local-proposal setting (zero: off).
type mfPropOpt struct {
	frac float64 // share of local proposals in (0, 1]
	side float64 // the region's side (0: locSide)
	// top centres the region on the configuration with the best observed
	// value at the highest fidelity any configuration reached (-top;
	// BOHB/PBT-like exploitation of the highest rung) instead of the one
	// the GP predicts best at full fidelity.
	top bool
}

// mfSplitProp removes the -locP, -boxW and -top parts from method m.
func mfSplitProp(m string) (string, mfPropOpt, bool) {
	var o mfPropOpt
	parts := strings.Split(m, "-")
	keep := parts[:0]
	for _, p := range parts {
		switch {
		case strings.HasPrefix(p, "loc"):
			n, err := strconv.Atoi(p[3:])
			if err != nil || n < 1 || n > 100 || o.frac > 0 {
				return m, o, false
			}
			o.frac = float64(n) / 100
		case p == "top":
			if o.top {
				return m, o, false
			}
			o.top = true
		case strings.HasPrefix(p, "box"):
			n, err := strconv.Atoi(p[3:])
			if err != nil || n < 1 || n > 100 || o.side > 0 {
				return m, o, false
			}
			o.side = float64(n) / 100
		default:
			keep = append(keep, p)
		}
	}
	if (o.side > 0 || o.top) && o.frac == 0 {
		return m, o, false
	}
	return strings.Join(keep, "-"), o, true
}

// mfLocal wraps a gp-fid proposer with local proposals.
type mfLocal struct {
	mfProposer
	gf    *mfGPFid
	opt   mfPropOpt
	rng   *rand.Rand
	n     int                       // proposals made
	seen  map[string]tunables.Point // every configuration observed
	hi    map[string][2]float64     // each one's highest fidelity and its value there
	order []string                  // their keys, in observation order
	obs   int
}

func newMFLocal(inner mfProposer, gf *mfGPFid, opt mfPropOpt, seed int64) *mfLocal {
	if opt.side == 0 {
		opt.side = locSide
	}
	return &mfLocal{mfProposer: inner, gf: gf, opt: opt, rng: rand.New(rand.NewPCG(uint64(seed), 77)),
		seen: map[string]tunables.Point{}, hi: map[string][2]float64{}}
}

func (m *mfLocal) observe(x tunables.Point, rung int, r, y float64) error {
	k := pointKey(x)
	if _, ok := m.seen[k]; !ok {
		m.seen[k] = slices.Clone(x)
		m.order = append(m.order, k)
	}
	if h, ok := m.hi[k]; !ok || r > h[0] || (r == h[0] && y < h[1]) {
		m.hi[k] = [2]float64{r, y}
	}
	m.obs++
	return m.mfProposer.observe(x, rung, r, y)
}

func (m *mfLocal) propose(running []tunables.Point) (tunables.Point, error) {
	m.n++
	local := math.Floor(float64(m.n)*m.opt.frac) > math.Floor(float64(m.n-1)*m.opt.frac)
	if !local || m.obs < locWarm {
		return m.mfProposer.propose(running)
	}
	x, ok, err := m.local()
	if err != nil || !ok {
		if err != nil {
			return nil, err
		}
		return m.mfProposer.propose(running)
	}
	return x, nil
}

// local is the candidate of the region with the highest expected
// improvement at full fidelity (ok false: no model yet).
func (m *mfLocal) local() (tunables.Point, bool, error) {
	xs := make([]tunables.Point, len(m.order))
	for i, k := range m.order {
		xs[i] = m.gf.point(m.seen[k])
	}
	pred, _, ok, err := m.gf.gp.PredictFull(xs, false)
	if err != nil || !ok {
		return nil, false, err
	}
	c := 0
	for i := range pred {
		if pred[i].Mean < pred[c].Mean {
			c = i
		}
	}
	if m.opt.top {
		for i, k := range m.order {
			h, b := m.hi[k], m.hi[m.order[c]]
			if h[0] > b[0] || (h[0] == b[0] && h[1] < b[1]) {
				c = i
			}
		}
	}
	centre := m.seen[m.order[c]]
	dims := m.gf.p.dims
	cands := make([]tunables.Point, 0, locCandidates)
	for range locCandidates {
		q := slices.Clone(centre)
		moved := false
		for !moved {
			for i := range q {
				if m.rng.Float64() >= locPerturb {
					continue
				}
				lo, hi := max(0, centre[i]-m.opt.side/2), min(1, centre[i]+m.opt.side/2)
				v := lo + m.rng.Float64()*(hi-lo)
				if l := dims[i].Levels; l > 1 {
					v = math.Round(v*float64(l-1)) / float64(l-1)
				}
				q[i], moved = v, moved || v != centre[i]
			}
		}
		cands = append(cands, m.gf.point(q))
	}
	cp, inc, ok, err := m.gf.gp.PredictFull(cands, true)
	if err != nil || !ok {
		return nil, false, err
	}
	best, bestEI := 0, math.Inf(-1)
	for i, p := range cp {
		if e := expImp(p.Mean, p.SD, inc); e > bestEI {
			best, bestEI = i, e
		}
	}
	return cands[best][:len(dims)], true, nil
}

// expImp is the expected improvement below inc of N(mu, sd²).
func expImp(mu, sd, inc float64) float64 {
	if !(sd > 0) {
		return max(0, inc-mu)
	}
	z := (inc - mu) / sd
	return sd * (z*0.5*math.Erfc(-z/math.Sqrt2) + math.Exp(-z*z/2)/math.Sqrt(2*math.Pi))
}

// pointKey identifies a configuration.
func pointKey(x tunables.Point) string {
	var b strings.Builder
	for _, v := range x {
		b.WriteString(strconv.FormatUint(math.Float64bits(v), 16))
		b.WriteByte(',')
	}
	return b.String()
}
