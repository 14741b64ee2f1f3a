// Adaptive trust-region proposals in -mf (hyperband_mf.go): a gp-fid
// method with the suffix -turboP (e.g. asha-gp-fid-min3-turbo50-eta9)
// proposes P% of its new configurations from trust regions whose side
// adapts to successes and failures, as TuRBO does (Eriksson et al. 2019),
// instead of from the GP's global acquisition. -trmM keeps M regions at
// once around distinct good configurations (TuRBO-m; default 1).
//
// Why: the fixed box of mf_prop.go (-locP, -boxW) was not better than
// η 9 alone on lcnet: small boxes were worse, and the configuration the
// GP predicts best early is often not in lcnet's tiny good region. A
// TuRBO region starts large, shrinks where its proposals fail, grows
// where they succeed, and when it collapses starts again elsewhere;
// several regions hedge between distinct good configurations.
//
// The regions, per method run:
//
//   - the centre. Each configuration a region proposes is its own; those
//     of the global proposer (and the first locWarm observations) belong
//     to no region, and each is counted with the region whose centre is
//     nearest. At each local proposal a region's centre is, of its own
//     and its counted configurations, the one the fidelity GP predicts
//     best at full fidelity (PredictFull's mean): low-fidelity results
//     count through the GP, as in the planner's -model ranking. The
//     best observed value at the highest rung (mf_prop.go's -top) was
//     worse with the fixed box (1.92× and 1.09× against 3.18× on seeds
//     1-5), and at 5× most of the budget that matters (a fifth) has only
//     a few full-fidelity results, so the GP's prediction is the centre.
//     A region that has no centre yet (the start, or after a restart)
//     takes the configuration predicted best of all those at least
//     trDistinct (Euclidean, unit box) from the other regions' centres
//     and from every collapsed centre;
//   - the candidates: locCandidates per region, each coordinate of the
//     centre moved (every one of them, TuRBO's min(1, 20/D) in 10
//     dimensions) to a uniform value within ±side/2, clipped to the unit
//     box, levels respected; the candidate with the highest expected
//     improvement at full fidelity (PredictFull with its SD, the GP's
//     incumbent at full fidelity) over all regions is proposed, and is
//     the region's. The side is isotropic: TuRBO weights it by the ARD
//     lengthscales, which optimizers/bayes does not export;
//   - success and failure: each result of a region's configuration (at
//     any rung, full fidelity included) is a success when it beats, by
//     TuRBO's 1e-3 relative margin, the best value observed at its
//     fidelity so far (of all configurations; with -trown, of the
//     region's own since its last start, as TuRBO-1's restarts keep
//     their own data), else a failure. trSuccTol successes in a row
//     double the side (at most trMaxSide); the failure tolerance in a
//     row (TuRBO's ⌈max(4, D)/q⌉ = D for one proposal at a time; -trfF
//     sets F) halves it; below trMinSide the region collapses: its
//     centre is put aside and it restarts at trInitSide around a new
//     one.
//
// -trts (an experiment, see the doc section "Multi-fidelity: 30 seeds"):
// the candidate of all regions is chosen by Thompson sampling, as TuRBO-m
// chooses across its regions, instead of by expected improvement: one
// joint sample of the fidelity GP's posterior at full fidelity over every
// region's candidates (optimizers/bayes SampleFull), the lowest proposed.
// Each proposal draws its own sample (asynchronous parallel Thompson
// sampling, Kandasamy et al. 2018), so proposals made while others run
// differ without pending points, and a region is chosen with about the
// probability that it holds the best candidate; EI ignores the running
// configurations and picks the most promising region's best candidate
// every time.
//
// Which proposals are local is the fixed pattern of mf_prop.go (the k-th
// when ⌊k·P/100⌋ > ⌊(k−1)·P/100⌋, from locWarm observations on), so runs
// are deterministic.

package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/benchtune/bench/tunables"
)

// TuRBO's side (in the unit box), its bounds and the success tolerance.
const (
	trInitSide = 0.8
	trMaxSide  = 1.6
	trMinSide  = 0.8 / 128 // 0.5⁷ as TuRBO's, relative to the initial side
	trSuccTol  = 3
	// trDistinct is the least Euclidean distance (unit box) between a
	// starting region's centre and the other centres, collapsed ones
	// included (random pairs in 10 dimensions are 1.29 apart on average).
	trDistinct = 0.5
	trMaxRegs  = 8
)

// mfTurboOpt is a method's adaptive trust-region setting (zero: off).
type mfTurboOpt struct {
	frac    float64 // share of proposals from the regions, in (0, 1]
	regions int     // number of regions (0: 1)
	own     bool    // success against the region's own best (-trown)
	failTol int     // failures in a row that halve the side (0: D)
	ts      bool    // Thompson sampling across the regions (-trts)
}

// mfSplitTurbo removes the -turboP, -trmM, -trown, -trfF and -trts parts from
// method m wherever they are.
func mfSplitTurbo(m string) (string, mfTurboOpt, bool) {
	var o mfTurboOpt
	parts := strings.Split(m, "-")
	keep := parts[:0]
	num := func(s string, lo, hi, old int) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= lo && n <= hi && old == 0
	}
	for _, p := range parts {
		var n int
		ok := true
		switch {
		case strings.HasPrefix(p, "turbo"):
			n, ok = num(p[5:], 1, 100, int(o.frac*100))
			o.frac = float64(n) / 100
		case p == "trown":
			ok = !o.own
			o.own = true
		case p == "trts":
			ok = !o.ts
			o.ts = true
		case strings.HasPrefix(p, "trm"):
			n, ok = num(p[3:], 1, trMaxRegs, o.regions)
			o.regions = n
		case strings.HasPrefix(p, "trf"):
			n, ok = num(p[3:], 1, 100, o.failTol)
			o.failTol = n
		default:
			keep = append(keep, p)
		}
		if !ok {
			return m, mfTurboOpt{}, false
		}
	}
	if (o.regions > 0 || o.own || o.failTol > 0 || o.ts) && o.frac == 0 {
		return m, mfTurboOpt{}, false
	}
	return strings.Join(keep, "-"), o, true
}

// tuRegion is one trust region's state.
type tuRegion struct {
	side       float64
	succ, fail int
	centre     string              // its centre's key ("": to choose)
	best       map[float64]float64 // its own best value per fidelity since its start
	restarts   int
}

func newTuRegion() *tuRegion {
	return &tuRegion{side: trInitSide, best: map[float64]float64{}}
}

// mfTurbo wraps a gp-fid proposer with adaptive trust-region proposals.
type mfTurbo struct {
	mfProposer
	gf    *mfGPFid
	opt   mfTurboOpt
	rng   *rand.Rand
	tsRng *rand.Rand                // -trts's draws
	n     int                       // proposals made
	obs   int                       // results observed
	seen  map[string]tunables.Point // every configuration observed
	order []string                  // their keys, in observation order
	owner map[string]int            // the region that proposed a configuration
	best  map[float64]float64       // the best value observed at each fidelity
	regs  []*tuRegion
	tabu  []tunables.Point // the centres of collapsed regions
}

func newMFTurbo(inner mfProposer, gf *mfGPFid, opt mfTurboOpt, seed int64) *mfTurbo {
	if opt.regions == 0 {
		opt.regions = 1
	}
	if opt.failTol == 0 {
		opt.failTol = max(4, len(gf.p.dims))
	}
	t := &mfTurbo{mfProposer: inner, gf: gf, opt: opt, rng: rand.New(rand.NewPCG(uint64(seed), 79)),
		tsRng: rand.New(rand.NewPCG(uint64(seed), 83)),
		seen:  map[string]tunables.Point{}, owner: map[string]int{}, best: map[float64]float64{}}
	for range opt.regions {
		t.regs = append(t.regs, newTuRegion())
	}
	return t
}

// trBetter reports whether y beats ref by TuRBO's relative margin (any
// value beats a missing one).
func trBetter(y, ref float64, ok bool) bool {
	return !ok || y < ref-1e-3*math.Abs(ref)
}

func (t *mfTurbo) observe(x tunables.Point, rung int, r, y float64) error {
	k := pointKey(x)
	if _, ok := t.seen[k]; !ok {
		t.seen[k] = slices.Clone(x)
		t.order = append(t.order, k)
	}
	t.obs++
	if j, ok := t.owner[k]; ok {
		ref, have := t.best[r]
		if t.opt.own {
			ref, have = t.regs[j].best[r]
		}
		t.regs[j].count(trBetter(y, ref, have), t.opt.failTol)
		if t.regs[j].side < trMinSide {
			t.restart(j)
		}
	}
	if b, ok := t.best[r]; !ok || y < b {
		t.best[r] = y
	}
	if j, ok := t.owner[k]; ok {
		if b, ok := t.regs[j].best[r]; !ok || y < b {
			t.regs[j].best[r] = y
		}
	}
	return t.mfProposer.observe(x, rung, r, y)
}

// count takes in one result of the region's configurations: trSuccTol
// successes in a row double the side, failTol failures in a row halve it.
func (g *tuRegion) count(success bool, failTol int) {
	if success {
		g.succ, g.fail = g.succ+1, 0
	} else {
		g.succ, g.fail = 0, g.fail+1
	}
	switch {
	case g.succ >= trSuccTol:
		g.side, g.succ = min(2*g.side, trMaxSide), 0
	case g.fail >= failTol:
		g.side, g.fail = g.side/2, 0
	}
}

// restart puts region j's centre aside and starts it again at the
// initial side; its centre is chosen at the next local proposal. The
// configurations it proposed belong to no region from then on.
func (t *mfTurbo) restart(j int) {
	g := t.regs[j]
	if c, ok := t.seen[g.centre]; ok {
		t.tabu = append(t.tabu, c)
	}
	for k, o := range t.owner {
		if o == j {
			delete(t.owner, k)
		}
	}
	n := newTuRegion()
	n.restarts = g.restarts + 1
	t.regs[j] = n
}

func (t *mfTurbo) propose(running []tunables.Point) (tunables.Point, error) {
	t.n++
	local := math.Floor(float64(t.n)*t.opt.frac) > math.Floor(float64(t.n-1)*t.opt.frac)
	if !local || t.obs < locWarm {
		return t.mfProposer.propose(running)
	}
	x, j, ok, err := t.local()
	if err != nil {
		return nil, err
	}
	if !ok {
		return t.mfProposer.propose(running)
	}
	k := pointKey(x)
	if _, dup := t.owner[k]; !dup {
		if _, old := t.seen[k]; !old {
			t.owner[k] = j
		}
	}
	return x, nil
}

// trDist is the Euclidean distance of a and b.
func trDist(a, b tunables.Point) float64 {
	s := 0.0
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

// trNear reports whether x is within trDistinct of one of ps.
func trNear(x tunables.Point, ps []tunables.Point) bool {
	for _, p := range ps {
		if trDist(x, p) < trDistinct {
			return true
		}
	}
	return false
}

// centres updates each region's centre from the GP's predicted means at
// full fidelity of the observed configurations (pred, in t.order).
func (t *mfTurbo) centres(pred []float64) {
	// The centres kept: each region moves to the best of its own and its
	// counted configurations (the ones near collapsed centres left out).
	var cs []tunables.Point
	var who []int
	for j, g := range t.regs {
		if g.centre != "" {
			cs, who = append(cs, t.seen[g.centre]), append(who, j)
		}
	}
	if len(cs) > 0 {
		bestI := make([]int, len(t.regs))
		for j := range bestI {
			bestI[j] = -1
		}
		for i, k := range t.order {
			x := t.seen[k]
			j, own := t.owner[k]
			if !own {
				c := 0
				for a := range cs {
					if trDist(x, cs[a]) < trDist(x, cs[c]) {
						c = a
					}
				}
				j = who[c]
			}
			if t.regs[j].centre == "" || (k != t.regs[j].centre && trNear(x, t.tabu)) {
				continue
			}
			if bestI[j] < 0 || pred[i] < pred[bestI[j]] {
				bestI[j] = i
			}
		}
		for j, i := range bestI {
			if i >= 0 {
				t.regs[j].centre = t.order[i]
			}
		}
	}
	// The regions to start: the best configuration away from the others.
	idx := make([]int, len(t.order))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case pred[a] < pred[b]:
			return -1
		case pred[a] > pred[b]:
			return 1
		}
		return 0
	})
	for _, g := range t.regs {
		if g.centre != "" {
			continue
		}
		var others []tunables.Point
		for _, h := range t.regs {
			if h.centre != "" {
				others = append(others, t.seen[h.centre])
			}
		}
		others = append(others, t.tabu...)
		for _, i := range idx {
			if x := t.seen[t.order[i]]; !trNear(x, others) {
				g.centre = t.order[i]
				break
			}
		}
	}
}

// candidates draws locCandidates points in region g.
func (t *mfTurbo) candidates(g *tuRegion) []tunables.Point {
	centre := t.seen[g.centre]
	dims := t.gf.p.dims
	prob := min(1, 20/float64(len(dims)))
	out := make([]tunables.Point, 0, locCandidates)
	for range locCandidates {
		q := slices.Clone(centre)
		moved := false
		for !moved {
			for i := range q {
				if prob < 1 && t.rng.Float64() >= prob {
					continue
				}
				lo, hi := max(0, centre[i]-g.side/2), min(1, centre[i]+g.side/2)
				v := lo + t.rng.Float64()*(hi-lo)
				if l := dims[i].Levels; l > 1 {
					v = math.Round(v*float64(l-1)) / float64(l-1)
				}
				q[i], moved = v, moved || v != centre[i]
			}
		}
		out = append(out, q)
	}
	return out
}

// local is the candidate of all regions with the highest expected
// improvement at full fidelity (with -trts: the lowest value of one
// posterior sample at full fidelity), and its region (ok false: no model
// yet, or no region has a centre).
func (t *mfTurbo) local() (tunables.Point, int, bool, error) {
	xs := make([]tunables.Point, len(t.order))
	for i, k := range t.order {
		xs[i] = t.gf.point(t.seen[k])
	}
	pred, _, ok, err := t.gf.gp.PredictFull(xs, false)
	if err != nil || !ok {
		return nil, 0, false, err
	}
	mu := make([]float64, len(pred))
	for i, p := range pred {
		mu[i] = p.Mean
	}
	t.centres(mu)
	var cands []tunables.Point
	var from []int
	for j, g := range t.regs {
		if g.centre == "" {
			continue
		}
		for _, q := range t.candidates(g) {
			cands, from = append(cands, t.gf.point(q)), append(from, j)
		}
	}
	if len(cands) == 0 {
		return nil, 0, false, nil
	}
	if t.opt.ts {
		s, ok, err := t.gf.gp.SampleFull(cands, t.tsRng)
		if err != nil {
			return nil, 0, false, err
		}
		if ok {
			best := 0
			for i, v := range s {
				if v < s[best] {
					best = i
				}
			}
			return cands[best][:len(t.gf.p.dims)], from[best], true, nil
		}
		// No sample for this model (the decay kernel): EI below.
	}
	cp, inc, ok, err := t.gf.gp.PredictFull(cands, true)
	if err != nil || !ok {
		return nil, 0, false, err
	}
	best, bestEI := 0, math.Inf(-1)
	for i, p := range cp {
		if e := expImp(p.Mean, p.SD, inc); e > bestEI {
			best, bestEI = i, e
		}
	}
	return cands[best][:len(t.gf.p.dims)], from[best], true, nil
}
