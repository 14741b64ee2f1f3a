package engines

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/benchtune/bench/internal/decode"
)

// Common are the config keys every engine takes (beside its own).
type Common struct {
	// Bench is the path of the bench binary on the far side (default:
	// this binary's own path, right for a shared file system).
	Bench string `json:"bench,omitempty"`
	// WorkDir is the folder on the far side for requests, outcomes and
	// job logs (each engine documents its default and resolves a relative
	// path: against Params.Dir where the far side shares the driver's
	// file system).
	WorkDir string `json:"workdir,omitempty"`
	// PollInterval is how often a job's state is read (default 1s).
	PollInterval decode.Duration `json:"poll_interval,omitempty"`
	// HangTimeout relaunches a job that shows no progress (no output, no
	// state change) for this long (0: off).
	HangTimeout decode.Duration `json:"hang_timeout,omitempty"`
	// MaxRelaunches bounds relaunches of a hung or lost job with the same
	// request (default 2); after that the trial is TIMED_OUT (hung) or
	// FAILED (lost).
	MaxRelaunches *int `json:"max_relaunches,omitempty"`
	// LostAfter declares a job lost when its state cannot be read for this
	// long (default 60s).
	LostAfter decode.Duration `json:"lost_after,omitempty"`
}

// Defaults fills in unset keys.
func (c *Common) Defaults() {
	if c.Bench == "" {
		if exe, err := os.Executable(); err == nil {
			c.Bench = exe
		} else {
			c.Bench = "bench"
		}
	}
	if c.PollInterval <= 0 {
		c.PollInterval = decode.Duration(time.Second)
	}
	if c.MaxRelaunches == nil {
		n := 2
		c.MaxRelaunches = &n
	}
	if c.LostAfter <= 0 {
		c.LostAfter = decode.Duration(time.Minute)
	}
}

// Params is what an engine factory gets.
type Params struct {
	// Config is the engine config's "config" object (its keys, with
	// $variables already expanded from the globals).
	Config map[string]any
	// Common holds the common keys decoded from Config, defaults filled in.
	Common Common
	// Slots is the default number of trials at once (num_trial_runners),
	// for engines whose config does not say.
	Slots int
	// Dir is the driver's working folder (relative paths of the config
	// resolve against it).
	Dir string
	// ExperimentID names the experiment (job names, work folders).
	ExperimentID string
	// Globals are the experiment's globals (credentials for the engine's
	// own service: AWS, SSH keys). Never put them in a request.
	Globals map[string]any
	// ValidateOnly: the engine is built for bench validate and will not
	// run anything. The factory checks what it checks for a run and
	// creates nothing (no work folder, no connection, no job).
	ValidateOnly bool
}

// Factory builds an engine. It is the engine class's validate step: bench
// validate and bench run both call it before the first trial, so it checks
// the whole config; work folders, connections and jobs belong to first
// use, or are skipped when Params.ValidateOnly is set.
type Factory func(ctx context.Context, p Params) (Engine, error)

var factories = map[string]Factory{}

// Register registers a factory under class names.
func Register(f Factory, names ...string) {
	for _, n := range names {
		factories[n] = f
	}
}

// Classes lists the registered engine classes.
func Classes() []string {
	out := make([]string, 0, len(factories))
	for n := range factories {
		if strings.HasPrefix(n, "bench.engines.") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Spec is an engine config: {"class": ..., "config": {...}}.
type Spec struct {
	Class  string         `json:"class"`
	Config map[string]any `json:"config"`
}

// New builds the engine a spec names. Common keys are decoded from the
// config and removed from what the engine's own decoder sees.
func New(ctx context.Context, spec Spec, p Params) (Engine, error) {
	f, ok := factories[spec.Class]
	if !ok {
		return nil, unknownClass(spec.Class)
	}
	own := map[string]any{}
	common := map[string]any{}
	keys := commonKeys()
	for k, v := range spec.Config {
		if keys[k] {
			common[k] = v
		} else {
			own[k] = v
		}
	}
	if err := decode.Into(common, &p.Common); err != nil {
		return nil, fmt.Errorf("engine %s: %w", spec.Class, err)
	}
	p.Common.Defaults()
	p.Config = own
	if p.Slots < 1 {
		p.Slots = 1
	}
	e, err := f(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("engine %s: %w", spec.Class, err)
	}
	return e, nil
}

func commonKeys() map[string]bool {
	return map[string]bool{"bench": true, "workdir": true, "poll_interval": true, "hang_timeout": true, "max_relaunches": true, "lost_after": true}
}

// ErrUnknownClass is wrapped by the error of an engine class that is not
// registered.
var ErrUnknownClass = errors.New("unknown engine class")

func unknownClass(class string) error {
	return fmt.Errorf("%w %q; known classes: %s", ErrUnknownClass, class, strings.Join(Classes(), ", "))
}

// Check is the part of an engine's validate step that bench validate
// shares with New, without connecting to anything: the class is known and
// the common keys decode.
func Check(spec Spec) error {
	if _, ok := factories[spec.Class]; !ok {
		return unknownClass(spec.Class)
	}
	_, err := CommonOf(spec)
	return err
}

// CommonOf decodes the common keys of an engine config, defaults filled in.
func CommonOf(spec Spec) (Common, error) {
	common := map[string]any{}
	keys := commonKeys()
	for k, v := range spec.Config {
		if keys[k] {
			common[k] = v
		}
	}
	var c Common
	if err := decode.Into(common, &c); err != nil {
		return c, fmt.Errorf("engine %s: %w", spec.Class, err)
	}
	c.Defaults()
	return c, nil
}
