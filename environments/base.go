package environments

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/tunables"
)

// CommonArgs are the parameters every environment has, whether or not its
// config mentions them (mlos_bench's _COMMON_REQ_ARGS and _COMMON_CONST_ARGS).
var CommonArgs = []string{"experiment_id", "trial_id", "trial_runner_id"}

// Base holds what every environment computes from its spec: the bound
// tunables, the const_args after globals and templating, and the current
// parameters. Implementations embed it.
type Base struct {
	name      string
	class     string
	spec      Spec
	constArgs *configs.Ordered
	tunables  *tunables.Groups
	params    Params
	memo      setupMemo // setup reuse (reuse.go)
	// partial: checked alone by bench validate, some "$ref" tunable
	// groups were left out (their names are unknown).
	partial bool
}

// NewBase computes an environment's parameters as mlos_bench does:
//   - tunable_params ("$ref" entries expanded through the globals'
//     tunable_params_map) select the groups the environment is bound to;
//   - const_args whose whole value is "$name" take the parent's value;
//   - globals override const_args keys; required_args (other than tunables)
//     plus experiment_id, trial_id and trial_runner_id must be provided by
//     const_args or globals;
//   - string const_args are templated with the const_args, then the globals.
func NewBase(spec Spec) (*Base, error) {
	b := &Base{name: spec.Name, class: spec.Class, spec: spec}
	cfgRef := spec.Ref.Child("config")
	who := fmt.Sprintf("environment %q", spec.Name)

	groups, err := stringsAt(spec.Config, "tunable_params", cfgRef)
	if err != nil {
		return nil, err
	}
	if bl := spec.Builder; bl != nil && bl.MissingArgs != nil && bl.Warn != nil {
		// bench validate of a file alone: a "$ref" the run's globals
		// give (tunable_params_map) is a warning, like a required arg
		// without a value, and the environment is checked without it.
		groups = b.dropUnresolvedRefs(groups, spec.Globals["tunable_params_map"], cfgRef.Child("tunable_params"), who, bl.Warn)
	}
	groups, err = configs.ExpandGroups(groups, spec.Globals["tunable_params_map"])
	if err != nil {
		return nil, cfgRef.Child("tunable_params").Errorf("%s: %v", who, err)
	}
	all := spec.Tunables
	if all == nil {
		if all, err = tunables.New(); err != nil {
			return nil, err
		}
	}
	if b.tunables, err = all.Subgroup(groups); err != nil {
		return nil, cfgRef.Child("tunable_params").Errorf("%s: %v", who, err)
	}

	b.constArgs = orderedObject(cfgRef.Child("const_args").Node(), spec.Config["const_args"])
	configs.PreprocessDynamic(b.constArgs, spec.ParentArgs)

	globals := maps.Clone(spec.Globals)
	if globals == nil {
		globals = Params{}
	}
	for _, k := range CommonArgs {
		if _, ok := globals[k]; !ok {
			v, _ := b.constArgs.Get(k)
			globals[k] = v
		}
	}
	required, err := stringsAt(spec.Config, "required_args", cfgRef)
	if err != nil {
		return nil, err
	}
	tunableNames := b.tunables.Values()
	var req []string
	for _, r := range required {
		if _, isTunable := tunableNames[r]; !isTunable {
			req = append(req, r)
		}
	}
	req = append(req, CommonArgs...)
	if spec.Builder != nil && spec.Builder.MissingArgs != nil {
		// bench validate of an environment alone: say which args have no
		// value yet (the globals of a run may give them) and go on.
		var missing []string
		for _, k := range req {
			if _, ok := globals[k]; !ok && !b.constArgs.Has(k) && !slices.Contains(missing, k) {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			at := cfgRef.Child("required_args")
			if at.Node() == nil {
				at = spec.Ref
			}
			spec.Builder.MissingArgs(who, at, missing)
			for _, k := range missing {
				globals[k] = nil
			}
		}
	}
	if err := configs.MergeOrdered(b.constArgs, globals, req, who); err != nil {
		if ref := cfgRef.Child("required_args"); ref.Node() != nil {
			return nil, ref.Errorf("%v", err)
		}
		return nil, spec.Ref.Errorf("%v", err)
	}
	configs.ExpandOrdered(b.constArgs, configs.MapLookup(globals))
	b.params = b.combine()
	return b, nil
}

// dropUnresolvedRefs leaves out the "$name" entries of tunable_params that
// the globals' tunable_params_map does not define, telling warn about
// each (bench validate of a file alone).
func (b *Base) dropUnresolvedRefs(groups []string, paramsMap any, at source.Ref, who string, warn func(source.Ref, string)) []string {
	m, _ := paramsMap.(map[string]any)
	var out []string
	for i, g := range groups {
		name, isRef := strings.CutPrefix(g, "$")
		if _, ok := m[name]; !isRef || ok {
			out = append(out, g)
			continue
		}
		b.partial = true
		warn(at.Index(i), fmt.Sprintf("%s: tunable group reference %q: no tunable_params_map in the globals defines it (a run needs it from a globals file (--globals) or the command line; checked without those tunables)", who, g))
	}
	return out
}

// Partial reports whether bench validate checked the environment alone
// without some of its tunable groups ("$ref" entries the globals did not
// define): what depends on their tunables is not checked then.
func (b *Base) Partial() bool { return b.partial }

// orderedObject returns the members of an object in document order (node
// may be nil for configs built in code; then fallback's keys are used).
func orderedObject(node *json5.Node, fallback any) *configs.Ordered {
	o := configs.NewOrdered()
	if node != nil && node.Kind == json5.Object {
		for _, m := range node.Members {
			o.Set(m.Key, m.Value.Value())
		}
		return o
	}
	if m, ok := fallback.(map[string]any); ok {
		for k, v := range m {
			o.Set(k, v)
		}
	}
	return o
}

// stringsAt reads an optional list of strings from a config.
func stringsAt(cfg map[string]any, key string, ref source.Ref) ([]string, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		if ss, ok := v.([]string); ok {
			return ss, nil
		}
		return nil, ref.Child(key).Errorf("expected a list of strings")
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, ref.Child(key).Index(i).Errorf("expected a string")
		}
		out = append(out, s)
	}
	return out, nil
}

func (b *Base) combine() Params {
	p := b.constArgs.Map()
	maps.Copy(p, b.tunables.Values())
	return p
}

// Name returns the environment's name.
func (b *Base) Name() string { return b.name }

// Class returns the class name the environment was configured with.
func (b *Base) Class() string { return b.class }

// Spec returns the spec the environment was built from.
func (b *Base) Spec() Spec { return b.spec }

// Tunables returns the groups the environment is bound to.
func (b *Base) Tunables() *tunables.Groups { return b.tunables }

// SetTunables replaces the bound groups (composites bind the union of
// their children's groups).
func (b *Base) SetTunables(g *tunables.Groups) {
	b.tunables = g
	b.params = b.combine()
}

// ConstArgs returns a copy of the final const_args.
func (b *Base) ConstArgs() Params { return b.constArgs.Map() }

// Parameters returns a copy of the current parameters.
func (b *Base) Parameters() Params { return maps.Clone(b.params) }

// Services returns the environment's service stack.
func (b *Base) Services() *services.Stack { return b.spec.Services }

// SetupParams is the common part of Setup: the bound groups take their
// values from tun, and the parameters become const_args + tunable values,
// with the trial's globals overriding the keys they have.
func (b *Base) SetupParams(tun *tunables.Groups, globals Params) error {
	if tun != nil {
		values := map[string]any{}
		for name := range b.tunables.Values() {
			t := tun.Get(name)
			if t == nil {
				return fmt.Errorf("environment %q: tunable %q has no value in the trial's configuration", b.name, name)
			}
			values[name] = t.Value()
		}
		if err := b.tunables.Assign(values); err != nil {
			return fmt.Errorf("environment %q: %w", b.name, err)
		}
	}
	p := b.combine()
	configs.MergeVerbatim(p, globals)
	b.params = p
	return nil
}
