package environments

import (
	"context"
	"sort"
	"sync"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/tunables"
)

// Spec is what an environment constructor gets.
type Spec struct {
	Name  string
	Class string
	// Config is the environment's "config" object with globals merged into
	// the keys it already has.
	Config map[string]any
	// Ref points at the environment object in its config file.
	Ref source.Ref
	// Globals are the global parameters the environment is built with.
	Globals Params
	// ParentArgs are the parent CompositeEnv's const_args ("$name" values
	// of const_args refer to them).
	ParentArgs Params
	// Tunables are all tunables known at this point (the parent's plus the
	// environment's include_tunables).
	Tunables *tunables.Groups
	// Services is the service stack for this environment.
	Services *services.Stack
	// Builder builds children (for composites).
	Builder *Builder
	// Chain lists the config files being built, outermost first (to detect
	// cyclic includes).
	Chain []string
}

// Constructor builds an environment from its spec.
type Constructor func(ctx context.Context, spec Spec) (Environment, error)

var (
	regMu    sync.RWMutex
	registry = map[string]Constructor{}
)

// Register makes an environment class constructible under each name. A
// duplicate name panics (a programming error).
func Register(ctor Constructor, classes ...string) {
	regMu.Lock()
	defer regMu.Unlock()
	for _, c := range classes {
		if _, dup := registry[c]; dup {
			panic("environments: class registered twice: " + c)
		}
		registry[c] = ctor
	}
}

// Classes lists the registered class names, sorted.
func Classes() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for c := range registry {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func lookup(class string) (Constructor, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	c, ok := registry[class]
	return c, ok
}
