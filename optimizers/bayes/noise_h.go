package bayes

import (
	"math"
	"math/rand/v2"

	"github.com/benchtune/bench/tunables"
)

// settledMaxNoise is the largest learned noise standard deviation, as a
// share of the standard deviation of the (standardized) observed values,
// at which SearchSettled can say yes: where the noise explains more of
// the variation, the model is no response surface to refine on (Levy-10:
// 0.6 on a seed whose search had not found the basin; Hartmann6 at 5%
// noise: at most 0.18).
const settledMaxNoise = 0.3

// SearchSettled reports whether the global search has nothing left to
// find above the noise: the expected improvement (against augmented EI's
// effective best) at the point the global acquisition would measure next
// is below factor noise standard deviations. It is the test of the
// noise-aware local search (noiselocal.go, nlLocalTurn), asked once, to
// decide whether the end of the budget is better spent refining the
// model's best locally (the staged refinement) or searching on. It needs
// the model (a single objective, noise-aware or not); false without it,
// and false when the learned noise is above settledMaxNoise.
func (o *Optimizer) SearchSettled(factor float64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m != 1 || o.hist.Len() < 2 {
		return false
	}
	if err := o.prepareModel(o.targets(nil)); err != nil || o.g == nil {
		return false
	}
	g := o.g
	if o.theta == nil || math.Exp(o.theta[o.sp.Len()+1]) > settledMaxNoise*settledMaxNoise {
		return false
	}
	// The test draws from a generator of its own, so that asking it does
	// not change what the search suggests next.
	defer o.ownRNG(0x736574746c6564)()
	p := o.maximizeAcq(g, func(key string) bool {
		_, seen := o.hist.Lookup(key)
		return seen
	})
	if p == nil || g.noise <= 0 {
		return false
	}
	mu, v := g.predict(o.encode(p))
	return logEI(aeiThreshold(g), mu, v) < math.Log(factor*math.Sqrt(g.noise))
}

// The staged refinement (bench only; the scheduler's confirm_refine_mode
// "staged", optbench -refine staged): the one-stage local design of
// refine.go, measured in StagedStages rounds. Each round's box is centred
// on the minimiser of the posterior mean in the previous round's box
// (after that round's design was observed), its half-widths StagedShrink
// times the previous ones, the first box StagedRadius lengthscales wide
// around the posterior-mean incumbent: the design follows the model's
// estimate of the bottom of the basin and gets denser there, so that the
// last minimiser averages the noise of many nearby measurements. It is
// meant to run only when the search has settled (SearchSettled): where
// the global search still expects to find more than the noise, the
// evaluations are better spent searching.
const (
	StagedStages = 3
	StagedRadius = 0.75
	StagedShrink = 0.5
	// StagedSettledFactor is the SearchSettled factor the staged
	// refinement asks with: the expected improvement below 0.7 noise
	// standard deviations (measured against 1 and 0.5 in
	// docs/optimizers-algorithms.md: at 1, Levy-10 seeds whose search was
	// not done were refined and lost; at 0.5, Hartmann6 seeds that were
	// ready were not refined).
	StagedSettledFactor = 0.7
	// StagedShare is the share of the budget the stages take in
	// bench/optbench (the confirmation comes on top: 60 search + 30
	// staged design + 2×5 confirmation at 100).
	StagedShare = 0.3
)

// Staged is the state of one staged refinement of an optimizer.
type Staged struct {
	o      *Optimizer
	center tunables.Point
	radius float64
	stage  int
}

// NewStaged starts a staged refinement around the optimizer's
// posterior-mean incumbent (Ranked(1)); it needs an observation.
func (o *Optimizer) NewStaged() (*Staged, error) {
	top := o.Ranked(1)
	if len(top) == 0 {
		return nil, errRefineModel
	}
	return &Staged{o: o, center: top[0], radius: StagedRadius}, nil
}

// Stage returns how many designs Design has returned.
func (s *Staged) Stage() int { return s.stage }

// Design returns n points spread over the next stage's box: around the
// incumbent for the first stage, then around the minimiser of the
// posterior mean in the previous box, StagedShrink times smaller. The
// previous design must have been observed before (that is what moves the
// minimiser).
func (s *Staged) Design(n int) ([]tunables.Point, error) {
	if s.stage > 0 {
		c, err := s.o.MeanMinimizer(s.center, s.radius, 0, false)
		if err != nil {
			return nil, err
		}
		s.center, s.radius = c, s.radius*StagedShrink
	}
	s.stage++
	return s.o.LocalDesign(s.center, n, s.radius)
}

// Best returns the minimiser of the posterior mean in the last stage's
// box (before any Design: in the first box): the configuration to
// confirm.
func (s *Staged) Best() (tunables.Point, error) {
	return s.o.MeanMinimizer(s.center, s.radius, 0, false)
}

// StagedSplit returns the design size of each of stages rounds for a
// total of n (the remainder goes to the last rounds).
func StagedSplit(n, stages int) []int {
	out := make([]int, stages)
	done := 0
	for i := range out {
		out[i] = (n - done) / (stages - i)
		done += out[i]
	}
	return out
}

// ownRNG makes the optimizer draw from a generator of its own, seeded by
// the number of observations and salt, until the returned function is
// called (deferred), with o.mu held: a question asked of the model
// (SearchSettled, Basins, ...) then leaves the next suggestion unchanged.
func (o *Optimizer) ownRNG(salt uint64) (restore func()) {
	saved := o.rng
	o.rng = rand.New(rand.NewPCG(uint64(o.hist.Len()), salt))
	return func() { o.rng = saved }
}
