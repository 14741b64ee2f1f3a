package environments

import (
	"context"

	"github.com/benchtune/bench/configs/source"
	internalregistry "github.com/benchtune/bench/internal/registry"
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
	// ValidateOnly: the environment is built for bench validate and will
	// not run; the constructor checks everything it checks for a run and
	// creates nothing outside the process (see Builder.ValidateOnly).
	ValidateOnly bool
}

// Constructor builds an environment from its spec. It is the class's
// validate step: bench validate and bench run both call it, before the
// first trial, so it checks the whole config; it starts nothing (that is
// Setup's work), see Spec.ValidateOnly.
type Constructor func(ctx context.Context, spec Spec) (Environment, error)

var registry = internalregistry.New[Constructor]("environments")

// Register makes an environment class constructible under each name. A
// duplicate name panics (a programming error).
func Register(ctor Constructor, classes ...string) { registry.Register(ctor, classes...) }

// Classes lists the registered class names, sorted.
func Classes() []string { return registry.Names() }

func lookup(class string) (Constructor, bool) { return registry.Lookup(class) }
