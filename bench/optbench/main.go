// Command optbench measures the optimizer algorithms (GP Bayesian
// optimization, FLAML-style local search) against random search on
// standard test functions and prints the best value found after a number
// of evaluations (median and quartiles over seeds) and the suggestion
// latency.
//
//	go run ./bench/optbench                       # the full run (several minutes)
//	go run ./bench/optbench -funcs branin -seeds 3 -budget 50 -latency ''   # a quick look
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/optimizers/localsearch"
	"github.com/benchtune/bench/tunables"
)

// algorithm is what both optimizer packages (and random search) offer.
type algorithm interface {
	Observe(obs ...bayes.Observation) error
	Suggest(k int, pending []tunables.Point) ([]tunables.Point, error)
}

type method struct {
	name string
	make func(p problem, seed int64, budget int, defaults bool) (algorithm, error)
}

var allMethods = []method{
	{"gp", func(p problem, seed int64, budget int, defaults bool) (algorithm, error) {
		o := bayes.Options{Seed: seed, MaxTrials: budget, NumObjectives: len(p.f(p.initial))}
		if defaults {
			o.Initial = p.initial
		}
		return bayes.New(p.dims, o)
	}},
	{"ls", func(p problem, seed int64, budget int, defaults bool) (algorithm, error) {
		o := localsearch.Options{Seed: seed, MaxTrials: budget, NumObjectives: len(p.f(p.initial))}
		if defaults {
			o.Initial = p.initial
		}
		return localsearch.New(p.dims, o)
	}},
	{"random", func(p problem, seed int64, _ int, _ bool) (algorithm, error) {
		return newRandomSearch(p.dims, seed), nil
	}},
}

var allProblems = []func() problem{braninProblem, hartmannProblem, rosenbrockProblem, mixedProblem, levy10Problem}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "optbench:", err)
		os.Exit(1)
	}
}

type config struct {
	funcs, methods  []string
	seeds, budget   int
	checkpoints     []int
	latency         []int
	workers         int
	parallel, multi bool
	defaults        bool
}

func run(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("optbench", flag.ContinueOnError)
	funcs := fs.String("funcs", "branin,hartmann6,rosenbrock4,mixed", "comma-separated test functions")
	methods := fs.String("methods", "gp,ls,random", "comma-separated methods")
	seeds := fs.Int("seeds", 10, "number of seeds per function and method")
	budget := fs.Int("budget", 200, "evaluations per run")
	checkpoints := fs.String("checkpoints", "20,50,100,200", "evaluation counts to report (those above -budget are dropped)")
	latency := fs.String("latency", "50,200,500", "observation counts at which to measure suggestion latency ('' to skip)")
	workers := fs.Int("workers", 2, "runs in parallel")
	parallel := fs.Bool("parallel", true, "also run GP-BO with 4 suggestions per round on branin")
	multi := fs.Bool("multi", true, "also run the two-objective Branin-Currin sanity check")
	defaults := fs.Bool("defaults", false, "start each run from the function's default point (start_with_defaults)")
	highDim := fs.String("highdim", "", "instead: the many-dimensions benchmark with these budgets ACKLEY,BRANIN30, e.g. 500,50 (see highdim.go)")
	hdMethods := fs.String("hdmethods", "gp-tr,gp", "with -highdim: the methods (gp-tr: trust region; gp: global GP)")
	noiseLevels := fs.String("noise", "", "instead: the noise benchmark at these multiplicative noise levels, e.g. 0.05,0.1,0.2 (see noise.go)")
	fs.StringVar(&noiseSearch, "noise-search", "global", "with -noise: the noise-aware methods' search, global, local (a trust region once the global search expects less than the noise, see noise_local.go) or local-tr (local with TuRBO regions from 10 dimensions up, an experiment: noise_ltr.go)")
	fs.StringVar(&noiseKernel, "noise-kernel", "matern", "with -noise: the noise-aware methods' kernel, matern, additive (mixed with its first-order additive part, see noise_add.go) additive10 (additive from 10 dimensions up) or additive-bic (additive only where it wins a penalised evidence test)")
	noiseMeths := fs.String("noise-methods", "", "with -noise: only these methods (of noisefree, naive, aware, confirm), regret per seed (see noise_local.go)")
	pruneArg := fs.String("prune", "", "instead: the early-stopping benchmark with B full trials of S steps, e.g. 40,27 (see prune.go)")
	hyperbandArg := fs.String("hyperband", "", "instead: the multi-fidelity benchmark (Hyperband, BOHB) against B full-fidelity GP trials of fidelity S, e.g. 40,27 (see hyperband.go)")
	curveScale := fs.Float64("curve-scale", 1, "with -hyperband: multiply the learning curve's offset and noise (1: as -prune)")
	mfArg := fs.String("mf", "", "instead: the multi-fidelity benchmark with schedulers/hyperband and 4 runners on these problems, e.g. lcnet,branin,hartmann6 (see hyperband_mf.go)")
	mfBudget := fs.Int("mf-budget", 0, "with -mf: full-fidelity GP's trials (0: lcnet 50, branin/hartmann6 40)")
	mfMeths := fs.String("mf-methods", strings.Join(mfMethods, ","), "with -mf: the multi-fidelity methods (gp-fid ones take the suffixes "+mfSuffixes+"; "+mfAcqMethods+")")
	mfContinue := fs.Bool("mf-continue", false, "with -mf: a promotion continues the run (pays the difference) instead of re-running it")
	mfBound := fs.String("mf-bound", "", "with -mf: instead of the benchmark, bounds for these methods: oracle promotions, the stream of proposals, where the budget goes (mf_bound.go)")
	fs.IntVar(&mfSeedOffset, "mf-seed-offset", 0, "with -mf: run seeds offset+1..offset+seeds (held-out seeds)")
	fs.BoolVar(&mfStopAtTarget, "mf-stop-at-target", false, "with -mf: end each method's run when it reaches full GP's quality (the ratios are the same, the run is shorter; the quality at the budget is then the target's)")
	mfModel := fs.Bool("mf-model-check", false, "with -mf: instead of the benchmark, the GPs' full-fidelity predictions (stationary and decay kernels) against the truth (mf_ftk.go)")
	refineArg := fs.String("refine", "", "with -noise: instead, the local refinement (noise_refine.go), e.g. design=0.2,k=2,radius=0.5")
	refineBase := fs.Bool("refine-baseline", false, "with -refine: also run naive and confirm")
	fs.BoolVar(&mfLCECheckOn, "mf-lce-check", false, "with -mf: instead of the benchmark, the learning-curve extrapolation's ranking against the truth (mf_lce.go)")
	fs.BoolVar(&refinePerSeed, "refine-per-seed", false, "with -refine: print each seed's deployed regret too")
	noiseNFlags(fs)  // noise_n.go
	noiseLSFlags(fs) // noise_ls.go
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := config{seeds: *seeds, budget: *budget, workers: max(1, *workers),
		parallel: *parallel, multi: *multi, defaults: *defaults}
	cfg.funcs = splitList(*funcs)
	cfg.methods = splitList(*methods)
	var err error
	if cfg.checkpoints, err = parseInts(*checkpoints); err != nil {
		return fmt.Errorf("-checkpoints: %w", err)
	}
	if cfg.latency, err = parseInts(*latency); err != nil {
		return fmt.Errorf("-latency: %w", err)
	}
	cfg.checkpoints = slices.DeleteFunc(cfg.checkpoints, func(c int) bool { return c > cfg.budget })
	if cfg.seeds < 1 || cfg.budget < 1 {
		return fmt.Errorf("-seeds and -budget must be positive")
	}
	var probs []problem
	for _, name := range cfg.funcs {
		found := false
		for _, mk := range allProblems {
			if p := mk(); p.name == name {
				probs, found = append(probs, p), true
			}
		}
		if !found {
			return fmt.Errorf("unknown function %q (known: branin, hartmann6, rosenbrock4, mixed, levy10)", name)
		}
	}
	if *highDim != "" {
		b, err := parseInts(*highDim)
		if err != nil || len(b) != 2 || b[0] < 8 || b[1] < 2 {
			return fmt.Errorf("-highdim: want two budgets like 500,50")
		}
		fmt.Fprintf(w, "optbench -highdim: %d seeds, %d workers\n\n", cfg.seeds, cfg.workers)
		return benchHighDim(w, cfg, b[0], b[1], splitList(*hdMethods))
	}
	if *mfArg != "" {
		probs, err := mfProblems(splitList(*mfArg), *mfBudget)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "optbench -mf: %d seeds, %d workers\n\n", cfg.seeds, cfg.workers)
		if *mfBound != "" {
			for _, p := range probs {
				if err := benchMFBound(w, cfg, p, splitList(*mfBound), *mfContinue); err != nil {
					return err
				}
			}
			return nil
		}
		if *mfModel || mfLCECheckOn {
			for _, p := range probs {
				if mfLCECheckOn {
					if err := mfLCECheck(w, p); err != nil {
						return err
					}
					continue
				}
				if err := mfModelCheck(w, cfg, p); err != nil {
					return err
				}
			}
			return nil
		}
		for _, p := range probs {
			if err := benchMF(w, cfg, p, splitList(*mfMeths), *mfContinue); err != nil {
				return err
			}
		}
		return nil
	}
	if *hyperbandArg != "" {
		b, err := parseInts(*hyperbandArg)
		if err != nil || len(b) != 2 || b[0] < pruneParallel || b[1] < hbEta {
			return fmt.Errorf("-hyperband: want B,S like 40,27 (B >= %d, S >= %d)", pruneParallel, hbEta)
		}
		if *curveScale < 0 {
			return fmt.Errorf("-curve-scale must be >= 0")
		}
		for _, p := range probs {
			if err := benchHyperband(w, cfg, p, b[0], b[1], *curveScale); err != nil {
				return err
			}
		}
		return nil
	}
	if *pruneArg != "" {
		b, err := parseInts(*pruneArg)
		if err != nil || len(b) != 2 || b[0] < pruneParallel || b[1] < 3 {
			return fmt.Errorf("-prune: want B,S like 40,27 (B >= %d, S >= 3)", pruneParallel)
		}
		for _, p := range probs {
			if err := benchPrune(w, cfg, p, b[0], b[1]); err != nil {
				return err
			}
		}
		return nil
	}
	if *noiseLevels != "" {
		var sigmas []float64
		for _, f := range splitList(*noiseLevels) {
			var v float64
			if _, err := fmt.Sscan(f, &v); err != nil || v < 0 {
				return fmt.Errorf("-noise: %q is not a noise level", f)
			}
			sigmas = append(sigmas, v)
		}
		if err := noiseKernelCheck(w); err != nil {
			return err
		}
		if acqDiag {
			return benchAcqDiag(w, cfg, probs) // noise_acq.go
		}
		if done, err := noiseSearchRun(w, cfg, probs, sigmas, *noiseMeths); done || err != nil {
			return err
		}
		if cfg.budget < minNoiseBudget {
			return fmt.Errorf("-noise needs -budget of at least %d", minNoiseBudget)
		}
		fmt.Fprintf(w, "optbench -noise: %d seeds, budget %d, %d workers\n\n", cfg.seeds, cfg.budget, cfg.workers)
		if *refineArg != "" {
			rc, err := parseRefine(*refineArg)
			if err != nil {
				return err
			}
			return benchNoiseRefine(w, cfg, probs, sigmas, rc, *refineBase)
		}
		return benchNoise(w, cfg, probs, sigmas)
	}
	var meths []method
	for _, name := range cfg.methods {
		i := slices.IndexFunc(allMethods, func(m method) bool { return m.name == name })
		if i < 0 {
			return fmt.Errorf("unknown method %q (known: gp, ls, random)", name)
		}
		meths = append(meths, allMethods[i])
	}
	fmt.Fprintf(w, "optbench: %d seeds, budget %d, %d workers, start_with_defaults=%v\n\n", cfg.seeds, cfg.budget, cfg.workers, cfg.defaults)
	for _, p := range probs {
		if err := benchProblem(w, cfg, p, meths); err != nil {
			return err
		}
	}
	if cfg.parallel && slices.Contains(cfg.funcs, "branin") {
		if err := benchParallel(w, cfg); err != nil {
			return err
		}
	}
	if cfg.multi {
		if err := benchMulti(w, cfg, meths); err != nil {
			return err
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// trace is one run: the best value after each evaluation, the observations
// and the time of each Suggest call.
type trace struct {
	best     []float64
	hist     []bayes.Observation
	suggestT []time.Duration
}

// runOnce optimizes p for budget evaluations, k suggestions per round.
func runOnce(p problem, m method, seed int64, budget, k int, defaults bool) (trace, error) {
	a, err := m.make(p, seed, budget, defaults)
	if err != nil {
		return trace{}, err
	}
	var tr trace
	best := math.Inf(1)
	for len(tr.best) < budget {
		t0 := time.Now()
		pts, err := a.Suggest(min(k, budget-len(tr.best)), nil)
		tr.suggestT = append(tr.suggestT, time.Since(t0))
		if err != nil {
			return tr, fmt.Errorf("%s on %s, seed %d: %w", m.name, p.name, seed, err)
		}
		var obs []bayes.Observation
		for _, x := range pts {
			y := p.f(x)
			obs = append(obs, bayes.Observation{X: x, Y: y})
			best = min(best, y[0])
			tr.best = append(tr.best, best)
		}
		if err := a.Observe(obs...); err != nil {
			return tr, err
		}
		tr.hist = append(tr.hist, obs...)
	}
	return tr, nil
}

// eachSeed calls f(s) for s = 0..n-1 on at most workers goroutines at
// once (at least one) and returns when every call has.
func eachSeed(workers, n int, f func(s int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, workers))
	for s := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(s)
		}()
	}
	wg.Wait()
}

// runSeeds runs seeds 1..n of (p, m) on cfg.workers goroutines.
func runSeeds(cfg config, p problem, m method, k int) ([]trace, error) {
	out := make([]trace, cfg.seeds)
	errs := make([]error, cfg.seeds)
	eachSeed(cfg.workers, cfg.seeds, func(s int) {
		out[s], errs[s] = runOnce(p, m, int64(s+1), cfg.budget, k, cfg.defaults)
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func benchProblem(w io.Writer, cfg config, p problem, meths []method) error {
	fmt.Fprintf(w, "== %s (%d-D, domain %s, optimum %g): best value after N evaluations, median [q1, q3] over %d seeds\n",
		p.name, len(p.dims), p.box, p.optimum, cfg.seeds)
	fmt.Fprintf(w, "%-8s", "method")
	for _, c := range cfg.checkpoints {
		fmt.Fprintf(w, " %-27s", fmt.Sprintf("N=%d", c))
	}
	fmt.Fprintf(w, " %s\n", "time/run")
	var gpTraces []trace
	for _, m := range meths {
		t0 := time.Now()
		trs, err := runSeeds(cfg, p, m, 1)
		if err != nil {
			return err
		}
		if m.name == "gp" {
			gpTraces = trs
		}
		fmt.Fprintf(w, "%-8s", m.name)
		for _, c := range cfg.checkpoints {
			vals := make([]float64, len(trs))
			for i, tr := range trs {
				vals[i] = tr.best[c-1]
			}
			q1, med, q3 := quartiles(vals)
			fmt.Fprintf(w, " %-27s", fmt.Sprintf("%s [%s, %s]", fmtV(med), fmtV(q1), fmtV(q3)))
		}
		fmt.Fprintf(w, " %.1fs\n", time.Since(t0).Seconds()/float64(cfg.seeds)*float64(cfg.workers))
	}
	if len(cfg.latency) > 0 {
		if err := benchLatency(w, cfg, p, meths, gpTraces); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	return nil
}

// benchLatency measures Suggest(1) after N observations: a fresh optimizer
// observes N points in bulk (those of the seed-1 GP run, then random ones
// when N exceeds the budget), then 21 rounds of Suggest + Observe are timed.
// The first round includes the hyperparameter fit a resumed optimizer does.
func benchLatency(w io.Writer, cfg config, p problem, meths []method, gpTraces []trace) error {
	fmt.Fprintf(w, "suggest latency in ms after N observations: median of 21 (mean)\n")
	var base []bayes.Observation
	if len(gpTraces) > 0 {
		base = gpTraces[0].hist
	}
	rs := newRandomSearch(p.dims, 99)
	for _, m := range meths {
		if m.name == "random" {
			continue
		}
		fmt.Fprintf(w, "%-8s", m.name)
		for _, n := range cfg.latency {
			obs := slices.Clone(base[:min(n, len(base))])
			for len(obs) < n {
				x := rs.point()
				obs = append(obs, bayes.Observation{X: x, Y: p.f(x)})
			}
			a, err := m.make(p, 1, n+100, false)
			if err != nil {
				return err
			}
			if err := a.Observe(obs...); err != nil {
				return err
			}
			var ts []float64
			for range 21 {
				t0 := time.Now()
				pts, err := a.Suggest(1, nil)
				ts = append(ts, float64(time.Since(t0).Microseconds())/1000)
				if err != nil {
					return err
				}
				if err := a.Observe(bayes.Observation{X: pts[0], Y: p.f(pts[0])}); err != nil {
					return err
				}
			}
			_, med, _ := quartiles(ts)
			mean := 0.0
			for _, t := range ts {
				mean += t
			}
			fmt.Fprintf(w, "  N=%d: %.2f (%.1f)", n, med, mean/float64(len(ts)))
		}
		fmt.Fprintln(w)
	}
	return nil
}

// benchParallel runs GP-BO on Branin with 4 suggestions per round.
func benchParallel(w io.Writer, cfg config) error {
	p := braninProblem()
	gp := allMethods[0]
	fmt.Fprintf(w, "== branin, GP-BO with k=4 suggestions per round (Kriging believer), best value, median [q1, q3]\n")
	for _, k := range []int{1, 4} {
		trs, err := runSeeds(cfg, p, gp, k)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "k=%d     ", k)
		for _, c := range cfg.checkpoints {
			vals := make([]float64, len(trs))
			for i, tr := range trs {
				vals[i] = tr.best[c-1]
			}
			q1, med, q3 := quartiles(vals)
			fmt.Fprintf(w, " %-27s", fmt.Sprintf("N=%d %s [%s, %s]", c, fmtV(med), fmtV(q1), fmtV(q3)))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	return nil
}

// benchMulti runs the two-objective Branin-Currin problem and reports the
// hypervolume of the observed Pareto front (reference point (18, 6)).
func benchMulti(w io.Writer, cfg config, meths []method) error {
	p := braninCurrinProblem()
	ref := [2]float64{18, 6}
	fmt.Fprintf(w, "== branin-currin (2 objectives): hypervolume of the observed front w.r.t. (18, 6), median [q1, q3]\n")
	for _, m := range meths {
		trs, err := runSeeds(cfg, p, m, 1)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%-8s", m.name)
		for _, c := range cfg.checkpoints {
			vals := make([]float64, len(trs))
			for i, tr := range trs {
				ys := make([][]float64, c)
				for j := range c {
					ys[j] = tr.hist[j].Y
				}
				vals[i] = hypervolume2D(ys, ref)
			}
			q1, med, q3 := quartiles(vals)
			fmt.Fprintf(w, " %-27s", fmt.Sprintf("N=%d %s [%s, %s]", c, fmtV(med), fmtV(q1), fmtV(q3)))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	return nil
}

// quartiles returns the 25th, 50th and 75th percentiles (linear
// interpolation between order statistics).
func quartiles(v []float64) (q1, med, q3 float64) {
	s := slices.Clone(v)
	sort.Float64s(s)
	q := func(p float64) float64 {
		if len(s) == 1 {
			return s[0]
		}
		h := p * float64(len(s)-1)
		lo := int(math.Floor(h))
		hi := min(lo+1, len(s)-1)
		return s[lo] + (h-float64(lo))*(s[hi]-s[lo])
	}
	return q(0.25), q(0.5), q(0.75)
}

func fmtV(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1000 || a < 0.001:
		return strconv.FormatFloat(v, 'e', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
}

// randomSearch draws points uniformly: numeric coordinates uniform (over
// the levels of a discrete one), categorical choices uniform.
type randomSearch struct {
	dims []tunables.Dim
	rng  *rand.Rand
}

func newRandomSearch(dims []tunables.Dim, seed int64) *randomSearch {
	return &randomSearch{dims: dims, rng: rand.New(rand.NewPCG(uint64(seed), 7))}
}

func (r *randomSearch) point() tunables.Point {
	x := make(tunables.Point, len(r.dims))
	for i, d := range r.dims {
		switch {
		case d.Kind == tunables.DimCategorical:
			x[i] = float64(r.rng.IntN(d.Choices))
		case d.Levels > 1:
			x[i] = float64(r.rng.IntN(d.Levels)) / float64(d.Levels-1)
		case d.Levels == 0:
			x[i] = r.rng.Float64()
		}
	}
	return x
}

func (r *randomSearch) Observe(...bayes.Observation) error { return nil }

func (r *randomSearch) Suggest(k int, _ []tunables.Point) ([]tunables.Point, error) {
	out := make([]tunables.Point, k)
	for i := range out {
		out[i] = r.point()
	}
	return out, nil
}
