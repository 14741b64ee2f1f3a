// Package analysis reads an experiment's stored trials as a noisy
// benchmark should be read: the repeats of each configuration aggregated
// into one value with its spread (ByConfig), and the confirmation runs
// that re-measure the best candidates against the default, interleaved,
// judged by a stated test (Confirm). bench results, bench show, the
// report, bench ci and the scheduler's final answer all use it, so that
// every one of them reports the same winner.
package analysis

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/benchtune/bench/internal/aggregate"
	"github.com/benchtune/bench/internal/stats"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// Trial metadata (trial_param rows) written by the confirmation phase.
const (
	// MetaPhase is "confirm" on a confirmation trial.
	MetaPhase = "phase"
	// PhaseConfirm marks a confirmation trial.
	PhaseConfirm = "confirm"
	// MetaRole is "default" or "candidate" on a confirmation trial.
	MetaRole = "confirm_role"
	// MetaRound is the round (1..M) of a confirmation trial.
	MetaRound = "confirm_round"
)

// Roles of confirmation trials.
const (
	RoleDefault   = "default"
	RoleCandidate = "candidate"
)

// IsConfirm reports whether a stored trial is a confirmation run.
func IsConfirm(t storage.Trial) bool { return t.Metadata[MetaPhase] == PhaseConfirm }

// Config is one configuration of an experiment with its repeats
// aggregated.
type Config struct {
	ConfigID   int64             `json:"config_id"`
	ConfigHash string            `json:"config_hash"`
	Params     map[string]string `json:"params"`
	IsDefaults bool              `json:"is_defaults,omitempty"`
	Succeeded  int               `json:"succeeded"`
	Failed     int               `json:"failed,omitempty"`
	TrialIDs   []int             `json:"trial_ids"`
	// Values holds, per target (in target order), the aggregate of the
	// successful repeats in the metric's own units.
	Values []float64 `json:"values,omitempty"`
	// Spread describes the repeats of the first target.
	Spread aggregate.Spread `json:"spread"`
	// Samples are the first target's successful values (metric units).
	Samples []float64 `json:"-"`
	scores  []float64 // Values as scores to minimize
}

// Policies gives the aggregation of each target (missing: the mean).
type Policies []aggregate.Policy

func (p Policies) of(i int) aggregate.Policy {
	if i < len(p) {
		return p[i]
	}
	return aggregate.Default
}

// ByConfig groups the finished trials by configuration and aggregates
// each configuration's successful repeats per target with pols. The
// configurations with a success come first, best first (lexicographic over
// the targets' aggregates); those that only failed follow, by first trial.
// When mainOnly is set, confirmation runs are left out.
func ByConfig(trials []storage.Trial, objs trial.Objectives, pols Policies, mainOnly bool) []Config {
	byHash := map[string]*Config{}
	var order []string
	raw := map[string][][]float64{} // per config, per target: scores
	for _, t := range trials {
		if !t.Finished() || t.Status == trial.CANCELED || (mainOnly && IsConfirm(t)) {
			continue
		}
		if trial.LowFidelity(t.Metadata) {
			continue // a multi-fidelity run's lower-fidelity result: no answer, not a repeat
		}
		c := byHash[t.ConfigHash]
		if c == nil {
			c = &Config{ConfigID: t.ConfigID, ConfigHash: t.ConfigHash, Params: t.Params,
				IsDefaults: t.Metadata["is_defaults"] == "True"}
			byHash[t.ConfigHash] = c
			order = append(order, t.ConfigHash)
			raw[t.ConfigHash] = make([][]float64, len(objs))
		}
		c.TrialIDs = append(c.TrialIDs, t.ID)
		sc, err := objs.Scores(t.Status, t.Results)
		if t.Status != trial.SUCCEEDED || err != nil {
			c.Failed++
			continue
		}
		c.Succeeded++
		for i, v := range sc {
			raw[t.ConfigHash][i] = append(raw[t.ConfigHash][i], v)
		}
	}
	out := make([]Config, 0, len(order))
	for _, h := range order {
		c := byHash[h]
		if c.Succeeded > 0 {
			c.Values = make([]float64, len(objs))
			c.scores = make([]float64, len(objs))
			for i, o := range objs {
				c.scores[i] = pols.of(i).OfScores(raw[h][i], o.Max)
				c.Values[i] = c.scores[i]
				if o.Max {
					c.Values[i] = -c.scores[i]
				}
			}
			c.Samples = metricValues(raw[h][0], objs[0].Max)
			c.Spread = pols.of(0).Describe(c.Samples)
		}
		out = append(out, *c)
	}
	sort.SliceStable(out, func(a, b int) bool {
		ca, cb := out[a], out[b]
		if (ca.Succeeded > 0) != (cb.Succeeded > 0) {
			return ca.Succeeded > 0
		}
		if ca.Succeeded == 0 {
			return false
		}
		return trial.Less(ca.scores, cb.scores)
	})
	return out
}

func metricValues(scores []float64, max bool) []float64 {
	out := make([]float64, len(scores))
	for i, v := range scores {
		out[i] = v
		if max {
			out[i] = -v
		}
	}
	return out
}

// Alpha is the family-wise significance level of the confirmation test.
const Alpha = 0.05

// Candidate is one re-measured candidate against the default.
type Candidate struct {
	ConfigID   int64             `json:"config_id"`
	ConfigHash string            `json:"config_hash"`
	Params     map[string]string `json:"params"`
	N          int               `json:"n"`
	Median     float64           `json:"median"`
	// Change is (median(candidate) − median(default)) / |median(default)|
	// of the first target, with a 95% percentile-bootstrap interval.
	Change   float64 `json:"change"`
	ChangeLo float64 `json:"change_lo"`
	ChangeHi float64 `json:"change_hi"`
	// P is the two-sided Mann–Whitney U p-value against the default, and
	// Threshold the Holm-corrected level it had to be below.
	P           float64 `json:"p"`
	Threshold   float64 `json:"threshold"`
	Better      bool    `json:"better"`      // median better than the default's
	Significant bool    `json:"significant"` // Better and P below Threshold
	TrialIDs    []int   `json:"trial_ids"`
}

// Verdict is the outcome of a confirmation.
type Verdict struct {
	Target        string      `json:"target"`
	Max           bool        `json:"max"`
	DefaultID     int64       `json:"default_config_id"`
	DefaultHash   string      `json:"default_config_hash"`
	DefaultN      int         `json:"default_n"`
	DefaultMedian float64     `json:"default_median"`
	Candidates    []Candidate `json:"candidates"`
	// Winner indexes Candidates (-1: no candidate beats the default).
	Winner int    `json:"winner"`
	Test   string `json:"test"`
	// DefaultTrialIDs are the default's confirmation trials.
	DefaultTrialIDs []int `json:"default_trial_ids"`
}

// TestDescription states the rule Confirm applies.
const TestDescription = "two-sided Mann–Whitney U test of each candidate against the default on the first target, Holm-corrected over the candidates at a family-wise level of 5%; the winner is the significant candidate (median better than the default's) with the best median"

// Confirm judges the confirmation runs among trials (ok false when there
// are none with both a default and a candidate that succeeded).
func Confirm(trials []storage.Trial, objs trial.Objectives) (Verdict, bool) {
	if len(objs) == 0 {
		return Verdict{}, false
	}
	type group struct {
		hash   string
		id     int64
		params map[string]string
		vals   []float64
		ids    []int
	}
	var def *group
	cands := map[string]*group{}
	var order []string
	for _, t := range trials {
		if !IsConfirm(t) || !t.Finished() || t.Status != trial.SUCCEEDED {
			continue
		}
		v, ok := trial.Numeric(t.Results[objs[0].Name])
		if !ok {
			continue
		}
		if t.Metadata[MetaRole] == RoleDefault {
			if def == nil {
				def = &group{hash: t.ConfigHash, id: t.ConfigID, params: t.Params}
			}
			def.vals = append(def.vals, v)
			def.ids = append(def.ids, t.ID)
			continue
		}
		g := cands[t.ConfigHash]
		if g == nil {
			g = &group{hash: t.ConfigHash, id: t.ConfigID, params: t.Params}
			cands[t.ConfigHash] = g
			order = append(order, t.ConfigHash)
		}
		g.vals = append(g.vals, v)
		g.ids = append(g.ids, t.ID)
	}
	if def == nil || len(cands) == 0 {
		return Verdict{}, false
	}
	v := Verdict{Target: objs[0].Name, Max: objs[0].Max, DefaultID: def.id, DefaultHash: def.hash,
		DefaultN: len(def.vals), DefaultMedian: stats.Median(def.vals), Winner: -1, Test: TestDescription,
		DefaultTrialIDs: def.ids}
	for _, h := range order {
		g := cands[h]
		c := Candidate{ConfigID: g.id, ConfigHash: g.hash, Params: g.params, N: len(g.vals),
			Median: stats.Median(g.vals), Change: stats.RelChange(def.vals, g.vals), P: 1, TrialIDs: g.ids}
		c.ChangeLo, c.ChangeHi, _ = stats.RelChangeCI(def.vals, g.vals, stats.DefaultResamples, 0.95, uint64(g.id)+1)
		// benchstat's p: exact over every split of the pooled mid-ranks
		// while the samples are small, ties included (R's method takes the
		// normal approximation with ties, which for 0,0,0 against 400,400,400
		// gave p = 0.046, below the 0.1 that n=3+3 can reach at all).
		if r, ok := stats.UTest(stats.UTestBenchstat, def.vals, g.vals); ok {
			c.P = r.P
		}
		if v.Max {
			c.Better = c.Median > v.DefaultMedian
		} else {
			c.Better = c.Median < v.DefaultMedian
		}
		v.Candidates = append(v.Candidates, c)
	}
	// Holm: sort by p, compare the i-th smallest with α/(k−i), stop at the
	// first that fails.
	idx := make([]int, len(v.Candidates))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v.Candidates[idx[a]].P < v.Candidates[idx[b]].P })
	k := len(idx)
	rejecting := true
	for rank, i := range idx {
		c := &v.Candidates[i]
		c.Threshold = Alpha / float64(k-rank)
		if rejecting && c.P < c.Threshold {
			c.Significant = c.Better
		} else {
			rejecting = false
		}
	}
	for i, c := range v.Candidates {
		if !c.Significant {
			continue
		}
		if v.Winner < 0 || (v.Max && c.Median > v.Candidates[v.Winner].Median) || (!v.Max && c.Median < v.Candidates[v.Winner].Median) {
			v.Winner = i
		}
	}
	return v, true
}

// Line is the verdict in one line, e.g. "best vs default: −23% [−27%,
// −19%], p < 0.001 (n=8+8)", or that no candidate beats the default (with
// the closest one's figures).
func (v Verdict) Line() string {
	if v.Winner >= 0 {
		c := v.Candidates[v.Winner]
		return fmt.Sprintf("confirmed: best vs default: %s [%s, %s] in %s, %s (n=%d+%d, config %d)",
			pct(c.Change), pct(c.ChangeLo), pct(c.ChangeHi), v.Target, pval(c.P), c.N, v.DefaultN, c.ConfigID)
	}
	best := -1
	for i, c := range v.Candidates {
		if best < 0 || c.P < v.Candidates[best].P {
			best = i
		}
	}
	c := v.Candidates[best]
	line := fmt.Sprintf("no candidate beats the default: closest %s [%s, %s] in %s, %s (n=%d+%d, config %d; needed p < %.3g and a better median)",
		pct(c.Change), pct(c.ChangeLo), pct(c.ChangeHi), v.Target, pval(c.P), c.N, v.DefaultN, c.ConfigID, c.Threshold)
	if minP := stats.MinP(c.N, v.DefaultN); minP >= c.Threshold {
		// No outcome of the rounds could have confirmed a candidate.
		line += fmt.Sprintf("; with n=%d+%d the smallest possible p-value is %.3g, so no candidate could be confirmed: run more --repeats", c.N, v.DefaultN, minP)
	}
	return line
}

// WinnerConfig returns the winning configuration, or the
// default's when no candidate beat it.
func (v Verdict) WinnerConfig() (id int64, hash string) {
	if v.Winner >= 0 {
		return v.Candidates[v.Winner].ConfigID, v.Candidates[v.Winner].ConfigHash
	}
	return v.DefaultID, v.DefaultHash
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "?"
	}
	s := strconv.FormatFloat(100*x, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	if x > 0 {
		s = "+" + s
	}
	return strings.Replace(s, "-", "−", 1) + "%"
}

func pval(p float64) string {
	if p < 0.001 {
		return "p < 0.001"
	}
	return "p = " + strconv.FormatFloat(p, 'g', 2, 64)
}
