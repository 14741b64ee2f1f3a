package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/tunables"
)

// The local refinement (-refine): the noise-aware GP searches for
// N − L − k·M evaluations; then L evaluations of a space-filling local
// design around its posterior-mean incumbent (stages rounds, each
// re-centred on the minimiser of the posterior mean, the box shrunk by
// half), the minimiser of the posterior mean in the box (the GP as a local
// response surface, averaging the noise of every nearby measurement), and
// a confirmation of that minimiser and the k−1 best observed points
// (posterior mean), M re-runs each, interleaved; the reported answer is
// the candidate with the lowest posterior mean after the re-runs: a
// configuration the confirmation measured.
type refineCfg struct {
	design int     // L, as a share of the budget when < 1 (design=0.2)
	frac   float64 // L / N when design is given as a share
	k      int     // candidates confirmed (the minimiser first)
	m      int     // confirmation rounds (0: round(N/20), as confirm)
	radius float64 // box half-width in lengthscales
	kappa  float64 // minimise μ + κσ
	stages int
	local  bool // the minimiser of a local GP (MeanMinimizer's local)
	// staged: the staged refinement (-refine staged; noise_h.go)
	staged bool
	basin  bool // staged-basin: the basin check first (noise_b.go)
}

func parseRefine(s string) (refineCfg, error) {
	c := refineCfg{frac: 0.2, k: 2, radius: 0.5, stages: 1}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" || kv == "on" {
			continue
		}
		if kv == "staged" {
			c = stagedRefineCfg()
			continue
		}
		if kv == "staged-basin" {
			c = stagedBasinCfg() // noise_b.go
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return c, fmt.Errorf("-refine: want key=value, got %q", kv)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return c, fmt.Errorf("-refine: %s: %q is not a number >= 0", k, v)
		}
		switch k {
		case "design":
			if f < 1 {
				c.frac, c.design = f, 0
			} else {
				c.design, c.frac = int(f), 0
			}
		case "k":
			c.k = max(1, int(f))
		case "m":
			c.m = int(f)
		case "radius":
			c.radius = f
		case "kappa":
			c.kappa = f
		case "stages":
			c.stages = max(1, int(f))
		case "local":
			c.local = f > 0
		default:
			return c, fmt.Errorf("-refine: unknown key %q (design, k, m, radius, kappa, stages, local)", k)
		}
	}
	return c, nil
}

// split returns the design size L and the rounds M at budget n.
func (c refineCfg) split(n int) (int, int) {
	l := c.design
	if c.frac > 0 {
		l = int(math.Round(c.frac * float64(n)))
	}
	m := c.m
	if m == 0 {
		m = confirmRounds(n)
	}
	return l, m
}

func (c refineCfg) String() string {
	if c.basin {
		return basinString(c) // noise_b.go
	}
	if c.staged {
		return fmt.Sprintf("staged: design=%v k=%d m=%d, %d stages from radius %g", c.frac, c.k, c.m, bayes.StagedStages, bayes.StagedRadius)
	}
	return fmt.Sprintf("design=%v k=%d m=%d radius=%g kappa=%g stages=%d local=%v", max(float64(c.design), c.frac), c.k, c.m, c.radius, c.kappa, c.stages, c.local)
}

// refineRun returns the true values of the reported configuration, of the
// posterior-mean minimiser before its confirmation, and the lowest true
// value among the configurations measured.
func refineRun(p problem, rc refineCfg, sigma float64, seed int64, budget int) (float64, float64, float64, error) {
	if rc.basin && basinRestart > 0 {
		return restartRun(p, rc, sigma, seed, budget) // noise_b.go
	}
	if rc.basin && basinTwin > 0 {
		return twinRun(p, rc, sigma, seed, budget) // noise_b.go
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e6f697365))
	truth := func(x tunables.Point) float64 { return p.f(x)[0] }
	o, err := bayes.New(p.dims, bayes.Options{Seed: seed, MaxTrials: budget, NRandomInit: basinInit(rc)}) // noise_b.go
	if err != nil {
		return 0, 0, 0, err
	}
	if err := lsPriorSet(o, len(p.dims)); err != nil { // noise_ls.go
		return 0, 0, 0, err
	}
	o.SetNoise(nil, true)
	noiseLocalSet(o) // -noise-search composes with -refine
	if err := noiseKernelSet(o, len(p.dims)); err != nil {
		return 0, 0, 0, err
	}
	l, m := rc.split(budget)
	search := budget - l - rc.k*m
	if search < 10 {
		return 0, 0, 0, fmt.Errorf("-refine %v leaves %d search evaluations of %d", rc, search, budget)
	}
	bestTrue := math.Inf(1)
	measure := func(x tunables.Point) error {
		t := truth(x)
		bestTrue = min(bestTrue, t)
		return o.Observe(bayes.Observation{X: x, Y: []float64{noisy(t, sigma, rng)}})
	}
	next := basinSearch(o, rc) // noise_b.go: o.Suggest unless -basin-early
	for i := range search {
		x, err := next(i)
		if err != nil {
			return 0, 0, 0, err
		}
		if err := measure(x); err != nil {
			return 0, 0, 0, err
		}
		if err := noiseKernelStep(o, i+1, search); err != nil { // noise_n.go
			return 0, 0, 0, err
		}
	}
	if rc.staged {
		return stagedRun(o, rc, budget, search, measure, truth, func() float64 { return bestTrue }, func(x tunables.Point) { basinNote(p, sigma, seed, x) })
	}
	center := o.Ranked(1)[0]
	radius := rc.radius
	done := 0
	for s := range rc.stages {
		n := (l - done) / (rc.stages - s)
		pts, err := o.LocalDesign(center, n, radius)
		if err != nil {
			return 0, 0, 0, err
		}
		for _, x := range pts {
			if err := measure(x); err != nil {
				return 0, 0, 0, err
			}
		}
		done += n
		if center, err = o.MeanMinimizer(center, radius, rc.kappa, rc.local); err != nil {
			return 0, 0, 0, err
		}
		radius /= 2
	}
	pick, err := confirmPick(o, center, rc.k, m, budget, measure)
	if err != nil {
		return 0, 0, 0, err
	}
	basinNote(p, sigma, seed, pick) // noise_b.go
	return truth(pick), truth(center), bestTrue, nil
}

// benchNoiseRefine prints the local refinement's deployed regret per
// function and noise level (median [q1, q3] over the seeds) next to the
// naive and confirm methods of benchNoise (run again here unless
// baseline is false).
func benchNoiseRefine(w io.Writer, cfg config, probs []problem, sigmas []float64, rc refineCfg, baseline bool) error {
	l, m := rc.split(cfg.budget)
	fmt.Fprintf(w, "== noise, local refinement (%v): %d search + %d local design + %d×%d confirmation, median [q1, q3] over %d seeds\n",
		rc, cfg.budget-l-rc.k*m, l, rc.k, m, cfg.seeds)
	for _, p := range probs {
		t0 := time.Now()
		fmt.Fprintf(w, "%s (%d-D)\n", p.name, len(p.dims))
		for _, sg := range sigmas {
			out := make([]float64, cfg.seeds)
			mins := make([]float64, cfg.seeds)
			bests := make([]float64, cfg.seeds)
			errs := make([]error, cfg.seeds)
			eachSeed(cfg.workers, cfg.seeds, func(s int) {
				v, mn, b, err := refineRun(p, rc, sg, int64(noiseSeedOffset+s+1), cfg.budget)
				out[s], mins[s], bests[s], errs[s] = v-p.optimum, mn-p.optimum, b-p.optimum, err
			})
			for _, err := range errs {
				if err != nil {
					return err
				}
			}
			line := fmt.Sprintf("  %-5s refine %s  (minimiser %s; best measured %s)", fmt.Sprintf("%g%%", 100*sg), fmtQ(out), fmtQ(mins), fmtQ(bests))
			if refinePerSeed {
				line += "\n    per seed " + perSeed(out)
				line += "\n    minimiser per seed " + perSeed(mins) + "\n    best measured per seed " + perSeed(bests)
				line += basinLine(p, sg, cfg.seeds) // noise_b.go (-refine-basins)
			}
			if baseline {
				naive, _, err := noiseSeeds(cfg, p, "naive", sg)
				if err != nil {
					return err
				}
				conf, _, err := noiseSeeds(cfg, p, "confirm", sg)
				if err != nil {
					return err
				}
				_, nMed, _ := quartiles(naive)
				_, cMed, _ := quartiles(conf)
				_, rMed, _ := quartiles(out)
				line += fmt.Sprintf("  naive %s  confirm %s  naive/confirm %s  naive/refine %s", fmtQ(naive), fmtQ(conf), ratio(nMed, cMed), ratio(nMed, rMed))
			}
			fmt.Fprintln(w, line)
		}
		fmt.Fprintf(w, "  (%.0fs)\n", time.Since(t0).Seconds())
	}
	fmt.Fprintln(w)
	return nil
}

// confirmPick runs the confirmation after a refinement: center and the k-1
// best other points the model ranks (k candidates at most) are measured m
// times each, and the candidate the model then ranks first among them is
// the pick (center when none is ranked within len+budget).
func confirmPick(o *bayes.Optimizer, center tunables.Point, k, m, budget int, measure func(tunables.Point) error) (tunables.Point, error) {
	cands := []tunables.Point{center}
	keys := map[string]bool{fmt.Sprint(center): true}
	for _, c := range o.Ranked(k + 1) {
		if len(cands) < k && !keys[fmt.Sprint(c)] {
			cands = append(cands, c)
			keys[fmt.Sprint(c)] = true
		}
	}
	for range m {
		for _, c := range cands {
			if err := measure(c); err != nil {
				return nil, err
			}
		}
	}
	for _, x := range o.Ranked(len(cands) + budget) {
		if keys[fmt.Sprint(x)] {
			return x, nil
		}
	}
	return center, nil
}
