// Package composite implements mlos_bench's CompositeEnv: an environment
// made of child environments that are set up and run in order and torn
// down in reverse order.
//
// Parameters flow down: each child is built with the composite's
// const_args as its parent arguments ("$name" const_args take their
// values, keeping their types) and with a copy of the globals into which
// the composite's const_args are set as defaults, so that for a child
// const_args < the composite's const_args < globals < command line.
// Tunables flow up: the composite is bound to the union of its children's
// tunable groups.
//
// Parameters produced at setup time (a provisioned host's address, see
// Exporter) flow sideways: they are passed to the later children's Setup
// as globals, and so override the parameters of the same name those
// children declare in const_args or required_args.
package composite

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/tunables"
)

// Classes are the class names of CompositeEnv.
var Classes = []string{
	"mlos_bench.environments.CompositeEnv",
	"mlos_bench.environments.composite_env.CompositeEnv",
	"bench.environments.CompositeEnv",
}

func init() {
	environments.Register(New, Classes...)
}

// Exporter is implemented by environments whose Setup produces parameters
// for the environments after them (HostEnv: the provisioned host's
// ssh_hostname and ID). A CompositeEnv passes them on to its later
// children as globals, and exports them itself.
type Exporter interface {
	ExportedParams() environments.Params
}

// Env is a CompositeEnv.
type Env struct {
	*environments.Base
	children []environments.Environment

	mu       sync.Mutex
	ready    bool
	exported environments.Params
}

var (
	_ environments.Environment = (*Env)(nil)
	_ Exporter                 = (*Env)(nil)
)

var compositeKeys = []string{"tunable_params", "required_args", "const_args", "children", "include_children"}

// New builds a CompositeEnv and its children.
func New(ctx context.Context, spec environments.Spec) (environments.Environment, error) {
	base, err := environments.NewBase(spec)
	if err != nil {
		return nil, err
	}
	cfgRef := spec.Ref.Child("config")
	for k := range spec.Config {
		if !contains(compositeKeys, k) {
			return nil, cfgRef.Child(k).Errorf("unknown config key %q; known keys: children, const_args, include_children, required_args, tunable_params", k)
		}
	}
	if spec.Builder == nil {
		return nil, fmt.Errorf("environment %q: a CompositeEnv is built by an environments.Builder", spec.Name)
	}
	e := &Env{Base: base}

	// Children see the composite's const_args as defaults of the globals.
	constArgs := base.ConstArgs()
	globals := maps.Clone(spec.Globals)
	if globals == nil {
		globals = environments.Params{}
	}
	for k, v := range constArgs {
		if _, ok := globals[k]; !ok {
			globals[k] = v
		}
	}
	tun := spec.Tunables.Copy()
	union, err := tunables.New()
	if err != nil {
		return nil, err
	}
	if err := union.Merge(base.Tunables()); err != nil {
		return nil, cfgRef.Errorf("environment %q: %v", spec.Name, err)
	}
	add := func(child environments.Environment, ref source.Ref) error {
		if err := tun.Merge(child.Tunables()); err != nil {
			return ref.Errorf("environment %q: child %q: %v", spec.Name, child.Name(), err)
		}
		if err := union.Merge(child.Tunables()); err != nil {
			return ref.Errorf("environment %q: child %q: %v", spec.Name, child.Name(), err)
		}
		e.children = append(e.children, child)
		return nil
	}

	includes, err := stringList(spec.Config["include_children"], cfgRef.Child("include_children"))
	if err != nil {
		return nil, err
	}
	for i, path := range includes {
		child, err := spec.Builder.LoadEnvironment(ctx, path, tun, globals, constArgs, spec.Services, spec.Chain, cfgRef.Child("include_children").Index(i))
		if err != nil {
			return nil, configs.LocateNotFound(err, cfgRef.Child("include_children"), includes)
		}
		if err := add(child, cfgRef.Child("include_children").Index(i)); err != nil {
			return nil, err
		}
	}
	childrenRef, err := childrenOf(spec, cfgRef.Child("children"))
	if err != nil {
		return nil, err
	}
	for i := range childrenRef.n {
		ref := childrenRef.ref.Index(i)
		child, err := spec.Builder.BuildEnvironment(ctx, ref, tun, globals, constArgs, spec.Services, spec.Chain)
		if err != nil {
			return nil, err
		}
		if err := add(child, ref); err != nil {
			return nil, err
		}
	}
	if len(e.children) == 0 {
		return nil, cfgRef.Errorf("environment %q (class %s) needs at least one child in \"children\" or \"include_children\"", spec.Name, spec.Class)
	}
	e.SetTunables(union)
	return e, nil
}

type childList struct {
	ref source.Ref
	n   int
}

// childrenOf locates the inline children. A spec built in code (without a
// document) gets a document made from its config.
func childrenOf(spec environments.Spec, ref source.Ref) (childList, error) {
	v, ok := spec.Config["children"]
	if !ok || v == nil {
		return childList{}, nil
	}
	if node := ref.Node(); node != nil {
		if node.Kind != json5.Array {
			return childList{}, ref.Errorf("\"children\" must be a list of environment configs")
		}
		return childList{ref: ref, n: len(node.Elems)}, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return childList{}, ref.Errorf("\"children\": %v", err)
	}
	doc, err := source.Parse(fmt.Sprintf("<children of %s>", spec.Name), data)
	if err != nil {
		return childList{}, err
	}
	if doc.Root.Kind != json5.Array {
		return childList{}, ref.Errorf("\"children\" must be a list of environment configs")
	}
	return childList{ref: doc.At(), n: len(doc.Root.Elems)}, nil
}

func stringList(v any, ref source.Ref) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, ref.Errorf("expected a list of config file paths")
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, ref.Index(i).Errorf("expected a config file path")
		}
		out[i] = s
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Children returns the child environments in order.
func (e *Env) Children() []environments.Environment {
	return append([]environments.Environment(nil), e.children...)
}

// ExportedParams returns the parameters the children produced at setup.
func (e *Env) ExportedParams() environments.Params {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.exported)
}

// Open opens the children in order; if one fails, those already open are
// closed.
func (e *Env) Open(ctx context.Context) error {
	for i, c := range e.children {
		if err := c.Open(ctx); err != nil {
			var errs *multierror.Error
			errs = multierror.Append(errs, err)
			for j := i - 1; j >= 0; j-- {
				if cerr := e.children[j].Close(); cerr != nil {
					errs = multierror.Append(errs, cerr)
				}
			}
			return errs.ErrorOrNil()
		}
	}
	return nil
}

// Close closes every child in reverse order and returns all their errors.
func (e *Env) Close() error {
	var errs *multierror.Error
	for i := len(e.children) - 1; i >= 0; i-- {
		if err := e.children[i].Close(); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	e.mu.Lock()
	e.ready = false
	e.mu.Unlock()
	return errs.ErrorOrNil()
}

// Setup sets the children up in order and stops at the first failure.
// The parameters a child exports are passed to the later children as
// globals.
func (e *Env) Setup(ctx context.Context, tun *tunables.Groups, globals environments.Params) error {
	e.mu.Lock()
	e.ready = false
	e.mu.Unlock()
	if err := e.SetupParams(tun, globals); err != nil {
		return err
	}
	g := maps.Clone(globals)
	if g == nil {
		g = environments.Params{}
	}
	exported := environments.Params{}
	for _, c := range e.children {
		if err := c.Setup(ctx, tun, g); err != nil {
			return err
		}
		if x, ok := c.(Exporter); ok {
			p := x.ExportedParams()
			maps.Copy(g, p)
			maps.Copy(exported, p)
		}
	}
	e.mu.Lock()
	e.ready, e.exported = true, exported
	e.mu.Unlock()
	return nil
}

func (e *Env) isReady() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ready
}

// Run runs the children in order, merging their results (later children
// override earlier ones); it stops at the first child whose status is not
// PENDING, READY, RUNNING or SUCCEEDED. The status and time are the last
// child's.
func (e *Env) Run(ctx context.Context) environments.Result {
	if !e.isReady() {
		return environments.Result{Status: environments.PENDING, Time: time.Now().UTC(),
			Reason: fmt.Sprintf("environment %q is not set up", e.Name())}
	}
	metrics := map[string]any{}
	var last environments.Result
	var notes []string
	for _, c := range e.children {
		last = c.Run(ctx)
		if !last.Status.IsGood() {
			return environments.Result{Status: last.Status, Time: last.Time, Reason: last.Reason}
		}
		maps.Copy(metrics, last.Metrics)
		notes = append(notes, last.Notes...)
	}
	out := environments.Result{Status: last.Status, Time: last.Time, Reason: last.Reason, Notes: notes}
	if last.Status == environments.SUCCEEDED {
		out.Metrics = metrics
	}
	return out
}

// Status concatenates the children's telemetry and reports the first
// child status that is not PENDING, READY, RUNNING or SUCCEEDED (else the
// last child's); the children's errors are aggregated.
func (e *Env) Status(ctx context.Context) environments.StatusReport {
	if !e.isReady() {
		return environments.StatusReport{Status: environments.PENDING, Time: time.Now().UTC()}
	}
	var out environments.StatusReport
	var final environments.Status
	var errs *multierror.Error
	for _, c := range e.children {
		st := c.Status(ctx)
		out.Telemetry = append(out.Telemetry, st.Telemetry...)
		out.Status, out.Time = st.Status, st.Time
		if st.Err != nil {
			errs = multierror.Append(errs, st.Err)
		}
		if !st.Status.IsGood() && final == environments.UNKNOWN {
			final = st.Status
		}
	}
	if final != environments.UNKNOWN {
		out.Status = final
	}
	out.Err = errs.ErrorOrNil()
	return out
}

// Teardown tears every child down in reverse order, even when some fail,
// and returns all their errors.
func (e *Env) Teardown(ctx context.Context) error {
	e.mu.Lock()
	e.ready = false
	e.exported = nil
	e.mu.Unlock()
	var errs *multierror.Error
	for i := len(e.children) - 1; i >= 0; i-- {
		if err := e.children[i].Teardown(ctx); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	return errs.ErrorOrNil()
}
