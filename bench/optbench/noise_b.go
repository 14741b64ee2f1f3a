package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/tunables"
)

// The basin check before the staged refinement (-refine staged-basin, an
// experiment; optimizers/bayes/noise_b.go): once the search has settled,
// the posterior mean is minimised from many starts (bayes.Optimizer.Basins);
// the incumbent's basin is the box the staged rounds would start in
// (StagedRadius lengthscales around the posterior-mean incumbent), and its
// value the posterior mean's minimum there. Every other basin whose
// minimiser lies outside that box and whose predicted value is within
// basinZ standard deviations of the incumbent's (μ_j − μ_I < z·√(s_j² +
// s_I²)) is a candidate; the basinMax most promising (lowest μ − z·s) get
// basinEvals evaluations each (a local design of half-width basinRadius
// lengthscales around the basin's minimiser). Then the posterior mean is
// minimised again in each of the boxes, and the staged rounds start from
// the lowest; the evaluations are taken from the staged design (equal
// total evaluations). Without a candidate the staged refinement runs
// unchanged.
var (
	basinEvals  = 4
	basinMax    = 2
	basinZ      = 1.0
	basinRadius = 0.5
	basinDiag   bool
	// basinExplore: evaluations spent first outside the incumbent's basin
	// (bayes.Optimizer.ExploreOutside: the highest expected improvement
	// over the incumbent basin's value farther than 2·StagedRadius
	// lengthscales from it), so that the check has another basin to see.
	basinExplore = 0
	// basinInitN: the initial design's size for -refine staged-basin (0:
	// the optimizer's default, D + 4).
	basinInitN = 0
)

// basinInit is the NRandomInit of a -refine run.
func basinInit(rc refineCfg) int {
	if !rc.basin {
		return 0
	}
	return basinInitN
}

// noiseBFlags adds the flags of this file to optbench's.
func noiseBFlags(fs *flag.FlagSet) {
	fs.IntVar(&basinEvals, "basin-evals", 4, "with -refine staged-basin: evaluations spent in each other basin checked")
	fs.IntVar(&basinMax, "basin-max", 2, "with -refine staged-basin: at most this many other basins checked")
	fs.Float64Var(&basinZ, "basin-z", 1, "with -refine staged-basin: another basin is checked when its predicted value is within this many standard deviations of the incumbent's")
	fs.Float64Var(&basinRadius, "basin-radius", 0.5, "with -refine staged-basin: half-width of the design in another basin, in lengthscales")
	fs.IntVar(&basinExplore, "basin-explore", 0, "with -refine staged-basin: evaluations spent first outside the incumbent's basin (highest expected improvement over its value)")
	fs.IntVar(&basinInitN, "basin-init", 0, "with -refine staged-basin: the initial design's size (0: the optimizer's default, D + 4)")
	noiseBRestartFlags(fs)
	noiseBEarlyFlags(fs)
	noiseBBasinFlags(fs)
	noiseBTwinFlags(fs)
	fs.BoolVar(&basinDiag, "basin-diag", false, "with -refine staged-basin: print each seed's basins and their true regret on stderr")
}

// stagedBasinCfg is the -refine staged-basin setting: staged, with the
// basin check.
func stagedBasinCfg() refineCfg {
	c := stagedRefineCfg()
	c.basin = true
	return c
}

// basinString is refineCfg.String for -refine staged-basin: the check's
// settings and every variant flag that is on.
func basinString(c refineCfg) string {
	s := fmt.Sprintf("staged-basin (a basin check, up to %d other basins × %d evaluations, z %g, radius %g", basinMax, basinEvals, basinZ, basinRadius)
	for _, f := range []struct {
		name string
		v    int
	}{{"explore", basinExplore}, {"early", basinEarly}, {"restart", basinRestart}, {"first", basinFirst}, {"twin", basinTwin}, {"ts-until", basinTSUntil}, {"init", basinInitN}} {
		if f.v > 0 {
			s += fmt.Sprintf(", %s %d", f.name, f.v)
		}
	}
	if basinTSUntil > 0 {
		s += fmt.Sprintf(", ts-from %d, ts-every %d", basinTSFrom, basinTSEvery)
	}
	return s + fmt.Sprintf("): design=%v k=%d m=%d, %d stages from radius %g", c.frac, c.k, c.m, bayes.StagedStages, bayes.StagedRadius)
}

// basinStart starts the staged refinement: around the posterior-mean
// incumbent (o.NewStaged) unless rc.basin, then after the basin check;
// it returns the evaluations the check used (at most limit).
func basinStart(o *bayes.Optimizer, rc refineCfg, limit int, measure func(tunables.Point) error, truth func(tunables.Point) float64) (*bayes.Staged, int, error) {
	if !rc.basin {
		st, err := o.NewStaged()
		return st, 0, err
	}
	center, used, err := basinCheck(o, limit, measure, truth)
	if err != nil {
		return nil, 0, err
	}
	st, err := o.NewStagedAt(center)
	return st, used, err
}

// lsDist is the distance between a and b in units of the lengthscales.
func lsDist(o *bayes.Optimizer, a, b tunables.Point) float64 {
	d, err := o.BasinDistance(a, b)
	if err != nil {
		return math.Inf(1)
	}
	return d
}

// basinCheck runs the check described above and returns the centre the
// staged rounds start from and the evaluations it used.
func basinCheck(o *bayes.Optimizer, limit int, measure func(tunables.Point) error, truth func(tunables.Point) float64) (tunables.Point, int, error) {
	inc := o.Ranked(1)[0]
	incMin, incMu, incSD, err := o.IncumbentBasin()
	if err != nil {
		return nil, 0, err
	}
	used := 0
	for range min(basinExplore, limit) {
		x, err := o.ExploreOutside(incMin, 2*bayes.StagedRadius, incMu)
		if err != nil {
			return nil, 0, err
		}
		if x == nil {
			break
		}
		if basinDiag && truth != nil {
			fmt.Fprintf(os.Stderr, "basin diag: explore true %s\n", fmtV(truth(x)))
		}
		if err := measure(x); err != nil {
			return nil, 0, err
		}
		used++
	}
	if used > 0 { // the incumbent's basin as the model now sees it
		if incMin, incMu, incSD, err = o.IncumbentBasin(); err != nil {
			return nil, 0, err
		}
	}
	basins, err := o.Basins()
	if err != nil {
		return nil, 0, err
	}
	type cand struct {
		b   bayes.Basin
		lcb float64
	}
	var cands []cand
	for _, b := range basins {
		if lsDist(o, incMin, b.X) <= 2*bayes.StagedRadius {
			continue // the incumbent's basin
		}
		if b.Mean-incMu < basinZ*math.Hypot(b.SD, incSD) {
			cands = append(cands, cand{b, b.Mean - basinZ*b.SD})
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].lcb < cands[b].lcb })
	cands = cands[:min(len(cands), basinMax)]
	if basinDiag && truth != nil {
		fmt.Fprintf(os.Stderr, "basin diag: incumbent true %s μ %.3f±%.3f; %d basins:", fmtV(truth(incMin)), incMu, incSD, len(basins))
		for _, b := range basins[:min(6, len(basins))] {
			fmt.Fprintf(os.Stderr, " [%s μ %.3f±%.3f d %.1f]", fmtV(truth(b.X)), b.Mean, b.SD, lsDist(o, incMin, b.X))
		}
		fmt.Fprintf(os.Stderr, "; %d checked\n", len(cands))
	}
	explored := used
	centers := []tunables.Point{incMin}
	for _, c := range cands {
		n := min(basinEvals, limit-used)
		if n <= 0 {
			break
		}
		pts, err := o.LocalDesign(c.b.X, n, basinRadius)
		if err != nil {
			return nil, 0, err
		}
		for _, x := range pts {
			if err := measure(x); err != nil {
				return nil, 0, err
			}
		}
		used += len(pts)
		centers = append(centers, c.b.X)
	}
	if used == 0 {
		return inc, 0, nil // the staged refinement unchanged
	}
	if used == explored { // nothing to check: the incumbent's basin
		return incMin, used, nil
	}
	best, bestMu := tunables.Point(nil), math.Inf(1)
	for _, c := range centers {
		m, err := o.MeanMinimizer(c, bayes.StagedRadius, 0, false)
		if err != nil {
			return nil, 0, err
		}
		mu, _, err := o.MeanAt(m)
		if err != nil {
			return nil, 0, err
		}
		if mu < bestMu {
			best, bestMu = m, mu
		}
	}
	if basinDiag && truth != nil {
		fmt.Fprintf(os.Stderr, "basin diag: chose true %s (incumbent's basin %s)\n", fmtV(truth(best)), fmtV(truth(incMin)))
	}
	return best, used, nil
}

// The restart (-refine staged-basin with -basin-restart S2): the
// noise-aware GP searches for S1 evaluations (-basin-first; 0: 45% of
// the budget); if its search has then settled (SearchSettled, as the
// staged refinement asks), a second, independent noise-aware search
// from a fresh design (another seed, a model of its own) runs for S2
// evaluations, its measurements joining the first model too; the staged
// rounds then start from whichever of the two searches' basins the
// pooled model predicts lower (the minimiser of the posterior mean in
// the staged box around each search's posterior-mean incumbent), with the
// evaluations left before the confirmation (k = 2, M rounds), which runs
// as in -refine staged. Not settled: the first search goes on to the end
// and reports its posterior-mean best (as -refine staged). A search that
// ends in another basin than the optimum's is run again, not refined.
var (
	basinRestart int
	basinFirst   int
)

func noiseBRestartFlags(fs *flag.FlagSet) {
	fs.IntVar(&basinRestart, "basin-restart", 0, "with -refine staged-basin: evaluations of a second, independent search from a fresh design once the first has settled (0: none)")
	fs.IntVar(&basinFirst, "basin-first", 0, "with -basin-restart: evaluations of the first search (0: 45% of the budget)")
}

// restartRun is refineRun for -basin-restart: the true values of the
// reported configuration, of the last minimiser and the lowest true value
// measured.
func restartRun(p problem, rc refineCfg, sigma float64, seed int64, budget int) (float64, float64, float64, error) {
	rng, truth, newOpt := twoSearches(p, seed, budget)
	o, err := newOpt(seed)
	if err != nil {
		return 0, 0, 0, err
	}
	_, m := rc.split(budget)
	s1 := basinFirst
	if s1 == 0 {
		s1 = int(math.Round(0.45 * float64(budget)))
	}
	l := budget - s1 - basinRestart - rc.k*m
	if l < 0 || s1 < 10 {
		return 0, 0, 0, fmt.Errorf("-basin-restart %d with -basin-first %d leaves %d refinement evaluations of %d", basinRestart, s1, l, budget)
	}
	bestTrue := math.Inf(1)
	measure := func(x tunables.Point, os ...*bayes.Optimizer) error {
		t := truth(x)
		bestTrue = min(bestTrue, t)
		y := noisy(t, sigma, rng)
		for _, q := range os {
			if err := q.Observe(bayes.Observation{X: x, Y: []float64{y}}); err != nil {
				return err
			}
		}
		return nil
	}
	search := func(q *bayes.Optimizer, n int, also ...*bayes.Optimizer) error {
		return suggestN(q, n, func(x tunables.Point) error { return measure(x, append([]*bayes.Optimizer{q}, also...)...) })
	}
	if err := search(o, s1); err != nil {
		return 0, 0, 0, err
	}
	if !o.SearchSettled(bayes.StagedSettledFactor) {
		if err := search(o, budget-s1); err != nil {
			return 0, 0, 0, err
		}
		basinNote(p, sigma, seed, o.Ranked(1)[0])
		v := truth(o.Ranked(1)[0])
		return v, v, bestTrue, nil
	}
	first := o.Ranked(1)[0]
	o2, err := newOpt(seed + 1_000_003)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := search(o2, basinRestart, o); err != nil {
		return 0, 0, 0, err
	}
	second := o2.Ranked(1)[0]
	center, bestMu := tunables.Point(nil), math.Inf(1)
	for _, c := range []tunables.Point{first, second} {
		mn, err := o.MeanMinimizer(c, bayes.StagedRadius, 0, false)
		if err != nil {
			return 0, 0, 0, err
		}
		mu, _, err := o.MeanAt(mn)
		if err != nil {
			return 0, 0, 0, err
		}
		if mu < bestMu {
			center, bestMu = c, mu
		}
	}
	if basinDiag {
		fmt.Fprintf(os.Stderr, "basin diag: seed %d first %s second %s chose %s\n", seed, fmtV(truth(first)-p.optimum), fmtV(truth(second)-p.optimum), fmtV(truth(center)-p.optimum))
	}
	st, err := o.NewStagedAt(center)
	if err != nil {
		return 0, 0, 0, err
	}
	one := func(x tunables.Point) error { return measure(x, o) }
	for _, n := range bayes.StagedSplit(l, bayes.StagedStages) {
		pts, err := st.Design(n)
		if err != nil {
			return 0, 0, 0, err
		}
		for _, x := range pts {
			if err := one(x); err != nil {
				return 0, 0, 0, err
			}
		}
	}
	best, err := st.Best()
	if err != nil {
		return 0, 0, 0, err
	}
	pick, err := confirmPick(o, best, rc.k, m, budget, one)
	if err != nil {
		return 0, 0, 0, err
	}
	basinNote(p, sigma, seed, pick)
	return truth(pick), truth(best), bestTrue, nil
}

// The early exploration (-refine staged-basin with -basin-early F): from
// the F-th evaluation of the search on (every 10 evaluations), the search
// asks SearchSettled (as the staged refinement does at its end); once it
// has settled, the rest of the search's evaluations go outside the
// incumbent's basin (ExploreOutside, as -basin-explore), where the search
// would otherwise keep measuring a basin it has found; the basin check
// then runs as above before the staged rounds. A search that does not
// settle before its end is unchanged.
var basinEarly int

// The Thompson-sampled search steps (-basin-ts-until N): the search's
// evaluations from -basin-ts-from (after the initial design) to N − 1,
// every -basin-ts-every-th one, are the minimiser of a posterior sample
// (bayes.Optimizer.ThompsonPoint) instead of the augmented-EI point: a
// search that goes to another basin with the probability that it holds
// the minimum.
var basinTSFrom, basinTSUntil, basinTSEvery int

func noiseBEarlyFlags(fs *flag.FlagSet) {
	fs.IntVar(&basinTSFrom, "basin-ts-from", 10, "with -basin-ts-until: the first search evaluation that may be a Thompson sample")
	fs.IntVar(&basinTSUntil, "basin-ts-until", 0, "with -refine staged-basin: search evaluations before this one (from -basin-ts-from) are the minimisers of posterior samples instead of augmented EI's (0: none)")
	fs.IntVar(&basinTSEvery, "basin-ts-every", 1, "with -basin-ts-until: only every n-th of those evaluations")
	fs.IntVar(&basinEarly, "basin-early", 0, "with -refine staged-basin: from this evaluation of the search on, once the search has settled, its remaining evaluations explore outside the incumbent's basin (0: off)")
}

// basinSearch returns the search's suggestion function for a -refine run:
// o.Suggest, or with -basin-early the exploration described above.
func basinSearch(o *bayes.Optimizer, rc refineCfg) func(i int) (tunables.Point, error) {
	settled := false
	return func(i int) (tunables.Point, error) {
		if rc.basin && basinEarly > 0 && !settled && i >= basinEarly && (i-basinEarly)%10 == 0 {
			settled = o.SearchSettled(bayes.StagedSettledFactor)
		}
		if rc.basin && basinTSUntil > 0 && i >= basinTSFrom && i < basinTSUntil && (i-basinTSFrom)%max(1, basinTSEvery) == 0 {
			x, err := o.ThompsonPoint()
			if err != nil || x != nil {
				return x, err
			}
		}
		if settled {
			incMin, incMu, _, err := o.IncumbentBasin()
			if err != nil {
				return nil, err
			}
			x, err := o.ExploreOutside(incMin, 2*bayes.StagedRadius, incMu)
			if err != nil || x != nil {
				return x, err
			}
		}
		pts, err := o.Suggest(1, nil)
		if err != nil {
			return nil, err
		}
		return pts[0], nil
	}
}

// -refine-basins: under each -refine per-seed table of a function with
// known local minima (Hartmann6), which basin each seed's reported
// configuration is in: "+" where a descent on the TRUE function from it
// (a compass search, steps 0.05 down to 1e-5) ends at the global
// minimum (within 1e-3 of f*), else the regret of the local minimum it
// ends at. Recorded by basinNote as the runs report (any worker).
var (
	refineBasins bool
	basinNotes   = map[string]tunables.Point{}
	basinNotesMu sync.Mutex
)

func noiseBBasinFlags(fs *flag.FlagSet) {
	fs.BoolVar(&refineBasins, "refine-basins", false, "with -refine and -refine-per-seed: on hartmann6, each seed's basin (+: the global one; else the regret of the local minimum a descent on the true function reaches)")
}

func basinKey(name string, sigma float64, seed int64) string {
	return fmt.Sprintf("%s/%g/%d", name, sigma, seed)
}

// basinNote records the configuration a -refine run reports.
func basinNote(p problem, sigma float64, seed int64, x tunables.Point) {
	if !refineBasins || p.name != "hartmann6" {
		return
	}
	basinNotesMu.Lock()
	defer basinNotesMu.Unlock()
	basinNotes[basinKey(p.name, sigma, seed)] = slices.Clone(x)
}

// trueDescent returns the local minimum of p's true function that a
// compass search from x reaches.
func trueDescent(p problem, x tunables.Point) float64 {
	x = slices.Clone(x)
	f := p.f(x)[0]
	for step := 0.05; step > 1e-5; {
		moved := false
		for i := range x {
			for _, s := range []float64{step, -step} {
				q := slices.Clone(x)
				q[i] = min(1, max(0, q[i]+s))
				if fq := p.f(q)[0]; fq < f {
					x, f, moved = q, fq, true
				}
			}
		}
		if !moved {
			step /= 2
		}
	}
	return f
}

// basinLine is the "basin per seed" line of p at sigma for seeds
// offset+1..offset+n ("" when nothing was recorded).
func basinLine(p problem, sigma float64, n int) string {
	if !refineBasins || p.name != "hartmann6" {
		return ""
	}
	basinNotesMu.Lock()
	defer basinNotesMu.Unlock()
	out := make([]string, n)
	right := 0
	for s := range n {
		x, ok := basinNotes[basinKey(p.name, sigma, int64(noiseSeedOffset+s+1))]
		if !ok {
			return ""
		}
		if r := trueDescent(p, x) - p.optimum; r < 1e-3 {
			out[s] = "+"
			right++
		} else {
			out[s] = fmtV(r)
		}
	}
	return fmt.Sprintf("\n    basin per seed %s (%d of %d in the global basin)", strings.Join(out, " "), right, n)
}

// The twin start (-refine staged-basin with -basin-twin S0): the search
// begins as two independent noise-aware searches of S0 evaluations each
// (the run's own, then a second one with a fresh design: another seed, a
// model of its own); the second's measurements then join the first
// model, which searches on from both (augmented EI on the pooled data)
// to the staged refinement's start, and the staged refinement runs as in
// -refine staged. Which basin a search ends in is decided early (by its
// design and first steps); two starts give the pooled search two basins
// to choose from.
var basinTwin int

func noiseBTwinFlags(fs *flag.FlagSet) {
	fs.IntVar(&basinTwin, "basin-twin", 0, "with -refine staged-basin: the search begins as two independent searches of this many evaluations each, then searches on from both (0: off)")
}

// twinRun is refineRun for -basin-twin.
func twinRun(p problem, rc refineCfg, sigma float64, seed int64, budget int) (float64, float64, float64, error) {
	rng, truth, newOpt := twoSearches(p, seed, budget)
	o, err := newOpt(seed)
	if err != nil {
		return 0, 0, 0, err
	}
	o2, err := newOpt(seed + 1_000_003)
	if err != nil {
		return 0, 0, 0, err
	}
	l, m := rc.split(budget)
	search := budget - l - rc.k*m
	if 2*basinTwin > search {
		return 0, 0, 0, fmt.Errorf("-basin-twin %d: two starts of %d evaluations exceed the %d search evaluations", basinTwin, basinTwin, search)
	}
	bestTrue := math.Inf(1)
	var obs []bayes.Observation
	measureTo := func(q *bayes.Optimizer, x tunables.Point) error {
		t := truth(x)
		bestTrue = min(bestTrue, t)
		ob := bayes.Observation{X: x, Y: []float64{noisy(t, sigma, rng)}}
		if q == o2 {
			obs = append(obs, ob)
		}
		return q.Observe(ob)
	}
	run := func(q *bayes.Optimizer, n int) error {
		return suggestN(q, n, func(x tunables.Point) error { return measureTo(q, x) })
	}
	if err := run(o, basinTwin); err != nil {
		return 0, 0, 0, err
	}
	if err := run(o2, basinTwin); err != nil {
		return 0, 0, 0, err
	}
	if err := o.Observe(obs...); err != nil {
		return 0, 0, 0, err
	}
	if basinDiag {
		a, b := o.Ranked(1)[0], o2.Ranked(1)[0]
		fmt.Fprintf(os.Stderr, "basin diag: seed %d twin incumbents %s and %s\n", seed, fmtV(truth(a)-p.optimum), fmtV(truth(b)-p.optimum))
	}
	if err := run(o, search-2*basinTwin); err != nil {
		return 0, 0, 0, err
	}
	measure := func(x tunables.Point) error { return measureTo(o, x) }
	return stagedRun(o, rc, budget, search, measure, truth, func() float64 { return bestTrue }, func(x tunables.Point) { basinNote(p, sigma, seed, x) })
}

// twoSearches is what the variants that run a second, independent search
// (restartRun, twinRun) start from: the run's noise source, the true value
// of a point, and a maker of noise-aware optimizers of the run's budget
// (one per search, each with its own seed).
func twoSearches(p problem, seed int64, budget int) (*rand.Rand, func(tunables.Point) float64, func(int64) (*bayes.Optimizer, error)) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e6f697365))
	truth := func(x tunables.Point) float64 { return p.f(x)[0] }
	newOpt := func(s int64) (*bayes.Optimizer, error) {
		o, err := bayes.New(p.dims, bayes.Options{Seed: s, MaxTrials: budget})
		if err != nil {
			return nil, err
		}
		o.SetNoise(nil, true)
		return o, nil
	}
	return rng, truth, newOpt
}

// suggestN runs n steps of q's search: one suggestion each, measured.
func suggestN(q *bayes.Optimizer, n int, measure func(tunables.Point) error) error {
	for range n {
		pts, err := q.Suggest(1, nil)
		if err != nil {
			return err
		}
		if err := measure(pts[0]); err != nil {
			return err
		}
	}
	return nil
}
