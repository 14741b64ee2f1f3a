package environments

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/tunables"
)

// Builder turns environment, service and tunable configs into objects,
// following mlos_bench's ConfigPersistenceService: included services layer
// on top of the parent's, included tunables merge into the parent's, and
// children of composites are built with the parent's const_args.
type Builder struct {
	Loader *configs.Loader
	// ValidateOnly builds for bench validate: the same constructors run
	// with the same checks, and they are told (services.Spec.ValidateOnly,
	// Spec.ValidateOnly) to create nothing outside the process (no
	// folders, connections or processes).
	ValidateOnly bool
	// MissingArgs, when set, is told about the required args that nothing
	// provides (all of them, by environment) instead of the build failing
	// at the first: bench validate of an environment file alone, whose
	// globals arrive only at run time. The build goes on without them.
	MissingArgs func(who string, at source.Ref, names []string)
	// Warn, when set, is told what constructors find suspicious but a run
	// accepts (bench validate prints them as warnings): a script file
	// that is not on the search path.
	Warn func(at source.Ref, msg string)

	mu     sync.Mutex
	stacks []*services.Stack
	// owner keeps the services of a builder derived for another search
	// path (forStack); nil for a builder made by NewBuilder.
	owner *Builder
}

// root returns the builder that keeps the services.
func (b *Builder) root() *Builder {
	if b.owner != nil {
		return b.owner
	}
	return b
}

// forStack returns the builder whose loader searches the config search
// path of the newest ConfigPersistenceService (services.ConfigSearchPath)
// of stack, or b when stack holds none. As in mlos_bench, an environment's
// children (and its own data files) are looked up by the config loader of
// the service stack the environment is built on, while the environment's
// own includes are looked up by its parent's.
func (b *Builder) forStack(stack *services.Stack) (*Builder, error) {
	sp, ok := services.Find[services.ConfigSearchPath](stack)
	if !ok {
		return b, nil
	}
	l, err := b.root().Loader.WithSearchPath(sp.ConfigSearchPath())
	if err != nil {
		return nil, err
	}
	return &Builder{Loader: l, owner: b.root(), ValidateOnly: b.ValidateOnly, MissingArgs: b.MissingArgs, Warn: b.Warn}, nil
}

// searchPath is the search path services built on parent use: that of the
// newest ConfigPersistenceService below them, else the loader's.
func (b *Builder) searchPath(parent *services.Stack) []string {
	if sp, ok := services.Find[services.ConfigSearchPath](parent); ok {
		return sp.ConfigSearchPath()
	}
	return b.Loader.Paths()
}

// NewBuilder returns a builder reading configs through loader.
func NewBuilder(loader *configs.Loader) *Builder { return &Builder{Loader: loader} }

// Close closes every service the builder created, newest first.
func (b *Builder) Close() error {
	b = b.root()
	b.mu.Lock()
	stacks := b.stacks
	b.stacks = nil
	b.mu.Unlock()
	var errs []error
	for i := len(stacks) - 1; i >= 0; i-- {
		if err := stacks[i].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SecurityNotices returns the notices of every service the builder
// created (services.SecurityNoticer), each once, in creation order.
func (b *Builder) SecurityNotices() []string {
	b = b.root()
	b.mu.Lock()
	stacks := slices.Clone(b.stacks)
	b.mu.Unlock()
	var out []string
	for _, st := range stacks {
		for _, n := range st.SecurityNotices() {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// LoadServices builds the services of each config (a path or inline JSON;
// a single {class, config} or {"services": [...]}) on top of parent, in
// order: later services override earlier ones.
func (b *Builder) LoadServices(ctx context.Context, specs []string, globals Params, parent *services.Stack) (*services.Stack, error) {
	if len(specs) == 0 {
		return parent, nil
	}
	stack := parent
	if stack == nil {
		stack = services.NewStack()
	}
	for _, s := range specs {
		doc, err := b.Loader.Load(s, configs.KindService)
		if err != nil {
			return nil, err
		}
		var refs []source.Ref
		if list := doc.Root.Get("services"); list != nil && doc.Root.Get("class") == nil {
			if list.Kind != json5.Array {
				return nil, doc.Errorf([]string{"services"}, "expected a list of services")
			}
			for i := range list.Elems {
				refs = append(refs, doc.At("services").Index(i))
			}
		} else {
			refs = append(refs, doc.At())
		}
		for _, ref := range refs {
			svc, err := b.buildService(ctx, ref, globals, stack)
			if err != nil {
				return nil, err
			}
			stack = stack.Push(svc)
			r := b.root()
			r.mu.Lock()
			r.stacks = append(r.stacks, stack)
			r.mu.Unlock()
		}
	}
	return stack, nil
}

func (b *Builder) buildService(ctx context.Context, ref source.Ref, globals Params, parent *services.Stack) (any, error) {
	node := ref.Node()
	if node == nil || node.Kind != json5.Object {
		return nil, ref.Errorf("expected a service object with a \"class\"")
	}
	classNode := node.Get("class")
	if classNode == nil || classNode.Kind != json5.String {
		return nil, ref.Errorf("missing required property \"class\"")
	}
	cfg, _ := node.Get("config").Value().(map[string]any)
	if cfg == nil {
		cfg = map[string]any{}
	}
	if err := configs.MergeParameters(cfg, globals, nil, ""); err != nil {
		return nil, err
	}
	svc, err := services.New(ctx, services.Spec{
		Class:        classNode.Str,
		Config:       cfg,
		Globals:      maps.Clone(globals),
		Parent:       parent,
		SearchPath:   b.searchPath(parent),
		Ref:          ref,
		ValidateOnly: b.ValidateOnly,
	})
	if err != nil {
		var se *source.Error
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, ref.Errorf("%v", err)
	}
	return svc, nil
}

// LoadTunables returns a copy of parent with the groups of each
// tunable-params config merged in.
func (b *Builder) LoadTunables(specs []string, parent *tunables.Groups) (*tunables.Groups, error) {
	var out *tunables.Groups
	var err error
	if parent != nil {
		out = parent.Copy()
	} else if out, err = tunables.New(); err != nil {
		return nil, err
	}
	for _, s := range specs {
		doc, err := b.Loader.Load(s, configs.KindTunableParams)
		if err != nil {
			return nil, err
		}
		g, err := tunables.ParseParams(doc.At())
		if err != nil {
			return nil, err
		}
		if err := out.Merge(g); err != nil {
			return nil, doc.Errorf(nil, "%v", err)
		}
	}
	return out, nil
}

// LoadEnvironment reads an environment config (a path or inline JSON) and
// builds it.
// at, when given, is where a config names spec: a cyclic include is
// reported there.
func (b *Builder) LoadEnvironment(ctx context.Context, spec string, tun *tunables.Groups, globals, parentArgs Params, svc *services.Stack, chain []string, at ...source.Ref) (Environment, error) {
	if !configs.IsInline(spec) {
		resolved := b.Loader.Resolve(spec)
		for _, f := range chain {
			if f == resolved {
				msg := "cyclic include of environment configs: " + strings.Join(append(chain, resolved), " -> ")
				if len(at) > 0 && at[0].Doc != nil {
					return nil, at[0].Errorf("%s", msg)
				}
				return nil, errors.New(msg)
			}
		}
		chain = append(append([]string(nil), chain...), resolved)
	}
	doc, err := b.Loader.Load(spec, configs.KindEnvironment)
	if err != nil {
		return nil, err
	}
	return b.BuildEnvironment(ctx, doc.At(), tun, globals, parentArgs, svc, chain)
}

// BuildEnvironment builds the environment whose config object ref points
// at.
func (b *Builder) BuildEnvironment(ctx context.Context, ref source.Ref, tun *tunables.Groups, globals, parentArgs Params, svc *services.Stack, chain []string) (Environment, error) {
	node := ref.Node()
	if node == nil || node.Kind != json5.Object {
		return nil, ref.Errorf("expected an environment object")
	}
	name, class := node.Get("name"), node.Get("class")
	if name == nil || name.Kind != json5.String {
		return nil, ref.Errorf("missing required property \"name\"")
	}
	if class == nil || class.Kind != json5.String {
		return nil, ref.Errorf("missing required property \"class\"")
	}
	cfg, _ := node.Get("config").Value().(map[string]any)
	if cfg == nil {
		cfg = map[string]any{}
	}
	if globals == nil {
		globals = Params{}
	}
	if err := configs.MergeParameters(cfg, globals, nil, ""); err != nil {
		return nil, err
	}
	svcPaths, err := stringsAt(node.Value().(map[string]any), "include_services", ref)
	if err != nil {
		return nil, err
	}
	envBuilder, err := b.forStack(svc)
	if err != nil {
		return nil, ref.Errorf("%v", err)
	}
	if svc, err = b.LoadServices(ctx, svcPaths, globals, svc); err != nil {
		return nil, configs.LocateNotFound(err, ref.Child("include_services"), svcPaths)
	}
	if svc == nil {
		svc = services.NewStack()
	}
	tunPaths, err := stringsAt(node.Value().(map[string]any), "include_tunables", ref)
	if err != nil {
		return nil, err
	}
	if len(tunPaths) > 0 {
		if tun, err = b.LoadTunables(tunPaths, tun); err != nil {
			return nil, configs.LocateNotFound(err, ref.Child("include_tunables"), tunPaths)
		}
	}
	ctor, ok := lookup(class.Str)
	if !ok {
		return nil, ref.Child("class").Errorf("unknown environment class %q; known classes: %s", class.Str, strings.Join(Classes(), ", "))
	}
	env, err := ctor(ctx, Spec{
		Name: name.Str, Class: class.Str, Config: cfg, Ref: ref,
		Globals: globals, ParentArgs: parentArgs, Tunables: tun,
		Services: svc, Builder: envBuilder, Chain: chain, ValidateOnly: b.ValidateOnly,
	})
	if err != nil {
		var se *source.Error
		var mp *configs.MissingParamError
		if errors.As(err, &se) || errors.As(err, &mp) || strings.HasPrefix(err.Error(), "cyclic include") {
			return nil, err
		}
		return nil, ref.Errorf("environment %q: %v", name.Str, err)
	}
	return env, nil
}
