package optimizers

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/trial"
	"math/rand/v2"
	"strings"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/optimizers/internal/algo"
	"github.com/benchtune/bench/optimizers/localsearch"
	"github.com/benchtune/bench/tunables"
)

func init() {
	Register(newMlosCore, names("mlos_core_optimizer", "MlosCoreOptimizer")...)
}

// DefaultOptimizerType is used when optimizer_type is not set. mlos_bench
// defaults to FLAML; bench defaults to the Bayesian optimizer because it
// finds better configurations at 20 and 50 evaluations on every test
// function of bench/optbench (docs/optimizers-algorithms.md).
const DefaultOptimizerType = "SMAC"

// engine is a search algorithm over the normalized space.
type engine interface {
	// Observe records measured scores (to minimize; +Inf for failures).
	Observe(obs ...algo.Observation) error
	// Suggest proposes k points distinct from pending ones.
	Suggest(k int, pending []tunables.Point) ([]tunables.Point, error)
}

// configKeyer is an engine that can avoid points of a configuration
// already observed or pending (bayes.Optimizer.SetConfigKey).
type configKeyer interface {
	SetConfigKey(f func(tunables.Point) string)
}

// engineFactory builds an engine for a space.
type engineFactory func(space *tunables.Space, opts engineOptions) (engine, error)

type engineOptions struct {
	Seed          int64
	NRandomInit   int
	NumObjectives int
	Initial       tunables.Point
	MaxTrials     int
}

// engines maps optimizer_type to its implementation.
var engines = map[string]engineFactory{
	"RANDOM": newRandomEngine,
	"FLAML": func(space *tunables.Space, o engineOptions) (engine, error) {
		return localsearch.New(space.Dims, localsearch.Options{Seed: o.Seed, NumObjectives: o.NumObjectives, Initial: o.Initial, MaxTrials: o.MaxTrials})
	},
	"SMAC": func(space *tunables.Space, o engineOptions) (engine, error) {
		// The initial configuration is suggested by MlosCore itself.
		return bayes.New(space.Dims, bayes.Options{Seed: o.Seed, NRandomInit: o.NRandomInit, NumObjectives: o.NumObjectives, MaxTrials: o.MaxTrials})
	},
}

// MlosCore is mlos_bench's MlosCoreOptimizer: optimizer_type RANDOM
// (random search), FLAML (cost-frugal local search) or SMAC (Bayesian
// optimization with a Gaussian process).
type MlosCore struct {
	*Base
	kind    string
	space   *tunables.Space
	eng     engine
	pending map[int]tunables.Point // suggestions not yet observed, by id
	seen    map[string]bool        // configurations already observed (snapped points)
	noise   NoiseSettings          // noise.go
	resumed int                    // the last id RegisterPending used (below 0)
	// declaredDefaults: the first suggestion (start_with_defaults) keeps
	// the declared defaults of tunables with special values (bench only,
	// DeclaredDefaultsKey) instead of mlos_bench's special value.
	declaredDefaults bool
	fid              *fidelityMode      // fidelity.go: nil until SetFidelity
	opts             engineOptions      // how eng was built (SetFidelity builds another)
	observed         []algo.Observation // what eng was given (SetFidelity replays it)
	fidStash         []Prior            // priors at a fidelity before SetFidelity
	staged           *bayes.Staged      // noise_h_refine.go: the staged refinement, once begun
}

// DeclaredDefaultsKey is the bench-only MlosCoreOptimizer config key that
// makes the first suggestion use every tunable's declared default.
const DeclaredDefaultsKey = "bench_declared_defaults"

// firstValues returns tun with the values of the first suggestion when
// start_with_defaults is set: as mlos_bench's MlosCoreOptimizer suggests
// its ConfigSpace's default configuration, where a tunable with special
// values has its special/range switch set to "special" (so the value is
// the declared default when that is a special value, else the first
// special value) whatever the declared default; the others keep their
// values. With bench_declared_defaults, tun is returned unchanged.
func (m *MlosCore) firstValues(tun *tunables.Groups) *tunables.Groups {
	if m.declaredDefaults {
		return tun
	}
	for _, t := range tun.Tunables() {
		special := t.Special()
		if len(special) == 0 {
			continue
		}
		v := special[0]
		if d, ok := toFloat(t.Default()); ok {
			for _, s := range special {
				if f, ok := toFloat(s); ok && f == d {
					v = s
					break
				}
			}
		}
		_ = t.Set(v)
	}
	return tun
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func newMlosCore(spec Spec) (Optimizer, error) {
	cfg := spec.Config
	cref := spec.Ref.Child("config")
	kind := DefaultOptimizerType
	if v, ok := cfg["optimizer_type"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return nil, cref.Child("optimizer_type").Errorf("optimizer_type must be a string")
		}
		kind = strings.ToUpper(s)
	}
	factory, ok := engines[kind]
	if !ok {
		return nil, cref.Child("optimizer_type").Errorf("unknown optimizer_type %q: want FLAML, SMAC or RANDOM", kind)
	}
	if v, ok := cfg["space_adapter_type"]; ok && v != nil && v != "IDENTITY" {
		msg := fmt.Sprintf("space_adapter_type %v is not supported by bench (only IDENTITY)", v)
		if v == "LLAMATUNE" {
			msg += ": LlamaTune's low-dimensional projection of the search space and its biasing of special values are not implemented; remove space_adapter_type to tune the full space (see docs/optimizers.md)"
		}
		return nil, cref.Child("space_adapter_type").Errorf("%s", msg)
	}
	b, err := NewBase("MlosCoreOptimizer:"+kind, spec)
	if err != nil {
		return nil, err
	}
	opts := engineOptions{Seed: b.seed, NumObjectives: len(b.targets), MaxTrials: b.maxSuggestions}
	if v, ok := cfg["n_random_init"]; ok && v != nil {
		n, ok := asInt(v)
		if !ok || n < 0 {
			return nil, cref.Child("n_random_init").Errorf("n_random_init must be an integer >= 0")
		}
		opts.NRandomInit = int(n)
	}
	if v, ok := cfg["max_trials"]; ok && v != nil {
		n, ok := asInt(v)
		if !ok {
			return nil, cref.Child("max_trials").Errorf("max_trials must be an integer")
		}
		if int(n) < b.maxSuggestions {
			return nil, cref.Child("max_trials").Errorf("max_trials (%d) must be at least max_suggestions (%d)", n, b.maxSuggestions)
		}
		opts.MaxTrials = int(n)
	}
	m := &MlosCore{Base: b, kind: kind, space: b.tunables.Space()}
	if v, ok := cfg[DeclaredDefaultsKey]; ok && v != nil {
		if m.declaredDefaults, err = asBool(v); err != nil {
			return nil, cref.Child(DeclaredDefaultsKey).Errorf("%v", err)
		}
	}
	if b.startWithDefaults {
		p, err := m.space.Encode(m.firstValues(b.tunables.Copy()).Values())
		if err != nil {
			return nil, err
		}
		opts.Initial = p
	}
	m.opts = opts
	if m.eng, err = factory(m.space, opts); err != nil {
		return nil, spec.Ref.Errorf("%v", err)
	}
	return m, nil
}

// maxRetries bounds how often distinct asks the engine again for a point
// that is not a duplicate.
const maxRetries = 25

// distinct asks the engine for k points whose configurations are neither
// pending nor already observed. Several unit coordinates can make one
// configuration (an int on a log scale is rounded after the engine chose a
// continuous coordinate; a numeric coordinate is ignored while a special
// value is chosen), so a raw point the engine considers new may repeat a
// configuration: it is then handed back to the engine as pending and the
// engine asked again. When the space seems exhausted, repeats are allowed.
// The returned points are snapped.
func (m *MlosCore) distinct(k int) ([]tunables.Point, error) {
	taken := map[string]bool{}
	avoid := make([]tunables.Point, 0, len(m.pending)+k)
	for _, p := range m.pending {
		taken[pointKey(p)] = true
		avoid = append(avoid, p)
	}
	var out, dups []tunables.Point
	keyed := false
	for try := 0; len(out) < k && try < maxRetries; try++ {
		if ck, ok := m.eng.(configKeyer); ok && len(dups) > 0 && !keyed {
			keyed = true
			// A duplicate came back: from now on let the engine avoid
			// configurations, not only its own points. The first try is
			// as before, so a call whose first suggestions are new
			// configurations suggests what it did before.
			ck.SetConfigKey(func(p tunables.Point) string { return pointKey(m.space.Snap(p)) })
			defer ck.SetConfigKey(nil)
		}
		pts, err := m.eng.Suggest(k-len(out), avoid)
		if err != nil {
			if errors.Is(err, algo.ErrExhausted) && len(out)+len(dups) > 0 {
				break
			}
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		if len(pts) == 0 {
			break
		}
		for _, p := range pts {
			q := m.space.Snap(p)
			key := pointKey(q)
			avoid = append(avoid, p)
			if taken[key] || m.seen[key] {
				dups = append(dups, q)
				continue
			}
			taken[key] = true
			out = append(out, q)
		}
	}
	for len(out) < k && len(dups) > 0 { // nothing new left: repeat
		out, dups = append(out, dups[0]), dups[1:]
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no suggestion", m.name)
	}
	return out, nil
}

// Observe feeds a result to the engine; suggestion id is no longer
// pending. An outcome the optimizer did not suggest (id 0) drops a pending
// suggestion of exactly the same configuration, if any.
func (m *MlosCore) Observe(id int, tun *tunables.Groups, status trial.Status, results map[string]any) ([]float64, error) {
	if m.fid != nil {
		return m.ObserveAt(id, tun, 0, status, results) // fidelity.go
	}
	scores, err := m.Base.Observe(id, tun, status, results)
	if err != nil {
		return nil, err
	}
	p, err := m.space.Encode(tun.Values())
	if err != nil {
		return nil, err
	}
	m.settle(id, pointKey(m.space.Snap(p)))
	if err := m.eng.Observe(algo.Observation{X: p, Y: scores}); err != nil {
		return nil, err
	}
	m.observed = append(m.observed, algo.Observation{X: p, Y: scores})
	return scores, nil
}

// settle marks the configuration with key as observed: suggestion id (or,
// for id 0, a pending suggestion of the same configuration) is no longer
// pending.
func (m *MlosCore) settle(id int, key string) {
	if _, ok := m.pending[id]; ok && id > 0 {
		delete(m.pending, id)
	} else {
		for pid, q := range m.pending {
			if pointKey(q) == key {
				delete(m.pending, pid)
				break
			}
		}
	}
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	m.seen[key] = true
}

// BulkRegister warm-starts the engine from earlier trials.
func (m *MlosCore) BulkRegister(priors []Prior) error {
	return m.bulkAt(priors) // fidelity.go: with Prior.Fidelity
}

// randomEngine samples the space, avoiding points already seen when it can.
type randomEngine struct {
	space *tunables.Space
	rng   *rand.Rand
	seen  map[string]bool
}

func newRandomEngine(space *tunables.Space, opts engineOptions) (engine, error) {
	return &randomEngine{space: space, rng: rand.New(rand.NewPCG(uint64(opts.Seed), 0x72616e64)), seen: map[string]bool{}}, nil
}

func pointKey(p tunables.Point) string { return fmt.Sprint([]float64(p)) }

func (r *randomEngine) Observe(obs ...algo.Observation) error {
	for _, o := range obs {
		r.seen[pointKey(o.X)] = true
	}
	return nil
}

func (r *randomEngine) Suggest(k int, pending []tunables.Point) ([]tunables.Point, error) {
	space := r.space
	taken := map[string]bool{}
	for _, p := range pending {
		taken[pointKey(p)] = true
	}
	var out []tunables.Point
	for len(out) < k {
		var p tunables.Point
		for try := 0; try < 100; try++ {
			p = space.Snap(space.Sample(r.rng))
			key := pointKey(p)
			if !r.seen[key] && !taken[key] {
				break
			}
		}
		taken[pointKey(p)] = true
		out = append(out, p)
	}
	return out, nil
}

// Suggest returns up to k distinct configurations at once (one per idle
// trial runner): the engine spreads them out (the Bayesian optimizer with
// the Kriging believer, the local search along different directions), and
// none repeats a configuration still pending. The first suggestion is the
// initial configuration when start_with_defaults is set.
func (m *MlosCore) Suggest(ctx context.Context, k int) ([]Suggestion, error) {
	if k < 1 {
		return nil, fmt.Errorf("%s: asked for %d suggestions", m.name, k)
	}
	if m.pending == nil {
		m.pending = map[int]tunables.Point{}
	}
	k = min(k, m.maxSuggestions-m.iter)
	var out []Suggestion
	if k > 0 && m.startWithDefaults {
		m.startWithDefaults = false
		tun := m.firstValues(m.next())
		p, err := m.space.Encode(tun.Values())
		if err != nil {
			return nil, err
		}
		id := m.newID()
		m.pending[id] = m.space.Snap(p)
		out = append(out, Suggestion{ID: id, Tunables: tun})
		k--
	}
	if k <= 0 {
		return out, nil
	}
	pts, err := m.distinct(k)
	if err != nil {
		return nil, err
	}
	for _, p := range pts {
		vals, err := m.space.Decode(p)
		if err != nil {
			return nil, err
		}
		tun := m.next()
		if err := tun.Assign(vals); err != nil {
			return nil, err
		}
		id := m.newID()
		m.pending[id] = p
		out = append(out, Suggestion{ID: id, Tunables: tun})
	}
	return out, nil
}

// ParetoFront returns the indexes of the non-dominated rows of scores (all
// minimized; negate maximized targets first).
func ParetoFront(scores [][]float64) []int { return trial.ParetoFront(scores) }
