package optimizers

import (
	"math"

	"github.com/benchtune/bench/internal/aggregate"
	"github.com/benchtune/bench/optimizers/internal/algo"
	"github.com/benchtune/bench/optimizers/internal/history"
	"github.com/benchtune/bench/tunables"
)

// NoiseSettings are the scheduler's settings for noisy benchmarks that an
// optimizer takes in (see NoiseSetter).
type NoiseSettings struct {
	// Aggregate holds the aggregation of each target's repeats, in target
	// order (missing: the mean, mlos_bench's behaviour).
	Aggregate []aggregate.Policy
	// Aware turns on the noise-aware mode: heteroscedastic noise from
	// repeats, augmented EI, and a best that is the model's.
	Aware bool
	// Search is the noise-aware search (noise_search): "" or "global"
	// (the GP's augmented EI over the whole space), or "local" (a trust
	// region around the posterior-mean incumbent after a global phase;
	// optimizers/bayes/noiselocal.go).
	Search string
}

// NoiseSetter is an optimizer that aggregates repeats and can be
// noise-aware. SetNoise is called before any observation.
type NoiseSetter interface {
	SetNoise(NoiseSettings)
}

// NoiseReporter is an optimizer with a model of the noise: NoiseLevel
// returns the learned noise standard deviation relative to that of the
// observed values and the signal-to-noise ratio (ok false before a model
// exists).
type NoiseReporter interface {
	NoiseLevel() (rel, snr float64, ok bool)
}

type aggregatingEngine interface {
	SetAggregator(history.Aggregator)
}

type noiseEngine interface {
	SetNoise(history.Aggregator, bool)
	Ranked(k int) []tunables.Point
	NoiseLevel() (rel, snr float64, ok bool)
}

// SetNoise applies the aggregation of repeats and the noise-aware mode to
// the engine.
func (m *MlosCore) SetNoise(ns NoiseSettings) {
	m.noise = ns
	var agg history.Aggregator
	if len(ns.Aggregate) > 0 {
		pols := ns.Aggregate
		targets := m.targets
		agg = func(j int, scores []float64) float64 {
			p := aggregate.Default
			if j < len(pols) {
				p = pols[j]
			}
			return p.OfScores(scores, j < len(targets) && targets[j].Max)
		}
	}
	switch e := m.eng.(type) {
	case noiseEngine:
		e.SetNoise(agg, ns.Aware)
		setNoiseSearch(e, ns)
	case aggregatingEngine:
		e.SetAggregator(agg)
	}
}

// Ranked returns up to k observed configurations, best first: by the
// Bayesian model's posterior mean, else by the aggregated repeats.
func (m *MlosCore) Ranked(k int) []map[string]any {
	var pts []tunables.Point
	if e, ok := m.eng.(noiseEngine); ok {
		pts = e.Ranked(k)
	} else if b, ok := m.eng.(interface {
		Best() (algo.Observation, bool)
	}); ok {
		if o, ok := b.Best(); ok {
			pts = []tunables.Point{o.X}
		}
	}
	return m.decodeAll(pts) // refine.go
}

// NoiseLevel reports the Bayesian model's learned noise.
func (m *MlosCore) NoiseLevel() (rel, snr float64, ok bool) {
	if e, isNoise := m.eng.(noiseEngine); isNoise {
		return e.NoiseLevel()
	}
	return math.NaN(), math.NaN(), false
}
