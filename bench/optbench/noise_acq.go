package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/tunables"
)

// -acq-diag (a diagnostic, hartmann6 only): does the acquisition's
// optimiser, not the model, miss Hartmann6's narrow global basin? The
// noise-free GP of the noise benchmark (-noise-methods noisefree, with
// -ls-prior if given) runs as usual; after each model suggestion c,
// bayes.Optimizer.AcqNear gives the log expected improvement at c and the
// highest one its local ascent reaches from the global optimum x*. A step
// is "missed" when that ascent ends in the global basin (a compass
// descent on the true function from it reaches f*), 0.05 or more from c,
// with a log EI higher than c's by acqDiagMargin: the model preferred a
// point of the global basin to the one suggested, and the candidates did
// not find it. "First in basin" is the first evaluation below hartDeep.

// acqDiagMargin: a missed step's ascent from x* must beat the suggestion
// by this much log EI (10%), at a point 0.05 or more from it.
const acqDiagMargin = 0.1

// hartDeep: an evaluation below every local minimum of Hartmann6 but the
// global one (−3.2032, 0.1192 above f*) is deep in the global basin.
const hartDeep = -3.21

// dist is the Euclidean distance of two points of the unit box.
func dist(a, b tunables.Point) float64 {
	s := 0.0
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

// hartXStar is Hartmann6's global minimiser.
var hartXStar = tunables.Point{0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573}

// acqDiag is -acq-diag.
var acqDiag bool

// acqDiagSeed is one seed's diagnostic.
type acqDiagSeed struct {
	regret     float64 // of the best observation at the end
	firstIn    int     // first evaluation (1-based) below hartDeep, 0: none
	missed     int     // model steps with a better value reachable in the global basin
	firstMiss  int     // the first such step (1-based evaluation), 0: none
	maxMargin  float64 // the largest log EI margin of a missed step
	modelSteps int
}

// inGlobalBasin says whether a compass descent on p's true function from x
// reaches the global minimum.
func inGlobalBasin(p problem, x tunables.Point) bool {
	return trueDescent(p, x)-p.optimum < 1e-3 // noise_b.go
}

func acqDiagRun(p problem, seed int64, budget int) (acqDiagSeed, error) {
	var r acqDiagSeed
	o, err := bayes.New(p.dims, bayes.Options{Seed: seed, MaxTrials: budget})
	if err != nil {
		return r, err
	}
	if err := lsPriorSet(o, len(p.dims)); err != nil { // noise_ls.go
		return r, err
	}
	best := math.Inf(1)
	for i := range budget {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			return r, err
		}
		c := pts[0]
		if _, ok := o.Lengthscales(); ok {
			r.modelSteps++
			atC, near, reached, err := o.AcqNear(c, hartXStar)
			if err != nil {
				return r, err
			}
			if near > atC+acqDiagMargin && dist(reached, c) > 0.05 && inGlobalBasin(p, reached) {
				r.missed++
				r.maxMargin = max(r.maxMargin, near-atC)
				if r.firstMiss == 0 {
					r.firstMiss = i + 1
				}
			}
		}
		y := p.f(c)[0]
		if r.firstIn == 0 && y < hartDeep {
			r.firstIn = i + 1
		}
		best = min(best, y)
		if err := o.Observe(bayes.Observation{X: c, Y: []float64{y}}); err != nil {
			return r, err
		}
	}
	r.regret = best - p.optimum
	return r, nil
}

// benchAcqDiag prints the diagnostic per seed and a summary.
func benchAcqDiag(w io.Writer, cfg config, probs []problem) error {
	for _, p := range probs {
		if p.name != "hartmann6" {
			return fmt.Errorf("-acq-diag: hartmann6 only, not %s", p.name)
		}
		res := make([]acqDiagSeed, cfg.seeds)
		errs := make([]error, cfg.seeds)
		eachSeed(cfg.workers, cfg.seeds, func(s int) {
			res[s], errs[s] = acqDiagRun(p, int64(noiseSeedOffset+s+1), cfg.budget)
		})
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "acq-diag %s: noise-free GP, %d evaluations, seeds %d-%d: per seed regret, first evaluation below %g (deep in the global basin), model steps whose ascent from x* beat the suggestion in the global basin (first, largest log EI margin)\n",
			p.name, cfg.budget, noiseSeedOffset+1, noiseSeedOffset+cfg.seeds, hartDeep)
		var hit, missSeeds, missWithMissed, hitWithMissed, neverIn int
		var lines []string
		for s, r := range res {
			lines = append(lines, fmt.Sprintf("  seed %d: regret %s, first in basin %d, missed %d/%d (first %d, margin %.2f)",
				noiseSeedOffset+s+1, fmtV(r.regret), r.firstIn, r.missed, r.modelSteps, r.firstMiss, r.maxMargin))
			if r.regret < 1e-3 {
				hit++
				if r.missed > 0 {
					hitWithMissed++
				}
			} else {
				missSeeds++
				if r.missed > 0 {
					missWithMissed++
				}
				if r.firstIn == 0 {
					neverIn++
				}
			}
		}
		fmt.Fprintln(w, strings.Join(lines, "\n"))
		fmt.Fprintf(w, "  global basin reached (regret < 1e-3): %d of %d; of the %d misses, %d never evaluated a point of the global basin and %d had a missed step; of the hits, %d had a missed step\n",
			hit, len(res), missSeeds, neverIn, missWithMissed, hitWithMissed)
	}
	return nil
}

// -acq-effort R,S[,G] (an experiment): every GP of the noise benchmark
// maximises its acquisition from R random candidates (default 256),
// refines the S best candidates (default 3) and the G best random ones
// (global starts, default 0), bayes.Optimizer.SetAcqEffort.
var acqEffortArg string

func parseAcqEffort(s string) (random, starts, global int, err error) {
	if strings.TrimSpace(s) == "" {
		return 0, 0, 0, nil
	}
	parts := strings.Split(s, ",")
	var v [3]int
	ok := len(parts) == 2 || len(parts) == 3
	for i, f := range parts {
		if !ok {
			break
		}
		n, e := strconv.Atoi(strings.TrimSpace(f))
		ok = e == nil && (n >= 1 || (i == 2 && n == 0))
		v[i%3] = n
	}
	if !ok {
		return 0, 0, 0, fmt.Errorf("-acq-effort: want R,S[,G] (random candidates, refined starts, both positive; G global starts), got %q", s)
	}
	return v[0], v[1], v[2], nil
}

// acqEffortCheck rejects a bad -acq-effort and names it in the output.
func acqEffortCheck(w io.Writer) error {
	r, s, g, err := parseAcqEffort(acqEffortArg)
	if err != nil || r == 0 {
		return err
	}
	if basinRestart > 0 || basinTwin > 0 {
		return fmt.Errorf("-acq-effort does not combine with -basin-restart or -basin-twin")
	}
	fmt.Fprintf(w, "acquisition optimiser (every GP): %d random candidates, %d refined, %d best random ones refined too\n", r, s, g)
	return nil
}

func acqEffortSet(o *bayes.Optimizer) error {
	r, s, g, err := parseAcqEffort(acqEffortArg)
	if err != nil || r == 0 {
		return err
	}
	return o.SetAcqEffort(r, s, g)
}
