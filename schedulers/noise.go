package schedulers

import (
	"context"
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/benchtune/bench/analysis"
	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/aggregate"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// NoiseConfig holds bench's settings for noisy benchmarks: stopping rules,
// how repeats are aggregated, the noise-aware answer and the confirmation
// of the winner. Every one is off (mlos_bench's behaviour) by default.
type NoiseConfig struct {
	// MaxTime stops suggesting once this process has run the experiment
	// this long (max_time; 0: no limit). Running trials finish.
	MaxTime time.Duration
	// MaxCost stops once the sum of the result metric CostMetric over the
	// experiment's finished trials reaches it (max_cost, cost_metric).
	MaxCost    float64
	CostMetric string
	// ConvergedTrials stops once the best value of the first target has
	// improved by no more than ConvergedImprovement (relative to its
	// magnitude) over the last ConvergedTrials finished trials
	// (converged_trials, converged_improvement; 0: off).
	ConvergedTrials      int
	ConvergedImprovement float64
	// Aggregate is how repeats of a configuration are aggregated, per
	// target name ("" applies to every target without its own);
	// repeat_aggregate: "mean" (default), or an object {target: policy}.
	Aggregate map[string]aggregate.Policy
	// NoiseAware makes the reported best the model's (posterior mean,
	// aggregated repeats), the noise heteroscedastic from repeats, and the
	// acquisition noise-aware (noise_aware, default false).
	NoiseAware bool
	// NoiseSearch is the noise-aware optimizer's search (noise_search,
	// bench only): "global" (default) or "local" (a trust region around
	// the posterior-mean incumbent after a global phase; needs
	// noise_aware). See noise_search.go.
	NoiseSearch string
	// ConfirmTopK re-runs the k best configurations and the default,
	// interleaved, ConfirmRepeats times each at the end (confirm_top_k, 0:
	// off; confirm_repeats, default 5).
	ConfirmTopK    int
	ConfirmRepeats int
	// ConfirmRefine runs, before the confirmation, a local design of this
	// many trials around the model's best and confirms the minimiser of
	// the posterior mean there first (refine.go; confirm_refine, 0: off;
	// needs noise_aware, SMAC and confirm_top_k).
	ConfirmRefine int
	// ConfirmRefineMode is "design" (default) or "staged": the refinement
	// in rounds, only once the search has settled (refine_staged.go;
	// confirm_refine_mode, bench only).
	ConfirmRefineMode string
	// Racing repeats a configuration (up to trial_config_repeat_count
	// runs) only while it could be the best (racing.go; racing, default
	// false). RepeatSpread "interleaved" queues each repeat behind the
	// trials already waiting instead of back to back (repeat_spread,
	// default "back_to_back", as mlos_bench).
	Racing       bool
	RepeatSpread string
	// ConfirmNow suggests nothing new: the confirmation runs at once (bench
	// confirm; confirm_now).
	ConfirmNow bool
}

// Values of repeat_spread.
const (
	SpreadBackToBack  = "back_to_back"
	SpreadInterleaved = "interleaved"
)

// noiseDefaults are the keys of NoiseConfig with their defaults (globals
// reach them: --max_time 10m, --confirm_top_k 3, ...).
func noiseDefaults() map[string]any {
	return map[string]any{
		"max_time":              int64(0),
		"max_cost":              int64(0),
		"cost_metric":           "",
		"converged_trials":      int64(0),
		"converged_improvement": 0.01,
		"repeat_aggregate":      "mean",
		"noise_aware":           false,
		"noise_search":          optimizers.NoiseSearchGlobal,
		"confirm_top_k":         int64(0),
		"confirm_repeats":       int64(5),
		"confirm_refine":        int64(0),
		"confirm_refine_mode":   optimizers.RefineModeDesign,
		"confirm_now":           false,
		"racing":                false,
		"repeat_spread":         SpreadBackToBack,
	}
}

// withNoiseDefaults adds the noise keys to a scheduler's defaults.
func withNoiseDefaults(cfg map[string]any) map[string]any {
	maps.Copy(cfg, noiseDefaults())
	return cfg
}

// decodeNoise reads the NoiseConfig keys of a merged scheduler config.
func decodeNoise(cfg map[string]any, bad func(key, format string, args ...any)) NoiseConfig {
	var n NoiseConfig
	var err error
	if n.MaxTime, err = toDuration(cfg["max_time"]); err != nil {
		bad("max_time", "max_time: %v", err)
	}
	num := func(key string) float64 {
		if cfg[key] == nil {
			return 0
		}
		if f, ok := decode.Float(cfg[key]); ok { // the converters' rule
			return f
		}
		bad(key, "%s must be a number, got %v", key, configs.PyStr(cfg[key]))
		return 0
	}
	n.MaxCost = num("max_cost")
	if n.MaxCost < 0 || math.IsNaN(n.MaxCost) || math.IsInf(n.MaxCost, 0) {
		bad("max_cost", "max_cost must be a finite number >= 0, got %v", n.MaxCost)
	}
	n.CostMetric, _ = cfg["cost_metric"].(string)
	n.CostMetric = strings.TrimSpace(n.CostMetric)
	if n.MaxCost > 0 && n.CostMetric == "" {
		bad("max_cost", "max_cost needs cost_metric: the result metric whose sum over the trials is the cost (e.g. \"cost_metric\": \"duration_s\")")
	}
	ints := []struct {
		key string
		dst *int
		min int
	}{{"converged_trials", &n.ConvergedTrials, 0}, {"confirm_top_k", &n.ConfirmTopK, 0}, {"confirm_repeats", &n.ConfirmRepeats, 2}, {"confirm_refine", &n.ConfirmRefine, 0}}
	for _, it := range ints {
		v, ok := toInt(cfg[it.key])
		switch {
		case !ok:
			bad(it.key, "%s must be an integer, got %v", it.key, configs.PyStr(cfg[it.key]))
		case v < it.min:
			bad(it.key, "%s must be >= %d, got %d", it.key, it.min, v)
		default:
			*it.dst = v
		}
	}
	if n.ConfirmRefine > 0 && n.ConfirmTopK <= 0 {
		bad("confirm_refine", "confirm_refine needs confirm_top_k: the local refinement's minimiser is confirmed with the k best")
	}
	n.ConvergedImprovement = num("converged_improvement")
	if n.ConvergedImprovement < 0 {
		bad("converged_improvement", "converged_improvement must be >= 0 (a fraction of the best value, e.g. 0.01), got %v", n.ConvergedImprovement)
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{{"noise_aware", &n.NoiseAware}, {"confirm_now", &n.ConfirmNow}, {"racing", &n.Racing}} {
		v, ok := toBool(cfg[b.key])
		if !ok {
			bad(b.key, "%s must be true or false, got %v", b.key, configs.PyStr(cfg[b.key]))
		}
		*b.dst = v
	}
	switch v, _ := cfg["repeat_spread"].(string); strings.ToLower(strings.TrimSpace(v)) {
	case SpreadBackToBack, "":
		n.RepeatSpread = SpreadBackToBack
	case SpreadInterleaved:
		n.RepeatSpread = SpreadInterleaved
	default:
		bad("repeat_spread", "repeat_spread must be %q (default, as mlos_bench) or %q, got %v", SpreadBackToBack, SpreadInterleaved, configs.PyStr(cfg["repeat_spread"]))
	}
	n.NoiseSearch = decodeNoiseSearch(cfg, n.NoiseAware, bad)
	n.ConfirmRefineMode = decodeRefineMode(cfg, n, bad) // refine_staged.go
	n.Aggregate = map[string]aggregate.Policy{}
	switch a := cfg["repeat_aggregate"].(type) {
	case string:
		p, err := aggregate.Parse(a)
		if err != nil {
			bad("repeat_aggregate", "repeat_aggregate: %v", err)
		}
		n.Aggregate[""] = p
	case map[string]any:
		keys := make([]string, 0, len(a))
		for k := range a {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, ok := a[k].(string)
			p, err := aggregate.Parse(s)
			if !ok || err != nil {
				bad("repeat_aggregate", "repeat_aggregate.%s: want a policy name like \"median\", got %v", k, configs.PyStr(a[k]))
			}
			n.Aggregate[k] = p
		}
	case nil:
	default:
		bad("repeat_aggregate", "repeat_aggregate must be a policy name (mean, median, min, max, trimmed_mean, mean_minus_ksd) or an object {target: policy}, got %v", configs.PyStr(a))
	}
	return n
}

// Policy returns the aggregation of a target.
func (n NoiseConfig) Policy(target string) aggregate.Policy {
	if p, ok := n.Aggregate[target]; ok {
		return p
	}
	if p, ok := n.Aggregate[""]; ok {
		return p
	}
	return aggregate.Default
}

// stopper applies the stopping rules max_time, max_cost and converged.
type stopper struct {
	cfg   NoiseConfig
	start time.Time
	now   func() time.Time
	cost  float64
	// best holds the best value of the first target (to minimize) after
	// each finished trial that counts, +Inf before any success.
	best   []float64
	reason string
}

func newStopper(cfg NoiseConfig, now func() time.Time) *stopper {
	if now == nil {
		now = time.Now
	}
	return &stopper{cfg: cfg, start: now(), now: now}
}

// observe takes in a finished trial: its results (for the cost) and its
// first target's score (to minimize; +Inf for a failure).
func (st *stopper) observe(results map[string]any, score float64) {
	if st.cfg.MaxCost > 0 {
		if v, ok := trial.Numeric(results[st.cfg.CostMetric]); ok && v > 0 {
			st.cost += v
		}
	}
	b := math.Inf(1)
	if len(st.best) > 0 {
		b = st.best[len(st.best)-1]
	}
	st.best = append(st.best, math.Min(b, score))
}

// check returns why the experiment must stop now ("" to go on); once a
// rule fired, its reason sticks.
func (st *stopper) check() string {
	if st.reason != "" {
		return st.reason
	}
	c := st.cfg
	if c.ConfirmNow {
		st.reason = "bench confirm: no new suggestions"
		return st.reason
	}
	if c.MaxTime > 0 {
		if el := st.now().Sub(st.start); el >= c.MaxTime {
			st.reason = fmt.Sprintf("max_time %s reached (ran %s)", c.MaxTime, el.Round(time.Second))
		}
	}
	if st.reason == "" && c.MaxCost > 0 && st.cost >= c.MaxCost {
		st.reason = fmt.Sprintf("max_cost %g reached: %q sums to %g", c.MaxCost, c.CostMetric, st.cost)
	}
	if m := c.ConvergedTrials; st.reason == "" && m > 0 && len(st.best) > m {
		before, now := st.best[len(st.best)-1-m], st.best[len(st.best)-1]
		if !math.IsInf(before, 1) && before-now <= c.ConvergedImprovement*math.Abs(before) {
			st.reason = fmt.Sprintf("converged: the best %s improved by %s over the last %d trials (converged_improvement %g)",
				"value", relImprovement(before, now), m, c.ConvergedImprovement)
		}
	}
	return st.reason
}

func relImprovement(before, now float64) string {
	if before == 0 {
		return fmt.Sprintf("%g", before-now)
	}
	return fmt.Sprintf("%.3g%%", 100*(before-now)/math.Abs(before))
}

// EndReason says why the experiment's run ended (Stats.EndReason).
func (d *dispatch) endReason(runErr error, interrupted bool) string {
	s := d.s
	if d.searchEnd != "" && runErr == nil && !interrupted {
		return d.searchEnd + "; then the confirmation ran"
	}
	switch {
	case interrupted:
		return "interrupted"
	case runErr != nil:
		return "stopped: " + runErr.Error()
	case d.stop != nil && d.stop.reason != "":
		return d.stop.reason
	case d.budgetSpent:
		return fmt.Sprintf("budget spent: max_suggestions %d", s.opt.MaxSuggestions())
	case d.noMore:
		return "the optimizer had nothing more to suggest"
	case s.cfg.MaxTrials > 0 && d.trialCount >= s.cfg.MaxTrials:
		return fmt.Sprintf("budget spent: max_trials %d", s.cfg.MaxTrials)
	case d.fidelityCapped(): // fidelity.go
		return fmt.Sprintf("budget spent: max_trials %d (full-fidelity trials)", s.fid.maxTrials)
	case !s.opt.NotConverged():
		return fmt.Sprintf("budget spent: max_suggestions %d", s.opt.MaxSuggestions())
	}
	return "no more trials to run"
}

// stopFired reports whether a stopping rule ended the search.
func (d *dispatch) stopFired() bool { return d.stop != nil && d.stop.check() != "" }

// observeStop feeds a finished trial to the stopping rules.
func (d *dispatch) observeStop(results map[string]any, scores []float64) {
	if d.stop == nil {
		return
	}
	sc := math.Inf(1)
	if len(scores) > 0 {
		sc = scores[0]
	}
	d.stop.observe(results, sc)
}

// applyStop drops the trials queued but not stored yet once a stopping
// rule fired (stored ones stay pending, handed back for a resume).
func (d *dispatch) applyStop() {
	if !d.stopFired() || d.stopApplied {
		return
	}
	d.stopApplied = true
	kept := d.queue[:0]
	for _, it := range d.queue {
		if it.spec == nil {
			kept = append(kept, it)
		}
	}
	if n := len(d.queue) - len(kept); n > 0 {
		d.trialCount -= n
	}
	d.queue = kept
	d.s.log.Info("stopping rule: no new trials", "reason", d.stop.reason)
}

// observeStored feeds a trial finished before this run to the stopping
// rules (max_cost and converged count the whole experiment).
func (d *dispatch) observeStored(t storage.Trial) {
	if t.Status == trial.CANCELED {
		return
	}
	sc, _ := d.s.targets.Scores(t.Status, map[string]any(t.Results))
	d.observeStop(map[string]any(t.Results), sc)
	if d.racingOn() && !analysis.IsConfirm(t) {
		// Earlier runs count for racing; a configuration left short of its
		// repeats by an interrupted run is not completed.
		d.raceRecord(item{t: t}, t.Status, sc)
	}
}

// recordEnd keeps why the run ended in the stats and, where the storage
// can, as a note of the experiment (bench results and show print it).
func (s *Scheduler) recordEnd(ctx context.Context, reason string) {
	s.stats.EndReason = reason
	s.log.Info("experiment run ended", "reason", reason)
	notes := []string{storage.EndReasonPrefix + reason}
	if n := s.noiseBestNote(); n != "" {
		notes = append([]string{n}, notes...)
	}
	if n := analysis.AggregateNote(s.targets, s.policies()); n != "" {
		notes = append([]string{n}, notes...)
	}
	if na, ok := s.exp.(storage.NoteAdder); ok {
		if err := na.AddNotes(ctx, notes...); err != nil {
			s.log.Warn("storing why the run ended", "err", err)
		}
	}
}

// noiseBestNote names, in noise-aware mode, the configuration the
// optimizer's model ranks best, with the learned noise ("" otherwise).
func (s *Scheduler) noiseBestNote() string {
	if !s.cfg.Noise.NoiseAware {
		return ""
	}
	r, ok := s.opt.(Ranker)
	if !ok {
		return ""
	}
	top := r.Ranked(1)
	if len(top) == 0 {
		return ""
	}
	tun := s.o.Tunables.Copy()
	if err := tun.Assign(top[0]); err != nil {
		return ""
	}
	why := "ranked first by the optimizer"
	if nr, ok := s.opt.(optimizers.NoiseReporter); ok {
		if rel, snr, ok := nr.NoiseLevel(); ok {
			why = fmt.Sprintf("lowest posterior mean; learned noise σ_n = %.3g × the standard deviation of the observed values, signal/noise %.3g", rel, snr)
		}
	}
	s.stats.NoiseBest = why
	return analysis.NoiseBestNote(tun.Hash(), why)
}

// applyNoise hands the aggregation of repeats and the noise-aware mode to
// an optimizer that takes them (before it observes anything).
func (s *Scheduler) applyNoise() {
	ns, ok := s.opt.(optimizers.NoiseSetter)
	if !ok {
		return
	}
	var pols []aggregate.Policy
	custom := false
	for _, t := range s.targets {
		p := s.cfg.Noise.Policy(t.Name)
		pols = append(pols, p)
		custom = custom || p != aggregate.Default
	}
	if !custom {
		pols = nil // the mean: mlos_bench's behaviour, untouched
	}
	ns.SetNoise(optimizers.NoiseSettings{Aggregate: pols, Aware: s.cfg.Noise.NoiseAware, Search: s.cfg.Noise.NoiseSearch})
}
