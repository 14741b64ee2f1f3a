// Learning-curve extrapolation in -mf (hyperband_mf.go): any gp-fid method
// followed by one of these suffixes (e.g. asha-gp-fid-min3-lce):
//
//   - -lce: both of the next two;
//   - -lcegp: the configurations are proposed by a GP at full fidelity
//     (no fidelity input) that learns, for every configuration, its
//     observed full-fidelity value when it has one, else the final value
//     its learning curve extrapolates to (optimizers/curve), with a weight
//     that falls as the extrapolation's uncertainty grows (bayes
//     SetTargetOverride): w = σ²/(σ² + sd²), σ the pooled noise of the
//     fitted curves, sd the extrapolation's standard deviation;
//   - -lcerank: promotions rank a rung's results by the extrapolated final
//     value instead of the observed one (the planner's Ranker);
//     -lcerankN: only at rungs whose curves have at least N steps (the
//     observed values below: a short curve's extrapolation is noisier than
//     its last value).
//
// The curve of a run is every step's value up to the fidelity it ran to
// (an epoch's validation error): a trial reports it as progress while it
// runs, for free. The other methods of -mf use only the value at the rung;
// these read the steps in between too, drawn from the problem's own
// observation model with a generator of their own (so the rung values, and
// every other method's figures, are as before). With promotions continued
// a promotion extends the curve; re-run, it starts a new one.
//
// A curve shorter than curve.MinPoints steps (a first rung of 1 or 2) is
// not extrapolated: the GP learns its observed value with weight
// lceShortWeight, and promotions rank it by that value.

package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/optimizers/curve"
	"github.com/benchtune/bench/tunables"
)

// mfLCECheckOn is -mf-lce-check.
var mfLCECheckOn bool

// lceShortWeight is the GP weight of a value from a curve too short to
// extrapolate.
const lceShortWeight = 0.05

// lceMode is what a method uses the extrapolation for.
type lceMode struct {
	gp, rank bool
	minSteps int // -lcerankN: rank by the extrapolation from N steps on
}

func (m lceMode) on() bool { return m.gp || m.rank }

// mfSplitLCE strips a trailing -lce, -lcegp or -lcerank from method m.
func mfSplitLCE(m string) (string, lceMode) {
	if i := strings.LastIndex(m, "-lcerank"); i > 0 {
		if n, err := strconv.Atoi(m[i+len("-lcerank"):]); err == nil && n > 0 {
			return m[:i], lceMode{rank: true, minSteps: n}
		}
	}
	for _, s := range []struct {
		suffix string
		mode   lceMode
	}{{"-lcegp", lceMode{gp: true}}, {"-lcerank", lceMode{rank: true}}, {"-lce", lceMode{gp: true, rank: true}}} {
		if base, ok := strings.CutSuffix(m, s.suffix); ok && base != "" {
			return base, s.mode
		}
	}
	return m, lceMode{}
}

// lceCurve is one configuration's learning curve.
type lceCurve struct {
	t, y  []float64
	full  bool // it has a full-fidelity value (y's last)
	fit   *curve.Model
	fitN  int // len(t) at the fit (the fit is redone when it grows)
	pred  curve.Prediction
	noise float64 // the fit's noise SD
}

// lceModel holds every configuration's curve and the GP they feed.
type lceModel struct {
	p      mfProblem
	mode   lceMode
	rng    *rand.Rand // the steps between rungs
	curves map[string]*lceCurve
	keys   map[int]string // planner key → configuration key
	gp     *bayes.Optimizer
	seen   map[string]bool // configurations the GP has observed
	lo, hi float64         // the range of every observed value
}

func newLCE(p mfProblem, seed int64, mode lceMode) (*lceModel, error) {
	m := &lceModel{p: p, mode: mode, rng: rand.New(rand.NewPCG(uint64(seed), 53)),
		curves: map[string]*lceCurve{}, keys: map[int]string{}, seen: map[string]bool{},
		lo: math.Inf(1), hi: math.Inf(-1)}
	if mode.gp {
		gp, err := bayes.New(p.dims, bayes.Options{Seed: seed})
		if err != nil {
			return nil, err
		}
		gp.SetTargetOverride(m.override)
		m.gp = gp
	}
	return m, nil
}

func lceKey(x tunables.Point) string {
	var b strings.Builder
	for _, v := range x {
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		b.WriteByte(',')
	}
	return b.String()
}

// run records a run of configuration x (planner key k) from fidelity from
// (0: from the start) to r, whose value at r is y: the steps in between
// are drawn from the problem's observation model.
func (m *lceModel) run(k int, x tunables.Point, from, r, y float64) {
	key := lceKey(x)
	m.keys[k] = key
	c := m.curves[key]
	if c == nil || from == 0 {
		c = &lceCurve{}
		m.curves[key] = c
	}
	for s := math.Floor(from) + 1; s < r-1e-9; s++ {
		v := m.p.observe(x, s, m.rng)
		c.t, c.y = append(c.t, s), append(c.y, v)
		m.lo, m.hi = min(m.lo, v), max(m.hi, v)
	}
	c.t, c.y = append(c.t, r), append(c.y, y)
	m.lo, m.hi = min(m.lo, y), max(m.hi, y)
	c.full = r >= m.p.max-1e-9
}

// pooledNoise is the median noise SD of the curves fitted so far (0:
// none yet).
func (m *lceModel) pooledNoise() float64 {
	var v []float64
	for _, c := range m.curves {
		if c.fit != nil {
			v = append(v, c.noise)
		}
	}
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

// predict returns configuration key's predicted final value and its SD
// (SD 0: observed at full fidelity), and false for a curve too short.
func (m *lceModel) predict(key string) (curve.Prediction, bool) {
	c := m.curves[key]
	if c == nil {
		return curve.Prediction{}, false
	}
	if c.full {
		return curve.Prediction{Mean: c.y[len(c.y)-1]}, true
	}
	if c.fitN != len(c.t) {
		c.fitN = len(c.t)
		c.fit = nil
		opt := curve.Options{NoiseSD: m.pooledNoise()}
		if m.hi > m.lo {
			opt.Scale = m.hi - m.lo
		}
		fit, err := curve.Fit(c.t, c.y, m.p.max, opt)
		if err != nil && !errors.Is(err, curve.ErrTooShort) {
			panic(err) // the simulation's values are finite: a bug
		}
		if err == nil {
			c.fit, c.noise, c.pred = fit, fit.NoiseSD(), fit.Predict(m.p.max)
		}
	}
	if c.fit == nil {
		return curve.Prediction{}, false
	}
	return c.pred, true
}

// override is the GP's TargetOverride.
func (m *lceModel) override(x tunables.Point) (float64, float64, bool) {
	key := lceKey(x)
	c := m.curves[key]
	if c == nil {
		return 0, 0, false
	}
	pr, ok := m.predict(key)
	if !ok {
		return c.y[len(c.y)-1], lceShortWeight, true
	}
	if pr.SD == 0 {
		return pr.Mean, 1, true
	}
	s := m.pooledNoise()
	if !(s > 0) {
		s = pr.SD
	}
	return pr.Mean, s * s / (s*s + pr.SD*pr.SD), true
}

// observe gives the GP configuration x the first time it has a value (the
// override supplies the value it learns).
func (m *lceModel) observe(x tunables.Point, y float64) error {
	key := lceKey(x)
	if m.gp == nil || m.seen[key] {
		return nil
	}
	m.seen[key] = true
	return m.gp.Observe(bayes.Observation{X: slices.Clone(x), Y: []float64{y}})
}

// propose is the GP's next configuration, with the running ones pending.
func (m *lceModel) propose(running []tunables.Point) (tunables.Point, error) {
	pts, err := m.gp.Suggest(1, running)
	if err != nil {
		return nil, err
	}
	return pts[0], nil
}

// ranker ranks planner keys by their predicted final values.
func (m *lceModel) ranker(keys []int) ([]float64, bool) {
	out := make([]float64, len(keys))
	for i, k := range keys {
		key := m.keys[k]
		if c := m.curves[key]; c != nil && len(c.t) < m.mode.minSteps {
			out[i] = c.y[len(c.y)-1]
		} else if pr, ok := m.predict(key); ok {
			out[i] = pr.Mean
		} else if c := m.curves[key]; c != nil {
			out[i] = c.y[len(c.y)-1]
		} else {
			return nil, false
		}
	}
	return out, true
}

// lceProposer is the -lcegp proposer: the lce model's GP.
type lceProposer struct{ m *lceModel }

func (l lceProposer) propose(running []tunables.Point) (tunables.Point, error) {
	return l.m.propose(running)
}

func (l lceProposer) observe(x tunables.Point, _ int, _, y float64) error { return l.m.observe(x, y) }

// mfWithLCE sets up the extrapolation of mode lm (nil when off) for a
// gp-fid method with options opt, and returns the proposer to use.
func mfWithLCE(p mfProblem, seed int64, lm lceMode, gf *mfGPFid, opt mfOptions) (mfProposer, *lceModel, error) {
	if !lm.on() {
		return gf, nil, nil
	}
	if opt.model && lm.rank {
		return nil, nil, errors.New("-lce/-lcerank rank the promotions themselves: not with -model")
	}
	if lm.gp && (opt.model || opt.start > 0 || opt.acq > 0) {
		return nil, nil, errors.New("-lce/-lcegp replace the GP with a fidelity input: not with -model, -startP or gp-mfacq")
	}
	l, err := newLCE(p, seed, lm)
	if err != nil {
		return nil, nil, err
	}
	if lm.gp {
		return lceProposer{l}, l, nil
	}
	return gf, l, nil
}

// mfLCECheck measures the extrapolation alone (-mf-lce-check), without a
// schedule: 400 random configurations of p, each run for r = 3, 9, 27
// steps (every step's value observed); over all of them and over the best
// tenth by the true full-fidelity value, the rank (Spearman) correlation
// with that true value of (a) the value observed at r and (b) the final
// value extrapolated from the r steps (curve.Fit with a noise prior, the
// median of the fits' own noise estimates at r, and a scale, the range of
// the values at step 1; -lce uses the median noise of the curves fitted so
// far and the range of every value seen); with the shapes of the 27-step
// fits pooled as the prior (curve.Options.Shapes) in a third column.
func mfLCECheck(w io.Writer, p mfProblem) error { return mfLCECheckN(w, p, 400) }

// mfLCECheckN is mfLCECheck with n configurations (n ≥ 10).
func mfLCECheckN(w io.Writer, p mfProblem, n int) error {
	rng := rand.New(rand.NewPCG(1, 2))
	rs := newRandomSearch(p.dims, 1)
	pts := make([]tunables.Point, n)
	final := make([]float64, n)
	for i := range pts {
		pts[i] = rs.point()
		final[i] = p.truth(pts[i])
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return final[idx[a]] < final[idx[b]] })
	top := idx[:n/10]
	fmt.Fprintf(w, "== -mf-lce-check on %s: %d random configurations; Spearman correlation with the true full-fidelity value (all / best tenth)\n", p.name, n)
	var pooled []float64 // the shapes of the longest curves' fits
	rs27 := []int{27, 9, 3}
	lines := map[int]string{}
	for _, r := range rs27 {
		if float64(r) >= p.max {
			continue
		}
		obs := make([]float64, n)
		curves := make([][2][]float64, n)
		lo, hi := math.Inf(1), math.Inf(-1)
		for i, x := range pts {
			for s := 1; s <= r; s++ {
				v := p.observe(x, float64(s), rng)
				curves[i][0] = append(curves[i][0], float64(s))
				curves[i][1] = append(curves[i][1], v)
				if s == 1 {
					lo, hi = min(lo, v), max(hi, v)
				}
			}
			obs[i] = curves[i][1][r-1]
		}
		// The noise prior: the median of the fits' own estimates.
		var noises []float64
		for _, c := range curves {
			m, err := curve.Fit(c[0], c[1], p.max, curve.Options{Scale: hi - lo})
			if err != nil {
				return err
			}
			noises = append(noises, m.NoiseSD())
		}
		sort.Float64s(noises)
		pred := make([]float64, n)
		predS := make([]float64, n)
		shapes := make([]float64, curve.GridSize())
		for i, c := range curves {
			m, err := curve.Fit(c[0], c[1], p.max, curve.Options{NoiseSD: noises[n/2], Scale: hi - lo})
			if err != nil {
				return err
			}
			pred[i] = m.Predict(p.max).Mean
			for j, v := range m.Shapes() {
				shapes[j] += v
			}
			if pooled != nil {
				m, err = curve.Fit(c[0], c[1], p.max, curve.Options{NoiseSD: noises[n/2], Scale: hi - lo, Shapes: pooled})
				if err != nil {
					return err
				}
			}
			predS[i] = m.Predict(p.max).Mean
		}
		if pooled == nil {
			pooled = shapes
		}
		sub := func(v []float64) float64 {
			var a, b []float64
			for _, i := range top {
				a, b = append(a, v[i]), append(b, final[i])
			}
			return spearman(a, b)
		}
		lines[r] = fmt.Sprintf("after %2d steps: observed %.3f / %.3f, extrapolated %.3f / %.3f, extrapolated with the shapes of the longest curves' fits as prior %.3f / %.3f\n",
			r, spearman(obs, final), sub(obs), spearman(pred, final), sub(pred), spearman(predS, final), sub(predS))
	}
	for _, r := range []int{3, 9, 27} {
		fmt.Fprint(w, lines[r])
	}
	fmt.Fprintln(w)
	return nil
}
