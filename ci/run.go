package ci

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/analysis"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/launcher"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// Entry is one configuration of the set bench ci runs.
type Entry struct {
	Label  string
	Values map[string]any // empty: the defaults
}

// BuildSet returns the set of configurations: each --tunable_values file
// of l (taken out of l, so that they are members of the set rather than
// initial values), then the best configuration of experiment bestOf (""
// for none); with neither, the defaults.
func BuildSet(ctx context.Context, l *configs.Launch, bestOf string) ([]Entry, error) {
	var set []Entry
	for _, file := range l.TunableValues {
		doc, err := l.Loader.Load(file, configs.KindTunableValues)
		if err != nil {
			return nil, err
		}
		vals, err := tunables.ParseValues(doc.At())
		if err != nil {
			return nil, err
		}
		if vals == nil {
			vals = map[string]any{}
		}
		set = append(set, Entry{Label: filepath.Base(file), Values: vals})
	}
	l.TunableValues = nil
	if bestOf != "" {
		e, err := best(ctx, l, bestOf)
		if err != nil {
			return nil, err
		}
		set = append(set, e)
	}
	if len(set) == 0 {
		set = append(set, Entry{Label: "defaults", Values: map[string]any{}})
	}
	return set, nil
}

// best returns the best configuration of a stored experiment (by its
// first objective, then the others).
func best(ctx context.Context, l *configs.Launch, id string) (Entry, error) {
	st, err := launcher.OpenStorage(ctx, l.Loader, l.Storage, l.Globals, true)
	if err != nil {
		return Entry{}, fmt.Errorf("--best-of: %w", err)
	}
	defer st.Close()
	exp, err := st.LoadExperiment(ctx, id)
	if err != nil {
		return Entry{}, fmt.Errorf("--best-of %q: %w", id, err)
	}
	trials, err := exp.Trials(ctx, storage.TrialFilter{Statuses: []trial.Status{trial.SUCCEEDED}})
	if err != nil {
		return Entry{}, err
	}
	// The experiment's answer: its confirmed winner, a noise-aware run's
	// pick, else (as before) the best trial.
	targets := storage.Targets(exp.Info().Objectives)
	top, ok := analysis.Best(exp.Info().Notes, trials, targets, analysis.PoliciesFromNotes(exp.Info().Notes, targets))
	if !ok {
		return Entry{}, fmt.Errorf("--best-of %q: no successful trial with values for its objectives", id)
	}
	vals := make(map[string]any, len(top.Params))
	for k, v := range top.Params {
		vals[k] = v
	}
	label := fmt.Sprintf("best of %s (trial %d)", id, top.TrialID)
	if top.Basis != analysis.BasisObservation {
		label = fmt.Sprintf("best of %s (config %d, %s)", id, top.ConfigID, top.Basis)
	}
	return Entry{Label: label, Values: vals}, nil
}

// LexLess orders score vectors (to minimize) lexicographically.
func LexLess(a, b []float64) bool {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i < len(b) && a[i] < b[i]
		}
	}
	return false
}

// RunOptions tune Build.
type RunOptions struct {
	Set    []Entry
	Repeat int
	// SaveAs names the experiment (it must be new); "" gives
	// <experiment_id>-ci-<UTC time>.
	SaveAs     string
	Thresholds *Thresholds
	Observer   schedulers.Observer
	// Now stamps the experiment id (nil: time.Now).
	Now func() time.Time
	// Order of the set within each of the Repeat cycles: "" or
	// OrderAlternate, the set's order (mlos_bench's ManualOptimizer
	// cycle); OrderRandomBlocks, a seeded random order per cycle (Seed).
	Order string
	Seed  uint64
	// Looks (runs per configuration, increasing, the last at most Repeat)
	// and Look make a sequential run (--repeat auto): once every
	// configuration has run Looks[k] times, Look(k) is called (on the
	// scheduler's goroutine, with the trials stored), and the run stops
	// when it returns true.
	Looks []int
	Look  func(k int) bool
}

// Run is an assembled bench ci run.
type Run struct {
	*launcher.Run
	// Configs are the set's configuration hashes and labels, in set order
	// (a configuration given twice appears once).
	Configs []Entry
	hashes  []string
}

// Build assembles a bench ci run with launcher.Build: the set is replayed
// Repeat times, interleaved (mlos_bench's ManualOptimizer cycling over the
// set with max_cycles = Repeat), every repeat runs (no reuse of stored
// results, trial_config_repeat_count 1), and the run is its own
// experiment.
func Build(ctx context.Context, l *configs.Launch, o RunOptions) (*Run, error) {
	if len(o.Set) == 0 || o.Repeat < 1 {
		return nil, errors.New("bench ci: an empty set or repeat < 1")
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	stamp := now().UTC().Format("20060102T150405.000Z")
	cr := &Run{}
	var stopped atomic.Bool
	observer := o.Observer
	if o.Look != nil {
		observer = &lookObserver{inner: o.Observer, perLook: len(o.Set), looks: o.Looks, look: o.Look, stopped: &stopped}
	}
	r, err := launcher.Build(ctx, l, launcher.Options{
		Observer: observer,
		AdjustScheduler: func(cfg *schedulers.Config) {
			id := o.SaveAs
			if id == "" {
				base := cfg.ExperimentID
				if _, ok := l.Globals["experiment_id"]; !ok && base == "DEFAULT_EXPERIMENT_ID" {
					env := filepath.Base(l.Environment)
					base = strings.TrimSuffix(env, filepath.Ext(env))
				}
				id = base + "-ci-" + stamp
			}
			cfg.ExperimentID = id
			l.Globals["experiment_id"] = id
			cfg.Reuse, cfg.ReuseFrom = false, ""
			cfg.TrialConfigRepeatCount = 1
			cfg.MaxTrials = len(o.Set) * o.Repeat
		},
		Optimizer: func(r *launcher.Run, configured optimizers.Optimizer) (optimizers.Optimizer, error) {
			opt, err := cr.optimizer(r, configured, o)
			if err != nil || o.Look == nil {
				return opt, err
			}
			return stoppable{Optimizer: opt, stopped: &stopped}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	cr.Run = r
	if r.Resumed {
		r.Close()
		return nil, fmt.Errorf("experiment %q already exists in %s: --save-as needs a new name", r.ExperimentID, r.Storage.Describe())
	}
	return cr, nil
}

// optimizer replays the set with the configured optimizer's targets (or,
// with no optimizer and no optimization_targets configured, the
// thresholded metrics, so that an environment without a "score" result
// works as it is).
func (cr *Run) optimizer(r *launcher.Run, configured optimizers.Optimizer, o RunOptions) (optimizers.Optimizer, error) {
	cycle := make([]any, len(o.Set))
	seen := map[string]bool{}
	for i, e := range o.Set {
		cycle[i] = e.Values
		tun := r.Tunables.Copy()
		if err := tun.Assign(e.Values); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Label, err)
		}
		if h := tun.Hash(); !seen[h] {
			seen[h] = true
			cr.Configs = append(cr.Configs, e)
			cr.hashes = append(cr.hashes, h)
		}
	}
	targets := map[string]any{}
	for _, t := range configured.Targets() {
		targets[t.Name] = t.Direction()
	}
	if _, set := r.Launch.Globals["optimization_targets"]; r.Launch.Optimizer == "" && !set && o.Thresholds != nil {
		targets = map[string]any{}
		for _, rule := range o.Thresholds.Metrics {
			dir := "min"
			if rule.MaxIncrease == nil {
				dir = "max"
			}
			targets[rule.Metric] = dir
		}
	}
	cycles := o.Repeat
	if o.Order == OrderRandomBlocks {
		cycle, cycles = blockCycle(o.Set, o.Repeat, o.Seed), 1
	}
	return optimizers.New(optimizers.Spec{
		Class: "mlos_bench.optimizers.ManualOptimizer",
		Config: map[string]any{
			"tunable_values_cycle": cycle,
			"max_cycles":           int64(cycles),
			"max_suggestions":      int64(o.Repeat * len(o.Set)),
			"optimization_targets": targets,
		},
		Tunables: r.Tunables,
		Globals:  r.Launch.Globals,
	})
}

// Samples reads the run's trials back as samples, labelled by the set;
// failed counts the trials that did not succeed. Every configuration of
// the set has an entry, with no values when none of its trials succeeded.
func (cr *Run) Samples(ctx context.Context) (s *Samples, trials, failed int, err error) {
	ts, err := cr.Experiment.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		return nil, 0, 0, err
	}
	labels := map[string]string{}
	for i, h := range cr.hashes {
		labels[h] = cr.Configs[i].Label
	}
	for _, t := range ts {
		if t.Status != trial.SUCCEEDED {
			failed++
		}
	}
	s = FromTrials(cr.ExperimentID, ts, func(t storage.Trial) string {
		if l, ok := labels[t.ConfigHash]; ok {
			return l
		}
		return "config " + strconv.FormatInt(t.ConfigID, 10)
	})
	for i, h := range cr.hashes {
		if s.Find(h) == nil {
			s.Configs = append(s.Configs, ConfigSamples{Key: h, Label: cr.Configs[i].Label, Values: map[string][]float64{}})
		}
	}
	// In set order (not the order of the first trials: with random blocks
	// the second configuration may run first).
	rank := make(map[string]int, len(cr.hashes))
	for i, h := range cr.hashes {
		rank[h] = i + 1
	}
	slices.SortStableFunc(s.Configs, func(a, b ConfigSamples) int {
		ra, rb := rank[a.Key], rank[b.Key]
		if ra == 0 {
			ra = len(rank) + 1
		}
		if rb == 0 {
			rb = len(rank) + 1
		}
		return ra - rb
	})
	return s, len(ts), failed, nil
}

// LoadSamples reads one side of a comparison: an existing file is a
// bench export file; anything else names an experiment of the storage.
func LoadSamples(ctx context.Context, loader *configs.Loader, storageSpec string, globals map[string]any, ref string) (*Samples, error) {
	if fi, err := os.Stat(ref); err == nil && !fi.IsDir() {
		return ReadFile(ref)
	}
	st, err := launcher.OpenStorageForReading(ctx, loader, storageSpec, globals)
	if err != nil {
		if errors.Is(err, storage.ErrNoDatabase) {
			return nil, fmt.Errorf("%q is neither a file nor an experiment: %w", ref, err)
		}
		return nil, err
	}
	defer st.Close()
	exp, err := st.LoadExperiment(ctx, ref)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("%q is neither a file nor an experiment in %s", ref, st.Describe())
		}
		return nil, err
	}
	trials, err := exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		return nil, err
	}
	s := FromTrials(ref, trials, nil)
	if len(s.Configs) == 0 {
		return nil, fmt.Errorf("experiment %q has no successful trial", ref)
	}
	return s, nil
}
