// Promotion rules in -mf (hyperband_mf.go) other than ASHA's: a method
// followed by any of the suffixes below (anywhere after its base name;
// e.g. asha-gp-fid-min3-eta9-first3) decides its promotions with
// mfPromoter instead of the planner's Promotion. Why: the bounds
// (-mf-bound, mf_bound.go) showed that on lcnet ASHA spends most of the
// first fifth of the budget on promotions made from the few results a rung
// has early on, while the GP needs cheap results to point at good
// configurations; a larger η (fewer promotions) helped. These rules make
// fewer or later promotions in other ways:
//
//   - -waitK: a rung of a bracket promotes nothing until it holds at least
//     K·η results (then its top ⌊n/η⌋ as usual; K = 1 is ASHA's own rule,
//     which promotes once the rung holds η results);
//   - -firstK: the same, for the bracket's first rung only (the rungs
//     above keep ASHA's rule), so that the full-fidelity runs of
//     configurations that got past the first rung are not delayed;
//   - -upN: the rungs above a bracket's first one promote their top ⌊n/N⌋
//     (2 ≤ N; promotions start once such a rung holds N results) instead
//     of the top ⌊n/η⌋: with a large η at the first rung (few, well-chosen
//     promotions from cheap results), the configurations that got past it
//     reach full fidelity sooner.
//
// Everything else is the planner's rule (schedulers/hyperband): the best
// promotable configuration of the highest rung first (then the most
// aggressive bracket), ranked by the observed values or by the method's
// ranker (-model, -lcerank), ties by key, a failed run never promoted; the
// promotion is recorded in the planner with Resume, so its state (and the
// runs that follow) is the planner's own. With -wait1 alone the decisions
// are exactly the planner's (TestMFPromoSameAsPlanner).

package main

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/benchtune/bench/schedulers/hyperband"
	"github.com/benchtune/bench/tunables"
)

// mfPromoOpt is a method's promotion rule (zero: the planner's).
type mfPromoOpt struct {
	wait  int // -waitK: every rung waits for K·η results (0: off)
	first int // -firstK: the first rung of a bracket waits for K·η results (0: off)
	up    int // -upN: the rungs above the first keep the top 1/N (0: 1/η)
}

func (o mfPromoOpt) on() bool { return o != mfPromoOpt{} }

// mfSplitPromo removes the -waitK, -firstK and -upN parts from method m
// (each at most once; K ≥ 1, N ≥ 2; -waitK and -firstK not together).
func mfSplitPromo(m string) (string, mfPromoOpt, bool) {
	var o mfPromoOpt
	parts := strings.Split(m, "-")
	keep := parts[:0:0]
	for i, p := range parts {
		var dst *int
		var v string
		lo := 1
		switch {
		case i > 0 && strings.HasPrefix(p, "wait"):
			dst, v = &o.wait, p[len("wait"):]
		case i > 0 && strings.HasPrefix(p, "first"):
			dst, v = &o.first, p[len("first"):]
		case i > 0 && strings.HasPrefix(p, "up"):
			dst, v, lo = &o.up, p[len("up"):], 2
		default:
			keep = append(keep, p)
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || *dst != 0 {
			return m, o, false
		}
		*dst = n
	}
	if o.wait > 0 && o.first > 0 {
		return m, o, false
	}
	return strings.Join(keep, "-"), o, true
}

// mfPromoter decides promotions for a planner by the rule opt.
type mfPromoter struct {
	pl     *hyperband.Planner[int]
	opt    mfPromoOpt
	eta    int
	ranker hyperband.Ranker[int] // nil: by the observed scores
}

// need is how many results rung r of bracket b must hold before it
// promotes, and keep(n) how many of its n results earn a promotion.
func (m *mfPromoter) need(b, r int) int {
	switch {
	case m.opt.wait > 0:
		return m.opt.wait * m.eta
	case m.opt.first > 0 && r == b:
		return m.opt.first * m.eta
	case m.opt.up > 0 && r > b:
		return m.opt.up
	}
	return m.eta
}

func (m *mfPromoter) keep(b, r, n int) int {
	if m.opt.up > 0 && r > b {
		return n / m.opt.up
	}
	return n / m.eta
}

// promotion returns the next promotion among configurations 0..nkeys-1
// (the planner's keys), recorded in the planner as started; false when
// none has earned one.
func (m *mfPromoter) promotion(nkeys int) (hyperband.Job[int], bool, error) {
	type res struct {
		key     int
		score   float64
		rung    int
		running bool
	}
	nr := len(m.pl.Rungs())
	at := map[[2]int][]res{} // {bracket, rung} → its results
	for k := range nkeys {
		b, rung, running, scores, ok := m.pl.State(k)
		if !ok {
			continue
		}
		for r, s := range scores {
			at[[2]int{b, r}] = append(at[[2]int{b, r}], res{k, s, rung, running})
		}
	}
	for r := nr - 2; r >= 0; r-- {
		for b := range nr {
			rs := at[[2]int{b, r}]
			if len(rs) == 0 || len(rs) < m.need(b, r) {
				continue
			}
			keep := m.keep(b, r, len(rs))
			if keep == 0 {
				continue
			}
			by := map[int]float64{}
			if m.ranker != nil {
				keys := make([]int, len(rs))
				for i, x := range rs {
					keys[i] = x.key
				}
				if sc, ok := m.ranker(keys); ok && len(sc) == len(keys) {
					for i, k := range keys {
						by[k] = sc[i]
						if math.IsNaN(sc[i]) {
							by[k] = math.Inf(1)
						}
					}
				}
			}
			slices.SortFunc(rs, func(x, y res) int {
				fx, fy := math.IsInf(x.score, 1), math.IsInf(y.score, 1)
				switch {
				case fx && !fy:
					return 1
				case fy && !fx:
					return -1
				}
				if len(by) > 0 {
					if c := cmp.Compare(by[x.key], by[y.key]); c != 0 {
						return c
					}
				} else if c := cmp.Compare(x.score, y.score); c != 0 {
					return c
				}
				return cmp.Compare(x.key, y.key)
			})
			for _, x := range rs[:keep] {
				if math.IsInf(x.score, 1) {
					break // the rest are failures too
				}
				if x.rung == r && !x.running {
					if err := m.pl.Resume(x.key, b, r+1); err != nil {
						return hyperband.Job[int]{}, false, err
					}
					return hyperband.Job[int]{Key: x.key, Bracket: b, Rung: r + 1, Fidelity: m.pl.Fidelity(r + 1), Promoted: true}, true, nil
				}
			}
		}
	}
	return hyperband.Job[int]{}, false, nil
}

// mfPromoRanker is the ranker mfRun gives the planner for a gp-fid method
// (-model: the GP's prediction at full fidelity; -lcerank: the
// learning-curve extrapolation, which wins when both are set, as there).
func mfPromoRanker(opt mfOptions, gf *mfGPFid, lce *lceModel, configs map[int]tunables.Point) hyperband.Ranker[int] {
	var rk hyperband.Ranker[int]
	if opt.model {
		rk = gf.ranker(configs)
	}
	if lce != nil && lce.mode.rank {
		rk = lce.ranker
	}
	return rk
}

// mfPromote is mfRun's promotion step for rule po: the planner's
// Promotion when po is off, else an mfPromoter's (eta: the planner's η; rk:
// the ranker the planner was given, nil if none).
func mfPromote(pl *hyperband.Planner[int], po mfPromoOpt, rk hyperband.Ranker[int], configs map[int]tunables.Point) func() (hyperband.Job[int], bool, error) {
	if !po.on() {
		return func() (hyperband.Job[int], bool, error) {
			j, ok := pl.Promotion()
			return j, ok, nil
		}
	}
	m := &mfPromoter{pl: pl, opt: po, eta: pl.Config().Eta, ranker: rk}
	return func() (hyperband.Job[int], bool, error) { return m.promotion(len(configs)) }
}
