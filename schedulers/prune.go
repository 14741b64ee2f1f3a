// Early stopping: a pruner judges each running trial's intermediate
// results (Spec.Progress) and stops the unpromising ones (cause
// trial.ErrPruned).

package schedulers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/benchtune/bench/analysis"
	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/schedulers/prune"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// Pruner kinds (PrunerConfig.Kind).
const (
	PrunerMedian = "median"
	PrunerASHA   = "asha"
)

// PrunedReasonPrefix starts the failure reason of a pruned trial. A pruned
// trial is stored CANCELED (mlos_bench's Status has no PRUNED, so an
// mlos_bench reading the database sees a cancelled trial), with the
// reason "run: pruned: <why>" (the runner's step prefix first).
const PrunedReasonPrefix = trial.PrunedMark

// PrunerConfig is the scheduler's "pruner" key (bench only; absent or ""
// = no early stopping, mlos_bench's behaviour).
type PrunerConfig struct {
	// Kind is PrunerMedian or PrunerASHA; "" = off.
	Kind string
	// Metric is the reported value judged (default: the first
	// optimization target).
	Metric string
	// Max: larger values of Metric are better (default: the target's
	// direction when Metric is a target, else minimise; "mode").
	Max bool
	// ModeSet records that "mode" was given.
	ModeSet bool
	// Median rule: startup_trials (default 5), warmup_steps (0),
	// min_trials (1).
	StartupTrials int
	WarmupSteps   int64
	MinTrials     int
	// ASHA: min_step (first rung, default 1), eta (reduction factor,
	// default 3), max_step (0: none).
	MinStep int64
	Eta     int
	MaxStep int64
}

var prunerKeys = map[string]bool{"kind": true, "metric": true, "mode": true, "startup_trials": true,
	"warmup_steps": true, "min_trials": true, "min_step": true, "eta": true, "max_step": true}

// withPruneDefaults adds the pruner key to a scheduler's defaults.
func withPruneDefaults(cfg map[string]any) map[string]any {
	cfg["pruner"] = ""
	return cfg
}

// decodePruner reads the "pruner" key of a merged scheduler config.
func decodePruner(cfg map[string]any, bad func(key, format string, args ...any)) PrunerConfig {
	p := PrunerConfig{StartupTrials: 5, MinTrials: 1, MinStep: 1, Eta: 3}
	var m map[string]any
	switch v := cfg["pruner"].(type) {
	case nil:
		return PrunerConfig{}
	case string:
		switch strings.TrimSpace(v) {
		case "", "none", "off":
			return PrunerConfig{}
		case PrunerMedian, PrunerASHA:
			m = map[string]any{"kind": strings.TrimSpace(v)}
		default:
			bad("pruner", "pruner must be \"median\", \"asha\" or an object with \"kind\", got %q", v)
			return PrunerConfig{}
		}
	case map[string]any:
		m = v
	default:
		bad("pruner", "pruner must be an object like {\"kind\": \"asha\"}, got %v", configs.PyStr(v))
		return PrunerConfig{}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !prunerKeys[k] {
			bad("pruner", "pruner: unknown key %q; known keys: %s", k, strings.Join(slices.Sorted(maps.Keys(prunerKeys)), ", "))
		}
	}
	kind, _ := m["kind"].(string)
	p.Kind = strings.TrimSpace(kind)
	if p.Kind != PrunerMedian && p.Kind != PrunerASHA {
		bad("pruner", "pruner.kind must be %q or %q, got %v", PrunerMedian, PrunerASHA, configs.PyStr(m["kind"]))
	}
	if v, ok := m["metric"]; ok {
		s, _ := v.(string)
		if p.Metric = strings.TrimSpace(s); p.Metric == "" {
			bad("pruner", "pruner.metric must be a metric name, got %v", configs.PyStr(v))
		}
	}
	if v, ok := m["mode"]; ok {
		p.ModeSet = true
		switch v {
		case "min":
		case "max":
			p.Max = true
		default:
			bad("pruner", "pruner.mode must be \"min\" or \"max\", got %v", configs.PyStr(v))
		}
	}
	type intKey struct {
		key string
		dst *int64
		min int64
	}
	var st, mt, eta int64 = int64(p.StartupTrials), int64(p.MinTrials), int64(p.Eta)
	ints := []intKey{{"startup_trials", &st, 0}, {"warmup_steps", &p.WarmupSteps, 0}, {"min_trials", &mt, 1},
		{"min_step", &p.MinStep, 1}, {"eta", &eta, 2}, {"max_step", &p.MaxStep, 0}}
	for _, f := range ints {
		v, ok := m[f.key]
		if !ok {
			continue
		}
		n, ok := toInt(v)
		if !ok || int64(n) < f.min {
			bad("pruner", "pruner.%s must be an integer >= %d, got %v", f.key, f.min, configs.PyStr(v))
			continue
		}
		*f.dst = int64(n)
	}
	p.StartupTrials, p.MinTrials, p.Eta = int(st), int(mt), int(eta)
	return p
}

// newPruner returns the configured pruner, or nil when off.
// maximize: the judged metric is maximised (reasons show its values as
// measured).
func (p PrunerConfig) newPruner(maximize bool) prune.Pruner {
	switch p.Kind {
	case PrunerMedian:
		return &prune.Median{StartupTrials: p.StartupTrials, WarmupSteps: p.WarmupSteps, MinTrials: p.MinTrials, Maximize: maximize}
	case PrunerASHA:
		return &prune.ASHA{MinStep: p.MinStep, Eta: p.Eta, MaxStep: p.MaxStep, Maximize: maximize}
	}
	return nil
}

// pruning is a scheduler's pruner with the state to call it from the
// runners' goroutines.
type pruning struct {
	mu     sync.Mutex
	p      prune.Pruner
	metric string
	max    bool
	pruned map[int]bool
}

// pruner returns the scheduler's pruning, made on first use (from the
// dispatcher's goroutine), or nil when no pruner is configured. On a
// resumed experiment it is rebuilt from the stored progress of the
// finished trials (Options.PastProgress).
func (s *Scheduler) pruner(ctx context.Context) *pruning {
	if s.pruning != nil || s.cfg.Pruner.Kind == "" {
		return s.pruning
	}
	pc := s.cfg.Pruner
	metric, maxi := pc.Metric, pc.Max
	if metric == "" && len(s.targets) > 0 {
		metric = s.targets[0].Name
	}
	if !pc.ModeSet {
		for _, t := range s.targets {
			if t.Name == metric {
				maxi = t.Max
			}
		}
	}
	s.pruning = &pruning{p: pc.newPruner(maxi), metric: metric, max: maxi, pruned: map[int]bool{}}
	if s.o.PastProgress != nil && s.exp != nil {
		if n, err := s.pruning.rebuild(ctx, s.exp, s.o.PastProgress); err != nil {
			s.log.Warn("early stopping: could not read the stored progress of earlier trials; the pruner starts without them", "err", err)
		} else if n > 0 {
			s.log.Info("early stopping: pruner rebuilt from the stored progress of earlier trials", "trials", n)
		}
	}
	return s.pruning
}

// pastReport is one stored progress report of a finished trial.
type pastReport struct {
	id int
	p  trial.Progress
}

// rebuild replays the stored progress of the experiment's finished trials
// into the pruner, in the order the reports were measured (time, then
// trial, then step), and marks those trials ended; the pruner's decisions
// during the replay are dropped. Unfinished trials run again from their
// first step and report anew. It returns how many trials were replayed.
func (pr *pruning) rebuild(ctx context.Context, exp interface {
	Trials(context.Context, storage.TrialFilter) ([]storage.Trial, error)
}, past func(context.Context, int) ([]trial.Progress, error)) (int, error) {
	trs, err := exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		return 0, err
	}
	var reps []pastReport
	var done []int
	for _, t := range trs {
		if !t.Finished() {
			continue
		}
		ps, err := past(ctx, t.ID)
		if err != nil {
			return 0, fmt.Errorf("trial %d: %w", t.ID, err)
		}
		for _, p := range ps {
			reps = append(reps, pastReport{t.ID, p})
		}
		done = append(done, t.ID)
	}
	slices.SortStableFunc(reps, func(a, b pastReport) int {
		if c := a.p.Ts.Compare(b.p.Ts); c != 0 {
			return c
		}
		if a.id != b.id {
			return a.id - b.id
		}
		return int(a.p.Step - b.p.Step)
	})
	for _, r := range reps {
		if v, ok := trial.Numeric(r.p.Values[pr.metric]); ok {
			pr.p.Report(r.id, r.p.Step, prune.Sign(v, pr.max))
		}
	}
	for _, id := range done {
		pr.p.Done(id)
		pr.pruned[id] = true // no more reports are judged for it
	}
	return len(done), nil
}

// pruneTrial is pruneProgress for a trial about to start, except that a
// confirmation re-run (analysis.IsConfirm: the search's best candidates
// and the defaults, re-run to full length after the search) is never
// judged: a pruner would compare it with the search's trials and could
// stop the very runs the confirmation needs, the defaults' first of all.
func (s *Scheduler) pruneTrial(ctx context.Context, t storage.Trial, next func(trial.Progress), cancel context.CancelCauseFunc) func(trial.Progress) {
	if analysis.IsConfirm(t) {
		return next
	}
	return s.pruneProgress(ctx, t.ID, next, cancel)
}

// pruneProgress wraps a trial's Progress listener (next, possibly nil) so
// that each report is also judged by the pruner; a trial it stops has its
// context cancelled with a cause wrapping trial.ErrPruned (runners stop
// it as a timed-out one and end it CANCELED, reason "pruned: ...").
func (s *Scheduler) pruneProgress(ctx context.Context, id int, next func(trial.Progress), cancel context.CancelCauseFunc) func(trial.Progress) {
	pr := s.pruner(ctx)
	if pr == nil || pr.p == nil || pr.metric == "" {
		return next
	}
	log := s.log
	return func(p trial.Progress) {
		if next != nil {
			next(p)
		}
		v, ok := trial.Numeric(p.Values[pr.metric])
		if !ok {
			return
		}
		pr.mu.Lock()
		if pr.pruned[id] {
			pr.mu.Unlock()
			return
		}
		stop, why := pr.p.Report(id, p.Step, prune.Sign(v, pr.max))
		if stop {
			pr.pruned[id] = true
		}
		pr.mu.Unlock()
		if stop {
			why = fmt.Sprintf("%s %s", pr.metric, why)
			log.Info("pruning trial", "trial", id, "step", p.Step, "reason", why)
			cancel(fmt.Errorf("%w: %s", trial.ErrPruned, why))
		}
	}
}

// pruneDone tells the pruner that a trial ended.
func (s *Scheduler) pruneDone(id int) {
	if pr := s.pruning; pr != nil && pr.p != nil {
		pr.mu.Lock()
		pr.p.Done(id)
		pr.mu.Unlock()
	}
}
