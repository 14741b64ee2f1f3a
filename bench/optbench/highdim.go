package main

import (
	"fmt"
	"io"
	"math"
	"syscall"
	"time"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/tunables"
)

// The many-dimensions benchmark (-highdim): Ackley-20 with batches of 4,
// Branin embedded in 30-D, and the suggestion latency at 500 observations
// in 20-D, for the GP with trust regions (bench's default from 20
// dimensions up) and without (the global GP-EI).

func ackleyProblem(d int) problem {
	names := make([]string, d)
	init := make(tunables.Point, d)
	for i := range names {
		names[i] = fmt.Sprintf("x%d", i+1)
		init[i] = 0.5
	}
	return problem{
		name: fmt.Sprintf("ackley%d", d), optimum: 0, box: fmt.Sprintf("[-5,10]^%d", d),
		dims: continuous(names...),
		f: func(p tunables.Point) []float64 {
			s1, s2 := 0.0, 0.0
			for _, u := range p {
				x := scale(u, -5, 10)
				s1 += x * x
				s2 += math.Cos(2 * math.Pi * x)
			}
			n := float64(len(p))
			return []float64{-20*math.Exp(-0.2*math.Sqrt(s1/n)) - math.Exp(s2/n) + 20 + math.E}
		},
		initial: init,
	}
}

// braninEmbedded is Branin on the first two of d dimensions (the others
// have no effect).
func braninEmbedded(d int) problem {
	names := make([]string, d)
	init := make(tunables.Point, d)
	for i := range names {
		names[i] = fmt.Sprintf("x%d", i+1)
		init[i] = 0.5
	}
	return problem{
		name: fmt.Sprintf("branin-in-%dd", d), optimum: 0.397887, box: fmt.Sprintf("[-5,10]×[0,15] in [0,1]^%d", d),
		dims: continuous(names...),
		f: func(p tunables.Point) []float64 {
			return []float64{branin(scale(p[0], -5, 10), scale(p[1], 0, 15))}
		},
		initial: init,
	}
}

func trMethod(name string, tr int) method {
	return method{name, func(p problem, seed int64, budget int, defaults bool) (algorithm, error) {
		return bayes.New(p.dims, bayes.Options{Seed: seed, MaxTrials: budget, TrustRegion: tr})
	}}
}

func benchHighDim(w io.Writer, cfg config, ackleyBudget, braninBudget int, names []string) error {
	var meths []method
	for _, name := range names {
		switch name {
		case "gp-tr":
			meths = append(meths, trMethod("gp-tr", 1))
		case "gp":
			meths = append(meths, trMethod("gp", -1))
		default:
			return fmt.Errorf("-hdmethods: unknown method %q (known: gp-tr, gp)", name)
		}
	}
	for _, c := range []struct {
		p      problem
		budget int
		k      int
	}{{ackleyProblem(20), ackleyBudget, 4}, {braninEmbedded(30), braninBudget, 1}} {
		fmt.Fprintf(w, "== %s (%d-D, %s, optimum %g), batches of %d, best value after %d evaluations, median [q1, q3] over %d seeds\n",
			c.p.name, len(c.p.dims), c.p.box, c.p.optimum, c.k, c.budget, cfg.seeds)
		meds := map[string]float64{}
		for _, m := range meths {
			t0 := time.Now()
			sub := cfg
			sub.budget = c.budget
			trs, err := runSeeds(sub, c.p, m, c.k)
			if err != nil {
				return err
			}
			vals := make([]float64, len(trs))
			for i, tr := range trs {
				vals[i] = tr.best[len(tr.best)-1]
			}
			_, meds[m.name], _ = quartiles(vals)
			fmt.Fprintf(w, "%-7s %-32s %.1fs/run\n", m.name, fmtQ(vals), time.Since(t0).Seconds()/float64(cfg.seeds)*float64(cfg.workers))
		}
		if len(meds) == 2 {
			fmt.Fprintf(w, "gp/gp-tr median ratio: %s\n", ratio(meds["gp"]-c.p.optimum, meds["gp-tr"]-c.p.optimum))
		}
		fmt.Fprintln(w)
	}
	// Latency: Suggest(1) after 500 observations in 20-D.
	p := ackleyProblem(20)
	for _, m := range meths {
		a, err := m.make(p, 1, 600, false)
		if err != nil {
			return err
		}
		rs := newRandomSearch(p.dims, 1)
		var obs []bayes.Observation
		for range 500 {
			x := rs.point()
			obs = append(obs, bayes.Observation{X: x, Y: p.f(x)})
		}
		if err := a.Observe(obs...); err != nil {
			return err
		}
		var ts, cpu []float64
		// The process's CPU time too (nothing else runs in it now): on a
		// loaded machine the wall time measures the load as much as the
		// optimizer.
		for range 11 {
			t0, c0 := time.Now(), processCPU()
			pts, err := a.Suggest(1, nil)
			if err != nil {
				return err
			}
			ts = append(ts, float64(time.Since(t0).Microseconds())/1000)
			cpu = append(cpu, (processCPU()-c0).Seconds()*1000)
			if err := a.Observe(bayes.Observation{X: pts[0], Y: p.f(pts[0])}); err != nil {
				return err
			}
		}
		_, med, _ := quartiles(ts[1:])
		_, cmed, _ := quartiles(cpu[1:])
		fmt.Fprintf(w, "suggest latency at 500 observations in 20-D, %s: first (with the fit) %.0f ms, then median %.1f ms (CPU time: first %.0f ms, then median %.1f ms)\n",
			m.name, ts[0], med, cpu[0], cmed)
	}
	fmt.Fprintln(w)
	return nil
}

// processCPU is the CPU time used by this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
