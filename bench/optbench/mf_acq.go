// The cost-aware multi-fidelity acquisition in -mf (hyperband_mf.go): the
// GP with a fidelity input proposes a configuration at full fidelity (as
// gp-fid), then chooses the fidelity it starts at by BOCA's rule
// (optimizers/bayes ChooseFidelity: the cheapest fidelity where the model
// is still uncertain about it, measured against a threshold that grows
// with the cost; full fidelity when none is), among the first rungs of
// the brackets in use and full fidelity. The configuration then goes on
// by the planner's promotions from the rung it started at, as any other
// (with -mf-continue, a promotion pays only the difference). This is what
// the scheduler does with fidelity start "acquisition".
//
// Methods: hb-gp-mfacq (every bracket: any rung can be the start) and
// asha-gp-mfacq (one bracket: the lowest fidelity or full fidelity),
// followed by any of, in this order:
//
//   - -minN: the lowest fidelity is N (as gp-fid's -minN);
//   - -model: promotions by the GP's prediction at full fidelity;
//   - -kK: κ = K/100 (default bayes.DefaultFidelityKappa), the scale of
//     the thresholds (larger: full fidelity sooner).

package main

import (
	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/schedulers/hyperband"
	"github.com/benchtune/bench/tunables"
)

const mfAcqMethods = "hb-gp-mfacq, asha-gp-mfacq with the suffixes -minN, -model, -kK (κ = K/100)"

// parseMFAcq reads "hb-gp-mfacq" / "asha-gp-mfacq" and its suffixes.
func parseMFAcq(m string) (mfOptions, bool) {
	o := mfOptions{acq: bayes.DefaultFidelityKappa}
	rest, asha, ok := mfCutBase(m, "gp-mfacq")
	if !ok {
		return o, false
	}
	o.asha = asha
	ok = parseMFSuffixes(rest, mfMin(&o.min), mfFlag("model", &o.model), mfPercent("k", mfNoMax, &o.acq))
	return o, ok
}

// acqStart adds the new configuration k (x) to the planner at the start
// the acquisition chooses: the first rung of a bracket in use, or full
// fidelity; in the planner's next bracket while the model cannot choose.
func (m *mfGPFid) acqStart(pl *hyperband.Planner[int], k int, x tunables.Point, kappa float64) (hyperband.Job[int], error) {
	nb := pl.Brackets()
	rungs := pl.Rungs()
	var levels []bayes.FidelityLevel
	for b := range nb {
		levels = append(levels, bayes.FidelityLevel{Coord: m.coord(rungs[b]), Cost: rungs[b]})
	}
	if nb < len(rungs) {
		levels = append(levels, bayes.FidelityLevel{Coord: 1, Cost: rungs[len(rungs)-1]})
	}
	ch, ok, err := m.gp.ChooseFidelity(m.point(x), levels, kappa)
	if err != nil {
		return hyperband.Job[int]{}, err
	}
	if !ok {
		b, _ := pl.NextBracket()
		return pl.Add(k, b)
	}
	if ch.Level >= nb {
		return pl.AddFull(k)
	}
	return pl.Add(k, ch.Level)
}
