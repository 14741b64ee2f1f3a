// Package hyperband plans multi-fidelity runs: Hyperband brackets of
// successive halving, promoted asynchronously (ASHA), so that N runners
// never wait for a rung to fill.
//
// It is pure (no I/O, no clock, no goroutines) and not safe for
// concurrent use: the caller serialises calls. The scheduler
// (schedulers/fidelity.go) and the optimizer benchmarks (bench/optbench)
// drive it the same way.
//
// # Rungs and brackets
//
// A fidelity runs from Min (cheapest) to Max (full fidelity, the one whose
// results are the answer). The rungs are Min·Eta^k for every k with
// Min·Eta^k < Max, then Max itself (so the last step may be less than a
// factor of Eta): with Min 5, Max 60, Eta 3 the rungs are 5, 15, 45, 60.
// With Integer set every rung is rounded to an integer (Min and Max must
// then be integers).
//
// Bracket b (0 ≤ b < Brackets) starts its configurations at rung b:
// bracket 0 is the most aggressive (everything starts at Min), the last
// possible bracket (b = top rung) runs everything at full fidelity only.
// Brackets = 1 is plain ASHA; the default (0) is every bracket, as
// Hyperband. A new configuration goes to the bracket that is furthest
// behind its share, the shares being the numbers of configurations
// synchronous Hyperband starts in each bracket (η^s/(s+1) for a bracket
// with s halvings), which gives each bracket about the same budget; ties
// go to the more aggressive bracket. The choice depends only on how many
// configurations each bracket has, so a planner rebuilt from stored trials
// (Resume) makes the same choices as one that never stopped.
//
// # Promotion (asynchronous successive halving)
//
// Within a bracket, a configuration whose result at rung r is in the top
// ⌊n/Eta⌋ of the n results the bracket has at rung r so far (lower score
// is better; ties by key) may be promoted to rung r+1, once: it runs
// again at the higher fidelity. This is ASHA's rule (Li et al., "A System
// for Massively Parallel Hyperparameter Tuning", MLSys 2020), applied in
// each bracket as their asynchronous Hyperband does: a free runner is
// given the best promotable configuration of the highest rung (across
// brackets), else a new configuration. Nothing ever waits for a rung to
// fill, at the price of some promotions that synchronous successive
// halving would not make (a configuration may be promoted early, when it
// is in the top 1/Eta of the few results the rung had then). Until a rung
// has Eta results nothing is promoted from it. A failed run (score NaN or
// +Inf) counts in n but is never promoted.
//
// # Decisions by a model
//
// SetRanker replaces the observed scores by a ranker's (typically a
// model's predicted value at full fidelity) when a rung's top ⌊n/Eta⌋ is
// chosen; failed runs still never get promoted. AddFull starts a new
// configuration directly at full fidelity, in the last bracket, whatever
// Brackets is (for a configuration the caller's model is confident
// about). A planner rebuilt with Resume makes the same decisions as one
// that never stopped when its ranker gives the same scores.
//
// # API
//
//	p, err := hyperband.New[int](hyperband.Config{Min: 5, Max: 60, Eta: 3, Integer: true})
//	// a runner is free:
//	if job, ok := p.Promotion(); ok {
//		// run configuration job.Key again at job.Fidelity (rung job.Rung)
//	} else {
//		b, f := p.NextBracket()
//		// ask the optimizer for a configuration k, run it at fidelity f:
//		job, err := p.Add(k, b)
//	}
//	// a run ended:
//	err := p.Report(k, job.Rung, score) // lower is better; NaN/+Inf = failed
//
// Resume(k, bracket, rung) rebuilds the state from stored runs (in any
// order of keys, rungs of one key in increasing order), each followed by
// Report when that run finished; a configuration whose highest run is
// unfinished stays "running" there (the caller runs it again), and
// configurations that had earned a promotion that was not started yet get
// it from Promotion. Full reports whether a rung is the last (Max): only
// results there are answers.
package hyperband

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Config is a planner's setting.
type Config struct {
	// Min and Max bound the fidelity: 0 < Min < Max; Max is full fidelity.
	Min, Max float64
	// Eta is the reduction factor (>= 2): a rung keeps the top 1/Eta.
	Eta int
	// Brackets is how many brackets are used, the most aggressive first
	// (0: all of them, one per rung; 1: ASHA, everything starts at Min).
	Brackets int
	// Integer rounds the rungs to integers (a fidelity carried by an
	// integer tunable or parameter); Min and Max must be integers.
	Integer bool
}

// Validate checks a config; errors name the key at fault ("min", "max",
// "eta", "brackets").
func (c Config) Validate() error {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	switch {
	case bad(c.Min) || c.Min <= 0:
		return fmt.Errorf("min must be a number > 0, got %g", c.Min)
	case bad(c.Max) || c.Max <= c.Min:
		return fmt.Errorf("max must be a number greater than min (%g), got %g", c.Min, c.Max)
	case c.Eta < 2:
		return fmt.Errorf("eta must be an integer >= 2, got %d", c.Eta)
	case c.Integer && (c.Min != math.Trunc(c.Min) || c.Max != math.Trunc(c.Max)):
		return fmt.Errorf("min and max must be integers for an integer fidelity, got %g and %g", c.Min, c.Max)
	case c.Brackets < 0:
		return fmt.Errorf("brackets must be >= 0 (0: one per rung), got %d", c.Brackets)
	}
	if n := len(c.Rungs()); c.Brackets > n {
		return fmt.Errorf("brackets must be at most the number of rungs (%d: %s), got %d", n, c.rungList(), c.Brackets)
	}
	return nil
}

// Rungs returns the fidelities of the rungs, increasing, the last one Max
// (nil for a config that does not validate its min, max and eta).
func (c Config) Rungs() []float64 {
	if c.Min <= 0 || !(c.Max > c.Min) || c.Eta < 2 || math.IsInf(c.Max, 0) {
		return nil
	}
	var out []float64
	for r := c.Min; r < c.Max; r *= float64(c.Eta) {
		v := r
		if c.Integer {
			v = math.Round(v)
		}
		if v >= c.Max {
			break
		}
		if len(out) == 0 || v > out[len(out)-1] {
			out = append(out, v)
		}
	}
	return append(out, c.Max)
}

func (c Config) rungList() string {
	var s []string
	for _, r := range c.Rungs() {
		s = append(s, fmt.Sprintf("%g", r))
	}
	return strings.Join(s, ", ")
}

// Job is a run to start: configuration Key at rung Rung (fidelity
// Fidelity) of bracket Bracket. Promoted is set for a promotion (the
// configuration ran at rung Rung-1).
type Job[K cmp.Ordered] struct {
	Key      K
	Bracket  int
	Rung     int
	Fidelity float64
	Promoted bool
}

// entry is one configuration.
type entry struct {
	bracket int
	rung    int  // the highest rung it was started at
	running bool // its run at rung has no result yet
	scores  map[int]float64
}

// Planner plans the runs of one experiment.
type Planner[K cmp.Ordered] struct {
	cfg     Config
	rungs   []float64
	weights []float64 // per bracket: synchronous Hyperband's share
	count   []int     // per bracket: configurations added
	direct  int       // configurations started at full fidelity by AddFull outside the brackets in use
	entries map[K]*entry
	// at[b][r] holds the keys with a result at rung r of bracket b, for
	// every possible bracket (one per rung: AddFull uses the last).
	at     [][][]K
	ranker Ranker[K]
	dyn    *dynState[K] // dynamic continuation (dyn.go); nil: successive halving
}

// Ranker scores the configurations keys, which have results at one rung of
// one bracket, for promotion: lower is better, one score per key in order
// (NaN counts as worst). The usual one is a model's prediction of each
// configuration's value at full fidelity (schedulers' promote_by
// "model"). ok false: rank by the observed results (no model yet).
type Ranker[K cmp.Ordered] func(keys []K) (scores []float64, ok bool)

// ErrUnknown is wrapped when a key was never added.
var ErrUnknown = errors.New("unknown configuration")

// New returns a planner for a valid config.
func New[K cmp.Ordered](c Config) (*Planner[K], error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := &Planner[K]{cfg: c, rungs: c.Rungs(), entries: map[K]*entry{}}
	nb := c.Brackets
	if nb == 0 {
		nb = len(p.rungs)
	}
	top := len(p.rungs) - 1
	for b := range nb {
		s := top - b // halvings in bracket b
		p.weights = append(p.weights, math.Pow(float64(c.Eta), float64(s))/float64(s+1))
	}
	p.count = make([]int, nb)
	p.at = make([][][]K, len(p.rungs))
	for b := range p.at {
		p.at[b] = make([][]K, len(p.rungs))
	}
	return p, nil
}

// Config returns the planner's config.
func (p *Planner[K]) Config() Config { return p.cfg }

// Rungs returns the rungs' fidelities (Config.Rungs).
func (p *Planner[K]) Rungs() []float64 { return slices.Clone(p.rungs) }

// Brackets returns the number of brackets in use.
func (p *Planner[K]) Brackets() int { return len(p.count) }

// Fidelity returns the fidelity of rung r.
func (p *Planner[K]) Fidelity(r int) float64 { return p.rungs[r] }

// Full reports whether rung r is the last one (full fidelity).
func (p *Planner[K]) Full(r int) bool { return r == len(p.rungs)-1 }

// RungOf returns the rung whose fidelity is f (within a relative 1e-9),
// or false.
func (p *Planner[K]) RungOf(f float64) (int, bool) {
	for r, v := range p.rungs {
		if math.Abs(v-f) <= 1e-9*math.Max(1, math.Abs(v)) {
			return r, true
		}
	}
	return 0, false
}

// NextBracket returns the bracket a new configuration goes to, and the
// fidelity it starts at (its first rung). It changes nothing: Add does.
func (p *Planner[K]) NextBracket() (bracket int, fidelity float64) {
	best, bestV := 0, math.Inf(1)
	for b, w := range p.weights {
		if v := float64(p.count[b]+1) / w; v < bestV-1e-12 {
			best, bestV = b, v
		}
	}
	return best, p.rungs[best]
}

// Add records a new configuration k, started in bracket b at its first
// rung; it returns the run to start.
func (p *Planner[K]) Add(k K, b int) (Job[K], error) {
	if b < 0 || b >= len(p.count) {
		return Job[K]{}, fmt.Errorf("bracket %d out of range (0..%d)", b, len(p.count)-1)
	}
	return p.add(k, b)
}

// AddFull records a new configuration k started directly at full
// fidelity, in the last possible bracket (b = the top rung, which runs
// everything at full fidelity only), whatever Brackets is: what a caller
// does with a configuration it is confident about (schedulers' start
// "model"). When that bracket is not among the brackets in use (Brackets
// < the number of rungs), its configurations do not count in
// NextBracket's shares (nor in Counts).
func (p *Planner[K]) AddFull(k K) (Job[K], error) {
	return p.add(k, len(p.rungs)-1)
}

func (p *Planner[K]) add(k K, b int) (Job[K], error) {
	if _, ok := p.entries[k]; ok {
		return Job[K]{}, fmt.Errorf("configuration %v added twice", k)
	}
	p.entries[k] = &entry{bracket: b, rung: b, running: true, scores: map[int]float64{}}
	if b < len(p.count) {
		p.count[b]++
	} else {
		p.direct++
	}
	return Job[K]{Key: k, Bracket: b, Rung: b, Fidelity: p.rungs[b]}, nil
}

// SetRanker makes promotions rank each rung's results by f instead of by
// the observed scores (nil: by the observed scores, the default). A failed
// run is never promoted whatever f says. f is called by Promotion,
// Promotable and Rank; its scores may change between calls (a model that
// learned more), so a configuration may earn a promotion later that it did
// not have earlier, and a rung may end up promoting more than 1/Eta of
// its configurations in all.
func (p *Planner[K]) SetRanker(f Ranker[K]) { p.ranker = f }

// Report records the result of k's run at rung r: score is lower-better
// (negate a maximised metric); NaN or +Inf means the run failed (it is
// never promoted). A second report of the same rung replaces the first.
func (p *Planner[K]) Report(k K, r int, score float64) error {
	e, ok := p.entries[k]
	if !ok {
		return fmt.Errorf("report of %v: %w", k, ErrUnknown)
	}
	if r < e.bracket || r > e.rung {
		return fmt.Errorf("report of %v at rung %d: it runs in bracket %d and was started up to rung %d", k, r, e.bracket, e.rung)
	}
	if math.IsNaN(score) {
		score = math.Inf(1)
	}
	if _, seen := e.scores[r]; !seen {
		p.at[e.bracket][r] = append(p.at[e.bracket][r], k)
	}
	e.scores[r] = score
	if r == e.rung {
		e.running = false
	}
	return nil
}

// Resume records, while rebuilding a planner from stored runs, that k was
// started at rung r of bracket b (a first run when k is new, else a
// promotion that was made); call Report after it when that run finished.
func (p *Planner[K]) Resume(k K, b, r int) error {
	e, ok := p.entries[k]
	if !ok {
		if b != len(p.rungs)-1 || b < len(p.count) {
			if _, err := p.Add(k, b); err != nil {
				return err
			}
		} else if _, err := p.AddFull(k); err != nil {
			return err
		}
		e = p.entries[k]
	}
	if e.bracket != b {
		return fmt.Errorf("configuration %v: stored in brackets %d and %d", k, e.bracket, b)
	}
	if r < b || r >= len(p.rungs) {
		return fmt.Errorf("configuration %v: rung %d is out of bracket %d's range (%d..%d)", k, r, b, b, len(p.rungs)-1)
	}
	if r > e.rung {
		e.rung, e.running = r, true
	} else if r == e.rung {
		_, has := e.scores[r]
		e.running = !has
	}
	return nil
}

// Promotion returns the best configuration that has earned a promotion
// and not had it yet, highest rung first (then the most aggressive
// bracket), and records it as started at its next rung; false when none
// has.
func (p *Planner[K]) Promotion() (Job[K], bool) {
	if p.dyn != nil {
		return Job[K]{}, false // continuations come from Next (dyn.go)
	}
	for r := len(p.rungs) - 2; r >= 0; r-- {
		for b := range p.at {
			if k, ok := p.promotable(b, r); ok {
				e := p.entries[k]
				e.rung, e.running = r+1, true
				return Job[K]{Key: k, Bracket: b, Rung: r + 1, Fidelity: p.rungs[r+1], Promoted: true}, true
			}
		}
	}
	return Job[K]{}, false
}

// Promotable reports whether some configuration has earned a promotion it
// did not have yet (Promotion would return one).
func (p *Planner[K]) Promotable() bool {
	if p.dyn != nil {
		return false
	}
	for r := len(p.rungs) - 2; r >= 0; r-- {
		for b := range p.at {
			if _, ok := p.promotable(b, r); ok {
				return true
			}
		}
	}
	return false
}

// promotable returns the best key of bracket b's rung r that is in the
// top ⌊n/Eta⌋ and still at rung r.
func (p *Planner[K]) promotable(b, r int) (K, bool) {
	var zero K
	keys := p.at[b][r]
	keep := len(keys) / p.cfg.Eta
	if keep == 0 {
		return zero, false
	}
	for _, k := range p.ranked(b, r)[:keep] {
		e := p.entries[k]
		if math.IsInf(e.scores[r], 1) {
			return zero, false // the rest are failures too
		}
		if e.rung == r && !e.running {
			return k, true
		}
	}
	return zero, false
}

// ranked returns bracket b's keys with a result at rung r, best first
// (ties by key): by the observed scores, or by the ranker's when one is
// set and has them (failed runs last either way).
func (p *Planner[K]) ranked(b, r int) []K {
	keys := slices.Clone(p.at[b][r])
	if p.ranker != nil && len(keys) > 0 {
		if sc, ok := p.ranker(keys); ok && len(sc) == len(keys) {
			by := make(map[K]float64, len(keys))
			for i, k := range keys {
				v := sc[i]
				if math.IsNaN(v) {
					v = math.Inf(1)
				}
				by[k] = v
			}
			slices.SortFunc(keys, func(x, y K) int {
				fx, fy := math.IsInf(p.entries[x].scores[r], 1), math.IsInf(p.entries[y].scores[r], 1)
				switch {
				case fx && !fy:
					return 1
				case fy && !fx:
					return -1
				}
				if c := cmp.Compare(by[x], by[y]); c != 0 {
					return c
				}
				return cmp.Compare(x, y)
			})
			return keys
		}
	}
	slices.SortFunc(keys, func(x, y K) int {
		if c := cmp.Compare(p.entries[x].scores[r], p.entries[y].scores[r]); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	return keys
}

// Rank returns k's rank (1 = best) among the n results of its bracket at
// rung r, and how many of them (⌊n/Eta⌋) earn a promotion; ok is false
// when k has no result there.
func (p *Planner[K]) Rank(k K, r int) (rank, n, keep int, ok bool) {
	e, found := p.entries[k]
	if !found {
		return 0, 0, 0, false
	}
	if _, has := e.scores[r]; !has {
		return 0, 0, 0, false
	}
	keys := p.ranked(e.bracket, r)
	return slices.Index(keys, k) + 1, len(keys), len(keys) / p.cfg.Eta, true
}

// State is what the planner knows of configuration k: its bracket, the
// highest rung it was started at, whether that run is still going, and its
// scores by rung.
func (p *Planner[K]) State(k K) (bracket, rung int, running bool, scores map[int]float64, ok bool) {
	e, found := p.entries[k]
	if !found {
		return 0, 0, false, nil, false
	}
	s := make(map[int]float64, len(e.scores))
	for r, v := range e.scores {
		s[r] = v
	}
	return e.bracket, e.rung, e.running, s, true
}

// Running returns how many configurations have a run without a result.
func (p *Planner[K]) Running() int {
	n := 0
	for _, e := range p.entries {
		if e.running {
			n++
		}
	}
	return n
}

// Counts returns how many configurations each bracket has.
func (p *Planner[K]) Counts() []int { return slices.Clone(p.count) }

// String describes the plan, e.g. "rungs 5, 15, 45, 60 (eta 3); 4
// brackets starting at 5, 15, 45, 60".
func (p *Planner[K]) String() string {
	var starts []string
	for b := range p.count {
		starts = append(starts, fmt.Sprintf("%g", p.rungs[b]))
	}
	return fmt.Sprintf("rungs %s (eta %d); %d bracket(s) starting at %s", p.cfg.rungList(), p.cfg.Eta, len(p.count), strings.Join(starts, ", "))
}
