// The multi-fidelity benchmark with the shipped planner (-mf B): 4
// runners driven by schedulers/hyperband (asynchronous Hyperband: brackets
// of successive halving with ASHA promotion, η = 3), as the scheduler
// drives it, against full-fidelity GP with B trials, on
//
//   - lcnet (hyperband_lcnet.go): a simulated 10-knob training run, the
//     fidelity is the number of epochs 1..81;
//   - branin, hartmann6: the learning curve of -prune/-hyperband (curveAt)
//     with the step count 1..27 as the fidelity.
//
// The runners are simulated in virtual time: a run at fidelity r takes r
// (a promotion re-runs from scratch, or with -mf-continue continues and
// takes the difference), a free runner is given the planner's best
// promotion, else a new configuration from the method's proposer. The
// cost is the sum of fidelity spent (runner time, the 4 runners together)
// until a moment; quality at that moment is the true full-fidelity value
// (no noise) of the configuration the method would deploy: the one with
// the best *observed* full-fidelity value so far. The target is the
// quality full-fidelity GP (B trials, 4 at a time) has at its whole
// budget B·R; each multi-fidelity method is measured by the cost at which
// its quality first reaches the target, capped at B·R (not reached:
// ratio 0).
//
// Proposers:
//   - random: uniform random configurations (Hyperband);
//   - bohb: BOHB-style (Falkner et al. 2018) with a GP in place of the
//     KDE: one GP per rung fed with every result at that rung; a new
//     configuration comes from the GP of the highest rung with at least
//     D+2 results, a third of them uniformly random; the fidelity is not
//     a GP input;
//   - gp-fid: one GP with the fidelity as an input (optimizers/bayes
//     SetFidelity, what MlosCoreOptimizer does when the scheduler sets a
//     fidelity), fed with every result at every fidelity, suggesting for
//     full fidelity with the running configurations as pending points.
//
// Methods: hb-<proposer> (all brackets), asha-gp-fid (one bracket: plain
// ASHA), and gp-fid variants where the model also decides promotions and
// starts (suffixes -minN, -model, -startP: hyperband_mf_model.go).

package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/schedulers/hyperband"
	"github.com/benchtune/bench/tunables"
)

const mfRunners = 4

// mfProblem is a problem with a fidelity.
type mfProblem struct {
	name     string
	dims     []tunables.Dim
	min, max float64 // fidelity range; max is full fidelity
	// observe is one run at fidelity r; truth is the noise-free value at
	// full fidelity.
	observe func(x tunables.Point, r float64, rng *rand.Rand) float64
	truth   func(x tunables.Point) float64
	budget  int // full-fidelity GP's trials (B)
	// stop, when set, ends a multi-fidelity run once its quality reaches
	// stopAt (-mf-stop-at-target: the ratio needs no more).
	stop   bool
	stopAt float64
}

// mfStopAtTarget is -mf-stop-at-target.
var mfStopAtTarget bool

func lcnetProblem(budget int) mfProblem {
	return mfProblem{name: "lcnet", dims: lcDims(), min: 1, max: lcMaxEpochs, budget: budget,
		observe: lcObserve, truth: func(x tunables.Point) float64 { return lcError(x, lcMaxEpochs) }}
}

// curveProblem is p with the -prune learning curve over steps 1..steps.
func curveProblem(p problem, steps, budget int) mfProblem {
	spread := spreadOf(p)
	return mfProblem{name: p.name, dims: p.dims, min: 1, max: float64(steps), budget: budget,
		observe: func(x tunables.Point, r float64, rng *rand.Rand) float64 {
			return curveAt(p.f(x)[0], int(math.Round(r)), steps, spread, rng)
		},
		truth: func(x tunables.Point) float64 { return p.f(x)[0] }}
}

// mfTrace is a run's quality over cost: after cost[i] spent, quality[i].
type mfTrace struct {
	cost, quality []float64
	evals         int
	jobs          []mfJob // every finished run, for -mf-bound (mf_bound.go)
}

// reach returns the cost at which the trace first reaches target (+Inf:
// never).
func (t mfTrace) reach(target float64) float64 {
	for i, q := range t.quality {
		if q <= target+1e-12 {
			return t.cost[i]
		}
	}
	return math.Inf(1)
}

// final returns the last quality (+Inf: none).
func (t mfTrace) final() float64 {
	if len(t.quality) == 0 {
		return math.Inf(1)
	}
	return t.quality[len(t.quality)-1]
}

// mfFullGP runs full-fidelity GP: B trials at max, mfRunners at a time
// (equal durations, so in rounds of 4).
func mfFullGP(p mfProblem, seed int64) (mfTrace, error) {
	gp, err := bayes.New(p.dims, bayes.Options{Seed: seed, MaxTrials: p.budget})
	if err != nil {
		return mfTrace{}, err
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 21))
	var tr mfTrace
	bestObs := math.Inf(1)
	quality := math.Inf(1)
	for n := 0; n < p.budget; n += mfRunners {
		pts, err := gp.Suggest(min(mfRunners, p.budget-n), nil)
		if err != nil {
			return tr, err
		}
		var obs []bayes.Observation
		for _, x := range pts {
			y := p.observe(x, p.max, rng)
			obs = append(obs, bayes.Observation{X: x, Y: []float64{y}})
			if y < bestObs {
				bestObs, quality = y, p.truth(x)
			}
			tr.evals++
		}
		if err := gp.Observe(obs...); err != nil {
			return tr, err
		}
		tr.cost = append(tr.cost, float64(n+len(pts))*p.max)
		tr.quality = append(tr.quality, quality)
	}
	return tr, nil
}

// mfProposer proposes new configurations and learns from results.
type mfProposer interface {
	propose(running []tunables.Point) (tunables.Point, error)
	observe(x tunables.Point, rung int, r, y float64) error
}

type mfRandom struct{ rs *randomSearch }

func (m *mfRandom) propose([]tunables.Point) (tunables.Point, error)    { return m.rs.point(), nil }
func (m *mfRandom) observe(tunables.Point, int, float64, float64) error { return nil }

// mfBOHB: one GP per rung (BOHB's one model per budget).
type mfBOHB struct {
	p     mfProblem
	seed  int64
	rng   *rand.Rand
	rs    *randomSearch
	gps   map[int]*bayes.Optimizer
	count map[int]int
}

func (m *mfBOHB) propose(running []tunables.Point) (tunables.Point, error) {
	if m.rng.Float64() < 1.0/3 {
		return m.rs.point(), nil
	}
	top := -1
	for r, n := range m.count {
		if n >= len(m.p.dims)+2 && r > top {
			top = r
		}
	}
	if top < 0 {
		return m.rs.point(), nil
	}
	pts, err := m.gps[top].Suggest(1, running)
	if err != nil {
		return nil, err
	}
	return pts[0], nil
}

func (m *mfBOHB) observe(x tunables.Point, rung int, _ float64, y float64) error {
	g, ok := m.gps[rung]
	if !ok {
		var err error
		if g, err = bayes.New(m.p.dims, bayes.Options{Seed: m.seed + int64(rung), NRandomInit: 1}); err != nil {
			return err
		}
		m.gps[rung] = g
	}
	m.count[rung]++
	return g.Observe(bayes.Observation{X: x, Y: []float64{y}})
}

// mfGPFid: one GP with the fidelity as its last input.
type mfGPFid struct {
	p   mfProblem
	min float64 // the lowest fidelity the planner runs (the coordinate's 0)
	gp  *bayes.Optimizer
	// version counts observations (predictions cached until it changes).
	version int
	cache   map[int]float64
	cacheV  int
}

func newGPFid(p mfProblem, seed int64, lo float64) (*mfGPFid, error) {
	dims := append(slices.Clone(p.dims), tunables.Dim{Name: "fidelity", Kind: tunables.DimNumeric})
	gp, err := bayes.New(dims, bayes.Options{Seed: seed, TrustRegion: -1})
	if err != nil {
		return nil, err
	}
	if err := gp.SetFidelity(len(dims)-1, 1); err != nil {
		return nil, err
	}
	return &mfGPFid{p: p, min: lo, gp: gp}, nil
}

// coord is fidelity r's unit coordinate (log scale, as Fidelity.Log; the
// scheduler maps its fidelity.min to 0).
func (m *mfGPFid) coord(r float64) float64 {
	return math.Log(r/m.min) / math.Log(m.p.max/m.min)
}

func (m *mfGPFid) propose(running []tunables.Point) (tunables.Point, error) {
	pend := make([]tunables.Point, len(running))
	for i, x := range running {
		pend[i] = append(slices.Clone(x), 1)
	}
	pts, err := m.gp.Suggest(1, pend)
	if err != nil {
		return nil, err
	}
	return pts[0][:len(m.p.dims)], nil
}

func (m *mfGPFid) observe(x tunables.Point, _ int, r, y float64) error {
	m.version++
	return m.gp.Observe(bayes.Observation{X: append(slices.Clone(x), m.coord(r)), Y: []float64{y}})
}

// mfRun drives the planner and proposer with mfRunners runners until
// the cost reaches limit.
func mfRun(p mfProblem, method string, cont bool, seed int64, limit float64) (mfTrace, error) {
	if strings.HasPrefix(method, "dyn-") {
		return mfDynRun(p, method, cont, seed, limit) // mf_dyn.go
	}
	method, mes := mfSplitMES(method)       // -mfmes, -mfmesl: mf_mes.go
	method, tro, ok := mfSplitTurbo(method) // -turboP, -trmM, -trown, -trfF, -trts: mf_turbo.go
	if !ok || (tro.frac > 0 && strings.Contains(method, "-loc")) {
		return mfTrace{}, fmt.Errorf("-mf method %q: -turboP needs 1 <= P <= 100, -trmM 1 <= M <= %d, -trfF 1 <= F <= 100, each once, with -turboP and without -locP", method, trMaxRegs)
	}
	method, pro, ok := mfSplitProp(method) // -locP, -boxW: mf_prop.go
	if !ok {
		return mfTrace{}, fmt.Errorf("-mf method %q: -locP needs 1 <= P <= 100, -boxW 1 <= W <= 100 and -locP", method)
	}
	method, po, ok := mfSplitPromo(method) // -waitK, -firstK, -upN: mf_promo.go
	if !ok {
		return mfTrace{}, fmt.Errorf("-mf method %q: -waitK and -firstK need K >= 1 (not both), -upN N >= 2, each once", method)
	}
	method, bnd := mfSplitBound(method) // -oracle, -etaN: mf_bound.go
	cfg := hyperband.Config{Min: p.min, Max: p.max, Eta: bnd.eta(3), Integer: true}
	var prop mfProposer
	var err error
	var opt mfOptions
	var lce *lceModel // learning-curve extrapolation (mf_lce.go)
	switch method {
	case "hb-random":
		prop = &mfRandom{newRandomSearch(p.dims, seed)}
	case "hb-bohb":
		prop = &mfBOHB{p: p, seed: seed, rng: rand.New(rand.NewPCG(uint64(seed), 5)), rs: newRandomSearch(p.dims, seed),
			gps: map[int]*bayes.Optimizer{}, count: map[int]int{}}
	default:
		noLCE, lm := mfSplitLCE(method)
		base, decay := mfSplitDecay(noLCE)
		var ok bool
		if opt, ok = parseMFMethod(base); !ok {
			if opt, ok = parseMFAcq(base); !ok {
				return mfTrace{}, fmt.Errorf("unknown -mf method %q (known: hb-random, hb-bohb, hb-gp-fid, asha-gp-fid, and the last two with the suffixes %s; %s)", method, mfSuffixes, mfAcqMethods)
			}
		}
		if opt.asha {
			cfg.Brackets = 1
		}
		if opt.min > 0 {
			cfg.Min = opt.min
		}
		if prop, err = newGPFid(p, seed, cfg.Min); err != nil {
			return mfTrace{}, err
		}
		if err := mfSetDecay(prop.(*mfGPFid), decay); err != nil {
			return mfTrace{}, err
		}
		if prop, lce, err = mfWithLCE(p, seed, lm, prop.(*mfGPFid), opt); err != nil {
			return mfTrace{}, err
		}
	}
	pl, err := hyperband.New[int](cfg)
	if err != nil {
		return mfTrace{}, err
	}
	gf, _ := prop.(*mfGPFid)
	if pro.frac > 0 {
		if gf == nil {
			return mfTrace{}, fmt.Errorf("-mf method %q: -locP needs a gp-fid proposer", method)
		}
		prop = newMFLocal(prop, gf, pro, seed)
	}
	if tro.frac > 0 {
		if gf == nil {
			return mfTrace{}, fmt.Errorf("-mf method %q: -turboP needs a gp-fid proposer", method)
		}
		prop = newMFTurbo(prop, gf, tro, seed) // mf_turbo.go
	}
	var mm *mfMES
	if mes.on {
		if gf == nil || pro.frac > 0 || tro.frac > 0 || lce != nil || opt.start > 0 || opt.acq > 0 {
			return mfTrace{}, fmt.Errorf("-mf method %q: -mfmes needs a gp-fid proposer, without -locP, -turboP, -startP, the learning-curve extrapolation or mfacq", method)
		}
		mm = newMFMES(gf, mes, seed)
		prop = mfSeen{prop, mm}
	}
	configs := map[int]tunables.Point{}
	if opt.model {
		pl.SetRanker(gf.ranker(configs))
	}
	if lce != nil && lce.mode.rank {
		pl.SetRanker(lce.ranker)
	}
	// At a free runner: the planner's best promotion, else a new
	// configuration from the proposer in the planner's next bracket (or
	// where the start rule puts it).
	promote := mfPromote(pl, po, mfPromoRanker(opt, gf, lce, configs), configs) // mf_promo.go
	next := func(running []tunables.Point) (hyperband.Job[int], error) {
		j, ok, err := promote()
		if ok || err != nil {
			return j, err
		}
		if mm != nil {
			return mm.start(pl, configs, running)
		}
		b, _ := pl.NextBracket()
		x, err := prop.propose(running)
		if err != nil {
			return j, err
		}
		k := len(configs)
		configs[k] = x
		full := false
		if opt.start > 0 {
			if full, err = gf.confident(x, opt.start); err != nil {
				return j, err
			}
		}
		switch {
		case opt.acq > 0:
			return gf.acqStart(pl, k, x, opt.acq)
		case full:
			return pl.AddFull(k)
		}
		return pl.Add(k, b)
	}
	hooks := mfHooks{rank: func(x tunables.Point, y float64) float64 { return bnd.rank(p, x, y) }}
	if lce != nil {
		hooks.ran = lce.run
	}
	tr, err := mfSimulate(p, pl, prop, configs, next, hooks, cont, seed, limit)
	if mm != nil && mfMESDone != nil {
		mfMESDone(mm)
	}
	return tr, err
}

// mfHooks are a method's own steps in mfSimulate (either may be nil).
type mfHooks struct {
	// ran is told of each finished run before the proposer: the
	// configuration's key and point, the fidelity it ran from (0, or the
	// one it continued from), the fidelity it reached and its value.
	ran func(key int, x tunables.Point, from, to, y float64)
	// rank is the value the planner ranks a finished run by (nil: its
	// observed value y).
	rank func(x tunables.Point, y float64) float64
}

// mfNext is a method's decision at a free runner: the job it starts
// there, given the configurations running (the proposer's pending
// points). A new configuration is added to the configs map that
// mfSimulate was given before its job is returned.
type mfNext func(running []tunables.Point) (hyperband.Job[int], error)

// mfSimulate runs mfRunners simulated runners in virtual time until the
// cost reaches limit: each free runner gets the job next decides; a
// finished run is observed (p.observe), reported to the planner and to
// prop; a full-fidelity result better than the best observed one so far
// makes a point of the trace. configs maps the planner's keys to their
// configurations.
func mfSimulate(p mfProblem, pl *hyperband.Planner[int], prop mfProposer, configs map[int]tunables.Point,
	next mfNext, hooks mfHooks, cont bool, seed int64, limit float64) (mfTrace, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 31))
	type job struct {
		key        int
		rung       int
		r          float64
		start, end float64
	}
	var running []job
	last := map[int]float64{} // the fidelity each configuration last ran at
	var tr mfTrace
	clock, done := 0.0, 0.0 // done: cost of finished runs
	bestObs, quality := math.Inf(1), math.Inf(1)
	for {
		for len(running) < mfRunners {
			var xs []tunables.Point
			for _, r := range running {
				xs = append(xs, configs[r.key])
			}
			j, err := next(xs)
			if err != nil {
				return tr, err
			}
			d := j.Fidelity
			if cont && j.Promoted {
				d -= last[j.Key]
			}
			last[j.Key] = j.Fidelity
			running = append(running, job{j.Key, j.Rung, j.Fidelity, clock, clock + d})
		}
		i := 0
		for k, r := range running {
			if r.end < running[i].end {
				i = k
			}
		}
		jb := running[i]
		running = slices.Delete(running, i, i+1)
		clock = jb.end
		done += jb.end - jb.start
		spent := done
		for _, r := range running {
			spent += clock - r.start
		}
		x := configs[jb.key]
		y := p.observe(x, jb.r, rng)
		tr.evals++
		tr.jobs = append(tr.jobs, mfJob{key: jb.key, rung: jb.rung, r: jb.r, start: jb.start, end: jb.end, y: y, x: x})
		ranked := y
		if hooks.rank != nil {
			ranked = hooks.rank(x, y)
		}
		if err := pl.Report(jb.key, jb.rung, ranked); err != nil {
			return tr, err
		}
		if hooks.ran != nil {
			hooks.ran(jb.key, x, jb.r-(jb.end-jb.start), jb.r, y)
		}
		if err := prop.observe(x, jb.rung, jb.r, y); err != nil {
			return tr, err
		}
		if pl.Full(jb.rung) && y < bestObs {
			bestObs, quality = y, p.truth(x)
			tr.cost = append(tr.cost, spent)
			tr.quality = append(tr.quality, quality)
		}
		if spent >= limit || (p.stop && quality <= p.stopAt+1e-12) {
			return tr, nil
		}
	}
}

// mfMethods are the multi-fidelity methods, in report order.
var mfMethods = []string{"hb-random", "hb-bohb", "hb-gp-fid", "asha-gp-fid", "hb-gp-fid-model", "asha-gp-fid-model"}

func benchMF(w io.Writer, cfg config, p mfProblem, methods []string, cont bool) error {
	limit := float64(p.budget) * p.max
	promo := "re-run from scratch"
	if cont {
		promo = "continued (pays the difference)"
	}
	rungs := hyperband.Config{Min: p.min, Max: p.max, Eta: 3, Integer: true}.Rungs()
	if p.name == "lcnet" {
		fmt.Fprintln(w, lcStats())
	}
	fmt.Fprintf(w, "== -mf on %s (%d knobs): fidelity %g..%g, rungs %v (η 3), promotions %s; %d runners; full GP: %d trials × %g = %g\n",
		p.name, len(p.dims), p.min, p.max, rungs, promo, mfRunners, p.budget, p.max, limit)
	if mfStopAtTarget {
		fmt.Fprintln(w, "(-mf-stop-at-target: each run ends when it reaches full GP's quality; the runs and the quality at the budget below stop there)")
	}
	type res struct {
		target float64
		full   mfTrace
		tr     []mfTrace
		err    error
	}
	out := make([]res, cfg.seeds)
	eachSeed(cfg.workers, cfg.seeds, func(s int) {
		seed := int64(s + 1 + mfSeedOffset)
		full, err := mfFullGP(p, seed)
		if err != nil {
			out[s].err = err
			return
		}
		out[s].full, out[s].target = full, full.final()
		ps := p
		ps.stop, ps.stopAt = mfStopAtTarget, full.final()
		for _, m := range methods {
			tr, err := mfRun(ps, m, cont, seed, limit)
			if err != nil {
				out[s].err = fmt.Errorf("%s seed %d: %w", m, seed, err)
				return
			}
			out[s].tr = append(out[s].tr, tr)
		}
	})
	ratios := make([][]float64, len(methods))
	at5 := make([][]float64, len(methods)) // quality at limit/5
	atEnd := make([][]float64, len(methods))
	var targets []float64
	for s, r := range out {
		if r.err != nil {
			return r.err
		}
		targets = append(targets, r.target)
		fmt.Fprintf(w, "seed %2d: full GP quality %s;", s+1+mfSeedOffset, fmtV(r.target))
		for i, m := range methods {
			c := r.tr[i].reach(r.target)
			ratio := 0.0
			if !math.IsInf(c, 1) {
				ratio = limit / c
			}
			ratios[i] = append(ratios[i], ratio)
			q5 := math.Inf(1)
			for k, cc := range r.tr[i].cost {
				if cc <= limit/5 {
					q5 = r.tr[i].quality[k]
				}
			}
			at5[i] = append(at5[i], q5)
			atEnd[i] = append(atEnd[i], r.tr[i].final())
			fmt.Fprintf(w, " %s %s (%d runs) %.2f×;", m, fmtCost(c), r.tr[i].evals, ratio)
		}
		fmt.Fprintln(w)
	}
	_, mt, _ := quartiles(targets)
	fmt.Fprintf(w, "full GP's quality at %g (the target): median %s [%s, %s]\n", limit, fmtV(mt), fmtV(slices.Min(targets)), fmtV(slices.Max(targets)))
	for i, m := range methods {
		q1, med, q3 := quartiles(ratios[i])
		reached := 0
		for _, v := range ratios[i] {
			if v > 0 {
				reached++
			}
		}
		_, m5, _ := quartiles(at5[i])
		_, mEnd, _ := quartiles(atEnd[i])
		fmt.Fprintf(w, "%-12s median ratio (full GP's cost / cost to reach its quality) %.2f× [q1 %.2f, q3 %.2f; min %.2f, max %.2f], reached in %d/%d seeds; median quality at %g (a fifth): %s, at %g: %s\n",
			m, med, q1, q3, slices.Min(ratios[i]), slices.Max(ratios[i]), reached, cfg.seeds, limit/5, fmtV(m5), limit, fmtV(mEnd))
	}
	fmt.Fprintln(w)
	return nil
}

func fmtCost(c float64) string {
	if math.IsInf(c, 1) {
		return "not reached"
	}
	return fmt.Sprintf("%.0f", c)
}

// mfProblems builds the -mf problems by name; budget 0 keeps each one's
// default number of full-fidelity trials (lcnet 50 × 81 epochs; branin
// and hartmann6 40 × 27 steps, as -hyperband 40,27).
func mfProblems(names []string, budget int) ([]mfProblem, error) {
	var out []mfProblem
	for _, n := range names {
		var p mfProblem
		switch n {
		case "lcnet":
			p = lcnetProblem(50)
		case "branin":
			p = curveProblem(braninProblem(), 27, 40)
		case "hartmann6":
			p = curveProblem(hartmannProblem(), 27, 40)
		default:
			return nil, fmt.Errorf("-mf: unknown problem %q (known: lcnet, branin, hartmann6)", n)
		}
		if budget > 0 {
			p.budget = budget
		}
		out = append(out, p)
	}
	return out, nil
}
