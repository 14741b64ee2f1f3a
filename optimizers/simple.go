package optimizers

import (
	"context"
	"fmt"
	"github.com/benchtune/bench/trial"
	"math/rand/v2"

	"github.com/benchtune/bench/tunables"
)

func init() {
	Register(newMock, names("mock_optimizer", "MockOptimizer")...)
	Register(newOneShot, names("one_shot_optimizer", "OneShotOptimizer")...)
	Register(newManual, names("manual_optimizer", "ManualOptimizer")...)
}

// Mock suggests seeded random configurations (the first one is the
// initial configuration when start_with_defaults is set).
type Mock struct {
	*Base
	rng   *rand.Rand
	space *tunables.Space
}

func newMock(spec Spec) (Optimizer, error) {
	b, err := NewBase("MockOptimizer", spec)
	if err != nil {
		return nil, err
	}
	return &Mock{Base: b, rng: rand.New(rand.NewPCG(uint64(b.seed), 0x6d6f636b)), space: b.tunables.Space()}, nil
}

// Suggest returns the next k random configurations.
func (m *Mock) Suggest(ctx context.Context, k int) ([]Suggestion, error) {
	return m.each(ctx, k, m.NotConverged, m.one)
}

func (m *Mock) one(ctx context.Context) (*tunables.Groups, error) {
	tun := m.next()
	if m.startWithDefaults {
		m.startWithDefaults = false
		return tun, nil
	}
	values, err := m.space.Decode(m.space.Sample(m.rng))
	if err != nil {
		return nil, err
	}
	if err := tun.Assign(values); err != nil {
		return nil, err
	}
	return tun, nil
}

// BulkRegister feeds earlier results (they only update the best).
func (m *Mock) BulkRegister(priors []Prior) error {
	return m.bulk(priors, func(t *tunables.Groups, s trial.Status, r map[string]any) error {
		_, err := m.Observe(0, t, s, r)
		return err
	})
}

// OneShot runs the initial configuration (defaults, or --tunable_values)
// once: bench's behaviour when no optimizer is given.
type OneShot struct{ *Base }

func newOneShot(spec Spec) (Optimizer, error) {
	b, err := NewBase("OneShotOptimizer", spec)
	if err != nil {
		return nil, err
	}
	b.maxSuggestions = 1
	return &OneShot{Base: b}, nil
}

// Suggest returns the initial configuration (once).
func (o *OneShot) Suggest(ctx context.Context, k int) ([]Suggestion, error) {
	return o.each(ctx, k, o.NotConverged, func(context.Context) (*tunables.Groups, error) { return o.next(), nil })
}

// SupportsPreload is false: a one-shot run always runs its configuration.
func (o *OneShot) SupportsPreload() bool { return false }

// BulkRegister only updates the best observation.
func (o *OneShot) BulkRegister(priors []Prior) error {
	return o.bulk(priors, func(t *tunables.Groups, s trial.Status, r map[string]any) error {
		_, err := o.Observe(0, t, s, r)
		return err
	})
}

// Manual cycles through an explicit list of configurations
// (tunable_values_cycle; {} means the defaults), max_cycles times.
type Manual struct {
	*Base
	cycle []map[string]any
}

func newManual(spec Spec) (Optimizer, error) {
	b, err := NewBase("ManualOptimizer", spec)
	if err != nil {
		return nil, err
	}
	cref := spec.Ref.Child("config")
	raw, _ := spec.Config["tunable_values_cycle"].([]any)
	if len(raw) == 0 {
		return nil, cref.Child("tunable_values_cycle").Errorf("ManualOptimizer needs a non-empty tunable_values_cycle")
	}
	m := &Manual{Base: b}
	for i, e := range raw {
		vals, ok := e.(map[string]any)
		if !ok {
			return nil, cref.Child("tunable_values_cycle").Index(i).Errorf("expected an object of tunable values")
		}
		if len(vals) > 0 {
			if err := b.tunables.Copy().Assign(vals); err != nil {
				return nil, cref.Child("tunable_values_cycle").Index(i).Errorf("%v", err)
			}
		}
		m.cycle = append(m.cycle, vals)
	}
	maxCycles := int64(1)
	if v, ok := spec.Config["max_cycles"]; ok {
		n, ok := asInt(v)
		if !ok || n < 1 {
			return nil, cref.Child("max_cycles").Errorf("max_cycles must be an integer >= 1")
		}
		maxCycles = n
	}
	if limit := int(maxCycles) * len(m.cycle); limit < b.maxSuggestions {
		b.maxSuggestions = limit
	}
	return m, nil
}

// Suggest returns the next k configurations of the cycle.
func (m *Manual) Suggest(ctx context.Context, k int) ([]Suggestion, error) {
	return m.each(ctx, k, m.NotConverged, m.one)
}

func (m *Manual) one(ctx context.Context) (*tunables.Groups, error) {
	tun := m.next()
	vals := m.cycle[(m.iter-1)%len(m.cycle)]
	if len(vals) == 0 {
		tun.RestoreDefaults()
		return tun, nil
	}
	if err := tun.Assign(vals); err != nil {
		return nil, fmt.Errorf("tunable_values_cycle[%d]: %w", (m.iter-1)%len(m.cycle), err)
	}
	return tun, nil
}

// SupportsPreload is false: the cycle is replayed as configured.
func (m *Manual) SupportsPreload() bool { return false }

// BulkRegister only updates the best observation.
func (m *Manual) BulkRegister(priors []Prior) error {
	return m.bulk(priors, func(t *tunables.Groups, s trial.Status, r map[string]any) error {
		_, err := m.Observe(0, t, s, r)
		return err
	})
}
