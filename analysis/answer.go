package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/benchtune/bench/internal/aggregate"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// NoiseBestPrefix starts the experiment note in which a noise-aware run
// names the configuration its model ranks best: "noise-aware best: config
// HASH (...)".
const NoiseBestPrefix = "noise-aware best: config "

// NoiseBestNote is the note naming hash as the model's best, with why.
func NoiseBestNote(hash, why string) string {
	return NoiseBestPrefix + hash + " (" + why + ")"
}

// noiseBest returns the hash of the last noise-aware best note.
func noiseBest(notes []string) string {
	for i := len(notes) - 1; i >= 0; i-- {
		if rest, ok := strings.CutPrefix(notes[i], NoiseBestPrefix); ok {
			h, _, _ := strings.Cut(rest, " ")
			return h
		}
	}
	return ""
}

// The bases of an answer.
const (
	BasisObservation = "best observation"
	BasisModel       = "noise-aware: the model's posterior mean over aggregated repeats"
	BasisConfirmed   = "confirmed by re-runs against the defaults"
	BasisDefault     = "the defaults: no candidate beat them in the confirmation"
)

// Answer is the configuration an experiment reports as its best.
type Answer struct {
	Basis      string            `json:"basis"`
	ConfigID   int64             `json:"config_id"`
	ConfigHash string            `json:"config_hash"`
	Params     map[string]string `json:"params"`
	// TrialID is a trial of the configuration (its best successful one).
	TrialID int `json:"trial_id"`
	// Values are the configuration's target values (metric units): the
	// trial's for BasisObservation, else the aggregate of its successful
	// runs (the confirmation's runs once confirmed).
	Values []float64 `json:"values"`
	// Config holds the aggregate and spread (nil for BasisObservation).
	Config *Config `json:"config,omitempty"`
	// Verdict is the confirmation's, when there was one.
	Verdict *Verdict `json:"verdict,omitempty"`
}

// Best returns an experiment's answer: the confirmed winner (or the
// defaults, when no candidate beat them) once a confirmation ran; else the
// configuration a noise-aware run's model ranked best (a note of the
// experiment), its repeats aggregated with pols; else, as mlos_bench, the
// best single trial. ok is false when no trial succeeded.
func Best(notes []string, trials []storage.Trial, objs trial.Objectives, pols Policies) (Answer, bool) {
	pick := func(hash, basis string, confirmOnly bool) (Answer, bool) {
		var sel []storage.Trial
		for _, t := range trials {
			if t.ConfigHash == hash && (!confirmOnly || IsConfirm(t)) {
				sel = append(sel, t)
			}
		}
		cs := ByConfig(sel, objs, pols, false)
		if len(cs) == 0 || cs[0].Succeeded == 0 {
			return Answer{}, false
		}
		c := cs[0]
		a := Answer{Basis: basis, ConfigID: c.ConfigID, ConfigHash: c.ConfigHash, Params: c.Params, Values: c.Values, Config: &c}
		if bt, _, ok := storage.Best(sel, objs); ok {
			a.TrialID = bt.ID
		}
		return a, true
	}
	if v, ok := Confirm(trials, objs); ok {
		_, hash := v.WinnerConfig()
		basis := BasisConfirmed
		if v.Winner < 0 {
			basis = BasisDefault
		}
		if a, ok := pick(hash, basis, true); ok {
			a.Verdict = &v
			return a, true
		}
	}
	if h := noiseBest(notes); h != "" {
		if a, ok := pick(h, BasisModel, false); ok {
			return a, true
		}
	}
	bt, sc, ok := storage.Best(trials, objs)
	if !ok {
		return Answer{}, false
	}
	return Answer{Basis: BasisObservation, ConfigID: bt.ConfigID, ConfigHash: bt.ConfigHash, Params: bt.Params,
		TrialID: bt.ID, Values: objs.Values(sc)}, true
}

// Describe is the answer in a line: the basis, the values and, for an
// aggregate, its spread.
func (a Answer) Describe(objs trial.Objectives) string {
	var vals []string
	for i, o := range objs {
		if i < len(a.Values) {
			vals = append(vals, fmt.Sprintf("%s=%.6g", o.Name, a.Values[i]))
		}
	}
	s := fmt.Sprintf("config %d (%s): %s", a.ConfigID, a.Basis, strings.Join(vals, " "))
	if c := a.Config; c != nil && c.Spread.N > 1 {
		s += fmt.Sprintf(" over %d runs, 95%% interval [%.6g, %.6g]", c.Spread.N, c.Spread.Lo, c.Spread.Hi)
		if !math.IsNaN(c.Spread.CV) { // undefined for a mean of 0
			s += fmt.Sprintf(", CV %.1f%%", 100*c.Spread.CV)
		}
	}
	return s
}

// AggregatePrefix starts the experiment note that records how its repeats
// are aggregated when that is not the mean: "repeat aggregate: score=median".
const AggregatePrefix = "repeat aggregate: "

// AggregateNote records pols (in target order) as a note ("" when all are
// the mean).
func AggregateNote(objs trial.Objectives, pols Policies) string {
	var parts []string
	custom := false
	for i, o := range objs {
		p := pols.of(i)
		custom = custom || p != aggregate.Default
		parts = append(parts, o.Name+"="+p.String())
	}
	if !custom {
		return ""
	}
	return AggregatePrefix + strings.Join(parts, " ")
}

// PoliciesFromNotes reads the last aggregate note (nil: the mean).
func PoliciesFromNotes(notes []string, objs trial.Objectives) Policies {
	for i := len(notes) - 1; i >= 0; i-- {
		rest, ok := strings.CutPrefix(notes[i], AggregatePrefix)
		if !ok {
			continue
		}
		byName := map[string]aggregate.Policy{}
		for _, f := range strings.Fields(rest) {
			k, v, _ := strings.Cut(f, "=")
			if p, err := aggregate.Parse(v); err == nil {
				byName[k] = p
			}
		}
		var out Policies
		for _, o := range objs {
			p, ok := byName[o.Name]
			if !ok {
				p = aggregate.Default
			}
			out = append(out, p)
		}
		return out
	}
	return nil
}
