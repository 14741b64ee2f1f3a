package environments

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/benchtune/bench/internal/decode"
)

// Reuse of setup work (bench only, opt-in). An environment whose config
// has "bench_reuse_setup": true (or the global of that name, which
// overrides the config's value as globals do) skips its setup when the values the setup depends
// on are those of its last successful setup in this process and it was
// not torn down since. The rule lives here, in Base; the classes that
// support it (LocalEnv, LocalFileShareEnv, RemoteEnv) call
// Base.SetupOnce around the work of their Setup, forget in Teardown and
// report SetupReusedMetric from Run. A CompositeEnv does not skip anything
// itself: each child decides for itself.
//
// The values the setup depends on are the parameters named by the
// environment's own tunables (its tunable_params groups), its const_args
// and its required_args, as resolved for the trial (after the trial's
// globals). experiment_id, trial_id and trial_runner_id count only when
// the config names them there. The key is a SHA-256 of those names and
// values in sorted order (SetupKey).
//
// What is remembered belongs to one environment instance (one trial
// runner) in one process: a new bench run, and every bench exec-trial,
// starts with nothing remembered. A failed setup is never remembered; the
// trial runner forgets everything (ForgetSetup) after a trial that did not
// succeed.

// ReuseSetupKey is the config key (and global) that turns setup reuse on.
const ReuseSetupKey = "bench_reuse_setup"

// SetupReusedMetric is the result an environment with setup reuse on adds
// to a successful trial's results: bench.<env name>.setup.reused, 1 when
// the setup was skipped, 0 when it ran.
func SetupReusedMetric(env string) string { return "bench." + env + ".setup.reused" }

// setupMemo is what Base remembers of the last successful setup.
type setupMemo struct {
	mu     sync.Mutex
	on     bool
	names  []string          // declared const_args and required_args (sorted)
	last   string            // key of the last successful setup; "": none
	tuned  map[string]string // the own tunables' values at that setup
	reused bool              // the current trial's setup was skipped
}

// ParseSwitch reads a bench-only on/off setting: a boolean, or a value
// decode.Bool reads ("true", "yes", "1", ...: globals given on the command
// line are strings). key names the setting in the error.
func ParseSwitch(key string, v any) (bool, error) {
	if b, ok := decode.Bool(v); ok {
		return b, nil
	}
	return false, fmt.Errorf("%q: expected true or false, got %v", key, v)
}

// InitSetupReuse turns setup reuse on or off from the environment's
// config key (a global of the same name overriding it, as globals override
// config keys) or else the global; off by default. Environment classes that support reuse call it from their
// constructor; for the others reuse stays off.
func (b *Base) InitSetupReuse() error {
	cfgRef := b.spec.Ref.Child("config")
	var on bool
	// As for every config key, a global of the same name overrides the
	// config's value (mlos_bench's merge rule: spec.Config has the globals
	// merged into the keys it has), so --bench_reuse_setup false turns it
	// off everywhere; without the key, the global alone decides.
	if v, ok := b.spec.Config[ReuseSetupKey]; ok && v != nil {
		var err error
		if on, err = ParseSwitch(ReuseSetupKey, v); err != nil {
			return cfgRef.Child(ReuseSetupKey).Errorf("environment %q: %v", b.name, err)
		}
	} else if v, ok := b.spec.Globals[ReuseSetupKey]; ok && v != nil {
		var err error
		if on, err = ParseSwitch(ReuseSetupKey, v); err != nil {
			return fmt.Errorf("environment %q: global %v", b.name, err)
		}
	}
	var names []string
	if m, ok := b.spec.Config["const_args"].(map[string]any); ok {
		for k := range m {
			names = append(names, k)
		}
	}
	req, err := stringsAt(b.spec.Config, "required_args", cfgRef)
	if err != nil {
		return err
	}
	names = append(names, req...)
	slices.Sort(names)
	names = slices.Compact(names)
	b.memo.mu.Lock()
	b.memo.on, b.memo.names = on, names
	b.memo.last, b.memo.tuned, b.memo.reused = "", nil, false
	b.memo.mu.Unlock()
	if on && slices.Contains(names, "trial_id") {
		slog.Warn("bench_reuse_setup is on but the environment's required_args or const_args name trial_id, which changes with every trial: its setup is never reused",
			"env", b.name)
	}
	return nil
}

// ReusesSetup tells whether setup reuse is on for this environment.
func (b *Base) ReusesSetup() bool {
	b.memo.mu.Lock()
	defer b.memo.mu.Unlock()
	return b.memo.on
}

// SetupKey is the hash of the values the environment's setup depends on,
// with the current parameters: the own tunables' and the declared
// const_args' and required_args' values, by name in sorted order.
func (b *Base) SetupKey() string {
	b.memo.mu.Lock()
	names := b.memo.names
	b.memo.mu.Unlock()
	return SetupKey(b.params, b.tunables.StringValues(), names)
}

// SetupKey hashes the parameters params has under the names of tunables
// and names (names missing from params hash as absent, distinct from
// null). The order of names does not matter.
func SetupKey(params Params, tunables map[string]string, names []string) string {
	all := slices.Clone(names)
	for n := range tunables {
		all = append(all, n)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	var sb strings.Builder
	for _, n := range all {
		sb.WriteString(strconv.Quote(n))
		v, ok := params[n]
		if !ok {
			sb.WriteString("!\n")
			continue
		}
		sb.WriteByte('=')
		writeCanonical(&sb, v)
		sb.WriteByte('\n')
	}
	sum := sha256.Sum256([]byte(sb.String()))
	return hex.EncodeToString(sum[:])
}

// writeCanonical writes a parameter value with its type, so that 1, 1.0,
// "1" and true hash differently, and NaN and infinities are written too.
func writeCanonical(sb *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		sb.WriteString("null")
	case string:
		sb.WriteString("s" + strconv.Quote(x))
	case bool:
		sb.WriteString("b" + strconv.FormatBool(x))
	case int64:
		sb.WriteString("i" + strconv.FormatInt(x, 10))
	case int:
		sb.WriteString("i" + strconv.Itoa(x))
	case float64:
		if math.IsNaN(x) {
			sb.WriteString("fNaN")
		} else {
			sb.WriteString("f" + strconv.FormatFloat(x, 'g', -1, 64))
		}
	case []any:
		sb.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				sb.WriteByte(',')
			}
			writeCanonical(sb, e)
		}
		sb.WriteByte(']')
	default:
		fmt.Fprintf(sb, "%T:%v", v, v)
	}
}

// SetupOnce is the rule of setup reuse, for the Setup of the classes that
// support it, called after SetupParams with the work of the setup. With
// reuse off it runs setup. With reuse on, it skips setup (and reports
// reused) when the key of the current parameters is the key of the last
// successful setup; otherwise it forgets the last setup, runs setup and
// remembers the key only when setup succeeds.
func (b *Base) SetupOnce(setup func() error) (reused bool, err error) {
	key := b.SetupKey()
	tuned := b.tunables.StringValues()
	b.memo.mu.Lock()
	on := b.memo.on
	if on && b.memo.last != "" && b.memo.last == key {
		b.memo.reused = true
		b.memo.mu.Unlock()
		slog.Debug("setup reused: its values are unchanged since the last successful setup", "env", b.name, "key", key[:12])
		return true, nil
	}
	b.memo.last, b.memo.tuned, b.memo.reused = "", nil, false
	b.memo.mu.Unlock()
	if err := setup(); err != nil {
		return false, err
	}
	if on {
		b.memo.mu.Lock()
		b.memo.last, b.memo.tuned = key, tuned
		b.memo.mu.Unlock()
	}
	return false, nil
}

// ForgetSetup forgets the last successful setup, so that the next Setup
// runs in full (after a teardown, or a trial that did not succeed).
func (b *Base) ForgetSetup() {
	b.memo.mu.Lock()
	b.memo.last, b.memo.tuned, b.memo.reused = "", nil, false
	b.memo.mu.Unlock()
}

// SetupReused tells whether the current trial's setup was skipped.
func (b *Base) SetupReused() bool {
	b.memo.mu.Lock()
	defer b.memo.mu.Unlock()
	return b.memo.reused
}

// AddSetupReused adds SetupReusedMetric (1 or 0) to a successful run's
// results when reuse is on; a result of the scripts of that name wins.
func (b *Base) AddSetupReused(metrics map[string]any) {
	b.memo.mu.Lock()
	on, reused := b.memo.on, b.memo.reused
	b.memo.mu.Unlock()
	if !on || metrics == nil {
		return
	}
	name := SetupReusedMetric(b.name)
	if _, taken := metrics[name]; taken {
		return
	}
	v := int64(0)
	if reused {
		v = 1
	}
	metrics[name] = v
}

// SetupMatches tells whether a trial with these tunable values (as stored:
// name -> text) would find this environment set up for it: reuse is on, a
// setup is remembered, and the environment's own tunables have the same
// values in params. The other values of the key (const_args,
// required_args) are not known before the trial's Setup; they rarely
// change between trials, and a mismatch only costs a setup.
func (b *Base) SetupMatches(params map[string]string) bool {
	b.memo.mu.Lock()
	defer b.memo.mu.Unlock()
	if !b.memo.on || b.memo.last == "" {
		return false
	}
	for n, v := range b.memo.tuned {
		if p, ok := params[n]; !ok || p != v {
			return false
		}
	}
	return true
}

// SetupReuser is implemented by every environment that embeds Base.
type SetupReuser interface {
	ReusesSetup() bool
	ForgetSetup()
	SetupMatches(params map[string]string) bool
}

// Parent is implemented by environments made of other environments
// (CompositeEnv).
type Parent interface {
	Children() []Environment
}

// walk calls fn for env and every environment under it.
func walk(env Environment, fn func(Environment)) {
	if env == nil {
		return
	}
	fn(env)
	if p, ok := env.(Parent); ok {
		for _, c := range p.Children() {
			walk(c, fn)
		}
	}
}

// ForgetSetup makes env and every environment under it forget their last
// successful setup (the trial runner calls it after a trial that did not
// succeed).
func ForgetSetup(env Environment) {
	walk(env, func(e Environment) {
		if r, ok := e.(SetupReuser); ok {
			r.ForgetSetup()
		}
	})
}

// SetupAffinity tells whether some environment of the tree env would skip
// its setup for a trial with these tunable values (see
// Base.SetupMatches). Schedulers prefer such a trial runner.
func SetupAffinity(env Environment, params map[string]string) bool {
	found := false
	walk(env, func(e Environment) {
		if r, ok := e.(SetupReuser); ok && !found && r.ReusesSetup() && r.SetupMatches(params) {
			found = true
		}
	})
	return found
}
