// Bounds for the multi-fidelity benchmark (-mf-bound M1,M2,... with -mf
// P): what could an idealised method reach on problem P, and where does a
// real method's budget go? For each seed (full GP's target as in -mf) and
// each method M (any -mf method except dyn-…):
//
//   - M itself, and M with **oracle promotions** (M-oracle: the planner
//     ranks every rung by the configuration's true full-fidelity value
//     instead of the observed one; the proposer still learns from the
//     observed values): the ratio an ideal promotion rule reaches with
//     M's schedule;
//   - **the stream** of configurations M proposed: the best true
//     full-fidelity value among those proposed by a fifth of the budget
//     and by its end, and the first one that beats the target (its
//     position n in the stream and the cost spent when it was proposed).
//     Two idealised costs follow: an **ideal screen** that looks at each
//     configuration of the stream at the lowest rung r₀ only and knows
//     which one to run on (n·r₀ + the rest of its curve), and an **ideal
//     chooser** that runs the good one on as soon as M proposes it (the
//     cost spent then + the rest of its curve); both take M's stream as
//     given, although a different schedule would feed M's GP differently;
//   - where M's budget goes: the fraction spent at each rung, on
//     configurations never promoted past their first rung, and the
//     full-fidelity results made, by a fifth of the budget; the rank
//     (Spearman) correlation of the observed value with the true
//     full-fidelity value at each rung, over the configurations M ran
//     there (not random ones: M's own, which are better than random);
//   - **random proposals with an ideal screen**: from the fraction q of
//     200,000 random configurations whose true full-fidelity value beats
//     the target, the expected cost r₀/q + (max − r₀) of screening random
//     configurations at r₀ with perfect ranking and running the first good
//     one to the end (continued), for r₀ = 1, 3, 9.
//
// Methods also take the suffix -etaN (reduction factor N instead of 3),
// before -oracle: e.g. asha-gp-fid-min3-eta4-oracle.

package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/benchtune/bench/tunables"
)

// mfSeedOffset shifts the -mf seeds: seeds offset+1 .. offset+N
// (-mf-seed-offset, for held-out seeds).
var mfSeedOffset int

// mfJob is one finished run of mfRun.
type mfJob struct {
	key, rung        int
	r, start, end, y float64
	x                tunables.Point
}

// mfBoundOpt are the suffixes of mf_bound.go.
type mfBoundOpt struct {
	oracle bool
	etaV   int // 0: the default
}

func (o mfBoundOpt) eta(def int) int {
	if o.etaV > 0 {
		return o.etaV
	}
	return def
}

// rank is the value the planner ranks a result by: the observed one, or
// with -oracle the configuration's true full-fidelity value.
func (o mfBoundOpt) rank(p mfProblem, x tunables.Point, y float64) float64 {
	if o.oracle {
		return p.truth(x)
	}
	return y
}

// mfSplitBound strips the trailing -oracle and -etaN (in this order from
// the end) from method m.
func mfSplitBound(m string) (string, mfBoundOpt) {
	var o mfBoundOpt
	if base, ok := strings.CutSuffix(m, "-oracle"); ok && base != "" {
		m, o.oracle = base, true
	}
	if i := strings.LastIndex(m, "-eta"); i > 0 {
		if v, err := strconv.Atoi(m[i+4:]); err == nil && v >= 2 && v <= 9 {
			m, o.etaV = m[:i], v
		}
	}
	return m, o
}

// mfSpentAt is the cost the runs of jobs had spent by clock time t.
func mfSpentAt(jobs []mfJob, t float64) float64 {
	s := 0.0
	for _, j := range jobs {
		s += max(0, min(t, j.end)-j.start)
	}
	return s
}

// mfClockAt is the clock time at which jobs had spent cost c (bisection).
func mfClockAt(jobs []mfJob, c float64) float64 {
	lo, hi := 0.0, 0.0
	for _, j := range jobs {
		hi = max(hi, j.end)
	}
	for range 60 {
		mid := (lo + hi) / 2
		if mfSpentAt(jobs, mid) < c {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// mfBoundSeed is one seed's figures for one method.
type mfBoundSeed struct {
	ratio, oracle        float64 // -mf ratios of M and M-oracle
	best5, bestAll       float64 // best true value proposed by limit/5, by limit
	n                    int     // position of the first good proposal (0: none)
	screen, chooser      float64 // idealised ratios from the stream
	rungFrac             []float64
	unpromoted, fullRuns float64 // by limit/5
	rho                  []float64
}

func mfBoundOne(p mfProblem, m string, cont bool, seed int64, limit, target float64) (mfBoundSeed, error) {
	var b mfBoundSeed
	tr, err := mfRun(p, m, cont, seed, limit)
	if err != nil {
		return b, err
	}
	to, err := mfRun(p, m+"-oracle", cont, seed, limit)
	if err != nil {
		return b, err
	}
	ratio := func(t mfTrace) float64 {
		if c := t.reach(target); !math.IsInf(c, 1) {
			return limit / c
		}
		return 0
	}
	b.ratio, b.oracle = ratio(tr), ratio(to)
	jobs := tr.jobs
	// The stream: configurations by their first start.
	type prop struct {
		t     float64
		truth float64
	}
	first := map[int]prop{}
	r0 := math.Inf(1)
	maxRung := 0
	for _, j := range jobs {
		r0 = min(r0, j.r)
		maxRung = max(maxRung, j.rung)
		if f, ok := first[j.key]; !ok || j.start < f.t {
			first[j.key] = prop{j.start, p.truth(j.x)}
		}
	}
	stream := make([]prop, 0, len(first))
	for _, f := range first {
		stream = append(stream, f)
	}
	sort.Slice(stream, func(a, c int) bool { return stream[a].t < stream[c].t })
	t5 := mfClockAt(jobs, limit/5)
	b.best5, b.bestAll = math.Inf(1), math.Inf(1)
	rest := p.max - r0
	if !cont {
		rest = p.max
	}
	for i, s := range stream {
		if s.t <= t5 {
			b.best5 = min(b.best5, s.truth)
		}
		b.bestAll = min(b.bestAll, s.truth)
		if b.n == 0 && s.truth <= target+1e-12 {
			b.n = i + 1
			b.screen = limit / (float64(b.n)*r0 + rest)
			b.chooser = limit / (mfSpentAt(jobs, s.t) + rest)
		}
	}
	// Where the budget goes by a fifth of it.
	b.rungFrac = make([]float64, maxRung+1)
	top := map[int]int{}   // highest rung reached by t5
	start := map[int]int{} // first rung
	cost := map[int]float64{}
	total := 0.0
	for _, j := range jobs {
		c := max(0, min(t5, j.end)-j.start)
		if c == 0 {
			continue
		}
		total += c
		b.rungFrac[j.rung] += c
		cost[j.key] += c
		if r, ok := start[j.key]; !ok || j.rung < r {
			start[j.key] = j.rung
		}
		top[j.key] = max(top[j.key], j.rung)
		if j.rung == maxRung && j.end <= t5 {
			b.fullRuns++
		}
	}
	for k, c := range cost {
		if top[k] == start[k] {
			b.unpromoted += c
		}
	}
	if total > 0 {
		for i := range b.rungFrac {
			b.rungFrac[i] /= total
		}
		b.unpromoted /= total
	}
	// Rank correlation at each rung over the whole run.
	b.rho = make([]float64, maxRung+1)
	for k := range b.rho {
		var ys, ts []float64
		for _, j := range jobs {
			if j.rung == k {
				ys, ts = append(ys, j.y), append(ts, p.truth(j.x))
			}
		}
		b.rho[k] = math.NaN()
		if len(ys) >= 5 {
			b.rho[k] = spearman(ys, ts)
		}
	}
	return b, nil
}

// benchMFBound is -mf-bound.
func benchMFBound(w io.Writer, cfg config, p mfProblem, methods []string, cont bool) error {
	limit := float64(p.budget) * p.max
	promo := "re-run from scratch"
	if cont {
		promo = "continued"
	}
	fmt.Fprintf(w, "== -mf-bound on %s: fidelity %g..%g, promotions %s; %d runners; full GP: %d trials × %g = %g; seeds %d..%d\n",
		p.name, p.min, p.max, promo, mfRunners, p.budget, p.max, limit, mfSeedOffset+1, mfSeedOffset+cfg.seeds)
	// Random configurations' true values, sorted, for the random bound.
	rs := newRandomSearch(p.dims, 991)
	rnd := make([]float64, 200000)
	for i := range rnd {
		rnd[i] = p.truth(rs.point())
	}
	slices.Sort(rnd)
	targets := make([]float64, cfg.seeds)
	out := make([][]mfBoundSeed, cfg.seeds)
	err := forSeeds(cfg, func(s int) error {
		seed := int64(s + 1 + mfSeedOffset)
		full, err := mfFullGP(p, seed)
		if err != nil {
			return err
		}
		targets[s] = full.final()
		for _, m := range methods {
			b, err := mfBoundOne(p, m, cont, seed, limit, targets[s])
			if err != nil {
				return fmt.Errorf("%s seed %d: %w", m, seed, err)
			}
			out[s] = append(out[s], b)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rand0 := []float64{1, 3, 9}
	randRatio := make([][]float64, len(rand0))
	var qs []float64
	for s, t := range targets {
		q := float64(sort.SearchFloat64s(rnd, t+1e-12)) / float64(len(rnd))
		qs = append(qs, q)
		line := fmt.Sprintf("seed %2d: target %s, random configurations beating it %.4f%%; ideal random screen at 1/3/9:", s+1+mfSeedOffset, fmtV(t), 100*q)
		for i, r := range rand0 {
			v := 0.0
			if q > 0 {
				v = limit / (r/q + p.max - r)
			}
			randRatio[i] = append(randRatio[i], v)
			line += fmt.Sprintf(" %.2f×", v)
		}
		fmt.Fprintln(w, line)
	}
	_, mq, _ := quartiles(qs)
	line := fmt.Sprintf("random configurations beating the target: median %.4f%%; ideal random screen (perfect ranking at r₀, the first good one continued to %g), median ratio:", 100*mq, p.max)
	for i, r := range rand0 {
		_, v, _ := quartiles(randRatio[i])
		line += fmt.Sprintf(" r₀ %g %.2f×", r, v)
	}
	fmt.Fprintln(w, line)
	for i, m := range methods {
		fmt.Fprintf(w, "-- %s\n", m)
		var ratio, oracle, screen, chooser, best5, bestAll, unprom, fullRuns, ns []float64
		var fracs, rhos [][]float64
		for s := range targets {
			b := out[s][i]
			fmt.Fprintf(w, "seed %2d: ratio %.2f×, oracle promotions %.2f×; best proposed by %g %s, by %g %s; first good proposal #%d, ideal screen %.2f×, ideal chooser %.2f×; by %g: unpromoted %.0f%%, full runs %.0f, per rung %s\n",
				s+1+mfSeedOffset, b.ratio, b.oracle, limit/5, fmtV(b.best5), limit, fmtV(b.bestAll), b.n, b.screen, b.chooser, limit/5, 100*b.unpromoted, b.fullRuns, fmtFracs(b.rungFrac))
			ratio, oracle = append(ratio, b.ratio), append(oracle, b.oracle)
			screen, chooser = append(screen, b.screen), append(chooser, b.chooser)
			best5, bestAll = append(best5, b.best5), append(bestAll, b.bestAll)
			unprom, fullRuns = append(unprom, b.unpromoted), append(fullRuns, b.fullRuns)
			if b.n > 0 {
				ns = append(ns, float64(b.n))
			}
			for k, f := range b.rungFrac {
				if k >= len(fracs) {
					fracs = append(fracs, nil)
					rhos = append(rhos, nil)
				}
				fracs[k] = append(fracs[k], f)
				if !math.IsNaN(b.rho[k]) {
					rhos[k] = append(rhos[k], b.rho[k])
				}
			}
		}
		med := func(v []float64) float64 {
			if len(v) == 0 {
				return math.NaN()
			}
			_, m, _ := quartiles(v)
			return m
		}
		good5 := 0
		for s, v := range best5 {
			if v <= targets[s]+1e-12 {
				good5++
			}
		}
		var fr, rh []string
		for k := range fracs {
			fr = append(fr, fmt.Sprintf("%.0f%%", 100*med(fracs[k])))
			rh = append(rh, fmt.Sprintf("%.2f", med(rhos[k])))
		}
		fmt.Fprintf(w, "%s: median ratio %.2f×, with oracle promotions %.2f×; stream: a configuration beating the target proposed by %g in %d/%d seeds, by %g in %d/%d (median position %.0f), ideal screen %.2f×, ideal chooser %.2f×; median best proposed by %g %s, by %g %s; by %g: %.0f%% of the cost on configurations never promoted, %.0f full runs, per rung %s; Spearman observed/true per rung %s\n",
			m, med(ratio), med(oracle), limit/5, good5, len(targets), limit, len(ns), len(targets), med(ns), med(screen), med(chooser),
			limit/5, fmtV(med(best5)), limit, fmtV(med(bestAll)), limit/5, 100*med(unprom), med(fullRuns), strings.Join(fr, " "), strings.Join(rh, " "))
	}
	fmt.Fprintln(w)
	return nil
}

func fmtFracs(f []float64) string {
	var s []string
	for _, v := range f {
		s = append(s, fmt.Sprintf("%.0f%%", 100*v))
	}
	return strings.Join(s, " ")
}
