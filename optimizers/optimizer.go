// Package optimizers holds the optimizers that suggest configurations
// (mlos_bench's Optimizer classes): OneShot, Manual, Mock, GridSearch and
// MlosCoreOptimizer (random search, local search in place of FLAML, and
// Bayesian optimization in place of SMAC), with mlos_bench's config keys
// and registration rules.
package optimizers

import (
	"context"
	"fmt"
	"github.com/benchtune/bench/trial"
	"sort"
	"strings"

	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/decode"
	internalregistry "github.com/benchtune/bench/internal/registry"
	"github.com/benchtune/bench/tunables"
)

// Target is one optimization target (the shared trial.Objective).
type Target = trial.Objective

// Observation is one registered result, with scores already turned into
// values to minimize (max targets negated; failures +Inf).
type Observation struct {
	Values map[string]any // tunable values
	Scores []float64      // one per target, in target order, to minimize
	Status trial.Status
}

// Suggestion is a configuration the optimizer proposes, with the id that
// its outcome is observed under.
type Suggestion struct {
	ID       int // > 0, unique within this optimizer
	Tunables *tunables.Groups
}

// Optimizer suggests configurations and learns from their results. It is
// used by one goroutine (the scheduler's dispatcher).
type Optimizer interface {
	// Name is recorded with each trial (e.g. "MlosCoreOptimizer:SMAC").
	Name() string
	Targets() []Target
	// Suggest returns up to k configurations, distinct from each other and
	// from the pending ones (suggested, not yet observed) where the
	// optimizer can tell; fewer (possibly none) once it has converged.
	Suggest(ctx context.Context, k int) ([]Suggestion, error)
	// Observe records the outcome of suggestion id, which is no longer
	// pending; id 0 is an outcome the optimizer did not suggest (an earlier
	// run's trial, another process's). For SUCCEEDED, results must hold a
	// numeric value for every target; every other completed status counts
	// as +Inf for every target. It returns the scores (to minimize).
	Observe(id int, tun *tunables.Groups, status trial.Status, results map[string]any) ([]float64, error)
	// BulkRegister warm-starts the optimizer with earlier trials (resume).
	BulkRegister(trials []Prior) error
	// NotConverged reports whether more suggestions should be asked for.
	NotConverged() bool
	// Best returns the best successful observation (lexicographic over the
	// targets for single-point optimizers).
	Best() (Observation, bool)
	// SupportsPreload reports whether earlier results may be fed back on
	// resume (false for OneShot and Manual, which replay fixed configs).
	SupportsPreload() bool
	// MaxSuggestions is the suggestion budget.
	MaxSuggestions() int
	// Iteration counts the suggestions made so far in this process.
	Iteration() int
	// Skip counts n suggestions made by earlier runs of the experiment, so
	// that a resumed experiment completes its budget.
	Skip(n int)
}

// SuggestOne asks for a single configuration (nil, nil when the optimizer
// has none left).
func SuggestOne(ctx context.Context, o Optimizer) (*tunables.Groups, error) {
	s, err := o.Suggest(ctx, 1)
	if err != nil || len(s) == 0 {
		return nil, err
	}
	return s[0].Tunables, nil
}

// Prior is an earlier trial used to warm-start an optimizer.
type Prior struct {
	Values  map[string]any // tunable values (strings from storage are fine)
	Status  trial.Status
	Results map[string]any
	// Fidelity is the value of the fidelity the trial ran at, when the
	// scheduler varies one (FidelityAware); 0 = full fidelity or none.
	Fidelity float64
}

// Fidelity is the dimension a multi-fidelity scheduler varies (bench
// only): Param is the tunable or global that carries it to the trial,
// evaluated between Min and Max (Max = full fidelity, the one whose
// results the user cares about), on a log scale when Log is set.
type Fidelity struct {
	Param    string
	Min, Max float64
	Log      bool
}

// FidelityAware is implemented by optimizers that learn from results at
// every fidelity (the GP takes the fidelity as an input). A scheduler
// that varies a fidelity calls SetFidelity once before the first Suggest;
// Suggest then proposes configurations for full fidelity (the Param
// value in a suggestion, if Param is a tunable, is overridden by the
// scheduler). Each outcome is reported through ObserveAt with the
// fidelity it ran at; id is the suggestion id the first time a
// configuration is observed and 0 for its promotions (re-runs or
// continuations at higher fidelities). Optimizers that are not
// FidelityAware are given only full-fidelity outcomes through Observe.
type FidelityAware interface {
	Optimizer
	SetFidelity(f Fidelity) error
	ObserveAt(id int, tun *tunables.Groups, fidelity float64, status trial.Status, results map[string]any) ([]float64, error)
}

// Spec is what an optimizer constructor gets.
type Spec struct {
	Class string
	// Config is the optimizer's "config" with globals merged into the keys
	// it has.
	Config map[string]any
	// Ref points at the optimizer config (nil Doc for built-in defaults).
	Ref source.Ref
	// TargetsRef, when set, points at the optimization_targets object to
	// take the key order from (it may come from a globals file).
	TargetsRef source.Ref
	// Tunables are the experiment's tunables with the initial values
	// (defaults, --random_init, --tunable_values).
	Tunables *tunables.Groups
	Globals  map[string]any
}

// Constructor builds an optimizer.
type Constructor func(spec Spec) (Optimizer, error)

var registry = internalregistry.New[Constructor]("optimizers")

// Register makes an optimizer class constructible under each name.
func Register(ctor Constructor, classes ...string) { registry.Register(ctor, classes...) }

// Classes lists the registered class names.
func Classes() []string { return registry.Names() }

// New builds an optimizer of spec.Class.
func New(spec Spec) (Optimizer, error) {
	ctor, ok := registry.Lookup(spec.Class)
	if !ok {
		return nil, spec.Ref.Child("class").Errorf("unknown optimizer class %q; known classes: %s", spec.Class, strings.Join(Classes(), ", "))
	}
	return ctor(spec)
}

// names returns mlos_bench's short and module names for a class, plus
// bench's own alias.
func names(module, class string) []string {
	return []string{
		"mlos_bench.optimizers." + class,
		"mlos_bench.optimizers." + module + "." + class,
		"bench.optimizers." + class,
	}
}

// Base implements the configuration, scoring and best-tracking common to
// every optimizer.
type Base struct {
	name              string
	tunables          *tunables.Groups
	targets           []Target
	maxSuggestions    int
	seed              int64
	startWithDefaults bool
	iter              int
	lastID            int
	best              *Observation
	ref               source.Ref
}

// NewBase reads the common config keys: optimization_targets (default
// {"score": "min"}), max_suggestions (100), seed (42) and
// start_with_defaults (true).
func NewBase(name string, spec Spec) (*Base, error) {
	b := &Base{name: name, tunables: spec.Tunables, maxSuggestions: 100, seed: 42, startWithDefaults: true, ref: spec.Ref}
	if b.tunables == nil {
		g, err := tunables.New()
		if err != nil {
			return nil, err
		}
		b.tunables = g
	}
	cfg := spec.Config
	cref := spec.Ref.Child("config")
	var err error
	if v, ok := cfg["max_suggestions"]; ok {
		n, ok := asInt(v)
		if !ok || n < 0 {
			return nil, cref.Child("max_suggestions").Errorf("max_suggestions must be an integer >= 0, got %v", v)
		}
		b.maxSuggestions = int(n)
	}
	if v, ok := cfg["seed"]; ok && v != nil {
		n, ok := asInt(v)
		if !ok {
			return nil, cref.Child("seed").Errorf("seed must be an integer, got %v", v)
		}
		b.seed = n
	}
	if v, ok := cfg["start_with_defaults"]; ok {
		if b.startWithDefaults, err = asBool(v); err != nil {
			return nil, cref.Child("start_with_defaults").Errorf("%v", err)
		}
	}
	if b.targets, err = parseTargets(cfg["optimization_targets"], spec); err != nil {
		return nil, err
	}
	return b, nil
}

func parseTargets(v any, spec Spec) ([]Target, error) {
	ref := spec.Ref.Child("config").Child("optimization_targets")
	if v == nil {
		return []Target{{Name: "score"}}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, ref.Errorf("optimization_targets must be an object like {\"score\": \"min\"}")
	}
	if len(m) == 0 {
		return nil, ref.Errorf("optimization_targets must name at least one metric")
	}
	// Key order decides the lexicographic comparison of results: take it
	// from the config text when we have it.
	var order []string
	for _, r := range []source.Ref{spec.TargetsRef, ref} {
		if n := r.Node(); n != nil && n.Kind == json5.Object && len(n.Members) == len(m) {
			order = n.Keys()
			break
		}
	}
	if order == nil {
		for k := range m {
			order = append(order, k)
		}
		sort.Strings(order)
	}
	out := make([]Target, 0, len(m))
	for _, k := range order {
		dir, ok := m[k].(string)
		if !ok || (dir != "min" && dir != "max") {
			return nil, ref.Child(k).Errorf("invalid optimization direction %v for %q: want \"min\" or \"max\"", m[k], k)
		}
		out = append(out, Target{Name: k, Max: dir == "max"})
	}
	return out, nil
}

// asInt reads an integer config value (decode.Int).
func asInt(v any) (int64, bool) { return decode.Int(v) }

// asBool reads a boolean config value (decode.Bool: mlos_bench's
// strtobool words, numbers as Python's bool()).
func asBool(v any) (bool, error) {
	if b, ok := decode.Bool(v); ok {
		return b, nil
	}
	return false, fmt.Errorf("expected a boolean, got %v", v)
}

// Name returns the optimizer's name.
func (b *Base) Name() string { return b.name }

// Targets returns the optimization targets in order.
func (b *Base) Targets() []Target { return append([]Target(nil), b.targets...) }

// MaxSuggestions returns the suggestion budget.
func (b *Base) MaxSuggestions() int { return b.maxSuggestions }

// Iteration returns the number of suggestions made.
func (b *Base) Iteration() int { return b.iter }

// Seed returns the random seed.
func (b *Base) Seed() int64 { return b.seed }

// SupportsPreload is true by default.
func (b *Base) SupportsPreload() bool { return true }

// NotConverged is true while fewer than max_suggestions were made.
func (b *Base) NotConverged() bool { return b.iter < b.maxSuggestions }

// Tunables returns the optimizer's tunables (with the initial values).
func (b *Base) Tunables() *tunables.Groups { return b.tunables }

// next counts a suggestion and returns a copy of the tunables to fill in.
func (b *Base) next() *tunables.Groups {
	b.iter++
	return b.tunables.Copy()
}

// newID returns the id of the next suggestion.
func (b *Base) newID() int {
	b.lastID++
	return b.lastID
}

// each makes up to k suggestions with one, stopping when the budget is
// spent (optimizers that have nothing to spread out).
func (b *Base) each(ctx context.Context, k int, notConverged func() bool, one func(context.Context) (*tunables.Groups, error)) ([]Suggestion, error) {
	if k < 1 {
		return nil, fmt.Errorf("%s: asked for %d suggestions", b.name, k)
	}
	var out []Suggestion
	for len(out) < k && notConverged() {
		tun, err := one(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, Suggestion{ID: b.newID(), Tunables: tun})
	}
	return out, nil
}

// ErrMissingMetric is wrapped when a successful trial lacks a target
// metric or has a non-numeric one.
var ErrMissingMetric = trial.ErrMissingMetric

// Scores converts results into values to minimize, in target order: the
// target metrics (negated for max targets) for SUCCEEDED, +Inf for every
// target otherwise.
func (b *Base) Scores(status trial.Status, results map[string]any) ([]float64, error) {
	return trial.Objectives(b.targets).Scores(status, results)
}

// Numeric reads a result value as a float (numbers, and strings that
// parse as numbers).
func Numeric(v any) (float64, bool) { return trial.Numeric(v) }

// Track records an observation and keeps the best one (lexicographic over
// the targets, as mlos_bench's TrackBestOptimizer).
func (b *Base) Track(tun *tunables.Groups, status trial.Status, scores []float64) {
	if status != trial.SUCCEEDED {
		return
	}
	if b.best == nil || trial.Less(scores, b.best.Scores) {
		b.best = &Observation{Values: tun.Values(), Scores: append([]float64(nil), scores...), Status: status}
	}
}

// Best returns the best observation so far.
func (b *Base) Best() (Observation, bool) {
	if b.best == nil {
		return Observation{}, false
	}
	return *b.best, true
}

// Observe scores and tracks a result; concrete optimizers call it first.
func (b *Base) Observe(_ int, tun *tunables.Groups, status trial.Status, results map[string]any) ([]float64, error) {
	if !status.IsCompleted() {
		return nil, fmt.Errorf("cannot register a trial with status %s: only completed trials are registered", status)
	}
	scores, err := b.Scores(status, results)
	if err != nil {
		return nil, err
	}
	b.Track(tun, status, scores)
	return scores, nil
}

// bulk replays priors through observe (skipping CANCELED trials) and
// turns off start_with_defaults when there is data, like mlos_bench.
func (b *Base) bulk(priors []Prior, register func(*tunables.Groups, trial.Status, map[string]any) error) error {
	n := 0
	for _, p := range priors {
		if p.Status == trial.CANCELED || !p.Status.IsCompleted() {
			continue
		}
		tun := b.tunables.Copy()
		if err := tun.Assign(p.Values); err != nil {
			return fmt.Errorf("earlier trial's configuration no longer fits the tunables (did the tunables change? use a new experiment id): %w", err)
		}
		// A stored SUCCEEDED trial without the target metric counts as
		// FAILED, as it would have been stored.
		status := trial.Objectives(b.targets).Finalize(trial.Outcome{Status: p.Status, Results: p.Results}).Status
		if err := register(tun, status, p.Results); err != nil {
			return err
		}
		n++
	}
	if n > 0 {
		b.startWithDefaults = false
	}
	return nil
}

// Skip counts n suggestions made by an earlier run of the same experiment,
// so that a resumed experiment completes its budget (max_suggestions
// counts the whole experiment, not just this process).
func (b *Base) Skip(n int) {
	if n <= 0 {
		return
	}
	b.iter += n
	b.startWithDefaults = false
}
