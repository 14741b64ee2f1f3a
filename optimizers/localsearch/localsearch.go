// Package localsearch implements a cost-frugal randomized local search in
// the spirit of FLAML's CFO (Wu et al., "Frugal Optimization for
// Cost-related Hyperparameters", AAAI 2021) over the normalized search
// space of package tunables.
//
// The search starts at an initial point (the defaults, when given) and
// repeatedly proposes x + δu for a random unit direction u; when that is
// no better than the incumbent x it proposes the opposite move x − δu. An
// improvement moves the incumbent and grows δ; a run of failures halves δ;
// when δ falls below the space's resolution the search restarts from a
// random point with the initial step. Categorical coordinates switch to
// another choice with a probability that grows with the step's component
// along them; discrete numeric ones move on their level grid.
//
// The state is a function of the observation sequence: observations of
// points it did not propose (a resumed experiment) are replayed as if they
// were its own proposals, so bulk-loading stored results continues the
// search where it was.
package localsearch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
	// Seed makes the optimizer deterministic.
	Seed int64
	// NumObjectives is the number of objectives (default 1), all minimized.
	// Several objectives are compared by an augmented Chebyshev
	// scalarization of the values normalized to the observed range, with
	// equal weights for the first local search and random weights after
	// each restart, so that restarts spread over the Pareto front.
	NumObjectives int
	// Initial is the starting point (start_with_defaults); nil starts at a
	// random point.
	Initial tunables.Point
	// MaxTrials is the expected budget (0 = unknown); unused by the
	// algorithm, accepted for a uniform API.
	MaxTrials int
}

// Step-size control, in units of the unit cube (δ is the length of a move).
const (
	initialStepFrac = 0.1 // δ₀ = 0.1·√D
	growFactor      = 1.1
	shrinkFactor    = 0.5
	minStepCont     = 1e-3 // δ_min = 1e-3·√D with continuous dimensions
)

type proposal struct {
	epoch  int
	center string
	move   tunables.Point // x − center (numeric coordinates), for the opposite
	sign   int
}

// Optimizer is the local search. It is safe for concurrent use.
type Optimizer struct {
	mu   sync.Mutex
	sp   *space.Space
	opts Options
	m    int
	rng  *rand.Rand
	hist *history.History

	center    tunables.Point
	centerKey string
	centerY   []float64 // nil while unknown
	step      float64
	step0     float64
	stepMin   float64
	stepMax   float64
	fails     int
	failLimit int
	epoch     int
	props     map[string]proposal
	opposite  []proposal
	weights   []float64 // scalarization weights of the current epoch
}

// New returns a local search over dims.
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
	if opts.MaxTrials < 0 {
		return nil, fmt.Errorf("max_trials must not be negative, got %d", opts.MaxTrials)
	}
	o := &Optimizer{
		sp:    sp,
		opts:  opts,
		m:     opts.NumObjectives,
		rng:   rand.New(rand.NewPCG(uint64(opts.Seed), 0x6c6f63616c)),
		props: map[string]proposal{},
	}
	o.hist = history.New(sp, o.m)
	o.weights = make([]float64, o.m)
	for j := range o.weights {
		o.weights[j] = 1 / float64(o.m)
	}
	d := float64(sp.Len())
	o.step0 = initialStepFrac * math.Sqrt(d)
	o.stepMax = math.Sqrt(d)
	o.stepMin = o.resolution()
	o.failLimit = max(4, min(1<<max(0, sp.Len()-1), sp.Len()))
	if opts.Initial != nil {
		if err := sp.Check(opts.Initial); err != nil {
			return nil, fmt.Errorf("initial point: %w", err)
		}
		o.setCenter(sp.Snap(opts.Initial), nil)
	} else {
		o.setCenter(sp.Random(o.rng), nil)
	}
	o.step = o.step0
	return o, nil
}

// resolution is the step below which the search restarts: a fraction of
// the unit cube's diagonal with continuous dimensions, else half of the
// finest level spacing (no smaller move can change a point).
func (o *Optimizer) resolution() float64 {
	d := float64(o.sp.Len())
	finest := math.Inf(1)
	for i, dm := range o.sp.Dims() {
		if o.sp.Continuous(i) {
			return minStepCont * math.Sqrt(d)
		}
		if dm.Kind == tunables.DimNumeric && dm.Levels > 1 {
			finest = min(finest, 1/float64(dm.Levels-1))
		}
	}
	if math.IsInf(finest, 1) {
		finest = 1 // categorical only
	}
	return finest / 2
}

func (o *Optimizer) setCenter(p tunables.Point, y []float64) {
	o.center, o.centerKey, o.centerY = p, space.Key(p), y
	o.opposite = o.opposite[:0]
}

// Observe records observations and advances the search.
func (o *Optimizer) Observe(obs ...Observation) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	idx, err := o.hist.AddAll(obs)
	if err != nil {
		return err
	}
	for _, i := range idx {
		e := o.hist.Entries()[i]
		pr, ok := o.props[e.Key]
		if ok && pr.epoch != o.epoch {
			continue // from before a restart
		}
		o.update(e, pr, ok)
	}
	return nil
}

// update advances the state with the (merged) value of entry e.
func (o *Optimizer) update(e *history.Entry, pr proposal, proposed bool) {
	y := e.Mean()
	if e.Key == o.centerKey {
		o.centerY = y // the incumbent itself, measured (again)
		return
	}
	if o.better(y, o.centerY) {
		if o.centerY != nil { // a real improvement, not a first value
			o.step = min(o.step*growFactor, o.stepMax)
		}
		o.setCenter(slices.Clone(e.X), y)
		o.fails = 0
		return
	}
	if proposed && pr.sign > 0 && pr.center == o.centerKey {
		pr.sign = -1
		o.opposite = append(o.opposite, pr)
	}
	o.fail()
}

func (o *Optimizer) fail() {
	o.fails++
	if o.fails >= o.failLimit {
		o.fails = 0
		o.step *= shrinkFactor
		if o.step < o.stepMin {
			o.restart()
		}
	}
}

// restart begins a new local search at a random unobserved point.
func (o *Optimizer) restart() {
	o.epoch++
	if o.m > 1 {
		s := 0.0
		for j := range o.weights {
			o.weights[j] = -math.Log(1 - o.rng.Float64())
			s += o.weights[j]
		}
		for j := range o.weights {
			o.weights[j] /= s
		}
	}
	p := o.sp.Random(o.rng)
	for range 100 {
		if _, seen := o.hist.Lookup(space.Key(p)); !seen {
			break
		}
		p = o.sp.Random(o.rng)
	}
	o.setCenter(p, nil)
	if i, seen := o.hist.Lookup(o.centerKey); seen {
		o.centerY = o.hist.Entries()[i].Mean()
	}
	o.step = o.step0
	o.fails = 0
}

// better reports whether y improves on the incumbent value c (nil =
// unknown: any successful value improves).
func (o *Optimizer) better(y, c []float64) bool {
	if math.IsInf(y[0], 1) {
		return false
	}
	if c == nil || math.IsInf(c[0], 1) {
		return true
	}
	return o.scalar(y) < o.scalar(c)
}

// scalar maps objective values to one number: the value itself, or the
// augmented Chebyshev scalarization max_j w_j·u_j + 0.05·Σ_j w_j·u_j of the
// values u_j normalized to the observed range.
func (o *Optimizer) scalar(y []float64) float64 {
	if o.m == 1 {
		return y[0]
	}
	mx, sum := math.Inf(-1), 0.0
	for j := range y {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, e := range o.hist.Entries() {
			if e.N > 0 {
				v := e.Sum[j] / float64(e.N)
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		u := 0.0
		if hi > lo {
			u = (y[j] - lo) / (hi - lo)
		}
		mx = max(mx, o.weights[j]*u)
		sum += o.weights[j] * u
	}
	return mx + 0.05*sum
}

// Best returns the best observed point (lowest mean; objectives compared
// lexicographically).
func (o *Optimizer) Best() (Observation, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.hist.Best()
}

// ParetoFront returns the non-dominated observed points.
func (o *Optimizer) ParetoFront() []Observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.hist.ParetoFront()
}

// Suggest returns k distinct points around the incumbent, none pending or
// observed (unless a finite space has no unobserved point left).
func (o *Optimizer) Suggest(k int, pending []tunables.Point) ([]tunables.Point, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if k < 0 {
		return nil, fmt.Errorf("cannot suggest %d points", k)
	}
	if k == 0 {
		return nil, nil
	}
	taken := map[string]bool{}
	for i, p := range pending {
		if err := o.sp.Check(p); err != nil {
			return nil, fmt.Errorf("pending point %d: %w", i, err)
		}
		taken[space.Key(o.sp.Snap(p))] = true
	}
	var out []tunables.Point
	choose := func(p tunables.Point, pr proposal) {
		key := space.Key(p)
		taken[key] = true
		o.props[key] = pr
		out = append(out, p)
	}
	for guard := 0; len(out) < k && guard < 200*k+1000; guard++ {
		if _, seen := o.hist.Lookup(o.centerKey); !seen && !taken[o.centerKey] {
			choose(slices.Clone(o.center), proposal{epoch: o.epoch, center: o.centerKey})
			continue
		}
		var pr proposal
		var cand tunables.Point
		if n := len(o.opposite); n > 0 {
			pr = o.opposite[0]
			o.opposite = o.opposite[1:]
			if pr.epoch != o.epoch || pr.center != o.centerKey {
				continue
			}
			cand = o.apply(pr.move, -1)
		} else {
			move := o.direction()
			if move == nil {
				o.fail() // nothing can move
				continue
			}
			pr = proposal{epoch: o.epoch, center: o.centerKey, move: move, sign: 1}
			cand = o.apply(move, 1)
		}
		key := space.Key(cand)
		if key == o.centerKey || taken[key] {
			o.failNoEval(pr)
			continue
		}
		if i, seen := o.hist.Lookup(key); seen {
			// Known value: evaluate the move without a trial.
			o.update(o.hist.Entries()[i], pr, true)
			continue
		}
		choose(cand, pr)
	}
	if len(out) < k {
		// The neighbourhood is used up (tiny finite space): fill with any
		// free points, unobserved first, then observed ones.
		for _, p := range o.freePoints(taken, k-len(out)) {
			choose(p, proposal{epoch: o.epoch, center: o.centerKey})
		}
	}
	if len(out) == 0 {
		return nil, ErrExhausted
	}
	return out, nil
}

// failNoEval handles a move that produced no new point: its opposite is
// still worth a try, and it counts as a failure.
func (o *Optimizer) failNoEval(pr proposal) {
	if pr.sign > 0 {
		pr.sign = -1
		o.opposite = append(o.opposite, pr)
	}
	o.fail()
}

// direction draws a move δ·u with u a random unit vector over the
// coordinates that can move (numeric coordinates in use, categorical ones
// with more than one choice). For categorical coordinates the move's
// component is kept as a switching probability.
func (o *Optimizer) direction() tunables.Point {
	d := o.sp.Len()
	u := make(tunables.Point, d)
	norm := 0.0
	for i, dm := range o.sp.Dims() {
		movable := false
		switch dm.Kind {
		case tunables.DimNumeric:
			movable = dm.Levels != 1 && o.sp.Active(o.center, i)
		case tunables.DimCategorical:
			movable = dm.Choices > 1
		}
		if movable {
			u[i] = o.rng.NormFloat64()
			norm += u[i] * u[i]
		}
	}
	if norm == 0 {
		return nil
	}
	f := o.step / math.Sqrt(norm)
	for i := range u {
		u[i] *= f
	}
	return u
}

// apply returns center + sign·move, snapped; categorical coordinates
// switch to a random other choice with probability min(1, 2|move_i|).
func (o *Optimizer) apply(move tunables.Point, sign float64) tunables.Point {
	p := slices.Clone(o.center)
	for i, dm := range o.sp.Dims() {
		switch dm.Kind {
		case tunables.DimNumeric:
			p[i] += sign * move[i]
		case tunables.DimCategorical:
			if dm.Choices > 1 && o.rng.Float64() < min(1, 2*math.Abs(move[i])) {
				c := o.rng.IntN(dm.Choices - 1)
				if float64(c) >= p[i] {
					c++
				}
				p[i] = float64(c)
				if g := o.sp.Governed(i); g >= 0 && c == 0 {
					p[g] = o.rng.Float64() // back to the range: somewhere in it
				}
			}
		}
	}
	o.sp.SnapInPlace(p)
	return p
}

// freePoints returns up to n points not taken: unobserved ones first (at
// random, or from the enumeration of a small space), then observed ones
// by increasing value.
func (o *Optimizer) freePoints(taken map[string]bool, n int) []tunables.Point {
	var out []tunables.Point
	add := func(p tunables.Point) bool {
		key := space.Key(p)
		if taken[key] {
			return false
		}
		taken[key] = true
		out = append(out, p)
		return len(out) >= n
	}
	for range 100 * n {
		p := o.sp.Random(o.rng)
		if _, seen := o.hist.Lookup(space.Key(p)); !seen && add(p) {
			return out
		}
	}
	for _, p := range o.sp.Enumerate(100000) {
		if _, seen := o.hist.Lookup(space.Key(p)); !seen && add(p) {
			return out
		}
	}
	entries := slices.Clone(o.hist.Entries())
	slices.SortStableFunc(entries, func(a, b *history.Entry) int {
		return cmpFloat(o.scalar(a.Mean()), o.scalar(b.Mean()))
	})
	for _, e := range entries {
		if add(slices.Clone(e.X)) {
			break
		}
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// SetAggregator sets how repeated measurements of a point are aggregated
// (nil: the mean). Call it before the first observation.
func (o *Optimizer) SetAggregator(agg history.Aggregator) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.hist.SetAggregator(agg)
}
