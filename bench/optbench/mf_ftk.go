// The learning-curve kernel in -mf (hyperband_mf.go): any gp-fid or
// gp-mfacq method followed by "-decay" runs the same GP with the
// freeze-thaw curve term along the fidelity (optimizers/bayes
// SetFidelityKernel("decay"), ftk.go), e.g. asha-gp-fid-min3-decay. This
// is what the scheduler does with fidelity kernel "decay".

package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/benchtune/bench/tunables"

	"github.com/benchtune/bench/optimizers/bayes"
)

// mfSplitDecay strips a trailing "-decay" from method m.
func mfSplitDecay(m string) (string, bool) {
	if base, ok := strings.CutSuffix(m, "-decay"); ok && base != "" {
		return base, true
	}
	return m, false
}

// mfSetDecay turns the curve term on in m's GP when decay is set.
func mfSetDecay(m *mfGPFid, decay bool) error {
	if !decay {
		return nil
	}
	return m.gp.SetFidelityKernel(bayes.FidelityKernelDecay)
}

// mfModelCheck measures the models themselves, independently of any
// schedule (-mf-model-check): per seed, 81 random configurations run at
// the problem's lowest fidelity r₀ = 3 (min3's), the best third of them
// (by the observed value) continued to 9r₀... up to full fidelity, as
// successive halving's rungs would (81, 27, 9, 3 configurations at
// 3, 9, 27, 81 on lcnet); then 60 held-out configurations run at r₀ only,
// and 100 not run at all. Both GPs (stationary and decay kernels) are fed
// the same observations, and the rank (Spearman) correlation of their
// predicted full-fidelity means (PredictFull) with the true full-fidelity
// values is reported for the held-out configurations run at r₀ (what
// promotions by the model rank), for the best tenth of those by the true
// value, and for the configurations not run (what the acquisition ranks),
// plus the regret of the configuration each model ranks first among the
// 60 (its true value minus the best of theirs). The "observed" row ranks
// the 60 by their own result at r₀, without a model.
func mfModelCheck(w io.Writer, cfg config, p mfProblem) error {
	const (
		n0, nHeld, nNew = 81, 60, 100
		lo              = 3.0
	)
	type res struct{ rho [3][4]float64 } // stationary, decay, the observed value at lo
	out := make([]res, cfg.seeds)
	err := forSeeds(cfg, func(s int) error {
		seed := int64(s + 1)
		rng := rand.New(rand.NewPCG(uint64(seed), 77))
		rs := newRandomSearch(p.dims, seed)
		type ob struct {
			x tunables.Point
			r float64
			y float64
		}
		var obs []ob
		cur := make([]tunables.Point, n0)
		for i := range cur {
			cur[i] = rs.point()
		}
		for r := lo; r <= p.max+1e-9 && len(cur) > 0; r *= 3 {
			ys := make([]float64, len(cur))
			for i, x := range cur {
				ys[i] = p.observe(x, r, rng)
				obs = append(obs, ob{x, r, ys[i]})
			}
			idx := make([]int, len(cur))
			for i := range idx {
				idx[i] = i
			}
			slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(ys[a], ys[b]) })
			next := make([]tunables.Point, 0, len(cur)/3)
			for _, i := range idx[:len(cur)/3] {
				next = append(next, cur[i])
			}
			cur = next
		}
		held := make([]tunables.Point, nHeld)
		heldY := make([]float64, nHeld)
		for i := range held {
			held[i] = rs.point()
			heldY[i] = p.observe(held[i], lo, rng)
			obs = append(obs, ob{held[i], lo, heldY[i]})
		}
		fresh := make([]tunables.Point, nNew)
		for i := range fresh {
			fresh[i] = rs.point()
		}
		for k, decay := range []bool{false, true, false} {
			m, err := newGPFid(p, seed, lo)
			if err != nil {
				return err
			}
			if err := mfSetDecay(m, decay); err != nil {
				return err
			}
			for _, o := range obs {
				if err := m.observe(o.x, 0, o.r, o.y); err != nil {
					return err
				}
			}
			rank := func(xs []tunables.Point) ([]float64, []float64, error) {
				pts := make([]tunables.Point, len(xs))
				truth := make([]float64, len(xs))
				for i, x := range xs {
					pts[i], truth[i] = m.point(x), p.truth(x)
				}
				pred, _, ok, err := m.gp.PredictFull(pts, false)
				if err != nil || !ok {
					return nil, nil, fmt.Errorf("PredictFull: ok %v, %v", ok, err)
				}
				mu := make([]float64, len(pred))
				for i, q := range pred {
					mu[i] = q.Mean
				}
				return mu, truth, nil
			}
			mu, truth, err := rank(held)
			if err != nil {
				return err
			}
			if k == 2 {
				mu = heldY // no model: the held-out configurations' own results
			}
			out[s].rho[k][0] = spearman(mu, truth)
			idx := make([]int, len(truth))
			for i := range idx {
				idx[i] = i
			}
			slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(truth[a], truth[b]) })
			var a, b []float64
			for _, i := range idx[:max(3, len(idx)/10)] {
				a, b = append(a, mu[i]), append(b, truth[i])
			}
			out[s].rho[k][1] = spearman(a, b)
			first := 0
			for i := range mu {
				if mu[i] < mu[first] {
					first = i
				}
			}
			out[s].rho[k][3] = truth[first] - truth[idx[0]]
			mu, truth, err = rank(fresh)
			if err != nil {
				return err
			}
			out[s].rho[k][2] = spearman(mu, truth)
			if k == 2 {
				out[s].rho[k][2] = math.NaN()
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "== -mf-model-check on %s: %d seeds; %d configurations from %g by successive halving (η 3) to %g, %d held out at %g, %d not run\n",
		p.name, cfg.seeds, n0, lo, p.max, nHeld, lo, nNew)
	fmt.Fprintf(w, "kernel      Spearman(held-out at %g)  best tenth  not run  regret of the top-ranked held-out  (medians over seeds [min, max])\n", lo)
	for k, name := range []string{"stationary", "decay", "observed"} {
		var cols [4][]float64
		for _, r := range out {
			for j := range 4 {
				cols[j] = append(cols[j], r.rho[k][j])
			}
		}
		var parts []string
		for j := range 4 {
			c := slices.Clone(cols[j])
			slices.Sort(c)
			if math.IsNaN(c[0]) {
				parts = append(parts, "—")
				continue
			}
			parts = append(parts, fmt.Sprintf("%.3f [%.3f, %.3f]", median(c), c[0], c[len(c)-1]))
		}
		fmt.Fprintf(w, "%-11s %s\n", name, strings.Join(parts, "  "))
	}
	fmt.Fprintln(w)
	return nil
}

// forSeeds runs f for seeds 0..cfg.seeds-1, cfg.workers at a time, and
// returns the first error.
func forSeeds(cfg config, f func(s int) error) error {
	errs := make([]error, cfg.seeds)
	eachSeed(cfg.workers, cfg.seeds, func(s int) { errs[s] = f(s) })
	return errors.Join(errs...)
}

// median of sorted v.
func median(v []float64) float64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
