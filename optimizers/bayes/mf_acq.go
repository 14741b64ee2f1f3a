package bayes

import (
	"fmt"
	"math"
	"slices"

	"github.com/benchtune/bench/tunables"
)

// A cost-aware choice of the fidelity (multi-fidelity mode, SetFidelity):
// for a configuration the acquisition picked at full fidelity, at which
// fidelity to run it. The rule is BOCA's (Kandasamy et al., "Multi-fidelity
// Bayesian Optimisation with Continuous Approximations", ICML 2017; the
// discrete form of MF-GP-UCB, NeurIPS 2016): run x at the cheapest fidelity
// z whose posterior standard deviation at (x, z) is above a threshold that
// grows with z's cost and with how little z says about the full fidelity,
//
//	σ(x, z) > γ(z) = κ · σ_f · ξ(z) · (λ(z)/λ(full))^q,
//	ξ(z) = √(1 − ρ(z)²),  q = 1/(d + 3),
//
// and at full fidelity when no cheaper one qualifies. σ_f² is the kernel's
// signal variance (γ on the same scale as σ), ρ(z) the kernel's
// correlation between fidelity z and the full one along the fidelity
// dimension alone (its fitted lengthscale), λ the cost, d the number of
// the other dimensions (BOCA's exponent 1/(p + d + 2) with p = 1 fidelity
// dimension). The reasoning: a cheap run is worth making while the model
// is still uncertain about x at that fidelity (it will learn something
// there that carries to the full fidelity, as far as ρ says); once the
// cheap fidelities around x are well known, only a run at a higher one
// teaches more, and the run that counts (at full fidelity) is made
// directly instead of climbing rungs one by one.
//
// The configuration itself comes from the usual acquisition (log EI at
// full fidelity over a GP with the fidelity input: fidelity.go), where
// BOCA uses UCB: the fidelity rule is independent of how x was chosen, and
// keeping the shipped acquisition keeps every other behaviour of the
// optimizer as it is.

// FidelityLevel is a fidelity the caller can run a configuration at: its
// unit coordinate on the fidelity dimension and its cost (any positive
// unit, e.g. the fidelity itself).
type FidelityLevel struct {
	Coord, Cost float64
}

// FidelityChoice is ChooseFidelity's answer: the index of the chosen level
// and, per level, the posterior standard deviation at (x, level) and the
// threshold it was compared with (both on the model's scale), for logs
// and tests.
type FidelityChoice struct {
	Level         int
	SD, Threshold []float64
}

// DefaultFidelityKappa is the default κ of ChooseFidelity.
const DefaultFidelityKappa = 0.5

// ChooseFidelity returns the fidelity at which to run configuration x
// (its own fidelity coordinate is ignored) among levels, sorted by
// increasing cost, the last one full fidelity: the cheapest level whose
// posterior standard deviation at (x, level) exceeds its threshold (see
// above), else the last. kappa scales the thresholds (0: the default;
// larger: full fidelity sooner). ok is false, with nothing chosen, before
// the model exists (fewer than 2 successful observations): the caller's
// usual start applies then.
func (o *Optimizer) ChooseFidelity(x tunables.Point, levels []FidelityLevel, kappa float64) (FidelityChoice, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fid == nil {
		return FidelityChoice{}, false, fmt.Errorf("ChooseFidelity needs SetFidelity first")
	}
	if err := checkLevels(levels, o.fid.full); err != nil {
		return FidelityChoice{}, false, err
	}
	if math.IsNaN(kappa) || kappa < 0 || math.IsInf(kappa, 0) {
		return FidelityChoice{}, false, fmt.Errorf("fidelity kappa must be a finite number >= 0, got %v", kappa)
	}
	if kappa == 0 {
		kappa = DefaultFidelityKappa
	}
	if err := o.sp.Check(x); err != nil {
		return FidelityChoice{}, false, err
	}
	succeeded := 0
	for _, e := range o.hist.Entries() {
		if e.N > 0 {
			succeeded++
		}
	}
	if succeeded < 2 {
		return FidelityChoice{}, false, nil
	}
	var lam []float64
	if o.m > 1 {
		lam = make([]float64, o.m)
		for j := range lam {
			lam[j] = 1 / float64(o.m)
		}
	}
	if err := o.prepareModel(o.targets(lam)); err != nil {
		return FidelityChoice{}, false, err
	}
	g := o.g
	base := o.encode(o.sp.Snap(o.pin(slices.Clone(x))))
	fi := o.fid.i
	ch := FidelityChoice{SD: make([]float64, len(levels)), Threshold: make([]float64, len(levels))}
	full := levels[len(levels)-1].Cost
	q := 1 / float64(g.d-1+3)
	sf := math.Sqrt(g.sig2)
	ch.Level = -1
	for j, lv := range levels {
		f := slices.Clone(base)
		f[fi] = lv.Coord
		_, v := g.predict(f)
		ch.SD[j] = math.Sqrt(v)
		// The kernel's correlation between this fidelity and the full
		// one, along the fidelity dimension alone.
		t := lv.Coord - o.fid.full
		rho, _ := matern(g.w[fi]*t*t, 1)
		xi := math.Sqrt(max(0, 1-rho*rho))
		ch.Threshold[j] = kappa * sf * xi * math.Pow(lv.Cost/full, q)
		if ch.Level < 0 && j < len(levels)-1 && ch.SD[j] > ch.Threshold[j] {
			ch.Level = j
		}
	}
	if ch.Level < 0 {
		ch.Level = len(levels) - 1
	}
	return ch, true, nil
}

// checkLevels validates ChooseFidelity's levels: at least one, coordinates
// in [0, 1], costs positive and increasing, the last at full fidelity.
func checkLevels(levels []FidelityLevel, full float64) error {
	if len(levels) == 0 {
		return fmt.Errorf("ChooseFidelity needs at least one fidelity level")
	}
	for j, lv := range levels {
		if math.IsNaN(lv.Coord) || lv.Coord < 0 || lv.Coord > 1 {
			return fmt.Errorf("fidelity level %d: coordinate %v outside [0, 1]", j, lv.Coord)
		}
		if !(lv.Cost > 0) || math.IsInf(lv.Cost, 1) {
			return fmt.Errorf("fidelity level %d: cost %v must be positive and finite", j, lv.Cost)
		}
		if j > 0 && !(lv.Cost > levels[j-1].Cost) {
			return fmt.Errorf("fidelity level %d: costs must increase (%v after %v)", j, lv.Cost, levels[j-1].Cost)
		}
	}
	if last := levels[len(levels)-1].Coord; math.Abs(last-full) > 1e-9 {
		return fmt.Errorf("the last fidelity level (coordinate %v) must be full fidelity (%v)", last, full)
	}
	return nil
}
