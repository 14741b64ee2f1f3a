// Package bayes implements Gaussian-process Bayesian optimization over the
// normalized search space of package tunables.
//
// Model: a zero-mean GP with a Matérn-5/2 ARD kernel (numeric dimensions)
// times an overlap kernel (categorical dimensions and special-value
// selectors), on standardized and optionally power-warped targets, with
// per-point noise (a point measured c times has noise σ_n²/c).
// Hyperparameters (lengthscales, signal and noise variance) are MAP
// estimates under log-normal priors, fitted by L-BFGS on the log marginal
// likelihood from several starts, and refitted less often as data grows.
//
// Acquisition: log expected improvement, maximized over random candidates
// and perturbations of the best points, refined by projected gradient
// ascent on continuous dimensions and neighbour moves on discrete ones.
// Batches (and pending points) use the Kriging believer: each chosen point
// is added to the model with its posterior mean as a fantasy value.
// Several objectives use ParEGO: each suggestion optimizes a fresh random
// augmented Chebyshev scalarization of the normalized objectives.
package bayes

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"

	"github.com/benchtune/bench/optimizers/internal/algo"
	"github.com/benchtune/bench/optimizers/internal/history"
	"github.com/benchtune/bench/optimizers/internal/space"
	"github.com/benchtune/bench/tunables"
)

// Observation is a measured point (see algo.Observation).
type Observation = algo.Observation

// ErrExhausted is returned by Suggest when every point of a finite space is
// pending.
var ErrExhausted = algo.ErrExhausted

// Options configures an Optimizer. The zero value is valid.
type Options struct {
	// Seed makes the optimizer deterministic: the same seed and the same
	// sequence of Observe and Suggest calls give the same suggestions.
	Seed int64
	// NRandomInit is the number of space-filling (Latin hypercube) points
	// suggested before the model is used; 0 picks a default of D+4 points
	// for D dimensions, capped to a quarter of MaxTrials when that is set.
	NRandomInit int
	// NumObjectives is the number of objectives (default 1), all minimized.
	NumObjectives int
	// Initial, when not nil, is suggested first (start_with_defaults).
	Initial tunables.Point
	// MaxTrials is the expected budget (0 = unknown).
	MaxTrials int
	// NoOutputWarping turns off the power transform of the targets.
	NoOutputWarping bool
	// TrustRegion: 0 uses trust regions (trust.go) from
	// TrustRegionMinDims dimensions up, 1 always, -1 never.
	TrustRegion int
}

// Tuning constants of the acquisition optimization.
const (
	nRandomCandidates = 256
	nAnchors          = 5
	nPerturbPerAnchor = 30
	nRefineStarts     = 3
	enumLimit         = 2048 // finite spaces up to this size are searched exhaustively
	relaxLevels       = 16   // discrete dimensions with more levels are refined by gradient too
	maxFitPoints      = 150
	parEGORho         = 0.05
)

// Optimizer is a GP Bayesian optimizer. It is safe for concurrent use.
type Optimizer struct {
	addSelect bool // SetAdditiveSelect (additive.go)
	// configKey, when set (SetConfigKey), names the configuration a point
	// stands for: Suggest then also avoids points whose configuration is
	// observed, pending or chosen.
	configKey func(tunables.Point) string

	mu     sync.Mutex
	sp     *space.Space
	opts   Options
	m      int
	nInit  int
	rng    *rand.Rand
	hist   *history.History
	design []tunables.Point
	cat    []bool
	pr     priors

	theta hyper // nil until the first fit
	fitN  int   // number of points at the last fit

	g      *gp // model with the first baseN history entries
	baseN  int // -1: must be rebuilt
	enum   []tunables.Point
	enumOK bool
	aware  bool               // noise-aware mode (noise.go)
	outl   map[string]float64 // noise-aware mode: noise factors of outliers (robust.go)
	tr     *trustRegion       // nil: global search (trust.go)
	fid    *fidelityDim       // nil: no fidelity input (fidelity.go)
	nl     *noiseLocal        // nil: no local search in noise-aware mode (noiselocal.go)
	nlTR   nlTRState          // TuRBO regions for the local search of noise-aware mode (noise_ltr.go)
	lce    *lceState          // nil: observed targets as they are (lce.go)
	hmc    *hyperMC           // nil: the MAP hyperparameters alone (hypermc.go)

	acqRandom, acqStarts, acqGlobal int // SetAcqEffort (acqdiag.go); 0: the defaults
}

// New returns an optimizer for the space dims.
func New(dims []tunables.Dim, opts Options) (*Optimizer, error) {
	sp, err := space.New(dims)
	if err != nil {
		return nil, err
	}
	if opts.NumObjectives == 0 {
		opts.NumObjectives = 1
	}
	if opts.NumObjectives < 0 {
		return nil, fmt.Errorf("number of objectives must be positive, got %d", opts.NumObjectives)
	}
	if opts.NRandomInit < 0 {
		return nil, fmt.Errorf("n_random_init must not be negative, got %d", opts.NRandomInit)
	}
	if opts.MaxTrials < 0 {
		return nil, fmt.Errorf("max_trials must not be negative, got %d", opts.MaxTrials)
	}
	if opts.Initial != nil {
		if err := sp.Check(opts.Initial); err != nil {
			return nil, fmt.Errorf("initial point: %w", err)
		}
		opts.Initial = sp.Snap(opts.Initial)
	}
	d := sp.Len()
	nInit := opts.NRandomInit
	if nInit == 0 {
		nInit = d + 4
		if opts.MaxTrials > 0 {
			nInit = min(nInit, max(2, opts.MaxTrials/4))
		}
	}
	o := &Optimizer{
		sp:    sp,
		opts:  opts,
		m:     opts.NumObjectives,
		nInit: nInit,
		rng:   rand.New(rand.NewPCG(uint64(opts.Seed), 0x62617965735f6770)),
		cat:   make([]bool, d),
		pr:    newPriors(d),
		baseN: -1,
	}
	o.hist = history.New(sp, o.m)
	if opts.TrustRegion > 0 || (opts.TrustRegion == 0 && d >= TrustRegionMinDims) {
		o.tr = newTrustRegion(d)
	}
	for i, dm := range sp.Dims() {
		o.cat[i] = dm.Kind == tunables.DimCategorical
	}
	o.design = sp.LatinHypercube(nInit, o.rng)
	return o, nil
}

// Observe records observations (any order, any number; repeated points
// are merged). Nothing is recorded when one observation is invalid.
func (o *Optimizer) Observe(obs ...Observation) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	idx, err := o.hist.AddAll(obs)
	if err != nil {
		return err
	}
	if o.tr != nil && o.m == 1 {
		for _, ob := range obs {
			o.tr.update(ob.Y[0])
		}
	}
	for _, i := range idx {
		if i < o.baseN {
			o.baseN = -1 // an existing point got another measurement
		}
	}
	o.trObserved(idx)
	return nil
}

// Best returns the best observed point (lowest mean; objectives compared
// lexicographically); false when nothing succeeded yet.
func (o *Optimizer) Best() (Observation, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.hist.Best()
}

// ParetoFront returns the observed points that no other observed point
// dominates (by their mean values).
func (o *Optimizer) ParetoFront() []Observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.hist.ParetoFront()
}

// SetConfigKey makes Suggest treat points for which f gives the same key
// as one configuration, and avoid those whose configuration is observed,
// pending or chosen (while unavoided points remain); nil turns it off.
// Where several canonical points make one configuration (a caller rounds
// a continuous coordinate, e.g. an int on a log scale), the acquisition
// can otherwise peak again and again on points of a measured
// configuration.
func (o *Optimizer) SetConfigKey(f func(tunables.Point) string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.configKey = f
}

// Suggest returns k distinct points to evaluate next, none equal to a
// pending point or (unless every point of a finite space has been
// observed) to an observed one.
func (o *Optimizer) Suggest(k int, pending []tunables.Point) ([]tunables.Point, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if k < 0 {
		return nil, fmt.Errorf("cannot suggest %d points", k)
	}
	if k == 0 {
		return nil, nil
	}
	taken := map[string]bool{} // pending and chosen: never suggested
	var pend []tunables.Point  // distinct pending points not yet observed
	for i, p := range pending {
		if err := o.sp.Check(p); err != nil {
			return nil, fmt.Errorf("pending point %d: %w", i, err)
		}
		q := o.sp.Snap(p)
		key := space.Key(q)
		if taken[key] {
			continue
		}
		taken[key] = true
		if _, seen := o.hist.Lookup(key); !seen {
			pend = append(pend, q)
		}
	}
	var cfgTaken map[string]bool // configurations (SetConfigKey) to avoid
	if o.configKey != nil {
		cfgTaken = map[string]bool{}
		for _, e := range o.hist.Entries() {
			cfgTaken[o.configKey(e.X)] = true
		}
		for _, p := range pending {
			cfgTaken[o.configKey(o.sp.Snap(p))] = true
		}
	}
	avoid := func(key string) bool {
		if taken[key] {
			return true
		}
		if _, seen := o.hist.Lookup(key); seen || o.triedAtAnyFidelity(key) {
			return true
		}
		return cfgTaken != nil && cfgTaken[o.configKey(space.FromKey(key))]
	}
	var out []tunables.Point
	choose := func(p tunables.Point) {
		out = append(out, p)
		taken[space.Key(p)] = true
		if cfgTaken != nil {
			cfgTaken[o.configKey(p)] = true
		}
	}

	// Initial design: the initial point, then Latin-hypercube points.
	budget := o.nInit
	if o.opts.Initial != nil {
		budget++
		if key := space.Key(o.opts.Initial); !avoid(key) {
			choose(o.opts.Initial)
		}
	}
	for _, p := range o.design {
		if len(out) >= k || o.hist.Len()+len(pend)+len(out) >= budget {
			break
		}
		if !avoid(space.Key(p)) {
			choose(p)
		}
	}
	succeeded := 0
	for _, e := range o.hist.Entries() {
		if e.N > 0 {
			succeeded++
		}
	}
	for len(out) < k && (o.hist.Len()+len(pend)+len(out) < budget || succeeded < 2) {
		p := o.randomFree(avoid)
		if p == nil {
			break
		}
		choose(p)
	}
	if len(out) < k && succeeded >= 2 {
		if o.trActive() {
			o.trStep(k, pend, avoid, choose, &out)
		}
		var err error
		switch {
		case len(out) >= k: // a restart's design (trust.go)
		case o.trUsesLocalModel():
			err = o.trSuggest(k, pend, avoid, choose, &out)
		case o.nlActive() && o.nlLocalTurn(avoid):
			err = o.nlSuggest(k, pend, avoid, choose, &out)
		default:
			err = o.modelSuggest(k, pend, avoid, taken, choose, &out)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, ErrExhausted
	}
	return out, nil
}

// randomFree draws a random point that avoid rejects not, or nil.
func (o *Optimizer) randomFree(avoid func(string) bool) tunables.Point {
	for range 200 {
		p := o.pin(o.sp.Random(o.rng))
		if !avoid(space.Key(p)) {
			return p
		}
	}
	for _, p := range o.enumerate() {
		if !avoid(space.Key(p)) {
			return p
		}
	}
	return nil
}

func (o *Optimizer) enumerate() []tunables.Point {
	if !o.enumOK {
		o.enum = o.sp.Enumerate(enumLimit)
		o.enumOK = true
	}
	return o.enum
}

// encode maps a point to GP features: the numeric coordinate of a tunable
// whose special value is chosen is set to a fixed 0.5, so that points with
// a special value look alike to the model whatever that coordinate holds.
func (o *Optimizer) encode(p tunables.Point) []float64 {
	x := make([]float64, len(p))
	copy(x, p)
	for i := range x {
		if !o.sp.Active(p, i) {
			x[i] = 0.5
		}
	}
	return x
}

// rawTargets returns, per history entry, the value the model learns
// before the output transform: the mean of the only objective, or a
// ParEGO scalarization with weights lam (+Inf for failed points).
func (o *Optimizer) rawTargets(lam []float64) []float64 {
	entries := o.hist.Entries()
	out := make([]float64, len(entries))
	if o.m == 1 {
		for i, e := range entries {
			out[i] = e.Mean()[0]
		}
		o.lceTargets(out)
		return out
	}
	lo := make([]float64, o.m)
	hi := make([]float64, o.m)
	for j := range lo {
		lo[j], hi[j] = math.Inf(1), math.Inf(-1)
	}
	means := make([][]float64, len(entries))
	for i, e := range entries {
		means[i] = e.Mean()
		if e.N == 0 {
			continue
		}
		for j, v := range means[i] {
			lo[j], hi[j] = min(lo[j], v), max(hi[j], v)
		}
	}
	for i, e := range entries {
		if e.N == 0 {
			out[i] = math.Inf(1)
			continue
		}
		mx, sum := math.Inf(-1), 0.0
		for j, v := range means[i] {
			r := hi[j] - lo[j]
			u := 0.0
			if r > 0 {
				u = (v - lo[j]) / r
			}
			mx = max(mx, lam[j]*u)
			sum += lam[j] * u
		}
		out[i] = mx + parEGORho*sum
	}
	return out
}

func (o *Optimizer) targets(lam []float64) []float64 {
	// In the trust region the targets are only standardized, as in
	// TuRBO: the power warping flattens the bottom of a deep basin (a
	// ripple of Ackley near its optimum), where the region works.
	return transformOutputs(o.debias(o.rawTargets(lam)), !o.opts.NoOutputWarping && !o.trActive())
}

func (o *Optimizer) counts() []float64 {
	entries := o.hist.Entries()
	c := make([]float64, len(entries))
	het := o.hetFactors()
	for i, e := range entries {
		c[i] = float64(e.N) / het[i]
		if f, ok := o.outl[e.Key]; ok {
			c[i] /= f
		}
		if e.N == 0 {
			c[i] = float64(e.Failed)
		}
	}
	o.lceCounts(c)
	return c
}

// refitEvery is how many new points trigger a hyperparameter refit.
func refitEvery(n int) int {
	if n < 20 {
		return 1
	}
	return n / 10
}

// prepareModel refits hyperparameters when due and brings the cached GP
// up to date with the history. y are the model targets.
func (o *Optimizer) prepareModel(y []float64) error {
	entries := o.hist.Entries()
	n := len(entries)
	xs := make([][]float64, n)
	for i, e := range entries {
		xs[i] = o.encode(e.X)
	}
	cnt := o.counts()
	if o.theta == nil || n >= o.fitN+refitEvery(o.fitN) {
		o.fit(xs, cnt, y)
		o.fitN = n
		o.baseN = -1
		if o.aware && o.m == 1 {
			// The hyperparameters fitted with an outlier explain it as
			// signal: after downweighting, fit again, and check again.
			for pass := 0; pass < 2; pass++ {
				changed, err := o.downweightOutliers(xs, y)
				if err != nil {
					return err
				}
				cnt = o.counts()
				if !changed || pass == 1 {
					break
				}
				o.fit(xs, cnt, y)
			}
		}
	}
	rebuild := o.baseN < 0
	var err error
	o.g, o.baseN, err = o.syncModel(xs, cnt, y)
	if err != nil {
		return err
	}
	return o.hmcSync(xs, cnt, y, rebuild) // hypermc.go
}

// syncGP brings g up to the n = len(xs) points: a new GP on all of them
// when baseN < 0 (the hyperparameters changed) or there is none, else the
// points from baseN on appended to g's factorisation and the targets
// replaced (they are re-standardised as data grows). It returns the GP
// and its new baseN.
func syncGP(g *gp, baseN int, cat []bool, theta []float64, xs [][]float64, cnt, y []float64, add bool) (*gp, int, error) {
	n := len(xs)
	if baseN < 0 || g == nil {
		ng := newGPAdd(cat, theta, add)
		if err := ng.setData(xs, cnt, y); err != nil {
			return g, baseN, err
		}
		return ng, n, nil
	}
	g.truncate(baseN)
	for i := baseN; i < n; i++ {
		g.appendPoint(xs[i], g.noise/cnt[i], y[i])
	}
	g.setY(y)
	return g, n, nil
}

// fit estimates hyperparameters on (a subset of) the data.
func (o *Optimizer) fit(xs [][]float64, cnt, y []float64) {
	if len(xs) > maxFitPoints {
		// The best half by target value plus a random sample of the rest:
		// the region near the optimum matters most.
		idx := make([]int, len(xs))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return y[idx[a]] < y[idx[b]] })
		keep := idx[:maxFitPoints/2]
		rest := slices.Clone(idx[maxFitPoints/2:])
		o.rng.Shuffle(len(rest), func(a, b int) { rest[a], rest[b] = rest[b], rest[a] })
		keep = append(keep, rest[:maxFitPoints-len(keep)]...)
		if o.trActive() {
			// In the trust region, as TuRBO fits its GP on the data of
			// the region: the points nearest the best one, so that the
			// lengthscales describe the function where the region
			// searches (Ackley-20's ripples, not its global bowl).
			keep = nearest(xs, idx[0], maxFitPoints)
		}
		sort.Ints(keep)
		var sx [][]float64
		var sc, sy []float64
		for _, i := range keep {
			sx, sc, sy = append(sx, xs[i]), append(sc, cnt[i]), append(sy, y[i])
		}
		xs, cnt, y = sx, sc, standardize(sy)
	}
	pr := o.noisePriors()
	pr.ftk = o.pr.ftk
	if o.hist.Len() >= sparseUntilFactor*o.sp.Len() {
		// The sparse prior finds the few dimensions that matter from few
		// points; with more, it switches off dimensions that matter only
		// locally (in the trust region, whose side along them then opens;
		// on Ackley-20 without the region, it cost 2.7× in regret).
		pr = pr.dense()
	}
	if pr.add && o.addSelect {
		o.theta = o.fitSelect(xs, cnt, y, pr) // additive.go
		return
	}
	f := newFitData(xs, cnt, y, o.cat, pr)
	var starts []hyper
	if o.theta != nil {
		// Warm start from the previous estimate, plus one fresh start.
		starts = append(starts, o.theta, pr.sample(o.rng))
	} else {
		starts = append(starts, pr.defaultHyper())
		for range 4 {
			starts = append(starts, pr.sample(o.rng))
		}
	}
	o.theta, _ = fitHyper(f, starts, 60)
	if o.hmc != nil {
		o.hmc.sample(f, o.theta) // hypermc.go
	}
}

// dirichlet draws ParEGO weights uniformly from the simplex.
func (o *Optimizer) dirichlet() []float64 {
	lam := make([]float64, o.m)
	s := 0.0
	for j := range lam {
		lam[j] = -math.Log(1 - o.rng.Float64())
		s += lam[j]
	}
	for j := range lam {
		lam[j] /= s
	}
	return lam
}

// modelSuggest fills out up to k points from the model.
func (o *Optimizer) modelSuggest(k int, pend []tunables.Point, avoid func(string) bool,
	taken map[string]bool, choose func(tunables.Point), out *[]tunables.Point) error {
	var lam []float64
	if o.m > 1 {
		lam = make([]float64, o.m)
		for j := range lam {
			lam[j] = 1 / float64(o.m)
		}
	}
	if err := o.prepareModel(o.targets(lam)); err != nil {
		return err
	}
	g := o.g
	base := g.n
	// Fantasies: pending points and points chosen so far in this call.
	believe := func(p tunables.Point) {
		x := o.encode(p)
		mu, _ := g.predict(x)
		g.appendPoint(x, g.noise, mu)
		o.hmcBelieve(x) // hypermc.go
	}
	fantasized := 0
	for len(*out) < k {
		if o.m > 1 {
			g.truncate(base)
			g.setY(o.targets(o.dirichlet()))
			fantasized = 0
		}
		for _, p := range pend[min(fantasized, len(pend)):] {
			believe(p)
		}
		for _, p := range (*out)[max(0, fantasized-len(pend)):] {
			believe(p)
		}
		fantasized = len(pend) + len(*out)
		p := o.maximizeAcq(g, avoid)
		if p == nil {
			// Every point of a finite space is observed or taken: measure
			// again the free observed point with the best predicted value.
			p = o.bestRepeat(g, taken)
			if p == nil {
				break
			}
		}
		choose(p)
	}
	g.truncate(base)
	o.hmcTruncate()
	return nil
}

// bestRepeat returns the observed, not taken point with the lowest
// posterior mean, or nil.
func (o *Optimizer) bestRepeat(g *gp, taken map[string]bool) tunables.Point {
	var best tunables.Point
	bestMu := math.Inf(1)
	for _, e := range o.hist.Entries() {
		if taken[e.Key] {
			continue
		}
		mu, _ := g.predict(o.encode(e.X))
		if best == nil || mu < bestMu {
			best, bestMu = e.X, mu
		}
	}
	if best == nil {
		return nil
	}
	return o.pin(slices.Clone(best))
}

// incumbent is the lowest posterior mean at the training points.
func incumbent(g *gp) float64 {
	best := math.Inf(1)
	for i := range g.n {
		mu := g.y[i] - (g.nv[i]+g.jitter)*g.alpha[i]
		best = min(best, mu)
	}
	return best
}

// nearest returns the indices of the k points of xs nearest xs[c]
// (Euclidean distance in the unit box), c among them.
func nearest(xs [][]float64, c, k int) []int {
	dist := make([]float64, len(xs))
	idx := make([]int, len(xs))
	for i, x := range xs {
		idx[i] = i
		for j, v := range x {
			dist[i] += (v - xs[c][j]) * (v - xs[c][j])
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return dist[idx[a]] < dist[idx[b]] })
	return slices.Clone(idx[:min(k, len(idx))])
}
